"""A holder of a replicated landlord's leases, on a host of its own (tests/multihost/test_replicated_hosts.py).

    python mh_replica_holder.py ADDRESSES GROUP COUNT TERM

Rents COUNT rooms from the group whose replicas serve at ADDRESSES
(tests/processes/replica_landlord.py), asking each replica in turn until the
leader grants; then renews them all, one batch call after another, through
the group. Prints, each on a line of its own::

    rented <count>
    leader <uri>                   the replica this process learnt leads (on each change)
    renewed <rounds> <monotonic>   batch renewals granted so far (at most every 0.2 s)
    retry <monotonic> <error>      a round that got no answer (at most every 0.2 s)
    definite <monotonic> <error>   a round in which a live lease was refused: must never happen

and answers ``status <uri>`` on stdin with ``status <uri> <leading> <leader>``
(``status <uri> unreachable`` when that replica does not answer).
"""

from __future__ import annotations

import sys
import threading
import time

import Pyro5.api
import Pyro5.errors
from mh_api import log_warnings, now, say

from landlord import LandlordLease, NotLeaderError, known_leader, replica_uris, timeout_within

PRINT_EVERY = 0.2  # seconds between two lines of the same kind


def rent(uris: list[str], count: int, term: float) -> list[LandlordLease]:
    """``count`` leases from whichever replica leads, following NotLeaderError."""
    target = uris[0]
    while True:
        try:
            with Pyro5.api.Proxy(target) as proxy:
                proxy._pyroTimeout = 2.0
                return [proxy.rent(f"room {number}", term) for number in range(count)]
        except NotLeaderError as exc:
            target = exc.leader if exc.leader in uris else uris[(uris.index(target) + 1) % len(uris)]
        except Pyro5.errors.CommunicationError:
            target = uris[(uris.index(target) + 1) % len(uris)]
            threading.Event().wait(0.1)  # a retry's pause


def answer_status(uris: list[str]) -> None:
    for line in sys.stdin:
        command = line.split()
        if command[:1] == ["status"] and len(command) == 2:
            try:
                with Pyro5.api.Proxy(command[1]) as proxy:
                    proxy._pyroTimeout = 2.0
                    status = proxy.replica_status()
                say("status", command[1], status["leading"], status["leader"])
            except Pyro5.errors.CommunicationError:
                say("status", command[1], "unreachable")


def main(addresses: str, group: str, count: str, term: str) -> None:
    log_warnings()
    uris = replica_uris(addresses, group)
    leases = rent(uris, int(count), float(term))
    say("rented", len(leases))
    threading.Thread(target=answer_status, args=(uris,), daemon=True).start()
    cookies, durations = [lease.cookie for lease in leases], [float(term)] * len(leases)
    landlord_id = leases[0].landlord_id
    leader, rounds, printed = None, 0, {"renewed": 0.0, "retry": 0.0}
    while True:
        try:
            with timeout_within(1.0):
                results = leases[0].call_landlord("renew_all", cookies, durations)
        except (Pyro5.errors.CommunicationError, NotLeaderError) as exc:
            if time.monotonic() - printed["retry"] >= PRINT_EVERY:
                printed["retry"] = time.monotonic()
                say("retry", now(), type(exc).__name__)
            threading.Event().wait(0.05)  # a holder's retry pause
            continue
        if results.denied:
            say("definite", now(), repr(results.denied[0]))
        else:
            rounds += 1
            if time.monotonic() - printed["renewed"] >= PRINT_EVERY:
                printed["renewed"] = time.monotonic()
                say("renewed", rounds, now())
        if known_leader(landlord_id) != leader:
            leader = known_leader(landlord_id)
            say("leader", leader)
        threading.Event().wait(0.02)  # a round's pace: about 50 rounds a second


if __name__ == "__main__":
    main(*sys.argv[1:5])
