"""landlord.transport.budget: the bytes of large messages being gathered, against a server-wide budget (pure)."""

from __future__ import annotations

import pytest

from landlord.transport.budget import LARGE_BUDGET, SMALL_FRAME, LargeMessageBudget
from landlord.transport.framing import FrameRefused


def test_the_defaults_are_the_servers() -> None:
    budget = LargeMessageBudget()
    assert (budget.budget, budget.small, budget.gathered) == (LARGE_BUDGET, SMALL_FRAME, 0)


def test_a_small_message_is_not_counted() -> None:
    budget = LargeMessageBudget(budget=100, small=10)
    assert budget.reserve(10, 0) == 0
    assert budget.gathered == 0


def test_a_large_message_is_counted_once_until_released() -> None:
    budget = LargeMessageBudget(budget=100, small=10)
    held = budget.reserve(11, 0)
    assert held == 11 and budget.gathered == 11
    assert budget.reserve(11, held) == 11  # asked again for the same message: one reservation
    assert budget.gathered == 11
    budget.release(held)
    assert budget.gathered == 0


def test_past_the_budget_a_large_message_is_refused_as_busy_and_nothing_is_counted() -> None:
    budget = LargeMessageBudget(budget=100, small=10)
    first = budget.reserve(60, 0)
    assert budget.reserve(40, 0) == 40  # exactly full
    with pytest.raises(FrameRefused, match="gathering 100 bytes of large messages") as refused:
        budget.reserve(11, 0)
    assert refused.value.reason == "busy"
    assert budget.gathered == 100
    assert budget.reserve(10, 0) == 0  # small messages still pass
    budget.release(first)
    assert budget.reserve(11, 0) == 11


def test_releasing_nothing_changes_nothing() -> None:
    budget = LargeMessageBudget(budget=100, small=10)
    budget.reserve(50, 0)
    budget.release(0)
    assert budget.gathered == 50


@pytest.mark.parametrize("arguments", [dict(budget=-1), dict(small=-1), dict(budget=True), dict(small=1.5)])
def test_a_bad_budget_is_refused(arguments: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="non-negative int"):
        LargeMessageBudget(**arguments)  # type: ignore[arg-type]
