"""The serializers landlord's own traffic is written in, and the named parse errors of every one a server takes.

Pyro5 lets each proxy choose its serializer per message and a daemon answers
in kind. landlord's own proxies (:func:`~landlord.transport.proxies.proxy_for`,
the asyncio streams, the lookup client) speak :data:`WIRE_SERIALIZER`,
msgpack: parsed in C, with no Python literal parser in the way, it carries a
call of 1,000 cookies several times faster than serpent and about five times
faster than json (the figures: ``docs/performance.md``). Servers keep taking
serpent and json, so a plain Pyro5 client on its default still works.

:class:`WireMsgpack` is Pyro5's msgpack in landlord's *dialect*, so that
what crossed in serpent crosses the same way:

- **Tuples, sets and frozensets stay what they were** (Pyro5's msgpack sends
  a tuple as a list and a set as a tuple): each goes as an extension type
  (:data:`TUPLE`, :data:`SET`, :data:`FROZENSET`) holding its items packed.
  Nesting of these is bounded (:data:`MAX_NESTING`): each level is a parse of
  its own, on the parsing thread's stack.
- **What msgpack has no form for goes as serpent sends it**, unless a
  converter is registered for its class: a subclass of a plain type as the
  plain type, an enum as its value, a date or datetime as its ISO text, a
  time as text, a timedelta as seconds. (Bytes stay bytes, where serpent
  sends a dict of base-64 text.)
- **A message that does not parse says so**: a ``SerializeError`` naming the
  serializer, answered to the caller, never a bare ``ValueError`` from
  msgpack; what a class's converter raises is raised as it is, as with serpent.

It reads Pyro5's plain msgpack too, and answers a call in the form the call
came in (a call's arguments come as a tuple only in the dialect): a plain
Pyro5 client on msgpack reads its answers as it always did, and a process
that imports landlord writes its own msgpack calls as before.

msgpack's own limits hold: no string, list or map may claim more items than
the message has bytes, and map keys must be strings (an int key could be
made to collide in a dict; nothing of landlord's sends one). Classes are
recreated bottom-up (msgpack calls the hook innermost first), where serpent
and json recreate them top-down: the converters in :mod:`landlord.wire` and
:mod:`lookup.wire` take a nested object either way.

:class:`NamedSerpent` and :class:`NamedJson` are Pyro5's own, whose parse
errors are named the same way. :func:`install` puts all three in Pyro5's
tables, for the whole process (servers and clients alike read with them).
"""

from __future__ import annotations

import datetime
import enum
import json
import struct
import threading
from typing import Any

import msgpack  # type: ignore[import-untyped]
import Pyro5.errors
import Pyro5.serializers
import serpent  # type: ignore[import-untyped]

__all__ = ["WIRE_SERIALIZER", "WireMsgpack", "NamedSerpent", "NamedJson", "install", "TUPLE", "SET", "FROZENSET",
           "MAX_NESTING"]

WIRE_SERIALIZER = "landlord-msgpack"  # the name landlord's own proxies ask Pyro5 for: msgpack, in the dialect

# extension type codes; Pyro5's msgpack takes 0x30-0x33 (complex, long int, datetime, date)
TUPLE = 0x40
SET = 0x41
FROZENSET = 0x42
MAX_NESTING = 32  # tuples in tuples (or sets) a message may hold, level upon level
# A packer is kept for reuse only while its buffer has not grown past this: a packer made for
# every message (what msgpack.packb does) allocates a buffer of 256 KiB each time, and a tuple
# packed inside a message another, both at once: 20 to 40 us for a one-lease call, against
# 2 us on kept packers
PACKER_BUFFER = 64 * 1024
IDLE_PACKERS = 8  # kept: as many threads packing at once, or a message nesting deeper, make (and drop) more

_PARSE_ERRORS = (SyntaxError, ValueError, TypeError, KeyError, UnicodeDecodeError, RecursionError, MemoryError)
# msgpack's own, and what Pyro5's extension types (a date, a long int) raise on bad bytes
_MSGPACK_ERRORS = (*_PARSE_ERRORS, msgpack.UnpackException, OverflowError, OSError, struct.error)
_PLAIN = (bool, int, float, str, bytes, list, dict)


def _malformed(serializer: str, exc: BaseException) -> Pyro5.errors.SerializeError:
    return Pyro5.errors.SerializeError(f"malformed {serializer} message: {type(exc).__name__}: {exc}"[:500])


class _ConverterFailed(Exception):
    """Carries what a class's converter raised out of msgpack's parse, to be raised as it was."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


class WireMsgpack(Pyro5.serializers.MsgpackSerializer):
    """Pyro5's msgpack (id 4) in landlord's dialect: tuples and sets kept, parse errors named (see the module).

    It reads both Pyro5's msgpack and the dialect (a plain message holds no
    extension of the dialect's), writes every call in the dialect, and
    answers a call in the form it came in: in the dialect when the call's
    arguments came as a tuple (only the dialect sends them so), else as
    Pyro5's own msgpack, so a plain Pyro5 msgpack client reads its answers.
    """

    _local = threading.local()  # per thread: the nesting being read, and the form of the call served last

    def __init__(self) -> None:
        # packers not in use, any thread's (a list's pop and append are atomic): the dialect's, plain msgpack's
        self._idle: list[Any] = []
        self._idle_plain: list[Any] = []

    def dumpsCall(self, obj: str, method: str, vargs: Any, kwargs: Any) -> bytes:  # noqa: N802 (Pyro5's name)
        return self._pack([obj, method, tuple(vargs), kwargs])

    def dumps(self, data: Any) -> bytes:
        if getattr(self._local, "dialect", False):
            return self._pack(data)
        return self._kept(data, self._idle_plain, plain=True)

    def _pack(self, data: Any) -> bytes:
        return self._kept(data, self._idle, plain=False)

    def _kept(self, data: Any, idle: list[Any], *, plain: bool) -> bytes:
        """``data`` packed on an idle packer of ``idle`` (or a new one), given back after if it is
        still small: plain Pyro5 msgpack, or the dialect (see ``PACKER_BUFFER``)."""
        try:  # one packer per message under way: a tuple's items are packed while its message is
            packer = idle.pop()
        except IndexError:  # none idle (or another thread took the last)
            packer = (msgpack.Packer(use_bin_type=True, default=self.default, buf_size=PACKER_BUFFER) if plain else
                      msgpack.Packer(use_bin_type=True, strict_types=True, default=self._default,
                                     buf_size=PACKER_BUFFER))
        packed: bytes = packer.pack(data)  # a packer that raised is dropped
        if len(packed) <= PACKER_BUFFER and len(idle) < IDLE_PACKERS:
            idle.append(packer)
        return packed

    def loadsCall(self, data: Any) -> Any:  # noqa: N802 (Pyro5's name)
        self._local.dialect = False
        call = self._unpack(data)
        if not isinstance(call, list) or len(call) != 4:
            raise _malformed("msgpack", ValueError("a call is not [object, method, args, kwargs]"))
        obj, method, vargs, kwargs = call
        if not isinstance(vargs, (list, tuple)) or not isinstance(kwargs, dict):
            raise _malformed("msgpack", TypeError("a call's args or kwargs are of the wrong type"))
        self._local.dialect = type(vargs) is tuple
        return obj, method, vargs, kwargs

    def loads(self, data: Any) -> Any:
        return self._unpack(data)

    def _unpack(self, data: Any) -> Any:
        try:
            return msgpack.unpackb(self._convertToBytes(data), raw=False, object_hook=self._object_hook,
                                   ext_hook=self._ext_hook)
        except _ConverterFailed as failed:
            raise failed.error from None
        except Pyro5.errors.SerializeError:
            raise
        except _MSGPACK_ERRORS as exc:
            raise _malformed("msgpack", exc) from None

    def _default(self, obj: Any) -> Any:
        kind = type(obj)
        if kind is tuple:
            return msgpack.ExtType(TUPLE, self._pack(list(obj)))
        if kind is set or kind is frozenset:
            return msgpack.ExtType(SET if kind is set else FROZENSET, self._pack(list(obj)))
        converter = _converters().get(kind)  # a class of landlord's or the user's: the common case, at once
        if converter is not None:
            return converter(obj)
        if not _has_converter(kind):
            as_serpent = _as_serpent_sends(obj)
            if as_serpent is not _NOTHING:
                return as_serpent
        return self.default(obj)

    def _object_hook(self, obj: dict[str, Any]) -> Any:
        if "__class__" not in obj:
            return obj
        try:
            return self.dict_to_class(obj)
        except Exception as exc:
            raise _ConverterFailed(exc) from None

    def _ext_hook(self, code: int, data: bytes) -> Any:
        if code not in (TUPLE, SET, FROZENSET):
            return self.ext_hook(code, data)
        depth = getattr(self._local, "depth", 0)
        if depth >= MAX_NESTING:
            raise ValueError(f"tuples or sets nested more than {MAX_NESTING} deep")
        self._local.depth = depth + 1
        try:
            items = msgpack.unpackb(data, raw=False, object_hook=self._object_hook, ext_hook=self._ext_hook)
        finally:
            self._local.depth = depth
        if not isinstance(items, list):
            raise ValueError(f"extension {code:#x} does not hold a list")
        return tuple(items) if code == TUPLE else set(items) if code == SET else frozenset(items)


def _converters() -> dict[type, Any]:
    """Pyro5's converters of classes to dicts, by class (every serializer's, registered with
    ``register_class_to_dict``)."""
    return Pyro5.serializers.SerializerBase._SerializerBase__custom_class_to_dict_registry


def _has_converter(kind: type) -> bool:
    return any(issubclass(kind, registered) for registered in _converters())


_NOTHING = object()


def _as_serpent_sends(obj: Any) -> Any:
    """What serpent sends for ``obj``, where msgpack has no form of its own (else :data:`_NOTHING`):
    a subclass of a plain type as the plain type, an enum as its value, dates and times as text,
    a timedelta as seconds."""
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, _PLAIN) and type(obj) not in _PLAIN:
        plain: Any = next(base for base in _PLAIN if isinstance(obj, base))  # bool cannot be subclassed
        return plain(obj)
    if isinstance(obj, (datetime.datetime, datetime.date)):
        return obj.isoformat()
    if isinstance(obj, datetime.time):
        return str(obj)
    if isinstance(obj, datetime.timedelta):
        return obj.total_seconds()
    return _NOTHING


class NamedSerpent(Pyro5.serializers.SerpentSerializer):
    """Pyro5's serpent, whose parse errors say what they are (a ``SerializeError``, answered to the
    caller) rather than a bare ``SyntaxError`` from Python's parser. What converters raise is unchanged."""

    def loadsCall(self, data: bytes) -> Any:  # noqa: N802 (Pyro5's name)
        try:
            obj, method, vargs, kwargs = serpent.loads(data)
        except _PARSE_ERRORS as exc:
            raise _malformed("serpent", exc) from None
        return obj, method, self.recreate_classes(vargs), self.recreate_classes(kwargs)

    def loads(self, data: bytes) -> Any:
        try:
            parsed = serpent.loads(data)
        except _PARSE_ERRORS as exc:
            raise _malformed("serpent", exc) from None
        return self.recreate_classes(parsed)


class NamedJson(Pyro5.serializers.JsonSerializer):
    """Pyro5's json, whose parse errors (and calls missing their parts) say what they are."""

    def loadsCall(self, data: bytes) -> Any:  # noqa: N802 (Pyro5's name)
        try:
            call = json.loads(bytes(data).decode("utf-8"))
            obj, method, vargs, kwargs = call["object"], call["method"], call["params"], call["kwargs"]
        except _PARSE_ERRORS as exc:
            raise _malformed("json", exc) from None
        return obj, method, self.recreate_classes(vargs), self.recreate_classes(kwargs)

    def loads(self, data: bytes) -> Any:
        try:
            parsed = json.loads(bytes(data).decode("utf-8"))
        except _PARSE_ERRORS as exc:
            raise _malformed("json", exc) from None
        return self.recreate_classes(parsed)


def install() -> None:
    """Put :class:`NamedSerpent`, :class:`NamedJson` and :class:`WireMsgpack` in Pyro5's tables
    (idempotent; for the whole process).

    Daemons read and answer serpent and json with the named ones, msgpack with
    :class:`WireMsgpack` (which answers a plain client as Pyro5 does); a
    proxy asking for :data:`WIRE_SERIALIZER` speaks the dialect. Pyro5's own
    msgpack stays what a proxy asking for ``"msgpack"`` writes, so a user's
    msgpack traffic with plain Pyro5 peers is unchanged.
    """
    for name, kind in (("serpent", NamedSerpent), ("json", NamedJson), (WIRE_SERIALIZER, WireMsgpack)):
        current = Pyro5.serializers.serializers.get(name)
        if isinstance(current, kind):
            continue
        replacement = kind()
        Pyro5.serializers.serializers[name] = replacement
        Pyro5.serializers.serializers_by_id[replacement.serializer_id] = replacement
