"""Serializer converters for the lookup service's data model.

Imported by ``lookup/__init__.py``, so importing lookup is enough. The wire forms::

    {"__class__": "lookup.Entry", "class": "mymod.Printer",
     "lineage": ["mymod.Printer", ...], "fields": {name: value}}
    {"__class__": "lookup.ServiceItem", "service_id": str | None, "service": str (URI),
     "types": [str], "attributes": [entry dicts]}
    {"__class__": "lookup.ServiceTemplate", "service_id": str | None, "types": [str],
     "attributes": [entry dicts]}
    {"__class__": "lookup.ServiceMatches", "items": [item dicts], "total": int}

Every entry travels under the one tag ``lookup.Entry`` with its real class's
name, so the receiver need not have imported that class: a registered class
is rebuilt as itself, any other as an :class:`~lookup.entry.UnknownEntry`.
An arriving item's ``service`` becomes a ``Pyro5.api.Proxy``.

Pyro5 recreates classes top-down: when a converter here runs, the dicts
nested in its own are still raw, and it converts them itself, accepting only
the tag it expects there (an item's attributes must be entries, not leases).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import Pyro5.api
from Pyro5.serializers import SerializerBase

from .entry import Entry, UnknownEntry, check_wire_value, entry_class
from .item import ServiceItem, ServiceMatches, ServiceTemplate, uri_of

__all__ = [
    "ENTRY_CLASS", "ITEM_CLASS", "TEMPLATE_CLASS", "MATCHES_CLASS",
    "entry_to_dict", "entry_from_dict", "item_to_dict", "item_from_dict",
    "template_to_dict", "template_from_dict", "matches_to_dict", "matches_from_dict", "register_all",
]

ENTRY_CLASS = "lookup.Entry"
ITEM_CLASS = "lookup.ServiceItem"
TEMPLATE_CLASS = "lookup.ServiceTemplate"
MATCHES_CLASS = "lookup.ServiceMatches"

_SEQUENCE = (list, tuple)  # serpent sends tuples as tuples, lists as lists


def _fields(data: dict[str, Any], classname: str, fields: dict[str, type | tuple[type, ...]]) -> list[Any]:
    """The named fields of a wire dict, type-checked, or a clear error."""
    values = []
    for name, kind in fields.items():
        if name not in data:
            raise ValueError(f"malformed {classname}: no {name!r}")
        value = data[name]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise TypeError(f"malformed {classname}: {name!r} is {type(value).__name__}")
        values.append(value)
    return values


def _service_id(data: dict[str, Any], classname: str) -> str | None:
    if "service_id" not in data:
        raise ValueError(f"malformed {classname}: no 'service_id'")
    service_id = data["service_id"]
    if service_id is not None and not isinstance(service_id, str):
        raise TypeError(f"malformed {classname}: 'service_id' is {type(service_id).__name__}")
    return service_id


def _nested(value: Any, tag: str, convert: Callable[[str, dict[str, Any]], Any], kind: type,
            where: str) -> Any:
    """A nested wire dict tagged ``tag``, converted; an object already of ``kind`` as is."""
    if isinstance(value, kind):
        return value
    if not isinstance(value, dict):
        raise TypeError(f"malformed {where}: expected a {tag} dict, got {type(value).__name__}")
    if value.get("__class__") != tag:
        raise TypeError(f"malformed {where}: expected a {tag} dict, got {str(value.get('__class__'))!r:.80}")
    return convert(tag, value)


# -- entries ---------------------------------------------------------------------

def entry_to_dict(entry: Entry) -> dict[str, Any]:
    """The wire form of an entry.

    Raises:
        TypeError, ValueError: a field value that is not a plain wire value
            (see :func:`~lookup.entry.check_wire_value`).
    """
    name = entry._entry_class_name
    fields = dict(entry._entry_fields())
    for field, value in fields.items():
        check_wire_value(value, f"{name}.{field}")
    return {"__class__": ENTRY_CLASS, "class": name, "lineage": list(entry._entry_lineage), "fields": fields}


def entry_from_dict(classname: str, data: dict[str, Any]) -> Entry:
    """Rebuild an entry: as its class when registered here, else as an UnknownEntry.

    Raises:
        TypeError, ValueError: a malformed dict, or a field the registered class does not have.
    """
    name, lineage, fields = _fields(data, classname, {"class": str, "lineage": _SEQUENCE, "fields": dict})
    unknown = UnknownEntry(name, lineage, fields)  # validates names, lineage, sizes and values
    cls = entry_class(name)
    if cls is None:
        return unknown
    extra = sorted(set(fields) - set(cls._entry_field_names))
    if extra:
        raise ValueError(f"malformed {classname}: {name} has no field(s) {', '.join(extra):.200}")
    init = {field.name for field in dataclasses.fields(cls) if field.init}  # type: ignore[arg-type]
    entry = cls(**{key: value for key, value in fields.items() if key in init})
    for key, value in fields.items():
        if key not in init:
            setattr(entry, key, value)
    return entry


# -- items and templates ------------------------------------------------------------

def _entries(data: dict[str, Any], classname: str) -> list[Entry]:
    return [_nested(value, ENTRY_CLASS, entry_from_dict, Entry, f"{classname} attribute")
            for value in data["attributes"]]


def item_to_dict(item: ServiceItem) -> dict[str, Any]:
    """The wire form of a service item (its service as a URI string)."""
    return {"__class__": ITEM_CLASS, "service_id": item.service_id, "service": item.service_uri,
            "types": list(item.types), "attributes": [entry_to_dict(entry) for entry in item.attributes]}


def item_from_dict(classname: str, data: dict[str, Any]) -> ServiceItem:
    """Rebuild a service item; its service becomes a ``Pyro5.api.Proxy``.

    Raises:
        TypeError, ValueError: a malformed dict.
    """
    service_id = _service_id(data, classname)
    service, types, _ = _fields(data, classname, {"service": str, "types": _SEQUENCE, "attributes": _SEQUENCE})
    proxy = Pyro5.api.Proxy(uri_of(service))  # the URI is checked before a proxy is made of it
    return ServiceItem(service_id, proxy, types, _entries(data, classname))


def template_to_dict(template: ServiceTemplate) -> dict[str, Any]:
    """The wire form of a service template."""
    return {"__class__": TEMPLATE_CLASS, "service_id": template.service_id, "types": list(template.types),
            "attributes": [entry_to_dict(entry) for entry in template.attributes]}


def template_from_dict(classname: str, data: dict[str, Any]) -> ServiceTemplate:
    """Rebuild a service template.

    Raises:
        TypeError, ValueError: a malformed dict.
    """
    service_id = _service_id(data, classname)
    types, _ = _fields(data, classname, {"types": _SEQUENCE, "attributes": _SEQUENCE})
    return ServiceTemplate(service_id, types, _entries(data, classname))


def matches_to_dict(matches: ServiceMatches) -> dict[str, Any]:
    """The wire form of a lookup's matches."""
    return {"__class__": MATCHES_CLASS, "items": [item_to_dict(item) for item in matches.items],
            "total": matches.total}


def matches_from_dict(classname: str, data: dict[str, Any]) -> ServiceMatches:
    """Rebuild a lookup's matches.

    Raises:
        TypeError, ValueError: a malformed dict.
    """
    items, total = _fields(data, classname, {"items": _SEQUENCE, "total": int})
    return ServiceMatches([_nested(value, ITEM_CLASS, item_from_dict, ServiceItem, f"{classname} item")
                           for value in items], total)


# -- registration ----------------------------------------------------------------

def _register(cls: type, classname: str, to_dict: Callable[[Any], dict[str, Any]],
              from_dict: Callable[[str, dict[str, Any]], Any]) -> None:
    SerializerBase.register_class_to_dict(cls, to_dict)
    SerializerBase.register_dict_to_class(classname, from_dict)


def register_all() -> None:
    """Register every lookup converter (idempotent)."""
    _register(Entry, ENTRY_CLASS, entry_to_dict, entry_from_dict)  # subclasses too: the lookup is isinstance
    _register(ServiceItem, ITEM_CLASS, item_to_dict, item_from_dict)
    _register(ServiceTemplate, TEMPLATE_CLASS, template_to_dict, template_from_dict)
    _register(ServiceMatches, MATCHES_CLASS, matches_to_dict, matches_from_dict)


register_all()
