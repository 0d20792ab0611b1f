"""The packets of lookup discovery: :class:`Announcement` and :class:`Request`, and :func:`parse`.

A lookup service *announces* itself (its id, its URIs, its groups) on a
multicast address every few seconds, and answers a *request* for one of its
groups with the same announcement, sent by unicast to the requester; see
:mod:`lookup.discovery.announcer` and :mod:`lookup.discovery.multicast`. Both are one UDP datagram
of UTF-8 JSON, an object tagged with the protocol's version::

    {"v": 1, "kind": "announce", "id": "7f0c...", "uris": ["PYRO:lookup.LookupService@10.0.0.5:4160"],
     "groups": ["demo"], "seq": 12, "interval": 5.0}
    {"v": 1, "kind": "request", "groups": ["demo"], "port": 40123, "heard": ["7f0c..."]}

Why JSON rather than serpent (which carries everything else): anyone on the
network can send these packets, so parsing them must be cheap and strict on
any input. ``json.loads`` builds only plain values and nothing else, in C,
whereas serpent parses Python literals through ``ast``, whose work and
recursion on a hostile datagram are harder to bound. JSON is also what other
languages can send, for a discovery client that is not Python.

:func:`parse` accepts nothing it does not expect: the version, the kind, every
field with its type and bounds (see the ``MAX_*`` constants; the datagram at
most :data:`MAX_PACKET` bytes), URIs that Pyro5 reads as the lookup service's
object at a host and port. Anything else raises ``ValueError`` saying what is
wrong, which the receivers log (rate-limited) and drop.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Iterable
from typing import Any

import Pyro5.core
import Pyro5.errors

from .unicast import LOOKUP_OBJECT_ID

__all__ = [
    "Announcement", "Request", "parse", "check_groups", "VERSION", "MAX_PACKET", "MAX_GROUPS",
    "MAX_GROUP_NAME", "MAX_URIS", "MAX_URI", "MAX_HEARD", "MAX_ID", "MIN_INTERVAL", "MAX_INTERVAL",
    "MAX_SEQUENCE",
]

VERSION = 1
MAX_PACKET = 1400       # bytes: one datagram within a 1500-byte Ethernet frame, with room for tunnels' headers
MAX_GROUPS = 16         # groups named in one packet
MAX_GROUP_NAME = 64     # characters of a group's name ("" is the public group)
MAX_URIS = 8            # URIs of one lookup service (a replicated one has one per replica)
MAX_URI = 256           # characters of one URI
MAX_HEARD = 32          # lookup ids a request names as already heard
MAX_ID = 64             # characters of a lookup service's id
MIN_INTERVAL = 0.05     # seconds between announcements: the bounds an announcement may claim
MAX_INTERVAL = 3600.0
MAX_SEQUENCE = 2**63 - 1

_ID = re.compile(rf"[A-Za-z0-9._:@-]{{1,{MAX_ID}}}")
_ANNOUNCE_KEYS = frozenset({"v", "kind", "id", "uris", "groups", "seq", "interval"})
_REQUEST_KEYS = frozenset({"v", "kind", "groups", "port", "heard"})


@dataclasses.dataclass(frozen=True, slots=True)
class Announcement:
    """A lookup service saying where it is: multicast every ``interval`` seconds, and the answer to a request.

    Args:
        lookup_id: the lookup service's id, the same in every announcement
            (a replicated one's replicas share one).
        uris: its URI, or each replica's.
        groups: the groups it is a member of (``""``: the public group).
        sequence: counts its announcements up.
        interval: seconds until its next announcement.

    Raises:
        ValueError: a field out of its bounds, or the packet too big.
    """

    lookup_id: str
    uris: tuple[str, ...]
    groups: tuple[str, ...]
    sequence: int = 0
    interval: float = 10.0

    def __post_init__(self) -> None:
        _check_id(self.lookup_id)
        object.__setattr__(self, "uris", _check_uris(self.uris))
        object.__setattr__(self, "groups", check_groups(self.groups))
        _check_int(self.sequence, "seq", 0, MAX_SEQUENCE)
        interval = self.interval
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not math.isfinite(interval) \
                or not MIN_INTERVAL <= interval <= MAX_INTERVAL:
            raise ValueError(f"interval must be {MIN_INTERVAL:g} to {MAX_INTERVAL:g} seconds, got {interval!r:.40}")
        object.__setattr__(self, "interval", float(interval))
        _check_size(self.encode())

    def encode(self) -> bytes:
        """The datagram."""
        return _dump({"v": VERSION, "kind": "announce", "id": self.lookup_id, "uris": list(self.uris),
                      "groups": list(self.groups), "seq": self.sequence, "interval": self.interval})

    def next(self) -> Announcement:
        """The same announcement, its sequence number one up."""
        return dataclasses.replace(self, sequence=(self.sequence + 1) % (MAX_SEQUENCE + 1))

    def member_of(self, groups: Iterable[str] | None) -> bool:
        """Whether it is a member of any of ``groups`` (``None``: all groups; an empty set: none)."""
        return groups is None or not set(groups).isdisjoint(self.groups)


@dataclasses.dataclass(frozen=True, slots=True)
class Request:
    """A client asking the lookup services of ``groups`` to announce themselves to it at once.

    Args:
        groups: the groups wanted; empty: any lookup service, whatever its groups.
        port: the UDP port to answer to, at the request's source address.
        heard: ids of lookup services already known, which need not answer. A
            request that would not fit :data:`MAX_PACKET` names fewer (the
            rest then answer, which costs only a datagram).

    Raises:
        ValueError: a field out of its bounds.
    """

    groups: tuple[str, ...]
    port: int
    heard: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", check_groups(self.groups))
        _check_int(self.port, "port", 1, 65535)
        heard = _tuple_of(self.heard, "heard", MAX_HEARD, truncate=True)
        for lookup_id in heard:
            _check_id(lookup_id)
        while len(_dump(self._fields(heard))) > MAX_PACKET:
            heard = heard[:-1]
        object.__setattr__(self, "heard", heard)
        _check_size(self.encode())

    def _fields(self, heard: tuple[str, ...]) -> dict[str, Any]:
        return {"v": VERSION, "kind": "request", "groups": list(self.groups), "port": self.port, "heard": list(heard)}

    def encode(self) -> bytes:
        """The datagram."""
        return _dump(self._fields(self.heard))

    def wants(self, groups: Iterable[str]) -> bool:
        """Whether a lookup service of ``groups`` should answer it (heard aside)."""
        return not self.groups or not set(self.groups).isdisjoint(groups)


def parse(data: bytes) -> Announcement | Request:
    """The packet in a datagram.

    Raises:
        ValueError: anything but a well-formed packet of this version: saying what is wrong.
    """
    if not isinstance(data, (bytes, bytearray)):
        raise ValueError(f"a packet is bytes, got {type(data).__name__}")
    if len(data) > MAX_PACKET:
        raise ValueError(f"packet of {len(data)} bytes, more than {MAX_PACKET}")
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8: {exc.reason} at byte {exc.start}") from None
    try:
        # parse_constant: NaN and Infinity are not JSON, though Python's json reads them
        fields = json.loads(text, parse_constant=_no_constant)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"not JSON: {str(exc)[:80]}") from None
    if not isinstance(fields, dict):
        raise ValueError(f"a packet is a JSON object, got {type(fields).__name__}")
    version = fields.get("v")
    if version != VERSION or isinstance(version, bool):
        raise ValueError(f"version {version!r:.20} is not {VERSION}")
    kind = fields.get("kind")
    if kind == "announce":
        _exact_keys(fields, _ANNOUNCE_KEYS)
        return Announcement(_str(fields["id"], "id"), _tuple_of(fields["uris"], "uris", MAX_URIS),
                            _tuple_of(fields["groups"], "groups", MAX_GROUPS),
                            fields["seq"], fields["interval"])
    if kind == "request":
        _exact_keys(fields, _REQUEST_KEYS)
        return Request(_tuple_of(fields["groups"], "groups", MAX_GROUPS), fields["port"],
                       _tuple_of(fields["heard"], "heard", MAX_HEARD))
    raise ValueError(f"unknown kind {kind!r:.30}")


def check_groups(groups: Iterable[str]) -> tuple[str, ...]:
    """``groups`` as a tuple, each once, in order.

    Raises:
        ValueError: more than :data:`MAX_GROUPS`, a name that is not a str, too long, or with a
            control character (a bare str given for a list of groups too).
    """
    if isinstance(groups, str):
        raise ValueError(f"groups must be a list of names, not the str {groups!r:.40}")
    names = _tuple_of(groups, "groups", MAX_GROUPS)
    for name in names:
        if not isinstance(name, str):
            raise ValueError(f"a group's name is a str, got {type(name).__name__}")
        if len(name) > MAX_GROUP_NAME or not name.isprintable():
            raise ValueError(f"a group's name has at most {MAX_GROUP_NAME} printable characters, got {name!r:.80}")
    return tuple(dict.fromkeys(names))


def _check_id(lookup_id: object) -> None:
    if not isinstance(lookup_id, str) or not _ID.fullmatch(lookup_id):
        raise ValueError(f"a lookup id is 1 to {MAX_ID} of A-Z a-z 0-9 . _ : @ -, got {lookup_id!r:.80}")


def _check_uris(uris: object) -> tuple[str, ...]:
    checked = _tuple_of(uris, "uris", MAX_URIS)
    if not checked:
        raise ValueError("an announcement names at least one URI")
    for uri in checked:
        if not isinstance(uri, str) or len(uri) > MAX_URI:
            raise ValueError(f"a URI is a str of at most {MAX_URI} characters, got {uri!r:.80}")
        try:
            parsed = Pyro5.core.URI(uri)
        except (Pyro5.errors.PyroError, ValueError, TypeError) as exc:
            raise ValueError(f"not a Pyro5 URI: {uri!r:.80} ({exc})") from None
        if parsed.protocol != "PYRO" or parsed.object != LOOKUP_OBJECT_ID or not parsed.host or not parsed.port \
                or parsed.sockname:
            raise ValueError(f"not a lookup service's URI (PYRO:{LOOKUP_OBJECT_ID}@host:port): {uri!r:.80}")
    return tuple(dict.fromkeys(checked))


def _check_int(value: object, name: str, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an int from {low} to {high}, got {value!r:.40}")


def _check_size(data: bytes) -> None:
    if len(data) > MAX_PACKET:
        raise ValueError(f"the packet would be {len(data)} bytes, more than {MAX_PACKET} (fewer groups or URIs)")


def _tuple_of(values: object, name: str, most: int, *, truncate: bool = False) -> tuple[Any, ...]:
    if isinstance(values, (str, bytes, dict)) or not isinstance(values, (list, tuple, Iterable)):
        raise ValueError(f"{name} must be a list, got {type(values).__name__}")
    items = tuple(values)
    if len(items) > most:
        if not truncate:
            raise ValueError(f"{name}: {len(items)} of them, more than {most}")
        items = items[:most]
    return items


def _str(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a str, got {type(value).__name__}")
    return value


def _exact_keys(fields: dict[str, Any], keys: frozenset[str]) -> None:
    if fields.keys() != keys:
        missing, extra = sorted(keys - fields.keys()), sorted(str(k)[:20] for k in fields.keys() - keys)
        raise ValueError(f"{fields['kind']}: fields missing {missing}, unknown {extra[:5]}")


def _no_constant(name: str) -> None:
    raise ValueError(f"not JSON: {name}")


def _dump(fields: dict[str, Any]) -> bytes:
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
