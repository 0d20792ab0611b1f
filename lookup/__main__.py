"""``python -m lookup``: see :mod:`lookup.cli`."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m lookup"))
