"""Entries: the typed attributes a service is registered with and templates match on.

An entry class is declared like a dataclass, and becomes one by subclassing
:class:`Entry`::

    class Printer(Entry):
        color: str | None = None
        ppm: int | None = None

Every field defaults to ``None``, because in a template ``None`` means "any
value". Entries cross the wire by class name, with the names of the entry
classes they descend from (their *lineage*), so a lookup service stores and
matches entries of classes it has never imported: those arrive as
:class:`UnknownEntry`, which matches exactly as the real class would.

Field values are plain wire values: ``str``, ``int``, ``float`` (not NaN),
``bool``, ``None``, and lists, tuples and ``str``-keyed dicts of these.
"""

from __future__ import annotations

import dataclasses
import inspect
import keyword
import logging
import math
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, cast

__all__ = [
    "Entry", "UnknownEntry", "Name", "Location", "Comment", "ServiceInfo", "Status",
    "entry_class", "entry_class_name", "entry_lineage", "entry_fields", "entry_matches",
    "qualified_name", "check_class_name", "check_lineage", "check_field_name", "check_wire_value", "wire_equal",
    "MAX_FIELDS", "MAX_LINEAGE", "MAX_NAME_LENGTH", "MAX_VALUE_DEPTH", "MAX_CONTAINER_LENGTH",
]

log = logging.getLogger(__name__)

MAX_FIELDS = 64              #: fields of one entry
MAX_LINEAGE = 32             #: entry classes an entry descends from, its own included
MAX_NAME_LENGTH = 256        #: characters of a class, type or field name
MAX_VALUE_DEPTH = 8          #: nesting of lists, tuples and dicts in a field value
MAX_CONTAINER_LENGTH = 4096  #: elements of one list, tuple or dict in a field value

# every entry class, by qualified name, so that entries arriving by name can be rebuilt
_registry: dict[str, type[Entry]] = {}
_MISSING = object()


# -- names ----------------------------------------------------------------------

def qualified_name(cls: type) -> str:
    """``f"{module}.{qualname}"`` of a class: the name it travels under.

    Raises:
        TypeError: ``cls`` is not a class.
    """
    if not isinstance(cls, type):
        raise TypeError(f"expected a class, got {type(cls).__name__}")
    return f"{cls.__module__}.{cls.__qualname__}"


def check_class_name(name: object, what: str = "class name") -> str:
    """Return ``name`` if it is a qualified class name (``module.Class``), else raise.

    Each dotted part is an identifier, or ``<locals>`` (classes defined in a function).

    Raises:
        TypeError: ``name`` is not a ``str``.
        ValueError: it is empty, longer than ``MAX_NAME_LENGTH``, or not dotted identifiers.
    """
    if not isinstance(name, str):
        raise TypeError(f"{what} must be a str, got {type(name).__name__}")
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"{what} longer than {MAX_NAME_LENGTH} characters: {name!r:.80}")
    parts = name.split(".")
    if len(parts) < 2 or not all(part.isidentifier() or part == "<locals>" for part in parts):
        raise ValueError(f"{what} must be a qualified name like 'module.Class', got {name!r:.80}")
    return name


def check_lineage(names: tuple[Any, ...]) -> tuple[str, ...]:
    """Return ``names`` if it is a lineage: 1 to ``MAX_LINEAGE`` qualified class names, else raise.

    Raises:
        TypeError: a name that is not a str.
        ValueError: too few or too many names, or a name that is not a qualified class name.
    """
    if not 1 <= len(names) <= MAX_LINEAGE:
        raise ValueError(f"lineage must hold 1 to {MAX_LINEAGE} class names, got {len(names)}")
    return tuple(check_class_name(name, "lineage class name") for name in names)


def check_field_name(name: object, where: str = "entry") -> str:
    """Return ``name`` if it is an entry field name, else raise.

    Raises:
        TypeError: ``name`` is not a ``str``.
        ValueError: it is not an identifier, is a keyword, starts with ``_`` or is
            longer than ``MAX_NAME_LENGTH``.
    """
    if not isinstance(name, str):
        raise TypeError(f"{where}: a field name must be a str, got {type(name).__name__}")
    if (len(name) > MAX_NAME_LENGTH or not name.isidentifier() or keyword.iskeyword(name)
            or name.startswith("_")):
        raise ValueError(f"{where}: {name!r:.80} is not a field name "
                         "(an identifier, not a keyword, not starting with '_')")
    return name


# -- values ---------------------------------------------------------------------

def check_wire_value(value: object, where: str = "value", _depth: int = 0) -> None:
    """Raise unless ``value`` is a plain wire value an entry field may hold.

    Args:
        value: the value to check.
        where: names the value in error messages.

    Raises:
        TypeError: a value (or dict key) of another type.
        ValueError: a NaN, a dict key ``"__class__"`` (the serializer's), nesting deeper
            than ``MAX_VALUE_DEPTH``, or a container longer than ``MAX_CONTAINER_LENGTH``.
    """
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return
    if kind is float:
        if math.isnan(cast(float, value)):
            raise ValueError(f"{where}: NaN is not a wire value (it equals nothing, so it could never match)")
        return
    if kind not in (list, tuple, dict):
        raise TypeError(f"{where}: {kind.__name__} is not a wire value "
                        "(str, int, float, bool, None, or lists, tuples and str-keyed dicts of these)")
    if _depth >= MAX_VALUE_DEPTH:
        raise ValueError(f"{where}: nested deeper than {MAX_VALUE_DEPTH} levels")
    # exact types, not isinstance: a subclass would not cross the wire as itself
    container = cast("list[object] | tuple[object, ...] | dict[object, object]", value)
    if len(container) > MAX_CONTAINER_LENGTH:
        raise ValueError(f"{where}: more than {MAX_CONTAINER_LENGTH} elements")
    if isinstance(container, dict):
        for key, item in container.items():
            if type(key) is not str:
                raise TypeError(f"{where}: dict keys must be str, got {type(key).__name__}")
            if key == "__class__":
                raise ValueError(f"{where}: the dict key '__class__' is reserved by the serializer")
            check_wire_value(item, f"{where}[{key!r:.40}]", _depth + 1)
    else:
        for index, item in enumerate(container):
            check_wire_value(item, f"{where}[{index}]", _depth + 1)


def wire_equal(a: object, b: object) -> bool:
    """Whether two field values are equal as wire values.

    Like ``==``, except that a ``bool`` equals only a ``bool`` (``True`` is not
    ``1``), and lists and tuples compare as sequences (``[1, 2]`` equals
    ``(1, 2)``), since which of the two arrives depends on the serializer.
    """
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if isinstance(a, (list, tuple)):
        return (isinstance(b, (list, tuple)) and len(a) == len(b)
                and all(wire_equal(x, y) for x, y in zip(a, b)))
    if isinstance(a, dict):
        return (isinstance(b, dict) and a.keys() == b.keys()
                and all(wire_equal(a[key], b[key]) for key in a))
    if isinstance(b, (list, tuple, dict)):
        return False
    return bool(a == b)


# -- entries --------------------------------------------------------------------

def _is_classvar(annotation: object) -> bool:
    """Whether an annotation (a string under ``from __future__ import annotations``) is a ClassVar."""
    if isinstance(annotation, str):
        head = annotation.strip().split("[", 1)[0].strip()
        return head in ("ClassVar", "typing.ClassVar", "t.ClassVar")
    return annotation is ClassVar or typing.get_origin(annotation) is ClassVar


class Entry:
    """Base class of typed service attributes.

    Subclasses are declared with annotated fields and become dataclasses on
    definition; a field declared without a default gets ``None``, so that a
    template can leave any field open. Entries are equal when they are of the
    same entry class (by qualified name) and their fields are equal (see
    :func:`wire_equal`); they are mutable and not hashable.

    Every subclass is registered under its qualified name
    (``f"{module}.{qualname}"``) so an entry arriving over the wire is rebuilt
    as its class; define (import) your entry classes on both sides, or let the
    other side see them as :class:`UnknownEntry`. Field names must not start
    with ``_``, and a class has at most ``MAX_FIELDS`` fields. ``Entry`` itself
    cannot be instantiated.

    Raises:
        TypeError: on definition, a field name starting with ``_``, too many
            fields, or a class name that is not a qualified name; on
            instantiation, ``Entry`` itself.
    """

    _entry_class_name: ClassVar[str]
    _entry_lineage: ClassVar[tuple[str, ...]]
    _entry_field_names: ClassVar[tuple[str, ...]] = ()
    _entry_field_set: ClassVar[frozenset[str]] = frozenset()
    _entry_init_names: ClassVar[frozenset[str]] = frozenset()  # the fields its __init__ takes
    _entry_made_init: ClassVar[Any] = None  # the __init__ dataclass made for it (None: it has its own)
    _entry_defaults: ClassVar[dict[str, Any] | None] = None  # see plain_defaults

    def __init_subclass__(cls, *, _wire_only: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if _wire_only:  # UnknownEntry: it carries its class name and lineage per instance
            return
        own_init = "__init__" in cls.__dict__
        for name, annotation in inspect.get_annotations(cls).items():
            if _is_classvar(annotation):
                continue
            default = cls.__dict__.get(name, _MISSING)
            if default is _MISSING:
                setattr(cls, name, None)
            elif (isinstance(default, dataclasses.Field) and default.default is dataclasses.MISSING
                  and default.default_factory is dataclasses.MISSING):
                default.default = None
        dataclasses.dataclass(cls, eq=False)  # Entry.__eq__ compares by class name and fields
        field_names = tuple(field.name for field in dataclasses.fields(cls))  # type: ignore[arg-type]
        try:
            for name in field_names:
                check_field_name(name, qualified_name(cls))
            class_name = check_class_name(qualified_name(cls), "entry class name")
        except ValueError as exc:
            raise TypeError(str(exc)) from None
        if len(field_names) > MAX_FIELDS:
            raise TypeError(f"{class_name} has {len(field_names)} fields; at most {MAX_FIELDS} are allowed")
        cls._entry_field_names = field_names
        cls._entry_field_set = frozenset(field_names)
        cls._entry_init_names = frozenset(field.name for field in dataclasses.fields(cls)  # type: ignore[arg-type]
                                          if field.init)
        cls._entry_made_init = None if own_init else cls.__dict__.get("__init__")
        cls._entry_defaults = _field_defaults(cls)
        cls._entry_class_name = class_name
        cls._entry_lineage = tuple(qualified_name(base) for base in cls.__mro__
                                   if issubclass(base, Entry) and base is not Entry)
        previous = _registry.get(class_name)
        if previous is not None and previous is not cls:
            log.debug("entry class %s defined again; the new definition replaces the old", class_name)
        _registry[class_name] = cls

    def __init__(self) -> None:  # not __new__: a __new__ in Python cost every entry made 0.3 us
        if type(self) is Entry:
            raise TypeError("Entry is a base class: subclass it to declare an entry")

    def _entry_fields(self) -> dict[str, Any]:
        """The fields by name (a fresh dict, or for an UnknownEntry its own: do not change it)."""
        return {name: getattr(self, name) for name in self._entry_field_names}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Entry):
            return NotImplemented
        return (self._entry_class_name == other._entry_class_name
                and wire_equal(self._entry_fields(), other._entry_fields()))

    __hash__ = None  # type: ignore[assignment]  # entries are mutable


def _field_defaults(cls: type[Entry]) -> dict[str, Any] | None:
    """Every field's default in order, if each is a plain default an ``__init__`` takes, none is a
    descriptor (a property, a slot) and there is no ``__post_init__``; else ``None``."""
    if getattr(cls, "__post_init__", None) is not None:
        return None
    defaults = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not field.init or field.default is dataclasses.MISSING:  # init=False, or a default factory
            return None
        if hasattr(type(inspect.getattr_static(cls, field.name, None)), "__set__"):
            return None
        defaults[field.name] = field.default
    return defaults


def plain_defaults(cls: type[Entry]) -> dict[str, Any] | None:
    """Every field's default, in order, when an instance of ``cls`` may be made by filling
    its ``__dict__`` with them and the values given, exactly as its ``__init__`` would (it
    is the one dataclass made, no ``__post_init__``, ``__setattr__`` or default factory,
    every field an init field, no descriptor for a field); else ``None``.

    Reading an answer makes hundreds of entries: this way each costs half as much.
    """
    defaults = cls._entry_defaults
    if (defaults is None or cls.__dict__.get("__init__") is not cls._entry_made_init
            or cls.__setattr__ is not object.__setattr__):  # e.g. decorated again after its definition
        return None
    return defaults


class UnknownEntry(Entry, _wire_only=True):
    """An entry of a class this process does not have, as it arrived over the wire.

    It keeps the class name, the lineage and the fields; it matches templates
    exactly as an instance of the real class would, compares equal to one with
    the same class name and fields, and travels back out in the same wire form.
    Fields read as attributes (``entry.color``). It cannot be subclassed.

    Args:
        class_name: the qualified name of the real class.
        lineage: the names of the entry classes it descends from, starting with
            ``class_name`` (``Entry`` itself excluded).
        fields: field values by name.

    Raises:
        TypeError: a name, the lineage, the fields or a field value of the wrong type.
        ValueError: a malformed name, an empty or oversized lineage, a lineage that does
            not start with ``class_name``, more than ``MAX_FIELDS`` fields, or a value
            :func:`check_wire_value` refuses.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        raise TypeError("UnknownEntry cannot be subclassed; subclass Entry")

    def __init__(self, class_name: str, lineage: Iterable[str], fields: Mapping[str, Any]) -> None:
        check_class_name(class_name, "entry class name")
        if isinstance(lineage, (str, bytes)) or not isinstance(lineage, Iterable):
            raise TypeError(f"lineage must be a sequence of class names, got {type(lineage).__name__}")
        names = check_lineage(tuple(lineage))
        if names[0] != class_name:
            raise ValueError(f"lineage must start with the class name {class_name!r}, got {names[0]!r}")
        if not isinstance(fields, Mapping):
            raise TypeError(f"fields must be a mapping of names to values, got {type(fields).__name__}")
        if len(fields) > MAX_FIELDS:
            raise ValueError(f"{class_name} has {len(fields)} fields; at most {MAX_FIELDS} are allowed")
        for name, value in fields.items():
            check_field_name(name, class_name)
            check_wire_value(value, f"{class_name}.{name}")
        self._entry_class_name = class_name  # type: ignore[misc]
        self._entry_lineage = names  # type: ignore[misc]
        self._fields = dict(fields)

    @classmethod
    def _checked(cls, class_name: str, lineage: tuple[str, ...], fields: dict[str, Any]) -> UnknownEntry:
        """An UnknownEntry of parts its caller has checked as the constructor would (the wire
        converters, which check a class's name, lineage and field names once per answer); ``fields`` is kept."""
        entry = object.__new__(cls)
        entry._entry_class_name = class_name  # type: ignore[misc]
        entry._entry_lineage = lineage  # type: ignore[misc]
        entry._fields = fields
        return entry

    @property
    def class_name(self) -> str:
        """The qualified name of the real class."""
        return self._entry_class_name

    @property
    def lineage(self) -> tuple[str, ...]:
        """The names of the entry classes it descends from, its own first."""
        return self._entry_lineage

    @property
    def fields(self) -> dict[str, Any]:
        """A copy of the field values by name."""
        return dict(self._fields)

    def _entry_fields(self) -> dict[str, Any]:
        return self._fields

    def __getattr__(self, name: str) -> Any:
        fields = self.__dict__.get("_fields")
        if fields is not None and not name.startswith("_") and name in fields:
            return fields[name]
        raise AttributeError(f"{type(self).__name__} of {self.__dict__.get('_entry_class_name')} "
                             f"has no field {name!r}")

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in self._fields.items())
        return f"UnknownEntry({self._entry_class_name}({fields}))"


def entry_class(name: str) -> type[Entry] | None:
    """The entry class registered under a qualified name, or ``None``."""
    return _registry.get(name)


def _check_entry(entry: object) -> Entry:
    if not isinstance(entry, Entry):
        raise TypeError(f"expected an Entry, got {type(entry).__name__}")
    return entry


def entry_class_name(entry: Entry) -> str:
    """The qualified name of an entry's class (the real class's, for an :class:`UnknownEntry`).

    Raises:
        TypeError: ``entry`` is not an Entry.
    """
    return _check_entry(entry)._entry_class_name


def entry_lineage(entry: Entry) -> tuple[str, ...]:
    """The names of the entry classes an entry descends from, its own first, ``Entry`` excluded.

    Raises:
        TypeError: ``entry`` is not an Entry.
    """
    return _check_entry(entry)._entry_lineage


def entry_fields(entry: Entry) -> dict[str, Any]:
    """An entry's field values by name (a new dict).

    Raises:
        TypeError: ``entry`` is not an Entry.
    """
    return dict(_check_entry(entry)._entry_fields())


def entry_matches(template: Entry, entry: Entry) -> bool:
    """Whether ``entry`` matches the template entry ``template``.

    It does when it is of the template's class or a subclass (by lineage name,
    so this works for :class:`UnknownEntry` as well) and each of the template's
    fields that is not ``None`` equals the entry's (see :func:`wire_equal`).

    Raises:
        TypeError: either argument is not an Entry.
    """
    _check_entry(template)
    _check_entry(entry)
    if template._entry_class_name not in entry._entry_lineage:
        return False
    fields = entry._entry_fields()
    for name, wanted in template._entry_fields().items():
        if wanted is not None and not wire_equal(wanted, fields.get(name, _MISSING)):
            return False
    return True


def entry_updated(entry: Entry, changes: Mapping[str, Any]) -> Entry:
    """A copy of ``entry`` with the fields in ``changes`` set (``entry`` itself is unchanged).

    Raises:
        TypeError: ``entry`` is not an Entry.
        ValueError: ``changes`` names a field the entry does not have.
    """
    fields = entry_fields(entry)
    unknown = sorted(set(changes) - set(fields))
    if unknown:
        raise ValueError(f"{entry_class_name(entry)} has no field(s) {', '.join(unknown)}")
    if isinstance(entry, UnknownEntry):
        return UnknownEntry(entry.class_name, entry.lineage, {**fields, **changes})
    return dataclasses.replace(entry, **changes)  # type: ignore[type-var]


def modified_entries(entries: Iterable[Entry], templates: Sequence[Entry],
                     changes: Sequence[Entry | None]) -> list[Entry]:
    """``entries`` after a ``modify_attributes``: each entry matched by
    ``templates[i]`` takes the fields ``changes[i]`` does not leave ``None``,
    or is deleted where ``changes[i]`` is ``None``.

    Raises:
        ValueError: ``templates`` and ``changes`` differ in length, or a change
            is of another class than its template.
    """
    if len(templates) != len(changes):
        raise ValueError("modify_attributes needs one entry (or None) per template")
    for template, change in zip(templates, changes):
        if change is not None and entry_class_name(change) != entry_class_name(template):
            raise ValueError(f"a change must be of its template's class, "
                             f"{entry_class_name(template)}, not {entry_class_name(change)}")
    kept: list[Entry] = []
    for entry in entries:
        for template, change in zip(templates, changes):
            if entry_matches(template, entry):
                if change is None:
                    break  # deleted
                entry = entry_updated(entry, {k: v for k, v in entry_fields(change).items() if v is not None})
        else:
            kept.append(entry)
    return kept


# -- standard entries -------------------------------------------------------------

class Name(Entry):
    """A service's name, for people to read."""

    name: str | None = None


class Location(Entry):
    """Where a service (or the device it fronts) is."""

    floor: str | None = None
    room: str | None = None
    building: str | None = None


class Comment(Entry):
    """Free text about a service."""

    comment: str | None = None


class ServiceInfo(Entry):
    """What a service is and who made it."""

    name: str | None = None
    manufacturer: str | None = None
    vendor: str | None = None
    version: str | None = None
    model: str | None = None
    serial_number: str | None = None


class Status(Entry):
    """How a service is doing; ``severity`` is one of the constants below, by convention."""

    ERROR: ClassVar[str] = "error"
    WARNING: ClassVar[str] = "warning"
    NOTICE: ClassVar[str] = "notice"
    NORMAL: ClassVar[str] = "normal"

    severity: str | None = None
