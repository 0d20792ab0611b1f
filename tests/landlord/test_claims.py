"""Named leases on a landlord (landlord/grantor/claims.py through Landlord.acquire): grants, waits pushed,
lock-delays, timeouts, hand-overs, tokens across restarts, and bad or hostile input changing nothing."""

from __future__ import annotations

import pathlib
import threading
from typing import Any

import Pyro5.api
import Pyro5.errors
import pytest

from landlord import (
    FOREVER,
    FakeClock,
    Landlord,
    LandlordLease,
    LeaseDeniedError,
    LeaseDurationPolicy,
    LeaseStore,
    UnknownLeaseError,
)
from landlord.grantor.claims import MAX_VALUE, TOKEN_BLOCK, TOKEN_SETTING, NameClaim
from landlord.grantor.names import MAX_NAMES
from landlord.holder.claiminbox import NameListener
from landlord.testing import ServingDaemon


class Heard(NameListener):
    """An in-process listener that keeps what it is told, for a test to wait on."""

    def __init__(self, *, fail_grants: bool = False) -> None:
        self.grants: dict[str, int] = {}
        self.revocations: dict[str, str] = {}
        self.fail_grants = fail_grants
        self._changed = threading.Condition()

    def granted(self, cookie: str, token: int) -> None:
        if self.fail_grants:
            raise ConnectionError("the holder is gone")
        with self._changed:
            self.grants[cookie] = token
            self._changed.notify_all()

    def revoked(self, cookie: str, reason: str) -> None:
        with self._changed:
            self.revocations[cookie] = reason
            self._changed.notify_all()

    def wait_grant(self, cookie: str, timeout: float = 10.0) -> int:
        with self._changed:
            assert self._changed.wait_for(lambda: cookie in self.grants, timeout), f"no grant for {cookie[:6]}"
            return self.grants[cookie]

    def wait_revoked(self, cookie: str, timeout: float = 10.0) -> str:
        with self._changed:
            assert self._changed.wait_for(lambda: cookie in self.revocations, timeout), "no revocation"
            return self.revocations[cookie]


@pytest.fixture
def landlord(clock: FakeClock, close_later: list) -> Landlord:
    made = Landlord(clock=clock, reaper="lazy")
    close_later.append(made)
    return made


def test_the_first_holds_with_token_1_and_the_next_is_refused_unless_it_waits(landlord: Landlord) -> None:
    lease, token = landlord.acquire("orders", 10)
    assert isinstance(lease, LandlordLease) and token == 1
    with pytest.raises(LeaseDeniedError, match="'orders' is held"):
        landlord.acquire("orders", 10)
    waiter, none = landlord.acquire("orders", 10, wait=FOREVER, value="second")
    assert none is None and landlord.name_token(waiter.cookie) is None
    assert landlord.name_holders("orders") == [(1, None)]
    assert len(landlord) == 2  # the refused request leased nothing


def test_a_release_grants_the_next_waiter_at_once_and_tells_it(landlord: Landlord) -> None:
    heard = Heard()
    holder, _ = landlord.acquire("orders", 10)
    first, _ = landlord.acquire("orders", 10, wait=FOREVER, listener=heard, value="first")
    second, _ = landlord.acquire("orders", 10, wait=FOREVER, listener=heard, value="second")
    holder.cancel()
    assert heard.wait_grant(first.cookie) == 2  # first come, first served
    assert landlord.name_token(first.cookie) == 2 and landlord.name_token(second.cookie) is None
    assert landlord.name_holders("orders") == [(2, "first")]
    first.cancel()
    assert heard.wait_grant(second.cookie) == 3


def test_an_expired_holder_closes_the_name_for_its_lock_delay_and_then_the_waiter_is_told(
        landlord: Landlord, clock: FakeClock) -> None:
    heard = Heard()
    landlord.acquire("orders", 10, lock_delay=5)
    waiter, _ = landlord.acquire("orders", 60, wait=FOREVER, listener=heard)
    clock.advance(10)
    assert landlord.manager.reap() == 1
    assert landlord.name_holders("orders") == [] and landlord.name_token(waiter.cookie) is None
    clock.wait_for_sleeper(clock.monotonic() + 5)  # the claims' thread sleeps to the end of the delay
    clock.advance(4.9)
    assert waiter.cookie not in heard.grants
    clock.advance(0.1)
    assert heard.wait_grant(waiter.cookie) == 2


def test_a_cancelled_holder_frees_the_name_at_once_whatever_its_lock_delay(landlord: Landlord) -> None:
    heard = Heard()
    holder, _ = landlord.acquire("orders", 10, lock_delay=30)
    waiter, _ = landlord.acquire("orders", 10, wait=FOREVER, listener=heard)
    holder.cancel()
    assert heard.wait_grant(waiter.cookie) == 2


def test_a_wait_that_times_out_ends_the_waiters_lease_and_tells_it(landlord: Landlord, clock: FakeClock) -> None:
    heard = Heard()
    landlord.acquire("orders", 60)
    waiter, _ = landlord.acquire("orders", 60, wait=5, listener=heard)
    clock.wait_for_sleeper(clock.monotonic() + 5)
    clock.advance(5)
    assert "too long" in heard.wait_revoked(waiter.cookie)
    with pytest.raises(LeaseDeniedError, match="too long"):
        waiter.renew(10)
    assert [view.waiters for view in landlord.names()] == [()]


def test_a_grant_that_cannot_be_told_is_taken_back_and_goes_to_the_next(landlord: Landlord) -> None:
    deaf, heard = Heard(fail_grants=True), Heard()
    holder, _ = landlord.acquire("orders", 10)
    lost, _ = landlord.acquire("orders", 10, wait=FOREVER, listener=deaf)
    next_one, _ = landlord.acquire("orders", 10, wait=FOREVER, listener=heard)
    holder.cancel()
    assert heard.wait_grant(next_one.cookie) == 3  # 2 went to the deaf waiter, revoked
    with pytest.raises((LeaseDeniedError, UnknownLeaseError)):
        lost.renew(10)


def test_a_semaphore_grants_its_limit_and_queues_the_rest(landlord: Landlord) -> None:
    tokens = [landlord.acquire("pool", 10, 2)[1] for _ in range(2)]
    assert tokens == [1, 2]
    lease, token = landlord.acquire("pool", 10, 2, wait=FOREVER)
    assert token is None
    with pytest.raises(ValueError, match="has limit 2, not 1"):
        landlord.acquire("pool", 10, 1)


def test_a_holder_hands_over_to_the_waiter_it_names_before_anyone_else(landlord: Landlord) -> None:
    heard = Heard()
    leader, _ = landlord.acquire("leader", 10, value="a")
    b, _ = landlord.acquire("leader", 10, wait=FOREVER, value="b", listener=heard)
    c, _ = landlord.acquire("leader", 10, wait=FOREVER, value="c", listener=heard)
    landlord.hand_over(leader.cookie, "c")
    assert heard.wait_grant(c.cookie) == 2
    assert landlord.name_holders("leader") == [(2, "c")] and landlord.name_token(b.cookie) is None
    with pytest.raises(UnknownLeaseError):
        leader.renew(10)  # its lease ended with the hand-over
    with pytest.raises(ValueError, match="nobody waits"):
        landlord.hand_over(c.cookie, "z")
    assert landlord.name_holders("leader") == [(2, "c")]  # a failed hand-over changes nothing


def test_tokens_never_go_back_across_a_restart_on_the_store(tmp_path: pathlib.Path, clock: FakeClock) -> None:
    path = tmp_path / "leases.db"
    first = Landlord(clock=clock, reaper="lazy", store=LeaseStore(path))
    held, token = first.acquire("orders", 60)
    waiting, _ = first.acquire("orders", 60, wait=FOREVER, value="w")
    released = [first.acquire(f"other-{i}", 60) for i in range(3)]
    for lease, _ in released:
        lease.cancel()  # their rows go: only the store's high water remembers tokens 2 to 4
    first.close()
    second = Landlord(clock=clock, reaper="lazy", store=LeaseStore(path))
    try:
        assert second.name_token(held.cookie) == token == 1  # the holder keeps its name and token
        assert second.name_token(waiting.cookie) is None  # the waiter waits still
        assert second.name_holders("orders") == [(1, None)]
        _, fresh = second.acquire("fresh", 60)
        assert fresh is not None and fresh > 4
        second.manager.renewed(held.cookie, 60)
        second.cancel(held.cookie)
        assert second.name_token(waiting.cookie) == fresh + 1
    finally:
        second.close()


def test_the_high_water_is_written_ahead_in_blocks(tmp_path: pathlib.Path, clock: FakeClock) -> None:
    store = LeaseStore(tmp_path / "leases.db")
    landlord = Landlord(clock=clock, reaper="lazy", store=store)
    try:
        for _ in range(3):
            landlord.acquire("orders", 60)[0].cancel()
        assert store.get_setting(TOKEN_SETTING) == 1 + TOKEN_BLOCK  # one write, ahead of tokens 2 and 3
    finally:
        landlord.close()


def test_a_claim_survives_its_stored_form() -> None:
    claim = NameClaim("orders", 2, 1.5, "me", "PYRO:obj@host:1", 100.0, 200.0, 7, "10.0.0.9")
    assert NameClaim.is_stored(claim.dump()) and not NameClaim.is_stored({"name": "orders"})
    back = NameClaim.load(claim.dump())
    assert (back.name, back.limit, back.lock_delay, back.value, back.listener, back.queued, back.wait_until,
            back.token, back.client) == ("orders", 2, 1.5, "me", "PYRO:obj@host:1", 100.0, 200.0, 7, "10.0.0.9")
    local = NameClaim("orders", 1, 0.0, None, Heard(), 1.0)
    assert NameClaim.load(local.dump()).listener is None  # an in-process listener is not stored
    with pytest.raises(ValueError):
        NameClaim.load({"landlord.name/1": {"name": "x"}})


@pytest.mark.parametrize("call, error", [
    (lambda ll: ll.acquire("", 10), ValueError),
    (lambda ll: ll.acquire("x" * 257, 10), ValueError),
    (lambda ll: ll.acquire("bad\nname", 10), ValueError),
    (lambda ll: ll.acquire(7, 10), TypeError),
    (lambda ll: ll.acquire("x", -5), ValueError),
    (lambda ll: ll.acquire("x", 10, 0), ValueError),
    (lambda ll: ll.acquire("x", 10, True), TypeError),
    (lambda ll: ll.acquire("x", 10, wait=-1), ValueError),
    (lambda ll: ll.acquire("x", 10, wait=float("nan")), ValueError),
    (lambda ll: ll.acquire("x", 10, lock_delay=61), ValueError),
    (lambda ll: ll.acquire("x", 10, value="v" * (MAX_VALUE + 1)), ValueError),
    (lambda ll: ll.acquire("x", 10, value=5), TypeError),
    (lambda ll: ll.acquire("x", 10, listener="PYRONAME:holder"), ValueError),
    (lambda ll: ll.acquire("x", 10, listener={"granted": 1}), TypeError),
    (lambda ll: ll.name_token("not a cookie at all!"), (ValueError, UnknownLeaseError)),
    (lambda ll: ll.name_holders(["x"]), TypeError),
    (lambda ll: ll.hand_over("c" * 22, 5), TypeError),
])
def test_bad_input_gets_a_clear_error_and_changes_nothing(landlord: Landlord, call: Any, error: Any) -> None:
    holder, _ = landlord.acquire("x", 10)
    with pytest.raises(error):
        call(landlord)
    assert len(landlord) == 1 and landlord.name_holders("x") == [(1, None)]
    assert [view.waiters for view in landlord.names()] == [()]


def test_a_plain_lease_is_not_a_named_one(landlord: Landlord) -> None:
    lease = landlord.new_lease("room", 10)
    with pytest.raises(UnknownLeaseError):
        landlord.name_token(lease.cookie)
    with pytest.raises(UnknownLeaseError):
        landlord.hand_over(lease.cookie, "x")


def test_names_are_bounded_and_a_refused_one_leases_nothing(clock: FakeClock, close_later: list) -> None:
    landlord = Landlord(clock=clock, reaper="lazy", policy=LeaseDurationPolicy(maximum=60))
    close_later.append(landlord)
    for i in range(MAX_NAMES):
        landlord.acquire(f"n{i}", 60)
    with pytest.raises(LeaseDeniedError, match="too many names"):
        landlord.acquire("one more", 60)
    assert len(landlord) == MAX_NAMES


def test_user_callbacks_never_see_a_claim_and_attached_resources_are_freed(clock: FakeClock,
                                                                          close_later: list) -> None:
    freed: list[Any] = []
    landlord = Landlord(clock=clock, reaper="lazy", on_expire=freed.append)
    close_later.append(landlord)
    lease, _ = landlord.acquire("orders", 10)
    landlord.attach(lease.cookie, "row 7")
    lease.cancel()
    assert freed == ["row 7"]


def test_served_a_named_lease_crosses_the_wire_and_a_stranger_cannot_stall_a_canary(close_later: list) -> None:
    landlord = Landlord()
    close_later.append(landlord)
    with ServingDaemon() as daemon:
        uri = daemon.register(landlord)
        canary = landlord.new_lease("canary", 10)
        with Pyro5.api.Proxy(uri) as stranger:
            lease, token = stranger.acquire("orders", 10)
            assert isinstance(lease, LandlordLease) and token == 1
            for bad in ([{"__class__": "landlord.holder.claiminbox.NameListener"}], [["x"]], [b"x" * 100]):
                # refused by the server's serializer (no converter makes a listener) or by acquire
                with pytest.raises((TypeError, ValueError, Pyro5.errors.SerializeError)):
                    stranger.acquire("other", 10, 1, None, 0.0, None, bad[0])
                assert canary.renew(10) > 0
            with pytest.raises(LeaseDeniedError):
                stranger.acquire("orders", 10)
        assert landlord.name_holders("orders") == [(1, None)] and len(landlord) == 2


def test_a_landlord_that_never_granted_a_name_pays_nothing_per_end(landlord: Landlord) -> None:
    landlord.new_lease("room", 10).cancel()
    assert landlord.manager._endings.intercept is None  # its ends go straight to the callbacks
    landlord.acquire("orders", 10)
    assert landlord.manager._endings.intercept is not None


def test_a_claim_cancelled_before_a_crash_comes_back_released_not_closed(tmp_path: pathlib.Path,
                                                                         clock: FakeClock) -> None:
    path = tmp_path / "leases.db"
    first = Landlord(clock=clock, reaper="lazy", store=LeaseStore(path))
    held, _ = first.acquire("orders", 60, lock_delay=30)
    first.manager._write_end(first.manager.get(held.cookie), "on_cancel")  # the end written, then the crash
    first.close()
    second = Landlord(clock=clock, reaper="lazy", store=LeaseStore(path))
    try:
        # the lazy reaper frees the ended claim as this request registers: a cancel, so no lock-delay,
        # and the request is granted in its own answer
        waiter, token = second.acquire("orders", 60, wait=FOREVER, listener=Heard())
        assert token == 2 and second.name_token(waiter.cookie) == 2
    finally:
        second.close()


class FailingStore(LeaseStore):
    """A store whose writes of new leases fail while ``failing`` is set (a full disk)."""

    failing = False

    def put(self, cookie: str, expiration: float, resource: Any, now: float) -> None:
        if self.failing:
            raise OSError("disk full")
        super().put(cookie, expiration, resource, now)


def test_a_request_the_store_cannot_write_leases_nothing_and_queues_nothing(tmp_path: pathlib.Path,
                                                                            clock: FakeClock) -> None:
    store = FailingStore(tmp_path / "leases.db")
    landlord = Landlord(clock=clock, reaper="lazy", store=store)
    try:
        holder, _ = landlord.acquire("orders", 60)
        store.failing = True
        with pytest.raises(OSError, match="disk full"):
            landlord.acquire("orders", 60, wait=FOREVER)
        with pytest.raises(OSError, match="disk full"):
            landlord.acquire("other", 60)
        assert [(view.name, len(view.holders), view.waiters) for view in landlord.names()] == [("orders", 1, ())]
        assert len(landlord) == 1
        store.failing = False
        assert landlord.acquire("other", 60)[1] == 3  # token 2 went with the failed grant: never reused
    finally:
        landlord.close()


def test_one_remote_client_cannot_fill_the_table_and_its_ended_leases_count_no_more(close_later: list) -> None:
    landlord = Landlord()
    close_later.append(landlord)
    landlord._claims.max_per_client = 50  # MAX_PER_CLIENT (1,000) in small
    canary = landlord.new_lease("canary", 30)
    with ServingDaemon() as daemon, Pyro5.api.Proxy(daemon.register(landlord)) as stranger:
        leases = [stranger.acquire(f"hoard-{i}", 30)[0] for i in range(50)]
        with pytest.raises(LeaseDeniedError, match="the most one client may have"):
            stranger.acquire("one more", 30)
        assert canary.renew(30) > 0
        assert landlord.acquire("in-process", 30)[1] is not None  # the server's own are not counted
        leases[0].cancel()
        assert stranger.acquire("one more", 30)[1] is not None  # an ended lease frees its count
    assert len(landlord) == 52
