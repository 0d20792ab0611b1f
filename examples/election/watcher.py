"""The watcher of the election example: prints each change of leader, as the landlord pushes it.

Usage::

    python examples/election/watcher.py LANDLORD_URI

``Election.watch`` calls back at once with who leads now, then on every change
(another leader, or nobody): no polling. The watcher never campaigns; the value it
gives is only its name. SIGTERM or Ctrl-C stops it.
"""

from __future__ import annotations

import argparse
import signal
import sys

import landlord


def say(text: str) -> None:
    sys.stdout.write(f"{text}\n")  # one write, a whole line (see candidate.py)
    sys.stdout.flush()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("landlord")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # leave through the finally: the watch is cancelled

    election = landlord.Election(args.landlord, "leader", value="watcher")
    try:
        election.watch(lambda leader: say("nobody leads" if leader is None else f"the leader is now {leader}"))
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        election.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
