"""The name server face's time logic (lookup.service.pyrons.liveness) on a fake clock, and its regex guard."""

from __future__ import annotations

import re
import time

import pytest

from landlord import FakeClock
from lookup.service.pyrons.liveness import PingSchedule, PingTerms
from lookup.service.pyrons.patterns import MAX_PATTERN_LENGTH, UnsafePatternError, safe_pattern

TERMS = PingTerms(interval=10, timeout=2, retry=1, misses=2)


@pytest.fixture
def schedule() -> PingSchedule:
    return PingSchedule(TERMS)


def test_a_new_address_is_first_pinged_an_interval_after_it_is_watched(schedule: PingSchedule,
                                                                         clock: FakeClock) -> None:
    schedule.watch("h:1", clock.monotonic())
    clock.advance(9.9)
    assert schedule.take_due(clock.monotonic()) == []
    assert schedule.next_due() == 10
    clock.advance(0.1)
    assert schedule.take_due(clock.monotonic()) == ["h:1"]


def test_an_address_in_flight_is_not_handed_out_twice(schedule: PingSchedule, clock: FakeClock) -> None:
    schedule.watch("h:1", 0)
    clock.advance(10)
    assert schedule.take_due(clock.monotonic()) == ["h:1"]
    clock.advance(30)
    assert schedule.take_due(clock.monotonic()) == [] and schedule.next_due() is None


def test_an_answer_makes_it_due_an_interval_later(schedule: PingSchedule, clock: FakeClock) -> None:
    schedule.watch("h:1", 0)
    clock.advance(10)
    schedule.take_due(clock.monotonic())
    clock.advance(0.5)
    assert schedule.answered("h:1", clock.monotonic())
    assert schedule.next_due() == 20.5


def test_misses_in_a_row_make_it_dead_and_forgotten(schedule: PingSchedule, clock: FakeClock) -> None:
    schedule.watch("h:1", 0)
    clock.advance(10)
    schedule.take_due(clock.monotonic())
    clock.advance(2)  # timed out
    assert not schedule.missed("h:1", clock.monotonic())
    assert schedule.next_due() == 13  # retried a second later
    clock.advance(1)
    assert schedule.take_due(clock.monotonic()) == ["h:1"]
    clock.advance(2)
    assert schedule.missed("h:1", clock.monotonic())
    assert "h:1" not in schedule and schedule.next_due() is None
    assert clock.monotonic() - 0 <= TERMS.removal_bound  # dead within the bound from its last sign of life


def test_an_answer_between_misses_starts_the_count_again(schedule: PingSchedule) -> None:
    schedule.watch("h:1", 0)
    assert schedule.take_due(10) == ["h:1"] and not schedule.missed("h:1", 12)
    assert schedule.take_due(13) == ["h:1"] and schedule.answered("h:1", 13.5)
    assert schedule.take_due(23.5) == ["h:1"] and not schedule.missed("h:1", 25.5)  # one miss, not two
    assert "h:1" in schedule


def test_an_address_is_proven_by_its_last_answer(schedule: PingSchedule) -> None:
    schedule.watch("h:1", 0)
    assert not schedule.proven("h:1")  # new: not yet
    schedule.take_due(10)
    schedule.answered("h:1", 10)
    assert schedule.proven("h:1")
    schedule.take_due(20)
    schedule.missed("h:1", 20)
    assert not schedule.proven("h:1")


def test_a_forgotten_address_in_flight_is_neither_renewed_nor_dead(schedule: PingSchedule) -> None:
    schedule.watch("h:1", 0)
    schedule.take_due(10)
    schedule.forget("h:1")
    assert not schedule.answered("h:1", 11) and not schedule.missed("h:1", 11)
    assert len(schedule) == 0 and schedule.next_due() is None


def test_watching_again_keeps_its_schedule(schedule: PingSchedule) -> None:
    schedule.watch("h:1", 0)
    schedule.watch("h:1", 5)
    assert schedule.next_due() == 10 and len(schedule) == 1


def test_many_addresses_come_due_in_order(schedule: PingSchedule) -> None:
    for i in range(1000):
        schedule.watch(f"h:{i}", i / 100)
    assert schedule.take_due(10.5) == [f"h:{i}" for i in range(51)]
    assert schedule.next_due() == pytest.approx(10.51)


def test_the_lease_outlives_the_slowest_path_between_two_answers() -> None:
    slowest = TERMS.interval + TERMS.timeout + (TERMS.misses - 1) * (TERMS.retry + TERMS.timeout)
    assert TERMS.lease_term > slowest
    assert TERMS.removal_bound == 16


@pytest.mark.parametrize("terms", [dict(interval=0), dict(timeout=-1), dict(retry=float("inf")), dict(misses=0),
                                   dict(interval=2, timeout=2), dict(misses=True), dict(interval="10")])
def test_bad_terms_are_refused(terms: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        PingTerms(**terms)  # type: ignore[arg-type]


def test_every_scales_the_timeout_down_for_short_intervals() -> None:
    assert PingTerms.every(10) == PingTerms(10, 2, 1, 2)
    assert PingTerms.every(0.5) == PingTerms(0.5, 0.1, 0.1, 2)
    with pytest.raises(ValueError):
        PingTerms.every(0)


# -- the regex guard ---------------------------------------------------------------------------------

@pytest.mark.parametrize("pattern", ["(a+)+$", "(a|aa)*", "((a+))+", "(?:x+y)*", "a*a*a*b", r"(a)\1",
                                     "(?P<x>a)(?P=x)", "(?=a)a", "a{0,64}a{0,64}a*a*b", "a{1,}b{1,}c*", "(a+)?",
                                     "(.*)*", "a?" * 21,
                                     "x" * (MAX_PATTERN_LENGTH + 1)])
def test_patterns_that_could_backtrack_for_long_are_refused(pattern: str) -> None:
    with pytest.raises(UnsafePatternError):
        safe_pattern(pattern)


@pytest.mark.parametrize("pattern", [".*foo.*", r"acme\..*", r"^[a-z]+\.quotes$", "(?:ab)+", "(?P<n>x)y",
                                     "[(+]+x", "a??b", "x{2}", "x{1,100}", "a|b|c", r"\(a+\)+", "{x}*",
                                     r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}", ".*.*b", "a?" * 20])
def test_ordinary_patterns_are_taken_and_match_as_re_does(pattern: str) -> None:
    assert safe_pattern(pattern).pattern == re.compile(pattern).pattern


def test_a_bad_regex_raises_re_error_and_a_non_str_type_error() -> None:
    with pytest.raises(re.error):
        safe_pattern("(")
    with pytest.raises(TypeError):
        safe_pattern(5)  # type: ignore[arg-type]


def test_what_is_taken_matches_a_long_name_quickly() -> None:
    name = "a" * 1024 + "!"
    started = time.monotonic()
    for pattern in [".*a.*b", ".*.*b", "a*a*b", "(?:a|b)c", "[ab]+[ab]+c", "a?" * 20 + "b"]:
        assert safe_pattern(pattern).match(name) is None
    assert time.monotonic() - started < 1.0
