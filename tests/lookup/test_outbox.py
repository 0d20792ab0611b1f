"""Outbox alone: per-listener queues, deadlines, slots and giving up, decided on given times (no threads)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from lookup.service.outbox import DELIVERED, GAVE_UP, RETRY, Attempt, MailLimits, Outbox


def keys(attempts: list[Attempt]) -> list[Any]:
    return [attempt.key for attempt in attempts]


def prove(outbox: Outbox, key: str, now: float = 0.0) -> None:
    """Deliver one event to ``key`` so that it counts as live."""
    outbox.post(key, f"PYRO:{key}@h:1", "hello", now)
    assert key in keys(outbox.take(now))
    assert outbox.report(key, True, now) == DELIVERED


def test_one_listener_gets_its_events_one_at_a_time_in_order() -> None:
    outbox = Outbox()
    for number in range(1, 4):
        outbox.post("a", "PYRO:a@h:1", number, 0.0)
    delivered = []
    for _ in range(3):
        [attempt] = outbox.take(0.0)
        assert outbox.take(0.0) == []  # its next waits for this one
        delivered.append(attempt.event)
        outbox.report("a", True, 0.0)
    assert delivered == [1, 2, 3] and outbox.idle()


def test_dead_listeners_leave_slots_for_a_live_one_however_many_they_are() -> None:
    outbox = Outbox(MailLimits(in_flight=4, unproven=3))
    prove(outbox, "live")
    for number in range(300):
        outbox.post(f"dead{number}", f"PYRO:dead{number}@h:1", "e1", 1.0)
    outbox.post("live", "PYRO:live@h:1", "e1", 1.0)
    assert keys(outbox.take(1.0)) == ["live", "dead0", "dead1", "dead2"]  # the live one first
    for number in range(2, 5):  # the dead attempts never come back; the live one is never held up
        outbox.report("live", True, 1.0)
        outbox.post("live", "PYRO:live@h:1", f"e{number}", 1.0)
        assert keys(outbox.take(1.0)) == ["live"]
    assert outbox.out() == 4


def test_a_new_listener_goes_before_the_retries_of_failing_ones() -> None:
    outbox = Outbox(MailLimits(in_flight=2, unproven=2, retry_delays=(1.0, 1.0)))
    for number in range(4):
        outbox.post(f"dead{number}", f"PYRO:dead{number}@h:1", "e", 0.0)
    for _ in range(2):
        for attempt in outbox.take(0.0):
            outbox.report(attempt.key, False, 0.0)
    assert keys(outbox.take(1.0)) == ["dead0", "dead1"]  # all four due again; dead2 and dead3 wait
    outbox.post("new", "PYRO:new@h:1", "e", 1.0)
    outbox.report("dead0", False, 1.0)
    assert keys(outbox.take(1.0)) == ["new"]  # not dead2, in line before it


def test_less_room_keeps_the_same_share_for_live_listeners() -> None:
    outbox = Outbox()  # 512 at once, 384 of them for the unproven
    prove(outbox, "live")
    for number in range(20):
        outbox.post(f"dead{number}", f"PYRO:dead{number}@h:1", "e", 1.0)
    assert len(outbox.take(1.0, room=8)) == 6  # 8 threads: 6 for the unproven, 2 kept
    outbox.post("live", "PYRO:live@h:1", "e", 1.0)
    assert keys(outbox.take(1.0, room=8)) == ["live"]
    assert keys(outbox.take(1.0, room=8)) == []
    small = Outbox()
    small.post("one", "PYRO:one@h:1", "e", 0.0)
    small.post("two", "PYRO:two@h:1", "e", 0.0)
    assert keys(small.take(0.0, room=1)) == ["one"]  # one thread: the unproven may use it


def test_a_proven_listener_that_fails_competes_with_the_unproven_again() -> None:
    outbox = Outbox(MailLimits(in_flight=2, unproven=1))
    prove(outbox, "flaky")
    outbox.post("dead", "PYRO:dead@h:1", "e", 1.0)
    assert keys(outbox.take(1.0)) == ["dead"]
    outbox.post("flaky", "PYRO:flaky@h:1", "e", 1.0)
    assert keys(outbox.take(1.0)) == ["flaky"]
    assert outbox.report("flaky", False, 1.0) == RETRY
    assert outbox.take(2.0) == []  # its retry is due, but the one unproven slot is the dead one's
    outbox.report("dead", False, 2.0)
    assert keys(outbox.take(2.0)) == ["flaky"]


def test_a_retry_pause_holds_no_slot_and_ends_on_time() -> None:
    outbox = Outbox(MailLimits(in_flight=1, unproven=1, retry_delays=(1.0, 5.0)))
    outbox.post("gone", "PYRO:gone@h:1", "e", 0.0)
    outbox.post("other", "PYRO:other@h:1", "e", 0.0)
    assert keys(outbox.take(0.0)) == ["gone"]
    assert outbox.report("gone", False, 0.0) == RETRY and outbox.next_due() == 1.0
    assert keys(outbox.take(0.5)) == ["other"]  # the slot is free during the pause
    outbox.report("other", True, 0.5)
    assert outbox.take(0.9) == []
    assert keys(outbox.take(1.0)) == ["gone"]
    assert outbox.report("gone", False, 1.0) == RETRY and outbox.next_due() == 6.0


def test_after_its_last_retry_a_listener_is_given_up_once_and_later_mail_to_it_ignored() -> None:
    outbox = Outbox(MailLimits(retry_delays=(1.0,)))
    outbox.post("gone", "PYRO:gone@h:1", "e1", 0.0)
    outbox.post("gone", "PYRO:gone@h:1", "e2", 0.0)
    outbox.take(0.0)
    assert outbox.report("gone", False, 0.0) == RETRY
    outbox.take(1.0)
    assert outbox.report("gone", False, 1.0) == GAVE_UP
    assert outbox.drain_dropped() == ["gone", "gone"] and outbox.idle()
    outbox.post("gone", "PYRO:gone@h:1", "e3", 2.0)
    assert outbox.take(2.0) == [] and outbox.pending() == 0
    outbox.forget("gone")  # its registration ended: the key may be posted to again
    outbox.post("gone", "PYRO:gone@h:1", "e4", 3.0)
    assert [attempt.event for attempt in outbox.take(3.0)] == ["e4"]


def test_a_success_between_failures_starts_the_count_again() -> None:
    outbox = Outbox(MailLimits(retry_delays=(1.0,)))
    for number in range(4):
        outbox.post("flaky", "PYRO:flaky@h:1", number, 0.0)
    now = 0.0
    for delivered in (False, True, False, True, False):  # never two failures in a row
        outbox.take(now)
        assert outbox.report("flaky", delivered, now) in (DELIVERED, RETRY)
        now += 1.0
    assert outbox.pending() == 2


def test_a_full_queue_drops_its_oldest_waiting_event_never_the_one_being_delivered() -> None:
    outbox = Outbox(MailLimits(queue=3))
    for number in range(1, 4):
        outbox.post("slow", "PYRO:slow@h:1", number, 0.0)
    [attempt] = outbox.take(0.0)
    outbox.post("slow", "PYRO:slow@h:1", 4, 0.0)  # 2 goes: 1 is out
    outbox.post("slow", "PYRO:slow@h:1", 5, 0.0)  # 3 goes
    assert attempt.event == 1 and outbox.drain_dropped() == ["slow", "slow"]
    outbox.report("slow", True, 0.0)
    delivered = [1]
    while not outbox.idle():
        for attempt in outbox.take(0.0):
            delivered.append(attempt.event)
            outbox.report(attempt.key, True, 0.0)
    assert delivered == [1, 4, 5]


def test_a_queue_of_one_keeps_the_event_being_delivered_and_drops_the_newest() -> None:
    outbox = Outbox(MailLimits(queue=1))
    outbox.post("slow", "PYRO:slow@h:1", 1, 0.0)
    outbox.take(0.0)
    outbox.post("slow", "PYRO:slow@h:1", 2, 0.0)
    assert outbox.drain_dropped() == ["slow"] and outbox.pending() == 1


def test_an_event_past_its_deadline_is_dropped_and_no_attempt_outlives_its_deadline() -> None:
    outbox = Outbox(MailLimits(deadline=10.0, attempt_timeout=4.0, retry_delays=(3.0, 3.0, 3.0)))
    outbox.post("late", "PYRO:late@h:1", "old", 0.0)
    [first] = outbox.take(0.0)
    assert first.timeout == 4.0
    outbox.report("late", False, 4.0)
    [second] = outbox.take(7.0)
    assert second.timeout == pytest.approx(3.0)  # what is left of its 10 s
    outbox.post("late", "PYRO:late@h:1", "new", 8.0)
    outbox.report("late", False, 10.0)
    [third] = outbox.take(13.0)
    assert third.event == "new" and outbox.drain_dropped() == ["late"]


def test_forget_drops_the_mail_and_reports_whether_the_listener_is_still_served() -> None:
    outbox = Outbox()
    outbox.post("one", "PYRO:shared@h:1", "e", 0.0)
    outbox.post("two", "PYRO:shared@h:1", "e", 0.0)
    outbox.take(0.0)
    assert outbox.forget("one") == "PYRO:shared@h:1" and outbox.serves("PYRO:shared@h:1")
    assert outbox.report("one", True, 0.0) == DELIVERED  # its attempt comes back after: ignored
    assert outbox.forget("two") == "PYRO:shared@h:1" and not outbox.serves("PYRO:shared@h:1")
    assert not outbox.idle()  # until its attempt is back
    assert outbox.report("two", False, 0.0) == RETRY and outbox.drain_dropped() == []
    assert outbox.forget("never") is None and outbox.idle() and outbox.next_due() == math.inf


@pytest.mark.parametrize("limits, error", [
    (dict(queue=0), ValueError), (dict(queue=2.0), TypeError), (dict(in_flight=True), TypeError),
    (dict(in_flight=4, unproven=5), ValueError), (dict(unproven=0), ValueError),
    (dict(deadline=0), ValueError), (dict(deadline=math.inf), ValueError), (dict(attempt_timeout=-1), ValueError),
    (dict(attempt_timeout=math.nan), ValueError), (dict(deadline="30"), TypeError),
    (dict(retry_delays=[0.1]), TypeError), (dict(retry_delays=(0.1, -1.0)), ValueError),
])
def test_bad_limits_are_refused(limits: dict, error: type) -> None:
    with pytest.raises(error):
        MailLimits(**limits)
