"""landlord.transport.frameserver: a landlord on the guarded server, in this process, through real sockets.

The attacks in real processes, with a canary, are tests/hostile/test_transport.py;
here, what the server does with each kind of message, on short limits.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from collections.abc import Iterator

import Pyro5.api
import Pyro5.errors
import Pyro5.protocol
import pytest

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent.parent / "hostile"))
from attacks import (  # noqa: E402 (the hostile suite's helpers)
    JSON,
    SERPENT,
    answer_text,
    closed_by_server,
    connect_message,
    greeted,
    message,
    read_message,
)

from landlord import Landlord, LeaseDurationPolicy, serve_landlord  # noqa: E402
from landlord.transport.frameserver import FrameServer, guard  # noqa: E402
from landlord.transport.framing import FrameLimits  # noqa: E402

LIMITS = FrameLimits(deadline=0.5, handshake_bytes=512, serpent_bytes=4096, json_bytes=8192)


@contextlib.contextmanager
def served(limits: FrameLimits = LIMITS, workers: int = 2) -> Iterator[tuple[Landlord, str, int]]:
    landlord = Landlord(policy=LeaseDurationPolicy(maximum=60), landlord_id="framed")
    stop, ready = threading.Event(), threading.Event()
    uris: list[str] = []

    def answering(uri: str) -> None:
        uris.append(uri)
        ready.set()

    thread = threading.Thread(target=serve_landlord, args=(landlord,), daemon=True,
                              kwargs=dict(stop=stop, ready=answering, announce=False, limits=limits,
                                          workers=workers))
    thread.start()
    try:
        assert ready.wait(10), "the landlord did not come up"
        yield landlord, uris[0], int(uris[0].rsplit(":", 1)[1])
    finally:
        stop.set()
        thread.join(15)
        landlord.close()
    assert not thread.is_alive()


def test_a_proxy_renews_and_is_told_of_an_unknown_lease_as_on_any_server() -> None:
    with served() as (landlord, uri, _):
        lease = landlord.new_lease("room", 10)
        with Pyro5.api.Proxy(uri) as proxy:
            assert proxy.renew(lease.cookie, 5) == 5
            with pytest.raises(Exception, match="no such lease"):
                proxy.renew("nope", 5)


def test_a_proxy_speaking_json_is_served() -> None:
    with served() as (landlord, uri, _):
        lease = landlord.new_lease("room", 10)
        with Pyro5.api.Proxy(uri) as proxy:
            proxy._pyroSerializer = "json"
            assert proxy.renew(lease.cookie, 7) == 7


def test_calls_sent_ahead_on_one_connection_are_answered_in_order() -> None:
    with served() as (landlord, _, port):
        leases = [landlord.new_lease(f"room {index}", 10) for index in range(3)]
        serializer = Pyro5.serializers.serializers_by_id[SERPENT]
        calls = b"".join(message(Pyro5.protocol.MSG_INVOKE,
                                 serializer.dumpsCall("landlord.framed", "renew", (lease.cookie, 1.0 + index), {}),
                                 seq=index + 1)
                         for index, lease in enumerate(leases))
        with greeted(port, "landlord.framed") as sock:
            sock.sendall(calls)
            answers = [read_message(sock) for _ in leases]
        assert [answer.seq for answer in answers if answer] == [1, 2, 3]
        assert [serializer.loads(bytes(answer.data)) for answer in answers if answer] == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("serializer, body, named", [
    (SERPENT, b"# serpent utf-8 python3.2\n((", "malformed serpent message: SyntaxError"),
    (SERPENT, b"# serpent utf-8 python3.2\n(1, 2)", "malformed serpent message: ValueError"),
    (JSON, b"{", "malformed json message: JSONDecodeError"),
    (JSON, b'{"object": 1}', "malformed json message: KeyError"),
], ids=["serpent syntax", "serpent shape", "json syntax", "json shape"])
def test_a_body_that_does_not_parse_is_answered_with_a_named_protocol_error(serializer: int, body: bytes,
                                                                           named: str) -> None:
    with served() as (_, _, port):
        with greeted(port, "landlord.framed", serializer) as sock:
            sock.sendall(message(Pyro5.protocol.MSG_INVOKE, body, serializer=serializer))
            answer = read_message(sock)
            assert answer is not None and answer.flags & Pyro5.protocol.FLAGS_EXCEPTION
            assert named in answer_text(answer)


def test_a_stalled_message_is_dropped_at_the_deadline_and_counted() -> None:
    with served() as (_, _, port):
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(connect_message("landlord.framed")[:20])
            assert closed_by_server(sock, 5)


def test_a_client_that_never_reads_its_answers_is_dropped_at_the_deadline() -> None:
    big = FrameLimits(deadline=0.5, serpent_bytes=60_000)
    with served(big) as (landlord, uri, port):
        serializer = Pyro5.serializers.serializers_by_id[SERPENT]
        with greeted(port, "landlord.framed") as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            call = message(Pyro5.protocol.MSG_INVOKE,
                           serializer.dumpsCall("landlord.framed", "cancel_all", (["x" * 40] * 1000,), {}))
            with contextlib.suppress(OSError):
                for _ in range(200):  # answers of ~100 KB each, never read
                    sock.sendall(call)
            assert closed_by_server(sock, 10)
        lease = landlord.new_lease("room", 10)
        with Pyro5.api.Proxy(uri) as proxy:  # and everyone else is served on
            assert proxy.renew(lease.cookie, 3) == 3


def test_guard_takes_only_a_multiplex_daemon_and_checks_its_arguments() -> None:
    with pytest.raises(TypeError, match="multiplex"):
        guard(Pyro5.api.Daemon.__new__(Pyro5.api.Daemon))  # no transport at all
    with pytest.raises(TypeError, match="FrameLimits"):
        guard(object(), limits="5 s")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="workers"):
        serve_landlord(Landlord(), workers=0)
    assert FrameServer.__doc__


def test_one_connection_more_than_an_address_may_hold_is_refused_by_name_and_a_closed_one_makes_room() -> None:
    with served(FrameLimits(connections_per_host=3)) as (landlord, uri, port):
        with contextlib.ExitStack() as held:
            for _ in range(3):
                held.enter_context(greeted(port, "landlord.framed"))
            with socket.create_connection(("127.0.0.1", port), timeout=5) as extra:
                refused = read_message(extra)
                assert refused is not None and refused.type == Pyro5.protocol.MSG_CONNECTFAIL
                assert "too many connections from 127.0.0.1: at most 3 per address" in answer_text(refused)
            with pytest.raises(Pyro5.errors.CommunicationError, match="too many connections"):
                with Pyro5.api.Proxy(uri) as proxy:
                    proxy._pyroBind()
        lease = landlord.new_lease("room", 10)
        assert renewed_once_room_is_made(uri, lease.cookie) == 4  # the three closed: room again


def renewed_once_room_is_made(uri: str, cookie: str, timeout: float = 5.0) -> float:
    """A renewal through a new connection, asked again while the server still counts connections
    that were closed a moment ago (it learns of a close when it next reads that socket)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with Pyro5.api.Proxy(uri) as proxy:
                granted: float = proxy.renew(cookie, 4)
                return granted
        except Pyro5.errors.CommunicationError as refused:
            if "too many connections" not in str(refused) or time.monotonic() > deadline:
                raise


def test_past_its_connections_the_server_stops_accepting_until_one_closes() -> None:
    with served(FrameLimits(connections=2)) as (landlord, uri, port):
        lease = landlord.new_lease("room", 10)
        first = greeted(port, "landlord.framed")
        with greeted(port, "landlord.framed"):
            first.__enter__()
            with socket.create_connection(("127.0.0.1", port), timeout=5) as waiting:
                waiting.sendall(connect_message("landlord.framed"))
                waiting.settimeout(0.5)
                with pytest.raises(TimeoutError):  # in the backlog: not accepted, not refused
                    waiting.recv(1)
                first.__exit__(None, None, None)  # one closes: the waiting one is accepted and greeted
                waiting.settimeout(5)
                welcome = read_message(waiting)
                assert welcome is not None and welcome.type == Pyro5.protocol.MSG_CONNECTOK
        with Pyro5.api.Proxy(uri) as proxy:
            assert proxy.renew(lease.cookie, 4) == 4
