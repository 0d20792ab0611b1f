from __future__ import annotations

import math

import pytest

from landlord import ANY, FOREVER, FakeClock, Landlord, LeaseDeniedError, LeasedResource, LeaseDurationPolicy


def bound(policy: LeaseDurationPolicy, clock: FakeClock) -> LeaseDurationPolicy:
    policy.bind(clock=clock, lease_factory=lambda resource, granted: (resource, granted))  # type: ignore[arg-type,return-value]
    return policy


@pytest.mark.parametrize("requested, granted", [(ANY, 10.0), (5, 5.0), (0, 0.0), (100, 100.0), (150, 100.0),
                                                (FOREVER, 100.0)])
def test_grant_terms(clock: FakeClock, requested: float, granted: float) -> None:
    policy = bound(LeaseDurationPolicy(maximum=100, default=10), clock)
    resource = LeasedResource("c", 0.0, "r")
    clock.advance(7)
    assert policy.lease_for(resource, requested) == (resource, granted)
    assert resource.expiration == 7 + granted


def test_forever_policy_grants_forever(clock: FakeClock) -> None:
    policy = bound(LeaseDurationPolicy(), clock)
    resource = LeasedResource("c", 0.0, "r")
    policy.lease_for(resource, FOREVER)
    assert math.isinf(resource.expiration)
    assert policy.default == 60.0


def test_renewal_is_from_now_not_added_to_the_old_term(clock: FakeClock) -> None:
    policy = bound(LeaseDurationPolicy(maximum=100, default=10), clock)
    resource = LeasedResource("c", 0.0, "r")
    policy.lease_for(resource, 30)
    clock.advance(20)
    assert policy.renew(resource, 30) == 30
    assert resource.expiration == 50


def test_renewal_never_shortens_unless_asked_for_less(clock: FakeClock) -> None:
    policy = bound(LeaseDurationPolicy(maximum=100, default=10), clock)
    resource = LeasedResource("c", 0.0, "r")
    policy.lease_for(resource, 90)
    clock.advance(5)  # 85 left
    assert policy.renew(resource, ANY) == 85  # the default (10) would shorten it
    assert resource.expiration == 90
    policy.maximum = 50  # e.g. an administrator lowered the cap
    assert policy.renew(resource, FOREVER) == 85  # capped grant, but the holder asked for more
    assert policy.renew(resource, 20) == 20  # the holder asked for less: granted
    assert resource.expiration == 25


def test_ensure_current(clock: FakeClock) -> None:
    policy = bound(LeaseDurationPolicy(maximum=100), clock)
    resource = LeasedResource("c", 0.0, "r")
    policy.lease_for(resource, 10)
    assert policy.ensure_current(resource)
    clock.advance(10)
    assert not policy.ensure_current(resource)


@pytest.mark.parametrize("kwargs", [dict(maximum=0), dict(maximum=-5), dict(maximum=10, default=20),
                                    dict(default=0), dict(maximum=math.nan), dict(maximum="10"), dict(default=ANY)])
def test_bad_policy_settings(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        LeaseDurationPolicy(**kwargs)


def test_bad_requests_change_nothing(clock: FakeClock) -> None:
    policy = bound(LeaseDurationPolicy(maximum=100), clock)
    resource = LeasedResource("c", 42.0, "r")
    for bad in (-2, math.nan, "5", None):
        with pytest.raises(ValueError):
            policy.renew(resource, bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            policy.lease_for(resource, bad)  # type: ignore[arg-type]
    assert resource.expiration == 42.0


def test_a_policy_serves_one_landlord(clock: FakeClock) -> None:
    policy = LeaseDurationPolicy()
    first = Landlord(policy=policy, clock=clock, reaper="lazy")
    with pytest.raises(ValueError, match="another landlord"):
        Landlord(policy=policy, clock=clock, reaper="lazy")
    first.close()


def test_unbound_policy_says_so(clock: FakeClock) -> None:
    with pytest.raises(RuntimeError, match="not bound"):
        LeaseDurationPolicy().lease_for(LeasedResource("c", 0.0, "r"), 1)


# -- a lifetime cap ------------------------------------------------------------------------------------

def test_a_lifetime_cap_grants_up_to_it_then_denies_naming_it(clock: FakeClock) -> None:
    policy = bound(LeaseDurationPolicy(maximum=10, lifetime=25), clock)
    resource = LeasedResource("c", 0.0, "r")
    policy.lease_for(resource, 10)
    assert resource.deadline == 25
    clock.advance(8)
    assert policy.renew(resource, 10) == 10  # to 18: within the cap
    clock.advance(8)
    assert policy.renew(resource, 10) == 9  # to 25, not 26: granted up to the cap
    assert resource.expiration == 25
    clock.advance(5)
    with pytest.raises(LeaseDeniedError, match="lifetime cap of 25 s"):
        policy.renew(resource, 10)
    assert resource.expiration == 25  # a denied renewal changes nothing


def test_a_lifetime_shorter_than_the_request_bounds_the_grant_itself(clock: FakeClock) -> None:
    policy = bound(LeaseDurationPolicy(maximum=100, lifetime=30), clock)
    resource = LeasedResource("c", 0.0, "r")
    assert policy.lease_for(resource, 50) == (resource, 30)
    plain = LeasedResource("d", 0.0, "r")
    bound(LeaseDurationPolicy(maximum=100), FakeClock()).lease_for(plain, 50)
    assert plain.extra is None  # leases without a cap carry nothing more


def test_a_landlords_lifetime_cap_reaches_the_holder_as_a_denial(clock: FakeClock) -> None:
    landlord = Landlord(policy=LeaseDurationPolicy(maximum=10, lifetime=15), clock=clock, reaper="lazy")
    lease = landlord.new_lease("room", 10)
    clock.advance(9)
    assert landlord.renew(lease.cookie, 10) == 6
    clock.advance(5)
    with pytest.raises(LeaseDeniedError, match="lifetime cap"):
        landlord.renew(lease.cookie, 10)


@pytest.mark.parametrize("options, message", [
    ({"grace": -1}, "grace must not be negative"),
    ({"grace": math.nan}, "grace must be a number"),
    ({"grace": math.inf}, "grace must be finite"),
    ({"grace": "5"}, "grace must be a number"),
    ({"lifetime": 0}, "lifetime must be positive"),
    ({"lifetime": -3}, "lifetime must not be negative"),
    ({"lifetime": None}, "lifetime must be a number"),
])
def test_bad_grace_and_lifetime_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LeaseDurationPolicy(maximum=10, **options)  # type: ignore[arg-type]


def test_repr_names_grace_and_lifetime() -> None:
    assert repr(LeaseDurationPolicy(maximum=10, default=5, grace=2, lifetime=60)) == \
        "LeaseDurationPolicy(maximum=10, default=5, grace=2, lifetime=60)"
    assert repr(LeaseDurationPolicy()) == "LeaseDurationPolicy(maximum=FOREVER, default=60)"
