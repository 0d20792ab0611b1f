"""Arbitrary input to every remote method: a clear error, and the landlord's state untouched."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from landlord import FakeClock, Landlord, LandlordLease, LeaseDurationPolicy, UnknownLeaseError

CLEAR_ERRORS = (ValueError, TypeError, UnknownLeaseError)
MAXIMUM = 100.0

anything = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=300) | st.binary(max_size=50),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8)
# which of the three leases to aim at, and how to spoil its cookie
aimed = st.tuples(st.integers(0, 2), st.sampled_from(["chop", "append", "flip case"]))


def spoil(cookie: str, how: str) -> str:
    return {"chop": cookie[:-1], "append": cookie + "x", "flip case": cookie.swapcase()}[how]


class Scene:
    """A landlord holding three leases on a fake clock, and a snapshot of its state."""

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.landlord = Landlord(policy=LeaseDurationPolicy(maximum=MAXIMUM, default=10), clock=self.clock,
                                 reaper="lazy")
        self.leases: list[LandlordLease] = [self.landlord.new_lease(f"resource {i}", 50) for i in range(3)]

    def state(self) -> dict[str, float]:
        manager = self.landlord.manager
        return {cookie: resource.expiration for cookie, resource in manager._by_cookie.items()}


def call_quietly(method: Any, *args: Any) -> BaseException | None:
    try:
        method(*args)
    except CLEAR_ERRORS as exc:
        assert str(exc), f"{type(exc).__name__} without a message"
        return exc
    return None


@settings(max_examples=300, deadline=None)
@given(cookie=anything, spoiled=aimed, duration=anything)
def test_renew_and_cancel_with_anything(cookie: Any, spoiled: tuple[int, str], duration: Any) -> None:
    scene = Scene()
    before = scene.state()
    near_miss = spoil(scene.leases[spoiled[0]].cookie, spoiled[1])
    for wrong in (cookie, near_miss):
        assert call_quietly(scene.landlord.renew, wrong, duration) is not None
        assert call_quietly(scene.landlord.cancel, wrong) is not None
    assert scene.state() == before


@settings(max_examples=300, deadline=None)
@given(duration=anything)
def test_a_real_cookie_with_any_duration_renews_or_changes_nothing(duration: Any) -> None:
    scene = Scene()
    cookie = scene.leases[0].cookie
    before = scene.state()
    error = call_quietly(scene.landlord.renew, cookie, duration)
    after = scene.state()
    others = {c: e for c, e in before.items() if c != cookie}
    assert {c: e for c, e in after.items() if c != cookie} == others
    if error is not None:
        assert after == before
    else:  # a valid duration: that lease alone changed, within the policy's maximum
        assert scene.clock.monotonic() <= after[cookie] <= scene.clock.monotonic() + MAXIMUM


@settings(max_examples=300, deadline=None)
@given(cookies=anything | st.lists(anything, max_size=4), durations=anything, spoiled=aimed)
def test_batches_with_anything(cookies: Any, durations: Any, spoiled: tuple[int, str]) -> None:
    scene = Scene()
    before = scene.state()
    if isinstance(cookies, list):
        cookies = cookies + [spoil(scene.leases[spoiled[0]].cookie, spoiled[1])]
    results = None
    try:
        results = scene.landlord.renew_all(cookies, durations)
    except CLEAR_ERRORS:
        pass
    if results is not None:  # well-formed, but no cookie of ours: each failed alone
        assert all(granted == -1 for granted in results.granted)
        assert len(results.denied) == len(results.granted)
    failures = call_quietly(scene.landlord.cancel_all, cookies)
    assert scene.state() == before
    assert failures is not None or isinstance(cookies, list)
