"""The lookup wire format: round trips, entries of unknown classes, forged dicts refused."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
import threading
import time
from typing import Any

import Pyro5.api
import Pyro5.core
import pytest
from Pyro5.serializers import SerializerBase, SerpentSerializer

import lookup
from landlord import LandlordLease
from lookup import (
    TRANSITION_MATCH_NOMATCH,
    TRANSITION_NOMATCH_MATCH,
    Comment,
    Entry,
    EventRegistration,
    Expiry,
    Location,
    LookupService,
    Name,
    ServiceEvent,
    ServiceInfo,
    ServiceItem,
    ServiceMatches,
    ServiceRegistration,
    ServiceTemplate,
    Status,
    UnknownEntry,
    entry_lineage,
    qualified_name,
)

URI = "PYRO:quoter@127.0.0.1:9999"
serializer = SerpentSerializer()


def round_trip(obj: object) -> Any:
    return serializer.loads(serializer.dumps(obj))


class Printer(Entry):
    color: str | None = None
    ppm: int | None = None
    trays: Any = None


class ColorPrinter(Printer):
    duplex: bool | None = None


STANDARD = [Name("laser"), Location("3", "301", "North"), Comment("by the window"),
            ServiceInfo("Quoter", "ACME", "ACME", "1.0", "Q-1", "0001"), Status(Status.WARNING)]


# -- entries ------------------------------------------------------------------------

@pytest.mark.parametrize("entry", STANDARD + [Name(), Printer("red", 20, ["A4", "A3"]),
                                              ColorPrinter(ppm=5, duplex=False, trays={"a": [1, 2.5]})])
def test_entries_arrive_as_themselves(entry: Entry) -> None:
    copy = round_trip(entry)
    assert type(copy) is type(entry) and copy == entry


def test_an_entry_travels_by_class_name_with_its_lineage() -> None:
    data = SerializerBase.class_to_dict(ColorPrinter("red", duplex=True))
    assert data == {"__class__": "lookup.Entry", "class": qualified_name(ColorPrinter),
                    "lineage": [qualified_name(ColorPrinter), qualified_name(Printer)],
                    "fields": {"color": "red", "ppm": None, "trays": None, "duplex": True}}


def test_tuples_and_lists_in_fields_arrive_as_sent() -> None:
    assert round_trip(Printer(trays=("A4", "A3"))).trays == ("A4", "A3")
    assert round_trip(Printer(trays=["A4", "A3"])).trays == ["A4", "A3"]
    assert round_trip(Printer(trays=math.inf)).trays == math.inf


@pytest.mark.parametrize("value, error", [
    (object(), TypeError), (b"x", TypeError), ({1, 2}, TypeError), (math.nan, ValueError),
    ({"__class__": "lookup.Entry"}, ValueError), (Name("inner"), TypeError),
])
def test_entries_with_non_wire_values_are_not_sent(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="trays"):
        serializer.dumps(Printer(trays=value))


def forged_entry(**changes: Any) -> dict[str, Any]:
    data = {"__class__": "lookup.Entry", "class": "elsewhere.LaserPrinter",
            "lineage": ["elsewhere.LaserPrinter", qualified_name(Printer)],
            "fields": {"color": "red", "ppm": 30, "trays": None, "toner": "black"}}
    data.update(changes)
    return data


def test_an_entry_of_an_unknown_class_arrives_as_an_unknown_entry() -> None:
    data = forged_entry()
    entry = round_trip(data)  # a dict tagged lookup.Entry, as another process would send it
    assert isinstance(entry, UnknownEntry)
    assert entry.class_name == "elsewhere.LaserPrinter" and entry.toner == "black"
    assert entry_lineage(entry) == ("elsewhere.LaserPrinter", qualified_name(Printer))
    assert SerializerBase.class_to_dict(entry) == data
    assert serializer.dumps(entry) == serializer.dumps(data)  # and leaves exactly as it came
    assert round_trip(entry) == entry


def test_an_unknown_entry_matches_templates_of_its_lineage() -> None:
    service = round_trip(ServiceItem("id", URI, ["a.Printer"], [Name("x")]))
    service = service.replace(attributes=[*service.attributes, round_trip(forged_entry())])
    assert ServiceTemplate(attributes=[Printer(color="red")]).matches(service)
    assert ServiceTemplate(attributes=[Printer(ppm=30), Name("x")]).matches(service)
    assert not ServiceTemplate(attributes=[Printer(color="blue")]).matches(service)
    assert not ServiceTemplate(attributes=[ColorPrinter()]).matches(service)  # not in its lineage
    laser = round_trip(forged_entry(fields={"color": None, "ppm": None, "trays": None, "toner": "black"}))
    assert ServiceTemplate(attributes=[laser]).matches(service)  # an unknown template entry too


def test_an_unknown_entry_becomes_real_where_its_class_is_known() -> None:
    unknown = UnknownEntry(qualified_name(Printer), [qualified_name(Printer)],
                           {"color": "red", "ppm": 3, "trays": None})
    copy = round_trip(unknown)
    assert type(copy) is Printer and copy == Printer("red", 3)


def test_a_known_class_takes_missing_fields_as_none() -> None:
    copy = round_trip(forged_entry(**{"class": qualified_name(Printer), "lineage": [qualified_name(Printer)],
                                      "fields": {"color": "red"}}))
    assert copy == Printer("red")


@pytest.mark.parametrize("changes, error", [
    ({"class": 5}, TypeError),
    ({"class": "NoModule"}, ValueError),
    ({"class": "evil.__builtins__.eval x"}, ValueError),
    ({"lineage": "elsewhere.LaserPrinter"}, TypeError),
    ({"lineage": []}, ValueError),
    ({"lineage": [qualified_name(Printer)]}, ValueError),  # does not start with its class
    ({"lineage": ["elsewhere.LaserPrinter", None]}, TypeError),
    ({"lineage": ["elsewhere.LaserPrinter"] + [f"a.B{i}" for i in range(40)]}, ValueError),
    ({"fields": [["color", "red"]]}, TypeError),
    ({"fields": {f"f{i}": 1 for i in range(65)}}, ValueError),
    ({"fields": {"__init__": 1}}, ValueError),
    ({"fields": {"not a name": 1}}, ValueError),
    ({"fields": {"color": {1, 2}}}, TypeError),
    ({"fields": {"color": {"__class__": "lookup.Entry"}}}, ValueError),
    ({"class": qualified_name(Printer), "lineage": [qualified_name(Printer)],
      "fields": {"color": "red", "toner": "black"}}, ValueError),  # a field the known class lacks
])
def test_forged_entries_are_refused_clearly(changes: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        serializer.recreate_classes(forged_entry(**changes))


@pytest.mark.parametrize("missing", ["class", "lineage", "fields"])
def test_entries_missing_a_key_are_refused(missing: str) -> None:
    data = forged_entry()
    del data[missing]
    with pytest.raises(ValueError, match=missing):
        serializer.recreate_classes(data)


def test_a_nan_field_is_refused_on_arrival() -> None:
    # serpent sends NaN as a nested dict; a forged sender might send it
    with pytest.raises(ValueError):
        round_trip(forged_entry(fields={"color": math.nan}))


# -- items, templates, matches -----------------------------------------------------------

def quoter(service_id: str | None = "id-1", service: Any = URI) -> ServiceItem:
    return ServiceItem(service_id, service, ["a.Quoter", "a.StockQuoter"],
                       STANDARD + [ColorPrinter("red", 9, ("A4",), True)])


@pytest.mark.parametrize("as_proxy", [False, True])
@pytest.mark.parametrize("service_id", [None, "id-1"])
def test_an_item_arrives_with_a_proxy_for_its_service(as_proxy: bool, service_id: str | None) -> None:
    copy = round_trip(quoter(service_id, Pyro5.api.Proxy(URI) if as_proxy else URI))
    assert isinstance(copy, ServiceItem) and copy == quoter(service_id)
    assert isinstance(copy.service, Pyro5.api.Proxy) and copy.service_uri == URI
    assert [type(e) for e in copy.attributes] == [type(e) for e in quoter().attributes]


def test_an_item_travels_as_documented() -> None:
    data = SerializerBase.class_to_dict(ServiceItem(None, URI, ["a.Quoter"], [Name("x")]))
    assert data == {"__class__": "lookup.ServiceItem", "service_id": None, "service": URI,
                    "types": ["a.Quoter"],
                    "attributes": [{"__class__": "lookup.Entry", "class": "lookup.entry.Name",
                                    "lineage": ["lookup.entry.Name"], "fields": {"name": "x"}}]}


def test_templates_arrive_as_themselves() -> None:
    for template in (ServiceTemplate(), ServiceTemplate("id-1", ["a.Quoter"], [Printer(color="red"), Name()])):
        copy = round_trip(template)
        assert isinstance(copy, ServiceTemplate) and copy == template
    data = SerializerBase.class_to_dict(ServiceTemplate(types=["a.Quoter"]))
    assert data == {"__class__": "lookup.ServiceTemplate", "service_id": None, "types": ["a.Quoter"],
                    "attributes": []}


def test_matches_arrive_with_their_items() -> None:
    found = ServiceMatches([quoter("id-1"), quoter("id-2")], 7)
    copy = round_trip(found)
    assert isinstance(copy, ServiceMatches) and copy == found
    assert all(isinstance(item.service, Pyro5.api.Proxy) for item in copy.items)
    assert round_trip(ServiceMatches([], 0)) == ServiceMatches([], 0)


def test_an_item_with_an_unknown_entry_travels_on_unchanged() -> None:
    data = SerializerBase.class_to_dict(ServiceItem("id", URI, ["a.Printer"], []))
    data["attributes"] = [forged_entry()]
    arrived = round_trip(data)
    assert isinstance(arrived.attributes[0], UnknownEntry)
    assert SerializerBase.class_to_dict(arrived)["attributes"] == [forged_entry()]
    assert ServiceTemplate(types=["a.Printer"], attributes=[Printer(ppm=30)]).matches(round_trip(arrived))


def item_dict(**changes: Any) -> dict[str, Any]:
    data = SerializerBase.class_to_dict(ServiceItem("id", URI, ["a.Quoter"], [Name("x")]))
    data.update(changes)
    return data


LEASE = SerializerBase.class_to_dict(LandlordLease("c", URI, "landlord", time.time() + 30))


@pytest.mark.parametrize("changes, error", [
    ({"service_id": 5}, TypeError),
    ({"service_id": ""}, ValueError),
    ({"service": 5}, TypeError),
    ({"service": "http://evil"}, ValueError),
    ({"service": {"__class__": "Pyro5.client.Proxy", "state": ()}}, TypeError),
    ({"types": "a.Quoter"}, TypeError),
    ({"types": [5]}, TypeError),
    ({"types": ["no-dots"]}, ValueError),
    ({"types": [f"a.T{i}" for i in range(300)]}, ValueError),
    ({"attributes": "x"}, TypeError),
    ({"attributes": ["x"]}, TypeError),
    ({"attributes": [LEASE]}, TypeError),  # only entries may be attributes
    ({"attributes": [{"name": "x"}]}, TypeError),  # untagged
    ({"attributes": [forged_entry(lineage=[])]}, ValueError),  # a bad nested entry
])
def test_forged_items_are_refused_clearly(changes: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        serializer.recreate_classes(item_dict(**changes))


@pytest.mark.parametrize("missing", ["service_id", "service", "types", "attributes"])
def test_items_missing_a_key_are_refused(missing: str) -> None:
    data = item_dict()
    del data[missing]
    with pytest.raises(ValueError, match=missing):
        serializer.recreate_classes(data)


@pytest.mark.parametrize("data, error", [
    ({"service_id": None, "types": [], "attributes": [LEASE]}, TypeError),
    ({"service_id": None, "types": [], "attributes": {}}, TypeError),
    ({"service_id": [], "types": [], "attributes": []}, TypeError),
    ({"types": [], "attributes": []}, ValueError),
    ({"service_id": None, "attributes": []}, ValueError),
])
def test_forged_templates_are_refused_clearly(data: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        serializer.recreate_classes(dict(data, __class__="lookup.ServiceTemplate"))


@pytest.mark.parametrize("data, error", [
    ({"items": [], "total": -1}, ValueError),
    ({"items": [item_dict()], "total": 0}, ValueError),
    ({"items": [], "total": True}, TypeError),
    ({"items": [], "total": 1.5}, TypeError),
    ({"items": {}, "total": 0}, TypeError),
    ({"items": [LEASE], "total": 1}, TypeError),
    ({"items": [item_dict(service=3)], "total": 1}, TypeError),
    ({"total": 0}, ValueError),
])
def test_forged_matches_are_refused_clearly(data: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        serializer.recreate_classes(dict(data, __class__="lookup.ServiceMatches"))


# -- events and registrations ------------------------------------------------------------
# Their forms are pinned as literal dicts: what this version sends, an older one reads, and the reverse.

LEASE_DICT = {"__class__": "landlord.LandlordLease", "cookie": "c" * 16, "landlord": URI,
              "landlord_id": "lookup-1", "remaining": 30.0, "term": 30.0}
ITEM_DICT = {"__class__": "lookup.ServiceItem", "service_id": "id-1", "service": URI, "types": ["a.Quoter"],
             "attributes": [{"__class__": "lookup.Entry", "class": "lookup.entry.Name",
                             "lineage": ["lookup.entry.Name"], "fields": {"name": "x"}}]}


def a_lease(**changes: Any) -> LandlordLease:
    lease = round_trip(dict(LEASE_DICT, **changes))
    assert isinstance(lease, LandlordLease)
    return lease


def test_events_and_registrations_travel_as_documented() -> None:
    lease = a_lease()
    item = ServiceItem("id-1", URI, ["a.Quoter"], [Name("x")])
    event = ServiceEvent(3, 4, {"mine": [1]}, "id-1", TRANSITION_NOMATCH_MATCH, item)
    assert SerializerBase.class_to_dict(event) == {
        "__class__": "lookup.ServiceEvent", "event_id": 3, "sequence_number": 4, "handback": {"mine": [1]},
        "service_id": "id-1", "transition": TRANSITION_NOMATCH_MATCH, "item": ITEM_DICT}
    assert SerializerBase.class_to_dict(EventRegistration(3, lease, 4)) == {
        "__class__": "lookup.EventRegistration", "event_id": 3, "lease": lease, "sequence_number": 4}
    assert SerializerBase.class_to_dict(ServiceRegistration("id-1", lease)) == {
        "__class__": "lookup.ServiceRegistration", "service_id": "id-1", "lease": lease}


def test_events_and_registrations_in_the_documented_form_arrive_as_themselves() -> None:
    event = round_trip({"__class__": "lookup.ServiceEvent", "event_id": 3, "sequence_number": 4,
                        "handback": {"mine": [1]}, "service_id": "id-1", "transition": 2, "item": ITEM_DICT})
    assert isinstance(event, ServiceEvent)
    assert (event.event_id, event.sequence_number, event.handback, event.service_id, event.transition) == (
        3, 4, {"mine": [1]}, "id-1", TRANSITION_NOMATCH_MATCH)
    assert event.item == ServiceItem("id-1", URI, ["a.Quoter"], [Name("x")])
    assert isinstance(event.item.service, Pyro5.api.Proxy)
    gone = round_trip({"__class__": "lookup.ServiceEvent", "event_id": 3, "sequence_number": 5, "handback": None,
                       "service_id": "id-1", "transition": TRANSITION_MATCH_NOMATCH, "item": None})
    assert isinstance(gone, ServiceEvent) and gone.item is None and gone.sequence_number == 5
    watch = round_trip({"__class__": "lookup.EventRegistration", "event_id": 3, "lease": LEASE_DICT,
                        "sequence_number": 4})
    assert isinstance(watch, EventRegistration) and (watch.event_id, watch.lease, watch.sequence_number) == (
        3, a_lease(), 4)
    registration = round_trip({"__class__": "lookup.ServiceRegistration", "service_id": "id-1", "lease": LEASE_DICT})
    assert registration == ServiceRegistration("id-1", a_lease())
    assert round_trip(registration) == registration


def test_a_service_registration_is_a_value_of_its_id_and_lease() -> None:
    made = ServiceRegistration("id-1", a_lease())
    same = ServiceRegistration(service_id="id-1", lease=a_lease())  # another lease object, the same lease
    assert made == same and hash(made) == hash(same) and len({made, same}) == 1
    assert made != ServiceRegistration("id-2", a_lease())
    assert made != ServiceRegistration("id-1", a_lease(cookie="d" * 16))
    with pytest.raises(AttributeError):
        made.lease = a_lease(cookie="d" * 16)  # type: ignore[misc]
    for bad in ((1, a_lease()), ("id-1", "not a lease"), (None, a_lease())):
        with pytest.raises(TypeError):
            ServiceRegistration(*bad)  # type: ignore[arg-type]


def test_a_registration_carries_its_secret_to_its_registrant_alone_and_never_shows_it() -> None:
    secret = "s" * 22
    made = ServiceRegistration("id-1", a_lease(), secret)
    assert SerializerBase.class_to_dict(made)["secret"] == secret
    arrived = round_trip(made)
    assert arrived == made and arrived.secret == secret
    assert made == ServiceRegistration("id-1", a_lease()) and secret not in repr(made)  # a value of id and lease
    before_secrets = round_trip({"__class__": "lookup.ServiceRegistration", "service_id": "id-1", "lease": LEASE_DICT})
    assert before_secrets.secret is None
    for bad in (5, ["s"]):
        with pytest.raises(TypeError, match="secret"):
            round_trip({"__class__": "lookup.ServiceRegistration", "service_id": "id-1", "lease": LEASE_DICT,
                        "secret": bad})
        with pytest.raises(TypeError, match="secret"):
            ServiceRegistration("id-1", a_lease(), bad)  # type: ignore[arg-type]


def test_importing_lookup_registers_landlord_and_lookup_converters() -> None:
    code = ("import sys, lookup\n"
            "from Pyro5.serializers import SerpentSerializer as S\n"
            "assert 'landlord' in sys.modules\n"
            "data = S().dumps(lookup.ServiceItem(None, 'PYRO:x@127.0.0.1:1', [], [lookup.Name('n')]))\n"
            "assert b'lookup.ServiceItem' in data and b'lookup.entry.Name' in data\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_facade_exports_what_it_lists() -> None:
    assert all(hasattr(lookup, name) for name in lookup.__all__)
    assert {"Entry", "UnknownEntry", "ServiceItem", "ServiceTemplate", "ServiceMatches",
            "type_names"} <= set(lookup.__all__)


@Pyro5.api.expose
class Matcher:
    """A stand-in for the lookup service: receives items and templates over a real daemon."""

    def __init__(self) -> None:
        self.items: list[ServiceItem] = []

    def register(self, item: ServiceItem) -> str:
        assert isinstance(item, ServiceItem) and isinstance(item.service, Pyro5.api.Proxy)
        self.items.append(item.replace(service_id=f"id-{len(self.items)}"))
        return self.items[-1].service_id  # type: ignore[return-value]

    def lookup_all(self, template: ServiceTemplate, max_matches: int) -> ServiceMatches:
        found = [item for item in self.items if template.matches(item)]
        return ServiceMatches(found[:max_matches], len(found))


def test_items_templates_and_matches_cross_a_real_daemon(daemon: Any) -> None:
    with Pyro5.api.Proxy(daemon.register(Matcher())) as proxy:
        assert proxy.register(quoter(None)) == "id-0"
        assert proxy.register(ServiceItem(None, URI, ["a.Other"], [UnknownEntry(
            "elsewhere.LaserPrinter", ["elsewhere.LaserPrinter", qualified_name(Printer)], {"color": "red"})]))
        found = proxy.lookup_all(ServiceTemplate(attributes=[Printer(color="red")]), 1)
        assert isinstance(found, ServiceMatches) and found.total == 2 and len(found.items) == 1
        assert found.items[0] == quoter("id-0") and isinstance(found.items[0].service, Pyro5.api.Proxy)
        other = proxy.lookup_all(ServiceTemplate(types=["a.Other"]), 10).items
        assert [type(e) for e in other[0].attributes] == [UnknownEntry]


# -- the packed form of matches ------------------------------------------------------------

class Tray(Entry):
    """A class with a default that is not None, and a field its __init__ does not take."""

    size: str | None = "A4"
    sheets: int | None = dataclasses.field(default=None, init=False)


class Sheet(Entry):
    """A plain class: made on arrival by filling its fields, as its __init__ would."""

    size: str | None = "A4"
    weight: int | None = None


class Upper(Entry):
    """A class whose __post_init__ must run on arrival."""

    code: str | None = None

    def __post_init__(self) -> None:
        self.seen = True


class Counted(Entry):
    """A class with an __init__ of its own."""

    count: int | None = None

    def __init__(self, count: int | None = None) -> None:
        self.count = count
        self.made_by_init = True


class Listed(Entry):
    """A class with a default factory."""

    tags: list[str] | None = dataclasses.field(default_factory=lambda: ["new"])


class Guarded(Entry):
    """A class whose __setattr__ must see every field set."""

    level: int | None = None

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        object.__setattr__(self, "set_by_setattr", True)


class Redecorated(Entry):
    """A class whose __init__ is replaced after its definition."""

    mark: str | None = None


_made_init = Redecorated.__init__


def _init_again(self: Redecorated, mark: str | None = None) -> None:
    _made_init(self, mark)
    self.again = True


Redecorated.__init__ = _init_again  # type: ignore[method-assign]


def packed(*items: ServiceItem, total: int | None = None) -> dict[str, Any]:
    return SerializerBase.class_to_dict(ServiceMatches(items, len(items) if total is None else total))


def test_matches_travel_packed_as_documented() -> None:
    data = packed(ServiceItem("id-1", URI, ["a.Quoter"], [Name("x"), Location(floor="3", room="301")]),
                  ServiceItem("id-2", URI, ["a.Quoter"], [Name("y"), Location(floor="4", room="401")]),
                  ServiceItem(None, URI, [], [ColorPrinter(ppm=5, trays=("A4", "A3"), duplex=True)]), total=9)
    assert data == {"__class__": "lookup.PackedMatches", "total": 9, "values": [("A4", "A3")], "table": (
        '{"lineages":[["lookup.entry.Name"],["lookup.entry.Location"],'
        f'["{qualified_name(ColorPrinter)}","{qualified_name(Printer)}"]],'
        '"shapes":[[0,["name"],[0]],[1,["floor","room","building"],[0,1]],'
        '[2,["color","ppm","trays","duplex"],[1,2,3]]],'
        '"layouts":[[["a.Quoter"],[0,1]],[[],[2]]],'
        f'"items":[["id-1","{URI}",0,"x","3","301"],["id-2","{URI}",0,"y","4","401"],'
        f'[null,"{URI}",1,5,[0],true]]}}')}


PACKED_VALUES = [
    "text", "", "quotes ' and \" and \\ and \n", "ünïcødé ✓", 0, -1, 2**70, -(2**70), 1.5, -0.0, 1e300,
    math.inf, -math.inf, True, False, [], (), {}, [1, (2, 3)], (1, [2, 3]), {"a": [1, 2.5], "b": {"c": None}},
    [None, True, 1], ("A4",),
]


@pytest.mark.parametrize("value", PACKED_VALUES, ids=repr)
def test_packed_values_arrive_as_sent(value: Any) -> None:
    found = round_trip(ServiceMatches([ServiceItem("id", URI, ["a.P"], [Printer(trays=value)])], 1))
    arrived = found.items[0].attributes[0].trays
    assert arrived == value and type(arrived) is type(value)
    assert repr(arrived) == repr(value)  # tuples stay tuples, nested too; -0.0 stays -0.0


def test_packed_matches_arrive_as_themselves() -> None:
    unknown = UnknownEntry("elsewhere.LaserPrinter", ["elsewhere.LaserPrinter", qualified_name(Printer)],
                           {"color": "red", "ppm": None, "trays": None, "toner": "black"})
    tray = Tray(None)
    tray.sheets = 250
    items = [quoter("id-1"), quoter(None), ServiceItem("id-3", URI, [], []),
             ServiceItem("id-4", URI, ["a.Printer"], [unknown, Name(), tray, Name("again")])]
    copy = round_trip(ServiceMatches(items, 10))
    assert isinstance(copy, ServiceMatches) and copy == ServiceMatches(items, 10)
    assert [[type(e) for e in item.attributes] for item in copy.items] == [
        [type(e) for e in item.attributes] for item in items]
    arrived = copy.items[3].attributes
    assert arrived[0].fields == unknown.fields  # None fields kept, in order
    assert list(arrived[0].fields) == ["color", "ppm", "trays", "toner"]
    assert arrived[2].size is None and arrived[2].sheets == 250  # None, not the class's default
    assert round_trip(ServiceMatches([], 0)) == ServiceMatches([], 0)


def test_entries_arrive_packed_as_their_init_would_make_them() -> None:
    sent = [Sheet(None, 80), Sheet(), Upper("abc"), Counted(3), Listed(), Listed(None), Guarded(2), Redecorated("x")]
    arrived = round_trip(ServiceMatches([ServiceItem("id", URI, [], sent)], 1)).items[0].attributes
    assert arrived == tuple(sent) and [type(entry) for entry in arrived] == [type(entry) for entry in sent]
    assert arrived[0].size is None and arrived[0].weight == 80  # None sent as None, not the default "A4"
    assert list(vars(arrived[1])) == ["size", "weight"] and arrived[1].size == "A4"
    assert arrived[2].seen and arrived[3].made_by_init and arrived[6].set_by_setattr and arrived[7].again
    assert arrived[4].tags == ["new"] and arrived[5].tags is None


@pytest.mark.parametrize(("names", "given", "values"), [
    (["floor", "room", "building"], [0, 1, 2], ["3", "301", "North"]),  # every field, in the class's order
    (["floor", "room", "building"], [0, 2], ["3", "North"]),            # some, in the class's order
    (["room", "floor", "building"], [0, 1, 2], ["301", "3", "North"]),  # every field, the sender's order
    (["building", "floor"], [0, 1], ["North", "3"]),                    # some, the sender's order, one not sent
])
def test_an_entry_arrives_packed_whatever_order_its_fields_were_sent_in(names: list[str], given: list[int],
                                                                         values: list[str]) -> None:
    sent = dict(zip([names[place] for place in given], values))
    text = json.dumps({"lineages": [[qualified_name(Location)]], "shapes": [[0, names, given]],
                       "layouts": [[[], [0]]], "items": [["id", URI, 0, *values]]})
    arrived = serializer.recreate_classes({"__class__": "lookup.PackedMatches", "total": 1, "table": text,
                                           "values": []}).items[0].attributes[0]
    assert type(arrived) is Location and arrived == Location(**sent)
    assert list(vars(arrived)) == ["floor", "room", "building"]  # the class's order, a field not sent None


def test_what_is_known_of_an_entry_class_is_what_holds_when_an_answer_is_read() -> None:
    name = f"{__name__}.{test_what_is_known_of_an_entry_class_is_what_holds_when_an_answer_is_read.__qualname__}" \
        ".<locals>.LateSheet"
    data = packed(ServiceItem("id", URI, [], [UnknownEntry(name, [name], {"size": "A3"})]))
    assert type(round_trip(data).items[0].attributes[0]) is UnknownEntry

    class LateSheet(Entry):  # defined once an answer with its entries was read
        size: str | None = None

    assert LateSheet._entry_class_name == name
    first = round_trip(data).items[0].attributes[0]
    assert type(first) is LateSheet and first.size == "A3"
    made = LateSheet.__init__

    def counted(self: LateSheet, size: str | None = None) -> None:
        made(self, size)
        self.counted = True

    LateSheet.__init__ = counted  # type: ignore[method-assign]  # replaced once its entries were read
    assert round_trip(data).items[0].attributes[0].counted


def test_an_item_of_packed_matches_is_sent_on_as_it_came() -> None:
    unknown = UnknownEntry("elsewhere.LaserPrinter", ["elsewhere.LaserPrinter", qualified_name(Printer)],
                           {"color": "red", "ppm": None, "toner": ("black",)})
    item = round_trip(ServiceMatches([ServiceItem("id", URI, ["a.P"], [unknown])], 1)).items[0]
    assert SerializerBase.class_to_dict(item) == SerializerBase.class_to_dict(
        ServiceItem("id", URI, ["a.P"], [unknown]))
    assert packed(item) == packed(ServiceItem("id", URI, ["a.P"], [unknown]))


def test_items_arrive_with_a_proxy_made_when_first_read_by_that_thread() -> None:
    for arrived in (round_trip(quoter("id-1")), round_trip(ServiceMatches([quoter("id-1")], 1)).items[0]):
        assert arrived._service is None  # no proxy made yet
        owners: list[int] = []
        reader = threading.Thread(target=lambda item=arrived, owners=owners: owners.append(
            item.service._Proxy__pyroOwnerThread))
        reader.start()
        reader.join()
        assert owners == [reader.ident]
        assert isinstance(arrived.service, Pyro5.api.Proxy) and arrived.service is arrived.service
        assert str(arrived.service._pyroUri) == URI
        again = round_trip(quoter("id-1")).replace(attributes=[Name("changed")])
        assert again._service is None and isinstance(again.service, Pyro5.api.Proxy)
        assert again.replace(service=URI).service == URI


def test_a_registered_item_is_packed_once_and_again_after_a_change() -> None:
    service = LookupService(reaper="lazy")
    try:
        registration = service.register(ServiceItem(None, URI, ["a.Quoter"], [Name("before")]), 60)
        first = packed(*service.lookup_all(ServiceTemplate(), 10).items)
        item = service.registry.get(registration.service_id).item  # type: ignore[union-attr]
        kept = item._packing
        assert packed(*service.lookup_all(ServiceTemplate(), 10).items) == first
        assert item._packing is kept is not None
        service.set_attributes(registration.lease.cookie, [Name("after")])
        after = round_trip(ServiceMatches(service.lookup_all(ServiceTemplate(), 10).items, 1))
        assert after.items[0].attributes == (Name("after"),)
    finally:
        service.close()


def test_an_item_not_registered_is_packed_afresh_each_time() -> None:
    name = Name("before")
    item = ServiceItem("id", URI, ["a.Quoter"], [name])
    assert round_trip(ServiceMatches([item], 1)).items[0].attributes == (Name("before"),)
    name.name = "after"  # entries are mutable; an item outside a registry may be sent again changed
    assert round_trip(ServiceMatches([item], 1)).items[0].attributes == (Name("after"),)
    assert item._packing is None


def test_matches_can_be_sent_in_the_dict_form_for_older_clients() -> None:
    try:
        lookup.wire.register_all(packed_matches=False)
        data = SerializerBase.class_to_dict(ServiceMatches([ServiceItem("id-1", URI, ["a.Quoter"], [Name("x")])], 2))
        assert data == {"__class__": "lookup.ServiceMatches", "total": 2, "items": [ITEM_DICT]}
    finally:
        lookup.wire.register_all()
    assert packed()["__class__"] == "lookup.PackedMatches"


# -- the forms older versions sent, read by this one -----------------------------------------
# Literal dicts as the version before the packed form wrote them (None fields, a lineage per entry).

OLD_NAME = {"__class__": "lookup.Entry", "class": "lookup.entry.Name", "lineage": ["lookup.entry.Name"],
            "fields": {"name": "laser"}}
OLD_LOCATION = {"__class__": "lookup.Entry", "class": "lookup.entry.Location", "lineage": ["lookup.entry.Location"],
                "fields": {"floor": "3", "room": None, "building": None}}
OLD_UNKNOWN = {"__class__": "lookup.Entry", "class": "elsewhere.LaserPrinter",
               "lineage": ["elsewhere.LaserPrinter", "elsewhere.Printer"],
               "fields": {"color": "red", "ppm": None, "trays": ("A4",)}}
OLD_ITEM = {"__class__": "lookup.ServiceItem", "service_id": "id-1", "service": URI,
            "types": ["a.Quoter", "a.Service"], "attributes": [OLD_NAME, OLD_LOCATION, OLD_UNKNOWN]}
OLD_TEMPLATE = {"__class__": "lookup.ServiceTemplate", "service_id": None, "types": ["a.Quoter"],
                "attributes": [{"__class__": "lookup.Entry", "class": "lookup.entry.Location",
                                "lineage": ["lookup.entry.Location"],
                                "fields": {"floor": "3", "room": None, "building": None}}]}
OLD_MATCHES = {"__class__": "lookup.ServiceMatches", "total": 3,
               "items": [OLD_ITEM, dict(OLD_ITEM, service_id="id-2", attributes=[])]}
OLD_EVENT = {"__class__": "lookup.ServiceEvent", "event_id": 7, "sequence_number": 2, "handback": None,
             "service_id": "id-1", "transition": 4, "item": OLD_ITEM}


def old_item(service_id: str = "id-1", attributes: bool = True) -> ServiceItem:
    return ServiceItem(service_id, URI, ["a.Quoter", "a.Service"], [
        Name("laser"), Location(floor="3"),
        UnknownEntry("elsewhere.LaserPrinter", ["elsewhere.LaserPrinter", "elsewhere.Printer"],
                     {"color": "red", "ppm": None, "trays": ("A4",)})] if attributes else [])


def test_every_form_the_previous_version_sent_is_read() -> None:
    assert round_trip(OLD_NAME) == Name("laser") and type(round_trip(OLD_NAME)) is Name
    assert round_trip(OLD_LOCATION) == Location(floor="3")
    unknown = round_trip(OLD_UNKNOWN)
    assert isinstance(unknown, UnknownEntry) and unknown.fields == OLD_UNKNOWN["fields"]
    item = round_trip(OLD_ITEM)
    assert item == old_item() and isinstance(item.service, Pyro5.api.Proxy)
    template = round_trip(OLD_TEMPLATE)
    assert template == ServiceTemplate(types=["a.Quoter"], attributes=[Location(floor="3")])
    assert template.matches(item)
    matches = round_trip(OLD_MATCHES)
    assert matches == ServiceMatches([old_item(), old_item("id-2", attributes=False)], 3)
    assert all(isinstance(found.service, Pyro5.api.Proxy) for found in matches.items)
    event = round_trip(OLD_EVENT)
    assert isinstance(event, ServiceEvent) and event.item == old_item()


def test_the_old_forms_cross_a_real_daemon_into_the_lookup_service(daemon: Any) -> None:
    service = LookupService()
    try:
        with Pyro5.api.Proxy(daemon.register(service)) as remote:
            registration = remote.register(OLD_ITEM, 30)  # sent as an older client sends it
            assert registration.service_id == "id-1"
            found = remote.lookup_all(OLD_TEMPLATE, 10)
            assert found == ServiceMatches([old_item()], 1)
            assert remote.lookup(OLD_TEMPLATE)._pyroUri == Pyro5.core.URI(URI)
    finally:
        service.close()


# -- expiries: when each item's registration ends ---------------------------------------------

def test_an_event_carries_its_items_expiry_beside_the_form_older_readers_read() -> None:
    item = ServiceItem("id-1", URI, ["a.Quoter"], [Name("x")])
    event = ServiceEvent(3, 4, None, "id-1", TRANSITION_NOMATCH_MATCH, item, Expiry(1.5, 2.0))
    data = SerializerBase.class_to_dict(event)
    assert data.pop("remaining") == 1.5 and data.pop("term") == 2.0
    assert data == SerializerBase.class_to_dict(ServiceEvent(3, 4, None, "id-1", TRANSITION_NOMATCH_MATCH, item))
    assert round_trip(event).expiry == Expiry(1.5, 2.0)
    assert round_trip(dataclasses.replace(event, expiry=Expiry(math.inf, math.inf))).expiry == Expiry(
        math.inf, math.inf)  # FOREVER
    gone = ServiceEvent(3, 5, None, "id-1", TRANSITION_MATCH_NOMATCH, None, Expiry(1.5, 2.0))
    assert "remaining" not in SerializerBase.class_to_dict(gone)  # no item, nothing to say of it


def test_an_event_without_an_expiry_says_it_is_not_known_and_a_lone_remaining_is_the_term() -> None:
    assert round_trip(OLD_EVENT).expiry is None  # from a lookup service before expiries
    assert round_trip(dict(OLD_EVENT, remaining=3)).expiry == Expiry(3.0, 3.0)  # as for a lease
    assert round_trip(dict(OLD_EVENT, item=None, remaining=3, term=4)).expiry is None  # no item: none


@pytest.mark.parametrize(("changes", "error"), [
    ({"remaining": -1, "term": 2}, ValueError), ({"remaining": 1, "term": [2]}, TypeError),
    ({"remaining": 1, "term": 0}, ValueError), ({"remaining": 1, "term": -math.inf}, ValueError),
    ({"remaining": True, "term": 2}, TypeError), ({"remaining": "1", "term": 2}, TypeError),
    ({"remaining": 1, "term": None}, TypeError), ({"remaining": 0}, ValueError),
])
def test_a_forged_event_expiry_is_refused_clearly(changes: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error, match="malformed lookup.ServiceEvent: its expiry"):
        round_trip(dict(OLD_EVENT, **changes))


def test_matches_carry_expiries_in_their_table_beside_the_form_older_readers_read() -> None:
    items = [quoter("id-1"), quoter("id-2"), quoter("id-3")]
    sent = ServiceMatches(items, 5, [Expiry(1.25, 2.0), None, Expiry(math.inf, math.inf)])
    data = SerializerBase.class_to_dict(sent)
    table = json.loads(data["table"])
    assert table.pop("expiries") == [[1.25, 2.0], None, None]  # JSON has no inf: FOREVER bounds nothing
    assert table == json.loads(SerializerBase.class_to_dict(ServiceMatches(items, 5))["table"])  # rows as before
    copy = round_trip(sent)
    assert copy == sent and copy.expiries == [Expiry(1.25, 2.0), None, None]
    assert round_trip(ServiceMatches(items, 5)).expiries is None  # none sent: none known
    assert round_trip(ServiceMatches(items[:1], 1, [Expiry(1.23456789, 2.5)])).expiries == [Expiry(1.235, 2.5)]  # ms
    assert round_trip(OLD_MATCHES).expiries is None


def test_matches_in_the_dict_form_carry_expiries_too() -> None:
    sent = ServiceMatches([quoter("id-1"), quoter("id-2")], 2, [Expiry(1.0, 2.0), None])
    try:
        lookup.wire.register_all(packed_matches=False)
        data = SerializerBase.class_to_dict(sent)
    finally:
        lookup.wire.register_all()
    assert data["expiries"] == [[1.0, 2.0], None]
    assert round_trip(data).expiries == [Expiry(1.0, 2.0), None]


@pytest.mark.parametrize(("expiries", "error", "says"), [
    ("[[1,2]]", ValueError, "1 expiries for 2 items"),
    ('{"a":1}', TypeError, "'expiries' is dict"),
    ("[[1,2],[1]]", TypeError, "expiry 1 is not a \\[remaining, term\\] pair"),
    ("[[1,2],[-1,2]]", ValueError, "expiry 1: an expiry's remaining"),
    ('[[1,2],[1,"2"]]', TypeError, "expiry 1: an expiry's term"),
    ("[[1,2],[true,2]]", TypeError, "expiry 1: an expiry's remaining"),
])
def test_forged_expiries_in_a_table_are_refused_clearly(expiries: str, error: type[Exception], says: str) -> None:
    data = packed(quoter("id-1"), quoter("id-2"))
    data["table"] = data["table"][:-1] + f',"expiries":{expiries}}}'
    with pytest.raises(error, match=f"malformed lookup.PackedMatches: {says}"):
        round_trip(data)
    with pytest.raises(error):
        round_trip(dict(OLD_MATCHES, expiries=json.loads(expiries)))


def test_matches_refuse_expiries_that_are_not_one_per_item() -> None:
    with pytest.raises(ValueError, match="1 expiries for 2 items"):
        ServiceMatches([quoter("id-1"), quoter("id-2")], 2, [None])
    with pytest.raises(TypeError, match="Expiry or None"):
        ServiceMatches([quoter("id-1")], 1, [(1.0, 2.0, 3.0)])  # type: ignore[list-item]
