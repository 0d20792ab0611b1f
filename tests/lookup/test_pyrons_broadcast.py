"""Pyro5's broadcast discovery answered by the name server face (lookup.service.pyrons.broadcast):
``GET_NSURI`` gets the URI, anything else nothing, and a flood from one address a few answers."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from lookup.discovery.ratelimit import ReplyLimiter
from lookup.service.pyrons.broadcast import REQUEST, BroadcastResponder

URI = "PYRO:Pyro.NameServer@127.0.0.1:9090"


@pytest.fixture
def responder() -> Iterator[BroadcastResponder]:
    responder = BroadcastResponder(URI, "127.0.0.1", 0, limiter=ReplyLimiter(per_source=0.001, burst=3))
    yield responder
    responder.close()


@pytest.fixture
def asker() -> Iterator[socket.socket]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(1.0)
        yield sock


def answers(sock: socket.socket) -> list[bytes]:
    """Every answer that comes before a second of silence."""
    got = []
    try:
        while True:
            got.append(sock.recv(200))
    except TimeoutError:
        return got


def test_get_nsuri_is_answered_with_the_uri_and_garbage_with_nothing(responder: BroadcastResponder,
                                                                     asker: socket.socket) -> None:
    for garbage in (b"", b"GET_NSURI\n", b"get_nsuri", b"x" * 100, REQUEST + b"\0"):
        asker.sendto(garbage, ("127.0.0.1", responder.port))
    asker.sendto(REQUEST, ("127.0.0.1", responder.port))
    assert answers(asker) == [URI.encode()]


def test_a_flood_from_one_address_gets_its_burst_and_no_more(responder: BroadcastResponder,
                                                             asker: socket.socket) -> None:
    for _ in range(200):
        asker.sendto(REQUEST, ("127.0.0.1", responder.port))
    assert answers(asker) == [URI.encode()] * 3


def test_a_port_in_use_is_refused(responder: BroadcastResponder) -> None:
    with pytest.raises(OSError):
        BroadcastResponder(URI, "127.0.0.1", responder.port)
