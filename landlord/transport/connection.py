"""A client connection of the guarded server (:mod:`~landlord.transport.frameserver`), as its
gathering thread and its workers share it: :class:`FramedConnection`, and :func:`send_some`,
which writes its answer without blocking.

A connection is one thread's at a time: the gathering thread's while a message is
gathered or its answer written, one worker's while its message is served (it is not
read meanwhile), so its fields need no lock.
"""

from __future__ import annotations

import socket
import ssl
from typing import Any

import Pyro5.errors
import Pyro5.socketutil

from .framing import FrameGatherer, FrameLimits

__all__ = ["FramedConnection", "send_some"]


class FramedConnection(Pyro5.socketutil.SocketConnection):
    """A client connection as the daemon's code sees it: ``recv`` reads the whole message gathered
    for it, ``send`` keeps the answer for the server to write.

    Pyro5 keeps per-connection state on this object (session instances,
    tracked resources), so it lives as long as the connection.

    Args:
        sock: the connection's socket (non-blocking).
        address: the client's address, as ``accept`` gave it.
        limits: the rules for its messages.
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
        """The next ``size`` bytes of the message loaded.

        Raises:
            Pyro5.errors.ConnectionClosedError: the message has fewer left (never, for one the gatherer took whole).
        """
        if size > len(self._message):
            raise Pyro5.errors.ConnectionClosedError("message ended early")  # by the gatherer, never
        data, self._message = self._message[:size], self._message[size:]
        return bytes(data)

    def send(self, data: bytes) -> None:
        """Keep ``data`` to be written (by :func:`send_some`)."""
        self.outgoing += data

    def peer(self) -> str:
        """The client's address, for the log."""
        if isinstance(self.address, tuple) and len(self.address) >= 2:
            return f"{self.address[0]}:{self.address[1]}"
        return str(self.address)


def send_some(conn: FramedConnection) -> bool:
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
