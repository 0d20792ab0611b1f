"""Partitions of the service's host b (its link down) while it is registered with a lookup service
on a, a client on c following it.

A partition of up to half the term, whenever in the renewal cycle it starts, loses nothing: the
lookup service keeps the registration, the JoinManager never registers again, c's cache never
loses the service. A partition longer than the term drops the registration; the JoinManager
registers it again under the same id once the link is back, and c's cache sees it return.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

import pytest
from mhkit import (
    Lookup,
    call_through_cache,
    lookup_list,
    moment,
    registered,
    renewals,
    seconds,
    service_status,
    start_client,
    start_lookup,
    start_service,
)
from netns import HostProcess, Network, network

__all__ = ["network"]  # a fixture, imported for pytest

# Where in the renewal cycle (the third of the term between two renewals) a partition starts:
# just after a renewal, a third and two thirds into the cycle, and just before the next renewal is due,
# which leaves the lease the least time once the partition is over.
PHASES = (0.05, 0.35, 0.65, 0.95)


def _pause_until(moment: float) -> None:
    """Wait for ``moment`` (``time.monotonic()``): how a partition's start and length are timed."""
    time.sleep(max(0.0, moment - time.monotonic()))


def _setup(network: Network, term: float) -> tuple[Lookup, HostProcess, HostProcess, str]:
    a, b, c = network["a"], network["b"], network["c"]
    lookup = start_lookup(a)
    service = start_service(b, [lookup], term)
    service_id = registered(service)[0].group(1)
    client = start_client(c, [lookup], term)
    client.expect(rf"^found {re.escape(service_id)} ")
    return lookup, service, client, service_id


def _partitions_lose_nothing(network: Network, term: float, phases: Sequence[float]) -> None:
    """Partition b for half the term at each phase of the renewal cycle, one after the other; then
    check that nothing was lost anywhere."""
    lookup, service, client, service_id = _setup(network, term)
    b = network["b"]
    cycle = term / 3  # renewals come once a third of the term has passed
    report = []
    for phase in phases:
        [(left, renewed_at)] = renewals(service, 1, timeout=term, start=service.mark())
        _pause_until(renewed_at + phase * cycle)
        cut = network.partition(b)
        _pause_until(cut + term / 2)
        healed = network.heal(b)
        expires_at = renewed_at + left  # on the service's own view, had nothing been renewed since
        try:
            [(_, recovered_at)] = renewals(service, 1, timeout=max(0.1, expires_at - time.monotonic() + 1.0),
                                           start=service.mark())
        except AssertionError as exc:
            raise AssertionError(f"no renewal after a {healed - cut:.2f} s partition starting {cut - renewed_at:.2f} s "
                                 f"after a renewal of a {term:g} s lease (phase {phase:g}); done so far: "
                                 f"{report}\n{exc}") from None
        report.append(f"phase {phase:.2f}: cut {cut - renewed_at:.2f} s after a renewal for {healed - cut:.2f} s, "
                      f"renewed {recovered_at - healed:.2f} s after healing, "
                      f"{expires_at - recovered_at:.2f} s before the lease would have ended")
        assert recovered_at < expires_at, f"renewed only after the lease had run out: {report[-1]}"
    print(f"{term:g} s term, partitions of {term / 2:g} s:\n  " + "\n  ".join(report))

    times_registered, where = service_status(service)
    assert lookup.expiries(service_id) == 0, f"the lookup service dropped the registration: {report}\n" \
                                             f"{lookup.process.tail()}"
    assert times_registered == 1 and where == [lookup.uri], \
        f"registered {times_registered} times, now at {where}: {report}\n{service.tail()}"
    assert service.matches(r"^unregistered ") == [], f"the JoinManager gave the registration up:\n{service.tail()}"
    assert client.matches(rf"^vanished {re.escape(service_id)} ") == [], \
        f"c's cache lost the service: {report}\n{client.tail()}"
    call_through_cache(client, service_id)


def test_partitions_of_half_a_3s_term_lose_nothing(network: Network) -> None:
    """Four partitions of 1.5 s, starting at four phases of the 1 s renewal cycle of a 3 s lease."""
    _partitions_lose_nothing(network, 3.0, PHASES)


@pytest.mark.slow
def test_a_partition_of_half_a_30s_term_loses_nothing(network: Network) -> None:
    """A 15 s partition of a 30 s lease, starting just before a renewal is due (the hardest phase)."""
    _partitions_lose_nothing(network, 30.0, (0.95,))


def test_a_partition_longer_than_the_term_drops_the_registration_until_the_link_returns(network: Network) -> None:
    """b is cut off for twice its 2 s term, starting just after a renewal. The lookup service drops
    the registration when its lease ends and c's cache sees it go (the event reaches c: it is not
    the one cut off); b's JoinManager is told when the lease's term ends, while still cut off. Once
    the link is back, the JoinManager registers it again under the same id, and c's cache sees it
    return (by the lookup service's event, within a second)."""
    term = 2.0
    lookup, service, client, service_id = _setup(network, term)
    b = network["b"]
    [(left, renewed_at)] = renewals(service, 1, timeout=term + 5, start=service.mark())
    lookup_mark, client_mark, service_mark = lookup.process.mark(), client.mark(), service.mark()
    cut = network.partition(b)
    ends = renewed_at + left  # when the lease runs out, as b sees it

    dropped = moment(lookup.process, rf"registration {re.escape(service_id)} expired", ends - cut + 5, lookup_mark)
    seen_gone = moment(client, rf"^vanished {re.escape(service_id)} ([\d.]+)$", ends + 5 - time.monotonic(),
                       client_mark)
    given_up = moment(service, rf"^unregistered {re.escape(lookup.uri)} ([\d.]+)$", ends + 2 - time.monotonic(),
                      service_mark)
    _pause_until(cut + 2 * term)
    healed = network.heal(b)

    again = service.wait_count(r"^registered (\S+) \S+ (\d+) ([\d.]+) ", 1, 30, service_mark)[0][1]
    reregistered = float(again.group(3))
    back = moment(client, rf"^found {re.escape(service_id)} \S+ ([\d.]+)$", reregistered + 10 - time.monotonic(),
                  client_mark)

    def since(moment: float | None, origin: float) -> str:
        return seconds(None if moment is None else moment - origin)

    measured = (f"{healed - cut:.2f} s partition of a {term:g} s lease cut {cut - renewed_at:.2f} s after a renewal, "
                f"{ends - cut:.2f} s before the lease's end: dropped at the lookup service after "
                f"{since(dropped, ends)}, gone from c's cache after {since(seen_gone, ends)}, JoinManager told after "
                f"{since(given_up, ends)} (times from the lease's end); registered again "
                f"{reregistered - healed:.2f} s after healing, back in c's cache {since(back, healed)} after healing")
    print(measured)
    assert again.group(1) == service_id and again.group(2) == "2", \
        f"registered again as {again.group(0)!r}, not under {service_id}: {measured}"
    assert dropped is not None and dropped <= ends + 1.0, f"{measured}\n{lookup.process.tail()}"
    assert given_up is not None and given_up <= ends + 1.0, \
        f"the JoinManager was not told of the loss when the lease ended: {measured}\n{service.tail()}"
    assert seen_gone is not None and seen_gone <= dropped + 1.0, \
        f"c's cache did not see the registration go when it was dropped: {measured}\n{client.tail()}"
    assert back is not None and back <= reregistered + 1.0, \
        f"c's cache did not see the registration return: {measured}\n{client.tail()}"
    assert service_id in call_through_cache(client, service_id)
    assert service_id in lookup_list(network["c"], network["a"].address)
