"""The landlord of the election example: a plain ``landlord.Landlord``, served, that says what it grants.

Candidates campaign for the name ``"leader"`` through its named leases
(:meth:`landlord.Landlord.acquire`); nothing here knows about elections. Terms
are short (``--term``, 2 s by default), so that a leader that dies is replaced soon.
Its hooks print one line when a request for a name waits in line and one when a
name is granted (with the fencing token), which is how the demo knows that the
candidates are queued before it kills the leader.

Run it from the repository root::

    python examples/election/server.py --port 0

``serve_landlord`` prints ``landlord at PYRO:election@... (guarded server)`` once it
answers. SIGTERM or Ctrl-C stops it.
"""

from __future__ import annotations

import argparse
import sys

import landlord


def say(text: str) -> None:
    sys.stdout.write(f"{text}\n")  # one write, a whole line: hooks run on several threads
    sys.stdout.flush()


class Told(landlord.LeaseHooks):
    """Prints what becomes of the names asked for (a hook must be quick: one line each)."""

    def name_queued(self, name: str) -> None:
        say(f"a candidate waits in line for {name!r}")

    def name_acquired(self, name: str, token: int, waited: bool) -> None:
        say(f"{name!r} granted with token {token}{' to a candidate that waited' if waited else ''}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--term", type=float, default=2.0, help="the longest term a lease is granted for")
    args = parser.parse_args()
    policy = landlord.LeaseDurationPolicy(maximum=args.term, default=args.term)
    elections = landlord.Landlord(policy=policy, hooks=Told())
    try:
        landlord.serve_landlord(elections, args.host, args.port, object_id="election")
    finally:
        elections.close()


if __name__ == "__main__":
    main()
