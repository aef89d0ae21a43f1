"""``python -m bench.transcript_fuzz``: see ``bench/transcript_fuzz/__init__.py``."""

import sys

from bench.transcript_fuzz.cli import main

if __name__ == "__main__":
    sys.exit(main())
