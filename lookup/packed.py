"""The packed wire form of a lookup's answer: tables sent once per answer, items as rows.

The answer to a ``lookup_all`` of 200 items travelled as 200 item dicts, each
entry tagged with its class, its lineage and every field name, ``None``
fields too: large serpent, slow for the client to parse
(``ast.literal_eval``) and rebuild. Packed, the same answer is about a fifth
of the bytes, and many times faster to write and to read (the figures:
``docs/performance.md``). :mod:`lookup.wire`
documents the form and registers the converters; this module builds and reads it.

- The *table* is JSON text (parsed by the ``json`` module's C code, not by
  serpent's ``literal_eval``): each entry class's lineage once, each entry
  *shape* (a lineage, its field names, which of them have values) once, each
  item *layout* (its types, the shapes of its entries) once, then one row per
  item: its service id, its URI, its layout, and the values of its entries'
  non-``None`` fields in order.
- ``expiries``, when the lookup service sends them: when each item's
  registration ends, ``[remaining, term]`` or ``null``, one per row (see
  :mod:`lookup.wire`); a reader before them ignores the key.
- A value JSON cannot carry exactly (a list, tuple or dict, an infinite float)
  goes in ``values``, beside the table in the serializer's own form, and the row
  holds ``[k]``, its place there: serpent keeps a tuple a tuple, as it did.

Reading checks everything the item and entry converters check (names, sizes,
field values, a registered class's fields, URIs) and every place in a table;
anything else is a ``TypeError`` or ``ValueError`` saying ``"malformed
lookup.PackedMatches: ..."`` and what is wrong. What was found sound is kept:
the last ``TABLES_KEPT`` lineages, shapes (with how to make their entries) and
lists of types, and the last ``URIS_KEPT`` URIs. An item whose packing is kept
(:func:`keep_packing`: the registry's items, treated as immutable once
registered) is packed once, not on every answer.
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

from .entry import (
    MAX_FIELDS,
    MAX_NAME_LENGTH,
    Entry,
    UnknownEntry,
    check_class_name,
    check_field_name,
    check_lineage,
    check_wire_value,
    entry_class,
    plain_defaults,
)
from .item import MAX_ATTRIBUTES, MAX_TYPES, Expiry, ServiceItem, ServiceMatches, _check_service_id, uri_of

__all__ = ["pack_matches", "unpack_matches", "read_expiries", "read_expiry", "keep_packing", "TABLE_KEYS",
           "URIS_KEPT", "TABLES_KEPT"]

log = logging.getLogger(__name__)

TABLE_KEYS = ("lineages", "shapes", "layouts", "items")
URIS_KEPT = 16_384  # service URIs known to be sound, the most recently read
TABLES_KEPT = 1024  # lineages, entry shapes and lists of types known to be sound, the most recently read
_ROW_HEAD = 3  # service id, URI, layout: then the values
_KEEP = object()  # an item's _packing: kept once made
_SCALARS = frozenset({str, int, float, bool})
_NUMBERS = frozenset({int, float})
_new_tuple = tuple.__new__  # an Expiry of a pair checked already, without a call of its __new__
_INFINITY = math.inf


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a wire value")


_decode = json.JSONDecoder(parse_constant=_refuse_constant).decode
_encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False, check_circular=False, separators=(",", ":")).encode


# -- packing -----------------------------------------------------------------------------

class _Extra:
    """A field value that goes in the answer's ``values``, not in the JSON table."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class _Packing:
    """One item, packed: its layout (and that layout's text, a cheap dict key), and its row
    but for the layout's place: as JSON text before and after it, or (with values that go
    beside the table) as values."""

    __slots__ = ("key", "types", "shapes", "head", "tail", "values", "extras")

    def __init__(self, item: ServiceItem) -> None:
        shapes: list[tuple[tuple[str, ...], tuple[str, ...], tuple[int, ...]]] = []
        values: list[Any] = []
        extras = False
        for entry in item.attributes:
            fields = entry._entry_fields()
            given = []
            for index, (name, value) in enumerate(fields.items()):
                if value is None:
                    continue
                given.append(index)
                kind = type(value)
                if kind is str or kind is int or kind is bool or (kind is float and math.isfinite(value)):
                    values.append(value)
                else:  # a container, an infinite float, or no wire value at all
                    check_wire_value(value, f"{entry._entry_class_name}.{name}")
                    values.append(_Extra(value))
                    extras = True
            shapes.append((entry._entry_lineage, tuple(fields), tuple(given)))
        self.types = item.types
        self.shapes = tuple(shapes)
        self.key = repr((self.types, self.shapes))  # a str caches its hash: one dict probe per item and answer
        self.head = _encode([item.service_id, item.service_uri])[:-1] + ","  # '["id","PYRO:...",'
        self.values = tuple(values)
        self.extras = extras
        self.tail = "" if extras else _encode(values)[1:-1]
        if self.tail:
            self.tail = "," + self.tail


def keep_packing(item: ServiceItem) -> None:
    """Keep ``item``'s packing once it is made: it must not change from now on (as a registered item)."""
    if item._packing is None:
        item._packing = _KEEP


def _packing(item: ServiceItem) -> _Packing:
    packing = item._packing
    if type(packing) is _Packing:
        return packing
    made = _Packing(item)
    if packing is _KEEP:
        item._packing = made
    return made


class _Tables:
    """The tables of one answer, filled as its items are packed."""

    __slots__ = ("lineages", "lineage_at", "shapes", "shape_at", "layouts", "layout_at", "values")

    def __init__(self) -> None:
        self.lineages: list[tuple[str, ...]] = []
        self.lineage_at: dict[tuple[str, ...], int] = {}
        self.shapes: list[tuple[int, tuple[str, ...], tuple[int, ...]]] = []
        self.shape_at: dict[tuple[int, tuple[str, ...], tuple[int, ...]], int] = {}
        self.layouts: list[tuple[tuple[str, ...], list[int]]] = []
        self.layout_at: dict[str, int] = {}
        self.values: list[Any] = []

    def layout(self, packing: _Packing) -> int:
        at = self.layout_at.get(packing.key)
        if at is None:
            shapes = [self._shape(lineage, names, given) for lineage, names, given in packing.shapes]
            at = self.layout_at[packing.key] = len(self.layouts)
            self.layouts.append((packing.types, shapes))
        return at

    def _shape(self, lineage: tuple[str, ...], names: tuple[str, ...], given: tuple[int, ...]) -> int:
        lineage_at = self.lineage_at.get(lineage)
        if lineage_at is None:
            lineage_at = self.lineage_at[lineage] = len(self.lineages)
            self.lineages.append(lineage)
        shape = (lineage_at, names, given)
        at = self.shape_at.get(shape)
        if at is None:
            at = self.shape_at[shape] = len(self.shapes)
            self.shapes.append(shape)
        return at

    def extra(self, value: Any) -> Any:
        if type(value) is not _Extra:
            return value
        self.values.append(value.value)
        return [len(self.values) - 1]


def pack_matches(matches: ServiceMatches) -> tuple[str, list[Any]]:
    """The JSON table of a lookup's answer, and the values that go beside it.

    Raises:
        TypeError, ValueError: a field value that is not a plain wire value
            (see :func:`~lookup.entry.check_wire_value`).
    """
    tables = _Tables()
    rows = []  # each item's row as JSON text, most of it made once per registration
    for item in matches.items:
        packing = _packing(item)
        tail = packing.tail
        if packing.extras:
            tail = "".join("," + _encode(tables.extra(value)) for value in packing.values)
        rows.append(f"{packing.head}{tables.layout(packing)}{tail}]")
    return (f'{{"lineages":{_encode(tables.lineages)},"shapes":{_encode(tables.shapes)},'
            f'"layouts":{_encode(tables.layouts)},"items":[{",".join(rows)}]{_expiries(matches.expiries)}}}'
            ), tables.values


def _expiries(expiries: list[Expiry | None] | None) -> str:
    """The table's ``"expiries"``, if any: ``[remaining, term]`` each, remaining to the millisecond
    (formatted here: JSON's float repr was most of the cost), ``null`` for one not known or not finite."""
    if expiries is None:
        return ""
    # bounded without the property's call: neither is infinite, so their sum is not (both are 0 or more)
    return ',"expiries":[' + ",".join([f"[{expiry[0]:.3f},{expiry[1]!r}]" if expiry is not None
                                       and expiry[0] + expiry[1] < _INFINITY else "null" for expiry in expiries]) + "]"


# -- reading -------------------------------------------------------------------------------

def _list(value: Any, where: str, classname: str) -> list[Any]:
    if type(value) is not list:
        raise TypeError(f"malformed {classname}: {where} is {type(value).__name__}, not a list")
    return value


def _index(value: Any, size: int, where: str, classname: str) -> int:
    if type(value) is not int:
        raise TypeError(f"malformed {classname}: {where} is {type(value).__name__}, not an index")
    if not 0 <= value < size:
        raise ValueError(f"malformed {classname}: {where} {value!r:.40} is out of range (0 to {size - 1})"
                         if size else f"malformed {classname}: {where} {value!r:.40} refers to an empty table")
    return value


def _all(kind: type, values: list[Any]) -> bool:
    return {kind}.issuperset(map(type, values))  # in C: a generator's steps were a tenth of reading a small answer


@functools.lru_cache(maxsize=TABLES_KEPT)
def _lineage(names: tuple[Any, ...]) -> tuple[str, ...]:
    """A lineage's names, checked (each lineage once, not once per answer)."""
    return check_lineage(names)


def _lineages(table: list[Any], classname: str) -> list[tuple[str, ...]]:
    lineages = []
    for number, names in enumerate(table):
        if type(names) is not list:
            _list(names, f"lineage {number}", classname)
        try:
            lineages.append((_lineage if _all(str, names) else _lineage.__wrapped__)(tuple(names)))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"malformed {classname}: lineage {number} {exc}") from None
    return lineages


_Make = Callable[..., Entry]  # an entry of one shape, from its values given as arguments


def _maker(cls: type[Entry] | None, lineage: tuple[str, ...], names: tuple[str, ...],
           given: tuple[str, ...]) -> _Make:
    """How to make an entry of one shape from its values: as its class if registered here, else unknown."""
    class_name = lineage[0]
    if cls is None:
        def unknown(*values: Any) -> Entry:
            fields = dict.fromkeys(names)
            fields.update(zip(given, values))
            return UnknownEntry._checked(class_name, lineage, fields)
        return unknown
    extra = sorted(set(names) - set(cls._entry_field_names))
    if extra:
        raise ValueError(f"{class_name} has no field(s) {', '.join(extra):.200}")
    # as the entry converter does: every field sent, None too, init fields to __init__, others set after
    absent = tuple(name for name in names if name not in given)
    defaults = plain_defaults(cls)
    if defaults is not None:  # as its __init__ would: its defaults, then the fields sent
        if names == cls._entry_field_names:  # every field, in its order: its own __init__ takes them as they come
            if not absent:
                return cls
            return _positional(cls, len(names), tuple(names.index(name) for name in given))
        start = {**defaults, **dict.fromkeys(absent)}
        new = object.__new__

        def plain(*values: Any) -> Entry:
            entry = new(cls)
            fields = entry.__dict__
            fields.update(start)
            fields.update(zip(given, values))
            return entry
        return plain
    if all(name in cls._entry_init_names for name in names):
        def known(*values: Any) -> Entry:
            fields = dict.fromkeys(absent)
            fields.update(zip(given, values))
            return cls(**fields)
        return known
    init = cls._entry_init_names

    def known_with_non_init_fields(*values: Any) -> Entry:
        fields = dict.fromkeys(absent)
        fields.update(zip(given, values))
        entry = cls(**{key: value for key, value in fields.items() if key in init})
        for key, value in fields.items():
            if key not in init:
                setattr(entry, key, value)
        return entry
    return known_with_non_init_fields


def _positional(cls: type[Entry], count: int, places: tuple[int, ...]) -> _Make:
    """How to make an entry of ``cls`` (its __init__ the one dataclass made, taking its ``count`` fields in
    order) from the values of the fields at ``places``, the others ``None``: by that __init__, quicker than
    filling its ``__dict__``, which the interpreter must first make a dict of."""
    nones = [None] * count

    def positional(*values: Any) -> Entry:
        fields = nones.copy()
        for place, value in zip(places, values):
            fields[place] = value
        return cls(*fields)
    return positional


@functools.lru_cache(maxsize=TABLES_KEPT)
def _shape(cls: type[Entry] | None, plain: bool, lineage: tuple[str, ...], names: tuple[Any, ...],
           given: tuple[Any, ...]) -> tuple[_Make, int]:
    """One shape, checked, and how to make its entries (each shape once, not once per answer:
    ``cls`` is the class registered under its name now, so a class defined later is seen, and
    ``plain`` whether :func:`~lookup.entry.plain_defaults` has its defaults now)."""
    for name in names:
        check_field_name(name, lineage[0])
    if len(names) > MAX_FIELDS:
        raise ValueError(f"{lineage[0]} has {len(names)} fields; at most {MAX_FIELDS} are allowed")
    if len(set(names)) != len(names):
        raise ValueError("names a field twice")
    for place in given:
        if type(place) is not int:
            raise TypeError(f"a field given is {type(place).__name__}, not an index")
        if not 0 <= place < len(names):
            raise ValueError(f"field given {place!r:.40} is out of range (0 to {len(names) - 1})")
    if any(a >= b for a, b in zip(given, given[1:])):
        raise ValueError("fields given are not in increasing order")
    return _maker(cls, lineage, names, tuple(names[place] for place in given)), len(given)


def _shape_parts(shape: Any, number: int, lineages: int, classname: str) -> tuple[int, list[Any], list[Any]]:
    """A shape's lineage (its place), field names and fields given, each checked (saying what is wrong)."""
    where = f"shape {number}"
    parts = _list(shape, where, classname)
    if len(parts) != 3:
        raise ValueError(f"malformed {classname}: {where} has {len(parts)} parts, not 3 "
                         "(lineage, field names, fields given)")
    return (_index(parts[0], lineages, f"{where}'s lineage", classname),
            _list(parts[1], f"{where}'s names", classname), _list(parts[2], f"{where}'s fields given", classname))


def _shapes(table: list[Any], lineages: list[tuple[str, ...]], classname: str) -> list[tuple[_Make, int]]:
    shapes = []
    for number, shape in enumerate(table):
        # a sound shape's parts checked inline (this ran for every shape of every answer)
        if (type(shape) is list and len(shape) == 3 and type(shape[0]) is int and 0 <= shape[0] < len(lineages)
                and type(shape[1]) is list and type(shape[2]) is list):
            at, names, given = shape
        else:
            at, names, given = _shape_parts(shape, number, len(lineages), classname)
        lineage = lineages[at]
        make = _shape if _all(str, names) and _all(int, given) else _shape.__wrapped__  # hashable: kept
        cls = entry_class(lineage[0])
        try:
            shapes.append(make(cls, cls is not None and plain_defaults(cls) is not None,  # type: ignore[arg-type]
                               lineage, tuple(names), tuple(given)))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"malformed {classname}: shape {number}: {exc}") from None
    return shapes


@functools.lru_cache(maxsize=TABLES_KEPT)
def _types(names: tuple[Any, ...]) -> tuple[tuple[str, ...], frozenset[str]]:
    """A layout's types, checked, and as a set (each list of types once, not once per answer)."""
    if len(names) > MAX_TYPES:
        raise ValueError(f"has {len(names)} types (at most {MAX_TYPES})")
    types = tuple(check_class_name(name, "type name") for name in names)
    return types, frozenset(types)


class _Layout:
    """One layout of an answer, ready to make items: its types (shared by its items) and entry makers."""

    __slots__ = ("types", "type_set", "makers", "width")

    def __init__(self, types: tuple[tuple[str, ...], frozenset[str]], shapes: list[tuple[_Make, int]]) -> None:
        self.types, self.type_set = types
        self.makers: list[tuple[_Make, int, int]] = []  # each entry's maker, and where its values are in a row
        at = _ROW_HEAD
        for make, count in shapes:
            self.makers.append((make, at, at + count))
            at += count
        self.width = at


def _layouts(table: list[Any], shapes: list[tuple[_Make, int]], classname: str) -> list[_Layout]:
    layouts = []
    for number, layout in enumerate(table):
        where = f"layout {number}"  # few per answer, however many items
        parts = _list(layout, where, classname)
        if len(parts) != 2:
            raise ValueError(f"malformed {classname}: {where} has {len(parts)} parts, not 2 (types, shapes)")
        names = _list(parts[0], f"{where}'s types", classname)
        try:
            types = (_types if _all(str, names) else _types.__wrapped__)(tuple(names))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"malformed {classname}: {where} {exc}") from None
        entries = _list(parts[1], f"{where}'s shapes", classname)
        if len(entries) > MAX_ATTRIBUTES:
            raise ValueError(f"malformed {classname}: {where} has {len(entries)} entries "
                             f"(at most {MAX_ATTRIBUTES})")
        if not (_all(int, entries) and all(0 <= shape < len(shapes) for shape in entries)):
            entries = [_index(shape, len(shapes), f"{where}'s shape", classname) for shape in entries]
        layouts.append(_Layout(types, [shapes[shape] for shape in entries]))
    return layouts


def _value(value: Any, values: Sequence[Any], where: str, classname: str) -> Any:
    """A row's value that is not a scalar: ``[k]``, the k-th of ``values``."""
    if type(value) is not list or len(value) != 1:
        raise TypeError(f"malformed {classname}: {where} holds {type(value).__name__} "
                        "(a value is a str, number or bool, or [k] for the k-th of 'values')")
    return values[_index(value[0], len(values), f"{where}'s value", classname)]


@functools.lru_cache(maxsize=URIS_KEPT)
def _checked_uri(uri: str) -> str:
    """``uri``, if it is a Pyro5 URI (else a ``ValueError``); the URIs of the services answers
    name again and again are parsed once (parsing was a third of reading an answer)."""
    return uri_of(uri)


def _items(rows: list[Any], layouts: list[_Layout], values: Sequence[Any], classname: str) -> list[ServiceItem]:
    """The items of an answer, each row checked. A sound row's checks are inline, in one loop (they ran
    for every item of every answer); what fails is checked again by the functions that say what is wrong."""
    items = []
    arrived, checked_uri, scalars, islice = ServiceItem._arrived, _checked_uri, _SCALARS, itertools.islice
    for number, row in enumerate(rows):
        if type(row) is not list or len(row) < _ROW_HEAD:
            row = _list(row, f"item {number}", classname)
            raise ValueError(f"malformed {classname}: item {number} has {len(row)} parts "
                             "(service id, URI, layout, values)")
        service_id, uri, at = row[0], row[1], row[2]
        if type(uri) is not str:
            raise TypeError(f"malformed {classname}: item {number}'s URI is {type(uri).__name__}")
        try:
            if service_id is not None and not (type(service_id) is str and 0 < len(service_id) <= MAX_NAME_LENGTH):
                _check_service_id(service_id)
            checked_uri(uri)  # the proxy is made when first asked for
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"malformed {classname}: item {number}: {exc}") from None
        if type(at) is not int or not 0 <= at < len(layouts):
            _index(at, len(layouts), f"item {number}'s layout", classname)
        layout = layouts[at]
        if len(row) != layout.width:
            raise ValueError(f"malformed {classname}: item {number} has {len(row) - _ROW_HEAD} values, "
                             f"its layout {layout.width - _ROW_HEAD}")
        if not scalars.issuperset(map(type, islice(row, _ROW_HEAD, None))):
            row = row[:_ROW_HEAD] + [value if type(value) in _SCALARS else _value(value, values, f"item {number}",
                                                                                 classname)
                                     for value in row[_ROW_HEAD:]]
        items.append(arrived(service_id, uri, layout.types, layout.type_set,
                             tuple([make(*row[start:end]) for make, start, end in layout.makers])))
    return items


def unpack_matches(classname: str, total: int, text: str, values: Sequence[Any]) -> ServiceMatches:
    """A lookup's answer from its JSON table and the values beside it.

    Raises:
        TypeError, ValueError: anything malformed, said clearly (``"malformed <classname>: ..."``).
    """
    try:
        return _unpack_matches(classname, total, text, values)
    except (TypeError, ValueError) as exc:
        if str(exc).startswith("malformed"):
            raise
        raise type(exc)(f"malformed {classname}: {exc}") from None


def _unpack_matches(classname: str, total: int, text: str, values: Sequence[Any]) -> ServiceMatches:
    for number, value in enumerate(values):
        check_wire_value(value, f"value {number}")
    try:
        table = _decode(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"malformed {classname}: its table is not JSON ({exc})") from None
    if type(table) is not dict:
        raise TypeError(f"malformed {classname}: its table is {type(table).__name__}, not an object")
    missing = [key for key in TABLE_KEYS if key not in table]
    if missing:
        raise ValueError(f"malformed {classname}: its table has no {', '.join(map(repr, missing))}")
    parts = {key: _list(table[key], key, classname) for key in TABLE_KEYS}
    lineages = _lineages(parts["lineages"], classname)
    layouts = _layouts(parts["layouts"], _shapes(parts["shapes"], lineages, classname), classname)
    items = _items(parts["items"], layouts, values, classname)
    if total < len(items):
        raise ValueError(f"malformed {classname}: total ({total}) is less than the number of items ({len(items)})")
    return ServiceMatches._made(items, total, read_expiries(table.get("expiries"), len(items), classname))


def read_expiries(expiries: Any, count: int, classname: str) -> list[Expiry | None] | None:
    """The expiries of ``count`` items as sent (``[remaining, term]`` or ``None`` each; ``None``: none sent).

    Raises:
        TypeError, ValueError: not a list of ``count`` such pairs, or a figure out of range.
    """
    if expiries is None:
        return None
    if not isinstance(expiries, (list, tuple)):
        raise TypeError(f"malformed {classname}: 'expiries' is {type(expiries).__name__}, not a list")
    if len(expiries) != count:
        raise ValueError(f"malformed {classname}: {len(expiries)} expiries for {count} items")
    pairs = [pair for pair in expiries if pair is not None]
    if (all(type(pair) is list and len(pair) == 2 for pair in pairs)  # as a packed table has them: checked at once
            and _NUMBERS.issuperset(map(type, itertools.chain.from_iterable(pairs)))
            and all(remaining >= 0 and term > 0 for remaining, term in pairs)):
        return [None if pair is None else _new_tuple(Expiry, pair) for pair in expiries]
    return [None if expiry is None else read_expiry(expiry, f"expiry {number}", classname)  # to say what is wrong
            for number, expiry in enumerate(expiries)]


def read_expiry(pair: Any, where: str, classname: str) -> Expiry:
    """One expiry as sent, ``[remaining, term]``.

    Raises:
        TypeError, ValueError: not such a pair, or a figure out of range.
    """
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        raise TypeError(f"malformed {classname}: {where} is not a [remaining, term] pair")
    try:
        return Expiry.checked(*pair)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"malformed {classname}: {where}: {exc}") from None

