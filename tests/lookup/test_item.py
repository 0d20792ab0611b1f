"""Service items, templates and the matching rules, with hypothesis properties."""

from __future__ import annotations

import math
from typing import Any

import Pyro5.api
import Pyro5.core
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from Pyro5.serializers import SerpentSerializer

from lookup import (
    Comment,
    Entry,
    Expiry,
    Location,
    Name,
    ServiceItem,
    ServiceMatches,
    ServiceTemplate,
    UnknownEntry,
    entry_class_name,
    entry_fields,
    entry_lineage,
    matches,
    qualified_name,
    type_names,
)

URI = "PYRO:quoter@127.0.0.1:9999"
serializer = SerpentSerializer()


class Printer(Entry):
    color: str | None = None
    ppm: int | None = None


class ColorPrinter(Printer):
    duplex: bool | None = None


class Quoter:
    pass


class StockQuoter(Quoter):
    pass


def item(*attributes: Entry, types: tuple[Any, ...] = ("a.Quoter",),
         service_id: str | None = "id-1") -> ServiceItem:
    return ServiceItem(service_id, URI, types, attributes)


# -- construction -------------------------------------------------------------------

def test_service_is_kept_as_given_and_its_uri_exposed_as_str() -> None:
    proxy = Pyro5.api.Proxy(URI)
    for service in (URI, Pyro5.core.URI(URI), proxy):
        made = ServiceItem(None, service, (), ())
        assert made.service is service and made.service_uri == URI
    assert ServiceItem(None, URI) == ServiceItem(None, proxy)  # equal by URI


def test_types_accept_classes_and_names() -> None:
    made = ServiceItem(None, URI, [StockQuoter, "b.Other"])
    assert made.types == (qualified_name(StockQuoter), "b.Other")
    assert made.has_types([qualified_name(StockQuoter)]) and not made.has_types(["c.Missing"])


def test_type_names_lists_the_mro_without_object() -> None:
    assert type_names(StockQuoter) == (f"{__name__}.StockQuoter", f"{__name__}.Quoter")
    assert type_names(object) == ()
    assert type_names(int) == ("builtins.int",)
    with pytest.raises(TypeError):
        type_names(StockQuoter())  # type: ignore[arg-type]


@pytest.mark.parametrize("args, error", [
    ((5, URI), TypeError),
    (("", URI), ValueError),
    (("x" * 300, URI), ValueError),
    ((None, 42), TypeError),
    ((None, "http://evil"), ValueError),
    ((None, "PYRO:x@h:1" + "x" * 2000), ValueError),
    ((None, URI, "a.Quoter"), TypeError),  # one name, not a sequence of names
    ((None, URI, Quoter), TypeError),
    ((None, URI, ["Quoter"]), ValueError),  # not qualified
    ((None, URI, [5]), TypeError),
    ((None, URI, [f"a.T{i}" for i in range(300)]), ValueError),
    ((None, URI, (), Name("x")), TypeError),  # one entry, not a sequence of entries
    ((None, URI, (), [Name]), TypeError),  # the class, not an instance
    ((None, URI, (), ["Name"]), TypeError),
    ((None, URI, (), [Name("x")] * 300), ValueError),
])
def test_bad_items_are_refused_clearly(args: tuple, error: type[Exception]) -> None:
    with pytest.raises(error):
        ServiceItem(*args)


@pytest.mark.parametrize("kwargs", [{"service_id": 3}, {"types": "a.B"}, {"attributes": [object()]}])
def test_bad_templates_are_refused_clearly(kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        ServiceTemplate(**kwargs)


def test_replace_changes_only_what_it_is_given() -> None:
    original = item(Name("a"))
    renamed = original.replace(service_id="id-2", attributes=[Name("b")])
    assert (renamed.service_id, renamed.attributes, renamed.types) == ("id-2", (Name("b"),), original.types)
    assert original.attributes == (Name("a"),) and original.replace() == original
    assert original.replace(service_id=None).service_id is None
    with pytest.raises(TypeError):
        original.replace(types="a.B")


def test_items_and_templates_are_unhashable_values() -> None:
    assert item(Name("a")) == item(Name("a")) and item(Name("a")) != item(Name("b"))
    assert ServiceTemplate(types=["a.B"]) == ServiceTemplate(None, ("a.B",), [])
    with pytest.raises(TypeError):
        hash(item())
    assert "id-1" in repr(item()) and "a.B" in repr(ServiceTemplate(types=["a.B"]))


@pytest.mark.parametrize("name", ["service_id", "service", "service_uri", "types", "attributes"])
def test_items_and_templates_cannot_be_changed_in_place(name: str) -> None:
    made = item(Name("a"))
    with pytest.raises(AttributeError):
        setattr(made, name, getattr(made, name))
    if name in ("service_id", "types", "attributes"):
        template = ServiceTemplate(types=["a.B"])
        with pytest.raises(AttributeError):
            setattr(template, name, getattr(template, name))


def test_service_matches() -> None:
    found = ServiceMatches((item(), item(service_id="id-2")), 5)
    assert isinstance(found.items, list) and len(found.items) == 2 and found.total == 5
    assert found == ServiceMatches([item(), item(service_id="id-2")], 5)
    assert found != ServiceMatches([item(), item(service_id="id-2")], 6) and found != ServiceMatches([item()], 5)
    with pytest.raises(TypeError):
        hash(found)
    found.total = 7  # a record the caller may keep and change, as ever
    assert found.total == 7 and not hasattr(found, "__dict__")
    assert "total=7" in repr(found) and len(repr(ServiceMatches([item()] * 100, 100))) < 260  # cut short
    with pytest.raises(ValueError, match="less than"):
        ServiceMatches([item()], 0)
    for bad in ([item()], True), ([item()], 1.0), (item(), 1), (["x"], 1):
        with pytest.raises(TypeError):
            ServiceMatches(*bad)  # type: ignore[arg-type]


# -- the matching rules ----------------------------------------------------------------

def test_an_empty_template_matches_everything() -> None:
    assert ServiceTemplate().matches(item())
    assert ServiceTemplate().matches(item(Name("x"), types=(), service_id=None))


def test_service_id_must_be_equal_or_none() -> None:
    assert ServiceTemplate(service_id="id-1").matches(item())
    assert not ServiceTemplate(service_id="id-2").matches(item())
    assert not ServiceTemplate(service_id="id-1").matches(item(service_id=None))


def test_every_template_type_must_be_among_the_items() -> None:
    quoter = ServiceItem("id", URI, type_names(StockQuoter))
    assert ServiceTemplate(types=[Quoter]).matches(quoter)
    assert ServiceTemplate(types=[Quoter, StockQuoter]).matches(quoter)
    assert not ServiceTemplate(types=[Quoter, "b.Printer"]).matches(quoter)
    assert not ServiceTemplate(types=[StockQuoter]).matches(ServiceItem("id", URI, [Quoter]))


def test_every_template_entry_must_be_matched_by_some_item_entry() -> None:
    office = item(Name("laser"), Location(floor="3", room="301"), ColorPrinter("red", 20, True))
    assert ServiceTemplate(attributes=[Location(floor="3"), Name("laser")]).matches(office)
    assert ServiceTemplate(attributes=[Printer(color="red")]).matches(office)  # a subclass matches
    assert ServiceTemplate(attributes=[Location()]).matches(office)  # all None: any Location
    assert not ServiceTemplate(attributes=[Location(floor="4")]).matches(office)
    assert not ServiceTemplate(attributes=[Location(floor="3"), Comment()]).matches(office)
    assert not ServiceTemplate(attributes=[Printer(color="red", ppm=21)]).matches(office)
    # the template's fields must all hold in one entry, not spread over several
    two = item(Printer(color="red", ppm=5), Printer(color="blue", ppm=9))
    assert ServiceTemplate(attributes=[Printer("red"), Printer(ppm=9)]).matches(two)  # different entries
    assert not ServiceTemplate(attributes=[Printer("red", 9)]).matches(two)


def test_one_item_entry_may_serve_several_template_entries() -> None:
    assert ServiceTemplate(attributes=[Printer("red"), Printer(ppm=5)]).matches(item(Printer("red", 5)))


def test_matches_function_and_type_errors() -> None:
    assert matches(ServiceTemplate(), item())
    with pytest.raises(TypeError):
        ServiceTemplate().matches("item")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        matches("template", item())  # type: ignore[arg-type]


# -- properties ---------------------------------------------------------------------------

TYPE_POOL = ["a.Quoter", "a.StockQuoter", "b.Printer", "b.Scanner", "c.Thing"]
colors = st.sampled_from([None, "red", "blue", "green"])
small = st.sampled_from([None, 1, 2, 3])
text = st.sampled_from([None, "a", "b", "c"])

entries = st.one_of(
    st.builds(Printer, colors, small),
    st.builds(ColorPrinter, colors, small, st.sampled_from([None, True, False])),
    st.builds(Name, text),
    st.builds(Location, text, text, text),
    st.builds(Comment, text),
)
items = st.builds(
    ServiceItem,
    st.sampled_from([None, "id-1", "id-2"]),
    st.just(URI),
    st.lists(st.sampled_from(TYPE_POOL), unique=True, max_size=4),
    st.lists(entries, max_size=5),
)


def templates_of(item: ServiceItem) -> st.SearchStrategy[ServiceTemplate]:
    """Templates that must match ``item``: parts of it, with some fields left open."""

    def loosen(entry: Entry, keep: list[bool]) -> Entry:
        fields = entry_fields(entry)  # at most 8 fields in these strategies
        return type(entry)(**{name: value if kept else None
                              for (name, value), kept in zip(fields.items(), keep)})

    def loosened(entry: Entry) -> st.SearchStrategy[Entry]:
        return st.lists(st.booleans(), min_size=8, max_size=8).map(lambda keep: loosen(entry, keep))

    return st.builds(
        ServiceTemplate,
        st.sampled_from([None, item.service_id]),
        st.lists(st.sampled_from(item.types), unique=True) if item.types else st.just([]),
        st.lists(st.sampled_from(item.attributes).flatmap(loosened)) if item.attributes else st.just([]),
    )


def as_unknown(entry: Entry) -> UnknownEntry:
    """The entry as a process without its class would hold it."""
    return UnknownEntry(entry_class_name(entry), entry_lineage(entry), entry_fields(entry))


@given(items)
def test_an_item_matches_the_template_of_its_own_parts(service: ServiceItem) -> None:
    assert ServiceTemplate(service.service_id, service.types, service.attributes).matches(service)


@given(items.flatmap(lambda service: st.tuples(st.just(service), templates_of(service))))
def test_an_item_matches_any_template_made_of_its_parts_with_fields_left_open(
        pair: tuple[ServiceItem, ServiceTemplate]) -> None:
    service, template = pair
    assert template.matches(service)


@given(items, st.data())
def test_removing_a_required_type_breaks_the_match(service: ServiceItem, data: st.DataObject) -> None:
    assume(service.types)
    dropped = data.draw(st.sampled_from(service.types))
    template = ServiceTemplate(service.service_id, service.types, service.attributes)
    assert not template.matches(service.replace(types=[t for t in service.types if t != dropped]))


@given(items, st.sampled_from(["red", "blue", "green", "mauve"]))
def test_a_template_value_no_entry_has_does_not_match(service: ServiceItem, color: str) -> None:
    assume(all(entry.color != color for entry in service.attributes if isinstance(entry, Printer)))
    assert not ServiceTemplate(attributes=[Printer(color=color)]).matches(service)


@given(items, st.lists(entries, max_size=3))
def test_a_template_entry_matches_only_by_class_lineage_and_set_fields(
        service: ServiceItem, wanted: list[Entry]) -> None:
    """Against a direct restatement of the rule."""
    def entry_ok(template_entry: Entry) -> bool:
        return any(isinstance(entry, type(template_entry))
                   and all(value is None or entry_fields(entry)[name] == value
                           for name, value in entry_fields(template_entry).items())
                   for entry in service.attributes)

    assert ServiceTemplate(attributes=wanted).matches(service) == all(entry_ok(e) for e in wanted)


@given(items, st.lists(entries, max_size=3), st.lists(st.sampled_from(TYPE_POOL), max_size=2),
       st.booleans(), st.booleans())
def test_unknown_entries_match_as_their_real_classes(service: ServiceItem, wanted: list[Entry],
                                                     types: list[str], unknown_item: bool,
                                                     unknown_template: bool) -> None:
    template = ServiceTemplate(None, types, wanted)
    expected = template.matches(service)
    if unknown_item:
        service = service.replace(attributes=[as_unknown(e) for e in service.attributes])
    if unknown_template:
        template = ServiceTemplate(None, types, [as_unknown(e) for e in wanted])
    assert template.matches(service) == expected


@given(items, st.lists(entries, max_size=3), st.lists(st.sampled_from(TYPE_POOL), max_size=2))
def test_matching_survives_the_wire(service: ServiceItem, wanted: list[Entry], types: list[str]) -> None:
    template = ServiceTemplate(None, types, wanted)
    sent_item = serializer.loads(serializer.dumps(service))
    sent_template = serializer.loads(serializer.dumps(template))
    assert sent_item == service and sent_template == template
    assert sent_template.matches(sent_item) == template.matches(service)


@pytest.mark.parametrize(("remaining", "term", "error"), [
    (-1, 2, ValueError), (math.nan, 2, ValueError), (1, 0, ValueError), (1, -1, ValueError), (1, math.nan, ValueError),
    (True, 2, TypeError), (1, False, TypeError), ("1", 2, TypeError), (None, 2, TypeError),
])
def test_an_expiry_from_elsewhere_is_checked(remaining: Any, term: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="an expiry's"):
        Expiry.checked(remaining, term)


def test_an_expiry_is_seconds_and_bounded_unless_forever() -> None:
    assert Expiry.checked(0, 2) == Expiry(0.0, 2.0) and Expiry.checked(1, 2).bounded
    assert not Expiry.checked(math.inf, math.inf).bounded and not Expiry(1.0, math.inf).bounded
