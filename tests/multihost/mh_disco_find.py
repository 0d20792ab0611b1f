"""Find lookup services once, by discovery: ``python mh_disco_find.py --groups G1,G2 [--timeout S]``.

Prints one line per lookup service found within the timeout, ``found <lookup id> <uri>...``, then ``done``.
"""

from __future__ import annotations

import argparse
import sys

from mh_api import log_warnings, say

from lookup import discover


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Find lookup services by discovery, once.")
    parser.add_argument("--groups", required=True, help="the discovery groups, comma-separated")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds to listen")
    args = parser.parse_args(argv)
    log_warnings()
    for lookup in discover(args.timeout, groups=args.groups.split(",")):
        say("found", lookup.lookup_id, *lookup.uris)
    say("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
