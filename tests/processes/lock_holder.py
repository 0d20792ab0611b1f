"""One holder of a landlord's lock, driven line by line from stdin (tests/faults/test_lock_faults.py,
tests/multihost/test_lock_partition.py).

Usage: lock_holder.py TARGET NAME [--term SECONDS] [--lock-delay SECONDS] [--resource URI]
                      [--host ADDRESS] [--id ID]

TARGET is a landlord's ``PYRO:`` URI, or a replica group's URIs joined by commas. ``--resource``
is a ``python -m landlord.testing.lockcheck resource`` to write through (its ``write`` carries
the token). ``--host``: the address this holder's inbox serves on (the landlord calls it
back with grants). Commands, one a line, each answered by a line (times on
``time.monotonic()``, one clock for every process of the machine, whatever its namespace):

* ``acquire`` (waits as long as it takes) ``holding <token> <when>``;
  ``try`` (does not wait): the same, or ``refused <when>``;
* ``check``: ``checked <valid> <token> <when>``: reads ``valid``, as a holder does before it acts;
* ``write``: ``wrote accepted|refused|failed <valid> <when>``: writes through the resource with
  the token it was granted, whatever ``valid`` says now (what a holder paused after its check does);
* ``status``: ``status <valid> <token> <when>`` (the lock's ``token``: ``None`` unless valid);
* ``release``: ``released <when>``; ``exit``.

And unasked: ``ready`` once it listens; ``deadline <valid until> <lease deadline>`` whenever its
lease's deadline moves (a grant, a renewal), ``valid until`` being when ``valid`` turns false
unless the lease is renewed first; ``lost <when> <reason>`` when the lock tells it the holding
was lost (at the moment its validity ends, on the lock's own thread).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import Any

import Pyro5.api
import Pyro5.errors

import landlord
from landlord.recipe.claim import MARGIN

REPORT_EVERY = 0.01  # seconds between two looks at the lease's deadline
_output = threading.Lock()


def say(*words: object) -> None:
    with _output:
        sys.stdout.write(" ".join(str(word) for word in words) + "\n")
        sys.stdout.flush()


def now() -> str:
    return f"{time.monotonic():.6f}"


def report_deadlines(lock: landlord.Lock) -> None:
    """Print each new deadline of the lock's lease, and when its validity ends with it."""
    last = None
    while True:
        lease = lock.lease
        if isinstance(lease, landlord.LandlordLease) and lock.valid and lease.deadline != last:
            last = lease.deadline
            margin = lock.margin if lock.margin is not None else MARGIN * lease.term
            say("deadline", f"{lease.deadline - margin:.6f}", f"{lease.deadline:.6f}")
        threading.Event().wait(REPORT_EVERY)


def acquire(lock: landlord.Lock, *, blocking: bool) -> bool:
    """``lock.acquire``, asked again once after a connection the landlord closed (it was restarted:
    this thread's proxy to it is stale, and the recipe has dropped it; the request never arrived)."""
    try:
        return lock.acquire(blocking=blocking)
    except Pyro5.errors.ConnectionClosedError as exc:
        say("error", "acquire", type(exc).__name__)
        return lock.acquire(blocking=blocking)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("target")
    parser.add_argument("name")
    parser.add_argument("--term", type=float, default=2.0)
    parser.add_argument("--lock-delay", type=float, default=0.0)
    parser.add_argument("--resource")
    parser.add_argument("--host")
    parser.add_argument("--id", default="holder")
    args = parser.parse_args()

    target: Any = args.target.split(",") if "," in args.target else args.target
    inbox = landlord.ClaimInbox(host=args.host) if args.host else None
    lock = landlord.Lock(target, args.name, duration=args.term, lock_delay=args.lock_delay,
                         **({"inbox": inbox} if inbox is not None else {}))
    lock.on_lost(lambda reason: say("lost", now(), reason.replace("\n", " ")))
    resource = Pyro5.api.Proxy(args.resource) if args.resource else None
    threading.Thread(target=report_deadlines, args=(lock,), daemon=True).start()
    token: int | None = None
    acquired_at = checked_at = 0.0
    seq = 0
    say("ready")
    for line in sys.stdin:
        command = line.strip()
        if command in ("acquire", "try"):
            if acquire(lock, blocking=command == "acquire"):
                acquired_at = time.monotonic()
                token = lock.token
                say("holding", token, f"{acquired_at:.6f}")
            else:
                say("refused", now())
        elif command == "check":
            checked_at = time.monotonic()
            say("checked", lock.valid, lock.token, f"{checked_at:.6f}")
        elif command == "write":
            assert resource is not None and token is not None, "write needs --resource and a token"
            seq += 1
            believed_at = time.monotonic()
            believed = lock.valid
            try:
                accepted = resource.write(args.id, token, seq, believed, checked_at or believed_at, believed_at,
                                          acquired_at)
                say("wrote", "accepted" if accepted else "refused", believed, now())
            except Pyro5.errors.CommunicationError as exc:
                say("wrote", "failed", believed, now(), type(exc).__name__)
                resource._pyroRelease()
        elif command == "status":
            say("status", lock.valid, lock.token, now())
        elif command == "release":
            lock.release()
            say("released", now())
        elif command == "exit":
            break
        else:
            say("unknown", command)


if __name__ == "__main__":
    main()
