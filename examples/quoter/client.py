"""A quoter client: finds a quoter by type and attribute through a LookupCache, asks for quotes,
and notices when the quoter vanishes.

Usage: python examples/quoter/client.py LOOKUP_URI [--quotes N]

It prints ``found <service id>``, the quotes, then waits (up to a minute)
for the quoter to leave the lookup service and prints ``vanished``.
"""

from __future__ import annotations

import argparse
import sys
import time

from quoter_api import Exchange, Quoter, quiet_logging, stamp

from lookup import LookupCache, Name, ServiceItem, ServiceTemplate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Find a quoter, get quotes, and watch it go.")
    parser.add_argument("lookup", help="the lookup service's URI")
    parser.add_argument("--quotes", type=int, default=3, help="how many quotes to ask for (default 3)")
    parser.add_argument("--exchange", default="NYSE", help="the exchange wanted (default NYSE)")
    args = parser.parse_args(argv)
    quiet_logging()
    started = time.monotonic()

    def changed(kind: str, item: ServiceItem) -> None:
        stamp(started, "client", f"cache: {kind} {item.service_id}")

    wanted = ServiceTemplate(types=[Quoter], attributes=[Name("ACME quotes"), Exchange(args.exchange)])
    with LookupCache(args.lookup, wanted, listener=changed) as cache:
        if not cache.wait_until(bool, timeout=30):
            stamp(started, "client", "no quoter turned up")
            return 1
        [item] = cache.items()[:1]
        sys.stdout.write(f"found {item.service_id}\n")
        sys.stdout.flush()
        with cache.lookup() as quoter:  # answered from the cache: no round trip to the lookup service
            for symbol in ("ACME", "INTC", "ORCL")[:args.quotes]:
                stamp(started, "client", f"quote {symbol}: {quoter.quote(symbol):.2f}")
        stamp(started, "client", "waiting for the quoter to go away...")
        if not cache.wait_until(lambda items: not items, timeout=60):
            stamp(started, "client", "the quoter is still registered after a minute")
            return 1
        sys.stdout.write(f"vanished {item.service_id}\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
