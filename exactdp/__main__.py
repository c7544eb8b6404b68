"""``python -m exactdp``: the command-line interface (see :mod:`exactdp.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
