"""`python -m clzoo.cli ...`: the `clzoo` command."""

import sys

from clzoo.cli import console_main

if __name__ == "__main__":
    sys.exit(console_main())
