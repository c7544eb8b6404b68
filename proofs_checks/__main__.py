"""``python -m proofs_checks [--full] [--only NAME] [--report PATH] [--json] [--jobs N] [--list]``."""

import sys

from .registry import main

if __name__ == "__main__":
    sys.exit(main())
