"""LookupService's index, in the service: it only narrows the candidates, so every
lookup answers exactly what a scan of every registration with ``template.matches``
answers, in the same order, through registrations, replacements, attribute
changes, expiry and cancellation. (The index alone: tests/lookup/test_index.py.)
"""

from __future__ import annotations

import contextlib
import decimal
import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from landlord import FakeClock, LeaseDurationPolicy, UnknownLeaseError
from lookup import Entry, Location, Name, ServiceItem, ServiceTemplate, UnknownEntry, entry_class_name
from lookup.item import MAX_MATCHES
from lookup.service.index import value_key
from lookup.service.lookupservice import LookupService

SERVICE_URI = "PYRO:indexed@127.0.0.1:9999"
TYPES = ("idx.A", "idx.B", "idx.C", "idx.D")


class Text(str):
    """A str of another type: equal to the same str, but the index does not key it."""


class Printer(Entry):
    color: Any = None
    ppm: Any = None


class LaserPrinter(Printer):
    toner: Any = None


PRINTER = entry_class_name(Printer(None))
LASER = entry_class_name(LaserPrinter(None))

# values that collide in interesting ways under == and hashing: 1, 1.0 and True;
# 0, -0.0, 0.0 and False; a list and a tuple that are wire-equal; a str "1"
VALUES = [None, "a", "b", "1", 1, 1.0, 2, 0, 0.0, -0.0, True, False, 1.5, [1, 2], (1, 2), {"k": 1}, [], "x" * 3]


def brute_force(service: LookupService, template: ServiceTemplate) -> list[ServiceItem]:
    """What the lookup service answered before it had an index: scan everything, in order."""
    now = service.clock.monotonic()
    return [record.item for record in service.registry.records.values()
            if record.leased is not None and record.leased.expiration > now and template.matches(record.item)]


values = st.sampled_from(VALUES)
types = st.lists(st.sampled_from(TYPES), max_size=3, unique=True)


def unknown_laser(color: Any, ppm: Any, toner: Any) -> UnknownEntry:
    """A LaserPrinter as a process without the class sees it (None fields stay out, as they may)."""
    fields = {name: value for name, value in (("color", color), ("ppm", ppm), ("toner", toner)) if value is not None}
    return UnknownEntry("elsewhere.Laser", ["elsewhere.Laser", LASER, PRINTER], fields)


entries = st.one_of(
    st.builds(Name, st.sampled_from([None, "n1", "n2", "n3"])),
    st.builds(Location, floor=values, room=st.sampled_from([None, "r1", "r2"]), building=values),
    st.builds(Printer, color=values, ppm=values),
    st.builds(LaserPrinter, color=values, ppm=values, toner=values),
    st.builds(unknown_laser, values, values, values),
    st.builds(UnknownEntry, st.just("elsewhere.Other"), st.just(["elsewhere.Other"]),
              st.fixed_dictionaries({"color": values.filter(lambda v: v is not None)})),
)
attributes = st.lists(entries, max_size=3)
templates = st.builds(ServiceTemplate, service_id=st.sampled_from([None, None, None, "svc-0", "svc-1"]),
                      types=st.lists(st.sampled_from(TYPES), max_size=2), attributes=st.lists(entries, max_size=2))

SLOTS = 6  # service ids the operations pick among, so that they meet again

operations = st.lists(st.one_of(
    st.tuples(st.just("register"), st.integers(0, SLOTS), types, attributes, st.sampled_from([5, 10, 30])),
    st.tuples(st.just("add"), st.integers(0, SLOTS - 1), attributes),
    st.tuples(st.just("set"), st.integers(0, SLOTS - 1), attributes),
    st.tuples(st.just("modify"), st.integers(0, SLOTS - 1), entries, st.one_of(st.just("delete"), values)),
    st.tuples(st.just("cancel"), st.integers(0, SLOTS - 1)),
    st.tuples(st.just("advance"), st.sampled_from([1, 6, 11])),
), max_size=25)


@contextlib.contextmanager
def fresh_service(clock: FakeClock) -> Iterator[LookupService]:
    lookup = LookupService(policy=LeaseDurationPolicy(maximum=100, default=30), clock=clock, reaper="lazy")
    try:
        yield lookup
    finally:
        lookup.close()


@pytest.fixture
def service(clock: FakeClock) -> Iterator[LookupService]:
    with fresh_service(clock) as lookup:
        yield lookup


_uris = (f"PYRO:indexed{n}@127.0.0.1:9999" for n in itertools.count())  # each registration its own service


def apply(service: LookupService, clock: FakeClock, cookies: dict[int, str], operation: tuple[Any, ...]) -> None:
    """Carry out one operation; those on registrations that are gone fail, as they should, and change nothing."""
    kind, *args = operation
    if kind == "register":
        slot, item_types, item_attributes, duration = args
        service_id = None if slot == SLOTS else f"svc-{slot}"  # SLOTS: a new id every time
        proof = cookies.get(slot) if slot != SLOTS else None  # the slot's last lease, if any: its owner's proof
        registration = service.register(ServiceItem(service_id, next(_uris), item_types, item_attributes), duration,
                                        proof)
        if slot != SLOTS:
            cookies[slot] = registration.lease.cookie
        return
    if kind == "advance":
        clock.advance(args[0])
        return
    cookie = cookies.get(args[0])
    if cookie is None:
        return
    try:
        if kind == "add":
            service.add_attributes(cookie, args[1])
        elif kind == "set":
            service.set_attributes(cookie, args[1])
        elif kind == "modify":
            entry, value = args[1], args[2]
            change: Entry | None = None  # delete what the entry matches
            if value != "delete":
                if isinstance(entry, UnknownEntry):
                    change = UnknownEntry(entry.class_name, entry.lineage, {"color": value})
                else:
                    change = type(entry)(**{entry._entry_field_names[0]: value})
            service.modify_attributes(cookie, [entry], [change])
        elif kind == "cancel":
            service.cancel(cookie)
    except UnknownLeaseError:
        pass


def check(service: LookupService, template: ServiceTemplate) -> None:
    """Indexed lookups answer as the scan does, whether the candidates are sorted into order or scanned for."""
    index = service.registry.index
    for sort_below in (0.0, 2.0):  # never sort (scan in order for the candidates), always sort
        old, index.sort_below = index.sort_below, sort_below
        try:
            check_once(service, template)
        finally:
            index.sort_below = old


def check_once(service: LookupService, template: ServiceTemplate) -> None:
    expected = brute_force(service, template)
    found = service.lookup_all(template, MAX_MATCHES)
    assert found.items == expected and found.total == len(expected)
    assert all(a is b for a, b in zip(found.items, expected))  # the same items, in the same order
    first = service.lookup(template)
    assert first == (expected[0].service if expected else None)
    assert service.lookup_all(template, 2).items == expected[:2]


def check_index_mirrors_services(service: LookupService) -> None:
    index, services = service.registry.index, service.registry.records
    assert list(index.position) == [sid for sid in sorted(index.position, key=index.position.__getitem__)]
    assert set(index.position) == set(services)
    assert sorted(services, key=index.position.__getitem__) == list(services)
    for table in (index.by_type, index.by_class, index.by_value, index.unkeyed):
        for ids in table.values():
            assert ids and ids <= set(services)  # no empty sets left, no stale ids


@settings(max_examples=300, deadline=None)
@given(operations=operations, queries=st.lists(templates, min_size=1, max_size=6))
def test_indexed_lookups_equal_a_scan(operations: list[tuple[Any, ...]], queries: list[ServiceTemplate]) -> None:
    clock = FakeClock()
    with fresh_service(clock) as service:
        cookies: dict[int, str] = {}
        for operation in operations:
            apply(service, clock, cookies, operation)
            for template in queries:
                check(service, template)
            check_index_mirrors_services(service)
        for cookie in cookies.values():  # cancelled or expired, everything is unfiled
            try:
                service.cancel(cookie)
            except UnknownLeaseError:
                pass
        clock.advance(1000)
        service.manager.reap()
        index = service.registry.index
        assert len(index) == 0 and len(service.registry) == 0
        assert not (index.by_type or index.by_class or index.by_value or index.unkeyed)


@settings(max_examples=100, deadline=None)
@given(operations=operations, queries=st.lists(templates, min_size=1, max_size=6))
def test_expired_but_not_yet_freed_registrations_are_never_found(
        operations: list[tuple[Any, ...]], queries: list[ServiceTemplate]) -> None:
    """With nothing freeing expired registrations, the index still holds them; lookups must skip them."""
    clock = FakeClock()
    with fresh_service(clock) as service:
        service.manager.reap = lambda: 0  # type: ignore[method-assign]  # expired records stay stored
        cookies: dict[int, str] = {}
        for operation in operations:
            apply(service, clock, cookies, operation)
        clock.advance(7)
        for template in queries:
            expected = brute_force(service, template)
            assert service.lookup_all(template, MAX_MATCHES).items == expected
            now = clock.monotonic()
            leases = [service.registry.records[item.service_id or ""].leased for item in expected]
            assert all(leased is not None and leased.expiration > now for leased in leases)
        check_index_mirrors_services(service)


def test_value_keys_follow_wire_equal() -> None:
    assert value_key(1) == value_key(1.0) and hash(value_key(1)) == hash(value_key(1.0))
    assert value_key(True) != value_key(1) and value_key(False) != value_key(0)
    assert value_key("1") != value_key(1)
    for unkeyed in (None, [1], (1,), {"k": 1}, object()):
        assert value_key(unkeyed) is None


@pytest.mark.parametrize("stored, wanted, found", [
    (1, 1.0, True), (1.0, 1, True), (0, -0.0, True),
    (True, 1, False), (1, True, False), (False, 0, False), (True, True, True),
    ([1, 2], (1, 2), True), ((1, 2), [1, 2], True), ([1, 2], [1, 2], True), ({"k": 1}, {"k": 1}, True),
    ("1", 1, False), (1.5, 1.5, True),
    # values of other types are not keyed: they stay candidates for any wanted value, and == decides
    (decimal.Decimal(1), 1, True), (decimal.Decimal(2), 1, False), (Text("a"), "a", True), (Text("a"), "b", False),
])
def test_wire_equality_rules_survive_the_index(service: LookupService, stored: Any, wanted: Any,
                                               found: bool) -> None:
    service.register(ServiceItem(None, SERVICE_URI, ["idx.A"], [Printer(color=stored)]), 30)
    template = ServiceTemplate(attributes=[Printer(color=wanted)])
    assert (service.lookup_all(template).total == 1) is found
    assert template.matches(service.lookup_all(ServiceTemplate()).items[0]) is found


def test_subclass_and_unknown_entries_are_found_by_their_ancestors(service: LookupService) -> None:
    service.register(ServiceItem("laser", SERVICE_URI, [], [LaserPrinter(color="red", toner="black")]), 30)
    service.register(ServiceItem("remote", SERVICE_URI, [], [unknown_laser("red", None, None)]), 30)
    service.register(ServiceItem("plain", SERVICE_URI, [], [Printer(color="blue")]), 30)
    by_ancestor = service.lookup_all(ServiceTemplate(attributes=[Printer(color="red")]))
    assert [item.service_id for item in by_ancestor.items] == ["laser", "remote"]
    assert [item.service_id for item in service.lookup_all(ServiceTemplate(attributes=[LaserPrinter()])).items] \
        == ["laser", "remote"]
    assert service.lookup_all(ServiceTemplate(attributes=[LaserPrinter(toner="black")])).total == 1


def test_replacing_keeps_the_place_in_the_order_and_refiles(service: LookupService) -> None:
    cookies = {name: service.register(ServiceItem(name, SERVICE_URI, ["idx.A"], [Name(name)]), 30).lease.cookie
               for name in ("one", "two", "three")}
    service.register(ServiceItem("one", SERVICE_URI, ["idx.B"], [Name("uno")]), 30, cookies["one"])
    assert service.lookup(ServiceTemplate(attributes=[Name("one")])) is None
    assert service.lookup_all(ServiceTemplate(attributes=[Name("uno")])).items[0].service_id == "one"
    assert [i.service_id for i in service.lookup_all(ServiceTemplate()).items] == ["one", "two", "three"]
    assert [i.service_id for i in service.lookup_all(ServiceTemplate(types=["idx.A"])).items] == ["two", "three"]


def test_attribute_changes_are_refiled(service: LookupService) -> None:
    registration = service.register(ServiceItem(None, SERVICE_URI, [], [Location(floor="1")]), 30)
    cookie = registration.lease.cookie
    service.modify_attributes(cookie, [Location()], [Location(floor="2")])
    assert service.lookup_all(ServiceTemplate(attributes=[Location(floor="1")])).total == 0
    assert service.lookup_all(ServiceTemplate(attributes=[Location(floor="2")])).total == 1
    service.add_attributes(cookie, [Name("added")])
    assert service.lookup(ServiceTemplate(attributes=[Name("added")])) is not None
    service.set_attributes(cookie, [])
    assert service.lookup_all(ServiceTemplate(attributes=[Location()])).total == 0
    assert service.lookup_all(ServiceTemplate(attributes=[Name()])).total == 0
    assert not service.registry.index.by_class and not service.registry.index.by_value


def test_answers_keep_the_registration_order(service: LookupService, clock: FakeClock) -> None:
    """Few candidates are sorted into registration order: as a scan of every registration finds them."""
    registrations = {}
    for n in range(40):
        registrations[n] = service.register(ServiceItem(f"s{n:02d}", next(_uris), ["idx.A" if n % 10 else "idx.B"],
                                                        [Name(f"n{n % 3}")]), 10 if n == 20 else 50)
    clock.advance(11)  # s20 expires; registered again it comes last
    service.register(ServiceItem("s20", next(_uris), ["idx.B"], [Name("n2")]), 50)
    service.register(ServiceItem("s10", next(_uris), ["idx.B"], [Name("n1")]), 50,  # replaced: keeps its place
                     registrations[10].lease.cookie)
    template = ServiceTemplate(types=["idx.B"])
    index = service.registry.index
    assert len(index.candidates(template) or ()) < index.sort_below * 40  # sorted, not scanned
    assert [item.service_id for item in service.lookup_all(template).items] == ["s00", "s10", "s30", "s20"]
    check(service, template)
    check(service, ServiceTemplate(types=["idx.B"], attributes=[Name("n1")]))


def test_expiry_and_cancel_unfile(service: LookupService, clock: FakeClock) -> None:
    short = service.register(ServiceItem(None, SERVICE_URI, ["idx.A"], [Name("short")]), 5)
    service.register(ServiceItem(None, SERVICE_URI, ["idx.A"], [Name("long")]), 50)
    clock.advance(6)
    assert service.lookup_all(ServiceTemplate(types=["idx.A"])).total == 1
    assert short.service_id not in service.registry.index.position
    cancelled = service.register(ServiceItem(None, SERVICE_URI, ["idx.C"], []), 30)
    service.cancel(cancelled.lease.cookie)
    assert service.lookup_all(ServiceTemplate(types=["idx.C"])).total == 0
    assert "idx.C" not in service.registry.index.by_type
