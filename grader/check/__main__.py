"""`python3 -m grader.check`, the same as `python3 -m grader check`."""

import sys

from grader.check.cli import main

sys.exit(main())
