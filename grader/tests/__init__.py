"""Unit tests of the grader; run from the kit root: python3 -m unittest discover -s grader/tests -t ."""
