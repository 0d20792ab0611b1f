"""A client streaming registrations, renewals and lookups at a replicated lookup service
(tests/multihost/test_replicated_hosts.py).

    python mh_lookup_stream.py ADDRESSES TERM

Reaches the group at ADDRESSES through ``lookup.discovery.unicast``; registers one
"orphan" service it never renews, then, until told ``stop`` on stdin,
registers a new service every round, keeps every registration alive with a
LeaseRenewalManager, and looks them all up. Prints, each on a line of its own::

    orphan <service_id> <deadline, monotonic>
    registered <count> <monotonic>     acknowledged registrations so far (at most every 0.2 s)
    retry <monotonic> <error>          a round that got no answer (at most every 0.2 s)
    missing <service_id> <monotonic>   an acknowledged, renewed registration a lookup did not find
    lost <service_id> <error>          the renewal manager lost a registration's lease
    definite <monotonic> <error>       a call refused outright
    final <registered> <found>         after stop: acknowledged, and found by one last lookup
"""

from __future__ import annotations

import sys
import threading
import time

import Pyro5.errors
from mh_api import log_warnings, now, say

from landlord import FOREVER, LeaseRenewalEvent, LeaseRenewalManager, NotLeaderError
from lookup import Name, ServiceItem, ServiceTemplate, locate

TYPE = "mh.Streamed"
PRINT_EVERY = 0.2  # seconds between two lines of the same kind


def main(addresses: str, term: str) -> None:
    log_warnings()
    group = locate(addresses, timeout=2.0)
    seconds = float(term)
    orphan = group.register(ServiceItem(None, "PYRO:orphan@10.0.0.1:9", (TYPE,), (Name("orphan"),)), seconds)
    say("orphan", orphan.service_id, f"{time.monotonic() + seconds:.3f}")
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    registered: dict[str, object] = {}
    renewals = LeaseRenewalManager(retry_initial=0.1, retry_max=0.5)

    def lost(event: LeaseRenewalEvent) -> None:
        say("lost", event.lease.cookie[:6], repr(event.exception))

    printed = {"registered": 0.0, "retry": 0.0}
    template = ServiceTemplate(None, (TYPE,), ())
    number = 0
    while not stop.is_set():
        try:
            registration = group.register(ServiceItem(None, f"PYRO:s{number}@10.0.0.1:9", (TYPE,), ()), seconds)
            number += 1
            registered[registration.service_id] = registration
            renewals.renew_for(registration.lease, FOREVER, lost)
            found = {item.service_id for item in group.lookup_all(template, 100_000).items}
        except (Pyro5.errors.CommunicationError, NotLeaderError) as exc:
            if time.monotonic() - printed["retry"] >= PRINT_EVERY:
                printed["retry"] = time.monotonic()
                say("retry", now(), type(exc).__name__)
            stop.wait(0.05)  # a client's retry pause
            continue
        except Exception as exc:
            say("definite", now(), repr(exc))
            continue
        for service_id in registered:
            if service_id not in found:
                say("missing", service_id, now())
        if time.monotonic() - printed["registered"] >= PRINT_EVERY:
            printed["registered"] = time.monotonic()
            say("registered", len(registered), now())
        stop.wait(0.05)  # a round's pace
    found = {item.service_id for item in group.lookup_all(template, 100_000).items}
    say("final", len(registered), len(found & set(registered)))
    renewals.close()


if __name__ == "__main__":
    main(*sys.argv[1:3])
