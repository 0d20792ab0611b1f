"""Lock and Semaphore (landlord/recipe/lock.py over claim.py): holding, waiting for the pushed grant,
turning invalid before the landlord could give the name away, hearing a revocation, and the same served."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import landlord
from landlord import FakeClock, Landlord, LeaseDeniedError, LeaseRenewalManager, Lock, Semaphore
from landlord.recipe.claim import MARGIN, Claim
from landlord.testing import Recorder, ServingDaemon


@pytest.fixture
def grantor(clock: FakeClock, close_later: list) -> Landlord:
    made = Landlord(clock=clock, reaper="lazy")
    close_later.append(made)
    return made


@pytest.fixture
def stalled(close_later: list) -> LeaseRenewalManager:
    """A renewal manager on a clock that never moves: it never renews (a holder cut off from its landlord)."""
    renewals = LeaseRenewalManager(clock=FakeClock())
    close_later.append(renewals)
    return renewals


def in_thread(call: Any) -> tuple[threading.Thread, list[Any]]:
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(call()), daemon=True)
    thread.start()
    return thread, result


def test_a_lock_holds_with_a_token_and_a_second_cannot_take_it(grantor: Landlord, close_later: list) -> None:
    first, second = Lock(grantor, "orders"), Lock(grantor, "orders")
    close_later.extend([first, second])
    assert first.acquire() and first.valid and first.locked() and first.token == 1
    assert not second.acquire(blocking=False) and not second.valid and second.token is None
    first.release()
    assert not first.valid and first.token is None
    assert second.acquire(blocking=False) and second.token == 2


def test_a_waiter_holds_as_soon_as_the_holder_releases(grantor: Landlord, close_later: list) -> None:
    first, second = Lock(grantor, "orders"), Lock(grantor, "orders")
    close_later.extend([first, second])
    first.acquire()
    thread, result = in_thread(second.acquire)
    waiting = lambda: [len(view.waiters) for view in grantor.names()] == [1]  # noqa: E731
    deadline = time.monotonic() + 10
    while not waiting() and time.monotonic() < deadline:  # the waiter's request reached the landlord
        threading.Event().wait(0.01)
    first.release()
    thread.join(10)
    assert result == [True] and second.valid and second.token == 2


def test_with_acquires_and_releases(grantor: Landlord, close_later: list) -> None:
    lock = Lock(grantor, "orders")
    close_later.append(lock)
    with lock:
        assert lock.valid and grantor.name_holders("orders") == [(1, None)]
    assert not lock.valid and grantor.name_holders("orders") == []
    with pytest.raises(RuntimeError, match="already holds"):
        with lock:
            lock.acquire()


def test_a_wait_with_a_timeout_gives_up_and_leaves_nothing_behind(grantor: Landlord, clock: FakeClock,
                                                                  close_later: list) -> None:
    first, second = Lock(grantor, "orders"), Lock(grantor, "orders")
    close_later.extend([first, second])
    first.acquire()
    thread, result = in_thread(lambda: second.acquire(timeout=5))
    clock.wait_for_sleeper(clock.monotonic() + 5)
    clock.advance(5)
    thread.join(10)
    assert result == [False] and not second.valid
    first.release()
    assert grantor.name_holders("orders") == [] and len(grantor) == 0  # the waiter's lease went too


def test_a_holder_cut_off_turns_invalid_at_its_deadline_less_the_margin_before_the_landlord_frees_it(
        grantor: Landlord, clock: FakeClock, stalled: LeaseRenewalManager, close_later: list) -> None:
    lost: Recorder[str] = Recorder()
    lock = Lock(grantor, "orders", duration=10, renewals=stalled)
    other = Lock(grantor, "orders")
    close_later.extend([lock, other])
    lock.on_lost(lost)
    assert lock.acquire()
    invalid_at = clock.monotonic() + 10 - MARGIN * 10
    clock.wait_for_sleeper(invalid_at)
    clock.advance(invalid_at - clock.monotonic() - 0.01)
    assert lock.valid
    clock.advance(0.01)
    assert "deadline" in lost.wait_for(1)[0]
    assert not lock.valid and lock.token is None
    # the landlord still holds the name for the holder: nobody else could have it yet
    assert not other.acquire(blocking=False) or grantor.name_holders("orders")[0][0] == 2


def test_a_revocation_is_heard_at_once(grantor: Landlord, close_later: list) -> None:
    lost: Recorder[str] = Recorder()
    lock = Lock(grantor, "orders")
    close_later.append(lock)
    lock.on_lost(lost)
    lock.acquire()
    assert lock.lease is not None
    grantor.revoke(lock.lease.cookie, "evicted by the operator")
    assert "evicted by the operator" in lost.wait_for(1)[0]
    assert not lock.valid


def test_a_semaphore_has_n_places(grantor: Landlord, close_later: list) -> None:
    places = [Semaphore(grantor, "pool", 2) for _ in range(3)]
    close_later.extend(places)
    assert [place.acquire(blocking=False) for place in places] == [True, True, False]
    places[0].release()
    assert places[2].acquire(blocking=False) and places[2].token == 3
    with pytest.raises(ValueError, match="limit"):
        Lock(grantor, "pool").acquire(blocking=False)


@pytest.mark.parametrize("options, error", [
    ({"name": ""}, TypeError),
    ({"limit": 0}, ValueError),
    ({"duration": 0}, ValueError),
    ({"duration": float("inf")}, ValueError),
    ({"margin": 20}, ValueError),
    ({"landlord": 42}, TypeError),
    ({"landlord": "not a uri"}, ValueError),
])
def test_bad_settings_are_refused_before_anything_is_asked(grantor: Landlord, options: dict[str, Any],
                                                           error: type[Exception]) -> None:
    settings = {"landlord": grantor, "name": "orders", "duration": 10.0} | options
    with pytest.raises(error):
        Claim(settings.pop("landlord"), settings.pop("name"), **settings)
    assert len(grantor) == 0


def test_served_locks_hand_over_through_the_pushed_grant_and_stay_valid_through_renewals(
        close_later: list) -> None:
    served = Landlord()
    close_later.append(served)
    with ServingDaemon() as daemon:
        uri = str(daemon.register(served))
        first, second = Lock(uri, "orders", duration=1.0), Lock(uri, "orders", duration=1.0)
        close_later.extend([first, second])
        assert first.acquire() and first.token == 1
        thread, result = in_thread(lambda: second.acquire(timeout=30))
        time.sleep(2.5)  # the point: two and a half terms pass, and renewals keep the holder valid
        assert first.valid and first.token == 1 and not second.valid
        first.release()
        thread.join(30)
        assert result == [True] and second.token == 2 and second.valid
        second.release()
        assert served.name_holders("orders") == [] and len(served) == 0


def test_a_refused_request_raises_the_landlords_reason(grantor: Landlord, close_later: list) -> None:
    lock = Lock(grantor, "x" * 300)
    close_later.append(lock)
    with pytest.raises(ValueError, match="printable"):
        lock.acquire()
    assert not lock.valid and lock.lease is None
    with pytest.raises(ValueError, match="printable"):
        with Lock(grantor, "x" * 300):
            pass
    assert len(grantor) == 0


def test_the_facade_loads_the_recipes_on_first_use() -> None:
    assert landlord.Lock is Lock and landlord.Semaphore is Semaphore


def test_a_release_from_another_thread_ends_an_acquire_that_waits(grantor: Landlord, close_later: list) -> None:
    holder, waiter = Lock(grantor, "orders"), Lock(grantor, "orders")
    close_later.extend([holder, waiter])
    holder.acquire()
    thread, result = in_thread(waiter.acquire)
    deadline = time.monotonic() + 10
    while [len(view.waiters) for view in grantor.names()] != [1] and time.monotonic() < deadline:
        threading.Event().wait(0.01)  # until the waiter's request is queued at the landlord
    waiter.release()
    thread.join(10)
    assert result == [False] and not waiter.valid
    assert [len(view.waiters) for view in grantor.names()] == [0]  # it left the queue
    assert waiter.acquire(blocking=False) is False and holder.valid  # and it may ask again


def test_a_revocation_heard_as_the_grant_arrives_fails_the_acquire_and_frees_the_claim(
        grantor: Landlord, close_later: list) -> None:
    lock = Lock(grantor, "orders")
    close_later.append(lock)
    lock._reserve(True, None)
    asked = lock._request(None)
    assert asked is not None
    lease, token, expected = asked
    grantor.revoke(lease.cookie, "evicted")
    expected.wait(float("inf"))  # the revocation is heard before the holding starts
    with pytest.raises(LeaseDeniedError, match="lost as it was granted: evicted"):
        lock._hold(lease, token or 0)
    assert not lock.valid and lock.acquire(blocking=False) and lock.token == 2
