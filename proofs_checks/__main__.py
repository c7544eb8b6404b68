"""``python -m proofs_checks [--full] [--only NAME] [--report PATH] [--json] [--jobs N] [--list]``."""

import sys

# the package (not the registry alone) so that every paper module has registered its checks
from . import main

if __name__ == "__main__":
    sys.exit(main())
