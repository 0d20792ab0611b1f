"""Named leases (issue 25): the clock-free NameTable, on given times; a property over any sequence of operations."""

from __future__ import annotations

import math

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from landlord import LeaseDeniedError
from landlord.grantor import names
from landlord.grantor.names import Changes, Grant, NameTable, NameView, Queued, Refused, Waiter


def granted(table: NameTable, name: str, cookie: str, now: float = 0.0, **options: object) -> Grant:
    outcome = table.request(name, cookie, now, **options)  # type: ignore[arg-type]
    assert isinstance(outcome, Grant), outcome
    return outcome


def test_a_free_name_is_granted_with_a_token_one_above_the_high_water() -> None:
    table = NameTable(high_water=41)
    assert table.request("db", "a", 0.0) == Grant("db", "a", 42)
    assert table.high_water == 42
    assert table.view() == (NameView("db", 1, (Grant("db", "a", 42),), (), None),)


def test_a_held_name_is_refused_to_one_that_does_not_wait() -> None:
    table = NameTable()
    granted(table, "db", "a")
    refused = table.request("db", "b", 1.0)
    assert isinstance(refused, Refused) and "'db' is held (1 of 1)" in refused.reason
    assert table.request("db", "c", 1.0, wait_until=1.0) == Refused("db", refused.reason)  # a deadline passed
    assert [view.holders for view in table.view()] == [(Grant("db", "a", 1),)]
    assert table.view()[0].waiters == ()


def test_a_semaphore_grants_up_to_its_limit() -> None:
    table = NameTable()
    tokens = [granted(table, "pool", cookie, limit=3).token for cookie in "abc"]
    assert tokens == [1, 2, 3]
    assert isinstance(table.request("pool", "d", 0.0, limit=3), Refused)


def test_a_name_keeps_the_limit_of_its_first_request() -> None:
    table = NameTable()
    granted(table, "pool", "a", limit=3)
    with pytest.raises(ValueError, match="'pool' has limit 3, not 1"):
        table.request("pool", "b", 0.0)
    assert [len(view.holders) for view in table.view()] == [1]


def test_a_release_grants_the_waiters_in_the_order_they_came() -> None:
    table = NameTable()
    granted(table, "db", "a")
    assert table.request("db", "b", 0.0, wait_until=10.0) == Queued(Waiter("db", "b", 10.0), 1)
    assert table.request("db", "c", 0.0, wait_until=math.inf) == Queued(Waiter("db", "c", math.inf), 2)
    assert table.release("a", 1.0) == Changes(granted=(Grant("db", "b", 2),))
    assert table.release("b", 2.0) == Changes(granted=(Grant("db", "c", 3),))
    assert table.release("c", 3.0) == Changes()
    assert table.view() == ()  # an idle name is forgotten


def test_a_newcomer_does_not_go_before_a_waiter() -> None:
    table = NameTable()
    granted(table, "db", "a", lock_delay=5.0)
    table.request("db", "b", 0.0, wait_until=100.0)
    table.expire("a", 1.0)  # closed until 6
    # at 7 the name could be granted, but b was first: c queues behind it, until advance grants b
    assert table.request("db", "c", 7.0, wait_until=100.0) == Queued(Waiter("db", "c", 100.0), 2)
    assert table.advance(7.0) == Changes(granted=(Grant("db", "b", 2),))


def test_an_expiry_closes_the_name_for_the_lock_delay_and_a_release_does_not() -> None:
    table = NameTable()
    granted(table, "db", "a", lock_delay=5.0)
    table.request("db", "b", 0.0, wait_until=math.inf)
    assert table.expire("a", 10.0) == Changes()
    assert table.view()[0].closed_until == 15.0
    assert table.next_deadline() == 15.0
    assert table.advance(14.999) == Changes()
    refused = table.request("db", "c", 14.0)
    assert isinstance(refused, Refused) and "lock-delay" in refused.reason
    assert table.advance(15.0) == Changes(granted=(Grant("db", "b", 2),))
    assert table.view()[0].closed_until is None and table.next_deadline() is None
    table.request("db", "c", 16.0, wait_until=math.inf, lock_delay=5.0)
    assert table.release("b", 16.0) == Changes(granted=(Grant("db", "c", 3),))  # a release frees at once


def test_a_name_closed_by_a_lock_delay_is_kept_with_no_holder_then_forgotten() -> None:
    table = NameTable()
    granted(table, "db", "a", lock_delay=2.0)
    table.expire("a", 0.0)
    assert [view.closed_until for view in table.view()] == [2.0]
    assert isinstance(table.request("db", "b", 1.0), Refused)
    assert table.advance(2.0) == Changes()
    assert table.view() == ()
    assert granted(table, "db", "b", 2.0).token == 2


def test_the_latest_lock_delay_of_a_semaphore_holds_the_name() -> None:
    table = NameTable()
    granted(table, "pool", "a", limit=2, lock_delay=10.0)
    granted(table, "pool", "b", limit=2, lock_delay=1.0)
    table.expire("a", 0.0)
    table.expire("b", 2.0)  # closes until 3, earlier than a's 10: the name stays closed until 10
    assert table.view()[0].closed_until == 10.0
    assert isinstance(table.request("pool", "c", 5.0, limit=2), Refused)


def test_a_waiter_times_out_at_its_deadline() -> None:
    table = NameTable()
    granted(table, "db", "a")
    table.request("db", "b", 0.0, wait_until=5.0)
    table.request("db", "c", 0.0, wait_until=3.0)
    assert table.next_deadline() == 3.0
    assert table.advance(3.0) == Changes(timed_out=(Waiter("db", "c", 3.0),))
    assert table.next_deadline() == 5.0
    assert table.release("a", 6.0) == Changes(timed_out=(Waiter("db", "b", 5.0),))  # not granted: it stopped waiting
    assert table.view() == () and table.next_deadline() is None


def test_timeouts_are_taken_before_a_name_reopens_to_grant() -> None:
    table = NameTable()
    granted(table, "db", "a", lock_delay=1.0)
    table.request("db", "b", 0.0, wait_until=5.0)
    table.request("db", "c", 0.0, wait_until=20.0)
    table.expire("a", 0.0)  # reopens at 1; advance is called late, at 6: b has stopped waiting
    assert table.advance(6.0) == Changes(granted=(Grant("db", "c", 2),), timed_out=(Waiter("db", "b", 5.0),))


def test_a_waiter_leaves_and_its_timer_is_dropped() -> None:
    table = NameTable()
    granted(table, "db", "a")
    table.request("db", "b", 0.0, wait_until=5.0)
    assert table.leave("b") == Waiter("db", "b", 5.0)
    assert table.next_deadline() is None
    with pytest.raises(ValueError, match="holds 'db', it does not wait"):
        table.leave("a")
    with pytest.raises(ValueError, match="neither holds nor waits"):
        table.leave("b")


def test_a_waiters_lease_ending_takes_it_out_of_the_queue() -> None:
    table = NameTable()
    granted(table, "db", "a")
    table.request("db", "b", 0.0, wait_until=math.inf)
    table.request("db", "c", 0.0, wait_until=math.inf)
    assert table.expire("b", 1.0) == Changes()  # a waiter's expiry closes nothing
    assert table.release("a", 1.0) == Changes(granted=(Grant("db", "c", 2),))


def test_tokens_never_go_back_when_a_name_is_forgotten_and_comes_back() -> None:
    table = NameTable()
    first = granted(table, "db", "a")
    table.release("a", 0.0)
    granted(table, "other", "b")
    assert granted(table, "db", "c").token > first.token


def test_unknown_cookies_are_refused() -> None:
    table = NameTable()
    for end in (table.release, table.expire):
        with pytest.raises(ValueError, match="neither holds nor waits"):
            end("nobody", 0.0)
    with pytest.raises(TypeError, match="cookie must be a str"):
        table.release(5, 0.0)  # type: ignore[arg-type]


def test_a_cookie_is_in_one_place_only() -> None:
    table = NameTable()
    granted(table, "db", "a")
    with pytest.raises(ValueError, match="already holds or waits for 'db'"):
        table.request("other", "a", 0.0)


@pytest.mark.parametrize(("arguments", "error", "match"), [
    ({"name": ""}, ValueError, "1 to 256 printable"),
    ({"name": "x" * (names.MAX_NAME_LENGTH + 1)}, ValueError, "1 to 256 printable"),
    ({"name": "a\nb"}, ValueError, "printable"),
    ({"name": b"db"}, TypeError, "name must be a str"),
    ({"cookie": ""}, ValueError, "cookie is empty"),
    ({"cookie": None}, TypeError, "cookie must be a str"),
    ({"limit": 0}, ValueError, "limit must be 1"),
    ({"limit": 10_001}, ValueError, "limit must be 1"),
    ({"limit": 2.0}, TypeError, "limit must be an int"),
    ({"limit": True}, TypeError, "limit must be an int"),
    ({"now": math.nan}, ValueError, "now must be finite"),
    ({"now": "0"}, TypeError, "now must be a number"),
    ({"wait_until": math.nan}, ValueError, "wait_until is NaN"),
    ({"wait_until": "soon"}, TypeError, "wait_until must be a number"),
    ({"lock_delay": -1.0}, ValueError, "lock_delay must be 0"),
    ({"lock_delay": names.MAX_LOCK_DELAY + 1}, ValueError, "lock_delay must be 0"),
    ({"lock_delay": math.inf}, ValueError, "lock_delay must be finite"),
])
def test_bad_requests_are_refused_and_change_nothing(arguments: dict[str, object], error: type[Exception],
                                                     match: str) -> None:
    table = NameTable()
    granted(table, "db", "a")
    table.request("db", "w", 0.0, wait_until=9.0)
    before = (table.view(), table.high_water, table.next_deadline())
    request: dict[str, object] = {"name": "db", "cookie": "b", "now": 0.0, "wait_until": 5.0, **arguments}
    with pytest.raises(error, match=match):
        table.request(request.pop("name"), request.pop("cookie"), request.pop("now"), **request)  # type: ignore[arg-type]
    assert (table.view(), table.high_water, table.next_deadline()) == before


@pytest.mark.parametrize(("high_water", "error"), [(-1, ValueError), (1.0, TypeError), (False, TypeError)])
def test_a_bad_high_water_is_refused(high_water: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="high_water"):
        NameTable(high_water)  # type: ignore[arg-type]


def test_the_table_holds_at_most_max_names() -> None:
    table = NameTable(max_names=2)
    granted(table, "a", "1")
    granted(table, "b", "2")
    with pytest.raises(LeaseDeniedError, match="too many names"):
        table.request("c", "3", 0.0)
    assert [view.name for view in table.view()] == ["a", "b"] and table.high_water == 2
    table.release("1", 0.0)
    granted(table, "c", "3")


def test_a_name_holds_at_most_max_waiters() -> None:
    table = NameTable(max_waiters=2)
    granted(table, "db", "a")
    table.request("db", "b", 0.0, wait_until=5.0)
    table.request("db", "c", 0.0, wait_until=5.0)
    with pytest.raises(LeaseDeniedError, match="too many waiters for 'db'"):
        table.request("db", "d", 0.0, wait_until=5.0)
    assert len(table.view()[0].waiters) == 2
    assert isinstance(table.request("db", "d", 0.0), Refused)  # one that does not wait is refused as ever


def test_timers_of_waiters_that_left_do_not_pile_up() -> None:
    table = NameTable()
    granted(table, "db", "a")
    for number in range(1_000):
        table.request("db", f"w{number}", 0.0, wait_until=100.0 + number)
        table.leave(f"w{number}")
    assert len(table._timers) < 100  # rebuilt from the live ones as they pile up
    assert table.next_deadline() is None


# -- the property: any sequence of operations ------------------------------------------------

NAMES = ("a", "b")
LIMITS = {"a": 1, "b": 2}  # each name's one limit


class NameTableMachine(RuleBasedStateMachine):
    """Requests, releases, expiries, leaves and advances in any order, checked against what was promised.

    The model keeps, per name, the last token granted, the order waiters queued in and the end of
    the latest lock-delay (from each lease's own delay); the table must never go against them.
    """

    def __init__(self) -> None:
        super().__init__()
        self.table = NameTable(high_water=7, max_waiters=4)
        self.now = 0.0
        self.serial = 0
        self.last_token: dict[str, int] = {}
        self.queue: dict[str, list[str]] = {name: [] for name in NAMES}  # cookies in the order they queued
        self.closed_until: dict[str, float] = {}
        self.lock_delay: dict[str, float] = {}  # by cookie
        self.deadline: dict[str, float] = {}  # by cookie, of a waiter
        self.holders: set[str] = set()

    def heard(self, changes: Changes) -> None:
        """Every grant is the first live waiter of its name, past any lock-delay, with a higher token."""
        for waiter in changes.timed_out:
            assert waiter.deadline <= self.now
            self.queue[waiter.name].remove(waiter.cookie)
        for grant in changes.granted:
            assert self.queue[grant.name][0] == grant.cookie, "waiters granted out of order"
            assert self.now < self.deadline[grant.cookie], "granted after its wait timed out"
            self.queue[grant.name].pop(0)
            self.check_grant(grant)

    def check_grant(self, grant: Grant) -> None:
        assert grant.token > self.last_token.get(grant.name, 7), "a token did not increase"
        assert not self.closed(grant.name), "granted during a lock-delay"
        self.last_token[grant.name] = grant.token
        self.holders.add(grant.cookie)

    def closed(self, name: str) -> bool:
        return self.now < self.closed_until.get(name, -math.inf)

    @rule(name=st.sampled_from(NAMES), wait=st.none() | st.floats(0.5, 8) | st.just(math.inf),
          lock_delay=st.sampled_from([0.0, 1.0, 3.0]))
    def request(self, name: str, wait: float | None, lock_delay: float) -> None:
        self.serial += 1
        cookie = f"{name}{self.serial}"
        self.lock_delay[cookie] = lock_delay
        deadline = None if wait is None else self.now + wait
        try:
            outcome = self.table.request(name, cookie, self.now, limit=LIMITS[name], wait_until=deadline,
                                         lock_delay=lock_delay)
        except LeaseDeniedError:
            assert len(self.queue[name]) == 4  # the only bound this machine can reach
            return
        full = len([c for c in self.holders if c[0] == name]) == LIMITS[name]
        if isinstance(outcome, Grant):
            assert not self.queue[name], "a newcomer went before a waiter"
            self.check_grant(outcome)
        elif isinstance(outcome, Queued):
            assert deadline is not None and (full or self.queue[name] or self.closed(name))
            self.queue[name].append(cookie)
            self.deadline[cookie] = deadline
            assert outcome.position == len(self.queue[name])
        else:
            assert deadline is None and (full or self.queue[name] or self.closed(name)), outcome

    @precondition(lambda self: self.holders or any(self.queue.values()))
    @rule(data=st.data(), expired=st.booleans())
    def end(self, data: st.DataObject, expired: bool) -> None:
        cookie = data.draw(st.sampled_from(sorted(self.holders | {c for q in self.queue.values() for c in q})))
        name = cookie[0]
        if cookie in self.holders:
            self.holders.remove(cookie)
            if expired and self.lock_delay[cookie]:
                until = self.now + self.lock_delay[cookie]
                self.closed_until[name] = max(until, self.closed_until.get(name, until))
        else:
            self.queue[name].remove(cookie)
        self.heard((self.table.expire if expired else self.table.release)(cookie, self.now))

    @precondition(lambda self: any(self.queue.values()))
    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        cookie = data.draw(st.sampled_from(sorted(c for q in self.queue.values() for c in q)))
        assert self.table.leave(cookie).cookie == cookie
        self.queue[cookie[0]].remove(cookie)

    @rule(step=st.floats(0, 6), owner_calls=st.booleans())
    def tick(self, step: float, owner_calls: bool) -> None:
        """Time passes; the owner calls advance then, or is late (requests must be fair all the same)."""
        target = self.now + step
        due = self.table.next_deadline()
        if due is None or due > target:
            assert self.table.advance(target) == Changes(), "something happened before the next deadline"
        self.now = target
        if owner_calls:
            self.advanced()

    def advanced(self) -> None:
        self.heard(self.table.advance(self.now))
        due = self.table.next_deadline()
        assert due is None or due > self.now, "left something due behind"
        for view in self.table.view():  # after advance, nobody waits for a place that is free
            if not self.closed(view.name) and len(view.holders) < view.limit:
                assert not view.waiters, f"{view.name} has a free place and waiters"

    @invariant()
    def at_most_limit_holders_and_the_model_agrees(self) -> None:
        views = {view.name: view for view in self.table.view()}
        for name in NAMES:
            view = views.get(name)
            holders = {grant.cookie for grant in view.holders} if view else set()
            assert len(holders) <= LIMITS[name]
            assert holders == {c for c in self.holders if c[0] == name}
            assert ([w.cookie for w in view.waiters] if view else []) == self.queue[name]
        assert self.table.high_water == max(self.last_token.values(), default=7)


TestNameTableMachine = NameTableMachine.TestCase
TestNameTableMachine.settings = settings(max_examples=300, stateful_step_count=40, deadline=None)
