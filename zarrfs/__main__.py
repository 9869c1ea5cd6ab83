"""``python -m zarrfs``: the ``zarrfs`` command."""

import sys

from zarrfs.cli import main

if __name__ == "__main__":
    sys.exit(main())
