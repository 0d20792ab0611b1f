"""A client of a lease renewal service that hands its leases over and exits.

Usage: renewal_client.py SERVICE_URI ROOMS_URI TERM SET_LEASE [LISTENER_URI WARN_BEFORE]

Rents three rooms from the landlord at ROOMS_URI for TERM seconds each, makes a
renewal set at the service for SET_LEASE seconds, puts the three leases in it
(kept while the set lasts), names LISTENER_URI as the set's warning listener
(WARN_BEFORE seconds ahead), prints ``cookies: a,b,c`` and exits 0, renewing nothing itself.
"""

from __future__ import annotations

import sys

import Pyro5.api

from landlord import FOREVER
from landlord.renewalservice.client import RenewalSetClient


def main() -> None:
    service_uri, rooms_uri, term, set_lease = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    with Pyro5.api.Proxy(rooms_uri) as rooms:
        leases = [rooms.rent(f"room {n}", term) for n in range(3)]
    renewals = RenewalSetClient.create(service_uri, set_lease)
    for lease in leases:
        renewals.renew_for(lease, FOREVER)
    if len(sys.argv) > 6:
        renewals.set_warning_listener(sys.argv[5], float(sys.argv[6]))
    print("cookies:", ",".join(lease.cookie for lease in leases), flush=True)


if __name__ == "__main__":
    main()
