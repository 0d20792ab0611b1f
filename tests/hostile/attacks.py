"""What the hostile suite does to a server, and the canary that must not notice.

Every attack here is a raw socket (or many) on loopback, bounded in count and
time, that stops by itself. :class:`Canary` is a holder renewing a short
lease on the same server throughout, timing each renewal. :class:`RecordingRelay` captures a
connection's bytes as an eavesdropper would, and :func:`replay` sends them again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import pathlib
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import msgpack
import Pyro5.protocol
import Pyro5.serializers

from landlord import Lease
from landlord.transport.serializers import TUPLE

SERPENT = Pyro5.serializers.SerpentSerializer.serializer_id
JSON = Pyro5.serializers.JsonSerializer.serializer_id
MARSHAL = Pyro5.serializers.MarshalSerializer.serializer_id
MSGPACK = Pyro5.serializers.MsgpackSerializer.serializer_id
SERPENT_HEADER = b"# serpent utf-8 python3.2\n"
PYRO_HEADER = 40  # bytes of a Pyro5 message's header


# -- messages ----------------------------------------------------------------------------------

def message(msgtype: int, data: bytes, *, serializer: int = SERPENT, flags: int = 0, seq: int = 1) -> bytes:
    """A Pyro5 message with its header's flags as given (Pyro5's encoder clears the compressed flag)."""
    raw = bytes(Pyro5.protocol.SendingMessage(msgtype, 0, seq, serializer, data).data)
    return raw[:8] + flags.to_bytes(2, "big") + raw[10:]


def connect_message(object_id: str, serializer: int = SERPENT) -> bytes:
    """The handshake a Pyro5 proxy sends to reach ``object_id``."""
    encoder = Pyro5.serializers.serializers_by_id[serializer]
    data = encoder.dumps({"handshake": "hello", "object": object_id})
    return message(Pyro5.protocol.MSG_CONNECT, data, serializer=serializer)


def read_message(sock: socket.socket) -> Pyro5.protocol.ReceivingMessage | None:
    """The next message from the server, or ``None`` once it closed the connection."""
    header = _read_exactly(sock, 40)
    if header is None:
        return None
    received = Pyro5.protocol.ReceivingMessage(header)
    payload = _read_exactly(sock, received.data_size + received.annotations_size)
    if payload is None:
        return None
    received.add_payload(payload)
    return received


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        try:
            chunk = sock.recv(size - len(chunks))
        except (ConnectionResetError, BrokenPipeError):
            return None
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def answer_text(received: Pyro5.protocol.ReceivingMessage) -> str:
    """What an answer says, read in its own serializer."""
    decoded = Pyro5.serializers.serializers_by_id[received.serializer_id].loads(bytes(received.data))
    return str(decoded)


def closed_by_server(sock: socket.socket, timeout: float) -> bool:
    """Whether the server closes ``sock`` within ``timeout`` (what it sends first is read and dropped)."""
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except (ConnectionResetError, BrokenPipeError):
        return True
    return True


@contextlib.contextmanager
def greeted(port: int, object_id: str, serializer: int = SERPENT) -> Iterator[socket.socket]:
    """A raw connection past a good handshake."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(connect_message(object_id, serializer))
        received = read_message(sock)
        assert received is not None and received.type == Pyro5.protocol.MSG_CONNECTOK, "the handshake failed"
        yield sock


# -- captured traffic ------------------------------------------------------------------------

class RecordingRelay:
    """A TCP relay on loopback to ``target`` that records what passes, as one who captured the traffic
    would have it: per connection, the bytes the client sent and the bytes it was answered."""

    def __init__(self, target: tuple[str, int]) -> None:
        self._target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._recorded: list[tuple[bytearray, bytearray]] = []
        self._pumps: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._accepting = threading.Thread(target=self._accept, name="relay-accept", daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(self._target, timeout=10)
            upstream.settimeout(None)
            sent, answered = bytearray(), bytearray()
            pumps = [threading.Thread(target=pump_bytes, args=(client, upstream, sent), daemon=True),
                     threading.Thread(target=pump_bytes, args=(upstream, client, answered), daemon=True)]
            with self._lock:
                self._recorded.append((sent, answered))
                self._pumps += pumps
                self._sockets += [client, upstream]
            for pump in pumps:
                pump.start()

    def recorded(self, timeout: float = 10.0) -> list[tuple[bytes, bytes]]:
        """Every connection's bytes, sent and answered, once its traffic has ended both ways."""
        with self._lock:
            pumps, recorded = list(self._pumps), list(self._recorded)
        for pump in pumps:
            pump.join(timeout)
            assert not pump.is_alive(), "a relayed connection is still open"
        return [(bytes(sent), bytes(answered)) for sent, answered in recorded]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread: close() alone would not
        self._listener.close()
        self._accepting.join(10)
        assert not self._accepting.is_alive()
        with self._lock:
            for sock in self._sockets:
                sock.close()

    def __enter__(self) -> RecordingRelay:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def pump_bytes(source: socket.socket, sink: socket.socket, record: bytearray) -> None:
    """Copy ``source`` to ``sink``, and into ``record``, until either side goes away; then pass the close on."""
    try:
        while chunk := source.recv(65536):
            record += chunk
            sink.sendall(chunk)
    except OSError:
        pass  # either side went away
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)  # pass the close on


def messages_in(stream: bytes) -> list[bytes]:
    """A recorded stream cut into its Pyro5 messages."""
    messages = []
    while stream:
        header = Pyro5.protocol.ReceivingMessage(stream[:PYRO_HEADER])
        size = PYRO_HEADER + header.data_size + header.annotations_size
        messages.append(stream[:size])
        stream = stream[size:]
    return messages


def replay(port: int, stream: bytes) -> list[Pyro5.protocol.ReceivingMessage]:
    """Send a recorded connection's messages again on a new raw connection, one at a time as its
    client did; the server's answers."""
    answers: list[Pyro5.protocol.ReceivingMessage] = []
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        for raw in messages_in(stream):
            sock.sendall(raw)
            answer = read_message(sock)
            assert answer is not None, f"the server closed the connection after {len(answers)} answers"
            answers.append(answer)
    return answers


def decoded(message: Pyro5.protocol.ReceivingMessage) -> Any:
    """A message's data, read in its own serializer (an exception answered is the exception)."""
    return Pyro5.serializers.serializers_by_id[message.serializer_id].loads(bytes(message.data))


# -- bombs ----------------------------------------------------------------------------------------

def serpent_bomb(size: int) -> bytes:
    """Serpent of at most ``size`` bytes that is as costly to parse as serpent gets: a list of empty lists."""
    count = (size - len(SERPENT_HEADER) - 2) // 3
    return SERPENT_HEADER + b"[" + b"[]," * count + b"]"


def json_bomb(size: int) -> bytes:
    """Json of at most ``size`` bytes that is as costly to parse as json gets: a list of empty lists."""
    count = (size - 4) // 3
    return b"[" + b"[]," * count + b"[]]"


def msgpack_bomb(size: int) -> bytes:
    """msgpack of at most ``size`` bytes that is as costly to parse as landlord's dialect gets (measured):
    a list of tuples of three empty tuples, each tuple a parse of its own called back in Python."""
    inner = msgpack.ExtType(TUPLE, msgpack.packb([msgpack.ExtType(TUPLE, msgpack.packb([]))] * 3))
    count = (size - 5) // len(msgpack.packb(inner))
    return msgpack.packb([inner] * count)


def deflated(data: bytes) -> bytes:
    return zlib.compress(data, 9)


# -- the canary ----------------------------------------------------------------------------------

@dataclasses.dataclass
class Canary:
    """A holder renewing ``lease`` for ``term`` seconds every ``every`` seconds on a thread of its own,
    from :meth:`start` until :meth:`stop`; it records how long each renewal took and what failed.
    """

    lease: Lease
    term: float = 2.0
    every: float = 0.1
    took: list[float] = dataclasses.field(default_factory=list)
    failures: list[BaseException] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        self._renewed = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="canary", daemon=True)

    def start(self) -> Canary:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive(), "the canary is stuck in a renewal"

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            asked = time.monotonic()
            try:
                self.lease.renew(self.term)
            except Exception as exc:  # a miss: what the test reports
                self.failures.append(exc)
            with self._renewed:
                self.took.append(time.monotonic() - asked)
                self._renewed.notify_all()

    def renew_more(self, count: int, timeout: float = 10.0) -> None:
        """Wait until the canary has renewed ``count`` more times (the server still serves it)."""
        with self._renewed:
            wanted = len(self.took) + count
            assert self._renewed.wait_for(lambda: len(self.took) >= wanted, timeout), \
                f"the canary renewed {len(self.took)} times, not {wanted}, within {timeout} s"

    @property
    def worst(self) -> float:
        return max(self.took, default=0.0)

    def report(self) -> str:
        ordered = sorted(self.took)
        p99 = ordered[int(len(ordered) * 0.99)] if ordered else 0.0
        return (f"canary: {len(self.took)} renewals, {len(self.failures)} failed, worst {self.worst * 1000:.1f} ms, "
                f"p99 {p99 * 1000:.1f} ms")

    def check(self, worst: float) -> None:
        """Fail unless every renewal succeeded, the worst within ``worst`` seconds."""
        print(self.report())
        assert not self.failures, f"{self.report()}: {self.failures[:3]}"
        assert self.took, "the canary never renewed"
        assert self.worst < worst, self.report()


def memory_of(pid: int) -> tuple[int, int]:
    """A process's resident memory now and at its peak, in bytes (Linux: /proc/PID/status)."""
    fields = {}
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) * 1024
    return fields["VmRSS"], fields["VmHWM"]


def for_seconds(seconds: float, attack: Callable[[], None]) -> int:
    """Run ``attack`` again and again for ``seconds``; how many times it ran."""
    ends = time.monotonic() + seconds
    runs = 0
    while time.monotonic() < ends:
        attack()
        runs += 1
    return runs
