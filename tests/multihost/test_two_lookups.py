"""Two lookup services, on a and on c: the service on b joins both, the client on c follows both
through one LookupCache, and killing the lookup service on a loses the client nothing."""

from __future__ import annotations

import re

from mhkit import (
    call_through_cache,
    client_items,
    moment,
    registered,
    renewals,
    seconds,
    start_client,
    start_lookup,
    start_service,
)
from netns import Network, network

from lookup.client.cachepeer import PROBE_TIMEOUT

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


ALLOWANCE = 2.0  # seconds past the term: c's reaper, the event's way to the client, a loaded two-core machine


def test_a_dead_service_leaves_the_cache_within_its_term_though_a_lookup_service_was_cut_off_first(
        network: Network) -> None:
    """a's host is cut off (its link down), and once the client has noticed, the service on b is
    killed: c reports it gone when its lease runs out, and a's last listing (lost) does not keep
    it in the client's cache: it vanishes within its term of the kill, not orphan_timeout (300 s)."""
    a, b, c = network["a"], network["b"], network["c"]
    lookup_a, lookup_c = start_lookup(a), start_lookup(c)
    service = start_service(b, [lookup_a, lookup_c], TERM)
    service_id = registered(service, 2)[0].group(1)
    client = start_client(c, [lookup_a, lookup_c], TERM)  # event leases of TERM: a loss is noticed within about that
    client.expect(rf"^found {re.escape(service_id)} ")

    client_mark = client.mark()
    cut = network.partition(a)
    noticed, _ = client.wait_for(rf"WARNING +lookup\.cache: .*{re.escape(lookup_a.uri)}", 3 * TERM + 10, client_mark)
    killed = service.kill()
    gone = moment(client, rf"^vanished {re.escape(service_id)} ([\d.]+)$", TERM + 10, client_mark)
    print(f"a cut off; the client noticed {noticed.time - cut:.2f} s later; the service killed: "
          f"gone from the client's cache {seconds(None if gone is None else gone - killed)} after")
    assert gone is not None and gone - killed < TERM + ALLOWANCE, \
        f"the client's cache kept the service killed at {killed:.2f}:\n{client.tail()}"


def test_a_dead_service_leaves_the_cache_within_its_term_and_a_probe_before_a_cut_off_is_noticed(
        network: Network) -> None:
    """As above, but the client's event leases are 60 s (the default) and the service is killed as
    soon as a is cut off: when c says it is gone, the client asks a (which still lists it) whether it
    is there, finds it cannot be reached within the probe's timeout, and drops the service then."""
    a, b, c = network["a"], network["b"], network["c"]
    lookup_a, lookup_c = start_lookup(a), start_lookup(c)
    service = start_service(b, [lookup_a, lookup_c], TERM)
    service_id = registered(service, 2)[0].group(1)
    client = start_client(c, [lookup_a, lookup_c], 60.0)
    client.expect(rf"^found {re.escape(service_id)} ")

    client_mark = client.mark()
    network.partition(a)
    killed = service.kill()
    gone = moment(client, rf"^vanished {re.escape(service_id)} ([\d.]+)$", TERM + PROBE_TIMEOUT + 10, client_mark)
    print(f"a cut off and the service killed: gone from the client's cache "
          f"{seconds(None if gone is None else gone - killed)} after")
    assert gone is not None and gone - killed < TERM + PROBE_TIMEOUT + ALLOWANCE, \
        f"the client's cache kept the service killed at {killed:.2f}:\n{client.tail()}"
