"""Which connections the guarded server (:mod:`~landlord.transport.frameserver`) takes: :class:`Admission`.

- **Per host.** One client address (an IPv6 peer by its /64:
  :func:`~landlord.transport.clients.client_of_address`) may hold
  :attr:`~landlord.transport.framing.FrameLimits.connections_per_host`
  connections; one more is told so by name (a ``CONNECTFAIL``, one try) and closed.
- **In all.** Past :attr:`~landlord.transport.framing.FrameLimits.connections`,
  or when the process runs out of file descriptors (for :data:`ACCEPT_PAUSE`
  seconds), the listening socket is no longer watched until a connection
  closes, rather than spun on while it cannot be served.
- **No handshake here.** A TLS connection is wrapped without its handshake,
  which the gathering thread does as its bytes come.

Its state is the gathering thread's alone (as is the selector's registration of
the listening socket), except when the server closes.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import logging
import selectors
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

from .clients import client_of_address
from .connection import FramedConnection
from .framing import FrameLimits, FrameRefused
from .refusals import Refusals, connect_failure

__all__ = ["Admission", "ACCEPTS_PER_TURN", "ACCEPT_PAUSE"]

log = logging.getLogger("landlord.frameserver")  # the server's: these were its methods

ACCEPTS_PER_TURN = 64  # connections accepted per turn of the loop, so a flood of them delays no reading
ACCEPT_PAUSE = 0.1     # seconds of not accepting after running out of file descriptors


class Admission:
    """The server's listening socket and the connections it has taken (see the module docstring).

    Args:
        sock: the listening socket (made non-blocking and watched from now on).
        selector: the gathering thread's, where the listening socket and each new connection are watched.
        limits: how many connections, in all and per host.
        refusals: where a connection refused is counted.
        stopping: whether the server is shutting down (then it listens no more).
    """

    def __init__(self, sock: Any, selector: selectors.BaseSelector, limits: FrameLimits, refusals: Refusals,
                 stopping: Callable[[], bool]) -> None:
        self.sock: Any = sock  # None once closed
        self.connections: set[FramedConnection] = set()
        self._selector = selector
        self._limits = limits
        self._refusals = refusals
        self._stopping = stopping
        self._tls = isinstance(sock, ssl.SSLSocket)
        self._per_host: collections.Counter[str] = collections.Counter()
        self._listening = True
        self._again_at: float | None = None  # after running out of file descriptors
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ, None)

    def accept(self) -> None:
        """Take the connections waiting (at most :data:`ACCEPTS_PER_TURN`), each watched for its first bytes.

        Raises:
            OSError: the listening socket is closed or broken (as when the server shuts down).
        """
        for _ in range(ACCEPTS_PER_TURN):
            if len(self.connections) >= self._limits.connections:
                self._deafen()
                return
            try:
                raw, address = socket.socket.accept(self.sock)  # the plain accept, even for TLS: no handshake here
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if self._stopping() or exc.errno in (errno.EBADF, errno.ENOTSOCK, errno.EINVAL):
                    raise
                # EMFILE and the like: the listening socket stays readable, so stop watching it awhile
                self._refusals.count("files", f"accept() failed: {exc}; accepting again in {ACCEPT_PAUSE:g} s")
                self._deafen()
                self._again_at = time.monotonic() + ACCEPT_PAUSE
                return
            self._admit(raw, address)

    def resume(self, now: float) -> float | None:
        """Listen again if the pause after running out of file descriptors is over at ``now``; when
        the pause ends (``None``: no pause)."""
        if self._again_at is not None and now >= self._again_at:
            self._again_at = None
            self.listen()
        return self._again_at

    def listen(self) -> None:
        """Watch the listening socket again, if it is not watched and there is room (no pause, not shutting down)."""
        if not self._listening and self.sock is not None and not self._stopping() \
                and self._again_at is None and len(self.connections) < self._limits.connections:
            self._listening = True
            self._selector.register(self.sock, selectors.EVENT_READ, None)

    def forget(self, conn: FramedConnection) -> bool:
        """A connection is closing: it no longer counts (call :meth:`listen` once it is closed). Whether it was held."""
        if conn not in self.connections:
            return False
        self.connections.discard(conn)
        self._per_host[conn.host] -= 1
        if self._per_host[conn.host] <= 0:
            del self._per_host[conn.host]
        return True

    def held_by(self, host: str) -> int:
        """How many connections ``host`` (as :func:`~landlord.transport.clients.client_of_address` names it) holds."""
        return self._per_host[host]

    def close(self) -> None:
        """Close the listening socket (the connections are the server's to close)."""
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.close()
            self.sock = None

    def _deafen(self) -> None:
        """Stop watching the listening socket."""
        if self._listening:
            self._listening = False
            with contextlib.suppress(KeyError, ValueError, OSError):
                self._selector.unregister(self.sock)

    def _admit(self, raw: socket.socket, address: Any) -> None:
        """Take one connection, unless its host holds all it may."""
        host = client_of_address(address)
        if self._per_host[host] >= self._limits.connections_per_host:
            self._refuse(raw, host)
            return
        raw.setblocking(False)
        with contextlib.suppress(OSError):
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = FramedConnection(raw, address, self._limits)
        conn.host = host
        if self._tls:
            try:
                conn.sock = self.sock.context.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
            except (OSError, ValueError) as exc:
                log.warning("refused a connection from %s: %s", conn.peer(), exc)
                with contextlib.suppress(OSError):
                    raw.close()
                return
            conn.tls_deadline = float("inf")  # its clock starts at its first bytes, as a message's does
        self._per_host[host] += 1  # only once taken: a connection refused above must not use up a place
        self.connections.add(conn)
        self._selector.register(conn.sock, selectors.EVENT_READ, conn)

    def _refuse(self, raw: socket.socket, host: str) -> None:
        """One connection too many from ``host``: told so (one try, before it has asked), closed."""
        self._refusals.count("connections", f"refused a connection from {host}: it holds "
                                            f"{self._per_host[host]} already, the most one address may")
        refusal = FrameRefused("connections", f"too many connections from {host}: at most "
                                              f"{self._limits.connections_per_host} per address")
        message = connect_failure(str(refusal))
        with contextlib.suppress(OSError):
            raw.setblocking(False)
            raw.send(message)
        with contextlib.suppress(OSError):
            raw.close()
