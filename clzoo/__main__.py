"""`python -m clzoo ...`: the `clzoo` command."""

import sys

from clzoo.cli import main

if __name__ == "__main__":
    sys.exit(main())
