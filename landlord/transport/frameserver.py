"""A Pyro5 server no client can hold: whole messages gathered on one thread, served on others.

Pyro5's own servers read a message where they serve it. The ``"thread"``
server gives every connection a thread for its life (80 by default: the 81st
client is refused); the ``"multiplex"`` server serves everyone from one
thread and reads each message there with a timeout per read, so a client that
sends one byte every few seconds holds every other client up for as long as
it likes (measured: a canary's 6 s lease lost 5 s into such a trickle).

:class:`FrameServer` splits the two jobs:

- **One thread gathers.** It waits on every socket (the OS's selector),
  accepts, does TLS handshakes without blocking, and reads whatever a
  socket has into that connection's :class:`~landlord.transport.framing.FrameGatherer`,
  which checks each message's header before its body is read (type,
  serializer, flags, size against the caps) and refuses a message not whole
  within its deadline. It never parses a body and never blocks on a socket.
- **Workers serve.** A whole message goes to a worker, which inflates it
  (capped), parses it and calls the object through the daemon's own code
  (Pyro5's ``_handshake`` and ``handleRequest``), then sends the answer
  without blocking: what the socket does not take at once the gathering
  thread writes as the client reads it, under the same deadline. Messages
  larger than :data:`SMALL_FRAME` share one worker of their own, so at most
  one expensive parse holds the GIL at a time and small calls (renewals)
  never queue behind large ones.
- **One message at a time per connection.** A connection is not read while
  its message is being served, so a client that sends ahead waits (TCP's
  own flow control), and answers keep their order.
- **Bounded connections.** One client address may hold
  :attr:`~landlord.transport.framing.FrameLimits.connections_per_host` connections
  (one more is refused by name); past
  :attr:`~landlord.transport.framing.FrameLimits.connections` in all, or when the
  process runs out of file descriptors, the server stops accepting until a
  connection closes, rather than spin on a listening socket it cannot serve.
- **A budget for large messages.** Bytes of large messages being gathered
  are counted server-wide; past :data:`LARGE_BUDGET` another large message
  is refused, so many connections each sending most of a large message
  cannot bloat the server.

A connection that breaks a rule is told why where it can be (a
``CONNECTFAIL`` before the handshake, an exception answer after it), closed,
and counted in :attr:`FrameServer.refusals` by rule.

A connection that connects and sends nothing costs a file descriptor and no
thread; it is never timed out (only a message once begun is).
"""

from __future__ import annotations

import collections
import contextlib
import errno
import json
import logging
import queue
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any

import Pyro5.api
import Pyro5.errors
import Pyro5.protocol
import Pyro5.serializers
import Pyro5.socketutil
import serpent  # type: ignore[import-untyped]
from Pyro5.svr_multiplex import SocketServer_Multiplex

from .clients import client_of_address
from .framing import ACCEPTED_SERIALIZERS, SERPENT, Frame, FrameGatherer, FrameLimits, FrameRefused, inflate

__all__ = ["FrameServer", "guard", "SMALL_FRAME", "LARGE_BUDGET", "WORKERS"]

log = logging.getLogger("landlord.frameserver")  # its name before it moved into transport/

SMALL_FRAME = 16 * 1024      # messages up to this size (a renewal, a lookup) go to the many workers
LARGE_BUDGET = 64 * 1024 * 1024  # bytes of large messages being gathered at once, server-wide
WORKERS = 16                 # workers for small messages: enough that calls waiting on a store or etcd hold no one up
_READ_CHUNK = 256 * 1024     # the most one read takes
_ACCEPTS_PER_TURN = 64       # connections accepted per turn of the loop, so a flood of them delays no reading
_TURN = 1.0                  # longest wait of the selector when no deadline is nearer
_REST_AFTER = 0.02           # a large message that took longer than this makes its worker rest
_MOST_REST = 0.1             # the longest the large-message worker rests after a message
_ACCEPT_PAUSE = 0.1          # seconds of not accepting after running out of file descriptors
_LOG_BURST = 10              # warnings per rule per second; the rest are counted


class FramedConnection(Pyro5.socketutil.SocketConnection):
    """A client connection as the daemon's code sees it: ``recv`` reads the whole message gathered
    for it, ``send`` keeps the answer for the server to write.

    Pyro5 keeps per-connection state on this object (session instances,
    tracked resources), so it lives as long as the connection.
    """

    def __init__(self, sock: socket.socket, address: Any, limits: FrameLimits) -> None:
        super().__init__(sock)
        self.address = address
        self.gatherer = FrameGatherer(limits)
        self.outgoing = bytearray()
        self.write_deadline: float | None = None
        self.tls_deadline: float | None = None   # while its TLS handshake is unfinished
        self.closing = False                       # close once the answer is written
        self.host = ""                             # the client's address, as counted per host
        self.reserved = 0                          # bytes of the large-message budget it holds
        self._message = memoryview(b"")

    def load(self, raw: bytes) -> None:
        """The message the daemon's code reads next."""
        self._message = memoryview(raw)

    def recv(self, size: int) -> bytes:
        if size > len(self._message):
            raise Pyro5.errors.ConnectionClosedError("message ended early")  # by the gatherer, never
        data, self._message = self._message[:size], self._message[size:]
        return bytes(data)

    def send(self, data: bytes) -> None:
        self.outgoing += data

    def peer(self) -> str:
        if isinstance(self.address, tuple) and len(self.address) >= 2:
            return f"{self.address[0]}:{self.address[1]}"
        return str(self.address)


class FrameServer:
    """A daemon's transport: see the module docstring. Made by :func:`guard`.

    Args:
        daemon: the daemon whose listening socket it takes over.
        limits: the rules for every message.
        workers: workers for small messages (at least 1).

    Raises:
        ValueError: ``workers`` is not a positive int.
        TypeError: the daemon does not have Pyro5's multiplex server to take over.
    """

    def __init__(self, daemon: Pyro5.api.Daemon, limits: FrameLimits, workers: int = WORKERS) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a positive int, got {workers!r}")
        old = getattr(daemon, "transportServer", None)
        if not isinstance(old, SocketServer_Multiplex) or old.sock is None:
            raise TypeError(f"expected a daemon on Pyro5's multiplex server, got {type(old).__name__}")
        self.daemon = daemon
        self.limits = limits
        self.sock: Any = old.sock
        self.locationStr = old.locationStr
        old.selector.unregister(old.sock)
        old.selector.close()
        old.sock = None  # type: ignore[assignment]  # ours now: the old server must not close it
        self.sock.setblocking(False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.sock, selectors.EVENT_READ, None)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self.selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._tls = isinstance(self.sock, ssl.SSLSocket)
        self._connections: set[FramedConnection] = set()
        self._deadlines: dict[FramedConnection, float] = {}  # connections with something under way
        self._done: collections.deque[FramedConnection] = collections.deque()
        self._quick: queue.SimpleQueue[tuple[FramedConnection, Frame] | None] = queue.SimpleQueue()
        self._bulk: queue.SimpleQueue[tuple[FramedConnection, Frame] | None] = queue.SimpleQueue()
        self._large_gathered = 0
        self._per_host: collections.Counter[str] = collections.Counter()
        self._accepting = True
        self._accept_again_at: float | None = None  # after running out of file descriptors
        self.refusals: collections.Counter[str] = collections.Counter()
        self._logged: dict[str, tuple[float, int]] = {}  # per rule: when its second began, lines logged in it
        self.shutting_down = False
        self._workers = [threading.Thread(target=self._work, args=(self._quick,), name=f"frames-{i}", daemon=True)
                         for i in range(workers)]
        self._workers.append(threading.Thread(target=self._work, args=(self._bulk,), name="frames-large",
                                              daemon=True))
        for worker in self._workers:
            worker.start()
        daemon.transportServer = self

    def __repr__(self) -> str:
        return f"<FrameServer on {self.locationStr}; {len(self._connections)} connections>"

    # -- what Pyro5's Daemon asks of its transport --------------------------------------------------

    @property
    def sockets(self) -> list[Any]:
        return ([self.sock] if self.sock is not None else []) + [conn.sock for conn in list(self._connections)]

    def loop(self, loopCondition: Callable[[], bool] = lambda: True) -> None:  # noqa: N803 (Pyro5's name)
        while not self.shutting_down and loopCondition():
            try:
                self._turn()
            except (OSError, ValueError):  # the selector or listening socket closed under us: shutting down
                if self.shutting_down or self.sock is None:
                    return
                raise

    def events(self, eventsockets: Any) -> None:
        raise NotImplementedError("a FrameServer runs its own loop (Daemon.requestLoop)")

    def wakeup(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"\0")

    def shutdown(self) -> None:
        self.shutting_down = True
        self.wakeup()
        self.close()

    def close(self) -> None:
        self.shutting_down = True
        for lane in [self._quick] * (len(self._workers) - 1) + [self._bulk]:
            lane.put(None)
        for conn in list(self._connections):
            self._drop(conn)
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.close()
            self.sock = None
        for end in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                end.close()
        with contextlib.suppress(Exception):
            self.selector.close()

    # -- the gathering thread -----------------------------------------------------------------------

    def _turn(self) -> None:
        now = time.monotonic()
        if self._accept_again_at is not None and now >= self._accept_again_at:
            self._accept_again_at = None
            self._accept_on()
        timeout = _TURN
        if self._deadlines:
            timeout = min(_TURN, max(0.0, min(self._deadlines.values()) - now))
        if self._accept_again_at is not None:
            timeout = min(timeout, max(0.0, self._accept_again_at - now))
        for key, mask in self.selector.select(timeout):
            if key.fileobj is self.sock:
                self._accept()
            elif key.fileobj is self._wake_r:
                with contextlib.suppress(OSError):
                    self._wake_r.recv(4096)
            else:
                conn: FramedConnection = key.data
                if mask & selectors.EVENT_WRITE:
                    self._write(conn)
                elif mask & selectors.EVENT_READ:
                    self._read(conn)
        while self._done:
            self._finished(self._done.popleft())
        self._expire(time.monotonic())

    def _accept(self) -> None:
        for _ in range(_ACCEPTS_PER_TURN):
            if len(self._connections) >= self.limits.connections:
                self._accept_off()
                return
            try:
                raw, address = socket.socket.accept(self.sock)  # the plain accept, even for TLS: no handshake here
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if self.shutting_down or exc.errno in (errno.EBADF, errno.ENOTSOCK, errno.EINVAL):
                    raise
                # EMFILE and the like: the listening socket stays readable, so stop watching it awhile
                self._count("files", f"accept() failed: {exc}; accepting again in {_ACCEPT_PAUSE:g} s")
                self._accept_off()
                self._accept_again_at = time.monotonic() + _ACCEPT_PAUSE
                return
            host = client_of_address(address)  # an IPv6 peer by its /64: a host may hold all of one
            if self._per_host[host] >= self.limits.connections_per_host:
                self._refuse_connection(raw, host)
                continue
            self._per_host[host] += 1
            raw.setblocking(False)
            with contextlib.suppress(OSError):
                raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock: socket.socket = raw
            conn = FramedConnection(sock, address, self.limits)
            conn.host = host
            if self._tls:
                try:
                    sock = self.sock.context.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
                except (OSError, ValueError) as exc:
                    log.warning("refused a connection from %s: %s", conn.peer(), exc)
                    with contextlib.suppress(OSError):
                        raw.close()
                    continue
                conn.sock = sock
                conn.tls_deadline = float("inf")  # its clock starts at its first bytes, as a message's does
            self._connections.add(conn)
            self.selector.register(conn.sock, selectors.EVENT_READ, conn)

    def _accept_off(self) -> None:
        if self._accepting:
            self._accepting = False
            with contextlib.suppress(KeyError, ValueError, OSError):
                self.selector.unregister(self.sock)

    def _accept_on(self) -> None:
        if not self._accepting and self.sock is not None and not self.shutting_down \
                and self._accept_again_at is None and len(self._connections) < self.limits.connections:
            self._accepting = True
            self.selector.register(self.sock, selectors.EVENT_READ, None)

    def _refuse_connection(self, raw: socket.socket, host: str) -> None:
        """One connection too many from ``host``: told so (one try, before it has asked), closed."""
        self._count("connections", f"refused a connection from {host}: it holds "
                                   f"{self._per_host[host]} already, the most one address may")
        refusal = FrameRefused("connections", f"too many connections from {host}: at most "
                                              f"{self.limits.connections_per_host} per address")
        data = Pyro5.serializers.serializers_by_id[SERPENT].dumps(str(refusal))
        with contextlib.suppress(OSError):
            raw.setblocking(False)
            raw.send(bytes(Pyro5.protocol.SendingMessage(Pyro5.protocol.MSG_CONNECTFAIL, 0, 0, SERPENT, data).data))
        with contextlib.suppress(OSError):
            raw.close()

    def _read(self, conn: FramedConnection) -> None:
        now = time.monotonic()
        if conn.tls_deadline is not None and not self._tls_handshake(conn, now):
            return
        while True:
            try:
                data = conn.sock.recv(min(conn.gatherer.wanted(), _READ_CHUNK))
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                break
            except OSError:
                self._drop(conn)
                return
            if not data:
                self._drop(conn)  # the client closed its end
                return
            try:
                conn.gatherer.feed(data, now)
                self._reserve(conn)
            except FrameRefused as refusal:
                self._refuse(conn, refusal)
                return
            frame = conn.gatherer.take()
            if frame is not None:
                self._dispatch(conn, frame)
                return
            if not (isinstance(conn.sock, ssl.SSLSocket) and conn.sock.pending()):
                break  # TLS may hold decrypted bytes the selector cannot see: read those at once
        deadline = conn.gatherer.deadline()
        if deadline is not None:
            self._deadlines[conn] = deadline

    def _tls_handshake(self, conn: FramedConnection, now: float) -> bool:
        """Go on with a connection's TLS handshake; whether it is done (and its messages can be read)."""
        assert isinstance(conn.sock, ssl.SSLSocket)
        if conn.tls_deadline == float("inf"):
            timeout = getattr(conn.sock.context, "handshake_timeout", self.limits.deadline)
            conn.tls_deadline = now + min(float(timeout), self.limits.deadline)
            self._deadlines[conn] = conn.tls_deadline
        try:
            conn.sock.do_handshake()
        except ssl.SSLWantReadError:
            return False
        except ssl.SSLWantWriteError:
            return False  # its next bytes come when the client has read ours
        except (OSError, ValueError) as exc:
            self._count("tls", f"refused a connection from {conn.peer()}: TLS handshake failed: {exc}")
            self._drop(conn)
            return False
        conn.tls_deadline = None
        self._deadlines.pop(conn, None)
        return True

    def _reserve(self, conn: FramedConnection) -> None:
        """Count a large message's bytes against the budget once its header says how large it is.

        Raises:
            FrameRefused: the budget has no room for it (reason ``"busy"``).
        """
        size = conn.gatherer.expected()
        if size <= SMALL_FRAME or conn.reserved:
            return
        if self._large_gathered + size > LARGE_BUDGET:
            raise FrameRefused("busy", f"the server is gathering {self._large_gathered} bytes of large messages: "
                                       f"a message of {size} bytes must wait (try again, or send a smaller one)")
        conn.reserved = size
        self._large_gathered += size

    def _release(self, conn: FramedConnection) -> None:
        self._large_gathered -= conn.reserved
        conn.reserved = 0

    def _dispatch(self, conn: FramedConnection, frame: Frame) -> None:
        """Hand a whole message to a worker; its connection is not read until it is served."""
        self._deadlines.pop(conn, None)
        with contextlib.suppress(KeyError):  # not registered when it comes from _resume
            self.selector.unregister(conn.sock)
        lane = self._quick if len(frame.raw) <= SMALL_FRAME else self._bulk
        lane.put((conn, frame))

    def _finished(self, conn: FramedConnection) -> None:
        """A worker is done with a connection's message: write what is left of the answer, or read on."""
        self._release(conn)
        if conn not in self._connections:
            return
        if conn.outgoing:
            conn.write_deadline = time.monotonic() + self.limits.deadline
            self._deadlines[conn] = conn.write_deadline
            self.selector.register(conn.sock, selectors.EVENT_WRITE, conn)
            return
        self._resume(conn)

    def _resume(self, conn: FramedConnection) -> None:
        if conn.closing:
            self._drop(conn)
            return
        try:
            conn.gatherer.restart(time.monotonic())
            self._reserve(conn)
        except FrameRefused as refusal:
            self._refuse(conn, refusal)
            return
        frame = conn.gatherer.take()
        if frame is not None:  # sent ahead: served without waiting for the socket
            self._dispatch(conn, frame)
            return
        self.selector.register(conn.sock, selectors.EVENT_READ, conn)
        deadline = conn.gatherer.deadline()
        if deadline is not None:
            self._deadlines[conn] = deadline
        if isinstance(conn.sock, ssl.SSLSocket) and conn.sock.pending():
            self._read(conn)

    def _write(self, conn: FramedConnection) -> None:
        if not _send_some(conn):
            self._drop(conn)
            return
        if conn.outgoing:
            return
        self.selector.unregister(conn.sock)
        self._deadlines.pop(conn, None)
        conn.write_deadline = None
        self._resume(conn)

    def _expire(self, now: float) -> None:
        for conn, deadline in list(self._deadlines.items()):
            if deadline >= now:
                continue
            if conn.write_deadline is not None:
                self._count("deadline", f"dropped {conn.peer()}: it did not read its answer within "
                                        f"{self.limits.deadline:g} s")
                self._drop(conn)
            elif conn.tls_deadline is not None:
                self._count("tls", f"refused a connection from {conn.peer()}: TLS handshake failed: timed out")
                self._drop(conn)
            else:
                try:
                    conn.gatherer.check(now)
                except FrameRefused as refusal:
                    self._refuse(conn, refusal)

    def _refuse(self, conn: FramedConnection, refusal: FrameRefused) -> None:
        """Tell a client which rule it broke (where it can be told at once), then close its connection."""
        self._count(refusal.reason, f"refused {conn.peer()}: {refusal}")
        with contextlib.suppress(Exception):
            conn.sock.send(_refusal_message(conn, refusal))  # one try: a client that does not read is not waited for
        self._drop(conn)

    def _drop(self, conn: FramedConnection) -> None:
        self._deadlines.pop(conn, None)
        if conn not in self._connections:
            return
        self._connections.discard(conn)
        self._per_host[conn.host] -= 1
        if self._per_host[conn.host] <= 0:
            del self._per_host[conn.host]
        self._release(conn)
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.selector.unregister(conn.sock)
        if conn.gatherer.is_greeted:
            try:
                self.daemon._clientDisconnect(conn)
            except Exception as exc:  # a hook of the served object's: its failure ends nothing else
                log.warning("error in clientDisconnect: %s", exc)
        conn.close()
        self._accept_on()

    def _count(self, reason: str, text: str) -> None:
        """Count a refusal by rule, and log it (at most :data:`_LOG_BURST` lines per rule per second, so that
        an attack floods no log; the count says how many there were)."""
        self.refusals[reason] += 1
        now = time.monotonic()
        since, logged = self._logged.get(reason, (now, 0))
        if now - since >= 1.0:
            since, logged = now, 0
        if logged < _LOG_BURST:
            log.warning("%s (%d refused for %r so far)", text, self.refusals[reason], reason)
        self._logged[reason] = (since, logged + 1)

    # -- the workers --------------------------------------------------------------------------------

    def _work(self, lane: queue.SimpleQueue[tuple[FramedConnection, Frame] | None]) -> None:
        paced = lane is self._bulk
        while True:
            item = lane.get()
            if item is None or self.shutting_down:
                return
            conn, frame = item
            started = time.monotonic()
            try:
                self._serve(conn, frame)
            except Exception as exc:  # whatever a message does, the worker goes on
                log.warning("error serving %s: %s", conn.peer(), exc)
                conn.closing = True
            conn.load(b"")  # an idle connection keeps nothing of its last message
            if conn.outgoing and not _send_some(conn):
                conn.closing = True
                conn.outgoing.clear()
            if not self._read_on(conn):
                self._done.append(conn)
                self.wakeup()
            if paced:
                # A parse holds the GIL from start to end, and with a next large message ready this worker
                # would start its parse before a small call that waited through this one got the GIL.
                # After a costly message it rests as long as it worked, so that a renewal waits behind one
                # such parse at most, never two; a batch of a thousand renewals (a few ms) takes no rest.
                took = time.monotonic() - started
                if took > _REST_AFTER:
                    time.sleep(min(took, _MOST_REST))

    def _read_on(self, conn: FramedConnection) -> bool:
        """The common end of a call, taken by the worker itself, saving the gathering thread a turn: the
        answer is sent whole and nothing more has come, so the connection is simply watched again.
        Anything else (an answer to finish writing, bytes sent ahead, a connection to close) is left
        to the gathering thread. Whether it was done here.
        """
        if conn.outgoing or conn.closing or conn.reserved or conn.gatherer.buffered or self.shutting_down:
            return False
        if isinstance(conn.sock, ssl.SSLSocket) and conn.sock.pending():
            return False
        try:  # epoll takes a registration from any thread; the connection is no one else's while served
            self.selector.register(conn.sock, selectors.EVENT_READ, conn)
        except (KeyError, ValueError, OSError):
            return False
        return True

    def _serve(self, conn: FramedConnection, frame: Frame) -> None:
        try:
            frame = inflate(frame, self.limits)
        except FrameRefused as refusal:
            self._count(refusal.reason, f"refused {conn.peer()}: {refusal}")
            conn.outgoing += _refusal_message(conn, refusal)
            conn.closing = True
            return
        conn.load(frame.raw)
        if not conn.gatherer.is_greeted:
            if self.daemon._handshake(conn, denied_reason=frame.denial):
                conn.gatherer.greeted()
            else:
                conn.closing = True
            return
        try:
            self.daemon.handleRequest(conn)
        except Pyro5.errors.SerializeError as exc:  # answered, by Pyro5: then closed, as any broken rule
            self._count("malformed", f"closed {conn.peer()} after answering: {exc}")
            conn.closing = True
        except (OSError, Pyro5.errors.ConnectionClosedError, Pyro5.errors.SecurityError):
            conn.closing = True
        except Pyro5.errors.TimeoutError as exc:
            log.warning("error during handleRequest: %s", exc)
            conn.closing = True


def _send_some(conn: FramedConnection) -> bool:
    """Send what the socket takes now of a connection's answer; False if the connection is broken."""
    while conn.outgoing:
        try:
            sent = conn.sock.send(conn.outgoing)
        except (BlockingIOError, InterruptedError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
            return True
        except OSError:
            return False
        del conn.outgoing[:sent]
    return True


def _refusal_message(conn: FramedConnection, refusal: FrameRefused) -> bytes:
    """What tells a Pyro5 client which rule it broke: a ``CONNECTFAIL`` before the handshake, after it
    an exception answer to the call (when its header was read), else nothing."""
    serializer_id = conn.gatherer.serializer_id
    if serializer_id not in ACCEPTED_SERIALIZERS:
        serializer_id = SERPENT
    serializer = Pyro5.serializers.serializers_by_id[serializer_id]
    if not conn.gatherer.is_greeted:
        data = serializer.dumps(str(refusal))
        return bytes(Pyro5.protocol.SendingMessage(Pyro5.protocol.MSG_CONNECTFAIL, 0, conn.gatherer.seq or 0,
                                                   serializer_id, data).data)
    if conn.gatherer.seq is None:
        return b""
    error = Pyro5.errors.ProtocolError(str(refusal))
    data = serializer.dumps(error)
    return bytes(Pyro5.protocol.SendingMessage(Pyro5.protocol.MSG_RESULT, Pyro5.protocol.FLAGS_EXCEPTION,
                                               conn.gatherer.seq, serializer_id, data).data)


def guard(daemon: Pyro5.api.Daemon, limits: FrameLimits | None = None, *, workers: int = WORKERS) -> FrameServer:
    """Put a :class:`FrameServer` in place of a daemon's multiplex server (made with
    ``SERVERTYPE="multiplex"``), taking over its listening socket; return it.

    Args:
        daemon: a daemon made on Pyro5's multiplex server, not yet serving.
        limits: the rules for every message (default: :class:`~landlord.transport.framing.FrameLimits`' defaults).
        workers: workers for small messages.

    Raises:
        TypeError: the daemon is not on Pyro5's multiplex server, or ``limits`` is not a FrameLimits.
        ValueError: a bad ``workers``.
    """
    if limits is None:
        limits = FrameLimits()
    if not isinstance(limits, FrameLimits):
        raise TypeError(f"limits must be a FrameLimits, got {type(limits).__name__}")
    _name_parse_errors()
    return FrameServer(daemon, limits, workers)


# -- bodies that do not parse --------------------------------------------------------------------------

_PARSE_ERRORS = (SyntaxError, ValueError, TypeError, KeyError, UnicodeDecodeError, RecursionError, MemoryError)


def _malformed(serializer: str, exc: BaseException) -> Pyro5.errors.SerializeError:
    return Pyro5.errors.SerializeError(f"malformed {serializer} message: {type(exc).__name__}: {exc}"[:500])


class _NamedSerpent(Pyro5.serializers.SerpentSerializer):
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


class _NamedJson(Pyro5.serializers.JsonSerializer):
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


def _name_parse_errors() -> None:
    """Put the serializers that name their parse errors in Pyro5's tables (once; for the whole
    process: a client reading a malformed answer is told the same way)."""
    for name, named in (("serpent", _NamedSerpent), ("json", _NamedJson)):
        current = Pyro5.serializers.serializers[name]
        if isinstance(current, named):
            continue
        replacement = named()
        Pyro5.serializers.serializers[name] = replacement
        Pyro5.serializers.serializers_by_id[replacement.serializer_id] = replacement
