"""A landlord that hangs (SIGSTOP: alive, connections accepted by the kernel, no answers)
while another stays healthy, both serving leases one renewal manager keeps."""

from __future__ import annotations

import time

import Pyro5.api
import Pyro5.errors
import pytest
from faultkit import (
    CALL_TIMEOUT,
    Frozen,
    Journal,
    LandlordProcess,
    Listener,
    RecordingLease,
    Spawn,
    call_timeout,
    start_landlord,
)

from landlord import FOREVER, LandlordLease, LeaseRenewalManager

__all__ = ["call_timeout"]  # a fixture, imported for pytest

HEALTHY_TERM = 1.0  # renewed every half second
HUNG_TERM = 6.0  # first renewed 3.4 s in (a 2 s round-trip allowance): time to hang and recover
# A call that times out may end this much after the timeout on a loaded machine.
TIMEOUT_SLACK = 1.0


def rent(landlord: LandlordProcess, prefix: str, count: int, term: float,
         journal: Journal) -> list[LandlordLease]:
    with Pyro5.api.Proxy(landlord.direct) as control:
        return [RecordingLease(lease, journal) for lease in control.rent_many(prefix, count, term)]


def test_a_hung_landlord_holds_up_only_its_own_leases(spawn: Spawn, call_timeout: float) -> None:
    """Three leases on a healthy landlord, three on one that is SIGSTOPped as the renewal
    manager takes them. While it hangs, the healthy landlord's leases are renewed on
    schedule (no gap near their 1 s term); every call to the hung one times out after
    the configured call timeout, not later; after SIGCONT, before its leases end, it is
    renewed again. Nothing is lost, nothing freed, nobody told."""
    healthy, hung = start_landlord(spawn), start_landlord(spawn)
    journal, listener = Journal(), Listener()
    healthy_leases = rent(healthy, "a", 3, HEALTHY_TERM, journal)
    hung_leases = rent(hung, "b", 3, HUNG_TERM, journal)
    healthy_id, hung_id = healthy_leases[0].landlord_id, hung_leases[0].landlord_id

    with LeaseRenewalManager(retry_initial=0.2) as manager, \
            Frozen(hung.pid) as frozen:
        frozen_at = time.monotonic()
        for lease in healthy_leases:
            manager.renew_for(lease, FOREVER, listener, renew_duration=HEALTHY_TERM)
        for lease in hung_leases:
            manager.renew_for(lease, FOREVER, listener, renew_duration=HUNG_TERM)

        # A direct call from this thread gives up as configured, too.
        started = time.monotonic()
        with pytest.raises(Pyro5.errors.TimeoutError):
            hung_leases[0].renew(HUNG_TERM)
        direct_call = time.monotonic() - started

        failed = journal.wait_for_call(hung_id, ok=False, since=frozen_at)
        assert all(not lease.expired for lease in hung_leases)  # the test relies on thawing in time
        frozen.thaw()
        thawed_at = time.monotonic()
        recovered = journal.wait_for_call(hung_id, ok=True, since=frozen_at)
        assert len(manager) == 6 and listener.notices == []

    healthy_calls = journal.calls(healthy_id, since=frozen_at - HEALTHY_TERM)
    during = [c.started for c in healthy_calls if c.started <= thawed_at]
    gaps = [later - earlier for earlier, later in zip([frozen_at, *during], during)]
    hung_failures = [c for c in journal.calls(hung_id) if not c.ok]
    print(f"hung {thawed_at - frozen_at:.2f}s; healthy landlord: {len(during)} calls, longest gap "
          f"{max(gaps):.2f}s; hung one: {len(hung_failures)} timeouts of "
          f"{[round(c.ended - c.started, 2) for c in hung_failures]}s, direct call {direct_call:.2f}s, "
          f"renewed {recovered.ended - thawed_at:.2f}s after SIGCONT")
    assert all(c.ok for c in healthy_calls)
    assert len(during) >= 4 and max(gaps) < 0.8 * HEALTHY_TERM  # on schedule, not behind the hung one
    assert isinstance(failed.error, Pyro5.errors.TimeoutError)
    for call in hung_failures:
        assert CALL_TIMEOUT * 0.9 <= call.ended - call.started <= CALL_TIMEOUT + TIMEOUT_SLACK
    assert CALL_TIMEOUT * 0.9 <= direct_call <= CALL_TIMEOUT + TIMEOUT_SLACK
    assert recovered.ended >= thawed_at
    for landlord in (healthy, hung):
        assert not any(line.startswith("freed") for line in landlord.child.output)
