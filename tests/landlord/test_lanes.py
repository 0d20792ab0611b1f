from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest

from landlord.transport.lanes import Lanes


@pytest.fixture
def lanes() -> Iterator[Lanes]:
    pool = Lanes(workers=3)
    yield pool
    pool.close()


def test_tasks_of_a_lane_run_in_order_one_at_a_time(lanes: Lanes) -> None:
    done: list[int] = []
    running = [0]
    overlap = []

    def task(number: int) -> None:
        running[0] += 1
        overlap.append(running[0])
        done.append(number)
        running[0] -= 1

    for number in range(300):
        assert lanes.submit("one", lambda n=number: task(n))
    assert lanes.wait_idle(10)
    assert done == list(range(300)) and max(overlap) == 1


def test_a_blocked_lane_holds_up_no_other_lane(lanes: Lanes) -> None:
    release, started, other = threading.Event(), threading.Event(), threading.Event()
    lanes.submit("stuck", lambda: (started.set(), release.wait(10)))
    lanes.submit("stuck", other.set)  # behind the stuck one
    assert started.wait(10)
    reached = threading.Event()
    lanes.submit("free", reached.set)
    assert reached.wait(10) and not other.is_set()
    release.set()
    assert other.wait(10)


def test_discard_drops_tasks_not_started(lanes: Lanes) -> None:
    release, started = threading.Event(), threading.Event()
    ran: list[str] = []
    lanes.submit("lane", lambda: (started.set(), release.wait(10)))
    assert started.wait(10)
    lanes.submit("lane", lambda: ran.append("dropped"))
    lanes.submit("lane", lambda: ran.append("dropped too"))
    assert lanes.pending() == 3
    assert lanes.discard("lane") == 2
    release.set()
    assert lanes.wait_idle(10) and ran == [] and lanes.pending() == 0


def test_a_failing_task_is_logged_and_its_lane_goes_on(lanes: Lanes, caplog: pytest.LogCaptureFixture) -> None:
    after = threading.Event()
    with caplog.at_level(logging.ERROR, logger="landlord.lanes"):
        lanes.submit("lane", lambda: 1 / 0)
        lanes.submit("lane", after.set)
        assert after.wait(10)
    assert "ZeroDivisionError" in caplog.text


def test_close_waits_for_running_tasks_and_refuses_new_ones() -> None:
    pool = Lanes(workers=2)
    release, started, finished = threading.Event(), threading.Event(), threading.Event()
    pool.submit("lane", lambda: (started.set(), release.wait(10), finished.set()))
    assert started.wait(10)
    closer = threading.Thread(target=pool.close)
    closer.start()
    release.set()
    closer.join(10)
    assert finished.is_set() and not closer.is_alive()
    assert pool.submit("lane", lambda: None) is False


@pytest.mark.parametrize("workers", [0, -1, True, 1.5])
def test_bad_worker_counts(workers: object) -> None:
    with pytest.raises(ValueError):
        Lanes(workers=workers)  # type: ignore[arg-type]
