"""Run the side-by-side benchmarks (the same as ``python -m hookgrad bench``).

Usage: python benchmarks/run.py [--only NAME] [--repeats N] [--quick] [--json] [--list]
"""
import os
import sys

try:
    import hookgrad._bench  # noqa: F401 - installed (pip install -e .)
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                    "src"))

from hookgrad._bench import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
