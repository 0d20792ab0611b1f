"""What the multihost service and client programs share: the service's type, and how they print.

Both import this module, so the type the service registers under
(``mh_api.Greeter``) is the one the client asks for.
"""

from __future__ import annotations

import logging
import sys
import threading
import time

GREETER_TYPE = "mh_api.Greeter"
LOG_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"

_output = threading.Lock()


class Greeter:
    """A service that says hello: ``hello(who) -> str``."""

    def hello(self, who: str) -> str:
        raise NotImplementedError


def say(*words: object) -> None:
    """Print one machine-readable line (one write, flushed: threads print too)."""
    with _output:
        sys.stdout.write(" ".join(str(word) for word in words) + "\n")
        sys.stdout.flush()


def now() -> str:
    """``time.monotonic()`` as printed: one clock for every namespace of the machine."""
    return f"{time.monotonic():.3f}"


def log_warnings() -> None:
    """Warnings and errors of the libraries (failed renewals among them) go to stderr, which the test reads."""
    logging.basicConfig(level=logging.WARNING, format=LOG_FORMAT, stream=sys.stderr)
