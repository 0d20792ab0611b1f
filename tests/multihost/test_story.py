"""The README's story across three hosts: a lookup service on a, a service on b kept registered by
a JoinManager on a 2 s lease, a client on c following it through a LookupCache and calling it.
The service renews for a while, is killed with kill -9, and vanishes at the lookup service and in
c's cache within its term plus a second."""

from __future__ import annotations

import re
import time

from mhkit import (
    LOOKUP_PORT,
    call_through_cache,
    lookup_list,
    moment,
    registered,
    renewals,
    seconds,
    start_client,
    start_lookup,
    start_service,
)
from netns import Network, network

__all__ = ["network"]  # a fixture, imported for pytest

TERM = 2.0  # the service's registration lease, and the client's event lease
SLACK = 1.0  # what vanishing may take beyond the term
RENEWALS = 5  # renewals seen before the kill
LATE = 10.0  # how long past term + slack to keep waiting, to measure a late vanishing too


def test_a_killed_service_vanishes_at_the_lookup_and_in_the_cache_within_its_term(network: Network) -> None:
    """After five renewals, kill -9 of the service: measured from the kill, the lookup service logs its
    registration expired and c's cache reports it vanished, both within the term plus a second."""
    a, b, c = network["a"], network["b"], network["c"]
    lookup = start_lookup(a)
    assert lookup.uri.endswith(f"@{a.address}:{LOOKUP_PORT}"), lookup.uri
    service = start_service(b, [lookup], TERM)
    [registration] = registered(service)
    service_id = registration.group(1)
    client = start_client(c, [lookup], TERM)
    client.expect(rf"^found {re.escape(service_id)} \S+@{re.escape(b.address)}:\d+ ")
    assert service_id in call_through_cache(client, service_id)
    assert service_id in lookup_list(c, a.address)

    renewed = renewals(service, RENEWALS, timeout=RENEWALS * TERM + 10)
    assert all(left <= TERM for left, _ in renewed), \
        f"a {TERM:g} s lease renewed to more than its term (seconds left after each renewal): {renewed}"

    lookup_mark, client_mark = lookup.process.mark(), client.mark()
    killed = service.kill()
    deadline = killed + TERM + SLACK + LATE
    expired = moment(lookup.process, rf"registration {re.escape(service_id)} expired", deadline - time.monotonic(),
                     lookup_mark)
    vanished = moment(client, rf"^vanished {re.escape(service_id)} ([\d.]+)$", deadline - time.monotonic(),
                      client_mark)
    at_lookup = None if expired is None else expired - killed
    in_cache = None if vanished is None else vanished - killed
    measured = (f"kill -9 after {len(renewed)} renewals of a {TERM:g} s lease ({killed - renewed[-1][1]:.2f} s after "
                f"the last): gone at the lookup service after "
                f"{seconds(at_lookup)}, in c's cache after {seconds(in_cache)} (allowed: {TERM + SLACK:g} s)")
    print(measured)
    assert at_lookup is not None and at_lookup <= TERM + SLACK, f"{measured}\nlookup:\n{lookup.process.tail()}"
    assert in_cache is not None and in_cache <= TERM + SLACK, f"{measured}\nclient:\n{client.tail()}"
    assert service_id not in lookup_list(c, a.address)

