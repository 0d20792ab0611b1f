"""EventMailer: in order per listener, never blocking the poster, giving up on the unreachable."""

from __future__ import annotations

import contextlib
import logging
import os
import pathlib
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import Pyro5.api
import Pyro5.errors
import pytest
from conftest import ChildProcess, ServingDaemon, free_port, sockets_of

import lookup.service.mailer as mailer_module
from landlord import FOREVER, FakeClock, LeaseRenewalEvent, LeaseRenewalManager, UnknownLeaseError
from landlord.testing import WaitFailed
from lookup import ServiceItem, ServiceTemplate, locate
from lookup.events import ALL_TRANSITIONS, TRANSITION_NOMATCH_MATCH, EventRegistration, ServiceEvent
from lookup.service.mailer import EventMailer
from lookup.service.outbox import MailLimits

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "hostile"))
from targets import serving, watched  # noqa: E402 (the hostile suite's servers and canary)


def event(sequence_number: int, event_id: int = 1) -> ServiceEvent:
    return ServiceEvent(event_id, sequence_number, None, "service-1", TRANSITION_NOMATCH_MATCH, None)


class Listener:
    """Records the sequence numbers it is notified of; can be made to block or fail."""

    def __init__(self, failures: list[BaseException] | None = None) -> None:
        self.received: list[int] = []
        self.failures = list(failures or [])
        self.release = threading.Event()
        self.release.set()
        self.entered = threading.Event()
        self._condition = threading.Condition()

    def notify(self, event: ServiceEvent) -> None:
        self.entered.set()
        assert self.release.wait(10)
        if self.failures:
            raise self.failures.pop(0)
        with self._condition:
            self.received.append(event.sequence_number)
            self._condition.notify_all()

    def wait_for(self, count: int) -> None:
        with self._condition:
            assert self._condition.wait_for(lambda: len(self.received) >= count, 10), self.received


@pytest.fixture
def mailer_factory() -> Iterator[Any]:
    made: list[EventMailer] = []

    def make(**kwargs: Any) -> EventMailer:
        made.append(EventMailer(**kwargs))
        return made[-1]

    yield make
    for mailer in made:
        mailer.close()


def test_events_to_one_listener_arrive_in_order(mailer_factory: Any) -> None:
    mailer = mailer_factory(workers=4, limits=MailLimits(queue=500))
    listener = Listener()
    for number in range(1, 501):
        mailer.post("reg", listener, event(number))
    assert mailer.wait_idle(10)
    assert listener.received == list(range(1, 501))


def test_a_blocked_listener_holds_up_neither_the_poster_nor_other_listeners(mailer_factory: Any) -> None:
    mailer = mailer_factory(workers=2)
    slow, fast = Listener(), Listener()
    slow.release.clear()
    mailer.post("slow", slow, event(1))
    assert slow.entered.wait(10)
    for number in range(1, 4):
        mailer.post("slow", slow, event(number + 1))  # returns at once though the listener is stuck
        mailer.post("fast", fast, event(number))
    fast.wait_for(3)
    assert fast.received == [1, 2, 3] and slow.received == []
    slow.release.set()
    slow.wait_for(4)
    assert slow.received == [1, 2, 3, 4]


def test_an_unreachable_listener_is_retried_then_given_up_once(mailer_factory: Any) -> None:
    clock = FakeClock()
    given_up: list = []
    done = threading.Event()
    mailer = mailer_factory(retry_delays=(1.0, 5.0), clock=clock,
                            on_undeliverable=lambda key: (given_up.append(key), done.set()))
    gone = Listener(failures=[Pyro5.errors.CommunicationError("refused")] * 10)
    mailer.post("gone", gone, event(1))
    mailer.post("gone", gone, event(2))
    clock.wait_for_sleeper(1.0)
    clock.advance(1.0)
    clock.wait_for_sleeper(6.0)
    assert given_up == []
    clock.advance(5.0)
    assert done.wait(10)
    assert mailer.wait_idle(10)
    assert given_up == ["gone"] and gone.received == [] and mailer.pending() == 0


def test_a_listener_reachable_again_within_the_retries_loses_nothing(mailer_factory: Any) -> None:
    clock = FakeClock()
    given_up: list = []
    mailer = mailer_factory(retry_delays=(1.0,), clock=clock, on_undeliverable=given_up.append)
    flaky = Listener(failures=[Pyro5.errors.ConnectionClosedError("reset")])
    mailer.post("flaky", flaky, event(1))
    mailer.post("flaky", flaky, event(2))
    clock.wait_for_sleeper(1.0)
    clock.advance(1.0)
    flaky.wait_for(2)
    assert flaky.received == [1, 2] and given_up == []


def test_an_exception_in_the_listener_is_logged_and_delivery_goes_on(
        mailer_factory: Any, caplog: pytest.LogCaptureFixture) -> None:
    mailer = mailer_factory()
    buggy = Listener(failures=[RuntimeError("listener bug")])
    with caplog.at_level(logging.WARNING, logger="lookup.events"):
        for number in (1, 2, 3):
            mailer.post("buggy", buggy, event(number))
        buggy.wait_for(2)
    assert buggy.received == [2, 3] and "listener bug" in caplog.text


def test_forget_drops_pending_mail(mailer_factory: Any) -> None:
    mailer = mailer_factory(workers=1)
    blocker, forgotten = Listener(), Listener()
    blocker.release.clear()
    mailer.post("blocker", blocker, event(1))
    assert blocker.entered.wait(10)
    mailer.post("forgotten", forgotten, event(1))  # waits for the only worker
    mailer.forget("forgotten")
    blocker.release.set()
    assert mailer.wait_idle(10)
    assert forgotten.received == [] and blocker.received == [1]


def test_close_stops_the_threads_and_later_posts_are_ignored() -> None:
    mailer = EventMailer(workers=3)
    listener = Listener()
    mailer.post("early", listener, event(1))
    listener.wait_for(1)
    assert any(t.name.startswith("EventMailer") for t in threading.enumerate())
    mailer.close()
    assert not any(t.name.startswith("EventMailer") and t.is_alive() for t in threading.enumerate())
    mailer.post("late", listener, event(2))
    assert mailer.pending() == 0 and listener.received == [1]


@pytest.mark.parametrize("kwargs", [dict(workers=0), dict(workers=True), dict(workers=2.5),
                                    dict(retry_delays=(1.0, -1.0))])
def test_bad_settings(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        EventMailer(**kwargs)


def test_transition_constants() -> None:
    from lookup.events import TRANSITION_MATCH_MATCH, TRANSITION_MATCH_NOMATCH
    assert (TRANSITION_MATCH_NOMATCH, TRANSITION_NOMATCH_MATCH, TRANSITION_MATCH_MATCH) == (1, 2, 4)
    assert ALL_TRANSITIONS == 7


# -- the values --------------------------------------------------------------------

def test_an_event_is_read_only_equal_only_to_itself_and_shows_no_handback() -> None:
    made = ServiceEvent(7, 3, {"secret": "x" * 50}, "service-1", TRANSITION_NOMATCH_MATCH, None)
    assert (made.event_id, made.sequence_number, made.handback, made.service_id, made.transition, made.item) == (
        7, 3, {"secret": "x" * 50}, "service-1", TRANSITION_NOMATCH_MATCH, None)
    by_name = ServiceEvent(event_id=7, sequence_number=3, handback=None, service_id="s", transition=2, item=None)
    assert (by_name.event_id, by_name.service_id, by_name.transition) == (7, "s", 2)
    with pytest.raises(AttributeError):
        made.sequence_number = 4  # type: ignore[misc]
    twin = ServiceEvent(7, 3, {"secret": "x" * 50}, "service-1", TRANSITION_NOMATCH_MATCH, None)
    assert made == made and made != twin and len({made, twin}) == 2  # by identity, as delivered
    assert repr(made) == "ServiceEvent(event_id=7, sequence_number=3, service_id='service-1', transition=2)"


def test_an_event_registration_is_read_only_and_equal_only_to_itself() -> None:
    made = EventRegistration(5, "a lease", 9)
    assert (made.event_id, made.lease, made.sequence_number) == (5, "a lease", 9)
    with pytest.raises(AttributeError):
        made.lease = "another"  # type: ignore[misc]
    assert made != EventRegistration(5, "a lease", 9) and hash(made) != hash(EventRegistration(5, "a lease", 9))
    assert repr(made) == "EventRegistration(event_id=5, lease='a lease')"


# -- hostile: 300 dead listeners on a lookup service in a process of its own ---------------------

@Pyro5.api.expose
class Stalled:
    """A listener that takes the call and never returns (until released)."""

    def __init__(self) -> None:
        self.released = threading.Event()

    def notify(self, event: ServiceEvent) -> None:
        self.released.wait(60)


class DeadListeners:
    """Listeners that take event deliveries and never answer, ``count`` URIs in all, in four kinds:
    a socket that accepts and then says nothing, one that never accepts (its backlog full),
    a closed port (connections refused), and a Pyro5 object whose ``notify`` never returns
    (all registrations of that kind name the one URI)."""

    def __init__(self, count: int) -> None:
        self._silent = socket.create_server(("127.0.0.1", 0), backlog=count)
        self._unaccepted = socket.create_server(("127.0.0.1", 0), backlog=0)
        self._held: list[socket.socket] = []
        self._accepting = threading.Thread(target=self._accept_and_hold, name="silent-listener", daemon=True)
        self._accepting.start()
        self._stalled = Stalled()
        self._daemon = ServingDaemon()
        stalled = self._daemon.register(self._stalled, "stalled")
        ports = [self._silent.getsockname()[1], self._unaccepted.getsockname()[1], free_port()]
        self.uris = [stalled if number % 4 == 3 else f"PYRO:dead.{number}@127.0.0.1:{ports[number % 4]}"
                     for number in range(count)]

    def _accept_and_hold(self) -> None:
        while True:
            try:
                connection, _ = self._silent.accept()
            except OSError:  # closed: the test is over
                return
            self._held.append(connection)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._silent.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread (closing alone does not)
        self._silent.close()
        self._unaccepted.close()
        self._accepting.join(10)
        for connection in self._held:
            connection.close()
        self._stalled.released.set()
        self._daemon.close()


@Pyro5.api.expose
class Arrivals:
    """A live listener: when each event arrived, by service id."""

    def __init__(self) -> None:
        self._arrived: dict[str, float] = {}
        self._condition = threading.Condition()

    def notify(self, event: ServiceEvent) -> None:
        with self._condition:
            self._arrived.setdefault(event.service_id, time.monotonic())
            self._condition.notify_all()

    def wait_for(self, service_id: str, timeout: float) -> float | None:
        """When the first event about ``service_id`` arrived, waiting up to ``timeout`` seconds for it."""
        with self._condition:
            self._condition.wait_for(lambda: service_id in self._arrived, timeout)
            return self._arrived.get(service_id)


PROMPT = 1.0  # seconds: the most a live listener's event may take, whatever the dead ones
GIVING_UP = "giving up on the listener of registration"


def threads_of(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts the lookup service's threads in /proc")
def test_300_dead_listeners_hold_up_neither_a_live_listener_nor_a_renewal(
        request: pytest.FixtureRequest, daemon: ServingDaemon) -> None:
    # 1 s attempts: the dead are given up on within about 7 s (4 attempts, 2.6 s of pauses); the hostile
    # suite's canary renews a 2 s registration throughout, and the service's memory is checked
    with serving("lookup", request, "--event-timeout", "1") as target, watched(target):
        _dead_listeners(target.process, locate("127.0.0.1", target.port), daemon)


def _dead_listeners(server: ChildProcess, registrar: Any, daemon: ServingDaemon) -> None:
    """300 dead listeners and a live one registered at ``registrar`` (served by ``server``): each event
    reaches the live one within PROMPT while the dead are given up on, a renewal manager's lease of 1 s
    is never lost, and the service takes no thread per listener."""
    threads_before = threads_of(server.pid)
    lost: list[LeaseRenewalEvent] = []
    dead = DeadListeners(300)
    live = Arrivals()
    try:
        with LeaseRenewalManager() as renewals:
            canary = registrar.register(ServiceItem(None, "PYRO:canary@127.0.0.1:1", ["hostile.Canary"], []), 1.0)
            renewals.renew_for(canary.lease, FOREVER, lost.append)
            watches = [registrar.notify(ServiceTemplate(), ALL_TRANSITIONS, uri, None, 60) for uri in dead.uris]
            watch = registrar.notify(ServiceTemplate(), ALL_TRANSITIONS, daemon.register(live), None, 60)
            took, threads, sockets = [], [], []
            while len(server.matches(GIVING_UP)) < 300 or len(took) < 20:
                assert len(took) < 400, f"only {len(server.matches(GIVING_UP))} dead listeners given up on"
                sent = time.monotonic()
                probe = registrar.register(ServiceItem(None, f"PYRO:probe@127.0.0.1:{len(took) + 1}",
                                                       ["hostile.Probe"], []), 60)  # an event to all 301
                arrived = live.wait_for(probe.service_id, PROMPT)
                assert arrived is not None, f"event {len(took)} took over {PROMPT} s; those before took {took}"
                took.append(round(arrived - sent, 3))
                threads.append(threads_of(server.pid))
                sockets.append(sockets_of(server.pid))
                with contextlib.suppress(WaitFailed):  # paced by the dead being given up on, not a flood
                    server.wait_count(GIVING_UP, len(server.matches(GIVING_UP)) + 1, 0.1)
            print(f"{len(took)} events to a live listener took {min(took)}-{max(took)} s "
                  f"(median {sorted(took)[len(took) // 2]} s); the lookup service's threads "
                  f"{threads_before} before, {min(threads)}-{max(threads)} during; "
                  f"sockets {min(sockets)}-{max(sockets)}")
            assert lost == [] and registrar.lookup(ServiceTemplate(service_id=canary.service_id)) is not None
            assert max(threads) <= threads_before + 2  # the mailer's pump and asyncio loop: no thread per listener
            for gone in watches[:4]:  # one of each kind: their registrations ended
                with pytest.raises(UnknownLeaseError):
                    gone.lease.renew(10)
            assert watch.lease.renew(10) > 0
    finally:
        dead.close()


def test_on_worker_threads_alone_too_dead_listeners_leave_a_live_one_a_thread(
        daemon: ServingDaemon, monkeypatch: pytest.MonkeyPatch) -> None:
    # as under TLS, where calls cannot go over streams: 4 threads, 3 of them for listeners not known live
    monkeypatch.setattr(mailer_module, "_streams_usable", lambda: False)
    mailer = EventMailer(workers=4, limits=MailLimits(attempt_timeout=2.0, retry_delays=(0.1, 0.1)))
    dead = DeadListeners(20)
    live = Arrivals()
    live_uri = daemon.register(live)
    try:
        mailer.post("live", live_uri, ServiceEvent(1, 1, None, "first", TRANSITION_NOMATCH_MATCH, None))
        assert live.wait_for("first", 10) is not None  # now known to be live
        for number in range(3):
            for key, uri in enumerate(dead.uris):
                mailer.post(key, uri, event(number + 1, event_id=key))
            sent = time.monotonic()
            mailer.post("live", live_uri, ServiceEvent(1, number + 2, None, f"s{number}", TRANSITION_NOMATCH_MATCH,
                                                       None))
            arrived = live.wait_for(f"s{number}", PROMPT)
            assert arrived is not None and arrived - sent < PROMPT, f"event {number} took over {PROMPT} s"
    finally:
        mailer.close()
        dead.close()
