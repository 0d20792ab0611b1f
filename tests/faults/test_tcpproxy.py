"""The fault suite's TCP proxy does what each mode says, switched while connections are open."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
from tcpproxy import Mode, TcpProxy

# How long "nothing arrives" is watched for: a blackhole cannot be proved
# by waiting, only made very likely; loopback answers in well under a millisecond.
QUIET = 0.3


class EchoServer:
    """Echoes every byte back; counts connections that reached it and ended."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.ended = threading.Semaphore(0)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    def _echo(self, conn: socket.socket) -> None:
        with conn:
            try:
                while chunk := conn.recv(4096):
                    conn.sendall(chunk)
            except OSError:
                pass
        self.ended.release()

    def close(self) -> None:
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    yield server
    server.close()


@pytest.fixture
def proxy(echo: EchoServer) -> Iterator[TcpProxy]:
    with TcpProxy(("127.0.0.1", echo.port)) as tcp_proxy:
        yield tcp_proxy


def connect(proxy: TcpProxy) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
    return sock


def receive(sock: socket.socket, size: int, timeout: float = 5) -> bytes:
    """Exactly ``size`` bytes, or what came before ``timeout`` ran out."""
    sock.settimeout(timeout)
    data = b""
    deadline = time.monotonic() + timeout
    try:
        while len(data) < size and time.monotonic() < deadline:
            chunk = sock.recv(size - len(data))
            if not chunk:
                break
            data += chunk
    except TimeoutError:
        pass
    return data


def test_pass_forwards_both_ways(proxy: TcpProxy) -> None:
    """In PASS mode the proxy is transparent."""
    with connect(proxy) as sock:
        sock.sendall(b"ping")
        assert receive(sock, 4) == b"ping"
    assert proxy.accepted == 1


def test_drop_is_a_blackhole_for_open_and_new_connections_until_healed(proxy: TcpProxy) -> None:
    """DROP swallows bytes on a live connection and on one opened during it;
    after PASS, a new connection works again."""
    with connect(proxy) as before:
        before.sendall(b"1")
        assert receive(before, 1) == b"1"
        proxy.mode = Mode.DROP
        before.sendall(b"lost")
        assert receive(before, 4, timeout=QUIET) == b""
        with connect(proxy) as during:  # the handshake succeeds: the proxy itself answers it
            during.sendall(b"void")
            assert receive(during, 4, timeout=QUIET) == b""
        assert proxy.dropped_bytes >= 8
    proxy.mode = Mode.PASS
    with connect(proxy) as after:
        after.sendall(b"back")
        assert receive(after, 4) == b"back"


def test_hold_delivers_everything_in_order_once_released(proxy: TcpProxy) -> None:
    """HOLD stops the flow without losing bytes, like a short outage under TCP."""
    with connect(proxy) as sock:
        sock.sendall(b"a")
        assert receive(sock, 1) == b"a"
        proxy.mode = Mode.HOLD
        sock.sendall(b"bc")
        sock.sendall(b"de")
        assert receive(sock, 4, timeout=QUIET) == b""
        proxy.mode = Mode.PASS
        assert receive(sock, 4) == b"bcde"


def test_delay_holds_each_direction_back(proxy: TcpProxy) -> None:
    """DELAY adds its delay once per direction to a round trip, and can be lifted mid-way."""
    proxy.delay = 0.2
    proxy.mode = Mode.DELAY
    with connect(proxy) as sock:
        started = time.monotonic()
        sock.sendall(b"slow")
        assert receive(sock, 4) == b"slow"
        assert time.monotonic() - started >= 0.4
        proxy.delay = 60.0
        sock.sendall(b"late")
        assert receive(sock, 4, timeout=QUIET) == b""
        proxy.mode = Mode.PASS  # the waiting chunk goes at once
        assert receive(sock, 4) == b"late"


def test_a_close_passes_through(proxy: TcpProxy, echo: EchoServer) -> None:
    """A client that closes is seen to close by the server (and the proxy forgets the connection)."""
    sock = connect(proxy)
    sock.sendall(b"x")
    assert receive(sock, 1) == b"x"
    sock.close()
    assert echo.ended.acquire(timeout=5)
