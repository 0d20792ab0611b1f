from __future__ import annotations

import math

import pytest

from landlord import ANY, FOREVER, Lease, check_duration


def test_constants_match_the_contract() -> None:
    assert FOREVER == math.inf and ANY == -1.0
    assert Lease.FOREVER is FOREVER and Lease.ANY is ANY


@pytest.mark.parametrize("value, expected", [(0, 0.0), (1, 1.0), (2.5, 2.5), (ANY, ANY), (FOREVER, FOREVER),
                                             (10 ** 400, FOREVER)])
def test_valid_durations_come_back_as_floats(value: float, expected: float) -> None:
    result = check_duration(value)
    assert result == expected and type(result) is float


@pytest.mark.parametrize("bad", [-0.5, -2, -math.inf, -10 ** 400, math.nan, "10", None, True, [1], 1j])
def test_invalid_durations_are_value_errors(bad: object) -> None:
    with pytest.raises(ValueError, match="duration"):
        check_duration(bad)


def test_any_can_be_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        check_duration(ANY, allow_any=False)


def test_error_names_the_value() -> None:
    with pytest.raises(ValueError, match="interval"):
        check_duration(-3, name="interval")
