"""A lookup service on a listening on all interfaces (``--host 0.0.0.0 --advertise <a's address>``)
hands out URIs that name a's address, so a service on b renews through the leases it gets, and a
client on c finds and calls what it lists."""

from __future__ import annotations

import re

from mhkit import (
    LOOKUP_PORT,
    call_through_cache,
    lookup_list,
    registered,
    renewals,
    start_client,
    start_lookup,
    start_service,
)
from netns import Network, network

__all__ = ["network"]  # a fixture, imported for pytest

TERM = 2.0


def test_what_a_lookup_on_all_interfaces_hands_out_works_from_other_hosts(network: Network) -> None:
    """Its URI and the registration's lease name a's address; b renews through it, c finds, calls and
    lists through it."""
    a, b, c = network["a"], network["b"], network["c"]
    lookup = start_lookup(a, "--advertise", a.address, listen="0.0.0.0")
    assert lookup.uri == f"PYRO:lookup.LookupService@{a.address}:{LOOKUP_PORT}", lookup.uri

    service = start_service(b, [lookup], TERM)
    [registration] = registered(service)
    service_id, landlord = registration.group(1), registration.group(5)
    assert f"@{a.address}:{LOOKUP_PORT}" in landlord, f"the registration's lease names {landlord}"
    renewals(service, 3, timeout=3 * TERM + 10)  # through the URI its lease carries, from b

    client = start_client(c, [lookup], TERM)
    client.expect(rf"^found {re.escape(service_id)} \S+@{re.escape(b.address)}:\d+ ")
    call_through_cache(client, service_id)
    assert service_id in lookup_list(c, a.address)
