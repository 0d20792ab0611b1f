"""Pyro5's multiplex server, made to greet a client only once it has spoken.

Pyro5's ``"multiplex"`` server runs every connection on one thread. On a new
connection it reads the client's handshake at once, inside the accept (and
with TLS, does the whole TLS handshake there too), blocking that one thread
until the handshake arrives or ``COMMTIMEOUT`` passes. So a client that
connects and says nothing stalls every other client for the timeout, and
1,000 such connections, opened at once, stall them for 1,000 timeouts: a
landlord's renewals would starve for over an hour.

:func:`greet_when_spoken` changes one daemon's multiplex server so that a new
connection is only accepted and put in the selector's watch; its handshake
(TLS first, then Pyro5's) is read when the selector says it has data. A
silent connection costs a file descriptor and nothing else; a legitimate
client, which sends its handshake as soon as it connects, sees no difference.
A client that sends *part* of a handshake and stalls still holds the thread
up, for at most the timeout: the same as a client stalling in the middle of
a message (see :mod:`landlord.serving`).
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import ssl
from collections.abc import Iterable
from typing import Any

from Pyro5 import config as pyro_config
from Pyro5 import errors as pyro_errors
from Pyro5 import socketutil
from Pyro5.svr_multiplex import SocketServer_Multiplex

from ..tls import _peer, server_handshake

__all__ = ["greet_when_spoken", "SpokenFirstMultiplexServer"]

log = logging.getLogger("landlord.multiplex")  # its name before it moved into transport/


class SpokenFirstMultiplexServer(SocketServer_Multiplex):
    """A multiplex server that handshakes with a connection only when it has data.

    Made by :func:`greet_when_spoken` from a daemon's own server (Pyro5 makes
    its server in the daemon's constructor, so it is changed in place).
    """

    _unspoken: dict[socket.socket, Any]  # accepted connections not yet greeted -> their address

    def events(self, eventsockets: Iterable[Any]) -> None:
        requests = []
        for sock in eventsockets:
            if self.shutting_down:
                return
            if sock is self.sock:
                self._accept_unspoken()
            elif sock in self._unspoken:
                self._greet(sock)
            else:
                requests.append(sock)
        super().events(requests)  # the requests of greeted clients, as Pyro5 does them

    def _accept_unspoken(self) -> None:
        try:
            # the plain accept, even of a TLS listening socket: no handshake here
            raw, address = socket.socket.accept(self.sock)
        except OSError as exc:
            if exc.errno in socketutil.ERRNO_BADF or exc.errno in socketutil.ERRNO_ENOTSOCK:
                raise pyro_errors.ConnectionClosedError("server socket closed") from exc
            log.warning("accept() failed: %s", exc)
            return
        self._unspoken[raw] = address
        self.selector.register(raw, selectors.EVENT_READ, self)

    def _greet(self, raw: socket.socket) -> None:
        """The client has sent its first bytes: its handshake, read now (bounded by the timeouts)."""
        address = self._unspoken.pop(raw)
        self.selector.unregister(raw)
        if isinstance(self.sock, ssl.SSLSocket):
            try:
                sock: socket.socket = server_handshake(self.sock.context, raw, address)
            except ConnectionAbortedError:  # logged, and the connection closed
                return
        else:
            sock = raw
        try:
            sock.settimeout(pyro_config.COMMTIMEOUT or None)
            connection = socketutil.SocketConnection(sock)
            if self.daemon._handshake(connection):
                self.selector.register(connection, selectors.EVENT_READ, self)
                return
            connection.close()
        except Exception as exc:  # whatever it sent, the server goes on
            reason = "timed out" if isinstance(exc, socket.timeout) else str(exc)
            log.warning("refused a connection from %s: Pyro5 handshake failed: %s", _peer(address), reason)
            with contextlib.suppress(OSError):
                sock.close()

    def close(self) -> None:
        for raw in list(getattr(self, "_unspoken", ())):
            with contextlib.suppress(OSError):
                raw.close()
        self._unspoken = {}
        super().close()


def greet_when_spoken(server: SocketServer_Multiplex) -> SpokenFirstMultiplexServer:
    """Make a daemon's multiplex server (``daemon.transportServer``) greet
    connections only once they have sent data; return it.

    Raises:
        TypeError: ``server`` is not a Pyro5 multiplex server.
    """
    if not isinstance(server, SocketServer_Multiplex):
        raise TypeError(f"expected Pyro5's multiplex server, got {type(server).__name__}")
    if isinstance(server, SpokenFirstMultiplexServer):
        return server
    # Pyro5 builds the server inside Daemon(); its class is switched to this
    # subclass, which adds methods and one attribute, not a different layout
    server.__class__ = SpokenFirstMultiplexServer
    spoken_first: SpokenFirstMultiplexServer = server  # type: ignore[assignment]  # by the line above
    spoken_first._unspoken = {}
    return spoken_first

