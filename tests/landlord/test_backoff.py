"""Backoff: exponential delays with jitter; OutageLog: one WARNING per outage."""

from __future__ import annotations

import itertools
import logging
import math

import pytest

from landlord import Backoff
from landlord.transport.backoff import OutageLog, PeerErrors


def test_delays_double_up_to_the_maximum_without_jitter() -> None:
    backoff = Backoff(0.5, 4.0, jitter=0.0)
    assert [backoff.next_delay() for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert backoff.failures == 6
    backoff.reset()
    assert backoff.failures == 0 and backoff.next_delay() == 0.5


def test_jitter_takes_off_at_most_its_share_of_each_ceiling() -> None:
    draws = itertools.cycle([0.0, 0.5, 0.999999])
    backoff = Backoff(1.0, 8.0, jitter=0.5, random=lambda: next(draws))
    assert backoff.next_delay() == 1.0  # a draw of 0 takes nothing off
    assert backoff.next_delay() == pytest.approx(1.5)  # ceiling 2, a quarter off
    assert backoff.next_delay() == pytest.approx(2.0, abs=1e-5)  # ceiling 4, (nearly) half off
    assert backoff.ceiling() == 8.0


def test_full_jitter_and_a_factor_of_one() -> None:
    backoff = Backoff(2.0, 2.0, factor=1.0, jitter=1.0, random=lambda: 0.75)
    assert [backoff.next_delay() for _ in range(3)] == [0.5, 0.5, 0.5]


def test_a_random_source_out_of_range_cannot_make_a_delay_negative_or_longer() -> None:
    assert Backoff(1.0, 1.0, random=lambda: 7.0).next_delay() == 0.5
    assert Backoff(1.0, 1.0, random=lambda: -3.0).next_delay() == 1.0


def test_a_long_outage_does_not_overflow() -> None:
    backoff = Backoff(1e-3, 60.0, factor=10.0, jitter=0.0)
    for _ in range(10_000):
        delay = backoff.next_delay()
    assert delay == 60.0


def test_the_default_random_source_stays_within_bounds() -> None:
    backoff = Backoff(1.0, 1.0)
    assert all(0.5 < backoff.next_delay() <= 1.0 for _ in range(1000))


@pytest.mark.parametrize("initial, maximum, options", [
    (0, 1, {}), (-1, 1, {}), (2, 1, {}), (1, math.inf, {}), (math.nan, 1, {}),
    (1, 2, {"factor": 0.5}), (1, 2, {"jitter": 1.5}), (1, 2, {"jitter": -0.1}),
])
def test_bad_settings_are_refused(initial: float, maximum: float, options: dict) -> None:
    with pytest.raises(ValueError):
        Backoff(initial, maximum, **options)


def test_non_numbers_are_refused() -> None:
    with pytest.raises(TypeError):
        Backoff("1", 2)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Backoff(True, 2)
    with pytest.raises(TypeError):
        Backoff(1, 2, random=0.5)  # type: ignore[arg-type]


def test_an_outage_is_logged_once_at_warning_and_its_end_at_info(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test_backoff.outage")
    outage = OutageLog(logger, "PYRO:x@h:1")
    caplog.set_level(logging.DEBUG, logger=logger.name)
    assert outage.error is None and not outage.ongoing
    assert outage.recovered() is False  # nothing to recover from: nothing logged
    assert outage.failed(ConnectionRefusedError("refused"), "subscribe to") is True
    assert outage.failed(TimeoutError("slow"), "subscribe to") is False
    assert outage.failed(TimeoutError(), "subscribe to") is False
    assert outage.ongoing and isinstance(outage.error, TimeoutError)
    assert outage.recovered() is True
    assert outage.failed(OSError("again")) is True  # a new outage: a new WARNING
    levels = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == logger.name]
    assert [level for level, _ in levels] == [logging.WARNING, logging.DEBUG, logging.DEBUG, logging.INFO,
                                              logging.WARNING]
    assert "subscribe to PYRO:x@h:1" in levels[0][1] and "refused" in levels[0][1]
    assert "after 3 failed attempts" in levels[3][1]
    assert "could not reach PYRO:x@h:1" in levels[4][1]


def test_peer_errors_keep_each_peers_last_and_the_latest_overall() -> None:
    errors = PeerErrors()
    assert errors.latest is None and errors.by_peer() == {}
    first, second, again = OSError("a down"), OSError("b down"), OSError("a still down")
    errors.failed("a", first)
    errors.failed("b", second)
    assert errors.latest is second and errors.by_peer() == {"a": first, "b": second}
    errors.failed("a", again)  # a's newest failure is now the latest overall
    assert errors.latest is again and errors.by_peer() == {"a": again, "b": second}
    errors.reached("a")
    assert errors.latest is second and errors.by_peer() == {"b": second}
    errors.reached("b")
    errors.reached("never failed")  # nothing to clear: no error
    assert errors.latest is None and errors.by_peer() == {}
