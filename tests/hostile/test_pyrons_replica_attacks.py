"""Hostile callers of a replicated lookup service's name server faces (``lookup serve --etcd ...
--pyro-ns``): garbage and a flood of every call at the followers, each refused at once by name; a
stranger's ns.register flood and regex bombs at the leader. The group's canary renews throughout,
a Pyro5 server's name registered through the leader's face stays and resolves, and the group holds
no more than the quota lets one client register.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import Pyro5.api
import Pyro5.errors
import pytest
from attacks import Canary, closed_by_server
from etcd_fixtures import cluster, etcd_cluster, new_group  # noqa: F401  (fixtures)
from pyrons_replicas import Replica, leading, serve_replicas

from landlord.testing.etcd import EtcdCluster
from lookup import ServiceItem, ServiceTemplate

pytestmark = pytest.mark.slow

REGISTRATIONS = 30  # --registrations-per-client: the stranger's flood stops there
DEAD = "PYRO:filler@127.0.0.1:9"  # no daemon there: what is refused before any lease never needs one
FOLLOWER_CALLS = 100  # calls of each kind a stranger makes at each follower


class Echo:
    @Pyro5.api.expose
    def echo(self, text: str) -> str:
        return text


@pytest.fixture
def replicas(cluster: EtcdCluster) -> Iterator[list[Replica]]:
    started = serve_replicas(cluster, new_group(), 2.0, "--registrations-per-client", str(REGISTRATIONS))
    yield started
    for process, _, _ in started:
        process.close()


@pytest.fixture
def echo_daemon() -> Iterator[str]:
    """A Pyro5 daemon in this process serving an Echo; its URI."""
    daemon = Pyro5.api.Daemon(host="127.0.0.1")
    uri = daemon.register(Echo())
    loop = threading.Thread(target=daemon.requestLoop, daemon=True)
    loop.start()
    yield str(uri)
    daemon.shutdown()
    loop.join(10)
    daemon.close()


def test_strangers_at_followers_and_the_leader_move_nothing_but_their_own(replicas: list[Replica],
                                                                          echo_daemon: str) -> None:
    leader, leader_ns = leading(replicas)
    with Pyro5.api.locate_ns("127.0.0.1", leader_ns) as ns:
        ns.register("canary.echo", echo_daemon)
    with Pyro5.api.Proxy(leader) as registrar:
        canary = Canary(registrar.register(ServiceItem(None, "PYRO:canary@127.0.0.1:9", ["c.Canary"], []),
                                           2.0).lease).start()
    try:
        canary.renew_more(2)
        for _, uri, ns_port in replicas:
            if uri != leader:
                _at_a_follower(ns_port, leader)
        with Pyro5.api.locate_ns("127.0.0.1", leader_ns) as stranger:
            flooded = _flood(stranger, echo_daemon.replace("PYRO:obj_", "PYRO:filler_"))
            with pytest.raises(Pyro5.errors.NamingError, match="regex refused"):
                stranger.list(regex="(a+)+$")
            assert str(stranger.lookup("canary.echo")) == echo_daemon
            for servers_own in ("close", "held_names", "answers_broadcast", "own_uri"):
                with pytest.raises(AttributeError, match="no exposed attribute or method"):
                    getattr(stranger, servers_own)()
        assert Pyro5.api.Proxy(f"PYRONAME:canary.echo@127.0.0.1:{leader_ns}").echo("alive") == "alive"
        canary.renew_more(3)
    finally:
        canary.stop()
    canary.check(0.5)
    assert flooded == REGISTRATIONS - 2  # the stranger's quota, less the canary's two (same host, same client)
    with Pyro5.api.Proxy(leader) as registrar:
        assert registrar.lookup_all(ServiceTemplate(), 1000).total <= REGISTRATIONS


def _at_a_follower(ns_port: int, leader: str) -> None:
    """Garbage, then a flood of every call: each refused with a NamingError naming the leader, quickly."""
    with socket.create_connection(("127.0.0.1", ns_port), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\n\r\n" + bytes(range(256)) * 4)
        assert closed_by_server(sock, 10)
    calls: list[Callable[[Any], Any]] = [
        lambda ns: ns.register("stranger.name", DEAD), lambda ns: ns.lookup("canary.echo"),
        lambda ns: ns.remove(prefix="canary."), lambda ns: ns.set_metadata("canary.echo", {"x"}),
        lambda ns: ns.list(regex="(a+)+$"), lambda ns: ns.yplookup(meta_any={"x"}), lambda ns: ns.count(),
    ]
    asked = time.monotonic()
    with Pyro5.api.locate_ns("127.0.0.1", ns_port) as stranger:
        for call in calls * FOLLOWER_CALLS:
            with pytest.raises(Pyro5.errors.NamingError, match=f"the leader's lookup service is {leader}"):
                call(stranger)
    assert time.monotonic() - asked < 10.0  # 700 refusals: a few ms each


def _flood(ns: Pyro5.api.Proxy, uri: str) -> int:
    """Register names of ``uri`` (a live daemon, so that they stay) until the quota refuses them; how many."""
    taken = 0
    with pytest.raises(Pyro5.errors.NamingError, match=f"at most {REGISTRATIONS} registrations"):
        while taken <= REGISTRATIONS:
            ns.register(f"flood.{taken:04}", uri)
            taken += 1
    return taken
