"""What a quoter is, as clients know it: the type they look up, and its attributes.

Both sides import this module, so the type name the service registers under
(``quoter_api.Quoter``) is the one clients ask for.
"""

from __future__ import annotations

import sys
import time

from landlord.cli import configure_logging
from lookup import Entry


class Quoter:
    """A service that quotes stock prices: ``quote(symbol) -> float``."""

    def quote(self, symbol: str) -> float:
        raise NotImplementedError


class Exchange(Entry):
    """Which exchange a quoter covers (an attribute of our own, not a standard entry)."""

    name: str | None = None


def stamp(started: float, who: str, message: str) -> None:
    """Print one line of the story, stamped with seconds since ``started``.

    One write per line: the cache's listener thread prints too, and print()
    writes the text and the newline separately.
    """
    sys.stdout.write(f"[{time.monotonic() - started:6.2f}s] {who:<8} {message}\n")
    sys.stdout.flush()


def quiet_logging() -> None:
    """The story is told by the scripts; the libraries' INFO logs would drown it."""
    configure_logging("warning")  # the format every landlord server and example logs in
