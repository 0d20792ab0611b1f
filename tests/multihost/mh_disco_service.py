"""A greeter that joins the lookup services of its discovery groups, with no address configured.

Usage: python mh_disco_service.py --host ADDRESS --groups G1,G2 [--lease SECONDS]

As ``mh_service.py`` (its greeter and its watcher's lines: ``serving``,
``registered``, ``renewed``, ``unregistered``), but its JoinManager is given a
:class:`lookup.LookupDiscovery` of the groups instead of lookup services'
URIs. It also prints what discovery tells it::

    discovered <lookup id> <lookup uri> <monotonic>
    discarded <lookup id> <lookup uri> <monotonic>

At the end of stdin (the test is gone) it exits.
"""

from __future__ import annotations

import argparse
import sys
import threading

import Pyro5.api
from mh_api import log_warnings, now, say
from mh_service import HostGreeter, Watcher

from lookup import DiscoveredLookup, JoinManager, LookupDiscovery, Name


def told(kind: str, lookup: DiscoveredLookup) -> None:
    """Discovery's listener: one line per lookup service discovered or discarded."""
    say(kind, lookup.lookup_id, ",".join(lookup.uris), now())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A greeter that joins the lookup services discovery finds.")
    parser.add_argument("--host", required=True, help="the address to serve the greeter on")
    parser.add_argument("--groups", required=True, help="the discovery groups, comma-separated")
    parser.add_argument("--lease", type=float, default=2.0, help="the registrations' lease in seconds")
    args = parser.parse_args(argv)
    log_warnings()
    daemon = Pyro5.api.Daemon(host=args.host)
    greeter = HostGreeter(args.host)
    say("serving", daemon.register(greeter))
    threading.Thread(target=daemon.requestLoop, name="greeter", daemon=True).start()
    discovery = LookupDiscovery(args.groups.split(","), listener=told)
    join = JoinManager(greeter, attributes=[Name("multihost greeter")], discovery=discovery,
                       lease_duration=args.lease)
    watcher = Watcher(join)
    threading.Thread(target=watcher.run, name="watcher", daemon=True).start()
    for _ in sys.stdin:
        pass
    watcher.stopped.set()
    join.close()
    discovery.close()
    daemon.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
