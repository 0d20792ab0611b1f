"""Serializer converters for the lookup service's data model.

Imported by ``lookup/__init__.py``, so importing lookup is enough. The wire forms::

    {"__class__": "lookup.Entry", "class": "mymod.Printer",
     "lineage": ["mymod.Printer", ...], "fields": {name: value}}
    {"__class__": "lookup.ServiceItem", "service_id": str | None, "service": str (URI),
     "types": [str], "attributes": [entry dicts]}
    {"__class__": "lookup.ServiceTemplate", "service_id": str | None, "types": [str],
     "attributes": [entry dicts]}
    {"__class__": "lookup.PackedMatches", "total": int, "table": str (JSON), "values": [value],
     "cursor": str (only when more matches follow, left out)}
    {"__class__": "lookup.ServiceMatches", "items": [item dicts], "total": int,
     "cursor": str (as above)}   (read; sent if asked)
    {"__class__": "lookup.ServiceEvent", "event_id": int, "sequence_number": int, "handback": any,
     "service_id": str, "transition": int, "item": item dict | None,
     "remaining": float, "term": float (both optional: the item's registration, see below)}
    {"__class__": "lookup.EventRegistration", "event_id": int, "lease": lease dict, "sequence_number": int}
    {"__class__": "lookup.ServiceRegistration", "service_id": str, "lease": lease dict,
     "secret": str (only when the lookup service assigned the id)}

Every entry travels under the one tag ``lookup.Entry`` with its real class's
name, so the receiver need not have imported that class: a registered class
is rebuilt as itself, any other as an :class:`~lookup.entry.UnknownEntry`.
An arriving item's ``service`` becomes a ``Pyro5.api.Proxy`` (made when
first read: by the thread that first reads it, which so owns it).

Matches: the packed form
------------------------
A ``lookup_all`` answer goes packed (:mod:`lookup.packed`): each entry
class's lineage, each entry shape and each item layout once per answer, then
one row per item, all in one JSON text, ``table``::

    {"lineages": [["mymod.ColorPrinter", "mymod.Printer"], ...],
     "shapes":   [[lineage, ["color", "ppm", "duplex"], [0, 2]], ...],
     "layouts":  [[["mymod.PrinterService", ...], [shape, shape, ...]], ...],
     "items":    [[service_id | null, "PYRO:...", layout, value, value, ...], ...],
     "expiries": [[remaining, term] | null, ...]}        (optional: see Expiries below)

``lineage``, ``shape`` and ``layout`` are places (from 0) in those lists. A
shape is an entry class (its lineage), every one of its field names in order,
and the places among them of the fields that have a value; the others are
``None`` and not sent. An item's row holds the values of its entries' given
fields, entry after entry, in its layout's order. A value is a JSON string,
number or bool; a list, tuple or dict (or an infinite float) goes in
``values``, in the serializer's own form (a tuple stays a tuple), and the row
holds ``[k]``, its place there. 200 items take about a fifth of the bytes
of the dict form, and are read many times faster (``json`` parses in C;
serpent's ``literal_eval`` in Python; the figures: ``docs/performance.md``).

Every form ever sent is read: the dict form of matches as well (from a
lookup service before the packed form). A reader before the packed form
cannot read it: it fails with Pyro5's "unsupported serialized class
lookup.PackedMatches", never misreads it. For such clients, a lookup service
can send the dict form: :func:`register_all` with ``packed_matches=False``.
A malformed dict or table, either form, is a ``TypeError`` or ``ValueError``
saying what is wrong, raised before anything is made of it.

Expiries: when each registration ends
-------------------------------------
An event that carries an item, and a ``lookup_all`` answer, say when each
item's registration ends, as a lease does (Jini's DURATION style):
``remaining``, the seconds it had left when the lookup service sent it, and
``term``, the seconds its lease was granted (a renewal grants about as much
again). The receiver adds ``remaining`` to its own monotonic now, so no two
clocks need agree; a :class:`~lookup.LookupCache` keeps a lost lookup
service's items at most that long (see :mod:`lookup.client.view`). An event has
them as ``"remaining"`` and ``"term"`` (``inf`` for FOREVER); a lone
``remaining`` is taken as the term too, as for a lease. A packed answer's
table has ``"expiries"``, one per item, in order: ``[remaining, term]``
(remaining to the millisecond), or ``null`` where not known or not finite
(JSON has no ``inf``), little added to an answer; the dict form
has ``"expiries"`` beside ``"items"``, ``[remaining, term]`` or ``None``.
Every one is optional: a sender before expiries sends none and a reader
before them ignores them, and a receiver then knows nothing of when the
registration ends (a cache keeps such items as it did, for its ``orphan_timeout``).
A malformed one is a ``TypeError`` or ``ValueError``, as anything else malformed.

Cursors: the rest of a long answer
----------------------------------
An answer carries items while they fit its size
(:data:`lookup.service.quotas.ANSWER_BYTES`); when more matches follow,
left out by that or by the number asked for, it has ``"cursor"``, a short
str, and ``lookup_all(template, max_matches, cursor)`` hands back the next of
them. A reader before cursors ignores the key, and so reads only the first
part of an answer over that size (about 3,000 typical items; before cursors
it was given every item up to the cap on a message); a lookup service before
them sends none.

Serpent and json recreate classes top-down: when a converter here runs, the
dicts nested in its own are still raw, and it converts them itself,
accepting only the tag it expects there (an item's attributes must be
entries, not leases). msgpack (landlord's wire) recreates them bottom-up,
innermost first: the nested ones arrive made, and a converter accepts only
the class it expects there. Either way a class where a plain value belongs
is refused (a field value must be a wire value).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from landlord import LandlordLease
from landlord.wire import LEASE_CLASS, checked_fields, lease_from_dict, register_converters

from .entry import Entry, UnknownEntry, check_wire_value, entry_class
from .events import EventRegistration, ServiceEvent
from .item import ServiceItem, ServiceMatches, ServiceTemplate, check_cursor
from .packed import pack_matches, read_expiries, read_expiry, unpack_matches
from .registration import ServiceRegistration

__all__ = [
    "ENTRY_CLASS", "ITEM_CLASS", "TEMPLATE_CLASS", "MATCHES_CLASS", "PACKED_MATCHES_CLASS",
    "EVENT_CLASS", "EVENT_REGISTRATION_CLASS", "REGISTRATION_CLASS",
    "entry_to_dict", "entry_from_dict", "item_to_dict", "item_from_dict",
    "template_to_dict", "template_from_dict", "matches_to_dict", "matches_from_dict",
    "packed_matches_to_dict", "packed_matches_from_dict", "register_all",
]

ENTRY_CLASS = "lookup.Entry"
ITEM_CLASS = "lookup.ServiceItem"
TEMPLATE_CLASS = "lookup.ServiceTemplate"
MATCHES_CLASS = "lookup.ServiceMatches"
PACKED_MATCHES_CLASS = "lookup.PackedMatches"
EVENT_CLASS = "lookup.ServiceEvent"
EVENT_REGISTRATION_CLASS = "lookup.EventRegistration"
REGISTRATION_CLASS = "lookup.ServiceRegistration"

_SEQUENCE = (list, tuple)  # serpent sends tuples as tuples, lists as lists


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
    name, lineage, fields = checked_fields(data, classname, {"class": str, "lineage": _SEQUENCE, "fields": dict})
    cls = entry_class(name)
    if cls is not None and tuple(lineage) == cls._entry_lineage and cls._entry_field_set.issuperset(fields):
        # the class's own names, lineage and fields, so sound: only the values are left to check
        for key, value in fields.items():
            check_wire_value(value, f"{name}.{key}")
    else:
        unknown = UnknownEntry(name, lineage, fields)  # validates names, lineage, sizes and values
        if cls is None:
            return unknown
    extra = sorted(set(fields) - set(cls._entry_field_names))
    if extra:
        raise ValueError(f"malformed {classname}: {name} has no field(s) {', '.join(extra):.200}")
    init = cls._entry_init_names
    if init.issuperset(fields):
        return cls(**fields)
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
    service, types, _ = checked_fields(data, classname, {"service": str, "types": _SEQUENCE, "attributes": _SEQUENCE})
    item = ServiceItem(service_id, service, types, _entries(data, classname))  # checks the URI
    item._service = None  # a proxy of it, made when first asked for
    return item


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
    types, _ = checked_fields(data, classname, {"types": _SEQUENCE, "attributes": _SEQUENCE})
    return ServiceTemplate(service_id, types, _entries(data, classname))


def matches_to_dict(matches: ServiceMatches) -> dict[str, Any]:
    """The wire form of a lookup's matches (with their expiries, if known)."""
    data = {"__class__": MATCHES_CLASS, "items": [item_to_dict(item) for item in matches.items],
            "total": matches.total}
    if matches.expiries is not None:
        data["expiries"] = [None if expiry is None else [expiry.remaining, expiry.term]
                            for expiry in matches.expiries]
    if matches.cursor is not None:  # absent otherwise: the form readers before cursors know
        data["cursor"] = matches.cursor
    return data


def matches_from_dict(classname: str, data: dict[str, Any]) -> ServiceMatches:
    """Rebuild a lookup's matches from the dict form (as versions before the packed form sent them).

    Raises:
        TypeError, ValueError: a malformed dict.
    """
    items, total = checked_fields(data, classname, {"items": _SEQUENCE, "total": int})
    expiries = read_expiries(data.get("expiries"), len(items), classname)
    return ServiceMatches([_nested(value, ITEM_CLASS, item_from_dict, ServiceItem, f"{classname} item")
                           for value in items], total, expiries, _cursor(data, classname))


def packed_matches_to_dict(matches: ServiceMatches) -> dict[str, Any]:
    """The packed wire form of a lookup's matches (see :mod:`lookup.packed`).

    Raises:
        TypeError, ValueError: a field value that is not a plain wire value.
    """
    table, values = pack_matches(matches)
    data = {"__class__": PACKED_MATCHES_CLASS, "total": matches.total, "table": table, "values": values}
    if matches.cursor is not None:  # absent otherwise: the form readers before cursors know
        data["cursor"] = matches.cursor
    return data


def packed_matches_from_dict(classname: str, data: dict[str, Any]) -> ServiceMatches:
    """Rebuild a lookup's matches from the packed form.

    Raises:
        TypeError, ValueError: a malformed dict or table.
    """
    total, table, values = checked_fields(data, classname, {"total": int, "table": str, "values": _SEQUENCE})
    cursor = _cursor(data, classname)
    matches = unpack_matches(classname, total, table, values)
    matches.cursor = cursor
    return matches


def _cursor(data: dict[str, Any], classname: str) -> str | None:
    """The cursor of an answer's wire dict, if any (see :class:`~lookup.ServiceMatches`).

    Raises:
        TypeError, ValueError: not a short str.
    """
    try:
        return check_cursor(data.get("cursor"))
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"malformed {classname}: {exc}") from None


# -- events and registrations ----------------------------------------------------------

def event_to_dict(event: ServiceEvent) -> dict[str, Any]:
    """The wire form of a remote event (its item, if any, as an item dict, with its expiry if known)."""
    data = {"__class__": EVENT_CLASS, "event_id": event.event_id, "sequence_number": event.sequence_number,
            "handback": event.handback, "service_id": event.service_id, "transition": event.transition,
            "item": None if event.item is None else item_to_dict(event.item)}
    if event.expiry is not None and event.item is not None:  # absent otherwise: the form readers before knew
        data["remaining"], data["term"] = event.expiry
    return data


def event_from_dict(classname: str, data: dict[str, Any]) -> ServiceEvent:
    """Rebuild a remote event.

    Raises:
        TypeError, ValueError: a malformed dict.
    """
    event_id, sequence_number, service_id, transition = checked_fields(
        data, classname, {"event_id": int, "sequence_number": int, "service_id": str, "transition": int})
    item = data.get("item")
    if item is not None:
        item = _nested(item, ITEM_CLASS, item_from_dict, ServiceItem, f"{classname} item")
    expiry = None
    if "remaining" in data:  # a lone remaining is the term too, as for a lease
        expiry = read_expiry([data["remaining"], data.get("term", data["remaining"])], "its expiry", classname)
    return ServiceEvent(event_id, sequence_number, data.get("handback"), service_id, transition, item,
                        expiry if item is not None else None)


def _lease(data: dict[str, Any], classname: str) -> LandlordLease:
    if "lease" not in data:
        raise ValueError(f"malformed {classname}: no 'lease'")
    return _nested(data["lease"], LEASE_CLASS, lease_from_dict, LandlordLease,  # type: ignore[no-any-return]
                   f"{classname} lease")


def event_registration_to_dict(registration: EventRegistration) -> dict[str, Any]:
    """The wire form of an event registration (its lease as a lease dict)."""
    return {"__class__": EVENT_REGISTRATION_CLASS, "event_id": registration.event_id,
            "lease": registration.lease, "sequence_number": registration.sequence_number}


def event_registration_from_dict(classname: str, data: dict[str, Any]) -> EventRegistration:
    """Rebuild an event registration.

    Raises:
        TypeError, ValueError: a malformed dict.
    """
    event_id, sequence_number = checked_fields(data, classname, {"event_id": int, "sequence_number": int})
    return EventRegistration(event_id, _lease(data, classname), sequence_number)


def registration_to_dict(registration: ServiceRegistration) -> dict[str, Any]:
    """The wire form of a service registration (its lease as a lease dict; its secret, if any)."""
    data = {"__class__": REGISTRATION_CLASS, "service_id": registration.service_id, "lease": registration.lease}
    if registration.secret is not None:  # absent otherwise: the form readers before secrets know
        data["secret"] = registration.secret
    return data


def registration_from_dict(classname: str, data: dict[str, Any]) -> ServiceRegistration:
    """Rebuild a service registration.

    Raises:
        TypeError, ValueError: a malformed dict.
    """
    [service_id] = checked_fields(data, classname, {"service_id": str})
    secret = data.get("secret")
    if secret is not None and not isinstance(secret, str):
        raise TypeError(f"malformed {classname}: 'secret' is {type(secret).__name__}")
    return ServiceRegistration(service_id, _lease(data, classname), secret)


def register_all(*, packed_matches: bool = True) -> None:
    """Register every lookup converter (idempotent): both forms of matches are read.

    Args:
        packed_matches: send matches in the packed form (``lookup.PackedMatches``);
            false: in the dict form (``lookup.ServiceMatches``), which versions
            before the packed form read, for a lookup service whose clients are older.
    """
    register_converters(Entry, ENTRY_CLASS, entry_to_dict, entry_from_dict)  # subclasses too: the lookup is isinstance
    register_converters(ServiceItem, ITEM_CLASS, item_to_dict, item_from_dict)
    register_converters(ServiceTemplate, TEMPLATE_CLASS, template_to_dict, template_from_dict)
    register_converters(ServiceMatches, MATCHES_CLASS, matches_to_dict, matches_from_dict)
    register_converters(ServiceMatches, PACKED_MATCHES_CLASS, packed_matches_to_dict, packed_matches_from_dict)
    if not packed_matches:
        register_converters(ServiceMatches, MATCHES_CLASS, matches_to_dict, matches_from_dict)
    register_converters(ServiceEvent, EVENT_CLASS, event_to_dict, event_from_dict)
    register_converters(EventRegistration, EVENT_REGISTRATION_CLASS, event_registration_to_dict,
                        event_registration_from_dict)
    register_converters(ServiceRegistration, REGISTRATION_CLASS, registration_to_dict, registration_from_dict)


register_all()
