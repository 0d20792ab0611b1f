"""Pyro5 messages gathered whole, by rules a client cannot stretch: the core of :mod:`~.frameserver`.

A Pyro5 message is a 40-byte header (``PYRO``, version, type, serializer,
flags, sequence number, data and annotation sizes, magic number), then its
annotations, then its data. :class:`FrameGatherer` takes a connection's bytes
as they arrive and hands out each message (a :class:`Frame`) only once the
whole of it is there. It decides everything from the header, before the body
is read, and from a clock reading the caller passes in; it does no I/O and
reads no clock, so every rule is tested without sockets or threads:

- **A whole-message deadline.** A message must arrive in full within
  :attr:`FrameLimits.deadline` seconds of its first byte; a per-read timeout
  would restart with every byte, so a client sending one byte every few
  seconds could hold a connection (and, on a one-thread server, everyone)
  for as long as it liked.
- **Small before the handshake.** Until the Pyro5 handshake succeeded only
  a ``CONNECT`` of at most :attr:`FrameLimits.handshake_bytes` is read, and
  compressed data is refused (an inflated bomb needs no credentials).
- **A cap per serializer.** Parsing holds the GIL, and its cost per byte
  depends on the serializer: serpent (Python's own parser, about 1 ms per KiB
  at worst, measured) gets :attr:`FrameLimits.serpent_bytes`, json (a C
  parser, about 0.25 ms per KiB at worst) :attr:`FrameLimits.json_bytes` and
  msgpack (landlord's own clients' serializer, parsed in C but calling back
  into Python for each class, tuple and set: about 0.2 ms per KiB at worst)
  :attr:`FrameLimits.msgpack_bytes`, so that the largest message parses in
  well under 100 ms. marshal is refused:
  a 58-byte marshal message can claim a list of 2**31 items. Compressed data
  is inflated only up to the same cap (:func:`inflate`).
- **No way round the caps.** ``FLAGS_KEEPSERIALIZED`` (whose blob Pyro5
  reads with marshal) and ``FLAGS_ONEWAY`` (a thread started per message)
  are refused; annotations are capped too (Pyro5 reads them in a Python loop).

A message that breaks a rule raises :class:`FrameRefused`, naming the rule
(``reason``, a short tag to count) and why (the message); the connection is
then closed.
"""

from __future__ import annotations

import dataclasses
import struct
import zlib

__all__ = [
    "Frame", "FrameGatherer", "FrameLimits", "FrameRefused", "inflate", "HEADER_SIZE",
    "SERPENT", "JSON", "MARSHAL", "MSGPACK", "ACCEPTED_SERIALIZERS",
    "MSG_CONNECT", "MSG_INVOKE", "MSG_PING", "FLAGS_COMPRESSED", "FLAGS_ONEWAY", "FLAGS_KEEPSERIALIZED",
]

# Pyro5's wire format (Pyro5.protocol, protocol version 502): the same figures, kept here so that
# the gatherer reads headers without Pyro5's ReceivingMessage (which reads no more than a header)
_HEADER = struct.Struct("!4sHBBHHII16sHH")
HEADER_SIZE = _HEADER.size  # 40
_TAG = b"PYRO"
_VERSION = 502
_MAGIC = 0x4DC5
_DATA_SIZE_AT = 12  # the data size's offset in the header (rewritten once data is inflated)
_FLAGS_AT = 8

MSG_CONNECT = 1
MSG_INVOKE = 4
MSG_PING = 6
FLAGS_COMPRESSED = 1 << 1
FLAGS_ONEWAY = 1 << 2
FLAGS_KEEPSERIALIZED = 1 << 5

SERPENT = 1
MARSHAL = 2
JSON = 3
MSGPACK = 4
_SERIALIZER_NAMES = {SERPENT: "serpent", MARSHAL: "marshal", JSON: "json", MSGPACK: "msgpack"}
ACCEPTED_SERIALIZERS = (SERPENT, JSON, MSGPACK)

KiB = 1024


class FrameRefused(Exception):
    """A message broke a rule of :class:`FrameLimits`: the connection is to be closed.

    Args:
        reason: a short tag naming the rule (``"deadline"``, ``"too large"``, ...), for counting.
        message: what was wrong, for the log and for the client.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclasses.dataclass(frozen=True)
class FrameLimits:
    """What one message may be, and how many connections a server holds. Sizes in bytes, the deadline in seconds.

    Args:
        deadline: seconds from a message's first byte to its last.
        handshake_bytes: the most a message may carry (data and annotations) before the handshake.
        serpent_bytes: the most data a serpent message may carry after it (inflated).
        json_bytes: the same for json.
        msgpack_bytes: the same for msgpack (landlord's own clients speak it).
        annotation_bytes: the most annotation bytes any message may carry.
        connections_per_host: the most connections one client address may hold open; one more is
            refused with a ``CONNECTFAIL`` naming the limit.
        connections: the most connections the server holds open; beyond, it stops accepting (new
            clients wait in the listening socket's backlog) until one closes.

    Raises:
        ValueError: a limit that is not positive (a deadline that is not a finite number).
    """

    deadline: float = 5.0
    handshake_bytes: int = 8 * KiB
    serpent_bytes: int = 64 * KiB
    json_bytes: int = 256 * KiB
    msgpack_bytes: int = 256 * KiB
    annotation_bytes: int = 4 * KiB
    connections_per_host: int = 1024
    connections: int = 16384

    def __post_init__(self) -> None:
        if isinstance(self.deadline, bool) or not isinstance(self.deadline, (int, float)) \
                or not 0 < self.deadline < float("inf"):
            raise ValueError(f"deadline must be a positive number of seconds, got {self.deadline!r}")
        for name in ("handshake_bytes", "serpent_bytes", "json_bytes", "msgpack_bytes", "annotation_bytes",
                     "connections_per_host",
                     "connections"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")

    def data_cap(self, serializer_id: int) -> int:
        """The most data (inflated) a message of this serializer may carry once greeted.

        Raises:
            FrameRefused: the serializer is not accepted.
        """
        if serializer_id == SERPENT:
            return self.serpent_bytes
        if serializer_id == JSON:
            return self.json_bytes
        if serializer_id == MSGPACK:
            return self.msgpack_bytes
        raise FrameRefused("serializer", f"serializer {serializer_name(serializer_id)} is refused by this server: "
                                         "use msgpack, serpent or json")

    @property
    def largest(self) -> int:
        """The most bytes one message may take on the wire, header included."""
        biggest = max(self.handshake_bytes, self.serpent_bytes, self.json_bytes, self.msgpack_bytes)
        return HEADER_SIZE + self.annotation_bytes + biggest


def serializer_name(serializer_id: int) -> str:
    """A serializer's name (``"serpent"``), or its number where Pyro5 has none."""
    return _SERIALIZER_NAMES.get(serializer_id, f"#{serializer_id}")


@dataclasses.dataclass(frozen=True)
class Frame:
    """One whole Pyro5 message as it came (header, annotations, data).

    Args:
        raw: the message's bytes.
        msgtype, serializer_id, flags, seq, data_size, annotations_size: the header's fields.
        denial: why the server refuses it with an answer rather than by closing (a handshake
            asking for a refused serializer is answered ``CONNECTFAIL`` in the client's own
            serializer, so a plain Pyro5 client reads why); ``None``: nothing to refuse.
    """

    raw: bytes
    msgtype: int
    serializer_id: int
    flags: int
    seq: int
    data_size: int
    annotations_size: int
    denial: str | None = None

    @property
    def compressed(self) -> bool:
        return bool(self.flags & FLAGS_COMPRESSED)


class FrameGatherer:
    """One connection's bytes, gathered into whole messages under :class:`FrameLimits`.

    Feed it what the socket gives (:meth:`feed`), with the time it came; take
    each whole message (:meth:`take`). Before :meth:`greeted` only a
    handshake is accepted. It holds at most one message's bytes beyond what
    has been taken (a client that sends ahead waits for the server to read).

    Args:
        limits: the rules.
    """

    def __init__(self, limits: FrameLimits) -> None:
        self.limits = limits
        self.is_greeted = False
        self._buffer = bytearray()
        self._header: tuple[int, int, int, int, int, int] | None = None  # type, serializer, flags, seq, sizes
        self._started: float | None = None  # when the message being gathered began
        self.seq: int | None = None           # the last header's sequence number and serializer: what an
        self.serializer_id: int | None = None  # answer refusing its message is numbered and written in

    def greeted(self) -> None:
        """The handshake succeeded: messages are now calls and pings, under the caps after it."""
        self.is_greeted = True

    @property
    def started(self) -> float | None:
        """When the message being gathered began (its first byte), or ``None`` between messages."""
        return self._started

    def deadline(self) -> float | None:
        """When the message being gathered must be whole, or ``None`` between messages."""
        return None if self._started is None else self._started + self.limits.deadline

    @property
    def buffered(self) -> int:
        """Bytes held: received and not yet taken."""
        return len(self._buffer)

    def wanted(self) -> int:
        """How many bytes to read next: what the message being gathered still lacks (a header at first)."""
        if self._header is None:
            return max(HEADER_SIZE - len(self._buffer), 0) or 1
        return max(HEADER_SIZE + self._header[4] + self._header[5] - len(self._buffer), 0) or 1

    def expected(self) -> int:
        """The size of the message being gathered, as far as is known (a header's size before its header)."""
        if self._header is None:
            return HEADER_SIZE
        return HEADER_SIZE + self._header[4] + self._header[5]

    def feed(self, data: bytes, now: float) -> None:
        """Take bytes the connection sent, at ``now`` (seconds, any monotonic scale).

        Raises:
            FrameRefused: the bytes break a rule (the message's deadline included); the gatherer is then done with.
        """
        if not data:
            return
        self.check(now)  # before these bytes count: a message completed late came late
        if self._started is None:
            self._started = now
        self._buffer += data
        self._parse()

    def check(self, now: float) -> None:
        """Refuse the message being gathered if its deadline has passed at ``now``.

        Raises:
            FrameRefused: it has (reason ``"deadline"``).
        """
        if self._started is not None and now - self._started > self.limits.deadline and not self._whole():
            raise FrameRefused("deadline", f"a message must arrive whole within {self.limits.deadline:g} s of its "
                                           f"first byte; {len(self._buffer)} of {self.expected()} bytes came")

    def take(self) -> Frame | None:
        """The next whole message, or ``None`` while it is still coming."""
        if not self._whole():
            return None
        assert self._header is not None  # by _whole
        msgtype, serializer_id, flags, seq, data_size, annotations_size = self._header
        size = HEADER_SIZE + data_size + annotations_size
        raw = bytes(self._buffer[:size])
        del self._buffer[:size]
        self._header = None
        self._started = None
        denial = None
        if msgtype == MSG_CONNECT and serializer_id not in ACCEPTED_SERIALIZERS:
            denial = (f"serializer {serializer_name(serializer_id)} is refused by this server: "
                      "use msgpack, serpent or json")
        return Frame(raw, msgtype, serializer_id, flags, seq, data_size, annotations_size, denial)

    def restart(self, now: float) -> None:
        """Start the clock on bytes already held beyond the last message taken (a client that sent
        ahead), under the rules in force now (a handshake's successor is checked as a call).

        Raises:
            FrameRefused: those bytes break a rule.
        """
        if self._buffer and self._started is None:
            self._started = now
            self._parse()

    def _parse(self) -> None:
        """Check what the header bytes held so far say, as soon as there are enough of them."""
        if self._header is None and len(self._buffer) >= 6:
            self._check_start()
        if self._header is None and len(self._buffer) >= HEADER_SIZE:
            self._header = self._read_header()
        if len(self._buffer) > self.limits.largest + HEADER_SIZE:  # a caller that reads more than wanted()
            raise FrameRefused("too large", "more data than a message may hold")

    def _whole(self) -> bool:
        return self._header is not None and len(self._buffer) >= HEADER_SIZE + self._header[4] + self._header[5]

    def _check_start(self) -> None:
        """The first six bytes: a Pyro5 message of this protocol version, or garbage."""
        if bytes(self._buffer[:4]) != _TAG:
            raise FrameRefused("not pyro", "not a Pyro5 message (it must start with PYRO)")
        version = int.from_bytes(self._buffer[4:6], "big")
        if version != _VERSION:
            raise FrameRefused("not pyro", f"Pyro5 protocol version {version} is not spoken here (only {_VERSION})")

    def _read_header(self) -> tuple[int, int, int, int, int, int]:
        tag, version, msgtype, serializer_id, flags, seq, data_size, annotations_size, _, _, magic = \
            _HEADER.unpack_from(self._buffer)
        if magic != _MAGIC:
            raise FrameRefused("not pyro", "not a Pyro5 message (wrong magic number)")
        self.seq, self.serializer_id = seq, serializer_id
        self._check_type(msgtype)
        self._check_flags(flags)
        if annotations_size > self.limits.annotation_bytes:
            raise FrameRefused("too large", f"annotations of {annotations_size} bytes: at most "
                                            f"{self.limits.annotation_bytes} are taken")
        self._check_size(msgtype, serializer_id, flags, data_size + annotations_size, data_size)
        return msgtype, serializer_id, flags, seq, data_size, annotations_size

    def _check_type(self, msgtype: int) -> None:
        if not self.is_greeted and msgtype != MSG_CONNECT:
            raise FrameRefused("order", f"message type {msgtype} before the handshake (only CONNECT, type 1)")
        if self.is_greeted and msgtype not in (MSG_INVOKE, MSG_PING):
            raise FrameRefused("order", f"message type {msgtype} after the handshake (only INVOKE 4 and PING 6)")

    def _check_flags(self, flags: int) -> None:
        if flags & FLAGS_KEEPSERIALIZED:
            raise FrameRefused("flags", "pass-through (KEEPSERIALIZED) messages are refused by this server")
        if flags & FLAGS_ONEWAY:
            raise FrameRefused("flags", "oneway calls are refused by this server (each would start a thread)")
        if flags & FLAGS_COMPRESSED and not self.is_greeted:
            raise FrameRefused("compressed", "compressed data is refused before the handshake")

    def _check_size(self, msgtype: int, serializer_id: int, flags: int, size: int, data_size: int) -> None:
        if msgtype != MSG_INVOKE:  # a handshake, or a ping: nothing of a ping is parsed, but it is small
            cap = self.limits.handshake_bytes
            if size > cap:
                raise FrameRefused("too large", f"a message of {size} bytes before the handshake or in a ping: "
                                                f"at most {cap} are taken")
            return
        cap = self.limits.data_cap(serializer_id)
        if data_size > cap:
            raise FrameRefused("too large", f"a {serializer_name(serializer_id)} message of {data_size} bytes: at "
                                            f"most {cap} are taken in one message")


def inflate(frame: Frame, limits: FrameLimits) -> Frame:
    """``frame`` with its data inflated if it came compressed, never beyond the serializer's cap.

    Returns it as Pyro5 would have it once read: the compressed flag cleared
    and the header's data size that of the inflated data.

    Raises:
        FrameRefused: the data inflates beyond the cap (reason ``"too large"``) or is not zlib data.
    """
    if not frame.compressed:
        return frame
    cap = limits.data_cap(frame.serializer_id)
    start = HEADER_SIZE + frame.annotations_size
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(frame.raw[start:], cap + 1)
    except zlib.error as exc:
        raise FrameRefused("malformed", f"compressed data that does not inflate: {exc}") from exc
    if len(data) > cap or inflater.unconsumed_tail:
        raise FrameRefused("too large", f"compressed data inflating beyond {cap} bytes")
    header = bytearray(frame.raw[:HEADER_SIZE])
    flags = frame.flags & ~FLAGS_COMPRESSED
    struct.pack_into("!H", header, _FLAGS_AT, flags)
    struct.pack_into("!I", header, _DATA_SIZE_AT, len(data))
    raw = bytes(header) + frame.raw[HEADER_SIZE:start] + data
    return dataclasses.replace(frame, raw=raw, flags=flags, data_size=len(data))
