"""The HTTP server of health checks and metrics (landlord.transport.httpserver): a request head parsed
by its rules (pure), and the server's limits over real sockets on loopback: a request bounded in size
and under a deadline, connections bounded (the oldest still sending pushed out, 503 when every one is
being answered), slow pages one at a time, an answer not taken cut off, and nothing stops it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from landlord.transport.httpserver import (
    Answer,
    BadRequest,
    HttpLimits,
    HttpServer,
    Request,
    parse_head,
    text_answer,
)

IO_TIMEOUT = 10.0  # seconds a test's socket waits for the server, at most


# -- the head, parsed (pure) ---------------------------------------------------------------------


def test_a_request_head_is_read_as_method_path_query_and_headers() -> None:
    request = parse_head(b"GET /metrics?name[]=x&y=1 HTTP/1.1\r\nHost: h\r\nAccept-Encoding:  gzip \r\n"
                         b"ACCEPT: a\r\naccept: b\r\n\r\n")
    assert request == Request("GET", "/metrics", "name[]=x&y=1", {"host": "h", "accept-encoding": "gzip",
                                                                    "accept": "b"})
    assert parse_head(b"HEAD / HTTP/1.0\r\n\r\n") == Request("HEAD", "/", "", {})


@pytest.mark.parametrize("head", [
    b"\r\n\r\n", b"GET\r\n\r\n", b"GET /metrics\r\n\r\n", b"GET /metrics HTTP/2\r\n\r\n",
    b"GET metrics HTTP/1.1\r\n\r\n", b"get / HTTP/1.1\r\n\r\n", b"GET  / HTTP/1.1\r\n\r\n",
    b"G\x00T / HTTP/1.1\r\n\r\n", b"GET / HTTP/1.1\r\nno colon\r\n\r\n", b"GET / HTTP/1.1\r\n: no name\r\n\r\n",
    b"GET / HTTP/1.1\r\n Folded: x\r\n\r\n", bytes(range(256)),
])
def test_what_is_not_an_http_1_request_is_refused_by_name(head: bytes) -> None:
    with pytest.raises(BadRequest, match="not an HTTP/1 request line|not a header line"):
        parse_head(head)


@pytest.mark.parametrize("limits", [{"head_bytes": 0}, {"connections": -1}, {"deadline": 0}, {"deadline": "5"},
                                    {"head_bytes": True}, {"connections": 1.5}, {"connections_per_host": 0}])
def test_bad_limits_are_refused(limits: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="must be a positive"):
        HttpLimits(**limits)  # type: ignore[arg-type]


# -- the server, on loopback -----------------------------------------------------------------------


@pytest.fixture
def serve() -> Iterator[Callable[..., HttpServer]]:
    """Start an HttpServer on loopback (closed at teardown)."""
    started: list[HttpServer] = []

    def start(pages: dict[str, Callable[[Request], Answer]], slow_pages: dict[str, Callable[[Request], Answer]]
              | None = None, **limits: float) -> HttpServer:
        server = HttpServer("127.0.0.1", 0, pages=pages, slow_pages=slow_pages or {},
                            limits=HttpLimits(**limits))  # type: ignore[arg-type]
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


def ok(request: Request) -> Answer:
    return text_answer(200, "ok")


def exchange(port: int, data: bytes) -> bytes:
    """Send ``data`` on a fresh connection; what comes back before the server closes it (a reset: what came).

    A refusal (503) is sent and closed without reading the request, so the request may meet a closed
    socket, whose reset ends the connection before our own close (``ENOTCONN``); the answer, which came
    before the reset, is still there to read.
    """
    with socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT) as sock:
        answer = b""
        with contextlib.suppress(ConnectionResetError, BrokenPipeError):
            sock.sendall(data)
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)
            while chunk := sock.recv(65536):
                answer += chunk
        return answer


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def closed_by_server(sock: socket.socket, timeout: float = IO_TIMEOUT) -> bytes | None:
    """What the server sends before it closes ``sock``; ``None`` if it has not closed it within ``timeout``."""
    sock.settimeout(timeout)
    answer = b""
    try:
        while chunk := sock.recv(65536):
            answer += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return answer


def wait_until(check: Callable[[], bool], what: str, timeout: float = IO_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout:g} s: {what}"
        threading.Event().wait(0.01)  # the pace of asking again; the check decides


def test_pages_are_answered_with_their_status_headers_and_body_and_nothing_else(
        serve: Callable[..., HttpServer]) -> None:
    server = serve({"/ok": ok, "/teapot": lambda request: Answer(418, (("X-Kind", "tea"),), b"short and stout")},
                   {"/slow": lambda request: text_answer(200, f"slow {request.query}")})
    assert exchange(server.port, b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n") == (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\n"
        b"Connection: close\r\n\r\nok\n")
    assert exchange(server.port, b"GET /teapot HTTP/1.0\r\n\r\n").endswith(
        b"X-Kind: tea\r\nContent-Length: 15\r\nConnection: close\r\n\r\nshort and stout")
    assert exchange(server.port, b"GET /slow?x=1 HTTP/1.1\r\n\r\n").endswith(b"\r\n\r\nslow x=1\n")
    head = exchange(server.port, b"HEAD /slow?x=1 HTTP/1.1\r\n\r\n")
    assert head.endswith(b"Content-Length: 9\r\nConnection: close\r\n\r\n")  # the length of what GET answers
    assert status_of(exchange(server.port, b"GET /nothing HTTP/1.1\r\n\r\n")) == 404
    post = exchange(server.port, b"POST /ok HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
    assert status_of(post) == 405 and b"Allow: GET, HEAD\r\n" in post
    assert server.refused() == {}


def test_a_page_that_fails_is_a_500_and_the_server_answers_on(serve: Callable[..., HttpServer]) -> None:
    def broken(request: Request) -> Answer:
        raise RuntimeError("a bug of the page's")

    server = serve({"/broken": broken, "/ok": ok}, {"/slow-broken": broken})
    assert status_of(exchange(server.port, b"GET /broken HTTP/1.1\r\n\r\n")) == 500
    assert status_of(exchange(server.port, b"GET /slow-broken HTTP/1.1\r\n\r\n")) == 500
    assert status_of(exchange(server.port, b"GET /ok HTTP/1.1\r\n\r\n")) == 200


def test_malformed_and_cut_off_requests_are_400_and_a_silent_one_costs_nothing(
        serve: Callable[..., HttpServer]) -> None:
    server = serve({"/ok": ok})
    assert exchange(server.port, b"\x16\x03\x01 not http\r\n\r\n").startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert status_of(exchange(server.port, b"GET /ok HTTP/1.1\r\nHost")) == 400  # the client stopped sending
    assert exchange(server.port, b"") == b""
    assert server.refused() == {"malformed": 1, "cut off": 1}
    assert status_of(exchange(server.port, b"GET /ok HTTP/1.1\r\n\r\n")) == 200


def test_a_request_larger_than_the_limit_is_refused_without_being_read_whole(
        serve: Callable[..., HttpServer]) -> None:
    server = serve({"/ok": ok}, head_bytes=1024)
    answer = exchange(server.port, b"GET /" + b"x" * 100_000 + b" HTTP/1.1\r\n\r\n")
    assert answer == b"" or status_of(answer) == 431  # told, unless the unread rest reset the connection first
    assert status_of(exchange(server.port, b"GET /ok HTTP/1.1\r\n" + b"X-Pad: y\r\n" * 200 + b"\r\n")) == 431
    assert server.refused() == {"too large": 2}
    assert status_of(exchange(server.port, b"GET /ok HTTP/1.1\r\nX-Pad: " + b"y" * 900 + b"\r\n\r\n")) == 200


def test_a_trickle_is_cut_off_at_the_deadline_from_connecting_whatever_it_sends(
        serve: Callable[..., HttpServer]) -> None:
    server = serve({"/ok": ok}, deadline=1.0)
    with socket.create_connection(("127.0.0.1", server.port), timeout=IO_TIMEOUT) as trickle:
        connected = time.monotonic()
        sent = 0
        with contextlib.suppress(OSError):  # the server closed it
            for byte in b"GET /ok HTTP/1.1\r\nX-Slow: " + b"y" * 100:
                trickle.send(bytes([byte]))
                sent += 1
                if closed_by_server(trickle, 0.1) is not None:  # and a byte every 0.1 s
                    break
        cut_off = time.monotonic() - connected
    assert 0.9 < cut_off < 3.0, f"cut off after {cut_off:.2f} s"
    assert 5 < sent < 40  # bytes were still coming: the deadline is not restarted by each
    assert server.refused() == {"deadline": 1}


def test_one_more_connection_than_allowed_pushes_out_the_oldest_still_sending(
        serve: Callable[..., HttpServer]) -> None:
    server = serve({"/ok": ok}, connections=3)
    with contextlib.ExitStack() as stack:
        silent = []
        for _ in range(3):
            silent.append(stack.enter_context(socket.create_connection(("127.0.0.1", server.port),
                                                                       timeout=IO_TIMEOUT)))
            silent[-1].send(b"G")
            wait_until(lambda: server.connections()[0] == len(silent), "the connection held")
        assert status_of(exchange(server.port, b"GET /ok HTTP/1.1\r\n\r\n")) == 200
        assert closed_by_server(silent[0]) == b""  # the oldest, pushed out
        assert [closed_by_server(sock, 0.2) for sock in silent[1:]] == [None, None]  # the others still held
        assert server.refused() == {"pushed out": 1}


def connect_from(source: str, port: int) -> socket.socket:
    """A connection to the server from ``source`` (any 127.x.y.z is this host's loopback on Linux)."""
    return socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT, source_address=(source, 0))


def test_a_client_at_its_limit_pushes_out_only_its_own_connections(serve: Callable[..., HttpServer]) -> None:
    server = serve({"/ok": ok}, connections=4, connections_per_host=2)
    with contextlib.ExitStack() as stack:
        other = stack.enter_context(connect_from("127.0.0.3", server.port))  # another client, sending slowly
        other.send(b"G")
        slow = []
        for _ in range(3):  # one more than its limit
            slow.append(stack.enter_context(connect_from("127.0.0.2", server.port)))
            slow[-1].send(b"G")
            wait_until(lambda: server.connections()[0] == 1 + min(len(slow), 2), "the connection held")
        assert closed_by_server(slow[0]) == b""  # its own oldest, pushed out
        assert closed_by_server(other, 0.2) is None  # not the other client's, although older
        with connect_from("127.0.0.2", server.port) as fourth:  # its own again
            fourth.sendall(b"GET /ok HTTP/1.1\r\n\r\n")
            assert status_of(closed_by_server(fourth) or b"") == 200
        assert closed_by_server(slow[1]) == b""
        assert status_of(exchange(server.port, b"GET /ok HTTP/1.1\r\n\r\n")) == 200  # from 127.0.0.1
        assert closed_by_server(other, 0.2) is None
        assert server.refused() == {"pushed out": 2}


def test_when_full_one_more_pushes_out_a_connection_of_the_client_holding_the_most(
        serve: Callable[..., HttpServer]) -> None:
    server = serve({"/ok": ok}, connections=4)
    with contextlib.ExitStack() as stack:
        held = []
        for source in ("127.0.0.3", "127.0.0.2", "127.0.0.2", "127.0.0.2"):  # the oldest is the lone client's
            held.append(stack.enter_context(connect_from(source, server.port)))
            held[-1].send(b"G")
            wait_until(lambda: server.connections()[0] == len(held), "the connection held")
        assert status_of(exchange(server.port, b"GET /ok HTTP/1.1\r\n\r\n")) == 200
        assert closed_by_server(held[1]) == b""  # the oldest of the client holding three
        assert [closed_by_server(sock, 0.2) for sock in (held[0], held[2], held[3])] == [None, None, None]
        assert server.refused() == {"pushed out": 1}


def test_when_every_connection_is_being_answered_one_more_is_told_503(serve: Callable[..., HttpServer]) -> None:
    release, made = threading.Event(), threading.Semaphore(0)

    def slow(request: Request) -> Answer:
        made.release()
        release.wait(IO_TIMEOUT)
        return text_answer(200, "made")

    server = serve({"/ok": ok}, {"/slow": slow}, connections=2)
    answers: list[bytes] = []
    scrapers = [threading.Thread(target=lambda: answers.append(exchange(server.port, b"GET /slow HTTP/1.1\r\n\r\n")))
                for _ in range(2)]
    for scraper in scrapers:
        scraper.start()
    try:
        assert made.acquire(timeout=IO_TIMEOUT)  # one is being made; the other waits its turn, held too
        wait_until(lambda: server.connections() == (2, 0), "both requests read")
        assert status_of(exchange(server.port, b"GET /ok HTTP/1.1\r\n\r\n")) == 503
        assert server.refused() == {"busy": 1}
        assert not made.acquire(timeout=0.2)  # the second is not made while the first is: one at a time
    finally:
        release.set()
        for scraper in scrapers:
            scraper.join(IO_TIMEOUT)
    assert sorted(status_of(answer) for answer in answers) == [200, 200]


def test_slow_pages_are_made_one_at_a_time_while_quick_ones_are_answered(serve: Callable[..., HttpServer]) -> None:
    release, inside = threading.Event(), threading.Event()

    def slow(request: Request) -> Answer:
        inside.set()
        release.wait(IO_TIMEOUT)
        return text_answer(200, "made")

    server = serve({"/ok": ok}, {"/slow": slow})
    scraper = threading.Thread(target=exchange, args=(server.port, b"GET /slow HTTP/1.1\r\n\r\n"))
    scraper.start()
    try:
        assert inside.wait(IO_TIMEOUT)
        asked = time.monotonic()
        assert status_of(exchange(server.port, b"GET /ok HTTP/1.1\r\n\r\n")) == 200  # not behind the slow page
        assert time.monotonic() - asked < 1.0
    finally:
        release.set()
        scraper.join(IO_TIMEOUT)


def test_an_answer_not_taken_within_the_deadline_is_cut_off(serve: Callable[..., HttpServer]) -> None:
    large = Answer(200, (), b"x" * (64 * 1024 * 1024))
    server = serve({"/ok": ok}, {"/large": lambda request: large}, deadline=1.0)
    with socket.socket() as reader:
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: a small window
        reader.settimeout(IO_TIMEOUT)
        reader.connect(("127.0.0.1", server.port))
        reader.sendall(b"GET /large HTTP/1.1\r\n\r\n")
        wait_until(lambda: server.refused() == {"slow reader": 1}, "the answer cut off")
    assert status_of(exchange(server.port, b"GET /ok HTTP/1.1\r\n\r\n")) == 200


def test_close_frees_the_port_and_closes_what_is_open(serve: Callable[..., HttpServer]) -> None:
    server = serve({"/ok": ok})
    with socket.create_connection(("127.0.0.1", server.port), timeout=IO_TIMEOUT) as held:
        held.send(b"GET")
        wait_until(lambda: server.connections() == (1, 1), "the connection held")
        server.close()
        assert closed_by_server(held) == b""
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=IO_TIMEOUT).close()
    server.close()  # again: nothing


def test_an_address_in_use_is_an_oserror_at_once(serve: Callable[..., HttpServer]) -> None:
    server = serve({"/ok": ok})
    with pytest.raises(OSError):
        HttpServer("127.0.0.1", server.port, pages={})
