"""landlord.transport.connection: a guarded server's connection as the daemon's code reads and
writes it, and its answer sent without blocking (over a socket pair)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import Pyro5.errors
import pytest

from landlord.transport.connection import FramedConnection, send_some
from landlord.transport.framing import FrameLimits


@pytest.fixture
def pair() -> Iterator[tuple[FramedConnection, socket.socket]]:
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    conn = FramedConnection(ours, ("192.0.2.7", 4321), FrameLimits())
    yield conn, theirs
    conn.close()
    theirs.close()


def test_the_daemon_reads_the_message_loaded_and_no_further(pair: tuple[FramedConnection, socket.socket]) -> None:
    conn, _ = pair
    conn.load(b"header-and-body")
    assert conn.recv(6) == b"header"
    assert conn.recv(9) == b"-and-body"
    with pytest.raises(Pyro5.errors.ConnectionClosedError, match="ended early"):
        conn.recv(1)


def test_loading_an_empty_message_forgets_the_last(pair: tuple[FramedConnection, socket.socket]) -> None:
    conn, _ = pair
    conn.load(b"secret")
    conn.load(b"")
    with pytest.raises(Pyro5.errors.ConnectionClosedError):
        conn.recv(1)


def test_what_the_daemon_sends_is_kept_and_written_by_send_some(pair: tuple[FramedConnection, socket.socket]) -> None:
    conn, theirs = pair
    conn.send(b"an ")
    conn.send(b"answer")
    assert conn.outgoing == b"an answer"
    theirs.setblocking(False)
    with pytest.raises(BlockingIOError):  # nothing written yet
        theirs.recv(100)
    theirs.setblocking(True)
    assert send_some(conn) is True
    assert conn.outgoing == b""
    assert theirs.recv(100) == b"an answer"


def test_send_some_stops_without_blocking_when_the_client_does_not_read(
        pair: tuple[FramedConnection, socket.socket]) -> None:
    conn, theirs = pair
    conn.send(b"x" * 50_000_000)  # far more than the socket buffers hold
    assert send_some(conn) is True
    left = len(conn.outgoing)
    assert 0 < left < 50_000_000
    theirs.recv(1_000_000)
    assert send_some(conn) is True
    assert len(conn.outgoing) < left


def test_send_some_says_when_the_connection_is_broken(pair: tuple[FramedConnection, socket.socket]) -> None:
    conn, theirs = pair
    theirs.close()
    conn.send(b"an answer nobody reads")
    assert send_some(conn) is False


def test_a_connection_starts_idle_and_names_its_peer(pair: tuple[FramedConnection, socket.socket]) -> None:
    conn, _ = pair
    assert conn.peer() == "192.0.2.7:4321"
    assert (conn.closing, conn.reserved, conn.host, conn.write_deadline, conn.tls_deadline) == (False, 0, "", None,
                                                                                                None)
    assert not conn.gatherer.is_greeted
    conn.address = "/tmp/a.sock"  # a Unix socket's peer
    assert conn.peer() == "/tmp/a.sock"
