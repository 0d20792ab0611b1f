"""Service items, the templates that match them, and the answer to a lookup.

A :class:`ServiceItem` is what a service registers: its id, a way to reach it
(a Pyro5 proxy or URI), the names of the types it implements, and its
attribute entries. A :class:`ServiceTemplate` selects items:

- its ``service_id`` is ``None`` or equal to the item's,
- every one of its types is among the item's types (by name), and
- every one of its entries is matched by at least one of the item's entries
  (see :func:`~lookup.entry.entry_matches`): same entry class or a subclass,
  and equal in every field the template entry does not leave ``None``.

An empty template matches every item.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import Pyro5.client
import Pyro5.core

from .entry import MAX_NAME_LENGTH, Entry, check_class_name, entry_matches, qualified_name

__all__ = [
    "ServiceItem", "ServiceTemplate", "ServiceMatches", "Expiry", "matches", "type_names", "uri_of",
    "MAX_MATCHES", "MAX_TYPES", "MAX_ATTRIBUTES", "MAX_URI_LENGTH", "MAX_CURSOR", "check_cursor",
]

MAX_MATCHES = 100_000  #: the most items one lookup_all hands back (the service's cap, which clients check too)
MAX_TYPES = 256        #: type names of one item or template
MAX_ATTRIBUTES = 256   #: entries of one item or template
MAX_URI_LENGTH = 1024  #: characters of a service's URI
MAX_CURSOR = 64        #: characters of a cursor, where an answer goes on from (see ServiceMatches)

Service = Pyro5.client.Proxy | Pyro5.core.URI | str
_UNCHANGED: Any = object()


def type_names(cls: type) -> tuple[str, ...]:
    """The qualified names of ``cls`` and its bases (its MRO), ``object`` excluded.

    These are the types a service of class ``cls`` is registered under, so a
    template naming any of them finds it.

    Raises:
        TypeError: ``cls`` is not a class.
    """
    if not isinstance(cls, type):
        raise TypeError(f"type_names takes a class, got {type(cls).__name__}")
    return tuple(qualified_name(base) for base in cls.__mro__ if base is not object)


def _check_service_id(service_id: object) -> str | None:
    if service_id is None:
        return None
    if not isinstance(service_id, str):
        raise TypeError(f"service_id must be a str or None, got {type(service_id).__name__}")
    if not service_id or len(service_id) > MAX_NAME_LENGTH:
        raise ValueError(f"service_id must be 1 to {MAX_NAME_LENGTH} characters, got {service_id!r:.80}")
    return service_id


def _check_types(types: object) -> tuple[str, ...]:
    if isinstance(types, (str, bytes, type)) or not isinstance(types, Iterable):
        raise TypeError(f"types must be a sequence of type names or classes, got {type(types).__name__}")
    names = tuple(check_class_name(qualified_name(kind) if isinstance(kind, type) else kind, "type name")
                  for kind in types)
    if len(names) > MAX_TYPES:
        raise ValueError(f"at most {MAX_TYPES} types are allowed, got {len(names)}")
    return names


def _check_attributes(attributes: object) -> tuple[Entry, ...]:
    if isinstance(attributes, (str, bytes, Entry)) or not isinstance(attributes, Iterable):
        raise TypeError(f"attributes must be a sequence of entries, got {type(attributes).__name__}")
    entries = tuple(attributes)
    for entry in entries:
        if not isinstance(entry, Entry):
            kind = f"the class {entry.__name__}" if isinstance(entry, type) else type(entry).__name__
            raise TypeError(f"attributes must be Entry instances, got {kind}")
    if len(entries) > MAX_ATTRIBUTES:
        raise ValueError(f"at most {MAX_ATTRIBUTES} attributes are allowed, got {len(entries)}")
    return entries


def uri_of(service: object) -> str:
    """The Pyro5 URI, as a ``str``, of a proxy, a ``Pyro5.core.URI`` or a URI string.

    Raises:
        TypeError: ``service`` is none of those.
        ValueError: a string that is not a Pyro5 URI, or longer than ``MAX_URI_LENGTH``.
    """
    if isinstance(service, Pyro5.client.Proxy):
        uri = str(service._pyroUri)
    elif isinstance(service, Pyro5.core.URI):
        uri = str(service)
    elif isinstance(service, str):
        if len(service) > MAX_URI_LENGTH:
            raise ValueError(f"service URI longer than {MAX_URI_LENGTH} characters: {service!r:.80}")
        try:
            Pyro5.core.URI(service)
        except Exception as exc:  # Pyro5 raises PyroError, TypeError, ValueError...
            raise ValueError(f"service is not a Pyro5 URI: {service!r:.80}") from exc
        uri = service
    else:
        raise TypeError(f"service must be a Pyro5 proxy, a Pyro5 URI or a URI string, "
                        f"got {type(service).__name__}")
    if len(uri) > MAX_URI_LENGTH:
        raise ValueError(f"service URI longer than {MAX_URI_LENGTH} characters: {uri!r:.80}")
    return uri


class ServiceItem:  # not a frozen dataclass: its object.__setattr__ per field made construction 20% slower
    """A registered service: its id, how to reach it, its types and its attributes.

    Args:
        service_id: ``None`` on first registration (the lookup service assigns
            one), otherwise the id it assigned.
        service: a Pyro5 proxy, a ``Pyro5.core.URI`` or a URI string; kept as
            given. An item that arrived over the wire holds a proxy, made when
            :attr:`service` is first read (so the thread that first reads it owns it).
        types: the fully qualified names of the types the service implements;
            classes are accepted and turned into their names (see :func:`type_names`).
        attributes: the service's entries.

    Raises:
        TypeError: an argument of the wrong type (a single name or entry where a
            sequence belongs, a non-Entry attribute, an Entry class instead of an instance).
        ValueError: an empty or oversized id, a malformed URI or type name, more than
            ``MAX_TYPES`` types or ``MAX_ATTRIBUTES`` attributes.
    """

    # _service is None for an item that arrived over the wire until its proxy is first asked for;
    # _packing is the wire module's cache of its packed form (see lookup.packed), kept once registered
    __slots__ = ("_service_id", "_service", "_service_uri", "_types", "_type_set", "_attributes", "_packing")

    def __init__(self, service_id: str | None, service: Service, types: Iterable[str | type] = (),
                 attributes: Iterable[Entry] = ()) -> None:
        self._service_id = _check_service_id(service_id)
        self._service_uri = uri_of(service)
        self._service: Service | None = service
        self._types = _check_types(types)
        self._type_set = frozenset(self._types)
        self._attributes = _check_attributes(attributes)
        self._packing: Any = None

    @classmethod
    def _arrived(cls, service_id: str | None, uri: str, types: tuple[str, ...], type_set: frozenset[str],
                 attributes: tuple[Entry, ...]) -> ServiceItem:
        """An item as the wire converters rebuild it, its parts checked by them already
        (``types`` and ``type_set`` may be shared by many items): its service a proxy of
        ``uri``, made when first asked for. Making 200 proxies was a tenth of reading an answer."""
        item = cls.__new__(cls)
        item._service_id = service_id
        item._service_uri = uri
        item._service = None
        item._types = types
        item._type_set = type_set
        item._attributes = attributes
        item._packing = None
        return item

    @property
    def service_id(self) -> str | None:
        return self._service_id

    @property
    def service(self) -> Service:
        """The service as given: a proxy, a URI or a URI string (a proxy, for an item that arrived over the wire)."""
        service = self._service
        if service is None:  # two threads at once may each make one; one is kept, both work
            service = self._service = Pyro5.client.Proxy(self._service_uri)
        return service

    @property
    def service_uri(self) -> str:
        """The service's Pyro5 URI as a ``str``."""
        return self._service_uri

    @property
    def types(self) -> tuple[str, ...]:
        return self._types

    @property
    def attributes(self) -> tuple[Entry, ...]:
        return self._attributes

    def has_types(self, names: Iterable[str]) -> bool:
        """Whether the item implements every one of the type ``names``."""
        return self._type_set.issuperset(names)

    def replace(self, *, service_id: str | None = _UNCHANGED, service: Service = _UNCHANGED,
                types: Iterable[str | type] = _UNCHANGED, attributes: Iterable[Entry] = _UNCHANGED,
                ) -> ServiceItem:
        """A copy with the given parts changed (and checked as by the constructor).

        Raises:
            TypeError, ValueError: as the constructor.
        """
        lazy = service is _UNCHANGED and self._service is None
        if service is _UNCHANGED:
            service = self._service_uri if self._service is None else self._service
        item = ServiceItem(self._service_id if service_id is _UNCHANGED else service_id, service,
                           self._types if types is _UNCHANGED else types,
                           self._attributes if attributes is _UNCHANGED else attributes)
        if lazy:  # its proxy still made when first asked for
            item._service = None
        return item

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ServiceItem):
            return NotImplemented
        return (self._service_id == other._service_id and self._service_uri == other._service_uri
                and self._types == other._types and self._attributes == other._attributes)

    __hash__ = None  # type: ignore[assignment]  # entries are not hashable

    def __repr__(self) -> str:
        return (f"ServiceItem(service_id={self._service_id!r}, service={self._service_uri!r}, "
                f"types={self._types!r}, attributes={self._attributes!r})")


class ServiceTemplate:  # not a frozen dataclass: its object.__setattr__ per field made construction 40% slower
    """Selects service items; see the module docstring for the rules.

    Args:
        service_id: the id an item must have, or ``None`` for any.
        types: type names (or classes) an item must all implement.
        attributes: entries each of which one of an item's entries must match;
            ``None`` fields are wildcards.

    Raises:
        TypeError, ValueError: as for :class:`ServiceItem`.
    """

    __slots__ = ("_service_id", "_types", "_type_set", "_attributes")

    def __init__(self, service_id: str | None = None, types: Iterable[str | type] = (),
                 attributes: Iterable[Entry] = ()) -> None:
        self._service_id = _check_service_id(service_id)
        self._types = _check_types(types)
        self._type_set = frozenset(self._types)
        self._attributes = _check_attributes(attributes)

    @property
    def service_id(self) -> str | None:
        return self._service_id

    @property
    def types(self) -> tuple[str, ...]:
        return self._types

    @property
    def attributes(self) -> tuple[Entry, ...]:
        return self._attributes

    def matches(self, item: ServiceItem) -> bool:
        """Whether ``item`` is selected by this template.

        Raises:
            TypeError: ``item`` is not a ServiceItem.
        """
        if not isinstance(item, ServiceItem):
            raise TypeError(f"a template matches ServiceItems, got {type(item).__name__}")
        if self._service_id is not None and self._service_id != item._service_id:
            return False
        if not self._type_set <= item._type_set:
            return False
        entries = item._attributes
        return all(any(entry_matches(wanted, entry) for entry in entries) for wanted in self._attributes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ServiceTemplate):
            return NotImplemented
        return (self._service_id == other._service_id and self._types == other._types
                and self._attributes == other._attributes)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"ServiceTemplate(service_id={self._service_id!r}, types={self._types!r}, "
                f"attributes={self._attributes!r})")


def matches(template: ServiceTemplate, item: ServiceItem) -> bool:
    """Whether ``template`` selects ``item``; the same as ``template.matches(item)``.

    Raises:
        TypeError: ``template`` is not a ServiceTemplate, or ``item`` not a ServiceItem.
    """
    if not isinstance(template, ServiceTemplate):
        raise TypeError(f"expected a ServiceTemplate, got {type(template).__name__}")
    return template.matches(item)


class Expiry(NamedTuple):
    """When an item's registration at one lookup service ends, as that lookup service said (Jini's
    DURATION style: seconds, not a time, so clocks need not agree; the receiver adds ``remaining``
    to its own monotonic now). The registration may be renewed after it was said, each renewal
    granting about ``term`` again, so ``term`` bounds what is left at any later moment.

    Args:
        remaining: seconds the registration had left when it was sent (0 or more).
        term: seconds its lease was granted, ``inf`` for FOREVER (more than 0).
    """

    remaining: float
    term: float

    @classmethod
    def checked(cls, remaining: object, term: object) -> Expiry:
        """An expiry from values that came from elsewhere (the wire), checked.

        Raises:
            TypeError: either is not an int or float (a bool is not).
            ValueError: ``remaining`` negative or NaN, ``term`` not more than 0, or NaN.
        """
        remaining, term = _seconds(remaining, "remaining"), _seconds(term, "term")
        if not remaining >= 0:
            raise ValueError(f"an expiry's remaining must be 0 or more seconds, got {remaining!r}")
        if not term > 0:
            raise ValueError(f"an expiry's term must be more than 0 seconds, got {term!r}")
        return cls(remaining, term)

    @property
    def bounded(self) -> bool:
        """Whether it says when the registration ends at the latest (neither figure is infinite)."""
        return not (math.isinf(self.remaining) or math.isinf(self.term))


# Not frozen (its attributes were always assignable; freezing made each lookup's answer 80% slower to build),
# and init=False: a __post_init__ made it 10% slower (one more call, one more store).
@dataclasses.dataclass(slots=True, init=False, repr=False)
class ServiceMatches:
    """The answer to ``lookup_all``: some matching items, and how many matched in all.

    Equal when the items and the total are (not their expiries: those change by the second); unhashable.

    Args:
        items: matching items (at most the number asked for); kept as a list.
        total: the number of items that matched, which may exceed ``len(items)``.
        expiries: when each item's registration ends, in the items' order (``None`` for one
            not known), or ``None``: none known (an answer from a lookup service before
            expiries were sent).
        cursor: ``None``, or more matches follow these items, left out (by the number asked
            for, or to keep the answer within its size: see :data:`~lookup.service.quotas.ANSWER_BYTES`):
            ``lookup_all(template, max_matches, after=cursor)`` hands back the next of them.

    Raises:
        TypeError: ``items`` is not a sequence of ServiceItems, ``total`` not an int,
            ``expiries`` not a sequence of Expiry or ``None``, or ``cursor`` not a str or ``None``.
        ValueError: ``total`` is less than ``len(items)``, ``expiries`` of another length, or a
            cursor empty or longer than ``MAX_CURSOR``.
    """

    items: list[ServiceItem]
    total: int
    expiries: list[Expiry | None] | None = dataclasses.field(default=None, compare=False)
    cursor: str | None = dataclasses.field(default=None, compare=False)

    def __init__(self, items: Iterable[ServiceItem], total: int,
                 expiries: Sequence[Expiry | None] | None = None, cursor: str | None = None) -> None:
        if isinstance(items, (str, bytes, ServiceItem)) or not isinstance(items, Iterable):
            raise TypeError(f"items must be a sequence of ServiceItems, got {type(items).__name__}")
        found = list(items)
        for item in found:
            if not isinstance(item, ServiceItem):
                raise TypeError(f"items must be ServiceItems, got {type(item).__name__}")
        if isinstance(total, bool) or not isinstance(total, int):
            raise TypeError(f"total must be an int, got {type(total).__name__}")
        if total < len(found):
            raise ValueError(f"total ({total}) is less than the number of items ({len(found)})")
        self.items = found
        self.total = total
        self.expiries = None if expiries is None else _check_expiries(expiries, len(found))
        self.cursor = check_cursor(cursor)

    @classmethod
    def _made(cls, items: list[ServiceItem], total: int, expiries: list[Expiry | None] | None,
              cursor: str | None = None) -> ServiceMatches:
        """An answer of parts its maker has made sound, kept as they are (the lookup service's answer
        and the wire converters' reading of one): the constructor's checks of every item and expiry
        were a tenth of a lookup of 200 items."""
        matches = cls.__new__(cls)
        matches.items = items
        matches.total = total
        matches.expiries = expiries
        matches.cursor = cursor
        return matches

    def __repr__(self) -> str:  # a long answer is cut short
        return f"ServiceMatches(total={self.total}, items={self.items!r:.200})"


def check_cursor(cursor: object) -> str | None:
    """``cursor``, checked to be what a lookup service's answer may carry: ``None`` or a short str.

    Raises:
        TypeError: neither a str nor ``None``.
        ValueError: empty, or longer than ``MAX_CURSOR``.
    """
    if cursor is None:
        return None
    if not isinstance(cursor, str):
        raise TypeError(f"a cursor is a str or None, got {type(cursor).__name__}")
    if not 0 < len(cursor) <= MAX_CURSOR:
        raise ValueError(f"a cursor has 1 to {MAX_CURSOR} characters, got {len(cursor)}")
    return cursor


def _seconds(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"an expiry's {name} is a number of seconds, got {type(value).__name__}")
    return float(value)


def _check_expiries(expiries: object, count: int) -> list[Expiry | None]:
    if isinstance(expiries, (str, bytes, Expiry)) or not isinstance(expiries, Sequence):
        raise TypeError(f"expiries must be a sequence of Expiry or None, got {type(expiries).__name__}")
    for expiry in expiries:
        if expiry is not None and not isinstance(expiry, Expiry):
            raise TypeError(f"expiries must be Expiry or None, got {type(expiry).__name__}")
    if len(expiries) != count:
        raise ValueError(f"{len(expiries)} expiries for {count} items")
    return list(expiries)
