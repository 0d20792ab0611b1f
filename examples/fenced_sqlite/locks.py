"""The lock service of the fenced_sqlite example: a plain landlord, served.

Its named leases are the locks: a worker's ``landlord.Lock(uri, "ledger")`` asks it
(:meth:`landlord.Landlord.acquire`), and every grant of the name carries a fencing
token one higher than the last. Terms are short (``--term``, 2 s by default), so that
a holder that stops renewing loses the lock soon.

Run it from the repository root::

    python examples/fenced_sqlite/locks.py --port 0

``serve_landlord`` prints ``landlord at PYRO:locks@... (guarded server)`` once it
answers. SIGTERM or Ctrl-C stops it.
"""

from __future__ import annotations

import argparse

import landlord


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--term", type=float, default=2.0, help="the longest term a lock's lease is granted for")
    args = parser.parse_args()
    locks = landlord.Landlord(policy=landlord.LeaseDurationPolicy(maximum=args.term, default=args.term))
    try:
        landlord.serve_landlord(locks, args.host, args.port, object_id="locks")
    finally:
        locks.close()


if __name__ == "__main__":
    main()
