"""EventMailer: in order per listener, never blocking the poster, giving up on the unreachable."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import Pyro5.errors
import pytest

from landlord import FakeClock
from lookup.events import ALL_TRANSITIONS, TRANSITION_NOMATCH_MATCH, EventMailer, EventRegistration, ServiceEvent


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
    mailer = mailer_factory(workers=4)
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


def test_close_stops_the_workers_and_later_posts_are_ignored() -> None:
    mailer = EventMailer(workers=3)
    mailer.close()
    assert not any(t.name.startswith("EventMailer") and t.is_alive() for t in mailer._lanes._threads)
    mailer.post("late", Listener(), event(1))
    assert mailer.pending() == 0


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
