"""The quoter service in asyncio: serves quotes over Pyro5 and keeps itself registered through an
AsyncJoinManager, whose registration lease an AsyncLeaseRenewalManager keeps alive.

Usage: python examples/quoter_aio/quoter_service.py LOOKUP_URI [--lease SECONDS] [--exchange NAME]

It prints ``registered <service id>`` once the lookup service has it. Kill it
(``kill -9``) and nothing renews the registration any more: the lookup service
drops it when its lease runs out. SIGTERM instead leaves politely, cancelling it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import threading
import time
from pathlib import Path

import Pyro5.api

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "quoter"))  # the sync story's quoter_api
from quoter_api import Exchange, quiet_logging, stamp  # noqa: E402
from quoter_service import StockQuoter  # noqa: E402  (the same quoter: types quoter_api.Quoter and its own)

from landlord.aio import AsyncLeaseRenewalManager  # noqa: E402
from lookup import Name, ServiceInfo  # noqa: E402
from lookup.aio import AsyncJoinManager  # noqa: E402


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="An asyncio quoter service that registers itself with a lookup "
                                                 "service.")
    parser.add_argument("lookup", help="the lookup service's URI")
    parser.add_argument("--lease", type=float, default=3.0, help="registration lease in seconds (default 3)")
    parser.add_argument("--exchange", default="NYSE", help="the exchange it covers (default NYSE)")
    args = parser.parse_args(argv)
    quiet_logging()
    started = time.monotonic()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    daemon = Pyro5.api.Daemon(host="127.0.0.1")
    quoter = StockQuoter()
    daemon.register(quoter)
    # the quotes are served by Pyro5's own server, on its thread; the loop keeps the registration
    threading.Thread(target=daemon.requestLoop, name="quoter-daemon", daemon=True).start()
    attributes = [Name("ACME quotes"), Exchange(args.exchange), ServiceInfo(name="quoter", vendor="ACME",
                                                                            version="1.0")]
    async with AsyncLeaseRenewalManager() as renewals, \
            AsyncJoinManager(quoter, attributes=attributes, lookups=[args.lookup], lease_duration=args.lease,
                             renewal_manager=renewals) as join:
        if not await join.wait_registered(1, timeout=30):
            stamp(started, "quoter", f"could not reach the lookup service: {join.last_error}")
            return 1
        stamp(started, "quoter", f"registered {join.service_id} (pid {os.getpid()}, lease {args.lease:g} s, "
                                 "renewed by an AsyncLeaseRenewalManager)")
        sys.stdout.write(f"registered {join.service_id}\n")
        sys.stdout.flush()
        await stop.wait()  # until SIGTERM; a kill -9 ends it here, with no goodbye
        stamp(started, "quoter", "leaving: cancelling the registration")
    daemon.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
