"""PeerThread: one lookup service kept at on a thread of its own, retried with backoff, on a fake clock."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterator

import Pyro5.errors
import pytest
from served_lookups import LogWatch

from landlord import Backoff, FakeClock, PeerErrors
from lookup.client.peer import PeerThread, check_retry, lookup_keys
from lookup.discovery.unicast import LookupGroup

URI = "PYRO:lookup@127.0.0.1:1"
LOGGER = "test_peer.owner"


class Owner:
    """A peer's owner: attempts fail until told to succeed; each is counted."""

    def __init__(self, clock: FakeClock) -> None:
        self.condition = threading.Condition()
        self.errors = PeerErrors()
        self.attempts = 0
        self.succeed = False
        self.done = False  # succeeded: nothing more to do
        # the delays are their ceilings (no jitter drawn): 1, 2, 4, 4, ...
        self.peer = PeerThread(URI, condition=self.condition, clock=clock, backoff=Backoff(1, 4, random=lambda: 0.0),
                               errors=self.errors, logger=logging.getLogger(LOGGER), name="Owner")

    def plan(self, now: float) -> Callable[[], object] | float:
        if self.done:
            return math.inf
        return self.attempt if now >= self.peer.due else self.peer.due

    def attempt(self) -> None:
        with self.condition:
            self.attempts += 1
            succeed = self.succeed
        if not succeed:
            error = Pyro5.errors.CommunicationError("connection refused")
            with self.condition:
                self.peer.retry_later(error)
            self.peer.failed(error, "reach")
            return
        with self.condition:
            self.done = True
            self.peer.reached()
            self.condition.notify_all()
        self.peer.recovered()

    def wait(self, predicate: Callable[[], bool]) -> bool:
        with self.condition:
            return self.condition.wait_for(predicate, 10)


@pytest.fixture
def owner(clock: FakeClock) -> Iterator[Owner]:
    owner = Owner(clock)
    yield owner
    with owner.condition:
        owner.peer.stop()
        owner.condition.notify_all()
    owner.peer.join()


def test_a_failing_peer_is_retried_at_growing_delays_and_its_outage_logged_once(owner: Owner,
                                                                                clock: FakeClock) -> None:
    with LogWatch(LOGGER) as watch:
        owner.peer.start(owner.plan, "reaching")
        for failures, due in ((1, 1.0), (2, 3.0), (3, 7.0), (4, 11.0)):  # delays 1, 2, 4, then capped at 4
            clock.wait_for_sleeper(due)
            assert owner.attempts == failures
            clock.advance(due - clock.monotonic())
        clock.wait_for_sleeper(15.0)
        with owner.condition:
            assert isinstance(owner.errors.latest, Pyro5.errors.CommunicationError)
            assert set(owner.errors.by_peer()) == {URI}
            owner.succeed = True
        clock.advance(4)
        assert owner.wait(lambda: owner.done)
        assert watch.wait_count(logging.INFO, f"reached {URI} again after 5 failed attempts", 1)
    assert len(watch.matching(logging.WARNING, URI)) == 1  # once for the outage
    assert len(watch.matching(logging.DEBUG, URI)) == 4  # the other failures, quietly
    with owner.condition:
        assert owner.errors.latest is None


def test_a_loss_is_retried_at_once_and_said_at_info_unless_the_peer_was_unreachable(owner: Owner,
                                                                                    clock: FakeClock) -> None:
    owner.succeed = True
    owner.peer.start(owner.plan, "reaching")
    assert owner.wait(lambda: owner.done and owner.attempts == 1)
    clock.advance(100)
    with LogWatch(LOGGER) as watch:
        with owner.condition:
            owner.done = False
            owner.peer.retry_now(KeyError("forgotten"))
            assert owner.peer.due == 100 and isinstance(owner.errors.latest, KeyError)
        owner.peer.lost(KeyError("forgotten"), "the registration with", "registering")
        assert owner.wait(lambda: owner.done and owner.attempts == 2)  # at once: no delay
        assert watch.matching(logging.INFO, f"lost the registration with {URI} ('forgotten'); registering again")
        owner.peer.lost(Pyro5.errors.CommunicationError("timed out"), "the registration with", "registering")
        assert watch.matching(logging.WARNING, f"could not renew the registration with {URI}")


def test_a_bug_in_a_step_is_logged_and_ends_the_thread(owner: Owner) -> None:
    def broken(now: float) -> Callable[[], object] | float:
        return lambda: 1 / 0

    with LogWatch(LOGGER) as watch:
        owner.peer.start(broken, "reaching")
        owner.peer.join()  # ended by the bug, not by stop()
    [record] = [r for r in watch.records if r.levelno == logging.ERROR]
    assert record.getMessage() == f"Owner stopped reaching {URI}" and record.exc_info is not None


def test_stop_ends_a_waiting_thread(owner: Owner, clock: FakeClock) -> None:
    owner.peer.start(owner.plan, "reaching")
    clock.wait_for_sleeper(1.0)
    with owner.condition:
        assert not owner.peer.stopped
        owner.peer.stop()
        owner.condition.notify_all()
    owner.peer.join()
    assert owner.attempts == 1 and owner.peer.stopped


def test_check_retry() -> None:
    assert check_retry(0.5, 30) == (0.5, 30.0)
    for initial, maximum in ((5, 1), (0, 1), (1, math.inf), (-1, 1), ("1", 2), (True, 2)):
        with pytest.raises(ValueError):
            check_retry(initial, maximum)


def test_lookup_keys_takes_one_lookup_service_or_several_each_once() -> None:
    first, second = "PYRO:lookup@127.0.0.1:4160", "PYRO:lookup@127.0.0.1:4161"
    assert lookup_keys(first) == [first]  # one, not its characters
    assert lookup_keys([first, second, first]) == [first, second]
    assert lookup_keys(LookupGroup([first, second])) == [f"{first},{second}"]
    assert lookup_keys([], allow_none=True) == []
    with pytest.raises(ValueError, match="at least one"):
        lookup_keys([])
    with pytest.raises(TypeError, match="a list of them, got int"):
        lookup_keys(4160)
    with pytest.raises(TypeError, match="a lookup service is a proxy or URI"):
        lookup_keys([first, "not a uri"])
