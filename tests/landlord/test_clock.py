from __future__ import annotations

import threading
import time

import pytest

from landlord import SYSTEM_CLOCK, FakeClock


def test_system_clock_reads_the_real_clocks() -> None:
    assert abs(SYSTEM_CLOCK.time() - time.time()) < 1
    assert abs(SYSTEM_CLOCK.monotonic() - time.monotonic()) < 1


def test_system_clock_wait_returns_at_a_past_deadline() -> None:
    condition = threading.Condition()
    with condition:
        started = time.monotonic()
        SYSTEM_CLOCK.wait(condition, time.monotonic() - 1)
    assert time.monotonic() - started < 0.5


def test_fake_clock_moves_only_when_advanced() -> None:
    clock = FakeClock(10.0, wall_offset=1000.0)
    assert clock.monotonic() == 10.0 and clock.time() == 1010.0
    clock.advance(2.5)
    assert clock.monotonic() == 12.5 and clock.time() == 1012.5


def test_fake_clock_never_goes_back() -> None:
    clock = FakeClock()
    with pytest.raises(ValueError):
        clock.advance(-1)
    with pytest.raises(ValueError):
        clock.advance(float("nan"))
    assert clock.monotonic() == 0.0


def test_wall_clock_jump_leaves_monotonic_alone() -> None:
    clock = FakeClock()
    clock.jump_wall_clock(-3600)
    assert clock.monotonic() == 0.0 and clock.time() == 1_700_000_000.0 - 3600


def test_sleeper_wakes_when_its_deadline_is_reached_not_before() -> None:
    clock = FakeClock()
    condition = threading.Condition()
    woke = threading.Event()

    def sleeper() -> None:
        with condition:
            while clock.monotonic() < 5:
                clock.wait(condition, 5)
        woke.set()

    thread = threading.Thread(target=sleeper)
    thread.start()
    clock.wait_for_sleeper(5)
    clock.advance(4)
    # still asleep with the same deadline: advance() did not wake it early
    clock.wait_for_sleeper(5)
    assert not woke.is_set()
    clock.advance(1)
    assert woke.wait(5)
    thread.join(5)
    assert clock.sleeping_deadlines() == []


def test_wait_for_sleeper_times_out_clearly() -> None:
    with pytest.raises(TimeoutError, match="no thread went to sleep"):
        FakeClock().wait_for_sleeper(1.0, timeout=0.05)
