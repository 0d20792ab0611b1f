"""MergedView: one view of several lookup services' listings, pure, on a fake clock; Teller tells of it."""

from __future__ import annotations

import logging
import math
import threading

import pytest

from landlord import FakeClock
from lookup import Comment, Expiry, Name, ServiceItem
from lookup.client.view import Change, MergedView, Teller

A, B, C = "PYRO:a@127.0.0.1:1", "PYRO:b@127.0.0.1:2", "PYRO:c@127.0.0.1:3"


def item(service_id: str, *comments: str) -> ServiceItem:
    return ServiceItem(service_id, f"PYRO:{service_id.replace(' ', '_')}@127.0.0.1:9", ("examples.Quoter",),
                       [Name(service_id), *(Comment(c) for c in comments)])


def told(changes: list[Change]) -> list[tuple[str, str, int]]:
    """(kind, service id, number of attributes) of each change."""
    return [(kind, str(changed.service_id), len(changed.attributes)) for kind, changed in changes]


@pytest.fixture
def view(clock: FakeClock) -> MergedView:
    return MergedView([A, B, C], orphan_timeout=30, clock=clock)


def test_a_service_listed_by_several_lookup_services_is_one_item(view: MergedView) -> None:
    for lookup in (A, B, C):
        view.report(lookup, "s1", item("s1"))
    assert told(view.take_changes()) == [("added", "s1", 1)]  # once, not once per lookup service
    assert len(view) == 1 and "s1" in view
    view.report(B, "s1", item("s1", "changed"))
    assert told(view.take_changes()) == [("changed", "s1", 2)]
    view.report(C, "s1", item("s1", "changed"))  # the same change, reported by another
    assert view.take_changes() == []
    view.unlist(A, "s1")
    view.unlist(B, "s1")
    assert view.take_changes() == [] and len(view) == 1  # still listed by C
    view.unlist(C, "s1")
    assert told(view.take_changes()) == [("removed", "s1", 2)] and view.items() == []
    view.unlist(C, "s1")  # not listed: nothing to say
    assert view.take_changes() == []


def test_the_state_last_reported_stays_when_a_lookup_service_with_an_older_copy_remains(view: MergedView) -> None:
    view.report(A, "s1", item("s1"))
    view.report(B, "s1", item("s1", "newer"))
    view.unlist(B, "s1")  # A still lists its older copy: that says nothing about the service's state
    assert [len(i.attributes) for i in view.items()] == [2]
    assert told(view.take_changes()) == [("added", "s1", 1), ("changed", "s1", 2)]


def test_a_snapshot_replaces_a_lookup_services_listing(view: MergedView) -> None:
    view.replace_listing(A, {"s1": item("s1"), "s2": item("s2")})
    view.replace_listing(B, {"s2": item("s2")})
    assert told(view.take_changes()) == [("added", "s1", 1), ("added", "s2", 1)]
    view.replace_listing(A, {"s2": item("s2"), "s3": item("s3", "new")})  # s1 gone, s2 the same, s3 new
    assert told(view.take_changes()) == [("removed", "s1", 1), ("added", "s3", 2)]
    view.replace_listing(A, {})
    assert told(view.take_changes()) == [("removed", "s3", 2)]  # s2 is still listed by B
    assert [i.service_id for i in view.items()] == ["s2"]


def test_a_discarded_item_stays_hidden_until_a_lookup_service_reports_it_anew(view: MergedView) -> None:
    view.report(A, "s1", item("s1"))
    view.report(A, "s2", item("s2"))
    view.take_changes()
    assert view.discard("s1") and not view.discard("s1") and not view.discard("unknown")
    assert told(view.take_changes()) == [("removed", "s1", 1)] and "s1" not in view
    view.report(A, "s2", item("s2", "other news"))  # news of another service: s1 stays hidden
    view.unlist(B, "s1")
    view.replace_listing(B, {"s2": item("s2", "other news")})
    assert "s1" not in view
    view.report(B, "s1", item("s1"))  # an event carrying it: back
    assert "s1" in view
    view.discard("s1")
    view.replace_listing(C, {"s1": item("s1")})  # a fresh snapshot lists it: back
    assert told(view.take_changes()) == [("changed", "s2", 2), ("added", "s1", 1), ("removed", "s1", 1),
                                         ("added", "s1", 1)]


def test_a_service_discarded_and_then_gone_everywhere_is_shown_when_listed_again(view: MergedView) -> None:
    view.replace_listing(A, {"s1": item("s1")})
    view.discard("s1")
    view.replace_listing(A, {})  # gone: nothing left to hold back
    view.unlist(A, "s1")
    view.replace_listing(B, {})
    assert view.take_changes() == [("added", item("s1")), ("removed", item("s1"))]
    view.report(B, "s1", item("s1"))
    assert told(view.take_changes()) == [("added", "s1", 1)]


def test_a_lost_lookup_services_listing_is_kept_for_the_orphan_timeout(view: MergedView, clock: FakeClock) -> None:
    view.replace_listing(A, {"both": item("both"), "only at a": item("only at a")})
    view.replace_listing(B, {"both": item("both")})
    view.take_changes()
    assert view.orphan_deadline(A) == float("inf")
    clock.advance(5)
    view.lost(A)
    assert view.orphan_deadline(A) == 35.0
    clock.advance(10)
    view.lost(A)  # lost still (a renewal's failure after a failed subscription): counted from the first loss
    assert view.orphan_deadline(A) == 35.0 and view.take_changes() == [] and len(view) == 2
    assert not view.forget_orphans(A)  # not yet
    clock.advance(20)
    assert view.forget_orphans(A)
    assert told(view.take_changes()) == [("removed", "only at a", 1)]  # "both" is still at B
    assert view.orphan_deadline(A) == float("inf") and not view.forget_orphans(A)
    view.lost(B)
    view.replace_listing(B, {"both": item("both")})  # back before its deadline: the snapshot decides
    assert view.orphan_deadline(B) == float("inf") and view.take_changes() == []
    assert view.orphan_timeout == 30


def test_the_teller_tells_in_order_and_a_listener_may_call_back(view: MergedView) -> None:
    lock = threading.Condition()
    heard: list[tuple[str, str]] = []

    def listener(kind: str, changed: ServiceItem) -> None:
        heard.append((kind, str(changed.service_id)))
        if kind == "added" and changed.service_id == "dead":
            with lock:  # from inside the listener, as LookupCache.discard does: no deadlock
                view.discard("dead")
            teller.tell()  # another is telling (this thread): left to it, told after this call returns

    teller = Teller(lock, view.take_changes, listener)
    with lock:
        view.report(A, "dead", item("dead"))
        view.report(A, "fine", item("fine"))
    teller.tell()
    assert heard == [("added", "dead"), ("added", "fine"), ("removed", "dead")]
    teller.tell()  # nothing new
    assert len(heard) == 3


def test_a_failing_listener_is_logged_and_the_rest_still_told(view: MergedView,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    lock = threading.Condition()
    heard: list[str] = []

    def listener(kind: str, changed: ServiceItem) -> None:
        heard.append(str(changed.service_id))
        if changed.service_id == "s1":
            raise RuntimeError("the listener's own bug")

    logger = logging.getLogger("test_view.owner")
    teller = Teller(lock, view.take_changes, listener, logger=logger)
    view.report(A, "s1", item("s1"))
    view.report(A, "s2", item("s2"))
    with caplog.at_level(logging.ERROR, logger="test_view.owner"):
        teller.tell()
    assert heard == ["s1", "s2"]
    assert [r.name for r in caplog.records if "listener failed" in r.getMessage()] == ["test_view.owner"]
    Teller(lock, view.take_changes, None).tell()  # no listener: changes are taken, and dropped
    view.report(A, "s3", item("s3"))
    Teller(lock, view.take_changes, None).tell()
    assert view.take_changes() == []


def test_a_lookup_service_discovered_then_discarded_takes_only_what_it_alone_listed(clock: FakeClock) -> None:
    view = MergedView([A], orphan_timeout=30, clock=clock)
    view.add_lookup(B)
    view.report(A, "both", item("both"))
    view.report(B, "both", item("both"))
    view.report(B, "b only", item("b only"))
    assert sorted(str(i.service_id) for i in view.items()) == ["b only", "both"]
    view.take_changes()
    view.add_lookup(B)  # known already: its listing stays
    assert len(view) == 2 and view.take_changes() == []
    view.remove_lookup(B)
    assert told(view.take_changes()) == [("removed", "b only", 1)]
    assert [str(i.service_id) for i in view.items()] == ["both"]
    view.remove_lookup(B)  # gone already: nothing to say
    assert view.take_changes() == []


# -- a lost lookup service's items: kept at most for their registrations' terms -----------------

def shown(view: MergedView) -> list[str]:
    return sorted(str(i.service_id) for i in view.items())


def test_a_lost_lookup_services_items_are_kept_at_most_for_their_registrations_terms(clock: FakeClock) -> None:
    view = MergedView([A, B], orphan_timeout=300, clock=clock)
    view.replace_listing(A, {"short": item("short"), "long": item("long"), "unknown": item("unknown")},
                         {"short": Expiry(1.5, 2.0), "long": Expiry(10.0, 10.0)})
    view.take_changes()
    clock.advance(6)  # "short" renewed at A meanwhile, for 2 s each time: no event says so
    view.lost(A)
    assert view.orphan_deadline(A) == 8.0  # lost at 6: it may have been renewed just before
    clock.advance(1.9)
    assert not view.forget_orphans(A) and len(view) == 3
    clock.advance(0.1)
    assert view.forget_orphans(A)
    assert told(view.take_changes()) == [("removed", "short", 1)]
    assert view.orphan_deadline(A) == 16.0
    clock.advance(8)
    assert view.forget_orphans(A) and shown(view) == ["unknown"]
    assert view.orphan_deadline(A) == 306.0  # not known (a lookup service before expiries): orphan_timeout
    clock.advance(290)
    assert view.forget_orphans(A) and len(view) == 0 and view.orphan_deadline(A) == math.inf


def test_an_orphan_is_kept_to_its_end_as_last_said_when_that_is_later_than_its_term(clock: FakeClock) -> None:
    view = MergedView([A], orphan_timeout=300, clock=clock)
    view.report(A, "renewed for longer", item("renewed for longer"), Expiry(50.0, 20.0))
    clock.advance(5)
    view.lost(A)
    assert view.orphan_deadline(A) == 50.0


def test_an_event_says_when_its_item_ends_and_its_removal_forgets_that(clock: FakeClock) -> None:
    view = MergedView([A], orphan_timeout=300, clock=clock)
    clock.advance(10)
    view.report(A, "s1", item("s1"), Expiry(3.0, 3.0))
    view.report(A, "s2", item("s2"), Expiry(3.0, 3.0))
    view.unlist(A, "s2")
    view.report(A, "s2", item("s2"))  # registered again, by a lookup service that does not say
    view.report(A, "s3", item("s3"), Expiry(math.inf, math.inf))  # FOREVER: bounds nothing
    clock.advance(1)
    view.lost(A)
    assert view.orphan_deadline(A) == 14.0
    clock.advance(3)
    assert view.forget_orphans(A) and shown(view) == ["s2", "s3"]
    assert view.orphan_deadline(A) == 311.0


def test_the_orphan_timeout_caps_how_long_an_orphan_is_kept(clock: FakeClock) -> None:
    view = MergedView([A], orphan_timeout=5, clock=clock)
    view.report(A, "s1", item("s1"), Expiry(60.0, 60.0))
    view.lost(A)
    assert view.orphan_deadline(A) == 5.0
    never = MergedView([A], orphan_timeout=0, clock=clock)  # Jini's way: dropped at once
    never.report(A, "s1", item("s1"), Expiry(60.0, 60.0))
    never.lost(A)
    assert never.forget_orphans(A) and len(never) == 0


def test_a_service_a_live_lookup_service_reports_gone_goes_though_a_lost_one_listed_it(clock: FakeClock) -> None:
    view = MergedView([A, B, C], orphan_timeout=300, clock=clock)
    for lookup in (A, B):  # "gone" and "changed" at A and B, "at c too" at all three
        view.replace_listing(lookup, {"gone": item("gone"), "changed": item("changed"), "at c too": item("at c too")},
                             {"gone": Expiry(2.0, 2.0)})
    view.replace_listing(C, {"at c too": item("at c too")})
    view.take_changes()
    view.lost(A)
    clock.advance(1)  # long before A's copies run out
    view.unlist(B, "gone")  # B is live: its word beats what A last said
    view.unlist(B, "at c too")  # C, live, still lists it
    assert told(view.take_changes()) == [("removed", "gone", 1)]
    view.replace_listing(B, {"at c too": item("at c too")})  # a fresh snapshot says "changed" is gone too
    assert told(view.take_changes()) == [("removed", "changed", 1)] and shown(view) == ["at c too"]
    assert view.orphan_deadline(A) == 300.0  # A's copy of "at c too" is still kept (lost at 0)
    view.replace_listing(A, {"gone": item("gone")})  # A back: its fresh snapshot decides
    assert told(view.take_changes()) == [("added", "gone", 1)] and view.orphan_deadline(A) == math.inf


def test_a_lost_lookup_service_reporting_nothing_new_leaves_the_others_copies_alone(clock: FakeClock) -> None:
    view = MergedView([A, B], orphan_timeout=300, clock=clock)
    view.report(A, "s1", item("s1"), Expiry(2.0, 2.0))
    view.report(B, "s1", item("s1"), Expiry(2.0, 2.0))
    view.lost(A)
    view.lost(B)  # both lost: nobody live says it is gone, so each copy runs out on its own
    view.unlist(A, "s1")  # (a lost lookup service's word is no news of the others)
    assert shown(view) == ["s1"] and view.orphan_deadline(B) == 2.0
    clock.advance(2)
    assert view.forget_orphans(B) and len(view) == 0


def test_an_item_one_live_lookup_service_says_is_gone_and_another_lists_is_disputed(clock: FakeClock) -> None:
    view = MergedView([A, B, C], orphan_timeout=300, clock=clock)
    for lookup in (A, B):
        view.replace_listing(lookup, {"s1": item("s1"), "s2": item("s2")}, {"s1": Expiry(30.0, 30.0)})
    view.take_changes()
    view.unlist(B, "s1")  # A may be dead and not yet known lost: it is asked, and meanwhile its word stands
    assert shown(view) == ["s1", "s2"] and view.doubted(A) and not view.doubted(B) and not view.doubted(C)
    view.settle(A)  # being asked
    assert not view.doubted(A)
    view.lost(A)  # could not be reached: its copy of what a live one said is gone goes at once
    assert view.orphan_deadline(A) == 0.0 and view.forget_orphans(A)
    assert told(view.take_changes()) == [("removed", "s1", 1)] and shown(view) == ["s2"]
    assert view.orphan_deadline(A) == 300.0  # A's copy of "s2" (still at B) is kept: no expiry said, orphan_timeout


def test_a_dispute_ends_when_the_item_is_said_to_be_there_or_another_live_lookup_service_lists_it(
        clock: FakeClock) -> None:
    view = MergedView([A, B, C], orphan_timeout=300, clock=clock)
    for lookup in (A, B):
        view.report(lookup, "s1", item("s1"), Expiry(30.0, 30.0))
    view.unlist(B, "s1")
    view.report(A, "s1", item("s1", "changed"), Expiry(30.0, 30.0))  # A says it is there: no longer disputed
    view.lost(A)
    assert view.orphan_deadline(A) == 30.0
    view.report(B, "s2", item("s2"), Expiry(30.0, 30.0))
    view.report(C, "s2", item("s2"), Expiry(30.0, 30.0))
    view.unlist(C, "s2")  # B, live, lists it
    assert view.doubted(B)
    view.lost(B)  # C said it is gone, and no lookup service that is not lost lists it now
    assert view.orphan_deadline(B) == 0.0
    view.replace_listing(B, {"s2": item("s2")})  # back: its fresh snapshot lists it, no longer disputed
    view.lost(B)
    assert view.orphan_deadline(B) == 300.0  # its expiry not said by the snapshot: orphan_timeout


def test_a_disputed_item_goes_from_every_lost_lookup_service_once_none_live_lists_it(clock: FakeClock) -> None:
    view = MergedView([A, B, C], orphan_timeout=300, clock=clock)
    for lookup in (A, B, C):
        view.report(lookup, "s1", item("s1"), Expiry(30.0, 30.0))
    view.lost(A)  # lost long ago: its copy kept for the term
    view.unlist(C, "s1")  # C says it is gone; B, not known lost, still lists it: B is asked
    assert view.doubted(B) and view.orphan_deadline(A) == 30.0
    clock.advance(1)
    view.lost(B)  # B could not be reached: no live lookup service lists it now, and C said it is gone
    assert view.orphan_deadline(A) == 1.0 and view.orphan_deadline(B) == 1.0
    assert view.forget_orphans(A) and view.forget_orphans(B) and len(view) == 0
