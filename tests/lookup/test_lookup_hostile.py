"""Arbitrary input to every remote method of the lookup service: a clear error, and nothing changed.

A slice of the hostile-input work of the reliability issue: in-process with
hypothesis for breadth, forged wire dicts against a real daemon for the
serializer path, and forged dicts in landlord's msgpack dialect (and plain
msgpack) against ``python -m lookup serve`` while a canary's registration renews.
"""

from __future__ import annotations

import itertools
import json
import pathlib
import secrets
import sys
import threading
from collections.abc import Callable
from typing import Any

import Pyro5.api
import Pyro5.errors
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lookup_processes import LookupProcess, serve_lookup  # noqa: F401  (a fixture)
from Pyro5.serializers import SerpentSerializer

from landlord import FakeClock, LeaseDeniedError, LeaseDurationPolicy, UnknownLeaseError, wire_proxy
from lookup import (
    ALL_TRANSITIONS,
    LOOKUP_OBJECT_ID,
    JoinManager,
    Location,
    LookupCache,
    LookupService,
    Name,
    ServiceItem,
    ServiceMatches,
    ServiceTemplate,
)
from lookup.ownership import NotOwnerError

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "hostile"))
from targets import serving, watched  # noqa: E402 (the hostile suite's servers and canary)

CLEAR_ERRORS = (TypeError, ValueError, UnknownLeaseError, LeaseDeniedError)  # NotOwnerError is a LeaseDeniedError

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
            lambda: service.register(ServiceItem(scene.registrations[0].service_id, "PYRO:stolen@127.0.0.1:9",
                                                 ["t.A"]), 10, a),  # a stranger's proof: anything but the real one
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


# -- the packed form of matches, forged ----------------------------------------------------

URI = "PYRO:s@127.0.0.1:9"
serializer = SerpentSerializer()
NAME_SHAPE = [0, ["name"], [0]]


def table(**changes: Any) -> str:
    parts: dict[str, Any] = {"lineages": [["lookup.entry.Name"]], "shapes": [NAME_SHAPE],
                             "layouts": [[["t.A"], [0]]], "items": [["id-1", URI, 0, "s1"]]}
    parts.update(changes)
    return json.dumps({key: value for key, value in parts.items() if value is not ...})


def forged_packed(text: Any = None, **changes: Any) -> dict[str, Any]:
    data = {"__class__": "lookup.PackedMatches", "total": 1, "table": table() if text is None else text,
            "values": []}
    data.update(changes)
    return {key: value for key, value in data.items() if value is not ...}


def row(*values: Any, layout: Any = 0, service_id: Any = "id-1", uri: Any = URI) -> list[Any]:
    return [service_id, uri, layout, *values]


HUGE = 10**30
FORGED_PACKED = {
    # the dict
    "no total": forged_packed(total=...),
    "no table": forged_packed(table=...),
    "no values": forged_packed(values=...),
    "total a bool": forged_packed(total=True),
    "total a float": forged_packed(total=1.0),
    "total below the items": forged_packed(total=0),
    "total negative": forged_packed(total=-HUGE),
    "table a list": forged_packed(table=[]),
    "table bytes": forged_packed(table=b"{}"),
    "values a dict": forged_packed(values={}),
    "values a str": forged_packed(values="abc"),
    "a value not a wire value": forged_packed(values=[{1, 2}]),
    "a value with a class tag": forged_packed(values=[{"__class__": "lookup.Entry"}]),
    "a value nested too deep": forged_packed(values=[[[[[[[[[[1]]]]]]]]]]),
    # the table
    "not JSON": forged_packed("{"),
    "JSON NaN": forged_packed(table(items=[row("MARK")]).replace('"MARK"', "NaN")),
    "JSON Infinity": forged_packed(table(items=[row("MARK")]).replace('"MARK"', "-Infinity")),
    "JSON nested too deep": forged_packed("[" * 100_000 + "]" * 100_000),
    "an integer too long to read": forged_packed(table(items=[row("s1", layout="MARK")]).replace(
        '"MARK"', "9" * 5000)),
    "table an array": forged_packed("[]"),
    "table a string": forged_packed('"x"'),
    "a part missing": forged_packed(table(shapes=...)),
    "a part not an array": forged_packed(table(items={})),
    # lineages
    "a lineage not an array": forged_packed(table(lineages=["lookup.entry.Name"])),
    "a lineage an object": forged_packed(table(lineages=[{"lookup.entry.Name": 0}])),
    "an empty lineage": forged_packed(table(lineages=[[]])),
    "a lineage too long": forged_packed(table(lineages=[[f"a.B{i}" for i in range(40)]])),
    "a lineage name not a str": forged_packed(table(lineages=[[5]])),
    "a lineage name not a class name": forged_packed(table(lineages=[["no dots"]])),
    # shapes
    "a shape not an array": forged_packed(table(shapes=[{}])),
    "a shape of 2 parts": forged_packed(table(shapes=[[0, ["name"]]])),
    "a shape's lineage out of range": forged_packed(table(shapes=[[1, ["name"], [0]]])),
    "a shape's lineage negative": forged_packed(table(shapes=[[-1, ["name"], [0]]])),
    "a shape's lineage huge": forged_packed(table(shapes=[[HUGE, ["name"], [0]]])),
    "a shape's lineage a bool": forged_packed(table(shapes=[[False, ["name"], [0]]])),
    "a shape's lineage a float": forged_packed(table(shapes=[[0.0, ["name"], [0]]])),
    "a shape's lineage a string": forged_packed(table(shapes=[["0", ["name"], [0]]])),
    "a shape's names not an array": forged_packed(table(shapes=[[0, "name", [0]]])),
    "a shape's names an object": forged_packed(table(shapes=[[0, {"name": 0}, [0]]])),
    "a shape of 4 parts": forged_packed(table(shapes=[[0, ["name"], [0], []]])),
    "a field name not a str": forged_packed(table(shapes=[[0, [1], [0]]])),
    "a field name not a name": forged_packed(table(shapes=[[0, ["__class__"], [0]]])),
    "a field named twice": forged_packed(table(shapes=[[0, ["name", "name"], [0]]])),
    "too many fields": forged_packed(table(lineages=[["a.B"]], shapes=[[0, [f"f{i}" for i in range(65)], [0]]])),
    "a field the class lacks": forged_packed(table(shapes=[[0, ["name", "toner"], [0]]])),
    "a given field out of range": forged_packed(table(shapes=[[0, ["name"], [1]]])),
    "a given field negative": forged_packed(table(shapes=[[0, ["name"], [-1]]])),
    "given fields out of order": forged_packed(table(lineages=[["a.B"]], shapes=[[0, ["x", "y"], [1, 0]]],
                                                     items=[row("a", "b")])),
    "a given field twice": forged_packed(table(lineages=[["a.B"]], shapes=[[0, ["x", "y"], [0, 0]]],
                                               items=[row("a", "b")])),
    "given fields not an array": forged_packed(table(shapes=[[0, ["name"], 0]])),
    # layouts
    "a layout not an array": forged_packed(table(layouts=[0])),
    "a layout of 3 parts": forged_packed(table(layouts=[[["t.A"], [0], []]])),
    "a layout's types a str": forged_packed(table(layouts=[["t.A", [0]]])),
    "a layout's type not a name": forged_packed(table(layouts=[[["t A"], [0]]])),
    "a layout's type not a str": forged_packed(table(layouts=[[[None], [0]]])),
    "too many types": forged_packed(table(layouts=[[[f"t.T{i}" for i in range(300)], [0]]])),
    "too many entries": forged_packed(table(layouts=[[["t.A"], [0] * 300]])),
    "a layout's shape out of range": forged_packed(table(layouts=[[["t.A"], [1]]])),
    "a layout's shape huge": forged_packed(table(layouts=[[["t.A"], [HUGE]]])),
    "a layout's shape negative": forged_packed(table(layouts=[[["t.A"], [-1]]])),
    "a layout's shape a bool": forged_packed(table(layouts=[[["t.A"], [False]]])),
    "a layout's shape a float": forged_packed(table(layouts=[[["t.A"], [0.0]]])),
    "a layout's shapes an object": forged_packed(table(layouts=[[["t.A"], {"0": 0}]])),
    # items
    "an item not an array": forged_packed(table(items=[{"id": "id-1"}])),
    "an item too short": forged_packed(table(items=[["id-1", URI]])),
    "a service id a number": forged_packed(table(items=[row("s1", service_id=5)])),
    "a service id empty": forged_packed(table(items=[row("s1", service_id="")])),
    "a service id too long": forged_packed(table(items=[row("s1", service_id="x" * 300)])),
    "a service id a bool": forged_packed(table(items=[row("s1", service_id=True)])),
    "a service id a list": forged_packed(table(items=[row("s1", service_id=["id-1"])])),
    "a URI not a str": forged_packed(table(items=[row("s1", uri=None)])),
    "a URI not a Pyro5 URI": forged_packed(table(items=[row("s1", uri="http://evil")])),
    "a URI too long": forged_packed(table(items=[row("s1", uri="PYRO:" + "x" * 2000 + "@127.0.0.1:9")])),
    "a layout out of range": forged_packed(table(items=[row("s1", layout=1)])),
    "a layout negative": forged_packed(table(items=[row("s1", layout=-1)])),
    "a layout huge": forged_packed(table(items=[row("s1", layout=HUGE)])),
    "a layout null": forged_packed(table(items=[row("s1", layout=None)])),
    "a layout a bool": forged_packed(table(items=[row("s1", layout=False)])),
    "a layout a float": forged_packed(table(items=[row("s1", layout=0.0)])),
    "too few values": forged_packed(table(items=[row()])),
    "too many values": forged_packed(table(items=[row("s1", "s2")])),
    "a value null": forged_packed(table(items=[row(None)])),
    "a value an object": forged_packed(table(items=[row({"v": 1})])),
    "a value of two places": forged_packed(table(items=[row([0, 0])]), values=["x"]),
    "a value's place out of range": forged_packed(table(items=[row([1])]), values=["x"]),
    "a value's place with no values": forged_packed(table(items=[row([0])])),
    "a value's place a bool": forged_packed(table(items=[row([True])]), values=["x", "y"]),
    "a value's place huge": forged_packed(table(items=[row([HUGE])]), values=["x"]),
    "a value's place a string": forged_packed(table(items=[row(["0"])]), values=["x"]),
}


@pytest.mark.parametrize("forged", FORGED_PACKED.values(), ids=FORGED_PACKED.keys())
def test_forged_packed_matches_are_refused_clearly(forged: dict[str, Any]) -> None:
    with pytest.raises((TypeError, ValueError)) as refused:
        serializer.recreate_classes(forged)
    assert str(refused.value).startswith("malformed lookup.PackedMatches: ")


def test_the_forgeries_start_from_a_sound_answer() -> None:
    found = serializer.recreate_classes(forged_packed())
    assert found == ServiceMatches([ServiceItem("id-1", URI, ["t.A"], [Name("s1")])], 1)
    odd = serializer.recreate_classes(forged_packed(table(items=[row([0])]), values=[("odd", 1)]))
    assert odd.items[0].attributes[0].name == ("odd", 1)


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                       max_size=2), max_leaves=6)


def _replace(node: Any, path: list[int], new: Any) -> Any:
    """``node`` with the part at ``path`` (indexes into lists and dicts' values, wrapping around) replaced."""
    if not path or not isinstance(node, (list, dict)) or not node:
        return new
    keys = list(node) if isinstance(node, dict) else list(range(len(node)))
    key = keys[path[0] % len(keys)]
    copy = dict(node) if isinstance(node, dict) else list(node)
    copy[key] = _replace(node[key], path[1:], new)
    return copy


SOUND = {"lineages": [["lookup.entry.Name"], ["elsewhere.Laser", "elsewhere.Printer"]],
         "shapes": [NAME_SHAPE, [1, ["color", "ppm", "trays"], [0, 2]]],
         "layouts": [[["t.A"], [0, 1]], [[], []]],
         "items": [row("s1", "red", [0]), row(layout=1, service_id=None)]}


@settings(max_examples=300, deadline=None)
@given(path=st.lists(st.integers(min_value=0, max_value=20), max_size=5), new=json_values,
       total=st.integers(min_value=-3, max_value=5) | st.just(HUGE))
def test_any_change_to_a_packed_table_reads_or_is_refused_clearly(path: list[int], new: Any, total: int) -> None:
    text = json.dumps(_replace(SOUND, path, new))
    try:
        found = serializer.recreate_classes(forged_packed(text, total=total, values=[("A4",)]))
    except (TypeError, ValueError) as exc:
        assert str(exc)
    else:
        assert isinstance(found, ServiceMatches) and found.total >= len(found.items)
        assert all(isinstance(item, ServiceItem) for item in found.items)
        round_trip = serializer.recreate_classes(serializer.loads(serializer.dumps(found)))
        assert round_trip == found  # what was read is sound: it travels on


@pytest.mark.parametrize("forged", [FORGED_PACKED[name] for name in (
    "not JSON", "a shape's lineage huge", "a value's place out of range", "a URI not a Pyro5 URI", "total a bool")])
def test_forged_packed_matches_sent_to_the_service_change_nothing(daemon: Any, forged: dict[str, Any]) -> None:
    service = LookupService()
    try:
        with Pyro5.api.Proxy(daemon.register(service)) as remote:
            for call in (lambda: remote.register(forged, 10), lambda: remote.lookup(forged),
                         lambda: remote.lookup_all(forged, 10), lambda: remote.notify(forged, 1, "PYRO:x@h:1")):
                with pytest.raises((TypeError, ValueError)):
                    call()
            assert remote.lookup_all(ServiceTemplate(), 10).total == 0  # nothing got in, and it answers
    finally:
        service.close()


# -- a stranger taking a registration by its public id ------------------------------------------------

@Pyro5.api.expose
class Owner:
    """The genuine service."""

    def whoami(self) -> str:
        return "owner"


class Stranger(threading.Thread):
    """Registers the owner's id, with its own URI, every ``pace`` seconds until stopped, with each
    proof a stranger has: none, a guess, and the cookie and secret of a registration of its own.
    Counts its attempts (and tells of each) and keeps what each got back."""

    def __init__(self, lookup_uri: str, service_id: str, pace: float) -> None:
        super().__init__(name="stranger", daemon=True)
        self.lookup_uri, self.service_id, self.pace = lookup_uri, service_id, pace
        self.outcomes: list[Any] = []  # a registration it got, or the exception raised
        self.condition = threading.Condition()
        self.stop = threading.Event()

    def run(self) -> None:
        with Pyro5.api.Proxy(self.lookup_uri) as remote:
            own = remote.register(ServiceItem(None, STRANGER_URI, ["hostile.Other"]), 30)
            proofs = itertools.cycle([None, secrets.token_urlsafe(16), own.lease.cookie, own.secret])
            while not self.stop.is_set():
                item = ServiceItem(self.service_id, STRANGER_URI, [Owner], [Name("quotes")])
                proof = next(proofs)
                try:  # no proof, no third argument: as a client from before proofs calls
                    outcome: Any = remote.register(item, 1.5, *(() if proof is None else (proof,)))
                except Exception as exc:
                    outcome = exc
                with self.condition:
                    self.outcomes.append(outcome)
                    self.condition.notify_all()
                self.stop.wait(self.pace)  # the attack's rate, not a synchronisation

    def wait_attempts(self, count: int, timeout: float = 30) -> bool:
        with self.condition:
            return self.condition.wait_for(lambda: len(self.outcomes) >= count, timeout)


STRANGER_URI = "PYRO:stranger@127.0.0.1:1"
ATTEMPTS = 30  # at 0.1 s apart: 3 s, two terms of the owner's lease of 1.5 s


def test_a_stranger_re_registering_an_owners_id_gets_only_errors_and_nobody_sees_it(
        daemon: Any, request: pytest.FixtureRequest) -> None:
    # python -m lookup serve: a real process, its multiplex server; the hostile suite's canary renews a
    # registration of its own throughout, and its memory is checked (tests/hostile/targets.py)
    with serving("lookup", request) as target, watched(target):
        _hijack(daemon, target.uri)


def _hijack(daemon: Any, lookup_uri: str) -> None:
    """An owner registered at ``lookup_uri`` by a JoinManager while a :class:`Stranger` re-registers its id:
    lookups, and a cache, see only the owner; the stranger gets only errors; the owner's lease is the same."""
    owner_uri = str(daemon.register(Owner()))
    wanted = ServiceTemplate(types=[Owner])
    seen: list[tuple[str, str]] = []  # what the cache told, (kind, service URI)
    with JoinManager(owner_uri, types=[Owner], attributes=[Name("quotes")], lookups=[lookup_uri],
                     lease_duration=1.5) as canary, \
            LookupCache(lookup_uri, wanted, listener=lambda kind, item: seen.append((kind, item.service_uri))) as cache:
        assert canary.wait_registered(1, timeout=10) and cache.wait_ready(10)
        service_id = canary.service_id
        assert service_id is not None
        cookie = canary.registrations()[lookup_uri].lease.cookie
        stranger = Stranger(lookup_uri, service_id, pace=0.1)
        stranger.start()
        try:
            with Pyro5.api.Proxy(lookup_uri) as remote:
                for attempt_number in range(1, ATTEMPTS + 1):  # after each attempt, what everyone sees
                    assert stranger.wait_attempts(attempt_number)
                    assert str(remote.lookup(wanted)._pyroUri) == owner_uri
                    [found] = remote.lookup_all(ServiceTemplate(service_id=service_id), 10).items
                    assert found.service_uri == owner_uri
                    assert [item.service_uri for item in cache.items()] == [owner_uri]
        finally:
            stranger.stop.set()
            stranger.join(10)
        assert all(isinstance(outcome, NotOwnerError) for outcome in stranger.outcomes), stranger.outcomes
        assert all(service_id in str(outcome) for outcome in stranger.outcomes)
        assert STRANGER_URI not in {uri for _, uri in seen} and seen == [("added", owner_uri)]
        # the canary never missed a renewal: never lost, never registered again, its lease the same
        assert canary.times_registered == 1 and canary.last_error is None
        assert canary.registrations()[lookup_uri].lease.cookie == cookie


# -- forged dicts in landlord's msgpack dialect, against a served lookup service --------------------------

def _item(**changes: Any) -> dict[str, Any]:
    data = {"__class__": "lookup.ServiceItem", "service_id": None, "service": "PYRO:x@127.0.0.1:1", "types": [],
            "attributes": []}
    data.update(changes)
    return data


def _entry(**changes: Any) -> dict[str, Any]:
    data = {"__class__": "lookup.Entry", "class": "a.B", "lineage": ["a.B"], "fields": {}}
    data.update(changes)
    return data


LEASE_DICT = {"__class__": "landlord.LandlordLease", "cookie": "c", "landlord": "PYRO:x@127.0.0.1:1",
              "landlord_id": "l", "remaining": 1.0}
SETS_FORGED = {  # what only the dialect carries (plain msgpack sends a set as a list), where the service wants
    # a list, a name or a value
    "types a set": _item(types={"t.A"}),
    "attributes a frozenset": _item(attributes=frozenset()),
    "a lineage a set": _item(attributes=[_entry(lineage={"a.B"})]),
    "a field value a set": _item(attributes=[_entry(fields={"f": {1, 2}})]),
    "a field value a tuple of sets": _item(attributes=[_entry(fields={"f": (frozenset({1}),)})]),
    "a template's types a frozenset": {"__class__": "lookup.ServiceTemplate", "service_id": None,
                                       "types": frozenset({"t.A"}), "attributes": []},
}
INNERMOST_FIRST_FORGED = {  # msgpack makes classes innermost first: a class already made where a plain value belongs
    "an entry in an entry's field": _item(attributes=[_entry(fields={"f": _entry()})]),
    "a lease in an entry's field": _item(attributes=[_entry(fields={"f": LEASE_DICT})]),
    "a lease as an attribute": _item(attributes=[LEASE_DICT]),
    "an item as a template's attribute": {"__class__": "lookup.ServiceTemplate", "service_id": None, "types": [],
                                          "attributes": [_item()]},
    "an entry as an item's service": _item(service=_entry()),
    "an item in a matches' items": {"__class__": "lookup.ServiceMatches", "items": [_item(service=5)], "total": 1},
}
SENT_FORGED = (list(INNERMOST_FIRST_FORGED.values()) + FORGED
               + [FORGED_PACKED[name] for name in ("not JSON", "a shape's lineage huge", "a layout a bool",
                                                    "a value's place out of range", "total a bool")])


def _remote_calls(remote: Any, forged: Any) -> list[Callable[[], Any]]:
    return [lambda: remote.register(forged, 10), lambda: remote.lookup(forged),
            lambda: remote.lookup_all(forged, 10), lambda: remote.notify(forged, 1, "PYRO:x@127.0.0.1:1")]


@pytest.mark.parametrize("serializer", ["landlord's dialect", "msgpack"])
def test_forged_dicts_in_msgpack_are_refused_and_a_canary_renews_throughout(
        daemon: Any, serve_lookup: Callable[..., tuple[LookupProcess, int]], serializer: str) -> None:
    _, port = serve_lookup("--no-announce")  # python -m lookup serve: a real process, its guarded server
    lookup_uri = f"PYRO:{LOOKUP_OBJECT_ID}@127.0.0.1:{port}"
    owner_uri = str(daemon.register(Owner()))
    seen: list[tuple[str, str]] = []
    with JoinManager(owner_uri, types=[Owner], attributes=[Name("quotes")], lookups=[lookup_uri],
                     lease_duration=1.5) as canary, \
            LookupCache(lookup_uri, ServiceTemplate(), listener=lambda kind, item: seen.append(
                (kind, item.service_uri))) as cache:
        assert canary.wait_registered(1, timeout=10) and cache.wait_ready(10)
        cookie = canary.registrations()[lookup_uri].lease.cookie
        refused = 0
        sent = SENT_FORGED + (list(SETS_FORGED.values()) if serializer == "landlord's dialect" else [])
        for forged in sent:
            for call_number in range(4):  # a proxy of its own for each: a refused message may close its connection
                with _forger(lookup_uri, serializer) as remote:
                    # a SerializeError: msgpack reads a dict tagged with a class nobody registered before its
                    # holder's converter can refuse it (a field named "__class__"); said, and the connection closed
                    with pytest.raises((TypeError, ValueError, Pyro5.errors.SerializeError)):
                        _remote_calls(remote, forged)[call_number]()
                    refused += 1
        assert refused == 4 * len(sent)
        with wire_proxy(lookup_uri) as remote:  # nothing got in, and it answers
            assert [item.service_uri for item in remote.lookup_all(ServiceTemplate(), 10).items] == [owner_uri]
        # the canary never missed a renewal: never lost, never registered again, its lease the same
        assert canary.times_registered == 1 and canary.last_error is None
        assert canary.registrations()[lookup_uri].lease.cookie == cookie
        assert seen == [("added", owner_uri)]


def _forger(uri: str, serializer: str) -> Any:
    """A proxy of ``uri`` speaking landlord's msgpack dialect, or Pyro5's plain msgpack."""
    if serializer == "msgpack":
        proxy = Pyro5.api.Proxy(uri)
        proxy._pyroSerializer = "msgpack"
        return proxy
    return wire_proxy(uri)
