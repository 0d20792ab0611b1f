"""landlord.holder.pace: what a landlord's renewal calls take, and the start times planned by it (numbers only)."""

from __future__ import annotations

import logging
import math

import pytest

from landlord.holder.pace import BUSY, OVERLOAD, WARN_EVERY, Pace, finish_by, planned_start


def test_a_renewal_should_be_done_halfway_from_its_start_to_the_end() -> None:
    assert finish_by(10 / 3, 10.0) == pytest.approx(10 - 10 / 3)  # renewed a third in: a third left
    assert finish_by(9.0, 10.0) == 9.5
    assert finish_by(0.0, math.inf) == math.inf


def test_a_round_that_fits_starts_when_due_and_one_that_does_not_starts_early_enough() -> None:
    # a 10 s term renewed at 3.33: done by 6.67
    assert planned_start(10 / 3, 10.0, 0.0, 0.0) == 10 / 3  # nothing measured: as the terms say
    assert planned_start(10 / 3, 10.0, 2.0, 0.0) == 10 / 3  # fits in the 3.33 s
    assert planned_start(10 / 3, 10.0, 5.0, 0.0) == pytest.approx(10 - 10 / 3 - 5)  # starts 1.67 s sooner
    assert planned_start(10 / 3, 10.0, 9.0, 1.0) == 1.0  # cannot make it: at once, never in the past
    assert planned_start(math.inf, math.inf, 5.0, 0.0) == math.inf  # a lease never due stays so


def test_a_busy_lane_renews_as_late_as_still_finishes_in_time() -> None:
    assert planned_start(10 / 3, 10.0, 1.0, 0.0, busy=True) == pytest.approx(10 - 10 / 3 - 1)
    assert planned_start(10 / 3, 10.0, 0.0, 0.0, busy=True) == pytest.approx(10 - 10 / 3)
    assert planned_start(10 / 3, 10.0, 9.0, 2.0, busy=True) == 2.0


def test_expected_time_is_per_lease_and_follows_a_landlord_that_slows_down() -> None:
    pace = Pace()
    assert pace.expected(10_000) == 0.0
    pace.record("k", started=0.0, ended=1.0, leases=10_000, term=60.0, late=0.0)
    assert pace.expected(10_000) == pytest.approx(1.0) and pace.expected(1_000) == pytest.approx(0.1)
    for start in range(1, 6):  # five times slower from now on
        pace.record("k", started=start, ended=start + 5.0, leases=10_000, term=60.0, late=0.0)
    assert 4.5 < pace.expected(10_000) < 5.0  # within a few calls


def test_load_is_the_share_of_about_a_term_the_lane_was_busy() -> None:
    pace = Pace()
    for i in range(100):  # busy 0.6 s of every second, for ten terms of 10 s
        pace.record("k", started=float(i), ended=i + 0.6, leases=1000, term=10.0, late=0.0)
    assert pace.load == pytest.approx(0.6, abs=0.05) and pace.busy() and 0.6 >= BUSY
    idle = Pace()
    for i in range(100):
        idle.record("k", started=float(i), ended=i + 0.1, leases=1000, term=10.0, late=0.0)
    assert idle.load == pytest.approx(0.1, abs=0.02) and not idle.busy()
    idle.record("k", started=200.0, ended=200.1, leases=1000, term=10.0, late=0.0)
    assert idle.load < 0.02  # what was measured fades with the time since


def test_warnings_come_when_late_or_overloaded_and_at_most_once_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    pace = Pace()
    with caplog.at_level(logging.WARNING, logger="landlord.pace"):
        pace.record("k", started=0.0, ended=1.0, leases=10, term=10.0, late=0.01)  # within the slack
        assert caplog.records == []
        pace.record("k", started=1.0, ended=2.0, leases=10, term=10.0, late=0.5)
        pace.record("k", started=2.0, ended=3.0, leases=10, term=10.0, late=0.5)
        assert len(caplog.records) == 1 and "0.50 s later" in caplog.records[0].getMessage()
        pace.record("k", started=3.0 + WARN_EVERY, ended=4.0 + WARN_EVERY, leases=10, term=10.0, late=0.5)
        assert len(caplog.records) == 2
        caplog.clear()
        busy = Pace()
        t = 0.0
        while busy.load < OVERLOAD:
            busy.record("k", started=t, ended=t + 1.0, leases=10, term=10.0, late=0.0)
            t += 1.0
        assert [r.getMessage() for r in caplog.records if "busy" in r.getMessage()] != []
        assert "cannot be kept up with" in caplog.records[-1].getMessage()
