"""A quoter service: serves quotes over Pyro5 and keeps itself registered through a JoinManager.

Usage: python examples/quoter/quoter_service.py LOOKUP_URI [--lease SECONDS] [--exchange NAME]

It prints ``registered <service id>`` once the lookup service has it. Kill it
(``kill -9``) and it stops renewing: the lookup service drops it when its
lease runs out.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time

import Pyro5.api
from quoter_api import Exchange, Quoter, quiet_logging, stamp

from lookup import JoinManager, Name, ServiceInfo


@Pyro5.api.expose
class StockQuoter(Quoter):
    """Quotes made up from the symbol and the minute, so they look alive and are repeatable."""

    def quote(self, symbol: str) -> float:
        digest = hashlib.sha256(f"{symbol}:{int(time.time() // 60)}".encode()).digest()
        return round(10 + int.from_bytes(digest[:4], "big") % 90_000 / 100, 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A quoter service that registers itself with a lookup service.")
    parser.add_argument("lookup", help="the lookup service's URI")
    parser.add_argument("--lease", type=float, default=3.0, help="registration lease in seconds (default 3)")
    parser.add_argument("--exchange", default="NYSE", help="the exchange it covers (default NYSE)")
    args = parser.parse_args(argv)
    quiet_logging()
    started = time.monotonic()
    daemon = Pyro5.api.Daemon(host="127.0.0.1")
    quoter = StockQuoter()
    daemon.register(quoter)
    # types come from the class: __main__.StockQuoter and quoter_api.Quoter
    join = JoinManager(quoter, attributes=[Name("ACME quotes"), Exchange(args.exchange),
                                           ServiceInfo(name="quoter", vendor="ACME", version="1.0")],
                       lookups=[args.lookup], lease_duration=args.lease)
    if not join.wait_registered(1, timeout=30):
        stamp(started, "quoter", "could not reach the lookup service")
        return 1
    stamp(started, "quoter", f"registered {join.service_id} (pid {os.getpid()}, lease {args.lease:g} s, "
                             "renewed by a JoinManager)")
    sys.stdout.write(f"registered {join.service_id}\n")
    sys.stdout.flush()
    try:
        daemon.requestLoop()
    finally:
        join.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
