"""A TCP proxy on loopback that can cut, hold up or slow down the network, switched at run time.

Put it between a holder and a landlord (serve the landlord's daemon with
``nathost``/``natport`` set to the proxy, so the URIs its leases carry lead
through it) and change :attr:`TcpProxy.mode` while they talk:

* ``PASS``  — bytes are forwarded as they come.
* ``DROP``  — a blackhole: bytes are read and thrown away in both directions,
  new connections are accepted and then hear nothing. Streams that lived
  through it are corrupt, as after a real blackhole, so a peer's only way out
  is to time out and reconnect.
* ``HOLD``  — nothing is read or forwarded until the mode changes; then
  everything held goes through in order, as TCP retransmission delivers it
  after a short outage.
* ``DELAY`` — each chunk read is forwarded :attr:`TcpProxy.delay` seconds
  after it arrived, in order (the next one is read after that: a latency for
  request/response traffic, not a model of a long fat pipe).

Each connection has two pump threads, one per direction. When one side closes,
its close is passed on to the other side whatever the mode (a simplification:
a real partition would hide it too).
"""

from __future__ import annotations

import enum
import socket
import threading
import time
from collections.abc import Callable
from types import TracebackType

__all__ = ["Mode", "TcpProxy"]

_CHUNK = 65536


class Mode(enum.Enum):
    PASS = "pass"
    DROP = "drop"
    HOLD = "hold"
    DELAY = "delay"


class TcpProxy:
    """Forwards connections from a loopback port to ``target``, through a switchable fault.

    Args:
        target: ``(host, port)`` to forward to; may be set later through
            :attr:`target`, before the first connection arrives (so a daemon
            can be told the proxy's port before it is started).
        mode: the initial mode.
        delay: seconds each chunk is held back in ``DELAY`` mode.
    """

    def __init__(self, target: tuple[str, int] | None = None, *, mode: Mode = Mode.PASS,
                 delay: float = 0.0) -> None:
        self.target = target
        self._changed = threading.Condition()
        self._mode = mode
        self._delay = delay
        self._closed = False
        self._connections: set[_Connection] = set()
        self._threads: list[threading.Thread] = []
        self.accepted = 0  # connections accepted so far
        self.dropped_bytes = 0  # bytes thrown away in DROP mode
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._start(self._accept_loop, "tcpproxy-accept")

    # -- control --------------------------------------------------------------

    @property
    def mode(self) -> Mode:
        with self._changed:
            return self._mode

    @mode.setter
    def mode(self, mode: Mode) -> None:
        with self._changed:
            self._mode = Mode(mode)
            self._changed.notify_all()  # held and delayed chunks re-check what to do

    @property
    def delay(self) -> float:
        with self._changed:
            return self._delay

    @delay.setter
    def delay(self, seconds: float) -> None:
        with self._changed:
            self._delay = float(seconds)
            self._changed.notify_all()

    def close(self) -> None:
        """Stop accepting, close every connection and wait for the pump threads to end."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
            connections = list(self._connections)
        _shut(self._listener)
        for connection in connections:
            connection.close()
        for thread in list(self._threads):
            thread.join(timeout=5)

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<TcpProxy :{self.port} -> {self.target} {self._mode.value}>"

    # -- the pumps --------------------------------------------------------------

    def _start(self, target: Callable[..., object], name: str, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            if self.target is None:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()  # nothing listens there: the client sees its connection closed
                continue
            connection = _Connection(client, upstream)
            with self._changed:
                if self._closed:
                    connection.close()
                    return
                self.accepted += 1
                self._connections.add(connection)
            self._start(self._pump, "tcpproxy-up", connection, client, upstream)
            self._start(self._pump, "tcpproxy-down", connection, upstream, client)

    def _pump(self, connection: _Connection, source: socket.socket, sink: socket.socket) -> None:
        try:
            while self._wait_unless_holding():
                chunk = source.recv(_CHUNK)
                if not chunk:
                    break
                if self._forward_or_drop(chunk, time.monotonic()):
                    sink.sendall(chunk)
        except OSError:
            pass  # either side went away: end this direction
        finally:
            try:
                sink.shutdown(socket.SHUT_WR)  # pass the close on
            except OSError:
                pass
            if connection.pump_ended():
                with self._changed:
                    self._connections.discard(connection)
                connection.close()

    def _wait_unless_holding(self) -> bool:
        """Block while in HOLD mode (nothing is read then); ``False`` once closed."""
        with self._changed:
            while self._mode is Mode.HOLD and not self._closed:
                self._changed.wait()
            return not self._closed

    def _forward_or_drop(self, chunk: bytes, arrived: float) -> bool:
        """Whether ``chunk`` (read at ``arrived``) is to be sent on; waits out HOLD and DELAY."""
        with self._changed:
            while not self._closed:
                if self._mode is Mode.DROP:
                    self.dropped_bytes += len(chunk)
                    return False
                if self._mode is Mode.HOLD:
                    self._changed.wait()
                    continue
                if self._mode is Mode.DELAY:
                    left = arrived + self._delay - time.monotonic()
                    if left > 0:
                        self._changed.wait(left)  # a mode change wakes it early to re-decide
                        continue
                return True
            return False


class _Connection:
    """The two sockets of one proxied connection, closed when both pumps have ended."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.sockets = (client, upstream)
        self._lock = threading.Lock()
        self._pumps_left = 2

    def pump_ended(self) -> bool:
        """Count one direction as finished; ``True`` for the second, which closes."""
        with self._lock:
            self._pumps_left -= 1
            return self._pumps_left == 0

    def close(self) -> None:
        for sock in self.sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    """Shut ``sock`` both ways (which wakes a thread blocked on it) and close it."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
