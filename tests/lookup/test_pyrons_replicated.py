"""Pyro5's name server on a replicated lookup service (``lookup serve --etcd ... --pyro-ns``), over a real
three-member etcd: the leader's face answers, registers into etcd and alone answers broadcasts; a
follower's names the leader in a NamingError; the pings of ns.register's names run on the leader's
term alone and move with leadership; and unmodified Pyro5 programs find a name through the new
leader's face after the old leader is killed."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import Pyro5.api
import Pyro5.errors
import pytest
from conftest import ChildProcess, wait_until
from etcd_fixtures import FAILOVER, ReplicaGroup, cluster, etcd_cluster, new_group  # noqa: F401  (fixtures)
from pyrons_replicas import leading, serve_replicas

from landlord import ANY
from landlord.testing import ServingDaemon
from landlord.testing.etcd import EtcdCluster
from lookup import LookupService, Name, ServiceItem, ServiceRegistration, ServiceTemplate
from lookup.discovery.unicast import LOOKUP_OBJECT_ID
from lookup.service.pyrons.bridge import NameServerBridge, PyroNs
from lookup.service.pyrons.broadcast import REQUEST
from lookup.service.pyrons.liveness import PingTerms
from lookup.service.pyrons.replica import ReplicaNameServer
from lookup.service.replicated import ReplicatedLookupService

PING = 3.0  # --pyro-ns-ping: names' leases of 8.4 s, longer than a failover and the new leader's first ping


class Faced:
    """Three replicas in this process, each with its name server face served (no broadcast port of Pyro5's)."""

    def __init__(self, cluster: EtcdCluster) -> None:
        self.faces: dict[int, ReplicaNameServer] = {}

        def make(client: Any, name: str, uris: list[str]) -> ReplicatedLookupService:
            replica = ReplicatedLookupService(client, group=name, replicas=uris, max_lease=60)
            self.faces[id(replica)] = ReplicaNameServer(replica, PingTerms.every(PING))
            return replica

        self.group = ReplicaGroup(cluster, make, object_id=LOOKUP_OBJECT_ID)
        settings = PyroNs(0, "127.0.0.1", PingTerms.every(PING), broadcast_port=0)
        self.bridges = {key: NameServerBridge(face, settings, host="127.0.0.1") for key, face in self.faces.items()}
        self.group.start()

    def bridge(self, replica: ReplicatedLookupService) -> NameServerBridge:
        return self.bridges[id(replica)]

    def uri(self, replica: ReplicatedLookupService) -> str:
        """The URI of ``replica``'s name server face."""
        uri = self.bridge(replica).uri
        assert uri is not None
        return uri

    def broadcast_port(self, replica: ReplicatedLookupService) -> int:
        """The UDP port where ``replica``'s face takes broadcasts."""
        responder = self.bridge(replica).responder
        assert responder is not None
        return responder.port

    def close(self) -> None:
        self.group.close()
        for bridge in self.bridges.values():
            bridge.close()


@pytest.fixture
def faced(cluster: EtcdCluster) -> Iterator[Faced]:
    started = Faced(cluster)
    yield started
    started.close()


class Echo:
    @Pyro5.api.expose
    def echo(self, text: str) -> str:
        return "echo: " + text


def broadcast_answer(port: int, timeout: float) -> bytes | None:
    """What the responder on UDP ``port`` answers GET_NSURI with (``None``: nothing within ``timeout``)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout)
        sock.sendto(REQUEST, ("127.0.0.1", port))
        try:
            return sock.recvfrom(1000)[0]
        except TimeoutError:
            return None


def test_the_leaders_face_answers_followers_name_it_and_pings_move_with_leadership(faced: Faced) -> None:
    leader = faced.group.leader()
    faced.group.wait_named(leader)
    with ServingDaemon() as daemon:
        uri = daemon.register(Echo())
        with Pyro5.api.Proxy(faced.uri(leader)) as ns:
            ns.register("acme.echo", uri, metadata={"demo"})
            assert str(ns.lookup("acme.echo")) == uri
            assert ns.list() == {"acme.echo": uri, "Pyro.NameServer": faced.uri(leader)}
        assert leader.lookup(ServiceTemplate(None, (), (Name("acme.echo"),))) == uri  # an ordinary registration
        assert broadcast_answer(faced.broadcast_port(leader), 5) == faced.uri(leader).encode()
        for follower in faced.group.followers(leader):
            with Pyro5.api.Proxy(faced.uri(follower)) as ns:
                with pytest.raises(Pyro5.errors.NamingError, match=f"the leader's lookup service is {leader.uri}"):
                    ns.lookup("acme.echo")
                with pytest.raises(Pyro5.errors.NamingError, match="does not lead"):
                    ns.register("stranger", uri)
            assert broadcast_answer(faced.broadcast_port(follower), 0.3) is None  # the leader alone answers
            assert faced.faces[id(follower)].held_names() == 0
        assert faced.faces[id(leader)].held_names() == 1
        with pytest.raises(RuntimeError, match="before the replica starts"):
            ReplicaNameServer(leader)  # it would miss the term that answers now
        leader.close()
        successor = faced.group.leader(excluding=leader)
        assert faced.faces[id(leader)].held_names() == 0  # its term's pings stopped
        wait_until(lambda: faced.faces[id(successor)].held_names() == 1, FAILOVER, "the new leader holds the name")
        with Pyro5.api.Proxy(faced.uri(successor)) as ns:
            assert ns.lookup("acme.echo", return_metadata=True) == (Pyro5.api.URI(uri), {"demo"})


class FakeReplica:
    """A replica as ReplicaNameServer sees it, its terms begun and ended by the test."""

    key = "/lookup/g/leader"

    def __init__(self) -> None:
        self.leading = False
        self.known_leader: str | None = None
        self.begun: list[Callable[[Any], None]] = []
        self.ended: list[Callable[[Any], None]] = []

    def leader(self) -> str | None:
        return self.known_leader

    def on_term(self, callback: Callable[[Any], None]) -> None:
        self.begun.append(callback)

    def on_term_end(self, callback: Callable[[Any], None]) -> None:
        self.ended.append(callback)

    def begin(self, service: LookupService) -> None:
        for callback in self.begun:
            callback(service)
        self.leading = True

    def end(self, service: LookupService) -> None:
        self.leading = False
        for callback in self.ended:
            callback(service)


class FailingService(LookupService):
    """A term's lookup service whose registrations, once :attr:`failing`, end its term or fail as its store would."""

    def __init__(self, replica: FakeReplica, failure: str) -> None:
        super().__init__()
        self._replica, self._failure = replica, failure
        self.failing = False

    def register(self, item: ServiceItem, duration: float = ANY, proof: str | None = None) -> ServiceRegistration:
        registration = super().register(item, duration, proof)
        if self.failing and self._failure == "term ends":
            self._replica.end(self)
        elif self.failing:
            raise OSError("etcd did not answer")  # what a store's write raises, as the face sees it
        return registration


def never_pinged(address: str, timeout: float) -> None:
    """A ping that always answers (no daemon needed)."""


@pytest.mark.parametrize("failure, says", [("term ends", "the term ended while answering"),
                                           ("store fails", "etcd did not confirm the change")])
def test_a_call_whose_term_ends_or_whose_store_fails_is_a_naming_error_saying_ask_again(failure: str,
                                                                                        says: str) -> None:
    replica = FakeReplica()
    face = ReplicaNameServer(replica, PingTerms.every(60), ping=never_pinged)
    with pytest.raises(Pyro5.errors.NamingError, match="knows no leader"):
        face.count()
    replica.known_leader = "PYRO:lookup.LookupService@10.0.0.9:4160"
    with pytest.raises(Pyro5.errors.NamingError, match="the leader's lookup service is PYRO:lookup.LookupService@10"):
        face.lookup("x")
    service = FailingService(replica, failure)
    replica.begin(service)
    try:
        face.register("first", "PYRO:obj@127.0.0.1:7001")  # answered: the term lasted
        assert str(face.lookup("first")) == "PYRO:obj@127.0.0.1:7001" and face.held_names() == 1
        service.failing = True
        with pytest.raises(Pyro5.errors.NamingError, match=f"{says}.*ask again"):
            face.register("second", "PYRO:obj@127.0.0.1:7002")
    finally:
        face.close()
        service.close()


SERVER = '''
import sys
import Pyro5.api

@Pyro5.api.expose
class Echo:
    def echo(self, text):
        return "echo: " + text

daemon = Pyro5.api.Daemon(host="127.0.0.1")
uri = daemon.register(Echo())
Pyro5.api.locate_ns("127.0.0.1", int(sys.argv[1])).register("acme.echo", uri)
print("registered", uri, flush=True)
daemon.requestLoop()
'''

CLIENT = '''
import sys
import Pyro5.api
import Pyro5.errors

try:
    print(Pyro5.api.Proxy(f"PYRONAME:acme.echo@127.0.0.1:{sys.argv[1]}").echo("hi"))
except Pyro5.errors.NamingError as exc:
    print("NamingError:", exc)
'''


def run_client(program: Path, ns_port: int) -> str:
    done = subprocess.run([sys.executable, str(program), str(ns_port)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_unmodified_pyro5_programs_find_a_name_through_the_new_leaders_face_after_the_leader_is_killed(
        cluster: EtcdCluster, tmp_path: Path) -> None:
    (tmp_path / "server.py").write_text(textwrap.dedent(SERVER))
    (tmp_path / "client.py").write_text(textwrap.dedent(CLIENT))
    replicas = serve_replicas(cluster, new_group(), PING)
    try:
        leader, leader_ns = leading(replicas)
        with ChildProcess(str(tmp_path / "server.py"), str(leader_ns), name="echo server") as server:
            server.wait_for("registered")
            assert run_client(tmp_path / "client.py", leader_ns) == "echo: hi\n"
            follower_ns = next(ns for _, uri, ns in replicas if uri != leader)
            refused = run_client(tmp_path / "client.py", follower_ns)
            assert refused.startswith("NamingError: ") and leader in refused, refused
            next(process for process, uri, _ in replicas if uri == leader).process.kill()  # SIGKILL: no resignation
            _, successor_ns = leading(replicas, excluding=leader)
            assert run_client(tmp_path / "client.py", successor_ns) == "echo: hi\n"
    finally:
        for process, _, _ in replicas:
            process.close()
