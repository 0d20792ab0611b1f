"""Hostile clients against real servers: nobody's renewal waits on them.

Each test starts each of four servers in its own process (a landlord served by
``serve_landlord``, ``python -m lookup serve``, ``python -m landlord
renewal-service``, or a replica of a replicated landlord over a real
three-member etcd: tests/hostile/targets.py), starts a canary holder renewing a
2 s lease every 0.1 s (a room's lease, a registration's, a renewal set's),
attacks over raw sockets, then checks:

- the canary never missed a renewal, and its worst took under
  ``targets.WORST_RENEWAL`` (the goal on a quiet machine is 100 ms);
- the server refused the attack by the rule it broke (it says which);
- its memory stayed bounded, and came back down.

The attacks need no credentials; the parse bombs come after a good handshake,
as any client may make one.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import Pyro5.api
import Pyro5.errors
import Pyro5.protocol
import pytest
from attacks import (
    JSON,
    MARSHAL,
    MSGPACK,
    SERPENT,
    answer_text,
    closed_by_server,
    connect_message,
    deflated,
    for_seconds,
    greeted,
    json_bomb,
    message,
    msgpack_bomb,
    read_message,
    serpent_bomb,
)
from conftest import open_files_for_many_clients  # noqa: F401 (a fixture)
from etcd_fixtures import etcd_cluster  # noqa: F401 (a fixture)
from targets import Target, target, watched  # noqa: F401 (a fixture)

from landlord.transport.framing import FrameLimits

pytestmark = pytest.mark.slow

DEADLINE = FrameLimits().deadline
SERPENT_CAP = FrameLimits().serpent_bytes
JSON_CAP = FrameLimits().json_bytes
MSGPACK_CAP = FrameLimits().msgpack_bytes


def _connect(target: Target) -> socket.socket:
    return socket.create_connection(("127.0.0.1", target.port), timeout=10)


# -- connections that never finish a message ----------------------------------------------------------

def test_a_trickle_of_one_byte_a_second_is_cut_off_at_the_deadline(target: Target) -> None:
    """Pyro5's multiplex server restarts its timeout at every byte: a trickle held it as long as it liked."""
    handshake = connect_message(target.object_id)
    with watched(target), contextlib.ExitStack() as stack:
        trickles = [stack.enter_context(_connect(target)) for _ in range(10)]
        started = time.monotonic()
        cut_off: list[float] = []
        for sent in range(len(handshake) - 1):  # never the last byte
            for sock in list(trickles):
                try:
                    sock.send(handshake[sent:sent + 1])
                except OSError:  # the server closed it
                    trickles.remove(sock)
                    cut_off.append(time.monotonic() - started)
            if not trickles or time.monotonic() - started > DEADLINE + 5:
                break
            time.sleep(0.5)  # the attack's pace (a byte every half second), not a wait for the server
        assert len(cut_off) == 10, f"{len(trickles)} trickling connections still open"
        assert DEADLINE - 1 < max(cut_off) < DEADLINE + 2.5
    assert "within 5 s of its first byte" in "\n".join(target.process.output)


def test_a_thousand_one_byte_connections_are_closed_at_the_deadline_and_hold_nobody_up(target: Target) -> None:
    with watched(target), contextlib.ExitStack() as stack:
        stalled = [stack.enter_context(_connect(target)) for _ in range(1000)]
        for sock in stalled:
            sock.send(b"P")
        started = time.monotonic()
        assert all(closed_by_server(sock, DEADLINE + 5) for sock in stalled)
        assert time.monotonic() - started < DEADLINE + 5


def test_silent_connections_cost_nothing(target: Target) -> None:
    with watched(target), contextlib.ExitStack() as stack:
        for _ in range(500):
            stack.enter_context(_connect(target))
        time.sleep(1.0)  # the canary renews ten times while they sit there


# -- bombs before the handshake --------------------------------------------------------------------------

def test_a_compressed_handshake_is_refused_unread(target: Target) -> None:
    """A 4 KB zlib bomb inflating to 256 MiB held the lookup service 8.8 s at 2 GB."""
    bomb = deflated(bytes(256 * 1024 * 1024))
    with watched(target):
        for _ in range(20):
            with _connect(target) as sock:
                sock.sendall(message(Pyro5.protocol.MSG_CONNECT, bomb[:4000], flags=Pyro5.protocol.FLAGS_COMPRESSED))
                refused = read_message(sock)
                assert refused is not None and refused.type == Pyro5.protocol.MSG_CONNECTFAIL
                assert "compressed data is refused before the handshake" in answer_text(refused)


def test_a_large_handshake_and_a_marshal_one_are_refused_by_name(target: Target) -> None:
    """A 58-byte marshal message claiming a list of 2**31-1 items stalled a server 5 s, every time."""
    claim = b"[" + (2**31 - 1).to_bytes(4, "little")  # marshal's list of that many items
    with watched(target):
        for _ in range(20):
            with _connect(target) as sock:
                sock.sendall(message(Pyro5.protocol.MSG_CONNECT, claim, serializer=MARSHAL))
                refused = read_message(sock)
                assert refused is not None and refused.type == Pyro5.protocol.MSG_CONNECTFAIL
                assert "marshal is refused" in answer_text(refused)
            with _connect(target) as sock:
                sock.sendall(message(Pyro5.protocol.MSG_CONNECT, serpent_bomb(2 * 1024 * 1024))[:4096])
                refused = read_message(sock)
                assert refused is not None and "before the handshake" in answer_text(refused)


# -- bombs after a good handshake -----------------------------------------------------------------------

def test_a_decompression_bomb_after_the_handshake_is_inflated_only_to_the_cap(target: Target) -> None:
    bomb = deflated(bytes(256 * 1024 * 1024))  # 256 MiB of zeros in about 255 KB
    with watched(target):
        for _ in range(10):
            with greeted(target.port, target.object_id) as sock:
                sock.sendall(message(Pyro5.protocol.MSG_INVOKE, bomb[:60_000], flags=Pyro5.protocol.FLAGS_COMPRESSED))
                refused = read_message(sock)
                assert refused is not None and refused.flags & Pyro5.protocol.FLAGS_EXCEPTION
                assert f"inflating beyond {SERPENT_CAP} bytes" in answer_text(refused)


@pytest.mark.parametrize("serializer", [SERPENT, JSON, MSGPACK], ids=["serpent", "json", "msgpack"])
def test_parse_bombs_at_the_cap_from_four_clients_at_once_hold_nobody_up(target: Target, serializer: int) -> None:
    """2 MiB of serpent stalled a server 2.9 s at 1 GB; at the cap, the costliest parse is a few tens of ms,
    and only one such runs at a time. Each bomb is answered with an error naming it, and its connection
    closed: the bombers connect again."""
    bomb = {SERPENT: lambda: serpent_bomb(SERPENT_CAP), JSON: lambda: json_bomb(JSON_CAP),
            MSGPACK: lambda: msgpack_bomb(MSGPACK_CAP)}[serializer]()
    answered = [0] * 4
    failures: list[BaseException] = []

    def one(index: int) -> None:
        with greeted(target.port, target.object_id, serializer) as sock:
            sock.sendall(message(Pyro5.protocol.MSG_INVOKE, bomb, serializer=serializer))
            received = read_message(sock)
            assert received is not None and received.flags & Pyro5.protocol.FLAGS_EXCEPTION
            assert "malformed" in answer_text(received)
            answered[index] += 1

    def bomber(index: int) -> None:
        try:
            for_seconds(3.0, lambda: one(index))
        except BaseException as exc:  # reported by the test, not lost in a thread
            failures.append(exc)

    with watched(target):
        bombers = [threading.Thread(target=bomber, args=(index,)) for index in range(4)]
        for thread in bombers:
            thread.start()
        for thread in bombers:
            thread.join(30)
    assert not failures, failures
    assert all(answered), answered
    print(f"{sum(answered)} bombs of {len(bomb) // 1024} KiB parsed")


def test_a_message_over_the_cap_is_refused_from_its_header(target: Target) -> None:
    with watched(target):
        for claimed in (SERPENT_CAP + 1, 2**31, 2**32 - 1):
            with greeted(target.port, target.object_id) as sock:
                header = bytearray(message(Pyro5.protocol.MSG_INVOKE, b"")[:40])
                header[12:16] = claimed.to_bytes(4, "big")
                sock.sendall(bytes(header))
                refused = read_message(sock)
                assert refused is not None and f"message of {claimed} bytes" in answer_text(refused)
                assert closed_by_server(sock, 5)


def test_a_flood_of_connections_from_one_address_is_refused_past_its_limit(
        target: Target, open_files_for_many_clients: None) -> None:
    per_host = FrameLimits().connections_per_host
    with watched(target), contextlib.ExitStack() as stack:
        flood = [stack.enter_context(_connect(target)) for _ in range(per_host + 100)]
        for sock in flood:
            sock.send(b"P")  # each holds its place with a message begun
        refused = [sock for sock in flood[-100:] if closed_by_server(sock, 5)]
        assert len(refused) == 100  # the canary's own connection and the flood's first ones fill the rest
    assert "the most one address may" in "\n".join(target.process.output)
