"""A client that follows greeters through a LookupCache, calls them, and says what it sees.

Usage: python mh_client.py LOOKUP_URI [LOOKUP_URI...] [--lease SECONDS]

With one URI the cache follows that lookup service; with several it is given
the list (``LookupCache([uri, ...], template)``). It prints, with
``time.monotonic()`` stamps (one clock for every namespace)::

    ready <items>                          (the first snapshot is in)
    found <service id> <service uri> <monotonic>
    changed <service id> <monotonic>
    vanished <service id> <monotonic>

Commands on stdin, one a line: ``call`` calls ``hello`` on a greeter the
cache holds, through the proxy it hands out, and prints ``called <service id>
<answer>`` or ``call-failed <why>``; ``status`` prints ``items <service
id>...``. At the end of stdin (the test is gone) it exits.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mh_api import GREETER_TYPE, log_warnings, now, say

from lookup import LookupCache, ServiceItem, ServiceTemplate

CALL_TIMEOUT = 5.0  # seconds for one call to a greeter


def changed(kind: str, item: ServiceItem) -> None:
    """The cache's listener: one line per change."""
    if kind == "added":
        say("found", item.service_id, item.service_uri, now())
    elif kind == "removed":
        say("vanished", item.service_id, now())
    else:
        say("changed", item.service_id, now())


def call(cache: LookupCache) -> None:
    """Call a greeter the cache holds through a proxy it hands out."""
    items = cache.items()
    if not items:
        say("call-failed no greeter in the cache")
        return
    proxy = cache.lookup(lambda item: item.service_id == items[0].service_id)
    if proxy is None:
        say("call-failed the greeter left the cache")
        return
    try:
        with proxy:
            proxy._pyroTimeout = CALL_TIMEOUT
            answer = proxy.hello("client")
    except Exception as exc:
        say("call-failed", type(exc).__name__, str(exc).replace("\n", " "))
        return
    say("called", items[0].service_id, answer)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Follow greeters through a LookupCache.")
    parser.add_argument("lookups", nargs="+", help="the lookup services' URIs")
    parser.add_argument("--lease", type=float, default=2.0, help="the event registrations' lease in seconds")
    args = parser.parse_args(argv)
    log_warnings()
    lookups: Any = args.lookups[0] if len(args.lookups) == 1 else list(args.lookups)
    with LookupCache(lookups, ServiceTemplate(types=[GREETER_TYPE]), lease_duration=args.lease,
                     listener=changed) as cache:
        if not cache.wait_ready(timeout=30):
            say("not-ready")
            return 1
        say("ready", len(cache))
        for command in sys.stdin:
            if command.strip() == "call":
                call(cache)
            elif command.strip() == "status":
                say("items", *sorted(item.service_id for item in cache.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
