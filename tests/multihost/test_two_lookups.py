"""Two lookup services, on a and on c: the service on b joins both, the client on c follows both
through one LookupCache, and killing the lookup service on a loses the client nothing."""

from __future__ import annotations

import re

from mhkit import call_through_cache, client_items, registered, renewals, start_client, start_lookup, start_service
from netns import Network, network

__all__ = ["network"]  # a fixture, imported for pytest

TERM = 2.0
WATCHED_RENEWALS = 6  # renewals at c's lookup service watched after a is killed: two terms


def test_killing_one_of_two_lookup_services_loses_the_client_nothing(network: Network) -> None:
    """One service at two lookup services is one item in c's cache; after a's lookup service is
    killed, over two terms of renewals at c, the item stays and calls through it still work."""
    a, b, c = network["a"], network["b"], network["c"]
    lookup_a, lookup_c = start_lookup(a), start_lookup(c)
    service = start_service(b, [lookup_a, lookup_c], TERM)
    both = registered(service, 2)
    assert {found.group(2) for found in both} == {lookup_a.uri, lookup_c.uri}, [f.group(0) for f in both]
    service_id = both[0].group(1)
    assert both[1].group(1) == service_id, "one service, one id at both lookup services"

    client = start_client(c, [lookup_a, lookup_c], TERM)
    client.expect(rf"^found {re.escape(service_id)} ")
    assert client_items(client) == [service_id]  # one item, though two lookup services list it
    call_through_cache(client, service_id)

    client_mark, service_mark = client.mark(), service.mark()
    killed = lookup_a.process.kill()
    watched = renewals(service, WATCHED_RENEWALS, timeout=WATCHED_RENEWALS * TERM + 10, start=service_mark,
                       lookup=lookup_c.uri)
    watched_for = watched[-1][1] - killed
    assert watched_for >= TERM, f"watched only {watched_for:.2f} s"  # longer than every lease at a
    print(f"lookup service on a killed; {len(watched)} renewals at c over {watched_for:.2f} s; "
          f"the client's cache held the service throughout")
    assert client.matches(rf"^vanished {re.escape(service_id)} ", client_mark) == [], \
        f"c's cache lost the service when a died:\n{client.tail()}"
    assert client_items(client) == [service_id]
    call_through_cache(client, service_id)
