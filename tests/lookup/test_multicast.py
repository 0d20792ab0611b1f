"""Discovery in one process, on real sockets over loopback (a free UDP port of the test's own, so
nothing else hears it): discover() by group, hostile packets dropped while the announcer answers on,
the broadcast fallback, LookupDiscovery's appearing and disappearing on a fake clock, and
JoinManager and LookupCache following what discovery finds."""

from __future__ import annotations

import errno
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import Pyro5.api
import pytest

from landlord import FakeClock
from landlord.testing import Recorder, ServingDaemon, free_udp_port
from lookup import DiscoveredLookup, JoinManager, LookupCache, LookupDiscovery, ServiceTemplate, discover
from lookup.discovery.announcer import Announcer
from lookup.discovery.multicast import DiscoveryTable
from lookup.discovery.network import DiscoveryNetwork, Interface, Sender, open_listener
from lookup.discovery.packets import Announcement, Request, parse
from lookup.discovery.ratelimit import ReplyLimiter
from lookup.service.server import serve

LOOPBACK = "127.0.0.1"
URI = "PYRO:lookup.LookupService@127.0.0.1:4160"
WAIT = 10.0  # seconds: generous, for a loaded machine; every wait ends as soon as its condition holds


@pytest.fixture
def port() -> int:
    return free_udp_port("")


@pytest.fixture
def served(port: int) -> Iterator[Callable[..., str]]:
    """Serve lookup services in this process, announcing on loopback at ``port``; each one's URI."""
    stops: list[tuple[threading.Event, threading.Thread]] = []

    def start(groups: list[str], **options: Any) -> str:
        stop, ready = threading.Event(), Recorder[str]()
        thread = threading.Thread(target=serve, args=(LOOPBACK, 0), daemon=True, kwargs=dict(
            stop=stop, ready=ready, announce=False, groups=groups, announce_interval=0.5,
            discovery_network=DiscoveryNetwork(port=port, interface=LOOPBACK), **options))
        thread.start()
        stops.append((stop, thread))
        return ready.wait_for(1, WAIT)[0]

    yield start
    for stop, thread in stops:
        stop.set()
        thread.join()


@Pyro5.api.expose
class Echo:
    def echo(self, text: str) -> str:
        return text


def test_discover_finds_a_lookup_service_by_group_and_not_one_of_another(served: Callable[..., str],
                                                                         port: int) -> None:
    demo, other = served(["demo"]), served(["other", ""])
    found = discover(1.0, groups=["demo"], port=port, interface=LOOPBACK)
    assert [lookup.uris for lookup in found] == [(demo,)]
    assert found[0].groups == ("demo",) and found[0].locator() == demo
    everything = discover(WAIT, groups=None, port=port, interface=LOOPBACK, count=2)
    assert sorted(lookup.uri for lookup in everything) == sorted([demo, other])
    public = discover(WAIT, groups=[""], port=port, interface=LOOPBACK, count=1)
    assert [lookup.uri for lookup in public] == [other]


def test_a_lookup_service_served_without_discovery_is_not_found(served: Callable[..., str], port: int) -> None:
    served(["demo"], discovery=False)
    assert discover(1.0, groups=None, port=port, interface=LOOPBACK) == []


def request_and_answer(port: int, groups: tuple[str, ...] = ("demo",), heard: tuple[str, ...] = ()) -> Any:
    """Send a request to ``port`` on loopback; the announcement that answers it, or None within 2 s."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((LOOPBACK, 0))
        sock.settimeout(2.0)
        sock.sendto(Request(groups, sock.getsockname()[1], heard).encode(), (LOOPBACK, port))
        try:
            return parse(sock.recvfrom(65536)[0])
        except TimeoutError:
            return None


def test_hostile_packets_are_logged_rate_limited_and_dropped_and_the_announcer_answers_on(
        port: int, caplog: pytest.LogCaptureFixture) -> None:
    announcement = Announcement("lookup-1", (URI,), ("demo",), 0, 60.0)
    with Announcer(announcement, network=DiscoveryNetwork(port=port, interface=LOOPBACK)).start() as announcer:
        assert isinstance(request_and_answer(port), Announcement)
        hostile = [b"\xff" * 10, b"{", b"x" * 5000, b'{"v": 1, "kind": "request", "groups": [], "port": -1, '
                   b'"heard": []}', b'{"v": 99}', b"[" * 1000, b""]
        with caplog.at_level(logging.DEBUG, logger="lookup.announce"), \
                socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            for data in hostile:
                sock.sendto(data, (LOOPBACK, port))
            answer = request_and_answer(port)  # after them, on the same socket: it still answers
        assert isinstance(answer, Announcement) and answer.lookup_id == "lookup-1"
        assert announcer.dropped == len(hostile)
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "dropped" in r.getMessage()]
        assert len(warnings) == 1, [r.getMessage() for r in warnings]  # the rest at DEBUG: a flood fills no log
        # no answer to a request for other groups, or naming it as heard
        assert request_and_answer(port, groups=("other",)) is None
        assert request_and_answer(port, heard=("lookup-1",)) is None


def test_replies_to_one_source_are_rate_limited(clock: FakeClock) -> None:
    limiter = ReplyLimiter(per_source=1.0, burst=4.0, total=10.0, clock=clock)
    assert [limiter.allow("10.0.0.1") for _ in range(6)] == [True] * 4 + [False] * 2
    assert limiter.allow("10.0.0.2")  # another source has its own
    clock.advance(1.0)
    assert limiter.allow("10.0.0.1") and not limiter.allow("10.0.0.1")
    flood = [limiter.allow(f"10.1.0.{n}") for n in range(50)]
    assert flood.count(True) < 10  # and all together are capped too


def test_broadcast_when_asked(port: int) -> None:
    announcement = Announcement("lookup-b", (URI,), ("demo",), 0, 60.0)
    network = DiscoveryNetwork(port=port, interface=LOOPBACK, broadcast=True)
    with Announcer(announcement, network=network).start() as announcer:
        assert announcer.modes() == {LOOPBACK: "broadcast"}
        found = discover(WAIT, groups=["demo"], port=port, interface=LOOPBACK, broadcast=True, count=1)
        assert [lookup.lookup_id for lookup in found] == ["lookup-b"]


class _NoMulticast:
    """A socket whose multicast sends fail as on a host without a multicast route."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def sendto(self, data: bytes, address: tuple[str, int]) -> int:
        if address[0].startswith("224."):
            raise OSError(errno.ENETUNREACH, "Network is unreachable")
        return self.sock.sendto(data, address)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


def test_falls_back_to_broadcast_where_multicast_fails_or_the_interface_lacks_it(
        port: int, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    lo = Interface("lo", LOOPBACK, multicast=True, loopback=True)
    network = DiscoveryNetwork(port=port)
    listener = open_listener(port, network.announce_group, [lo])
    opened = Sender._open
    monkeypatch.setattr(Sender, "_open", lambda self, interface: _NoMulticast(opened(self, interface)))
    with caplog.at_level(logging.INFO, logger="lookup.disconet"):
        sender = Sender([lo], network)
        assert sender.modes() == {LOOPBACK: "multicast"}
        listener.settimeout(WAIT)
        for n in range(2):
            assert sender.send(b"hello %d" % n, network.announce_group) == 1
            assert listener.recvfrom(100)[0] == b"hello %d" % n  # broadcast, to 255.255.255.255 on lo
        assert sender.modes() == {LOOPBACK: "broadcast"}
    said = [r.getMessage() for r in caplog.records if "broadcast" in r.getMessage()]
    assert len(said) == 1 and "multicast failed" in said[0], said  # once
    sender.close()
    lacking = Sender([Interface("lo", LOOPBACK, multicast=False, loopback=True)], network)
    assert lacking.modes() == {LOOPBACK: "broadcast"}
    lacking.close()
    listener.close()


def test_the_table_discards_after_the_missed_intervals() -> None:
    table = DiscoveryTable(("demo",), missed=3)
    heard = Announcement("x", (URI,), ("demo",), 0, 2.0)
    assert table.heard(heard, 0.0) == [("discovered", DiscoveredLookup("x", (URI,), ("demo",)))]
    assert table.heard(heard.next(), 1.0) == []  # heard again: present until 1 + 3 * 2
    assert table.expire(6.99) == [] and table.next_expiry() == 7.0
    assert [kind for kind, _ in table.expire(7.0)] == ["discarded"]
    moved = Announcement("x", ("PYRO:lookup.LookupService@127.0.0.2:4160",), ("demo",), 0, 2.0)
    table.heard(heard, 8.0)
    assert [kind for kind, _ in table.heard(moved, 9.0)] == ["discarded", "discovered"]
    assert [kind for kind, _ in table.heard(Announcement("x", (URI,), ("other",)), 9.5)] == ["discarded"]


def test_lookup_discovery_follows_a_lookup_service_appearing_and_disappearing(port: int, clock: FakeClock) -> None:
    told: Recorder[tuple[str, str]] = Recorder()
    with LookupDiscovery(["demo"], port=port, interface=LOOPBACK, clock=clock, request_rounds=0,
                         listener=lambda kind, lookup: told((kind, lookup.lookup_id))) as discovery, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        def announce(lookup_id: str, groups: tuple[str, ...] = ("demo",)) -> None:
            sock.sendto(Announcement(lookup_id, (URI,), groups, 0, 1.0).encode(), (LOOPBACK, port))

        announce("other-group", ("other",))
        announce("a")
        told.wait_for(1, WAIT)
        assert told.items == [("discovered", "a")]  # not the other group's
        clock.wait_for_sleeper(3.0)  # the timer, asleep until a's 3 intervals are up
        clock.advance(2.9)
        assert [lookup.lookup_id for lookup in discovery.discovered()] == ["a"]
        clock.advance(0.1)
        told.wait_for(2, WAIT)
        assert told.items[1] == ("discarded", "a") and discovery.discovered() == []
        announce("a")  # back
        told.wait_for(3, WAIT)
        assert told.items[2] == ("discovered", "a")
        later: Recorder[tuple[str, str]] = Recorder()
        discovery.add_listener(lambda kind, lookup: later((kind, lookup.lookup_id)))
        assert later.items == [("discovered", "a")]  # a listener added later hears of those known
        discovery.discard("a")  # a call to it failed
        assert told.wait_for(4, WAIT)[3] == ("discarded", "a") and later.wait_for(2, WAIT)[1] == ("discarded", "a")


def test_join_manager_and_lookup_cache_follow_discovery(served: Callable[..., str], port: int) -> None:
    uri = served(["demo"])
    wanted = ServiceTemplate(types=[Echo])
    with ServingDaemon() as daemon:
        service = Echo()
        daemon.register(service)
        with LookupDiscovery(["demo"], port=port, interface=LOOPBACK) as service_discovery, \
                JoinManager(service, discovery=service_discovery, lease_duration=5) as join, \
                LookupDiscovery(["demo"], port=port, interface=LOOPBACK) as client_discovery, \
                LookupCache(template=wanted, discovery=client_discovery) as cache:
            assert join.wait_registered(timeout=WAIT), join.last_error
            assert join.lookup_services() == [uri]
            assert cache.wait_until(lambda items: len(items) == 1, WAIT), cache.last_error
            assert cache.lookup_services() == [uri]
            # discarded: let go of; discovered again at the next announcement
            [found] = client_discovery.discovered()
            client_discovery.discard(found)
            assert cache.wait_until(lambda items: not items, WAIT)
            assert cache.wait_until(lambda items: len(items) == 1, WAIT)
            service_discovery.discard(found)
            assert join.wait_times_registered(2, WAIT)  # under the same id, after the next announcement
            assert join.item.service_id == cache.items()[0].service_id


def test_groups_and_discovery_exclude_each_other_and_lookups_may_be_empty_with_discovery(port: int) -> None:
    with LookupDiscovery(["demo"], port=port, interface=LOOPBACK) as discovery:
        with pytest.raises(TypeError, match="not both"):
            LookupCache(template=ServiceTemplate(), groups=["demo"], discovery=discovery)
        with pytest.raises(TypeError, match="not both"):
            JoinManager("PYRO:x@127.0.0.1:1", types=["a.B"], groups=["demo"], discovery=discovery)
        with LookupCache(template=ServiceTemplate(), discovery=discovery) as cache:
            assert cache.lookup_services() == [] and not cache.wait_ready(0)
    with pytest.raises(ValueError, match="at least one lookup service"):
        LookupCache([], ServiceTemplate())
