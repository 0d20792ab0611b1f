"""landlord.transport.admission: which connections the guarded server takes, in all and per host
(a real listening socket on the loopback, driven by hand: no server, no threads)."""

from __future__ import annotations

import contextlib
import errno
import logging
import selectors
import socket
import ssl
import time
from collections.abc import Iterator
from typing import Any

import Pyro5.protocol
import Pyro5.serializers
import pytest

from landlord.transport.admission import ACCEPT_PAUSE, Admission
from landlord.transport.connection import FramedConnection
from landlord.transport.framing import FrameLimits
from landlord.transport.refusals import Refusals

LOG = logging.getLogger("tests.admission")


class Listening:
    """An Admission on a fresh loopback socket, and the clients connected to it."""

    def __init__(self, limits: FrameLimits, sock: socket.socket | None = None) -> None:
        self.sock = sock or socket.create_server(("127.0.0.1", 0), backlog=64)
        self.selector = selectors.DefaultSelector()
        self.refusals = Refusals(LOG)
        self.stopping = False
        self.admission = Admission(self.sock, self.selector, limits, self.refusals, lambda: self.stopping)
        self.clients: list[socket.socket] = []

    def connect(self, count: int = 1) -> list[socket.socket]:
        made = [socket.create_connection(self.sock.getsockname(), timeout=5) for _ in range(count)]
        self.clients += made
        return made

    def accept(self, wanted: int, timeout: float = 5.0) -> None:
        """Accept as the gathering thread would, until ``wanted`` connections are held (or the time is up)."""
        end = time.monotonic() + timeout
        while len(self.admission.connections) < wanted and time.monotonic() < end:
            if any(key.fileobj is self.sock for key, _ in self.selector.select(0.05)):
                self.admission.accept()

    def listening(self) -> bool:
        try:
            self.selector.get_key(self.sock)
        except KeyError:
            return False
        return True

    def drop(self, conn: FramedConnection) -> None:
        """Close a connection as the server does: forgotten, no longer watched, closed."""
        self.admission.forget(conn)
        self.selector.unregister(conn.sock)
        conn.close()

    def close(self) -> None:
        for conn in list(self.admission.connections):
            self.drop(conn)
        for client in self.clients:
            client.close()
        self.admission.close()
        self.selector.close()


@contextlib.contextmanager
def listening(**limits: int) -> Iterator[Listening]:
    server = Listening(FrameLimits(**limits))
    try:
        yield server
    finally:
        server.close()


def refused_with(client: socket.socket) -> str:
    """What the server told a refused client, read before its close."""
    header = client.recv(40, socket.MSG_WAITALL)
    received = Pyro5.protocol.ReceivingMessage(header)
    received.add_payload(client.recv(received.data_size, socket.MSG_WAITALL))
    assert received.type == Pyro5.protocol.MSG_CONNECTFAIL
    assert client.recv(1) == b""  # then closed
    return str(Pyro5.serializers.serializers_by_id[received.serializer_id].loads(bytes(received.data)))


def test_each_connection_taken_is_watched_for_its_first_bytes_and_counted_by_host() -> None:
    with listening() as server:
        server.connect(2)
        server.accept(2)
        assert len(server.admission.connections) == 2
        for conn in server.admission.connections:
            assert isinstance(conn, FramedConnection) and conn.host == "127.0.0.1"
            assert conn.sock.getblocking() is False
            assert server.selector.get_key(conn.sock).data is conn
            assert conn.tls_deadline is None  # no TLS here
        assert server.admission.held_by("127.0.0.1") == 2


def test_one_connection_more_than_a_host_may_hold_is_told_so_by_name_and_closed() -> None:
    with listening(connections_per_host=2) as server:
        server.connect(2)
        server.accept(2)
        [third] = server.connect()
        server.accept(3, timeout=0.5)
        assert len(server.admission.connections) == 2
        assert refused_with(third) == "too many connections from 127.0.0.1: at most 2 per address"
        assert server.refusals.counts == {"connections": 1}
        assert server.listening()  # other hosts are still taken


def test_a_connection_forgotten_makes_room_for_its_host() -> None:
    with listening(connections_per_host=1) as server:
        server.connect()
        server.accept(1)
        [conn] = server.admission.connections
        assert server.admission.forget(conn) is True
        assert server.admission.forget(conn) is False  # once
        server.selector.unregister(conn.sock)
        conn.close()
        assert server.admission.held_by("127.0.0.1") == 0
        server.connect()
        server.accept(1)
        assert len(server.admission.connections) == 1 and not server.refusals.counts


def test_past_its_connections_it_stops_listening_until_one_is_forgotten() -> None:
    with listening(connections=2) as server:
        server.connect(3)
        server.accept(2)
        server.accept(3, timeout=0.5)
        assert len(server.admission.connections) == 2
        assert not server.listening()  # the third waits in the backlog, not refused
        server.admission.listen()
        assert not server.listening()  # still full
        server.drop(next(iter(server.admission.connections)))
        server.admission.listen()
        assert server.listening()
        server.accept(2)
        assert len(server.admission.connections) == 2 and not server.refusals.counts


def test_shutting_down_it_listens_no_more() -> None:
    with listening(connections=1) as server:
        server.connect(2)
        server.accept(1)
        server.accept(2, timeout=0.3)
        assert not server.listening()
        server.stopping = True
        server.drop(next(iter(server.admission.connections)))
        server.admission.listen()
        assert not server.listening()


def test_out_of_file_descriptors_it_pauses_listening_and_counts_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def out_of_files(sock: socket.socket) -> tuple[socket.socket, object]:
        raise OSError(errno.EMFILE, "Too many open files")

    with listening() as server:
        server.connect()
        monkeypatch.setattr(socket.socket, "accept", out_of_files)
        before = time.monotonic()
        server.admission.accept()
        monkeypatch.undo()
        assert server.refusals.counts == {"files": 1}
        assert not server.listening()
        again_at = server.admission.resume(before)
        assert again_at is not None and before + ACCEPT_PAUSE <= again_at <= time.monotonic() + ACCEPT_PAUSE
        server.admission.listen()
        assert not server.listening()  # not before the pause is over
        assert server.admission.resume(again_at) is None
        assert server.listening()
        server.accept(1)
        assert len(server.admission.connections) == 1


def test_a_listening_socket_closed_under_it_is_an_error_not_a_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    def closed(sock: socket.socket) -> tuple[socket.socket, object]:
        raise OSError(errno.EBADF, "Bad file descriptor")

    with listening() as server:
        monkeypatch.setattr(socket.socket, "accept", closed)
        with pytest.raises(OSError, match="Bad file descriptor"):
            server.admission.accept()
        monkeypatch.undo()
        assert server.listening() and not server.refusals.counts


def test_with_nothing_waiting_accept_takes_nothing() -> None:
    with listening() as server:
        server.admission.accept()
        assert not server.admission.connections
        assert server.admission.resume(time.monotonic()) is None


def test_closing_closes_the_listening_socket_once_and_it_listens_no_more() -> None:
    with listening(connections=1) as server:
        sock = server.sock
        server.admission.close()
        assert server.admission.sock is None and sock.fileno() == -1
        server.admission.close()
        server.admission.listen()


class _UnwrappingContext(ssl.SSLContext):
    """A TLS context that cannot wrap an accepted connection (as when its peer is already gone)."""

    def wrap_socket(self, sock: socket.socket, *args: Any, **kwargs: Any) -> ssl.SSLSocket:  # type: ignore[override]
        if kwargs.get("do_handshake_on_connect") is False:  # an accepted connection, not the listening socket
            raise OSError(errno.ENOTCONN, "the peer went before TLS began")
        return super().wrap_socket(sock, *args, **kwargs)


def test_a_connection_that_tls_cannot_wrap_uses_up_no_place_of_its_host() -> None:
    context = _UnwrappingContext(ssl.PROTOCOL_TLS_SERVER)
    tls_listener = context.wrap_socket(socket.create_server(("127.0.0.1", 0), backlog=64), server_side=True)
    server = Listening(FrameLimits(connections_per_host=1), sock=tls_listener)
    try:
        for _ in range(3):  # more than the host may hold at once: each failed, none counted
            server.connect()
            server.accept(1, timeout=0.3)
        assert len(server.admission.connections) == 0
        assert server.admission.held_by("127.0.0.1") == 0
        assert "connections" not in server.refusals.counts
    finally:
        server.close()
