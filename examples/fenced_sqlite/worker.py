"""A worker of the fenced_sqlite example: takes the lock, writes rows to the ledger with its token.

Usage::

    python examples/fenced_sqlite/worker.py LOCKS_URI LEDGER_URI NAME [--pause-before-second-write]

It takes ``landlord.Lock(LOCKS_URI, "ledger")`` (waiting its turn), writes one row
with the lock's fencing token, and then:

- by default, releases the lock and exits;
- with ``--pause-before-second-write``, checks that its lock is still valid, says
  ``about to write row 2 with token T``, and reads one line from stdin before
  writing row 2. The demo pauses it right there (SIGSTOP) and lets it go much later,
  past its lease's term: what a long GC pause, a swapped-out process or a frozen VM
  does to a real worker between its check and its write. The line it reads only
  makes the pause land between the two every time; the worker does not check again,
  as a paused process would not. The ledger refuses the late write: its token is older
  than the one the next holder wrote with.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time

import Pyro5.api

import landlord
from landlord.cli import configure_logging

TERM = 2.0  # seconds asked for each term of the lock's lease
LOST_TIMEOUT = 10.0  # seconds to wait for the lock's word that it was lost

_started = time.monotonic()


def say(text: str) -> None:
    # one write, a whole line: the library's log lines (stderr, the same pipe in the demo) come from other
    # threads, and print() would write the line and its newline apart, with room for one in between
    sys.stdout.write(f"{time.monotonic() - _started:5.2f} {text}\n")
    sys.stdout.flush()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("locks")
    parser.add_argument("ledger")
    parser.add_argument("name")
    parser.add_argument("--pause-before-second-write", action="store_true")
    args = parser.parse_args()
    configure_logging("warning")  # the format every landlord server and example logs in

    lock = landlord.Lock(args.locks, "ledger", duration=TERM, value=args.name)
    lost = threading.Event()
    lock.on_lost(lambda reason: (say(f"lost the lock: {reason}"), lost.set()))
    ledger = Pyro5.api.Proxy(args.ledger)
    say("waiting for the lock")
    lock.acquire()
    token = lock.token
    assert token is not None
    say(f"holds the lock with token {token}")
    row = ledger.append(token, args.name, "row 1")
    say(f"wrote row 1 with token {token} (ledger row {row})")
    if not args.pause_before_second_write:
        lock.release()
        say("released the lock")
        return 0

    if not lock.valid:  # the check a careful worker makes before each write
        say("UNEXPECTED: the lock is no longer valid")
        return 1
    say(f"lock valid: about to write row 2 with token {token}")
    sys.stdin.readline()  # paused here by the demo (SIGSTOP), then let go past the lease's term
    try:
        row = ledger.append(token, args.name, "row 2")
        say(f"UNEXPECTED: the late write with token {token} was accepted (ledger row {row})")
        return 1
    except landlord.StaleTokenError as refused:
        say(f"late write refused: StaleTokenError: {refused}")
    lost.wait(LOST_TIMEOUT)  # the lock's own thread tells her too (it woke with her): heard before she lets go
    say(f"lock.valid is {lock.valid} now")
    lock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
