"""A candidate of the election example: campaigns for ``"leader"``, and works while it leads.

Usage::

    python examples/election/candidate.py LANDLORD_URI NAME

It campaigns with ``landlord.Election(LANDLORD_URI, "leader", value=NAME)``,
waiting in line while another leads. Once it leads it does its work, a line
every half second carrying its fencing token (what a real leader would send with
every write, for the resource to check), for as long as ``election.leading``
holds. Lines on stdin tell the leader what to do next:

- ``hand-over OTHER``: pass the lead to the waiting candidate OTHER
  (``election.hand_over``: no moment when nobody leads), and exit;
- ``resign``: step down (the next in line, if any, leads at once), and exit.

A leader that loses the lead (its lease ran out unrenewed) says so and campaigns again.
"""

from __future__ import annotations

import argparse
import queue
import sys
import threading

import landlord
from landlord.cli import configure_logging

TERM = 2.0  # seconds asked for each term of the lease; the server may give less
WORK_EVERY = 0.5  # seconds between two pieces of work


def say(text: str) -> None:
    # one write, a whole line: the library's log lines (stderr, the same pipe in the demo) come from other
    # threads, and print() would write the line and its newline apart, with room for one in between
    sys.stdout.write(f"{text}\n")
    sys.stdout.flush()


def read_commands(commands: queue.Queue[str]) -> None:
    for line in sys.stdin:
        commands.put(line.strip())


def lead(election: landlord.Election, commands: queue.Queue[str]) -> bool:
    """Work while leading, until told what to do: whether to exit (False: the lead was lost)."""
    token = election.token
    say(f"leads with token {token}")
    done = 0
    while election.leading:
        done += 1
        say(f"work {done} done with token {token}")  # a real leader sends its token with the write
        try:
            command = commands.get(timeout=WORK_EVERY)
        except queue.Empty:
            continue
        if command.startswith("hand-over "):
            successor = command.split(" ", 1)[1]
            say(f"handing over to {successor}")
            election.hand_over(successor)
            say(f"handed over to {successor}")
            return True
        if command == "resign":
            election.resign()
            say("resigned")
            return True
    say("lost the lead")
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("landlord")
    parser.add_argument("name")
    args = parser.parse_args()
    configure_logging("warning")  # the format every landlord server and example logs in
    commands: queue.Queue[str] = queue.Queue()
    threading.Thread(target=read_commands, args=(commands,), daemon=True).start()

    election = landlord.Election(args.landlord, "leader", value=args.name, duration=TERM)
    try:
        while True:
            say("campaigning")
            election.campaign()
            if lead(election, commands):
                return 0
    finally:
        election.close()


if __name__ == "__main__":
    sys.exit(main())
