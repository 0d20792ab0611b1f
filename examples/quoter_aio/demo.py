"""The Quoter story in asyncio, end to end, in real processes.

1. A lookup service starts on localhost (``python -m lookup serve -v``: it logs renewals).
2. An asyncio quoter service registers itself through an AsyncJoinManager, on a 3 s lease
   that an AsyncLeaseRenewalManager keeps alive.
3. An asyncio client finds it by type and attributes through an AsyncLookupCache
   (``async for change in cache.changes()``) and gets quotes (``await landlord.aio.call``).
4. ``python -m lookup list`` shows the registration and its time left.
5. The registration is renewed three times, each for its own 3 s term.
6. The quoter is killed with SIGKILL: no goodbye, no cancel.
7. Its lease runs out within its 3 s term; the lookup service drops it; the client's
   ``async for`` hears ``removed``.

Exits 0 when the whole story happened, 1 otherwise, and leaves no process behind.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "quoter"))  # the sync story's demo, told here with asyncio's programs
from demo import Story, tell  # noqa: E402

ASYNCIO = Story(service="an asyncio quoter service (lease {lease:g} s, kept alive by an AsyncLeaseRenewalManager)",
                client="an asyncio client: an AsyncLookupCache by type (quoter_api.Quoter) and attributes, "
                       "read with async for",
                renewer="renewal manager", done="done: registered, found, used, killed, and gone by itself, "
                                              "all from asyncio")


def main() -> int:
    return tell(ASYNCIO, HERE)


if __name__ == "__main__":
    sys.exit(main())
