"""``python -m hookgrad``: see ``hookgrad.cli``."""
import sys

from .cli import main

sys.exit(main())
