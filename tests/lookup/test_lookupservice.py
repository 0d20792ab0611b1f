"""LookupService: registration, matching lookups, attribute changes, expiry, and events."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import Pyro5.api
import pytest

from landlord import IN_PROCESS_CLIENT, FakeClock, LeaseDurationPolicy, LeaseStore, UnknownLeaseError
from lookup import (
    TRANSITION_MATCH_MATCH,
    TRANSITION_MATCH_NOMATCH,
    TRANSITION_NOMATCH_MATCH,
    Comment,
    Entry,
    EventRegistration,
    Expiry,
    Location,
    Name,
    ServiceEvent,
    ServiceItem,
    ServiceTemplate,
)
from lookup.ownership import NotOwnerError, new_registration_secret, service_id_for
from lookup.registration import ServiceRegistration
from lookup.service.lookupservice import LookupService
from lookup.service.mailer import EventMailer

SERVICE_URI = "PYRO:quoter@127.0.0.1:9999"
ALL = TRANSITION_MATCH_NOMATCH | TRANSITION_NOMATCH_MATCH | TRANSITION_MATCH_MATCH


class Quoter:
    pass


class StockQuoter(Quoter):
    pass


class Printer(Entry):
    color: bool | None = None
    ppm: int | None = None


class Events:
    """An in-process listener: records events, lets a test wait for them."""

    def __init__(self) -> None:
        self.received: list[ServiceEvent] = []
        self._condition = threading.Condition()

    def notify(self, event: ServiceEvent) -> None:
        with self._condition:
            self.received.append(event)
            self._condition.notify_all()

    def wait_for(self, count: int, timeout: float = 10) -> list[ServiceEvent]:
        with self._condition:
            assert self._condition.wait_for(lambda: len(self.received) >= count, timeout), self.received
            return list(self.received)

    def transitions(self) -> list[int]:
        return [event.transition for event in self.received]


@pytest.fixture
def service(clock: FakeClock) -> Iterator[LookupService]:
    lookup = LookupService(policy=LeaseDurationPolicy(maximum=100, default=30), clock=clock, reaper="lazy")
    yield lookup
    lookup.close()


def item(*attributes: Entry, service_id: str | None = None, types: tuple = (StockQuoter, Quoter)) -> ServiceItem:
    return ServiceItem(service_id, SERVICE_URI, types, attributes)


def test_register_assigns_an_id_and_lookup_finds_by_type_and_attribute(service: LookupService) -> None:
    registration = service.register(item(Name("quotes"), Location(floor=3, room="301")), 30)
    assert isinstance(registration, ServiceRegistration) and registration.service_id
    assert 29 < registration.lease.remaining <= 30
    found = service.lookup(ServiceTemplate(types=[Quoter], attributes=[Location(floor=3)]))
    assert found == SERVICE_URI  # in-process: the service as registered
    assert service.lookup(ServiceTemplate(types=["no.such.Type"])) is None
    assert service.lookup(ServiceTemplate(attributes=[Location(floor=4)])) is None
    assert service.lookup(ServiceTemplate(service_id=registration.service_id)) is not None


def test_lookup_all_counts_every_match_and_returns_at_most_max(service: LookupService) -> None:
    for i in range(5):
        service.register(item(Name(f"q{i}")), 30)
    service.register(item(Name("other"), types=("other.Type",)), 30)
    matches = service.lookup_all(ServiceTemplate(types=[Quoter]), 3)
    assert matches.total == 5 and len(matches.items) == 3
    assert all(found.attributes[0].name.startswith("q") for found in matches.items)
    assert service.lookup_all(ServiceTemplate(), 100).total == 6


def test_registering_again_under_an_id_replaces_item_and_lease(service: LookupService) -> None:
    first = service.register(item(Name("v1")), 30)
    second = service.register(item(Name("v2"), service_id=first.service_id), 50, first.lease.cookie)
    assert second.service_id == first.service_id and second.secret is None  # the registrant has the secret
    matches = service.lookup_all(ServiceTemplate(), 10)
    assert matches.total == 1 and matches.items[0].attributes == (Name("v2"),)
    with pytest.raises(UnknownLeaseError):
        first.lease.renew(10)  # the old lease went with the old item
    assert second.lease.renew(10) == 10
    assert first.secret is not None and service_id_for(first.secret) == first.service_id
    third = service.register(item(Name("v3"), service_id=first.service_id), 50, first.secret)  # the secret too
    assert service.lookup_all(ServiceTemplate(), 10).items[0].attributes == (Name("v3"),)
    with pytest.raises(UnknownLeaseError):
        second.lease.renew(10)
    assert third.lease.renew(10) == 10


# -- who may register an id (lookup.ownership) ------------------------------------------------

def snapshot(service: LookupService) -> Any:
    """Everything a registration attempt could change: the records, their leases, and the lease table."""
    return (sorted((sid, repr(r.item), r.cookie, r.leased and r.leased.expiration)
                   for sid, r in service.registry.records.items()), len(service.manager))


@pytest.mark.parametrize("id_kind", ["assigned", "chosen"])
def test_a_stranger_cannot_take_a_held_id_and_changes_nothing(service: LookupService, id_kind: str) -> None:
    chosen = id_kind == "chosen"
    owner = service.register(item(Name("owner"), service_id="my-quoter" if chosen else None), 30)
    other = service.register(item(Name("other")), 30)
    watcher = Events()
    service.notify(ServiceTemplate(), ALL, watcher, None, 30)
    before = snapshot(service)
    for proof in (None, "x" * 22, owner.lease.cookie[:-1], other.lease.cookie, other.secret, "s" * 200):
        with pytest.raises(NotOwnerError, match=owner.service_id):
            service.register(ServiceItem(owner.service_id, "PYRO:stranger@127.0.0.1:1", [Quoter]), 30, proof)
    assert snapshot(service) == before and watcher.received == []  # no lease, no change, no event
    assert service.lookup(ServiceTemplate(service_id=owner.service_id)) == SERVICE_URI
    assert owner.lease.renew(30) == 30


def test_after_its_lease_ends_only_the_secret_takes_an_assigned_id_back(clock: FakeClock,
                                                                        service: LookupService) -> None:
    owner = service.register(item(Name("owner")), 10)
    clock.advance(11)  # a partition outlasted the lease
    assert service.lookup(ServiceTemplate(service_id=owner.service_id)) is None
    for proof in (None, owner.lease.cookie, "x" * 22):  # a dead lease's cookie proves nothing
        with pytest.raises(NotOwnerError):
            service.register(ServiceItem(owner.service_id, "PYRO:stranger@127.0.0.1:1", [Quoter]), 30, proof)
    assert service.lookup(ServiceTemplate(service_id=owner.service_id)) is None
    back = service.register(item(Name("back"), service_id=owner.service_id), 30, owner.secret)
    assert back.service_id == owner.service_id
    back.lease.cancel()  # cancelled, the same
    with pytest.raises(NotOwnerError):
        service.register(ServiceItem(owner.service_id, "PYRO:stranger@127.0.0.1:1", [Quoter]), 30)
    assert service.register(item(service_id=owner.service_id), 30, owner.secret).service_id == owner.service_id


def test_an_id_chosen_without_a_secret_is_first_come_once_its_lease_ends(clock: FakeClock,
                                                                         service: LookupService) -> None:
    service.register(item(Name("first"), service_id="my-quoter"), 10)
    with pytest.raises(NotOwnerError):
        service.register(item(Name("second"), service_id="my-quoter"), 10)
    clock.advance(11)
    service.register(item(Name("second"), service_id="my-quoter"), 10)  # the documented limit of a chosen id
    assert service.lookup_all(ServiceTemplate(service_id="my-quoter"), 10).items[0].attributes == (Name("second"),)


def test_an_id_chosen_by_its_secret_is_the_secrets_alone(service: LookupService) -> None:
    secret = new_registration_secret()
    with pytest.raises(NotOwnerError):  # never registered, but its form says it needs its secret
        service.register(item(service_id=service_id_for(secret)), 30)
    registration = service.register(item(service_id=service_id_for(secret)), 30, secret)
    assert registration.service_id == service_id_for(secret) and registration.secret is None


def test_a_registration_in_its_grace_still_holds_its_id(clock: FakeClock) -> None:
    lookup = LookupService(policy=LeaseDurationPolicy(maximum=100, grace=5), clock=clock, reaper="lazy")
    try:
        owner = lookup.register(item(Name("owner"), service_id="my-quoter"), 10)
        clock.advance(11)  # its term is over, its grace is not: its renewal would revive it
        with pytest.raises(NotOwnerError):
            lookup.register(item(Name("stranger"), service_id="my-quoter"), 10)
        assert owner.lease.renew(10) == 10
        assert lookup.lookup_all(ServiceTemplate(service_id="my-quoter"), 1).items[0].attributes == (Name("owner"),)
    finally:
        lookup.close()


@pytest.mark.parametrize("proof, service_id, error", [
    (5, "my-quoter", TypeError), ("", "my-quoter", ValueError), ("x" * 257, "my-quoter", ValueError),
    ("s" * 22, None, ValueError),  # a proof is of an id
])
def test_a_bad_proof_is_refused_and_changes_nothing(service: LookupService, proof: Any, service_id: str | None,
                                                    error: type[Exception]) -> None:
    service.register(item(Name("stays")), 30)
    before = snapshot(service)
    with pytest.raises(error, match="proof"):
        service.register(item(service_id=service_id), 30, proof)
    assert snapshot(service) == before


@pytest.mark.parametrize("reaper", ["lazy", "polling"])
def test_an_expired_registration_disappears_at_once(clock: FakeClock, reaper: str) -> None:
    service = LookupService(policy=LeaseDurationPolicy(maximum=100), clock=clock, reaper=reaper)
    try:
        registration = service.register(item(Name("brief")), 10)
        clock.advance(10)  # the polling reaper would only come by later
        assert service.lookup(ServiceTemplate()) is None
        assert service.lookup_all(ServiceTemplate(), 10).total == 0
        with pytest.raises(UnknownLeaseError):
            registration.lease.renew(10)
    finally:
        service.close()


def test_cancelling_the_lease_removes_the_registration(service: LookupService) -> None:
    registration = service.register(item(Name("gone soon")), 30)
    registration.lease.cancel()
    assert service.lookup(ServiceTemplate()) is None and service.registrations() == []


def test_attribute_changes_through_the_registration(service: LookupService) -> None:
    registration = service.register(item(Name("p"), Printer(color=True, ppm=10), Comment("old")), 30)
    registration.add_attributes([Location(floor=1)])
    registration.modify_attributes([Printer()], [Printer(ppm=40)])  # None fields stay as they were
    registration.modify_attributes([Comment()], [None])  # None deletes
    [found] = service.lookup_all(ServiceTemplate(), 10).items
    assert found.attributes == (Name("p"), Printer(color=True, ppm=40), Location(floor=1))
    registration.set_attributes([Name("only")])
    assert service.lookup_all(ServiceTemplate(), 10).items[0].attributes == (Name("only"),)
    with pytest.raises(ValueError):
        registration.modify_attributes([Printer()], [Name("wrong class")])
    with pytest.raises(ValueError):
        registration.modify_attributes([Printer(), Comment()], [None])
    registration.lease.cancel()
    with pytest.raises(UnknownLeaseError):
        registration.add_attributes([Comment("too late")])


def test_a_cookie_is_needed_to_change_a_registration(service: LookupService) -> None:
    service.register(item(Name("mine")), 30)
    for forged in ("not-a-cookie", "x" * 22):
        with pytest.raises(UnknownLeaseError):
            service.set_attributes(forged, [Name("stolen")])
    events = service.notify(ServiceTemplate(), ALL, Events(), None, 30)
    with pytest.raises(UnknownLeaseError):  # an event registration's cookie is not a service's
        service.set_attributes(events.lease.cookie, [Name("stolen")])
    assert service.lookup_all(ServiceTemplate(), 10).items[0].attributes == (Name("mine"),)


def test_events_for_every_transition_in_order(clock: FakeClock, service: LookupService) -> None:
    listener = Events()
    watch = service.notify(ServiceTemplate(types=[Quoter], attributes=[Location(floor=3)]), ALL, listener,
                           "my handback", 60)
    assert isinstance(watch, EventRegistration) and watch.sequence_number == 0
    registration = service.register(item(Location(floor=3)), 30)                      # NOMATCH_MATCH
    registration.add_attributes([Name("quotes")])                                       # MATCH_MATCH
    registration.modify_attributes([Location()], [Location(floor=4)])                   # MATCH_NOMATCH
    registration.modify_attributes([Location()], [Location(floor=3)])                   # NOMATCH_MATCH
    service.register(item(Name("unrelated"), types=("other.Type",)), 30)                # nothing
    clock.advance(30)
    assert service.lookup(ServiceTemplate()) is None                                     # MATCH_NOMATCH
    events = listener.wait_for(5)
    assert [e.transition for e in events] == [TRANSITION_NOMATCH_MATCH, TRANSITION_MATCH_MATCH,
                                              TRANSITION_MATCH_NOMATCH, TRANSITION_NOMATCH_MATCH,
                                              TRANSITION_MATCH_NOMATCH]
    assert [e.sequence_number for e in events] == [1, 2, 3, 4, 5]
    assert {e.event_id for e in events} == {watch.event_id} and {e.handback for e in events} == {"my handback"}
    assert {e.service_id for e in events} == {registration.service_id}
    assert events[1].item.attributes == (Location(floor=3), Name("quotes")) and events[-1].item is None


def test_events_and_answers_say_when_each_registration_ends(clock: FakeClock, service: LookupService) -> None:
    listener = Events()
    service.notify(ServiceTemplate(types=[Quoter]), ALL, listener, None, 60)
    registration = service.register(item(Name("a")), 20)
    forever = service.register(item(Name("b"), types=("other.Type",)), 100)
    clock.advance(5)
    registration.add_attributes([Comment("changed")])
    assert service.lookup_all(ServiceTemplate()).expiries == [Expiry(15, 20), Expiry(95, 100)]
    assert service.lookup_all(ServiceTemplate(), 1).expiries == [Expiry(15, 20)]  # one per item sent
    assert service.renew(registration.lease.cookie, 50) == 50  # renewed for longer: what it has left says so
    assert service.lookup_all(ServiceTemplate(types=[Quoter])).expiries == [Expiry(50, 50)]
    clock.advance(50)
    assert service.lookup_all(ServiceTemplate(types=[Quoter])).items == []  # expired
    events = listener.wait_for(3)
    assert [e.expiry for e in events] == [Expiry(20, 20), Expiry(15, 20), None]  # none once it is gone
    assert forever.lease.term == 100


def test_only_the_transitions_asked_for(service: LookupService) -> None:
    arrivals = Events()
    service.notify(ServiceTemplate(), TRANSITION_NOMATCH_MATCH, arrivals, None, 60)
    registration = service.register(item(Name("a")), 30)
    registration.add_attributes([Comment("changed")])
    registration.lease.cancel()
    service.register(item(Name("b")), 30)
    assert service.fanout.mailer.wait_idle(10)
    assert arrivals.transitions() == [TRANSITION_NOMATCH_MATCH, TRANSITION_NOMATCH_MATCH]


def test_an_ended_event_registration_sends_nothing_more(clock: FakeClock, service: LookupService) -> None:
    listener = Events()
    watch = service.notify(ServiceTemplate(), ALL, listener, None, 10)
    service.register(item(Name("one")), 50)
    listener.wait_for(1)  # cancelling drops what is not yet delivered
    watch.lease.cancel()
    service.register(item(Name("two")), 50)
    assert service.fanout.mailer.wait_idle(10)
    assert listener.transitions() == [TRANSITION_NOMATCH_MATCH]


def test_listeners_must_name_an_allowed_host_and_a_refusal_registers_nothing(clock: FakeClock) -> None:
    service = LookupService(clock=clock, reaper="lazy", callback_hosts=["10.0.0.5"])
    try:
        for refused in ["PYRO:listener@127.0.0.1:9", "PYRONAME:listener", "PYRO:listener@./u:/tmp/events.sock",
                        Pyro5.api.Proxy("PYRONAME:listener")]:
            with pytest.raises(ValueError):
                service.notify(ServiceTemplate(), ALL, refused, None, 10)
        assert len(service.fanout) == 0 and len(service) == 0
        watch = service.notify(ServiceTemplate(), ALL, "PYRO:listener@10.0.0.5:9", None, 10)
        assert list(service.fanout.records) == [watch.event_id]
        assert service.notify(ServiceTemplate(), ALL, Events(), None, 10).event_id != watch.event_id  # in-process
    finally:
        service.close()


def test_a_listener_that_cannot_be_reached_loses_its_registration(clock: FakeClock) -> None:
    # the default mailer's way, but giving up at the first failure
    mailer = EventMailer(on_undeliverable=lambda event_id: service.fanout.listener_gone(event_id), retry_delays=())
    service = LookupService(clock=clock, reaper="lazy", mailer=mailer)
    try:
        watch = service.notify(ServiceTemplate(), ALL, "PYRO:gone@127.0.0.1:1", None, 60)  # nobody listens there
        kept = service.notify(ServiceTemplate(), ALL, Events(), None, 60)
        service.register(item(Name("x")), 30)
        assert service.fanout.mailer.wait_idle(30)
        with pytest.raises(UnknownLeaseError):
            watch.lease.renew(10)
        assert kept.lease.renew(10) == 10 and list(service.fanout.records) == [kept.event_id]
    finally:
        service.close()


def test_entry_classes_field_values_and_service_types(service: LookupService) -> None:
    service.register(item(Name("a"), Printer(color=True, ppm=10)), 30)
    service.register(item(Name("b"), Printer(color=False, ppm=20)), 30)
    service.register(item(Name("c"), types=("other.Type",)), 30)
    quoters = ServiceTemplate(types=[Quoter])
    assert service.entry_classes(quoters) == sorted(["lookup.entry.Name", f"{Printer.__module__}.Printer"])
    assert sorted(service.field_values(ServiceTemplate(attributes=[Printer()]), 0, "ppm")) == [10, 20]
    assert service.service_types(ServiceTemplate(), "other") == ["other.Type"]
    assert len(service.service_types(ServiceTemplate(), "")) == 3
    with pytest.raises(ValueError):
        service.field_values(quoters, 0, "ppm")  # the template has no attribute 0
    with pytest.raises(ValueError):
        service.field_values(ServiceTemplate(attributes=[Printer()]), 0, "weight")


@pytest.mark.parametrize("call, error", [
    (lambda s: s.register("not an item", 10), TypeError),
    (lambda s: s.register(item(), -5), ValueError),
    (lambda s: s.lookup({"types": []}), TypeError),
    (lambda s: s.lookup_all(ServiceTemplate(), -1), ValueError),
    (lambda s: s.lookup_all(ServiceTemplate(), "10"), TypeError),
    (lambda s: s.notify(ServiceTemplate(), 0, Events(), None, 10), ValueError),
    (lambda s: s.notify(ServiceTemplate(), 8, Events(), None, 10), ValueError),
    (lambda s: s.notify(ServiceTemplate(), ALL, 42, None, 10), TypeError),
    (lambda s: s.notify(ServiceTemplate(), ALL, "not a uri", None, 10), ValueError),
    (lambda s: s.notify(ServiceTemplate(), ALL, "PYRONAME:listener", None, 10), ValueError),
    (lambda s: s.add_attributes(17, []), TypeError),
    (lambda s: s.service_types(ServiceTemplate(), 3), TypeError),
])
def test_bad_calls_change_nothing(service: LookupService, call: Any, error: type) -> None:
    service.register(item(Name("stays")), 30)
    with pytest.raises(error):
        call(service)
    assert service.lookup_all(ServiceTemplate(), 10).total == 1 and len(service.manager) == 1


# -- over a real daemon ----------------------------------------------------------------

class RemoteListener(Events):
    @Pyro5.api.expose
    def notify(self, event: ServiceEvent) -> None:
        super().notify(event)


def test_the_whole_round_over_pyro(daemon: Any) -> None:
    service = LookupService()
    try:
        with Pyro5.api.Proxy(daemon.register(service)) as remote:
            listener = RemoteListener()
            watch = remote.notify(ServiceTemplate(types=[Quoter]), ALL, daemon.register(listener), [1, "two"], 30)
            assert isinstance(watch, EventRegistration)
            registration = remote.register(item(Name("remote"), Printer(ppm=5)), 30)
            assert isinstance(registration, ServiceRegistration)
            found = remote.lookup(ServiceTemplate(attributes=[Printer(ppm=5)]))
            assert isinstance(found, Pyro5.api.Proxy) and str(found._pyroUri) == SERVICE_URI
            registration.add_attributes([Comment("hello")])  # through the lease's proxy
            registration.lease.cancel()
            events = listener.wait_for(3)
            assert [e.transition for e in events] == [TRANSITION_NOMATCH_MATCH, TRANSITION_MATCH_MATCH,
                                                      TRANSITION_MATCH_NOMATCH]
            assert events[0].handback == [1, "two"] and isinstance(events[0].item, ServiceItem)
            assert Printer(ppm=5) in events[0].item.attributes
            watch.lease.cancel()
    finally:
        service.close()


# -- with a store: what a restarted service has back ---------------------------------------

def restarted(before: FakeClock, downtime: float) -> FakeClock:
    """A new process's clock: monotonic time unrelated to the old one, wall time moved on."""
    return FakeClock(500.0, wall_offset=before.time() + downtime - 500.0)


def durable_service(path: Any, clock: FakeClock) -> LookupService:
    return LookupService(policy=LeaseDurationPolicy(maximum=100, default=30), clock=clock, reaper="lazy",
                         store=LeaseStore(path))


def test_a_restarted_service_has_its_registrations_back(tmp_path: Any) -> None:
    clock = FakeClock()
    first = durable_service(tmp_path / "lookup.sqlite", clock)
    kept = first.register(item(Name("kept"), Location(floor=3)), 60)
    changed = first.register(item(Name("changed")), 60)
    changed.set_attributes([Name("changed"), Comment("after")])
    replaced = first.register(item(Name("old")), 60)
    first.register(item(Name("new"), service_id=replaced.service_id), 60, replaced.secret)
    first.register(item(Name("cancelled")), 60).lease.cancel()
    first.close()

    again = durable_service(tmp_path / "lookup.sqlite", restarted(clock, downtime=10))
    try:
        assert again.landlord_id == first.landlord_id
        names = {i.service_id: [e.name for e in i.attributes if isinstance(e, Name)]
                 for i in again.lookup_all(ServiceTemplate(), 10).items}
        assert names == {kept.service_id: ["kept"], changed.service_id: ["changed"],
                         replaced.service_id: ["new"]}
        assert again.lookup(ServiceTemplate(attributes=[Location(floor=3)])) == SERVICE_URI  # the index too
        assert again.lookup(ServiceTemplate(attributes=[Comment("after")])) == SERVICE_URI
        assert again.renew(kept.lease.cookie, 60) == 60  # the holder's cookie still works
        left = dict((i.service_id, seconds) for i, seconds in again.registrations())
        assert left[changed.service_id] == pytest.approx(50)  # 60 less the 10 s down
    finally:
        again.close()


def test_ids_stay_their_owners_across_a_restart(tmp_path: Any) -> None:
    clock = FakeClock()
    first = durable_service(tmp_path / "lookup.sqlite", clock)
    assigned = first.register(item(Name("assigned")), 60)
    chosen = first.register(item(Name("chosen"), service_id="my-quoter"), 60)
    first.close()

    later = restarted(clock, downtime=10)
    again = durable_service(tmp_path / "lookup.sqlite", later)
    try:
        before = snapshot(again)
        for service_id in (assigned.service_id, "my-quoter"):  # restored, their leases hold them
            with pytest.raises(NotOwnerError):
                again.register(ServiceItem(service_id, "PYRO:stranger@127.0.0.1:1", [Quoter]), 60)
        assert snapshot(again) == before
        again.register(item(Name("chosen, again"), service_id="my-quoter"), 60, chosen.lease.cookie)
        again.register(item(Name("assigned, again"), service_id=assigned.service_id), 10, assigned.secret)
        later.advance(11)  # and once the lease has ended, the secret still proves the id
        with pytest.raises(NotOwnerError):
            again.register(ServiceItem(assigned.service_id, "PYRO:stranger@127.0.0.1:1", [Quoter]), 60)
        again.register(item(Name("assigned, back"), service_id=assigned.service_id), 60, assigned.secret)
        names = {i.service_id: i.attributes[0] for i in again.lookup_all(ServiceTemplate(), 10).items}
        assert names == {assigned.service_id: Name("assigned, back"), "my-quoter": Name("chosen, again")}
    finally:
        again.close()


def test_registrations_that_ran_out_while_down_end_with_their_events(tmp_path: Any, daemon: Any) -> None:
    clock = FakeClock()
    listener = RemoteListener()
    first = durable_service(tmp_path / "lookup.sqlite", clock)
    watch = first.notify(ServiceTemplate(types=[Quoter]), ALL, daemon.register(listener), "mine", 100)
    short = first.register(item(Name("short")), 5)
    first.register(item(Name("long")), 60)
    assert [e.sequence_number for e in listener.wait_for(2)] == [1, 2]
    first.close()

    again = durable_service(tmp_path / "lookup.sqlite", restarted(clock, downtime=30))
    try:
        again.manager.reap()
        events = listener.wait_for(3)
        assert (events[2].transition, events[2].service_id, events[2].sequence_number, events[2].event_id,
                events[2].handback) == (TRANSITION_MATCH_NOMATCH, short.service_id, 3, watch.event_id, "mine")
        assert [i.attributes[0] for i in again.lookup_all(ServiceTemplate(), 10).items] == [Name("long")]
        later = again.notify(ServiceTemplate(), ALL, daemon.register(RemoteListener()), None, 10)
        assert later.event_id > watch.event_id  # event ids are not reused
    finally:
        again.close()


class Crash(BaseException):
    """Stands for the process dying (``kill -9``): no handler catches it, nothing after it runs."""


def crash(*args: Any) -> None:
    raise Crash


@pytest.mark.parametrize("died", ["as it ended the registration", "before it deleted the lease"])
def test_a_registration_cancelled_as_the_service_died_ends_with_its_event_after_the_restart(
        tmp_path: Any, daemon: Any, died: str) -> None:
    clock = FakeClock()
    listener = RemoteListener()
    first = durable_service(tmp_path / "lookup.sqlite", clock)
    watch = first.notify(ServiceTemplate(types=[Quoter]), ALL, daemon.register(listener), "mine", 100)
    gone = first.register(item(Name("gone")), 60)
    first.register(item(Name("kept")), 60)
    assert [e.sequence_number for e in listener.wait_for(2)] == [1, 2]
    if died == "as it ended the registration":
        first.registry.end = crash  # type: ignore[method-assign]  # on_cancel dies before the event is fired
    else:
        first.store.delete = crash  # type: ignore[method-assign,union-attr]  # after the event, before the delete
    with pytest.raises(Crash):
        gone.lease.cancel()
    heard = 3 if died == "before it deleted the lease" else 2
    listener.wait_for(heard)
    first.close()

    again = durable_service(tmp_path / "lookup.sqlite", restarted(clock, downtime=10))
    try:
        assert [i.attributes[0] for i in again.lookup_all(ServiceTemplate(), 10).items] == [Name("kept")]
        with pytest.raises(UnknownLeaseError):
            again.renew(gone.lease.cookie, 60)  # the registration is not revived
        events = listener.wait_for(heard + 1)[2:]  # the end, heard again if it was heard before the crash
        assert [(e.transition, e.service_id, e.event_id) for e in events] == \
            [(TRANSITION_MATCH_NOMATCH, gone.service_id, watch.event_id)] * len(events)
        assert [e.sequence_number for e in events] == list(range(3, heard + 2))
        assert again.fanout.mailer.wait_idle(10) and len(listener.received) == heard + 1
    finally:
        again.close()


def test_in_process_listeners_are_not_kept(tmp_path: Any) -> None:
    clock = FakeClock()
    first = durable_service(tmp_path / "lookup.sqlite", clock)
    first.notify(ServiceTemplate(), ALL, Events(), None, 100)
    first.close()
    again = durable_service(tmp_path / "lookup.sqlite", restarted(clock, downtime=1))
    try:
        assert len(again.manager) == 0
    finally:
        again.close()


def test_stored_records_that_are_not_records_are_dropped(tmp_path: Any) -> None:
    store = LeaseStore(tmp_path / "lookup.sqlite")
    store.claim("forged")
    store.put("a" * 22, 2e9, {"item": "not an item"}, now=1.7e9)
    store.put("b" * 22, 2e9, {"event_id": "x"}, now=1.7e9)
    store.put("c" * 22, 2e9, ["not", "a", "dict"], now=1.7e9)
    store.close()
    again = durable_service(tmp_path / "lookup.sqlite", FakeClock())
    try:
        assert len(again.manager) == 0 and len(again.store) == 0
        assert again.landlord_id == "forged"
    finally:
        again.close()


def test_what_the_store_keeps_of_a_record(tmp_path: Any) -> None:
    # the stored forms are the file format: what an earlier version wrote must load (see the next test)
    clock = FakeClock()
    first = durable_service(tmp_path / "lookup.sqlite", clock)
    registration = first.register(item(Name("stored")), 60)
    watch = first.notify(ServiceTemplate(types=[Quoter]), ALL, "PYRO:listener@127.0.0.1:1", ["hand", 1], 60)
    first.close()
    store = LeaseStore(tmp_path / "lookup.sqlite")
    try:
        rows = {row.cookie: row.resource for row in store.leases(clock.time())}
    finally:
        store.close()
    assert rows[registration.lease.cookie] == {"item": item(Name("stored"), service_id=registration.service_id),
                                               "client": IN_PROCESS_CLIENT}
    assert rows[watch.lease.cookie] == {"event_id": watch.event_id, "template": ServiceTemplate(types=[Quoter]),
                                        "transitions": ALL, "listener": "PYRO:listener@127.0.0.1:1",
                                        "handback": ["hand", 1], "sequence_number": 0, "client": IN_PROCESS_CLIENT}


def test_records_in_the_stored_form_of_earlier_versions_load(tmp_path: Any) -> None:
    clock = FakeClock()
    wall = clock.time()
    store = LeaseStore(tmp_path / "lookup.sqlite")
    store.claim("earlier")
    stored = item(Name("from before"), Location(floor=2), service_id="svc-1")
    store.put("a" * 22, wall + 40, {"item": stored}, now=wall)
    store.put("b" * 22, wall + 50, {"event_id": 7, "template": ServiceTemplate(types=[Quoter]), "transitions": ALL,
                                    "listener": "PYRO:listener@127.0.0.1:1", "handback": "h",
                                    "sequence_number": 3}, now=wall)
    store.set_setting("next_event_id", 9)
    store.close()
    again = durable_service(tmp_path / "lookup.sqlite", restarted(clock, downtime=10))
    try:
        assert again.landlord_id == "earlier"
        [(found, left)] = again.registrations()
        assert found == stored and left == pytest.approx(30)
        # its term is not stored: what it has left stands for it
        assert again.lookup_all(ServiceTemplate()).expiries == [Expiry(pytest.approx(30), pytest.approx(30))]
        assert again.lookup(ServiceTemplate(attributes=[Location(floor=2)])) == SERVICE_URI  # filed in the index
        [record] = again.fanout.records.values()
        assert (record.event_id, record.cookie, record.listener, record.handback, record.sequence_number,
                record.transitions) == (7, "b" * 22, "PYRO:listener@127.0.0.1:1", "h", 3, ALL)
        assert again.notify(ServiceTemplate(), ALL, Events(), None, 10).event_id == 9
        assert again.renew("a" * 22, 60) == 60
    finally:
        again.close()


def test_a_registration_in_grace_is_unlisted_at_once_and_revived_by_its_renewal(clock: FakeClock) -> None:
    lookup = LookupService(policy=LeaseDurationPolicy(maximum=100, grace=5), clock=clock, reaper="lazy")
    try:
        registration = lookup.register(item(Name("quotes")), 10)
        clock.advance(11)  # its term is over, its grace is not
        assert lookup.lookup(ServiceTemplate(types=[Quoter])) is None
        assert lookup.lookup_all(ServiceTemplate(), 10).total == 0
        assert registration.lease.renew(10) == 10  # the same lease, the same service id
        assert lookup.lookup(ServiceTemplate(service_id=registration.service_id)) == SERVICE_URI
        clock.advance(15)  # past the new term and its grace
        assert len(lookup) == 0
        with pytest.raises(UnknownLeaseError):
            registration.lease.renew(10)
    finally:
        lookup.close()
