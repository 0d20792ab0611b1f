"""Hostile clients filling what a lookup service lets one client hold: the canary renews on.

A stranger on the canary's own host registers, and asks for events, until the
lookup service refuses it by name; the canary's registration, made before, is
renewed throughout (a renewal takes nothing new: tests/hostile/targets.py's
``watched``, which checks the memory too), and the service holds no more than
the limits say.
"""

from __future__ import annotations

import pytest
from targets import serving, watched

import landlord
from lookup import Comment, ServiceItem, ServiceTemplate, locate

pytestmark = pytest.mark.slow

SERVICE_URI = "PYRO:quotes@127.0.0.1:9"
REGISTRATIONS = 50
EVENT_REGISTRATIONS = 20


def test_a_stranger_filling_its_quota_is_refused_by_name_and_the_canary_renews_on(
        request: pytest.FixtureRequest) -> None:
    with serving("lookup", request, "--registrations-per-client", str(REGISTRATIONS),
                 "--event-registrations-per-client", str(EVENT_REGISTRATIONS)) as target:
        with watched(target), locate(port=target.port) as stranger:
            taken = 1  # the canary's
            with pytest.raises(landlord.LeaseDeniedError, match=f"at most {REGISTRATIONS} registrations"):
                while taken <= REGISTRATIONS:
                    stranger.register(ServiceItem(None, SERVICE_URI, ["x.Filler"], [Comment("f" * 1000)]), 60)
                    taken += 1
            assert taken == REGISTRATIONS
            with pytest.raises(ValueError, match="a registration may carry at most"):
                stranger.register(ServiceItem(None, SERVICE_URI, ["x.Large"], [Comment("l" * 40_000)]), 60)
            with pytest.raises(landlord.LeaseDeniedError, match=f"at most {EVENT_REGISTRATIONS} event"):
                for _ in range(EVENT_REGISTRATIONS + 1):
                    stranger.notify(ServiceTemplate(), 7, "PYRO:listener@127.0.0.1:9", None, 60)
            assert stranger.lookup_all(ServiceTemplate(), 1000).total == REGISTRATIONS
