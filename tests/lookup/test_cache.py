"""LookupCache: a local view kept current by events, across expiry and lookup-service restarts."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import Pyro5.api
import Pyro5.core
import Pyro5.errors
import pytest
from conftest import PROCESSES, Child, ChildProcess, free_port
from lookup_processes import LookupProcess, serve_lookup  # noqa: F401  (a fixture)
from served_lookups import LogWatch, RenewalSpy, ServedLookup

from landlord import FakeClock, LeaseRenewalManager
from lookup import LOOKUP_OBJECT_ID, Comment, LookupService, Name, ServiceItem, ServiceTemplate
from lookup.client.cache import LookupCache

QUOTER = "examples.Quoter"


def item(name: str, *, types: tuple = (QUOTER,)) -> ServiceItem:
    return ServiceItem(None, f"PYRO:{name.replace(' ', '_')}@127.0.0.1:9", types, [Name(name)])


class Changes:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def __call__(self, kind: str, changed: ServiceItem) -> None:
        with self.lock:
            self.seen.append((kind, changed.attributes[0].name))


@pytest.fixture
def lookup(daemon: Any) -> Iterator[tuple[LookupService, str]]:
    service = LookupService()
    yield service, daemon.register(service)
    service.close()


def names(items: list[ServiceItem]) -> set[str]:
    return {i.attributes[0].name for i in items}


def test_snapshot_then_events_keep_the_cache_current(lookup: tuple[LookupService, str]) -> None:
    service, uri = lookup
    early = service.register(item("early"), 30)
    service.register(item("elsewhere", types=("other.Type",)), 30)
    changes = Changes()
    with LookupCache(uri, ServiceTemplate(types=[QUOTER]), listener=changes) as cache:
        assert cache.wait_ready(10)
        assert names(cache.items()) == {"early"}
        late = service.register(item("late"), 30)
        assert cache.wait_until(lambda items: names(items) == {"early", "late"}, 10)
        late.add_attributes([Name("second name")])
        assert cache.wait_until(lambda items: any(len(i.attributes) == 2 for i in items), 10)
        early.lease.cancel()
        assert cache.wait_until(lambda items: names(items) == {"late"}, 10)
        assert str(cache.lookup()._pyroUri) == "PYRO:late@127.0.0.1:9"  # answered locally
        assert cache.lookup(lambda i: names([i]) == {"nobody"}) is None
    assert changes.seen == [("added", "early"), ("added", "late"), ("changed", "late"), ("removed", "early")]
    assert service.fanout.records == {}  # closing cancelled the event registration


def test_an_expiring_service_leaves_the_cache(lookup: tuple[LookupService, str]) -> None:
    service, uri = lookup
    service.register(item("brief"), 1.0)
    with LookupCache(uri, ServiceTemplate(types=[QUOTER])) as cache:
        assert cache.wait_ready(10) and len(cache) == 1
        assert cache.wait_until(lambda items: not items, 10)  # gone when its lease ran out


def test_the_cache_subscribes_again_when_the_lookup_service_restarts(
        daemon: Any, spawn: Callable[..., Child]) -> None:
    port = str(free_port())
    uri = spawn("lookup_service.py", port).expect("URI:")
    with Pyro5.api.Proxy(uri) as first:
        first.register(item("before restart"), 60)
    with LookupCache(uri, ServiceTemplate(types=[QUOTER]), lease_duration=2.0, retry_delay=0.2) as cache:
        assert cache.wait_ready(10) and names(cache.items()) == {"before restart"}
        spawn.children[-1].kill()
        assert spawn("lookup_service.py", port).expect("URI:") == uri
        with Pyro5.api.Proxy(uri) as second:
            second.register(item("after restart"), 60)
        # the event lease's next renewal fails, the cache subscribes anew and takes a fresh snapshot
        assert cache.wait_until(lambda items: names(items) == {"after restart"}, 15)


def test_the_event_registration_is_renewed_for_the_term_given(daemon: Any) -> None:
    # not for FOREVER, which the lookup service would cut to its maximum (300 s)
    service = RenewalSpy()
    uri = daemon.register(service)
    try:
        with LookupCache(uri, ServiceTemplate(types=[QUOTER]), lease_duration=1.5) as cache:
            assert cache.wait_ready(10)
            assert service.renewed.wait(10)  # the first renewal, a third of the term in
            [record] = service.fanout.records.values()
            left = record.leased.expiration - service.clock.monotonic()
            assert 0.5 < left <= 1.5 + 0.01
    finally:
        service.close()


def test_bad_arguments() -> None:
    with pytest.raises(TypeError):
        LookupCache("PYRO:x@127.0.0.1:1", "not a template")  # type: ignore[arg-type]
    with pytest.raises((TypeError, ValueError)):
        LookupCache(42, ServiceTemplate())
    with pytest.raises(TypeError):
        LookupCache(["PYRO:x@127.0.0.1:1", 42], ServiceTemplate())
    with pytest.raises(ValueError, match="at least one"):
        LookupCache([], ServiceTemplate())
    with pytest.raises(TypeError, match="not both"):
        LookupCache("PYRO:x@127.0.0.1:1", ServiceTemplate(), retry_initial=1, retry_delay=1)
    with pytest.raises(ValueError):
        LookupCache("PYRO:x@127.0.0.1:1", ServiceTemplate(), retry_initial=5, retry_max=1)
    with pytest.raises(ValueError):
        LookupCache("PYRO:x@127.0.0.1:1", ServiceTemplate(), orphan_timeout=-1)
    with pytest.raises(ValueError):
        LookupCache("PYRO:x@127.0.0.1:1", ServiceTemplate(), callback_host="")
    with pytest.raises(TypeError):
        LookupCache("PYRO:x@127.0.0.1:1", ServiceTemplate(), callback_host=42)  # type: ignore[arg-type]


# -- several lookup services ---------------------------------------------------------------

TEMPLATE = ServiceTemplate(types=[QUOTER])


def register_everywhere(services: list[LookupService], name: str, duration: float = 60) -> list[Any]:
    """Register one service, under one id, with every lookup service; return the registrations."""
    first = services[0].register(item(name), duration)
    same = item(name).replace(service_id=first.service_id)
    return [first] + [service.register(same, duration, first.secret) for service in services[1:]]


def warnings_about(caplog: pytest.LogCaptureFixture, uri: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "lookup.cache" and r.levelno == logging.WARNING and uri in r.getMessage()]


def test_a_service_listed_by_three_lookup_services_is_one_item(daemon: Any) -> None:
    services = [LookupService() for _ in range(3)]
    uris = [daemon.register(service) for service in services]
    changes = Changes()
    try:
        registrations = register_everywhere(services, "everywhere")
        with LookupCache(uris, TEMPLATE, listener=changes) as cache:
            assert cache.wait_ready(10, count=3) and sorted(cache.subscribed()) == sorted(uris)
            assert names(cache.items()) == {"everywhere"} and len(cache) == 1
            for registration in registrations:  # the same change, reported by each
                registration.add_attributes([Comment("changed")])
            for registration in registrations[:2]:
                registration.lease.cancel()
            assert cache.wait_until(lambda items: len(items) == 1 and len(items[0].attributes) == 2, 10)
            registrations[2].lease.cancel()  # events of one lookup service arrive in order: its change is in
            assert cache.wait_until(lambda items: not items, 10)
    finally:
        for service in services:
            service.close()
    everywhere = [kind for kind, name in changes.seen if name == "everywhere"]
    assert everywhere == ["added", "changed", "removed"]  # once each, not once per lookup service


def test_losing_one_of_two_lookup_services_loses_nothing_and_it_is_followed_again_when_back(
        caplog: pytest.LogCaptureFixture) -> None:
    a, b = ServedLookup(), ServedLookup()
    changes = Changes()
    caplog.set_level(logging.DEBUG, logger="lookup.cache")
    try:
        register_everywhere([a.service, b.service], "both")
        a.service.register(item("only at a"), 60)
        b.service.register(item("only at b"), 60)
        with LogWatch("lookup.cache") as watch, \
                LookupCache([a.uri, Pyro5.api.Proxy(b.uri)], TEMPLATE, listener=changes, lease_duration=1.0,
                            retry_initial=0.05, retry_max=0.2) as cache:
            assert cache.wait_ready(10, count=2) and cache.last_error is None
            assert names(cache.items()) == {"both", "only at a", "only at b"}
            a.stop()  # renewing the event registration there fails for its whole term: lost
            assert watch.wait_count(logging.WARNING, a.uri, 1)
            assert cache.subscribed() == [b.uri]
            # nothing lost: "both" is still at b; "only at a" is kept, as a may well be back
            assert names(cache.items()) == {"both", "only at a", "only at b"}
            assert isinstance(cache.last_error, Pyro5.errors.CommunicationError) and set(cache.errors()) == {a.uri}
            assert not cache.wait_ready(0, count=2) and cache.wait_ready(0)
            b.service.register(item("late at b"), 60)  # b is followed as before
            assert cache.wait_until(lambda items: "late at b" in names(items), 10)
            assert watch.wait_count(logging.DEBUG, a.uri, 2)  # retried, quietly
            a.restart()  # on the same port, under the same object id, knowing nothing
            a.service.register(item("new at a"), 60)
            # subscribed again: the fresh snapshot decides what a lists
            assert cache.wait_until(lambda items: names(items) == {"both", "only at b", "late at b", "new at a"}, 10)
            assert cache.wait_ready(10, count=2)
            assert watch.wait_count(logging.INFO, f"reached {a.uri} again", 1)
            assert cache.last_error is None and cache.errors() == {}
    finally:
        a.close()
        b.close()
    assert sorted(changes.seen[:3]) == [("added", "both"), ("added", "only at a"), ("added", "only at b")]
    assert changes.seen[3:] == [("added", "late at b"), ("removed", "only at a"), ("added", "new at a")]
    assert len(warnings_about(caplog, a.uri)) == 1  # once for the outage, not once per attempt


def test_items_only_a_lost_lookup_service_listed_stay_for_the_orphan_timeout(clock: FakeClock) -> None:
    a, b = ServedLookup(), ServedLookup()
    changes = Changes()
    renewals = LeaseRenewalManager()  # leases on real time; the cache's retries and timeout on the fake clock
    try:
        register_everywhere([a.service, b.service], "both")
        a.service.register(item("only at a"), 60)
        with LogWatch("lookup.cache") as watch, \
                LookupCache([a.uri, b.uri], TEMPLATE, listener=changes, lease_duration=1.0, orphan_timeout=30,
                            renewal_manager=renewals, clock=clock) as cache:
            assert cache.wait_ready(10, count=2)
            a.stop()
            assert watch.wait_count(logging.WARNING, a.uri, 1)  # lost, at fake time 0
            clock.advance(29.9)
            assert names(cache.items()) == {"both", "only at a"}  # not before the timeout
            clock.advance(0.2)
            assert cache.wait_until(lambda items: names(items) == {"both"}, 10)
    finally:
        renewals.close()
        a.close()
        b.close()
    assert changes.seen[2:] == [("removed", "only at a")]


def test_a_discarded_item_is_back_when_a_lookup_service_reports_it_anew(
        lookup: tuple[LookupService, str]) -> None:
    service, uri = lookup
    registration = service.register(item("flaky"), 60)
    changes = Changes()
    with LookupCache(uri, TEMPLATE, listener=changes, lease_duration=1.0, retry_initial=0.05) as cache:
        assert cache.wait_ready(10)
        [flaky] = cache.items()
        cache.discard(flaky)  # a call to it failed
        assert cache.items() == [] and len(cache) == 0
        cache.discard(flaky)  # not held: nothing happens
        service.register(item("other"), 60)
        assert cache.wait_until(lambda items: names(items) == {"other"}, 10)  # not brought back by others' news
        registration.add_attributes([Comment("restarted")])  # an event with its new state
        assert cache.wait_until(lambda items: names(items) == {"other", "flaky"}, 10)
        [flaky] = cache.items(lambda i: names([i]) == {"flaky"})
        cache.discard(flaky)
        [event_registration] = service.fanout.records.values()
        service.manager.cancel(event_registration.cookie)  # the lookup service drops the cache's subscription
        # the next renewal finds it gone; subscribed again, the fresh snapshot lists it: back
        assert cache.wait_until(lambda items: names(items) == {"other", "flaky"}, 10)
    assert changes.seen == [("added", "flaky"), ("removed", "flaky"), ("added", "other"), ("added", "flaky"),
                            ("removed", "flaky"), ("added", "flaky")]
    with pytest.raises(TypeError):
        cache.discard("flaky")  # type: ignore[arg-type]


def test_a_listener_may_discard_what_it_is_told_of(lookup: tuple[LookupService, str]) -> None:
    service, uri = lookup
    told: list[tuple[str, str]] = []
    cache: LookupCache | None = None

    def listener(kind: str, changed: ServiceItem) -> None:
        told.append((kind, changed.attributes[0].name))
        if kind == "added" and changed.attributes[0].name == "dead on arrival":
            assert cache is not None
            cache.discard(changed)  # from inside the listener: told afterwards, in order, no deadlock

    with LookupCache(uri, TEMPLATE, listener=listener) as cache:
        assert cache.wait_ready(10)
        service.register(item("dead on arrival"), 60)
        service.register(item("fine"), 60)
        assert cache.wait_until(lambda items: names(items) == {"fine"}, 10)
    assert told == [("added", "dead on arrival"), ("removed", "dead on arrival"), ("added", "fine")]


def test_an_unreachable_lookup_service_is_explained_and_warned_about_once(
        caplog: pytest.LogCaptureFixture) -> None:
    port = free_port()
    uri = f"PYRO:lookup.LookupService@127.0.0.1:{port}"
    caplog.set_level(logging.DEBUG, logger="lookup.cache")
    with LogWatch("lookup.cache") as watch, \
            LookupCache(uri, TEMPLATE, retry_initial=0.02, retry_max=0.05) as cache:
        assert watch.wait_count(logging.DEBUG, uri, 3)  # tried, and again, and again
        assert not cache.wait_ready(0)
        assert isinstance(cache.last_error, Pyro5.errors.CommunicationError)  # the reason for the False
        assert set(cache.errors()) == {uri} and cache.lookup_services() == [uri]
        served = ServedLookup(port=port)
        try:
            served.service.register(item("there at last"), 60)
            assert cache.wait_ready(10) and names(cache.items()) == {"there at last"}
            assert cache.last_error is None
            assert watch.wait_count(logging.INFO, f"reached {uri} again", 1)
        finally:
            served.close()
    assert len(warnings_about(caplog, uri)) == 1


# -- where events are received -----------------------------------------------------------------

def other_address() -> str | None:
    """An address of this host other than loopback, or None."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the route's source address
            address = probe.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def listener_host(service: LookupService) -> str:
    """The host of the URI the cache handed ``service`` for its events."""
    [record] = service.fanout.records.values()
    return Pyro5.core.URI(record.listener).host


def delivered(cache: LookupCache, service: LookupService, name: str) -> bool:
    service.register(item(name), 60)
    return cache.wait_until(lambda items: name in names(items), 10)


def test_events_are_received_on_the_local_address_of_the_connection_to_the_lookup_service() -> None:
    address = other_address()
    if address is None:
        pytest.skip("this host has no address but loopback")
    far, near = ServedLookup(host=address), ServedLookup()
    try:
        with LookupCache([far.uri, near.uri], TEMPLATE) as cache:
            assert cache.wait_ready(10, count=2)
            assert listener_host(far.service) == address  # not 127.0.0.1: far may be on another host
            assert listener_host(near.service) == "127.0.0.1"  # reached over loopback: served there
            assert delivered(cache, far.service, "from far") and delivered(cache, near.service, "from near")
        with LookupCache(near.uri, TEMPLATE, callback_host=address) as cache:  # told where
            assert cache.wait_ready(10)
            assert listener_host(near.service) == address
            assert delivered(cache, near.service, "told where")
    finally:
        far.close()
        near.close()


@pytest.mark.parametrize("where", ["callback_host", "daemon"])
def test_an_all_interfaces_address_is_never_handed_out(where: str) -> None:
    served = ServedLookup()
    own = Pyro5.api.Daemon(host="0.0.0.0") if where == "daemon" else None
    if own is not None:
        threading.Thread(target=own.requestLoop, daemon=True).start()
    options: dict[str, Any] = {"daemon": own} if own is not None else {"callback_host": "0.0.0.0"}
    try:
        with LookupCache(served.uri, TEMPLATE, **options) as cache:
            assert cache.wait_ready(10)
            assert listener_host(served.service) == "127.0.0.1"  # the connection's local address
            assert delivered(cache, served.service, "through all interfaces")
    finally:
        if own is not None:
            own.shutdown()
        served.close()


def test_a_lookup_service_reached_over_ipv6_is_given_an_ipv6_callback() -> None:
    try:
        served = ServedLookup(host="::1")
    except OSError:
        pytest.skip("no IPv6 loopback here")
    try:
        with LookupCache(served.uri, TEMPLATE) as cache:
            assert cache.wait_ready(10)
            assert listener_host(served.service) == "::1"
            assert delivered(cache, served.service, "over IPv6")
        with LogWatch("lookup.cache") as watch, \
                LookupCache(served.uri, TEMPLATE, callback_host="0.0.0.0", retry_initial=5) as cache:
            assert watch.wait_count(logging.WARNING, served.uri, 1)  # IPv4 only: it cannot work, and says so
            assert not cache.wait_ready(0) and "callback_host='::'" in str(cache.last_error)
    finally:
        served.close()


# -- a dead service, after a lookup service died first: real processes, kill -9 ---------------

GREETER_SERVICE = PROCESSES.parent / "multihost" / "mh_service.py"  # a JoinManager'd greeter, its leases said
GREETERS = ServiceTemplate(types=["mh_api.Greeter"])
SERVICE_LEASE = 2.0  # seconds: the greeter's registrations' term
ALLOWANCE = 2.0  # seconds past that term: the lookup's reaper, the event's way to the cache, a busy machine
Serve = Callable[..., "tuple[LookupProcess, int]"]


def lookup_uri(port: int) -> str:
    return f"PYRO:{LOOKUP_OBJECT_ID}@127.0.0.1:{port}"


def greeter_joined(*lookups: str) -> ChildProcess:
    """The greeter in a process of its own, registered at every one of ``lookups`` for SERVICE_LEASE."""
    service = ChildProcess(str(GREETER_SERVICE), *lookups, "--host", "127.0.0.1", "--lease", str(SERVICE_LEASE),
                           stdin=True)  # it leaves when its stdin ends
    for _ in lookups:
        service.expect("registered ")
    return service


def seconds_until_gone(cache: LookupCache, timeout: float) -> float | None:
    """How long the cache took to show no greeter (``None``: not within ``timeout``), on the monotonic clock."""
    started = time.monotonic()
    if not cache.wait_until(lambda items: not items, timeout):
        return None
    return time.monotonic() - started


def test_a_dead_service_leaves_the_cache_within_its_term_though_a_lookup_service_died_first(
        serve_lookup: Serve) -> None:
    # the user trial: a cache over A and B, a 2 s service at both; A killed, then the service: B says it
    # is gone, and A's last listing (lost, not live) must not keep it for orphan_timeout (300 s)
    (a, port_a), (_, port_b) = serve_lookup(), serve_lookup()
    with LogWatch("lookup.cache") as watch, greeter_joined(lookup_uri(port_a), lookup_uri(port_b)) as service, \
            LookupCache([lookup_uri(port_a), lookup_uri(port_b)], GREETERS, lease_duration=1.0,
                        retry_initial=0.1) as cache:
        assert cache.wait_ready(10, count=2) and len(cache) == 1
        a.kill()  # kill -9
        assert watch.wait_count(logging.WARNING, lookup_uri(port_a), 1)  # lost: its event registration ran out
        assert len(cache) == 1  # still at B
        service.kill()  # kill -9: its registration at B runs out within its term
        gone_after = seconds_until_gone(cache, SERVICE_LEASE + 10)
    assert gone_after is not None and gone_after < SERVICE_LEASE + ALLOWANCE, gone_after


def test_a_lost_lookup_services_items_leave_the_cache_within_their_term(serve_lookup: Serve) -> None:
    # no live lookup service to say it is gone: each lost one's copy is kept for its registration's term
    (a, port_a), (b, port_b) = serve_lookup(), serve_lookup()
    with LogWatch("lookup.cache") as watch, greeter_joined(lookup_uri(port_a), lookup_uri(port_b)), \
            LookupCache([lookup_uri(port_a), lookup_uri(port_b)], GREETERS, lease_duration=1.0,
                        retry_initial=0.1) as cache:
        assert cache.wait_ready(10, count=2) and len(cache) == 1
        a.kill()
        b.kill()
        assert watch.wait_count(logging.WARNING, lookup_uri(port_a), 1)
        assert watch.wait_count(logging.WARNING, lookup_uri(port_b), 1)
        gone_after = seconds_until_gone(cache, SERVICE_LEASE + 10)  # counted from the later loss
    assert gone_after is not None and gone_after < SERVICE_LEASE + ALLOWANCE, gone_after


def test_a_dead_service_leaves_the_cache_within_its_term_before_the_cache_has_noticed_a_lookup_service_died(
        serve_lookup: Serve) -> None:
    # the cache's event registrations at their default term (60 s): A is not yet known lost when B says
    # the service is gone, so A is asked at once whether it is there, and found dead
    (a, port_a), (_, port_b) = serve_lookup(), serve_lookup()
    with greeter_joined(lookup_uri(port_a), lookup_uri(port_b)) as service, \
            LookupCache([lookup_uri(port_a), lookup_uri(port_b)], GREETERS, retry_initial=0.1) as cache:
        assert cache.wait_ready(10, count=2) and len(cache) == 1
        a.kill()
        service.kill()
        gone_after = seconds_until_gone(cache, SERVICE_LEASE + 10)
    assert gone_after is not None and gone_after < SERVICE_LEASE + ALLOWANCE, gone_after


def test_a_lookup_service_that_lists_what_another_says_is_gone_is_asked_and_kept_when_it_answers() -> None:
    a, b = ServedLookup(RenewalSpy()), ServedLookup()
    try:
        _, at_b = register_everywhere([a.service, b.service], "at a still")
        with LogWatch("lookup.cache") as watch, \
                LookupCache([a.uri, b.uri], TEMPLATE, lease_duration=60, retry_initial=0.1) as cache:
            assert cache.wait_ready(10, count=2)
            assert isinstance(a.service, RenewalSpy)
            a.service.renewed.clear()
            at_b.lease.cancel()  # B says it is gone; A (alive) still lists it
            assert a.service.renewed.wait(10)  # asked at once, not at a third of the 60 s lease
            assert names(cache.items()) == {"at a still"} and sorted(cache.subscribed()) == sorted([a.uri, b.uri])
            assert watch.matching(logging.WARNING, a.uri) == []  # not lost
    finally:
        a.close()
        b.close()
