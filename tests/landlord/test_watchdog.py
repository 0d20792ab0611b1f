"""Watchdog (landlord/recipe/watchdog.py): one thread checks every watched holding when due, again when
it asks, at once when woken, never after it is dropped."""

from __future__ import annotations

import threading

from landlord import FakeClock
from landlord.recipe.watchdog import Watchdog, watchdog_for


class Ticks:
    """A watched thing that records each check and answers from a list of next due times."""

    def __init__(self, answers: list[float | None]) -> None:
        self.answers = answers
        self.checked: list[float] = []
        self.changed = threading.Condition()

    def check(self) -> float | None:
        with self.changed:
            self.checked.append(len(self.checked))
            self.changed.notify_all()
            return self.answers.pop(0) if self.answers else None

    def wait_checks(self, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.checked) >= count, 10)


def test_a_watched_thing_is_checked_when_due_and_again_when_it_asks() -> None:
    clock = FakeClock()
    watchdog = Watchdog(clock)
    ticks = Ticks([15.0, None])
    watchdog.watch(ticks, 10.0)
    clock.wait_for_sleeper(10.0)
    clock.advance(9.9)
    assert ticks.checked == []
    clock.advance(0.1)
    ticks.wait_checks(1)
    clock.wait_for_sleeper(15.0)
    clock.advance(5)
    ticks.wait_checks(2)
    assert len(watchdog) == 0  # it said it was done


def test_a_woken_thing_is_checked_at_once_and_a_dropped_one_never() -> None:
    clock = FakeClock()
    watchdog = Watchdog(clock)
    woken, dropped = Ticks([None]), Ticks([None])
    key = watchdog.watch(woken, 100.0)
    watchdog.drop(watchdog.watch(dropped, 50.0))
    watchdog.wake(key)
    woken.wait_checks(1)
    later = Ticks([None])
    watchdog.watch(later, 150.0)
    clock.wait_for_sleeper(150.0)
    clock.advance(200)
    later.wait_checks(1)  # due after the dropped one: had that been checked, it would have been first
    assert dropped.checked == [] and len(watchdog) == 0


def test_dropped_entries_do_not_pile_up() -> None:
    watchdog = Watchdog(FakeClock())
    for _ in range(1000):
        watchdog.drop(watchdog.watch(Ticks([]), 1e9))
    assert len(watchdog._due) <= 2 * len(watchdog) + 65


def test_one_watchdog_per_clock() -> None:
    clock = FakeClock()
    assert watchdog_for(clock) is watchdog_for(clock) and watchdog_for(FakeClock()) is not watchdog_for(clock)
