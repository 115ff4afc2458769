"""Entry point for `python3 -m grader`."""

import sys

from grader import cli

sys.exit(cli.main())
