"""Pyro5's name server, answered from a lookup service's registrations: :class:`NameServerFace`.

One registry, two faces. A name is a :class:`~lookup.Name` attribute and each
metadata string a :class:`~lookup.PyroMetadata` attribute, so:

- ``ns.lookup("acme.quotes")``, ``PYRONAME:acme.quotes@host:port`` and
  ``ns.list()`` find every live registration with ``Name("acme.quotes")``,
  whoever made it (a ``JoinManager`` too); its metadata are its
  ``PyroMetadata`` tags;
- ``ns.register(name, uri, metadata=...)`` registers a :class:`~lookup.ServiceItem`
  of type :data:`NS_REGISTRATION_TYPE`, service ``uri``, attributes
  ``Name(name)`` and one ``PyroMetadata(tag)`` per string, that any
  :class:`~lookup.ServiceTemplate` finds. Its lease is held here, renewed
  while the object's daemon answers its pings, and cancelled once it stops
  (:mod:`~lookup.service.pyrons.pinger`).

What differs from Pyro5's name server, on purpose:

- registrations made otherwise (a ``JoinManager``'s) are owned by their lease's
  holder (issue 23): ``ns.register`` without ``safe``, ``ns.set_metadata`` and
  ``ns.remove(name)`` of such a name raise ``NamingError``, and
  ``ns.remove(prefix=|regex=)`` leaves them out of what it removes and counts.
  Names registered through this face are one flat name space that any caller
  may change, as in Pyro5 (so ``nsc remove`` works);
- ``Pyro.NameServer`` is reserved: it names this face, and cannot be registered,
  changed or removed;
- only ``PYRO:`` URIs with a host and port (or a Unix socket) can be registered:
  the daemon there is what keeps the name;
- names are at most :data:`MAX_NS_NAME` characters; a client registers at most
  as many names as its quota of registrations allows; a regex that could
  backtrack for long is refused (:mod:`~lookup.service.pyrons.patterns`).
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import Pyro5.core
import Pyro5.server
from Pyro5.errors import NamingError

from landlord import LeaseDeniedError, UnknownLeaseError

from ...entry import Entry, Name, PyroMetadata
from ...item import ServiceItem, ServiceTemplate
from ..lookupservice import LookupService
from .liveness import PingTerms
from .patterns import MAX_MATCHED_NAME, UnsafePatternError, safe_pattern
from .pinger import DaemonPinger, ping_daemon

__all__ = ["NameServerFace", "NS_REGISTRATION_TYPE", "NS_OWN_METADATA", "MAX_NS_NAME", "REGEX_BUDGET"]

log = logging.getLogger("lookup.pyrons")

NS_REGISTRATION_TYPE = "lookup.service.pyrons.NsRegistration"  #: the type of every item ns.register makes
NS_OWN_METADATA = frozenset({"class:Pyro5.nameserver.NameServer"})  #: Pyro.NameServer's metadata, as Pyro5's
MAX_NS_NAME = 1024       # characters of a name registered through this face
REGEX_BUDGET = 1.0       # seconds one regex listing may spend matching before it gives up
_NAMESERVER_NAME: str = Pyro5.core.NAMESERVER_NAME
_Listed = tuple[str, frozenset[str]]  # a name's URI and metadata


@dataclasses.dataclass
class _Held:
    """A name registered through this face: its registration's id and lease, and its daemon's address."""

    service_id: str
    cookie: str
    address: str


class NameServerFace:
    """Pyro5's ``NameServer`` interface over a :class:`LookupService` (see the module docstring).

    Only that interface is exposed: :meth:`close`, :meth:`adopt_stored` and :meth:`held_names` are
    the server's own (a remote ``close`` would stop the pings that keep every name).

    Args:
        service: the lookup service whose registrations it shows and adds to.
        terms: how names registered through it are kept alive.
        ping: how one daemon address is pinged (see :class:`DaemonPinger`; default: a Pyro5 call).
    """

    def __init__(self, service: LookupService, terms: PingTerms | None = None,
                 ping: Callable[[str, float], None] = ping_daemon) -> None:
        self._service = service
        self.terms = terms if terms is not None else PingTerms()
        self._lock = threading.RLock()
        self._held: dict[str, _Held] = {}
        self._at: dict[str, set[str]] = {}   # daemon address -> the names held there
        # what each item lists, by service id, with the item it was read from
        self._seen: dict[str, tuple[ServiceItem, list[tuple[str, _Listed]]]] = {}
        #: this face's own URI, listed as ``Pyro.NameServer`` (set once it is served)
        self.own_uri: str | None = None
        #: pings the daemons of the names held
        self.pinger = DaemonPinger(self.terms, self._renew_at, self._drop_at, ping=ping)

    # -- Pyro5's NameServer ------------------------------------------------------------

    @Pyro5.server.expose
    def count(self) -> int:
        """The number of names (``Pyro.NameServer`` too, as in Pyro5)."""
        return len(self._names())

    @Pyro5.server.expose
    def ping(self) -> None:
        """Nothing: that it answers is the point."""

    @Pyro5.server.expose
    def lookup(self, name: str, return_metadata: bool = False) -> Any:
        """The URI registered under ``name``, with its metadata (a set) if ``return_metadata``.

        Raises:
            NamingError: no live registration has that name.
            TypeError: ``name`` is not a str.
        """
        _check_name_type(name)
        found = self._lookup(name)
        if found is None:
            raise NamingError("unknown name: " + name)
        uri, metadata = found
        return (Pyro5.core.URI(uri), set(metadata)) if return_metadata else Pyro5.core.URI(uri)

    @Pyro5.server.expose
    def register(self, name: str, uri: Any, safe: bool = False, metadata: Any = None) -> None:
        """Register ``uri`` under ``name`` (replacing a name registered through this face, unless ``safe``).

        Raises:
            TypeError: ``uri`` neither a URI nor a str, ``name`` not a str, ``metadata`` a str or no collection.
            PyroError: ``uri`` is no Pyro5 URI.
            NamingError: ``safe`` and the name is registered; the name is another client's, reserved or
                too long; the URI is not a ``PYRO:`` URI with an address; the caller's quota is full.
            ValueError: the metadata are larger than the lookup service takes.
        """
        uri = _checked_uri(uri)
        _check_name_type(name)
        tags = _checked_metadata(metadata)
        _check_registrable(name)
        address = _address_of(uri)
        with self._lock:
            held = self._live_held(name)
            if held is None and self._lookup(name) is not None:
                raise NamingError(f"name already registered: {name}") if safe else _held_elsewhere(name)
            if safe and held is not None:
                raise NamingError("name already registered: " + name)
            self._register(name, uri, tags, address, held)

    @Pyro5.server.expose
    def set_metadata(self, name: str, metadata: Any) -> None:
        """Replace the metadata of ``name`` (``None``: none).

        Raises:
            TypeError: ``name`` not a str, ``metadata`` a str or no collection.
            NamingError: no such name, or it is another client's or reserved.
        """
        _check_name_type(name)
        tags = _checked_metadata(metadata)
        with self._lock:
            held = self._owned(name)
            try:
                self._service.set_attributes(held.cookie, _attributes(name, tags))
            except UnknownLeaseError:
                self._forget(name)
                raise NamingError("unknown name: " + name) from None

    @Pyro5.server.expose
    def remove(self, name: str | None = None, prefix: str | None = None, regex: str | None = None) -> int:
        """Remove ``name``, or every name with ``prefix``, or matching ``regex``, registered through
        this face; how many were removed.

        Raises:
            NamingError: ``name`` is another client's; a bad or refused ``regex``.
            ValueError: both ``prefix`` and ``regex``.
        """
        if name and name != _NAMESERVER_NAME:
            _check_name_type(name)
            with self._lock:
                if self._live_held(name) is None:
                    if self._lookup(name) is not None:
                        raise _held_elsewhere(name)
                    return 0
                return self._cancel([name])
        if prefix or regex:  # as Pyro5: a prefix first, else the regex; matched outside the lock
            listed = self.list(prefix=prefix) if prefix else self.list(regex=regex)
            with self._lock:
                return self._cancel(listed)  # those it holds: another client's are left
        return 0

    @Pyro5.server.expose
    def list(self, prefix: str | None = None, regex: str | None = None, return_metadata: bool = False
             ) -> dict[str, Any]:
        """The names as a dict of URI strings (with ``return_metadata``: of ``(uri, metadata)``),
        of those with ``prefix`` or matching ``regex`` (from the start of the name) if given.

        Raises:
            ValueError: both ``prefix`` and ``regex``.
            TypeError: a ``prefix`` or ``regex`` that is not a str.
            NamingError: a bad regex, one refused as too costly, or one that took too long.
        """
        if prefix and regex:
            raise ValueError("you can only filter on one thing at a time")
        names = self._names()
        if prefix:
            names = {name: value for name, value in names.items() if name.startswith(prefix)}
        elif regex:
            names = _matching(names, regex)
        if return_metadata:
            return {name: (uri, set(metadata)) for name, (uri, metadata) in names.items()}
        return {name: uri for name, (uri, _) in names.items()}

    @Pyro5.server.expose
    def yplookup(self, meta_all: Any = None, meta_any: Any = None, return_metadata: bool = True) -> dict[str, Any]:
        """The names whose metadata hold all of ``meta_all``, or any of ``meta_any`` (as :meth:`list`).

        Raises:
            ValueError: both given.
            TypeError: either is a str, or not a collection.
        """
        if meta_all and meta_any:
            raise ValueError("you can't use meta_all or meta_any at the same time")
        if meta_all:
            wanted = _metadata_query(meta_all, "metadata_all")
            names = {n: v for n, v in self._names().items() if wanted <= v[1]}
        elif meta_any:
            wanted = _metadata_query(meta_any, "metadata_any")
            names = {n: v for n, v in self._names().items() if wanted & v[1]}
        else:
            return {}
        return {n: (uri, set(tags)) if return_metadata else uri for n, (uri, tags) in names.items()}

    # -- the registrations behind it ----------------------------------------------------

    def adopt_stored(self) -> int:
        """Hold again the names registered through a face of this service before it restarted on its
        store (items of type :data:`NS_REGISTRATION_TYPE`), and ping their daemons; how many.
        Call it before the service serves (it reads the registry without the service's lock)."""
        with self._lock:
            for record in list(self._service.registry.records.values()):
                names = _names_of(record.item)
                if NS_REGISTRATION_TYPE not in record.item.types or len(names) != 1 or record.cookie is None:
                    continue
                with contextlib.suppress(NamingError):  # not a PYRO: URI of an address: left to run out
                    address = _address_of(record.item.service_uri)
                    self._held[names[0]] = _Held(record.service_id, record.cookie, address)
                    self._at.setdefault(address, set()).add(names[0])
                    self.pinger.watch(address)
            return len(self._held)

    def held_names(self) -> int:
        """How many names this face holds (registered through it, still live)."""
        with self._lock:
            return len(self._held)

    def close(self) -> None:
        """Stop pinging; the names held stay until their leases run out (or the service closes)."""
        self.pinger.close()

    def _register(self, name: str, uri: str, tags: Sequence[str], address: str, held: _Held | None) -> None:
        item = ServiceItem(held.service_id if held is not None else None, uri, [NS_REGISTRATION_TYPE],
                           _attributes(name, tags))
        try:  # on the caller's thread: its registrations count against its quota
            registration = self._service.register(item, self.terms.lease_term,
                                                  held.cookie if held is not None else None)
        except LeaseDeniedError as exc:
            raise NamingError(f"cannot register {name}: {exc}") from None
        if held is not None and held.address != address:
            self._unwatch(name, held.address)
        self._held[name] = _Held(registration.service_id, registration.lease.cookie, address)
        self._at.setdefault(address, set()).add(name)
        self.pinger.watch(address)
        log.info("ns registered %s at %s", name, uri)

    def _owned(self, name: str) -> _Held:
        """The live registration of ``name`` this face holds.

        Raises:
            NamingError: none (unknown, reserved, or another client's).
        """
        held = self._live_held(name)
        if held is not None:
            return held
        if name == _NAMESERVER_NAME:
            raise _reserved(name)
        if self._lookup(name) is not None:
            raise _held_elsewhere(name)
        raise NamingError("unknown name: " + name)

    def _live_held(self, name: str) -> _Held | None:
        """What this face holds of ``name``, if its registration still lives (else forgotten)."""
        held = self._held.get(name)
        if held is None:
            return None
        try:
            self._service.manager.get(held.cookie)
        except UnknownLeaseError:  # evicted, or ran out: the name is gone
            self._forget(name)
            return None
        return held

    def _cancel(self, names: Iterable[str]) -> int:
        removed = 0
        for name in list(names):
            held = self._held.get(name)
            if held is None:
                continue
            with contextlib.suppress(UnknownLeaseError):  # it ended meanwhile
                self._service.cancel(held.cookie)
                removed += 1
            self._forget(name)
        return removed

    def _forget(self, name: str) -> None:
        held = self._held.pop(name, None)
        if held is not None:
            self._unwatch(name, held.address)

    def _unwatch(self, name: str, address: str) -> None:
        names = self._at.get(address)
        if names is not None:
            names.discard(name)
            if not names:
                del self._at[address]
                self.pinger.forget(address)

    def _renew_at(self, address: str) -> None:
        """The daemon at ``address`` answered: renew the leases of its names."""
        with self._lock:
            held = [(name, self._held[name].cookie) for name in self._at.get(address, ())]
        for name, cookie in held:
            try:
                self._service.renew(cookie, self.terms.lease_term)
            except UnknownLeaseError:  # evicted, or it ran out: the name is gone
                with self._lock:
                    if name in self._held and self._held[name].cookie == cookie:
                        self._forget(name)

    def _drop_at(self, address: str) -> None:
        """The daemon at ``address`` stopped answering: its names go."""
        with self._lock:
            removed = self._cancel(self._at.get(address, ()))
        log.info("removed %d name(s) of the dead daemon at %s", removed, address)

    # -- reading the registry -----------------------------------------------------------

    def _names(self) -> dict[str, _Listed]:
        """Every name and its ``(uri, metadata)``: this face's own, those it holds, then every other."""
        with self._lock:
            ours = {held.service_id: name for name, held in self._held.items()}
        names: dict[str, _Listed] = {}
        if self.own_uri is not None:
            names[_NAMESERVER_NAME] = (self.own_uri, NS_OWN_METADATA)
        others: builtins.list[tuple[str, _Listed]] = []  # the method list() hides list
        items = self._service.registrations()
        for item, _left in items:
            held_name = ours.get(item.service_id or "")
            for name, listed in self._listed(item):
                if name == held_name:
                    names.setdefault(name, listed)
                else:
                    others.append((name, listed))
        for name, listed in others:
            names.setdefault(name, listed)
        seen = self._seen
        if len(seen) > 2 * len(items) + 100:  # items gone: drop what was read of them
            live = {item.service_id or "" for item, _ in items}
            self._seen = {service_id: read for service_id, read in list(seen.items()) if service_id in live}
        return names

    def _listed(self, item: ServiceItem) -> builtins.list[tuple[str, _Listed]]:
        """What ``item`` lists: each of its names with its URI and metadata (read once per item:
        items never change, a change is a new item)."""
        seen = self._seen.get(item.service_id or "")
        if seen is not None and seen[0] is item:
            return seen[1]
        listed = (item.service_uri, _tags_of(item))
        entries = [(name, listed) for name in _names_of(item)]
        self._seen[item.service_id or ""] = (item, entries)  # a race only reads an item twice
        return entries

    def _lookup(self, name: str) -> _Listed | None:
        """The ``(uri, metadata)`` of ``name``: this face's own, the one it holds, else any live one."""
        if name == _NAMESERVER_NAME and self.own_uri is not None:
            return self.own_uri, NS_OWN_METADATA
        with self._lock:
            held = self._held.get(name)
        named = _entry(Name, name=name)
        for service_id in ([held.service_id] if held is not None else []) + [None]:
            found = self._service.lookup_all(ServiceTemplate(service_id, attributes=[named]), 1).items
            if found:
                return found[0].service_uri, _tags_of(found[0])
        return None


# -- checks, as Pyro5's name server makes them ---------------------------------------------------


def _check_name_type(name: object) -> None:
    if not isinstance(name, str):
        raise TypeError("name must be a str")


def _checked_uri(uri: object) -> str:
    """``uri`` as a string, checked as Pyro5 checks it.

    Raises:
        TypeError: neither a URI nor a str.
        PyroError: a str that is no URI.
    """
    if isinstance(uri, Pyro5.core.URI):
        return str(uri)
    if not isinstance(uri, str):
        raise TypeError("only URIs or strings can be registered")
    Pyro5.core.URI(uri)  # raises on a bad one
    return uri


def _checked_metadata(metadata: object) -> list[str]:
    """The metadata strings, sorted.

    Raises:
        TypeError: a str, something not iterable, or a tag that is not a str.
    """
    if isinstance(metadata, str):
        raise TypeError("metadata should not be a str, but another iterable (set, list, etc)")
    if not metadata:
        return []
    tags = list(_iterable(metadata))
    if not all(isinstance(tag, str) for tag in tags):
        raise TypeError("metadata must be strings")
    return sorted(set(tags))


def _metadata_query(metadata: object, what: str) -> frozenset[str]:
    if isinstance(metadata, str):
        raise TypeError(f"{what} should not be a str, but another iterable (set, list, etc)")
    return frozenset(_iterable(metadata))


def _iterable(value: object) -> Iterable[Any]:
    """``value``, if it can be iterated.

    Raises:
        TypeError: it cannot (the message Python's ``iter`` gives, as Pyro5's callers see it).
    """
    if not isinstance(value, Iterable):
        raise TypeError(f"'{type(value).__name__}' object is not iterable")
    return value


def _check_registrable(name: str) -> None:
    """Refuse a name this face does not register.

    Raises:
        NamingError: reserved, or longer than MAX_NS_NAME.
    """
    if name == _NAMESERVER_NAME:
        raise _reserved(name)
    if len(name) > MAX_NS_NAME:
        raise NamingError(f"name longer than {MAX_NS_NAME} characters")


def _address_of(uri: str) -> str:
    """The address of the daemon that keeps ``uri``'s name.

    Raises:
        NamingError: not a ``PYRO:`` URI with an address.
    """
    parsed = Pyro5.core.URI(uri)
    if parsed.protocol != "PYRO" or not parsed.location:
        raise NamingError("only PYRO: URIs can be registered here: the lookup service keeps a name while "
                          "the daemon at its address answers pings")
    return parsed.location


def _attributes(name: str, tags: Iterable[str]) -> list[Entry]:
    return [_entry(Name, name=name), *(_entry(PyroMetadata, tag=tag) for tag in tags)]


def _entry(entry_class: Callable[..., Entry], **fields: str) -> Entry:
    """An entry of ``entry_class`` (its dataclass constructor, which the type checker does not see)."""
    return entry_class(**fields)


def _names_of(item: ServiceItem) -> list[str]:
    return [entry.name for entry in item.attributes if isinstance(entry, Name) and isinstance(entry.name, str)]


def _tags_of(item: ServiceItem) -> frozenset[str]:
    return frozenset(entry.tag for entry in item.attributes
                     if isinstance(entry, PyroMetadata) and isinstance(entry.tag, str))


def _matching(names: dict[str, Any], regex: str) -> dict[str, Any]:
    """The entries of ``names`` whose name ``regex`` matches from its start.

    Raises:
        NamingError: a bad regex, one refused as too costly, or matching took over REGEX_BUDGET.
    """
    try:
        pattern = safe_pattern(regex)
    except re.error as exc:
        raise NamingError("invalid regex: " + str(exc)) from None
    except UnsafePatternError as exc:
        raise NamingError(f"regex refused: {exc}") from None
    deadline = time.monotonic() + REGEX_BUDGET
    found = {}
    for name, value in names.items():
        if len(name) <= MAX_MATCHED_NAME and pattern.match(name):
            found[name] = value
        if time.monotonic() > deadline:
            raise NamingError(f"regex listing took over {REGEX_BUDGET:g} s: give a narrower regex or a prefix")
    return found


def _held_elsewhere(name: str) -> NamingError:
    """The refusal of a name a lease of the lookup service's holds (a JoinManager's): not this face's."""
    return NamingError(f"name held by another client's lease in the lookup service: {name}")


def _reserved(name: str) -> NamingError:
    """The refusal of the face's own name."""
    return NamingError("name reserved: the lookup service answers as " + name)
