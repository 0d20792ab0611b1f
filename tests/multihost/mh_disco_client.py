"""A client that follows greeters through a LookupCache of discovery groups, with no address configured.

Usage: python mh_disco_client.py --groups G1,G2 [--lease SECONDS]

It prints the lines of ``mh_client.py``'s listener (``found``, ``changed``,
``vanished``) and discovery's (``discovered``/``discarded <lookup id> <uris>
<monotonic>``), then ``ready`` once the cache is set up (it may hold nothing
yet: the lookup services are found as they announce themselves).

Commands on stdin, one a line: ``status`` prints ``items <service id>...``;
``lookups`` prints ``lookups <uri>...`` (those followed). At the end of stdin it exits.
"""

from __future__ import annotations

import argparse
import sys

from mh_api import GREETER_TYPE, log_warnings, say
from mh_client import changed
from mh_disco_service import told

from lookup import LookupCache, LookupDiscovery, ServiceTemplate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Follow greeters through a LookupCache fed by discovery.")
    parser.add_argument("--groups", required=True, help="the discovery groups, comma-separated")
    parser.add_argument("--lease", type=float, default=2.0, help="the event registrations' lease in seconds")
    args = parser.parse_args(argv)
    log_warnings()
    discovery = LookupDiscovery(args.groups.split(","), listener=told)
    with LookupCache(template=ServiceTemplate(types=[GREETER_TYPE]), discovery=discovery,
                     lease_duration=args.lease, listener=changed) as cache:
        say("ready")
        for command in sys.stdin:
            if command.strip() == "status":
                say("items", *sorted(item.service_id for item in cache.items()))
            elif command.strip() == "lookups":
                say("lookups", *cache.lookup_services())
    discovery.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
