"""The servers the hostile suite attacks, and the canary that must not notice (``tests/hostile/``).

A :class:`Target` is a server in a child process (a landlord served by
``serve_landlord``, ``python -m lookup serve``, ``python -m landlord
renewal-service``, or a replica of a replicated landlord over a real
three-member etcd) with a 2 s lease on it for the canary: a room's lease, a
registration's, a renewal set's. :func:`serving` starts one, with options of
the test's own; the :func:`target` fixture starts each of the four in turn,
:func:`admin_target` the same with an admin object beside it (token
:data:`ADMIN_TOKEN`). :func:`watched` runs the canary through a block and then
checks the standard every hostile test keeps: no renewal missed, the worst
under :data:`WORST_RENEWAL`, the server's memory bounded and back near its
baseline.

Test modules import the fixtures from here, with ``etcd_cluster`` (the
replica's), as they do tests/etcd_fixtures.py's::

    from etcd_fixtures import etcd_cluster  # noqa: F401 (a fixture)
    from targets import target  # noqa: F401 (a fixture)
"""

from __future__ import annotations

import contextlib
import pathlib
import time
from collections.abc import Iterator
from dataclasses import dataclass

import Pyro5.api
import Pyro5.errors
import pytest
from attacks import Canary, memory_of
from conftest import PROCESSES, ChildProcess, free_port
from etcd_fixtures import new_group

import landlord
from landlord.admin import PREFIX_SHOWN
from lookup import ServiceItem, locate

KINDS = ("landlord", "lookup", "renewal service", "replica")
WORST_RENEWAL = 0.25   # seconds: the most one of the canary's renewals may take during an attack
KEPT_MEMORY = 64 * 1024 * 1024   # what an attack may leave the server holding once it ends
PEAK_MEMORY = 256 * 1024 * 1024  # what it may make the server take at its worst
SERVICE_URI = "PYRO:quotes@127.0.0.1:9"
ADMIN_TOKEN = "hostile-suite-admin-token-0123456789"
ADMIN_LINE = r" admin at (?P<uri>PYRO:\S+)"  # what serve_object prints after the server's own line


@dataclass
class Target:
    """A server in a child process, and a lease on it for the canary.

    ``admin_id`` is its admin object's id, when it serves one (:func:`serving` with a token file).
    """

    name: str
    process: ChildProcess
    port: int
    object_id: str
    lease: landlord.Lease
    admin_id: str | None = None

    @property
    def uri(self) -> str:
        return f"PYRO:{self.object_id}@127.0.0.1:{self.port}"

    @property
    def admin_object(self) -> str:
        """Its admin object's id (it must serve one)."""
        assert self.admin_id is not None, f"the {self.name} serves no admin object"
        return self.admin_id

    @property
    def admin_uri(self) -> str:
        return f"PYRO:{self.admin_object}@127.0.0.1:{self.port}"

    @property
    def cookie_prefix(self) -> str:
        """The start of the canary lease's cookie, as an admin listing shows it."""
        assert isinstance(self.lease, landlord.LandlordLease), self.lease
        return self.lease.cookie[:PREFIX_SHOWN]


def _start(kind: str, request: pytest.FixtureRequest, options: tuple[str, ...]) -> tuple[ChildProcess, str]:
    if kind == "landlord":
        return landlord.testing.start_server(str(PROCESSES / "served_landlord.py"), "--landlord-id", "hostile",
                                             *options)
    if kind == "lookup":
        return landlord.testing.start_server("-m", "lookup", "serve", "--port", str(free_port()), "--no-announce",
                                             *options)
    if kind == "renewal service":
        return landlord.testing.start_server("-m", "landlord", "renewal-service", "--port", str(free_port()),
                                             *options, pattern=r"^renewal service at (?P<uri>\S+)")
    if kind == "replica":
        cluster = request.getfixturevalue("etcd_cluster")
        port = free_port()
        return landlord.testing.start_server(str(PROCESSES / "replica_landlord.py"), ",".join(cluster.endpoints),
                                             new_group(), str(port), f"127.0.0.1:{port}", *options)
    raise ValueError(f"no such target: {kind!r} (one of {KINDS})")


def _canary_lease(kind: str, uri: str, port: int) -> landlord.Lease:
    if kind == "lookup":
        with locate(port=port) as lookup:
            return lookup.register(ServiceItem(None, SERVICE_URI, ["quotes.Canary"], []), 2.0).lease
    if kind == "renewal service":
        with Pyro5.api.Proxy(uri) as proxy:
            lease: landlord.Lease = proxy.create_set(2.0)[1]
            return lease
    asked = time.monotonic()
    while True:  # a replica grants once it leads (its election, over etcd, takes a moment); until then it
        try:     # refuses, or drops the connection
            with Pyro5.api.Proxy(uri) as proxy:
                return proxy.rent("canary", 2.0)  # type: ignore[no-any-return]
        except (landlord.NotLeaderError, Pyro5.errors.CommunicationError):
            if time.monotonic() - asked > 10:
                raise
            time.sleep(0.1)  # the pace of asking again, not a wait standing in for an event


@contextlib.contextmanager
def serving(kind: str, request: pytest.FixtureRequest, *options: str,
            admin_token_file: pathlib.Path | None = None) -> Iterator[Target]:
    """A ``kind`` of server (one of :data:`KINDS`) in a child process, and the canary's lease on it.

    Args:
        kind: which server.
        request: the test's, for the replica's etcd cluster (the module's ``etcd_cluster`` fixture).
        options: more of the server's command-line options (its limits, say).
        admin_token_file: serve an admin object beside it with the token in this file.

    Raises:
        ValueError: no such kind.
    """
    if admin_token_file is not None:
        options += ("--admin-token-file", str(admin_token_file))
    process, uri = _start(kind, request, options)
    with process:
        admin_id = None
        if admin_token_file is not None:
            admin_id = str(Pyro5.api.URI(process.read_uri(pattern=ADMIN_LINE)).object)
        object_id, _, where = uri.removeprefix("PYRO:").partition("@")
        port = int(where.rsplit(":", 1)[1])
        lease = _canary_lease(kind, uri, port)
        yield Target(kind, process, port, object_id, lease, admin_id)
        landlord.transport.proxies.discard(uri)


@pytest.fixture(params=KINDS)
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """Each of the four servers in turn (a test may name fewer: ``parametrize("target", [...], indirect=True)``)."""
    with serving(request.param, request) as started:
        yield started


@pytest.fixture(params=KINDS)
def admin_target(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[Target]:
    """Each of the four servers in turn, with an admin object beside it (token :data:`ADMIN_TOKEN`)."""
    token_file = tmp_path / "admin-token"
    token_file.write_text(ADMIN_TOKEN + "\n")
    token_file.chmod(0o600)
    with serving(request.param, request, admin_token_file=token_file) as started:
        yield started


@contextlib.contextmanager
def watched(target: Target) -> Iterator[Canary]:
    """The canary renewing throughout the block; checked after it, with the server's memory: no renewal
    missed, the worst under :data:`WORST_RENEWAL`; the server took at most :data:`PEAK_MEMORY` more than
    before the block at its worst, and holds at most :data:`KEPT_MEMORY` more after it."""
    resident, _ = memory_of(target.process.pid)
    canary = Canary(target.lease).start()
    try:
        canary.renew_more(2)
        yield canary
        canary.renew_more(3)  # and it serves on
    finally:
        canary.stop()
    canary.check(WORST_RENEWAL)
    now, peak = memory_of(target.process.pid)
    print(f"{target.name}: memory {resident / 2**20:.1f} MiB before, {now / 2**20:.1f} after, "
          f"peak {peak / 2**20:.1f}")
    assert peak - resident < PEAK_MEMORY and now - resident < KEPT_MEMORY
