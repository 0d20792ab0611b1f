"""Discovery across namespace hosts: a service on b and a client on c find the lookup service on a
with no address configured; one served with --no-announce is not found; a partition of a makes it
disappear from discovery, and healing brings it back.

Every host has no default route, so multicast goes out only because the interface is named
(IP_MULTICAST_IF): the lookup service's log must say it multicasts on eth0, not that it fell back."""

from __future__ import annotations

import re
import sys

from mhkit import START_TIMEOUT, start_lookup
from netns import Network, network

__all__ = ["network"]  # a fixture, imported for pytest

GROUP = "demo"
INTERVAL = 0.5   # seconds between announcements: a lookup service silent for 3 of them is discarded
LEASE = 2.0
GONE_WITHIN = 3 * INTERVAL + 3.0  # discarded after 3 missed intervals; the rest is a loaded machine's slack


def test_a_service_and_a_client_find_the_lookup_service_with_no_address_configured(network: Network) -> None:
    a, b, c = network["a"], network["b"], network["c"]
    lookup = start_lookup(a, "--groups", GROUP, "--announce-interval", str(INTERVAL), listen="0.0.0.0")
    assert lookup.uri.endswith(f"@{a.address}:4160"), lookup.uri
    lookup.process.expect(rf"discovery on eth0 \({re.escape(a.address)}\): multicast", START_TIMEOUT)
    quiet = start_lookup(c, "--groups", GROUP, "--no-announce", listen="0.0.0.0")

    service = b.python("mh_disco_service.py", "--host", b.address, "--groups", GROUP, "--lease", str(LEASE),
                       name="service")
    service.expect(rf"^discovered \S+ {re.escape(lookup.uri)} ", START_TIMEOUT)
    registered = service.expect(rf"^registered (\S+) {re.escape(lookup.uri)} ", START_TIMEOUT)
    service_id = registered.group(1)

    client = c.python("mh_disco_client.py", "--groups", GROUP, "--lease", str(LEASE), name="client")
    client.expect(rf"^discovered \S+ {re.escape(lookup.uri)} ", START_TIMEOUT)
    client.expect(rf"^found {re.escape(service_id)} ", START_TIMEOUT)
    assert client.ask("lookups", r"^lookups ?(.*)$").group(1).split() == [lookup.uri]

    # one discover() from c: a's lookup service, never c's own --no-announce one
    found = c.run(sys.executable, "mh_disco_find.py", "--groups", GROUP, "--timeout", "2")
    assert found.returncode == 0, found.stderr
    uris = [line.split()[2:] for line in found.stdout.splitlines() if line.startswith("found ")]
    assert uris == [[lookup.uri]], f"{found.stdout}\nthe quiet one is {quiet.uri}"
    other = c.run(sys.executable, "mh_disco_find.py", "--groups", "elsewhere", "--timeout", "1")
    assert other.stdout.splitlines() == ["done"], other.stdout

    # a partition of a: it disappears from both discoveries, and from the client's cache
    client_mark, service_mark = client.mark(), service.mark()
    cut = network.partition(a)
    for process, mark in ((client, client_mark), (service, service_mark)):
        line, _ = process.wait_for(rf"^discarded \S+ {re.escape(lookup.uri)} ", GONE_WITHIN + 10, mark)
        assert line.time - cut <= GONE_WITHIN, f"{process.name} took {line.time - cut:.2f} s to discard a"
    client.expect(rf"^vanished {re.escape(service_id)} ", 10, client_mark)
    assert client.ask("lookups", r"^lookups ?(.*)$").group(1).split() == []

    # healed: found again, registered again under the same id, and seen again
    client_mark, service_mark = client.mark(), service.mark()
    network.heal(a)
    service.expect(rf"^discovered \S+ {re.escape(lookup.uri)} ", 10, service_mark)
    service.expect(rf"^registered {re.escape(service_id)} {re.escape(lookup.uri)} ", START_TIMEOUT, service_mark)
    client.expect(rf"^discovered \S+ {re.escape(lookup.uri)} ", 10, client_mark)
    client.expect(rf"^found {re.escape(service_id)} ", START_TIMEOUT, client_mark)
