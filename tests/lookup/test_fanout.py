"""EventFanout alone: which events a change sends, numbered, to whom; with a
fake clock and a mailer that only records, so no threads and no Pyro5 daemon."""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from typing import Any

import pytest
from Pyro5.serializers import SerpentSerializer

from landlord import FakeClock, LeasedResource, UnknownLeaseError
from lookup import (
    ALL_TRANSITIONS,
    TRANSITION_MATCH_MATCH,
    TRANSITION_MATCH_NOMATCH,
    TRANSITION_NOMATCH_MATCH,
    Location,
    Name,
    ServiceEvent,
    ServiceItem,
    ServiceTemplate,
)
from lookup.service.fanout import EventFanout, EventRecord

URI = "PYRO:watched@127.0.0.1:9999"
EVERYTHING = ServiceTemplate()
LISTENER = "PYRO:listener@127.0.0.1:1"
_cookies = (f"cookie-{n:015d}" for n in itertools.count())


class Mailbox:
    """A mailer that keeps what it is given."""

    def __init__(self) -> None:
        self.posted: list[tuple[Hashable, Any, ServiceEvent]] = []
        self.forgotten: list[Hashable] = []
        self.closed = False

    def post(self, key: Hashable, listener: Any, event: ServiceEvent) -> None:
        self.posted.append((key, listener, event))

    def forget(self, key: Hashable) -> None:
        self.forgotten.append(key)

    def close(self) -> None:
        self.closed = True


class Scene:
    def __init__(self, *, persist: bool = False) -> None:
        self.clock = FakeClock()
        self.mailbox = Mailbox()
        self.cancelled: list[str] = []
        self.persisted: list[tuple[int, int]] = []
        self.fanout = EventFanout(clock=self.clock, cancel=self.cancelled.append, mailer=self.mailbox,  # type: ignore[arg-type]
                                  persist=self._persist if persist else None)

    def _persist(self, record: EventRecord) -> None:
        self.persisted.append((record.event_id, record.sequence_number))
        assert len(self.mailbox.posted) < len(self.persisted)  # stored before it is posted

    def watch(self, template: ServiceTemplate = EVERYTHING, transitions: int = ALL_TRANSITIONS,
              listener: Any = LISTENER, until: float = 60.0) -> EventRecord:
        record = self.fanout.new_record(template, transitions, listener, f"handback {listener}")
        lease = LeasedResource(next(_cookies), until, record)
        record.cookie, record.leased = lease.cookie, lease
        self.fanout.add(record)
        return record

    def events(self) -> list[tuple[Hashable, int, int, str | None]]:
        return [(key, event.sequence_number, event.transition, event.service_id)
                for key, _listener, event in self.mailbox.posted]


def item(*attributes: Any, service_id: str = "svc") -> ServiceItem:
    return ServiceItem(service_id, URI, ["t.A"], attributes)


def test_each_change_sends_its_transition_numbered_per_registration() -> None:
    scene = Scene()
    floor3 = scene.watch(ServiceTemplate(attributes=[Location(floor=3)]))
    everything = scene.watch()
    before, after = item(Location(floor=3)), item(Location(floor=3), Name("n"))
    scene.fanout.fire("svc", None, before)
    scene.fanout.fire("svc", before, after)
    scene.fanout.fire("svc", after, item(Location(floor=4)))
    scene.fanout.fire("svc", item(Location(floor=4)), None)
    some, every = floor3.event_id, everything.event_id
    assert scene.events() == [
        (some, 1, TRANSITION_NOMATCH_MATCH, "svc"), (every, 1, TRANSITION_NOMATCH_MATCH, "svc"),
        (some, 2, TRANSITION_MATCH_MATCH, "svc"), (every, 2, TRANSITION_MATCH_MATCH, "svc"),
        (some, 3, TRANSITION_MATCH_NOMATCH, "svc"), (every, 3, TRANSITION_MATCH_MATCH, "svc"),
        (every, 4, TRANSITION_MATCH_NOMATCH, "svc"),
    ]
    key, listener, event = scene.mailbox.posted[0]
    assert (listener, event.handback, event.item) == (LISTENER, f"handback {LISTENER}", before)
    assert scene.mailbox.posted[-1][2].item is None  # gone: no item


def test_only_the_transitions_asked_for_and_only_while_live() -> None:
    scene = Scene()
    arrivals = scene.watch(transitions=TRANSITION_NOMATCH_MATCH)
    brief = scene.watch(until=5)
    scene.fanout.fire("a", None, item(service_id="a"))
    scene.fanout.fire("a", item(service_id="a"), None)
    scene.clock.advance(5)  # brief's lease has run out, though it is still stored
    scene.fanout.fire("b", None, item(service_id="b"))
    assert scene.events() == [(arrivals.event_id, 1, TRANSITION_NOMATCH_MATCH, "a"),
                              (brief.event_id, 1, TRANSITION_NOMATCH_MATCH, "a"),
                              (brief.event_id, 2, TRANSITION_MATCH_NOMATCH, "a"),
                              (arrivals.event_id, 2, TRANSITION_NOMATCH_MATCH, "b")]


def test_a_number_is_stored_before_its_event_is_posted() -> None:
    scene = Scene(persist=True)
    watch = scene.watch()
    scene.fanout.fire("a", None, item())
    scene.fanout.fire("a", item(), item(Name("changed")))
    assert scene.persisted == [(watch.event_id, 1), (watch.event_id, 2)]


def test_ended_registrations_hear_nothing_more_and_their_mail_is_dropped() -> None:
    scene = Scene()
    watch = scene.watch()
    scene.fanout.end(watch)
    scene.fanout.end(watch)  # once
    scene.fanout.fire("a", None, item())
    assert scene.mailbox.posted == [] and scene.mailbox.forgotten == [watch.event_id] and len(scene.fanout) == 0


def test_a_listener_gone_cancels_its_lease_only() -> None:
    scene = Scene()
    watch, other = scene.watch(), scene.watch()
    scene.fanout.listener_gone(watch.event_id)
    scene.fanout.listener_gone(12345)  # not held: nothing happens
    scene.fanout.listener_gone("not an id")
    assert scene.cancelled == [watch.cookie]  # its end comes back through end(), from the lease manager
    assert set(scene.fanout.records) == {watch.event_id, other.event_id}


def test_a_lease_already_gone_is_no_error() -> None:
    def cancel(cookie: str) -> None:
        raise UnknownLeaseError("it ended meanwhile")

    fanout = EventFanout(clock=FakeClock(), cancel=cancel, mailer=Mailbox())  # type: ignore[arg-type]
    record = fanout.new_record(ServiceTemplate(), ALL_TRANSITIONS, LISTENER, None)
    record.leased = LeasedResource("c" * 22, 10.0, record)
    fanout.add(record)
    fanout.listener_gone(record.event_id)


def test_event_ids_are_new_and_continue_after_a_restart() -> None:
    scene = Scene()
    assert [scene.watch().event_id for _ in range(3)] == [1, 2, 3]
    scene.fanout.ids_from(10)
    assert scene.watch().event_id == 10
    scene.fanout.ids_from(2)  # never below an id held
    assert scene.watch().event_id == 11


def test_a_registration_without_a_lease_is_refused() -> None:
    scene = Scene()
    with pytest.raises(ValueError):
        scene.fanout.add(scene.fanout.new_record(ServiceTemplate(), ALL_TRANSITIONS, LISTENER, None))


def test_the_stored_form_survives_serpent_and_is_restored() -> None:
    scene = Scene()
    watch = scene.watch(ServiceTemplate(types=["t.A"]), TRANSITION_MATCH_NOMATCH)
    watch.sequence_number = 4
    watch.client = "10.0.0.7"
    data = scene.fanout.dump(watch)
    assert data == {"event_id": watch.event_id, "template": ServiceTemplate(types=["t.A"]),
                    "transitions": TRANSITION_MATCH_NOMATCH, "listener": LISTENER,
                    "handback": f"handback {LISTENER}", "sequence_number": 4, "client": "10.0.0.7"}
    serpent = SerpentSerializer()
    copy = scene.fanout.load(serpent.loads(serpent.dumps(data)))
    assert copy.client == "10.0.0.7"
    before_clients = {key: value for key, value in data.items() if key != "client"}
    assert scene.fanout.load(before_clients).client == ""  # stored before clients were: nobody's
    with pytest.raises(ValueError, match="not a stored lookup record"):
        scene.fanout.load({**data, "client": 7})
    again = Scene()
    again.fanout.restored(LeasedResource("restored-cookie-000000", 30.0, copy))
    assert again.fanout.get(watch.event_id) is copy and copy.cookie == "restored-cookie-000000"
    again.fanout.fire("a", item(), None)
    assert again.events() == [(watch.event_id, 5, TRANSITION_MATCH_NOMATCH, "a")]  # numbering goes on


def test_in_process_listeners_are_kept_in_memory_only() -> None:
    scene = Scene()
    assert scene.fanout.dump(scene.watch(listener=Mailbox())) is None


@pytest.mark.parametrize("data", [{}, {"event_id": "x"}, {"event_id": 1, "template": ServiceTemplate(),
                                                           "transitions": 7, "listener": 42, "sequence_number": 0}])
def test_what_is_not_a_stored_event_registration_is_refused(data: Any) -> None:
    with pytest.raises(ValueError):
        Scene().fanout.load(data)


def test_close_closes_the_mailer() -> None:
    scene = Scene()
    scene.fanout.close()
    assert scene.mailbox.closed and scene.fanout.mailer is scene.mailbox  # type: ignore[comparison-overlap]
