"""ServiceIndex alone: no lookup service, no leases, no Pyro5 daemon.

It narrows the candidates (a superset of what a template matches, never
missing one) and hands them back in filing order, sorted or scanned alike.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup import Entry, Location, Name, ServiceItem, ServiceTemplate, UnknownEntry
from lookup.service.index import SORT_BELOW, ServiceIndex, value_key

URI = "PYRO:indexed@127.0.0.1:9999"


class Printer(Entry):
    color: Any = None
    ppm: Any = None


class LaserPrinter(Printer):
    toner: Any = None


def item(service_id: str, types: tuple[str, ...] = (), *attributes: Entry) -> ServiceItem:
    return ServiceItem(service_id, URI, types, attributes)


def filed(*items: ServiceItem, sort_below: float = SORT_BELOW) -> tuple[ServiceIndex, dict[str, ServiceItem]]:
    """An index with ``items`` filed, and the dict of them by id its owner would keep."""
    index = ServiceIndex(sort_below=sort_below)
    by_id: dict[str, ServiceItem] = {}
    for each in items:
        assert each.service_id is not None
        index.put(each.service_id, each)
        by_id[each.service_id] = each
    return index, by_id


def test_candidates_by_type_class_and_value() -> None:
    index, _ = filed(item("a", ("t.A", "t.Base"), Name("a"), Printer(color="red")),
                     item("b", ("t.B", "t.Base"), Name("b"), LaserPrinter(color="red", toner="black")),
                     item("c", ("t.B",), Location(floor=3)))
    assert index.candidates(ServiceTemplate()) is None  # narrows nothing: every one is a candidate
    assert index.candidates(ServiceTemplate(types=["t.Base"])) == {"a", "b"}
    assert index.candidates(ServiceTemplate(types=["t.Base", "t.B"])) == {"b"}
    assert index.candidates(ServiceTemplate(types=["t.None"])) == set()
    assert index.candidates(ServiceTemplate(attributes=[Printer(color="red")])) == {"a", "b"}  # a subclass too
    assert index.candidates(ServiceTemplate(attributes=[LaserPrinter()])) == {"b"}
    assert index.candidates(ServiceTemplate(attributes=[Printer(color="blue")])) == set()
    assert index.candidates(ServiceTemplate(attributes=[Location(floor=3.0)])) == {"c"}  # 3 == 3.0
    assert index.candidates(ServiceTemplate(types=["t.A"], attributes=[Location()])) == set()


def test_unkeyed_values_stay_candidates_for_any_wanted_value() -> None:
    index, _ = filed(item("list", (), Printer(color=[1, 2])), item("str", (), Printer(color="red")))
    assert index.candidates(ServiceTemplate(attributes=[Printer(color="red")])) == {"list", "str"}
    assert index.candidates(ServiceTemplate(attributes=[Printer(color="blue")])) == {"list"}
    assert index.candidates(ServiceTemplate(attributes=[Printer(color=(1, 2))])) == {"list", "str"}  # not keyed


def test_a_bool_finds_only_a_bool() -> None:
    index, _ = filed(item("one", (), Printer(ppm=1)), item("true", (), Printer(ppm=True)))
    assert index.candidates(ServiceTemplate(attributes=[Printer(ppm=True)])) == {"true"}
    assert index.candidates(ServiceTemplate(attributes=[Printer(ppm=1.0)])) == {"one"}
    assert value_key(True) != value_key(1) and value_key(1) == value_key(1.0)


def test_unknown_entries_are_filed_under_their_lineage() -> None:
    remote = UnknownEntry("elsewhere.Laser", ["elsewhere.Laser", LaserPrinter._entry_class_name,
                                              Printer._entry_class_name], {"color": "red"})
    index, _ = filed(item("remote", (), remote))
    assert index.candidates(ServiceTemplate(attributes=[Printer(color="red")])) == {"remote"}
    assert index.candidates(ServiceTemplate(attributes=[LaserPrinter(color="blue")])) == set()


def test_put_again_refiles_and_keeps_the_place() -> None:
    index, _ = filed(item("a", ("t.A",), Name("one")), item("b", ("t.A",), Name("two")))
    index.put("a", item("a", ("t.B",), Name("uno")))
    assert index.candidates(ServiceTemplate(types=["t.A"])) == {"b"}
    assert index.candidates(ServiceTemplate(attributes=[Name("one")])) == set()
    assert index.candidates(ServiceTemplate(attributes=[Name("uno")])) == {"a"}
    assert index.position["a"] < index.position["b"]


def test_remove_unfiles_everything() -> None:
    index, _ = filed(item("a", ("t.A",), Name("a"), Printer(color=[1]), Location(floor=1)))
    index.remove("a")
    index.remove("a")  # not filed: nothing happens
    index.remove("never")
    assert len(index) == 0
    assert not (index.by_type or index.by_class or index.by_value or index.unkeyed or index.position)


@pytest.mark.parametrize("sort_below", [0.0, SORT_BELOW, 2.0])  # always scan, the default, always sort
def test_in_order_is_the_filing_order_sorted_or_scanned(sort_below: float) -> None:
    items = [item(f"s{n:02d}", ("t.A" if n % 4 else "t.B",), Name(f"n{n % 3}")) for n in range(20)]
    index, by_id = filed(*items, sort_below=sort_below)
    index.put("s04", item("s04", ("t.B",), Name("n1")))  # filed again: keeps its place (and its dict slot)
    by_id["s04"] = item("s04", ("t.B",), Name("n1"))
    assert [i.service_id for i in index.in_order(ServiceTemplate(types=["t.B"]), by_id)] \
        == ["s00", "s04", "s08", "s12", "s16"]
    assert list(index.in_order(ServiceTemplate(), by_id)) == list(by_id.values())
    assert list(index.in_order(ServiceTemplate(types=["t.None"]), by_id)) == []


names = st.sampled_from(["a", "b", "c"])
floors = st.sampled_from([None, 1, 1.0, 2, True, "1", [1]])
items_st = st.builds(lambda types, name, floor: (types, [Name(name), Location(floor=floor)]),
                     st.lists(st.sampled_from(["t.A", "t.B", "t.C"]), max_size=2, unique=True), names, floors)
templates = st.builds(lambda types, name, floor: ServiceTemplate(
                          types=types, attributes=[e for e in (Name(name) if name else None,
                                                               Location(floor=floor) if floor is not None else None)
                                                   if e is not None]),
                      st.lists(st.sampled_from(["t.A", "t.B", "t.C"]), max_size=1), st.sampled_from([None, "a", "b"]),
                      floors)


@settings(max_examples=200, deadline=None)
@given(contents=st.lists(items_st, max_size=12), removed=st.sets(st.integers(0, 11)), template=templates,
       sort_below=st.sampled_from([0.0, 0.25, 2.0]))
def test_candidates_never_miss_a_match(contents: list[tuple[list[str], list[Entry]]], removed: set[int],
                                       template: ServiceTemplate, sort_below: float) -> None:
    index, by_id = filed(*(item(f"s{n}", tuple(types), *attributes) for n, (types, attributes) in enumerate(contents)),
                         sort_below=sort_below)
    for n in removed:
        if f"s{n}" in by_id:
            index.remove(f"s{n}")
            del by_id[f"s{n}"]
    expected = [each for each in by_id.values() if template.matches(each)]
    ids = index.candidates(template)
    assert ids is None or {each.service_id for each in expected} <= ids
    assert [each for each in index.in_order(template, by_id) if template.matches(each)] == expected
    if index.decides(template):  # then every candidate is a match
        assert list(index.in_order(template, by_id)) == expected


def test_decides_when_each_entry_wants_at_most_one_keyed_field() -> None:
    index, _ = filed(item("a", ("t.A",), Name("x"), Location(floor=3, room="r1")),
                     item("b", ("t.B",), Printer(color=["red"])))
    assert index.decides(ServiceTemplate())
    assert index.decides(ServiceTemplate(types=["t.A", "t.B"]))
    assert index.decides(ServiceTemplate(types=["t.A"], attributes=[Name("x"), Location(floor=3), Location()]))
    assert index.decides(ServiceTemplate(attributes=[Location(floor=True), LaserPrinter()]))
    assert not index.decides(ServiceTemplate(attributes=[Location(floor=3, room="r1")]))  # two entries could
    assert not index.decides(ServiceTemplate(attributes=[Location(floor=[3])]))  # not keyed: wire_equal decides
    assert not index.decides(ServiceTemplate(attributes=[Location(floor=math.nan)]))  # equal to nothing
    assert not index.decides(ServiceTemplate(attributes=[Printer(color="red")]))  # a list is filed for color
    assert index.decides(ServiceTemplate(attributes=[Printer(ppm=5)]))
