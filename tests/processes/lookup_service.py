"""A lookup service in its own process, at a fixed object id so a restart keeps its URI.

Usage: lookup_service.py PORT. Prints ``URI: <uri>`` once serving.
"""

from __future__ import annotations

import sys

import Pyro5.api

from lookup import LookupService


def main() -> None:
    service = LookupService()
    daemon = Pyro5.api.Daemon(host="127.0.0.1", port=int(sys.argv[1]))
    print("URI:", daemon.register(service, objectId="lookup"), flush=True)
    daemon.requestLoop()


if __name__ == "__main__":
    main()
