"""A holder that rents one lease and keeps it alive with a LeaseRenewalManager until it is killed.

Usage: fault_holder.py LANDLORD_URI RESOURCE DURATION

Prints ``holding <resource> <remaining>`` once it has the lease in its
renewal manager, and ``lost <resource> <error>`` if the manager gives it up.
"""

from __future__ import annotations

import sys
import threading

import Pyro5.api

import landlord


def main(uri: str, resource: str, duration: float) -> None:
    with Pyro5.api.Proxy(uri) as rooms:
        lease = rooms.rent(resource, duration)

    def lost(event: landlord.LeaseRenewalEvent) -> None:
        print("lost", resource, repr(event.exception), flush=True)

    with landlord.LeaseRenewalManager() as manager:
        manager.renew_for(lease, landlord.FOREVER, lost)  # for ever, in renewals of its own term
        print("holding", resource, f"{lease.remaining:.3f}", flush=True)
        threading.Event().wait()  # until killed


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
