"""What the multihost scenarios share: a lookup service, a greeter service and a client, each
started in a host, and what their output lines mean.

The programs are ``python -m lookup serve``, ``mh_service.py`` (a greeter kept
registered by a JoinManager) and ``mh_client.py`` (a LookupCache that calls
what it finds); see their docstrings for the lines they print. Times in those
lines are ``time.monotonic()``, one clock for every namespace of the machine,
so they compare directly with the test's own.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Sequence

from netns import Host, HostProcess

from landlord.testing import URI_LINE

LOOKUP_PORT = 4160  # each host is a namespace of its own: the well-known port is free in every one
START_TIMEOUT = 30.0  # seconds for a program to start and answer on a loaded two-core machine


@dataclasses.dataclass
class Lookup:
    """A ``python -m lookup serve`` running in a host, and the URI it logged."""

    host: Host
    process: HostProcess
    uri: str

    def expired(self, service_id: str, start: int = 0, timeout: float = 20.0) -> float:
        """Wait for the log line saying the registration of ``service_id`` expired; when it was read."""
        line, _ = self.process.wait_for(rf"registration {re.escape(service_id)} expired", timeout, start)
        return line.time

    def expiries(self, service_id: str, start: int = 0) -> int:
        """How many times the registration of ``service_id`` was logged as expired (from line ``start`` on)."""
        return len(self.process.matches(rf"registration {re.escape(service_id)} expired", start))


def moment(process: HostProcess, pattern: str, timeout: float, start: int = 0) -> float | None:
    """The ``time.monotonic()`` a line matching ``pattern`` gives in its first group (else the time the
    line was read), waiting up to ``timeout``; ``None`` if no such line came: for measuring, not asserting."""
    try:
        line, found = process.wait_for(pattern, max(0.0, timeout), start)
    except AssertionError:
        return None
    return float(found.group(1)) if found.groups() else line.time


def seconds(value: float | None) -> str:
    """A measured time as a report shows it."""
    return "never (within the wait)" if value is None else f"{value:.2f} s"


def start_lookup(host: Host, *options: str, listen: str | None = None) -> Lookup:
    """Start ``python -m lookup serve --host <listen, or host's address> --port 4160 OPTIONS`` in ``host``."""
    process = host.python("-m", "lookup", "serve", "--host", listen or host.address, "--port", str(LOOKUP_PORT),
                          *options, name="lookup")
    uri = process.expect(URI_LINE, START_TIMEOUT).group("uri")  # 'lookup service at <uri> (...)'
    return Lookup(host, process, uri)


def start_service(host: Host, lookups: Sequence[Lookup | str], lease: float) -> HostProcess:
    """Start ``mh_service.py`` in ``host``, joining ``lookups`` with ``lease``-second registrations."""
    uris = [lookup.uri if isinstance(lookup, Lookup) else lookup for lookup in lookups]
    service = host.python("mh_service.py", *uris, "--host", host.address, "--lease", str(lease), name="service")
    service.expect(r"^serving ", START_TIMEOUT)
    return service


def start_client(host: Host, lookups: Sequence[Lookup | str], lease: float) -> HostProcess:
    """Start ``mh_client.py`` in ``host`` following ``lookups`` (event leases of ``lease`` s); wait until ready."""
    uris = [lookup.uri if isinstance(lookup, Lookup) else lookup for lookup in lookups]
    client = host.python("mh_client.py", *uris, "--lease", str(lease), name="client")
    client.expect(r"^ready ", START_TIMEOUT)
    return client


def registered(service: HostProcess, count: int = 1, timeout: float = START_TIMEOUT,
               start: int = 0) -> list[re.Match[str]]:
    """Wait for ``count`` ``registered`` lines of a service; their matches (groups: id, lookup, times,
    monotonic, landlord)."""
    pattern = r"^registered (\S+) (\S+) (\d+) ([\d.]+) (\S+)$"
    return [found for _, found in service.wait_count(pattern, count, timeout, start)]


def renewals(service: HostProcess, count: int, timeout: float, start: int = 0,
             lookup: str | None = None) -> list[tuple[float, float]]:
    """Wait for ``count`` ``renewed`` lines of a service (at ``lookup``, or any); their (seconds left, monotonic)."""
    where = re.escape(lookup) if lookup is not None else r"\S+"
    found = service.wait_count(rf"^renewed {where} ([\d.]+) ([\d.]+)$", count, timeout, start)
    return [(float(match.group(1)), float(match.group(2))) for _, match in found]


def call_through_cache(client: HostProcess, service_id: str) -> str:
    """Have the client call the greeter through the proxy its cache hands out; the answer."""
    answer = client.ask("call", r"^(called|call-failed) (.*)$")
    assert answer.group(1) == "called" and answer.group(2).startswith(f"{service_id} hello client from "), \
        f"the client's call failed: {answer.group(0)}\n{client.tail()}"
    return answer.group(2)


def client_items(client: HostProcess) -> list[str]:
    """The service ids the client's cache holds now."""
    return client.ask("status", r"^items ?(.*)$").group(1).split()


def service_status(service: HostProcess) -> tuple[int, list[str]]:
    """A service's JoinManager now: times_registered, and the lookups it is registered with."""
    found = service.ask("status", r"^status times_registered=(\d+) registrations=(\d+) ?(.*)$")
    return int(found.group(1)), found.group(3).split()


def lookup_list(host: Host, lookup_address: str) -> str:
    """``python -m lookup list --host <lookup_address> --port 4160`` run in ``host``: its table."""
    done = host.run(sys.executable, "-m", "lookup", "list", "--host", lookup_address, "--port", str(LOOKUP_PORT))
    assert done.returncode == 0, f"lookup list on {host.name} failed ({done.returncode}): {done.stderr}"
    return done.stdout
