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
  which checks each message's header before more than 4 KiB of its body is read
  (type, serializer, flags, size against the caps; a small message comes in one read) and refuses a message not whole
  within its deadline. It never parses a body and never blocks on a socket.
- **Workers serve.** A whole message goes to a worker, which inflates it
  (capped), parses it and calls the object through the daemon's own code
  (Pyro5's ``_handshake`` and ``handleRequest``), then sends the answer
  without blocking: what the socket does not take at once the gathering
  thread writes as the client reads it, under the same deadline. Messages
  larger than :data:`~landlord.transport.budget.SMALL_FRAME` share one worker
  of their own, so at most one expensive parse holds the GIL at a time and
  small calls (renewals) never queue behind large ones
  (:mod:`~landlord.transport.workers`).
- **One message at a time per connection.** A connection is not read while
  its message is being served, so a client that sends ahead waits (TCP's
  own flow control), and answers keep their order.
- **Bounded connections.** One client address may hold
  :attr:`~landlord.transport.framing.FrameLimits.connections_per_host` connections
  (one more is refused by name); past
  :attr:`~landlord.transport.framing.FrameLimits.connections` in all, or when the
  process runs out of file descriptors, the server stops accepting until a
  connection closes, rather than spin on a listening socket it cannot serve
  (:mod:`~landlord.transport.admission`).
- **A budget for large messages.** Bytes of large messages being gathered
  are counted server-wide; past :data:`~landlord.transport.budget.LARGE_BUDGET`
  another large message is refused, so many connections each sending most
  of a large message cannot bloat the server (:mod:`~landlord.transport.budget`).

A connection that breaks a rule is told why where it can be (a
``CONNECTFAIL`` before the handshake, an exception answer after it), closed,
and counted in :attr:`FrameServer.refusals` by rule (its log held to a
burst per rule: :mod:`~landlord.transport.refusals`).

A connection that connects and sends nothing costs a file descriptor and no
thread; it is never timed out (only a message once begun is).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import selectors
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

import Pyro5.api
import Pyro5.errors
import Pyro5.serializers
from Pyro5.svr_multiplex import SocketServer_Multiplex

from .admission import Admission
from .budget import LargeMessageBudget
from .connection import FramedConnection, send_some
from .framing import Frame, FrameLimits, FrameRefused
from .refusals import Refusals, refusal_message
from .serializers import install as install_serializers
from .workers import WORKERS, FrameWorkers, check_workers

__all__ = ["FrameServer", "guard", "WORKERS"]

log = logging.getLogger("landlord.frameserver")  # its name before it moved into transport/

_READ_CHUNK = 256 * 1024     # the most one read takes
_SMALL_READ = 4 * 1024       # the least one read asks for: a small message's header and body at once
_TURN = 1.0                  # longest wait of the selector when no deadline is nearer


class FrameServer:
    """A daemon's transport: see the module docstring. Made by :func:`guard`.

    The gathering thread's own work is here: reading (TLS handshakes included), handing a whole
    message to the workers (:class:`~landlord.transport.workers.FrameWorkers`), writing what is left
    of an answer, deadlines, refusing and dropping. Who is let in is
    :class:`~landlord.transport.admission.Admission`'s, the large messages' bytes
    :class:`~landlord.transport.budget.LargeMessageBudget`'s.

    Attributes:
        refusals: what was refused so far, by rule (a :class:`collections.Counter`; read, never written,
            by the metrics: ``landlord_transport_refused_total``).

    Args:
        daemon: the daemon whose listening socket it takes over.
        limits: the rules for every message.
        workers: workers for small messages (at least 1).

    Raises:
        ValueError: ``workers`` is not a positive int.
        TypeError: the daemon does not have Pyro5's multiplex server to take over.
    """

    def __init__(self, daemon: Pyro5.api.Daemon, limits: FrameLimits, workers: int = WORKERS) -> None:
        check_workers(workers)
        old = getattr(daemon, "transportServer", None)
        if not isinstance(old, SocketServer_Multiplex) or old.sock is None:
            raise TypeError(f"expected a daemon on Pyro5's multiplex server, got {type(old).__name__}")
        self.daemon = daemon
        self.limits = limits
        self.locationStr = old.locationStr
        sock = _take_over(old)
        self.selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self.selector.register(self._wake_r, selectors.EVENT_READ, None)
        self.shutting_down = False
        self._refused = Refusals(log)
        self.refusals: collections.Counter[str] = self._refused.counts
        self._admission = Admission(sock, self.selector, limits, self._refused, lambda: self.shutting_down)
        self._deadlines: dict[FramedConnection, float] = {}  # connections with something under way
        self._done: collections.deque[FramedConnection] = collections.deque()
        self._budget = LargeMessageBudget()
        self._workers = FrameWorkers(daemon, limits, self.selector, self._refused, self._hand_back,
                                     lambda: self.shutting_down, workers)
        daemon.transportServer = self

    def __repr__(self) -> str:
        return f"<FrameServer on {self.locationStr}; {len(self._admission.connections)} connections>"

    # -- what Pyro5's Daemon asks of its transport --------------------------------------------------

    @property
    def sock(self) -> Any:
        """The listening socket (``None`` once closed)."""
        return self._admission.sock

    @property
    def sockets(self) -> list[Any]:
        return ([self.sock] if self.sock is not None else []) + \
            [conn.sock for conn in list(self._admission.connections)]

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
        self._workers.close()
        for conn in list(self._admission.connections):
            self._drop(conn)
        self._admission.close()
        for end in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                end.close()
        with contextlib.suppress(Exception):
            self.selector.close()

    # -- the gathering thread -----------------------------------------------------------------------

    def _turn(self) -> None:
        now = time.monotonic()
        pause_ends = self._admission.resume(now)
        timeout = _TURN
        if self._deadlines:
            timeout = min(_TURN, max(0.0, min(self._deadlines.values()) - now))
        if pause_ends is not None:
            timeout = min(timeout, max(0.0, pause_ends - now))
        for key, mask in self.selector.select(timeout):
            if key.fileobj is self.sock:
                self._admission.accept()
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

    def _read(self, conn: FramedConnection) -> None:
        now = time.monotonic()
        if conn.tls_deadline is not None and not self._tls_handshake(conn, now):
            return
        while True:
            # a small message (a renewal) comes in one read; beyond it at most _SMALL_READ bytes are held
            size = min(max(conn.gatherer.wanted(), _SMALL_READ - conn.gatherer.buffered), _READ_CHUNK)
            try:
                data = conn.sock.recv(size)
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
            if len(data) < size and not (isinstance(conn.sock, ssl.SSLSocket) and conn.sock.pending()):
                break  # drained (TLS may hold decrypted bytes the selector cannot see: those are read at once)
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
            self._refused.count("tls", f"refused a connection from {conn.peer()}: TLS handshake failed: {exc}")
            self._drop(conn)
            return False
        conn.tls_deadline = None
        self._deadlines.pop(conn, None)
        return True

    def _reserve(self, conn: FramedConnection) -> None:
        """Count a large message's bytes against the budget once its header says how large it is
        (:meth:`~landlord.transport.budget.LargeMessageBudget.reserve`).

        Raises:
            FrameRefused: the budget has no room for it (reason ``"busy"``).
        """
        conn.reserved = self._budget.reserve(conn.gatherer.expected(), conn.reserved)

    def _release(self, conn: FramedConnection) -> None:
        """Give back what a connection's message holds of the large-message budget."""
        self._budget.release(conn.reserved)
        conn.reserved = 0

    def _dispatch(self, conn: FramedConnection, frame: Frame) -> None:
        """Hand a whole message to a worker; its connection is not read until it is served."""
        self._deadlines.pop(conn, None)
        with contextlib.suppress(KeyError):  # not registered when it comes from _resume
            self.selector.unregister(conn.sock)
        self._workers.serve(conn, frame)

    def _finished(self, conn: FramedConnection) -> None:
        """A worker is done with a connection's message: write what is left of the answer, or read on."""
        self._release(conn)
        if conn not in self._admission.connections:
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
        if not send_some(conn):
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
                self._refused.count("deadline", f"dropped {conn.peer()}: it did not read its answer within "
                                        f"{self.limits.deadline:g} s")
                self._drop(conn)
            elif conn.tls_deadline is not None:
                self._refused.count("tls", f"refused a connection from {conn.peer()}: TLS handshake failed: timed out")
                self._drop(conn)
            else:
                try:
                    conn.gatherer.check(now)
                except FrameRefused as refusal:
                    self._refuse(conn, refusal)

    def _refuse(self, conn: FramedConnection, refusal: FrameRefused) -> None:
        """Tell a client which rule it broke (where it can be told at once), then close its connection."""
        self._refused.count(refusal.reason, f"refused {conn.peer()}: {refusal}")
        with contextlib.suppress(Exception):  # one try: a client that does not read is not waited for
            conn.sock.send(refusal_message(conn.gatherer, refusal))
        self._drop(conn)

    def _drop(self, conn: FramedConnection) -> None:
        self._deadlines.pop(conn, None)
        if not self._admission.forget(conn):
            return
        self._release(conn)
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.selector.unregister(conn.sock)
        if conn.gatherer.is_greeted:
            try:
                self.daemon._clientDisconnect(conn)
            except Exception as exc:  # a hook of the served object's: its failure ends nothing else
                log.warning("error in clientDisconnect: %s", exc)
        conn.close()
        self._admission.listen()

    def _hand_back(self, conn: FramedConnection) -> None:
        """A worker is done with a connection (called on the worker): the gathering thread takes it back."""
        self._done.append(conn)
        self.wakeup()


def _take_over(old: SocketServer_Multiplex) -> Any:
    """The listening socket of Pyro5's multiplex server, taken from it: it no longer watches or closes it."""
    sock = old.sock
    old.selector.unregister(old.sock)
    old.selector.close()
    old.sock = None  # type: ignore[assignment]  # ours now: the old server must not close it
    return sock


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
    install_serializers()
    return FrameServer(daemon, limits, workers)

