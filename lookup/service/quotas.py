"""What one client may hold in a lookup service (:class:`LookupLimits`, :class:`ClientCounts`,
:func:`attribute_bytes`), and what one answer may carry (:data:`ANSWER_BYTES`, :func:`answer_bytes`,
:func:`fitting`).

A hostile probe registered 200 large but legal items and took a lookup
service from 31 to 643 MB. The transport caps one message (64 KiB of
serpent); these limits cap what the messages add up to, per client (the
host a call comes from: :func:`landlord.client_of_call`):

- **registrations** live at once, and **event registrations**;
- the **bytes of attributes** of one registration, measured on the values
  as they arrived (:func:`attribute_bytes`), whoever sends them.

A client at its limit is refused with a :class:`~landlord.LeaseDeniedError`
that names the limit, and nothing changes; the refusals are counted by limit
(``LookupService.limit_refusals``, ``landlord_limits_refused_total{limit}``). Calls made in the service's own
process are not counted (they are the operator's). Each registration is
stored with its client, so what a client holds is counted again when a
service restarts on its store (or a replica takes over); a registration
stored before clients were counts for nobody.

Answers are bounded apart from clients: many clients, each within its
limits, could still fill one ``lookup_all`` answer past the transport's cap
on a message (16 MiB), and the connection would close on whoever asked. So
an answer that lists items carries them while their :func:`answer_bytes`
add up to at most :data:`ANSWER_BYTES` (:func:`fitting`), and says where to
go on from (see :meth:`~lookup.LookupService.lookup_all`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from landlord import LeaseDeniedError

from ..item import ServiceItem

__all__ = ["LookupLimits", "ClientCounts", "attribute_bytes", "answer_bytes", "value_bytes", "fitting",
           "ANSWER_BYTES", "NAME_BYTES"]

_SCALAR_BYTES = 8  # what a number, a bool or None counts as

#: What the items of one answer may measure (:func:`answer_bytes`) in all. Each character they
#: count becomes at most 10 bytes on any wire a lookup service speaks (serpent writes a
#: non-printable astral character as ``\U000e0001``; JSON inside landlord's msgpack writes a
#: control character as ``\u0001``: 6), and structure is charged as well: so 1 MiB is at most
#: 10 MiB on the wire, under the 16 MiB cap of a message, and about 1 MiB for plain text.
ANSWER_BYTES = 1024 * 1024
_ITEM_BYTES = 128   # an item's own framing: its tags, its expiry, its place in a table
_ENTRY_BYTES = 64   # an entry's framing
NAME_BYTES = 8     # the framing of a type, class or field name


@dataclasses.dataclass(frozen=True)
class LookupLimits:
    """What one client may hold in a lookup service.

    Args:
        registrations_per_client: live registrations one client may hold.
        event_registrations_per_client: live event registrations one client may hold.
        attribute_bytes: the most bytes of attributes one registration may carry (:func:`attribute_bytes`).

    Raises:
        ValueError: a limit that is not a positive int.
    """

    registrations_per_client: int = 1000
    event_registrations_per_client: int = 1000
    attribute_bytes: int = 32 * 1024

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{field.name} must be a positive int, got {value!r}")


class ClientCounts:
    """Leases held per client, against a limit. Not thread-safe: its owner calls it under one lock.

    Args:
        limit: the most leases one client may hold.
        what: what the leases are for, as an error names them (``"registrations"``).
        exempt: clients never counted.
    """

    def __init__(self, limit: int, what: str, exempt: Iterable[str] = ()) -> None:
        self.limit = limit
        self.what = what
        self._exempt = frozenset(exempt)
        self._client_of: dict[str, str] = {}  # cookie -> client
        self._held: dict[str, int] = {}       # client -> leases held
        #: how many calls :meth:`check` refused (read by the metrics when scraped)
        self.refused = 0

    def check(self, client: str, *, replacing: str | None = None) -> None:
        """Whether ``client`` may take one more.

        Args:
            client: who asks.
            replacing: the cookie of a lease the new one replaces; if ``client`` holds it, the count stays.

        Raises:
            LeaseDeniedError: ``client`` holds its limit already.
        """
        if client in self._exempt or (replacing is not None and self._client_of.get(replacing) == client):
            return
        held = self._held.get(client, 0)
        if held >= self.limit:
            self.refused += 1
            raise LeaseDeniedError(f"a client may hold at most {self.limit} {self.what} here, and {client} "
                                   f"holds {held}: cancel some, or let them end")

    def hold(self, cookie: str, client: str) -> None:
        """Count the lease ``cookie`` as ``client``'s (after :meth:`check`)."""
        if client in self._exempt or cookie in self._client_of:
            return
        self._client_of[cookie] = client
        self._held[client] = self._held.get(client, 0) + 1

    def release(self, cookie: str) -> None:
        """The lease ``cookie`` ended: its client holds one fewer (nothing if it was not counted)."""
        client = self._client_of.pop(cookie, None)
        if client is None:
            return
        left = self._held[client] - 1
        if left:
            self._held[client] = left
        else:
            del self._held[client]

    def held(self, client: str) -> int:
        """How many leases ``client`` holds now."""
        return self._held.get(client, 0)


def attribute_bytes(item: ServiceItem) -> int:
    """The size of an item's attributes: the characters of every string (and bytes of every bytes
    value) in their fields, and :data:`_SCALAR_BYTES` for every other value, containers' contents
    counted as their own values. A cheap measure of what the item will hold in memory."""
    return sum(value_bytes(value) for entry in item.attributes for value in entry._entry_fields().values())


def value_bytes(value: Any) -> int:
    """What one field value counts for in :func:`attribute_bytes`."""
    if isinstance(value, (str, bytes, bytearray)):
        return len(value)
    if isinstance(value, dict):
        return sum(value_bytes(key) + value_bytes(inner) for key, inner in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return _SCALAR_BYTES + sum(value_bytes(inner) for inner in value)
    return _SCALAR_BYTES


def answer_bytes(item: ServiceItem) -> int:
    """What ``item`` counts for in an answer: :func:`attribute_bytes`, and its id, URI, types and entry
    class and field names, each with its framing (in characters: see :data:`ANSWER_BYTES`)."""
    size = _ITEM_BYTES + len(item.service_id or "") + len(item.service_uri)
    size += sum(len(name) + NAME_BYTES for name in item.types)
    for entry in item.attributes:
        size += _ENTRY_BYTES + sum(len(name) + NAME_BYTES for name in entry._entry_lineage)
        size += sum(len(name) + NAME_BYTES + value_bytes(value) for name, value in entry._entry_fields().items())
    return size


def fitting(sizes: Iterable[int], budget: int = ANSWER_BYTES) -> int:
    """How many of the leading ``sizes`` add up to at most ``budget``; at least one, if there is
    one (so paging through an answer always moves on: one item is bounded by what it may carry).

    Raises:
        ValueError: a negative budget.
    """
    if budget < 0:
        raise ValueError(f"budget must be 0 or more, got {budget}")
    count = used = 0
    for size in sizes:
        used += size
        if used > budget and count:
            break
        count += 1
    return count
