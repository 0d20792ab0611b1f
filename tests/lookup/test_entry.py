"""Entries: dataclasses by subclassing, None as the default, equality, lineage, wire values."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import pytest

from lookup import (
    Comment,
    Entry,
    Location,
    Name,
    ServiceInfo,
    Status,
    UnknownEntry,
    entry_class,
    entry_class_name,
    entry_fields,
    entry_lineage,
    entry_matches,
    qualified_name,
)
from lookup.entry import MAX_FIELDS, check_class_name, check_wire_value, wire_equal


class Printer(Entry):
    color: str | None = None
    ppm: int | None = None


class ColorPrinter(Printer):
    duplex: bool  # no default: it gets None


class Scanner(Entry):
    color: str | None = None
    ppm: int | None = None


def test_a_subclass_becomes_a_dataclass_whose_fields_default_to_none() -> None:
    assert dataclasses.is_dataclass(Printer)
    assert [f.name for f in dataclasses.fields(ColorPrinter)] == ["color", "ppm", "duplex"]
    printer = ColorPrinter(ppm=12)
    assert (printer.color, printer.ppm, printer.duplex) == (None, 12, None)
    assert ColorPrinter("red", 3, True) == ColorPrinter(color="red", ppm=3, duplex=True)
    assert repr(Printer("red")) == "Printer(color='red', ppm=None)"


def test_a_field_declared_with_field_but_no_default_also_gets_none() -> None:
    class Tagged(Entry):
        tag: str | None = dataclasses.field(repr=False)
        limit: int | None = dataclasses.field(default=3)

    assert Tagged().tag is None and Tagged().limit == 3 and "tag" not in repr(Tagged())


def test_class_variables_are_not_fields() -> None:
    class Shelf(Entry):
        KINDS: ClassVar[tuple[str, ...]] = ("wood", "steel")
        kind: str | None = None

    assert [f.name for f in dataclasses.fields(Shelf)] == ["kind"]
    assert Shelf.KINDS == ("wood", "steel")
    assert [f.name for f in dataclasses.fields(Status)] == ["severity"]
    assert Status(Status.ERROR).severity == "error"


def test_standard_entries_have_the_fields_of_the_contract() -> None:
    def names(cls: type) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    assert names(Name) == ["name"]
    assert names(Location) == ["floor", "room", "building"]
    assert names(Comment) == ["comment"]
    assert names(ServiceInfo) == ["name", "manufacturer", "vendor", "version", "model", "serial_number"]
    assert names(Status) == ["severity"]
    assert Location("3", "301", "North") == Location(floor="3", room="301", building="North")


def test_entry_itself_cannot_be_instantiated() -> None:
    with pytest.raises(TypeError, match="base class"):
        Entry()


def test_field_names_starting_with_underscore_are_refused() -> None:
    with pytest.raises(TypeError, match="_secret"):
        class Leaky(Entry):
            _secret: str | None = None


def test_too_many_fields_are_refused() -> None:
    annotations = {f"f{i}": "int | None" for i in range(MAX_FIELDS + 1)}
    with pytest.raises(TypeError, match=f"at most {MAX_FIELDS}"):
        type("Huge", (Entry,), {"__annotations__": annotations, "__module__": __name__})
    fine = type("Big", (Entry,), {"__annotations__": dict(list(annotations.items())[:MAX_FIELDS]),
                                  "__module__": __name__})
    assert len(dataclasses.fields(fine)) == MAX_FIELDS


def test_equal_by_class_and_fields_and_not_hashable() -> None:
    assert Printer("red", 5) == Printer("red", 5)
    assert Printer("red", 5) != Printer("red", 6)
    assert Printer("red", 5) != Scanner("red", 5)  # same fields, another class
    assert ColorPrinter("red", 5) != Printer("red", 5)  # a subclass is another class
    assert Printer() != "Printer()"
    with pytest.raises(TypeError):
        hash(Printer())


def test_equality_is_wire_equality() -> None:
    class Tray(Entry):
        sizes: Any = None

    assert Tray([1, 2]) == Tray((1, 2))  # which arrives depends on the serializer
    assert Tray(True) != Tray(1)
    assert Tray(1) == Tray(1.0)


def test_every_subclass_is_registered_under_its_qualified_name() -> None:
    assert entry_class_name(Printer()) == qualified_name(Printer) == f"{__name__}.Printer"
    assert entry_class(qualified_name(Printer)) is Printer
    assert entry_class("lookup.entry.Name") is Name
    assert entry_class("nowhere.Nothing") is None


def test_lineage_lists_the_entry_classes_down_from_entry() -> None:
    assert entry_lineage(ColorPrinter()) == (qualified_name(ColorPrinter), qualified_name(Printer))
    assert entry_lineage(Name()) == ("lookup.entry.Name",)

    class Mixin:
        pass

    class NamedComment(Name, Mixin, Comment):
        pass

    assert entry_lineage(NamedComment()) == (qualified_name(NamedComment), "lookup.entry.Name",
                                             "lookup.entry.Comment")


def test_a_redefined_class_replaces_the_registered_one() -> None:
    def define() -> type[Entry]:
        class Again(Entry):
            value: int | None = None
        return Again

    first, second = define(), define()
    assert first is not second and entry_class(qualified_name(first)) is second


def test_entry_fields_is_a_fresh_dict() -> None:
    printer = Printer("red", 5)
    fields = entry_fields(printer)
    assert fields == {"color": "red", "ppm": 5}
    fields["color"] = "blue"
    assert printer.color == "red"
    with pytest.raises(TypeError):
        entry_fields("Printer")  # type: ignore[arg-type]


# -- matching ---------------------------------------------------------------------

def test_none_fields_of_a_template_are_wildcards() -> None:
    assert entry_matches(Printer(), Printer("red", 5))
    assert entry_matches(Printer(color="red"), Printer("red", 5))
    assert not entry_matches(Printer(color="blue"), Printer("red", 5))
    assert not entry_matches(Printer(color="red"), Printer(ppm=5))  # an item's None is a value, not "any"


def test_a_template_entry_matches_subclasses_but_not_superclasses_or_strangers() -> None:
    assert entry_matches(Printer(color="red"), ColorPrinter("red", duplex=True))
    assert not entry_matches(ColorPrinter(color="red"), Printer("red"))
    assert not entry_matches(Printer(), Scanner())


def test_matching_compares_wire_values() -> None:
    class Tray(Entry):
        sizes: Any = None

    assert entry_matches(Tray(["A4", "A3"]), Tray(("A4", "A3")))
    assert not entry_matches(Tray(1), Tray(True))
    assert not entry_matches(Tray(["A4"]), Tray(["A4", "A3"]))


# -- unknown entries --------------------------------------------------------------

def unknown_color_printer(**fields: Any) -> UnknownEntry:
    return UnknownEntry("elsewhere.ColorPrinter", ["elsewhere.ColorPrinter", qualified_name(Printer)],
                        {"color": None, "ppm": None, "duplex": None, **fields})


def test_an_unknown_entry_matches_like_its_real_class() -> None:
    unknown = unknown_color_printer(color="red", ppm=5)
    assert entry_matches(Printer(color="red"), unknown)
    assert not entry_matches(Printer(color="blue"), unknown)
    assert not entry_matches(Scanner(), unknown)
    assert entry_matches(unknown_color_printer(color="red"), unknown)
    assert not entry_matches(unknown, Printer("red", 5))  # a Printer is not an elsewhere.ColorPrinter


def test_an_unknown_entry_exposes_its_name_lineage_and_fields() -> None:
    unknown = unknown_color_printer(color="red")
    assert unknown.class_name == entry_class_name(unknown) == "elsewhere.ColorPrinter"
    assert unknown.lineage == entry_lineage(unknown) == ("elsewhere.ColorPrinter", qualified_name(Printer))
    assert unknown.fields == entry_fields(unknown) == {"color": "red", "ppm": None, "duplex": None}
    assert unknown.color == "red" and unknown.duplex is None
    with pytest.raises(AttributeError, match="staples"):
        unknown.staples  # noqa: B018
    assert "elsewhere.ColorPrinter" in repr(unknown)


def test_an_unknown_entry_equals_the_real_entry_of_its_class() -> None:
    real = Printer("red", 5)
    unknown = UnknownEntry(qualified_name(Printer), [qualified_name(Printer)], {"color": "red", "ppm": 5})
    assert unknown == real and real == unknown
    assert unknown != Printer("red", 6) and unknown != Scanner("red", 5)
    assert unknown == UnknownEntry(qualified_name(Printer), [qualified_name(Printer)], {"ppm": 5, "color": "red"})


def test_unknown_entry_cannot_be_subclassed() -> None:
    with pytest.raises(TypeError, match="cannot be subclassed"):
        class Sneaky(UnknownEntry):
            pass


@pytest.mark.parametrize("args, error", [
    ((5, ["a.B"], {}), TypeError),
    (("B", ["B"], {}), ValueError),  # not a qualified name
    (("a.B c", ["a.B c"], {}), ValueError),
    (("a." + "B" * 300, ["a." + "B" * 300], {}), ValueError),
    (("a.B", "a.B", {}), TypeError),  # a single string, not a sequence
    (("a.B", [], {}), ValueError),
    (("a.B", ["a.C", "a.B"], {}), ValueError),  # does not start with its class
    (("a.B", ["a.B"] + [f"a.C{i}" for i in range(40)], {}), ValueError),
    (("a.B", ["a.B", 7], {}), TypeError),
    (("a.B", ["a.B"], [("x", 1)]), TypeError),
    (("a.B", ["a.B"], {"_x": 1}), ValueError),
    (("a.B", ["a.B"], {"not a name": 1}), ValueError),
    (("a.B", ["a.B"], {"class": 1}), ValueError),  # a keyword
    (("a.B", ["a.B"], {1: 1}), TypeError),
    (("a.B", ["a.B"], {f"f{i}": 1 for i in range(MAX_FIELDS + 1)}), ValueError),
    (("a.B", ["a.B"], {"x": object()}), TypeError),
    (("a.B", ["a.B"], {"x": math.nan}), ValueError),
])
def test_malformed_unknown_entries_are_refused(args: tuple, error: type[Exception]) -> None:
    with pytest.raises(error):
        UnknownEntry(*args)


def test_locally_defined_classes_have_valid_names() -> None:
    class Local(Entry):
        pass

    assert "<locals>" in qualified_name(Local)
    assert check_class_name(qualified_name(Local)) == qualified_name(Local)


# -- wire values ------------------------------------------------------------------

@pytest.mark.parametrize("value", [
    None, True, 0, -(2 ** 80), 1.5, math.inf, "", "héllo", [], (), {},
    [1, "a", None, [2.5, (True,)]], {"a": {"b": [1, 2]}, "c": None},
])
def test_plain_values_are_wire_values(value: Any) -> None:
    check_wire_value(value)


@pytest.mark.parametrize("value, error", [
    (object(), TypeError), (b"bytes", TypeError), ({1, 2}, TypeError), (1j, TypeError),
    (math.nan, ValueError), ([1, [math.nan]], ValueError), ({1: "x"}, TypeError),
    ({"__class__": "float", "value": "nan"}, ValueError), (Printer(), TypeError),
    ([[[[[[[[[[1]]]]]]]]]], ValueError), (list(range(5000)), ValueError),
])
def test_other_values_are_refused(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        check_wire_value(value, "Printer.color")


def test_a_self_containing_list_is_refused_not_recursed_forever() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="deeper"):
        check_wire_value(loop)


def test_wire_equal() -> None:
    assert wire_equal([1, (2, 3)], ((1, [2, 3])))
    assert wire_equal({"a": [1]}, {"a": (1,)})
    assert not wire_equal({"a": 1}, {"a": 1, "b": 2})
    assert not wire_equal(True, 1) and not wire_equal(0, False) and wire_equal(False, False)
    assert not wire_equal("1", 1) and not wire_equal([1], 1) and not wire_equal(1, [1])
    assert wire_equal(None, None) and not wire_equal(None, 0)
