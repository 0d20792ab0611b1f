"""Arbitrary input to every remote method of the lookup service: a clear error, and nothing changed.

A slice of the hostile-input work of the reliability issue: in-process with
hypothesis for breadth, and forged wire dicts against a real daemon for the
serializer path.
"""

from __future__ import annotations

from typing import Any

import Pyro5.api
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from landlord import FakeClock, LeaseDeniedError, LeaseDurationPolicy, UnknownLeaseError
from lookup import ALL_TRANSITIONS, Location, LookupService, Name, ServiceItem, ServiceTemplate

CLEAR_ERRORS = (TypeError, ValueError, UnknownLeaseError, LeaseDeniedError)

anything = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=200) | st.binary(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)
templates = st.sampled_from([ServiceTemplate(), ServiceTemplate(types=["t.A"]),
                             ServiceTemplate(attributes=[Location(floor=3)])])


class Listener:
    def notify(self, event: Any) -> None:
        pass


class Scene:
    """A lookup service with two registrations and one event registration, and its state."""

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.service = LookupService(policy=LeaseDurationPolicy(maximum=100), clock=self.clock, reaper="lazy")
        self.registrations = [
            self.service.register(ServiceItem(None, f"PYRO:s{i}@127.0.0.1:9", ["t.A"], [Name(f"s{i}"),
                                                                                  Location(floor=i)]), 50)
            for i in range(2)]
        self.watch = self.service.notify(ServiceTemplate(), ALL_TRANSITIONS, Listener(), None, 50)

    def state(self) -> Any:
        registry, fanout = self.service.registry, self.service.fanout
        return (sorted((sid, repr(r.item), r.leased and r.leased.expiration) for sid, r in registry.records.items()),
                sorted((event_id, r.sequence_number) for event_id, r in fanout.records.items()),
                len(self.service.manager))

    def close(self) -> None:
        self.service.close()


def attempt(call: Any) -> None:
    try:
        call()
    except CLEAR_ERRORS as exc:
        assert str(exc), f"{type(exc).__name__} without a message"


@settings(max_examples=200, deadline=None)
@given(a=anything, b=anything, c=anything, d=anything, template=templates)
def test_every_remote_method_with_anything(a: Any, b: Any, c: Any, d: Any, template: ServiceTemplate) -> None:
    scene = Scene()
    try:
        before = scene.state()
        service = scene.service
        calls = [
            lambda: service.register(a, b),
            lambda: service.lookup(a),
            lambda: service.lookup_all(a, b),
            lambda: service.lookup_all(template, a),
            lambda: service.notify(a, b, c, d, 10),
            lambda: service.notify(template, a, b, None, c),
            lambda: service.entry_classes(a),
            lambda: service.field_values(template, a, b),
            lambda: service.field_values(a, b, c),
            lambda: service.service_types(template, a),
            lambda: service.add_attributes(a, b),
            lambda: service.set_attributes(a, b),
            lambda: service.modify_attributes(a, b, c),
            lambda: service.add_attributes(scene.registrations[0].lease.cookie + "x", [Name("stolen")]),
            lambda: service.renew(a, b),
            lambda: service.cancel(a),
            lambda: service.renew_all(a, b),
            lambda: service.cancel_all(a),
        ]
        for call in calls:
            attempt(call)
        assert scene.state() == before
        assert service.lookup_all(ServiceTemplate(types=["t.A"]), 10).total == 2  # still serving
    finally:
        scene.close()


@settings(max_examples=100, deadline=None)
@given(attributes=anything, value=anything)
def test_changes_with_a_real_cookie_but_bad_entries_change_nothing(attributes: Any, value: Any) -> None:
    scene = Scene()
    try:
        before = scene.state()
        cookie = scene.registrations[0].lease.cookie
        for call in (lambda: scene.service.add_attributes(cookie, attributes),
                     lambda: scene.service.set_attributes(cookie, [Name("ok"), attributes]),
                     lambda: scene.service.modify_attributes(cookie, [Name()], [value])):
            attempt(call)
        if scene.state() != before:  # only a well-formed change may change anything
            assert value is None or attributes == []
    finally:
        scene.close()


FORGED = [
    {"__class__": "lookup.ServiceItem", "service_id": 5, "service": "PYRO:x@127.0.0.1:1", "types": [],
     "attributes": []},
    {"__class__": "lookup.ServiceItem", "service_id": None, "service": "http://evil", "types": [],
     "attributes": []},
    {"__class__": "lookup.ServiceItem", "service_id": None, "service": "PYRO:x@127.0.0.1:1", "types": "t.A",
     "attributes": []},
    {"__class__": "lookup.ServiceItem", "service_id": None, "service": "PYRO:x@127.0.0.1:1", "types": [],
     "attributes": [{"__class__": "landlord.LandlordLease", "cookie": "c", "landlord": "PYRO:x@127.0.0.1:1",
                     "landlord_id": "l", "remaining": 1.0}]},
    {"__class__": "lookup.ServiceItem", "service_id": None, "service": "PYRO:x@127.0.0.1:1", "types": [],
     "attributes": [{"__class__": "lookup.Entry", "class": "a.B", "lineage": ["c.D"], "fields": {}}]},
    {"__class__": "lookup.ServiceItem", "service_id": None, "service": "PYRO:x@127.0.0.1:1", "types": [],
     "attributes": [{"__class__": "lookup.Entry", "class": "a.B", "lineage": ["a.B"],
                     "fields": {"__class__": "x"}}]},
    {"__class__": "lookup.ServiceItem", "service_id": None, "service": "PYRO:x@127.0.0.1:1", "types": [],
     "attributes": [{"__class__": "lookup.Entry", "class": "a.B", "lineage": ["a.B"],
                     "fields": {f"f{i}": i for i in range(500)}}]},
    {"__class__": "lookup.ServiceTemplate", "service_id": None, "types": [["nested"]], "attributes": []},
    {"__class__": "lookup.Entry", "class": "a.B" * 1000, "lineage": ["a.B"], "fields": {}},
]


@pytest.mark.parametrize("forged", FORGED, ids=range(len(FORGED)))
def test_forged_wire_dicts_are_refused_and_the_server_lives(daemon: Any, forged: dict) -> None:
    service = LookupService()
    try:
        with Pyro5.api.Proxy(daemon.register(service)) as remote:
            with pytest.raises((TypeError, ValueError)):
                remote.register(forged, 10)
            with pytest.raises((TypeError, ValueError)):
                remote.lookup(forged)
            assert remote.lookup_all(ServiceTemplate(), 10).total == 0  # nothing got in, and it answers
    finally:
        service.close()
