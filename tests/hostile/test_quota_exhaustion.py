"""Hostile clients filling what a lookup service lets one client hold: the canary renews on.

A stranger on the canary's own host registers, and asks for events, until the
lookup service refuses it by name; the canary's registration, made before, is
renewed throughout (a renewal takes nothing new), and the service holds no
more than the limits say.
"""

from __future__ import annotations

import pytest
from attacks import Canary
from conftest import free_port

import landlord
from lookup import Comment, ServiceItem, ServiceTemplate, locate

pytestmark = pytest.mark.slow

SERVICE_URI = "PYRO:quotes@127.0.0.1:9"
REGISTRATIONS = 50
EVENT_REGISTRATIONS = 20


def test_a_stranger_filling_its_quota_is_refused_by_name_and_the_canary_renews_on() -> None:
    process, _ = landlord.testing.start_server(
        "-m", "lookup", "serve", "--port", str(port := free_port()), "--no-announce",
        "--registrations-per-client", str(REGISTRATIONS), "--event-registrations-per-client", str(EVENT_REGISTRATIONS))
    with process, locate(port=port) as lookup:
        canary = Canary(lookup.register(ServiceItem(None, SERVICE_URI, ["quotes.Canary"], []), 2.0).lease).start()
        try:
            canary.renew_more(2)
            with locate(port=port) as stranger:
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
            canary.renew_more(3)
        finally:
            canary.stop()
        canary.check(0.25)
        assert lookup.lookup_all(ServiceTemplate(), 1000).total == REGISTRATIONS
