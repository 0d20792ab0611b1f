"""The quoter client in asyncio: finds a quoter by type and attributes through an AsyncLookupCache,
reading its changes with ``async for``, asks for quotes, and sees the quoter vanish.

Usage: python examples/quoter_aio/client.py LOOKUP_URI [--quotes N] [--exchange NAME]

It prints ``found <service id>``, the quotes, then waits (up to a minute)
for the quoter to leave the lookup service and prints ``vanished <service id>``.
Meanwhile a ticker on the same loop counts its turns: nothing here blocks the loop.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "quoter"))  # the sync story's quoter_api
from quoter_api import Exchange, Quoter, quiet_logging, stamp  # noqa: E402

from landlord import aio  # noqa: E402
from lookup import Name, ServiceTemplate  # noqa: E402
from lookup.aio import AsyncLookupCache, CacheChange  # noqa: E402

FIND_TIMEOUT = 30.0
VANISH_TIMEOUT = 60.0


async def ticker(ticks: list[int]) -> None:
    """Counts turns of the loop (one each 10 ms) for as long as the client runs."""
    while True:
        await asyncio.sleep(0.01)
        ticks[0] += 1


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Find a quoter from asyncio, get quotes, and watch it go.")
    parser.add_argument("lookup", help="the lookup service's URI")
    parser.add_argument("--quotes", type=int, default=3, help="how many quotes to ask for (default 3)")
    parser.add_argument("--exchange", default="NYSE", help="the exchange wanted (default NYSE)")
    args = parser.parse_args(argv)
    quiet_logging()
    started = time.monotonic()
    ticks = [0]
    ticking = asyncio.ensure_future(ticker(ticks))

    def told(change: CacheChange) -> None:
        stamp(started, "client", f"cache: {change.kind} {change.item.service_id}")

    wanted = ServiceTemplate(types=[Quoter], attributes=[Name("ACME quotes"), Exchange(args.exchange)])
    try:
        async with AsyncLookupCache(args.lookup, wanted) as cache:
            changes = cache.changes()
            try:
                first = await asyncio.wait_for(changes.__anext__(), FIND_TIMEOUT)
            except asyncio.TimeoutError:
                stamp(started, "client", "no quoter turned up")
                return 1
            told(first)
            found = first.item
            sys.stdout.write(f"found {found.service_id}\n")
            sys.stdout.flush()
            for symbol in ("ACME", "INTC", "ORCL")[:args.quotes]:
                price = await aio.call(found.service_uri, "quote", symbol, timeout=10)
                stamp(started, "client", f"quote {symbol}: {price:.2f}")
            stamp(started, "client", "waiting for the quoter to go away...")

            async def vanished() -> None:
                async for change in changes:
                    told(change)
                    if change.kind == "removed" and change.item.service_id == found.service_id:
                        return

            try:
                await asyncio.wait_for(vanished(), VANISH_TIMEOUT)
            except asyncio.TimeoutError:
                stamp(started, "client", "the quoter is still registered after a minute")
                return 1
            sys.stdout.write(f"vanished {found.service_id}\n")
            sys.stdout.flush()
            stamp(started, "client", f"the loop ticked {ticks[0]} times meanwhile: never blocked")
        return 0
    finally:
        ticking.cancel()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
