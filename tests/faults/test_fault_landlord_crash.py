"""A landlord killed with SIGKILL while a holder's renewal manager keeps its leases, then
restarted on the same port (same URI).

Without a store the restarted landlord has never heard of the leases: the
holder first gets communication errors (indefinite: keep trying), then
UnknownLeaseError (definite: told at once). With a durable store the same
kill must end the other way, with nothing lost: that is tests/faults/test_durable.py.
:func:`kill_and_restart` takes the landlord's options, so a store variant of
this scenario can reuse it with ``expect_notices=0``.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import time

import Pyro5.api
import Pyro5.errors
import pytest
from faultkit import (
    Call,
    Journal,
    LandlordProcess,
    Listener,
    Notice,
    RecordingLease,
    Spawn,
    call_timeout,
    start_landlord,
)

from landlord import FOREVER, LandlordLease, LeaseError, LeaseRenewalManager, UnknownLeaseError

__all__ = ["call_timeout"]  # a fixture, imported for pytest

TERM = 6.0  # first renewed 3.4 s in (2 s allowance): the kill and restart fit well inside


@dataclasses.dataclass
class Outcome:
    """What the holder saw across the kill and the restart."""

    leases: list[LandlordLease]
    direct_error: BaseException  # a renewal tried by hand right after the kill
    failed_before_restart: Call  # the renewal manager's first call after the kill
    notices_before_restart: list[Notice]
    restarted: LandlordProcess
    restarting_at: float  # time.monotonic() as the new landlord was started
    first_call_after_restart: Call  # the first that reached the new landlord
    notices: list[Notice]  # all of them, once the listener has heard of every lease (or not)
    managed_at_end: int  # leases still in the renewal manager


def kill_and_restart(spawn: Spawn, *options: str, expect_notices: int, leases: int = 3) -> Outcome:
    """Rent ``leases`` from a landlord started with ``options``, keep them in a renewal
    manager, SIGKILL the landlord, let the manager fail once, restart it on the same port
    (same options), and record what the holder sees; waits for ``expect_notices`` notices
    (or, for none, for the first renewal call after the restart)."""
    landlord = start_landlord(spawn, *options)
    journal, listener = Journal(), Listener()
    with Pyro5.api.Proxy(landlord.direct) as control:
        rented = [RecordingLease(lease, journal) for lease in control.rent_many("room-", leases, TERM)]
    landlord_id = rented[0].landlord_id
    with LeaseRenewalManager(retry_initial=0.2) as manager:
        for lease in rented:
            manager.renew_for(lease, FOREVER, listener, renew_duration=TERM)

        os.kill(landlord.pid, signal.SIGKILL)
        assert landlord.child.process.wait(10) == -signal.SIGKILL
        killed_at = time.monotonic()
        with pytest.raises(Exception) as direct:
            rented[0].renew(TERM)
        failed = journal.wait_for_call(landlord_id, ok=False, since=killed_at)
        notices_before = list(listener.notices)
        assert all(not lease.expired for lease in rented)  # the test relies on restarting in time

        restarting_at = time.monotonic()
        restarted = start_landlord(spawn, *options, port=landlord.port)
        if expect_notices:
            listener.wait_for(expect_notices)

        def reached(journal: Journal) -> list[Call]:
            # calls made while the new process was still binding its port may fail to connect
            return [c for c in journal.calls(landlord_id, since=restarting_at) if c.error is None]

        journal.wait_for(reached, 15, "a renewal call that reached the restarted landlord")
        return Outcome(rented, direct.value, failed, notices_before, restarted, restarting_at,
                       reached(journal)[0], list(listener.notices), len(manager))


def test_a_landlord_killed_without_a_store_is_indefinite_then_definite(
        spawn: Spawn, call_timeout: float) -> None:
    """While the landlord is dead, renewals fail with CommunicationError (not a LeaseError)
    and nobody is told: the landlord may come back. Once it is back on the same port
    without its leases, the first renewal gets UnknownLeaseError and the listener is told
    at once, exactly once per lease, well before the leases would have expired."""
    outcome = kill_and_restart(spawn, expect_notices=3)
    restarted_uri = outcome.restarted.uri

    assert isinstance(outcome.direct_error, Pyro5.errors.CommunicationError)
    assert not isinstance(outcome.direct_error, LeaseError)
    assert isinstance(outcome.failed_before_restart.error, Pyro5.errors.CommunicationError)
    assert outcome.notices_before_restart == []  # indefinite: nobody told while it was down

    assert all(lease.landlord == restarted_uri for lease in outcome.leases)  # same URI as before
    refused = outcome.first_call_after_restart.failures  # it reached a landlord that knew none of them
    assert refused and all(isinstance(e, UnknownLeaseError) for e in refused.values())
    assert len(outcome.notices) == 3 and outcome.managed_at_end == 0
    assert {n.event.lease for n in outcome.notices} == set(outcome.leases)  # once per lease
    for notice in outcome.notices:
        assert isinstance(notice.event.exception, UnknownLeaseError)  # a definite answer
        assert notice.wall < notice.event.lease.expiration  # told at once, not at expiry
        assert notice.monotonic >= outcome.restarting_at
    told_after = max(n.monotonic for n in outcome.notices) - outcome.restarting_at
    ahead = min(n.event.lease.expiration - n.wall for n in outcome.notices)
    print(f"told {told_after:.2f}s after the restart began, {ahead:.2f}s before the leases would have expired")
