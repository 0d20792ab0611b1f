"""ClaimInbox (landlord/holder/claiminbox.py): grants and revocations heard, early ones kept, bounded,
and what a stranger sends checked."""

from __future__ import annotations

import math

import Pyro5.api
import pytest

from landlord import FakeClock
from landlord.holder.claiminbox import KEPT_EARLY, ClaimInbox, Expected


def test_a_grant_wakes_the_lease_that_expects_it() -> None:
    with ClaimInbox(serve=False) as inbox:
        expected = inbox.expect("cookie-1")
        inbox.granted("cookie-1", 7)
        assert expected.wait(math.inf) and expected.token == 7 and expected.reason is None


def test_a_notice_that_comes_before_the_holder_expects_it_is_kept() -> None:
    revoked: list[str] = []
    with ClaimInbox(serve=False) as inbox:
        inbox.granted("early", 3)
        inbox.revoked("early", "evicted")
        expected = inbox.expect("early", revoked.append)
        assert (expected.token, expected.reason, revoked) == (3, "evicted", ["evicted"])


def test_early_notices_are_bounded_the_oldest_going_first() -> None:
    with ClaimInbox(serve=False) as inbox:
        for i in range(KEPT_EARLY + 10):
            inbox.granted(f"stranger-{i}", 1)
        assert inbox.expect("stranger-0").token is None  # dropped
        assert inbox.expect(f"stranger-{KEPT_EARLY + 9}").token == 1


def test_a_wait_ends_at_its_deadline_on_the_clock() -> None:
    clock = FakeClock()
    expected = Expected(clock)
    clock.advance(5)
    assert not expected.wait(5.0)


def test_forgotten_leases_hear_nothing() -> None:
    with ClaimInbox(serve=False) as inbox:
        expected = inbox.expect("gone")
        inbox.forget("gone")
        inbox.granted("gone", 2)
        assert expected.token is None and len(inbox) == 0


def test_served_it_checks_what_a_stranger_sends() -> None:
    with ClaimInbox(host="127.0.0.1") as inbox:
        expected = inbox.expect("mine")
        assert inbox.uri is not None
        with Pyro5.api.Proxy(inbox.uri) as stranger:
            for args in (("mine", "1"), ("mine", True), ("mine", 0), (["mine"], 1)):
                with pytest.raises(TypeError):
                    stranger.granted(*args)
            with pytest.raises(TypeError):
                stranger.revoked("mine", 5)
            assert expected.token is None and expected.reason is None
            stranger.granted("mine", 4)
        assert expected.wait(math.inf) and expected.token == 4
