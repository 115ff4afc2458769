"""cuda-labkit grader: builds, tests, times and scores the labs (`python3 -m grader`)."""

__version__ = "0.1.0"
