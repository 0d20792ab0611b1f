"""The name server face (lookup.service.pyrons.face) in-process: every method's answers and errors
against Pyro5's own NameServer on the same calls, the two faces of one registry, ownership, and
the pinging that keeps (or drops) what ns.register made."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import Pyro5.callcontext
import Pyro5.core
import Pyro5.errors
import pytest
from conftest import wait_until
from pyrons_calls import CALLS, OWN, URI_A, URI_A2, URI_B, URI_C, outcome, reference

from landlord import LeaseDurationPolicy, LeaseStore
from lookup import LookupService, Name, PyroMetadata, ServiceItem, ServiceTemplate
from lookup.service.pyrons.face import MAX_NS_NAME, NS_REGISTRATION_TYPE, NameServerFace
from lookup.service.pyrons.liveness import PingTerms
from lookup.service.quotas import LookupLimits

QUIET = PingTerms(interval=3600, timeout=1)  # no ping comes due while a test runs


@pytest.fixture
def service() -> Iterator[LookupService]:
    service = LookupService(policy=LeaseDurationPolicy(maximum=3600))
    yield service
    service.close()


@pytest.fixture
def face(service: LookupService) -> Iterator[NameServerFace]:
    face = NameServerFace(service, QUIET)
    face.own_uri = OWN
    yield face
    face.close()


def test_every_call_answers_and_fails_as_pyro5s_own_name_server(face: NameServerFace) -> None:
    ours, theirs = face, reference()
    differences = []
    for what, call in CALLS:
        got, expected = outcome(lambda: call(ours)), outcome(lambda: call(theirs))  # noqa: B023  (called at once)
        if got != expected:
            differences.append(f"{what}: {got!r} != Pyro5's {expected!r}")
    assert not differences, "\n".join(differences)
    assert face.held_names() == 0 and face.pinger.watched() == 0  # everything removed, nothing pinged


def test_a_name_registered_by_ns_register_is_found_by_a_template(face: NameServerFace,
                                                                  service: LookupService) -> None:
    face.register("acme.quotes", URI_A, metadata=["fast", "eu"])
    [item] = service.lookup_all(ServiceTemplate(attributes=[Name("acme.quotes")])).items
    assert item.service_uri == URI_A and item.types == (NS_REGISTRATION_TYPE,)
    assert list(item.attributes) == [Name("acme.quotes"), PyroMetadata("eu"), PyroMetadata("fast")]
    assert service.lookup(ServiceTemplate(types=[NS_REGISTRATION_TYPE], attributes=[PyroMetadata("eu")])) == URI_A


def test_a_name_registered_otherwise_is_found_by_the_ns_face(face: NameServerFace, service: LookupService) -> None:
    service.register(ServiceItem(None, URI_B, ["acme.Quoter"], [Name("acme.quotes"), PyroMetadata("eu")]), 60)
    assert str(face.lookup("acme.quotes")) == URI_B
    assert face.list(prefix="acme") == {"acme.quotes": URI_B}
    assert face.yplookup(meta_any=["eu"]) == {"acme.quotes": (URI_B, {"eu"})}
    assert face.count() == 2  # Pyro.NameServer and it


def test_the_ns_face_never_changes_what_another_client_holds(face: NameServerFace, service: LookupService) -> None:
    registration = service.register(ServiceItem(None, URI_B, ["acme.Quoter"], [Name("held")]), 60)
    for change in (lambda: face.register("held", URI_A), lambda: face.register("held", URI_A, safe=True),
                   lambda: face.set_metadata("held", ["x"]), lambda: face.remove("held")):
        with pytest.raises(Pyro5.errors.NamingError, match="held"):
            change()
    assert face.remove(prefix="he") == 0 and face.remove(regex="h.*") == 0
    assert service.lookup_all(ServiceTemplate(attributes=[Name("held")])).items[0].service_uri == URI_B
    registration.lease.cancel()
    assert face.list() == {"Pyro.NameServer": OWN}


def test_the_name_it_holds_comes_first_when_another_client_takes_the_same_name(
        face: NameServerFace, service: LookupService) -> None:
    face.register("shared", URI_A)
    service.register(ServiceItem(None, URI_B, [], [Name("shared")]), 60)
    assert str(face.lookup("shared")) == URI_A and face.list()["shared"] == URI_A
    face.remove("shared")
    assert str(face.lookup("shared")) == URI_B


@pytest.mark.parametrize("name", ["Pyro.NameServer", "x" * (MAX_NS_NAME + 1)])
def test_reserved_and_huge_names_are_refused(face: NameServerFace, name: str) -> None:
    with pytest.raises(Pyro5.errors.NamingError):
        face.register(name, URI_A)
    with pytest.raises(Pyro5.errors.NamingError):
        face.set_metadata(name, ["x"])
    assert face.held_names() == 0


@pytest.mark.parametrize("uri", ["PYRONAME:x", "PYROMETA:a,b", "PYRO:x@./u:/tmp/nowhere"])
def test_only_pyro_uris_of_a_daemon_address_are_registered(face: NameServerFace, uri: str) -> None:
    if uri.startswith("PYRO:"):
        face.register("unix", uri)  # a Unix socket is an address: its daemon is pinged there
        assert face.pinger.watched() == 1
    else:
        with pytest.raises(Pyro5.errors.NamingError, match="only PYRO"):
            face.register("magic", uri)


def test_names_registered_through_it_count_against_the_callers_quota() -> None:
    service = LookupService(policy=LeaseDurationPolicy(maximum=3600), limits=LookupLimits(registrations_per_client=2))
    face = NameServerFace(service, QUIET)
    try:
        with _called_from("10.0.0.9"):
            face.register("one", URI_A)
            face.register("two", URI_B)
            face.register("one", URI_A2)  # replacing takes no more
            with pytest.raises(Pyro5.errors.NamingError, match="2 registrations"):
                face.register("three", URI_C)
        with _called_from("10.0.0.10"):
            face.register("three", URI_C)  # another client's quota
        assert sorted(face.list()) == ["one", "three", "two"]
    finally:
        face.close()
        service.close()


class _called_from:
    """Pyro5's call context of a caller at ``host``, for the calls made in the block (as a daemon sets it)."""

    def __init__(self, host: str) -> None:
        self.host = host

    def __enter__(self) -> None:
        Pyro5.callcontext.current_context.client_sock_addr = (self.host, 50000)

    def __exit__(self, *exc_info: object) -> None:
        Pyro5.callcontext.current_context.client_sock_addr = None


# -- the pinging -------------------------------------------------------------------------------------------

class FakeDaemons:
    """Which daemon addresses answer a ping; counts the pings."""

    def __init__(self) -> None:
        self.dead: set[str] = set()
        self.pings: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, address: str, timeout: float) -> None:
        with self._lock:
            self.pings[address] = self.pings.get(address, 0) + 1
            if address in self.dead:
                raise ConnectionRefusedError(address)


def test_names_stay_while_their_daemon_answers_and_go_once_it_stops(service: LookupService) -> None:
    daemons = FakeDaemons()
    face = NameServerFace(service, PingTerms(interval=0.1, timeout=0.05, retry=0.05), ping=daemons)
    face.own_uri = OWN
    try:
        for i in range(50):  # fifty names on two daemons: two pings a round, not fifty
            face.register(f"n{i}", URI_A if i % 2 else URI_B)
        wait_until(lambda: min(daemons.pings.values(), default=0) >= 5, 10, "five rounds of pings", poll=0.02)
        assert set(daemons.pings) == {"127.0.0.1:7001", "127.0.0.1:7003"}
        assert len(face.list()) == 51 and face.held_names() == 50  # renewed: the leases outlived their 0.35 s
        daemons.dead.add("127.0.0.1:7001")
        wait_until(lambda: len(face.list()) == 26, 10, "the dead daemon's names gone", poll=0.02)
        assert all(uri == URI_B for name, uri in face.list().items() if name != "Pyro.NameServer")
        assert len(service.registrations()) == 25 and face.pinger.watched() == 1
    finally:
        face.close()


def test_a_name_evicted_by_the_operator_is_forgotten_by_the_face(service: LookupService) -> None:
    face = NameServerFace(service, QUIET)
    try:
        face.register("evicted", URI_A)
        [(item, _)] = service.registrations()
        service.manager.cancel(service.registry.records[item.service_id].cookie)
        with pytest.raises(Pyro5.errors.NamingError, match="unknown name"):
            face.set_metadata("evicted", ["x"])
        assert face.held_names() == 0 and face.pinger.watched() == 0
    finally:
        face.close()


def test_names_registered_before_a_restart_on_the_store_are_held_again(tmp_path: Path) -> None:
    def started() -> tuple[LookupService, NameServerFace]:
        service = LookupService(policy=LeaseDurationPolicy(maximum=3600), store=LeaseStore(tmp_path / "s.db"))
        return service, NameServerFace(service, QUIET)

    service, face = started()
    face.register("kept", URI_A, metadata=["m"])
    service.register(ServiceItem(None, URI_B, ["acme.Quoter"], [Name("joined")]), 600)
    face.close()
    service.close()
    service, face = started()
    try:
        assert face.adopt_stored() == 1 and face.pinger.watched() == 1
        face.set_metadata("kept", ["n"])
        assert face.lookup("kept", return_metadata=True)[1] == {"n"}
        with pytest.raises(Pyro5.errors.NamingError, match="held by another"):
            face.remove("joined")
        assert face.remove("kept") == 1
    finally:
        face.close()
        service.close()


def test_list_stays_right_while_names_come_and_go_and_change(face: NameServerFace) -> None:
    for round_ in range(3):
        for i in range(150):
            face.register(f"r{round_}.{i}", URI_A, metadata=[str(round_)])
        face.set_metadata(f"r{round_}.0", ["changed"])
        listed = face.list(return_metadata=True)
        assert len(listed) == 151 and listed[f"r{round_}.0"] == (URI_A, {"changed"})
        assert listed[f"r{round_}.1"] == (URI_A, {str(round_)})
        assert face.remove(prefix=f"r{round_}.") == 150
    assert face.list() == {"Pyro.NameServer": OWN}
