"""RenewResults: the answer to a batch renewal, a value both sides share."""

from __future__ import annotations

import pytest

from landlord import LeaseDeniedError, UnknownLeaseError
from landlord.results import RenewResults


def test_renew_results_are_a_frozen_value() -> None:
    results = RenewResults([10.0, -1], [UnknownLeaseError("gone")])
    assert results.granted == [10.0, -1] and RenewResults(granted=[10.0, -1], denied=results.denied) == results
    assert results == RenewResults([10.0, -1], [UnknownLeaseError("gone")])  # errors compare by type and args
    assert results != RenewResults([10.0, -1], [LeaseDeniedError("gone")])
    assert results != RenewResults([10.0, -1], [UnknownLeaseError("other")])
    assert results != RenewResults([10.0, 5.0], [])
    assert results.__eq__("not results") is NotImplemented
    with pytest.raises(AttributeError):
        results.granted = []  # type: ignore[misc]
    assert not hasattr(results, "__dict__")
    with pytest.raises(TypeError):
        hash(results)  # lists inside: unhashable, as before
    assert len(repr(RenewResults([1.0] * 10_000, []))) < 250  # a batch's repr stays short for logs

