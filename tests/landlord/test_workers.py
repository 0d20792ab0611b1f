"""landlord.transport.workers: how the guarded server's workers serve a whole message, with a
stand-in for the daemon's code (socket pairs for connections; no server, no gathering thread)."""

from __future__ import annotations

import logging
import queue
import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import Pyro5.errors
import Pyro5.protocol
import Pyro5.serializers
import pytest

from landlord.transport.budget import SMALL_FRAME
from landlord.transport.connection import FramedConnection
from landlord.transport.framing import FLAGS_COMPRESSED, MSG_CONNECT, MSG_INVOKE, SERPENT, Frame, FrameLimits
from landlord.transport.refusals import Refusals
from landlord.transport.workers import WORKERS, FrameWorkers, _Crew, _Hand, check_workers

LOG = logging.getLogger("tests.workers")


class Daemon:
    """What a FrameWorkers asks of a Pyro5 daemon: a handshake, and a request answered."""

    def __init__(self) -> None:
        self.served: list[tuple[str, str, bytes]] = []  # (what, on which thread, the message as read)
        self.handshake_ok = True
        self.failure: BaseException | None = None
        self.answer = b"the answer"
        self.taking = 0.0  # seconds each request takes
        self.times: list[tuple[float, float]] = []  # when each request began and ended
        self.denied_reason: str | None = None

    def _handshake(self, conn: FramedConnection, denied_reason: str | None = None) -> bool:
        self.served.append(("handshake", threading.current_thread().name, conn.recv(5)))
        self.denied_reason = denied_reason
        return self.handshake_ok

    def handleRequest(self, conn: FramedConnection) -> None:  # noqa: N802 (Pyro5's name)
        started = time.monotonic()
        self.served.append(("request", threading.current_thread().name, conn.recv(5)))
        time.sleep(self.taking)
        self.times.append((started, time.monotonic()))
        conn.send(self.answer)
        if self.failure is not None:
            raise self.failure


class Bench:
    """A FrameWorkers with a stand-in daemon, and connections to hand it."""

    def __init__(self, workers: int = 2) -> None:
        self.daemon = Daemon()
        self.selector = selectors.DefaultSelector()
        self.refusals = Refusals(LOG)
        self.finished: queue.SimpleQueue[FramedConnection] = queue.SimpleQueue()
        self.stopping = False
        before = set(threading.enumerate())
        self.workers = FrameWorkers(self.daemon, FrameLimits(), self.selector, self.refusals,  # type: ignore[arg-type]
                                    self.finished.put, lambda: self.stopping, workers)
        self.threads = set(threading.enumerate()) - before
        self.pairs: list[tuple[FramedConnection, socket.socket]] = []

    def connection(self, greeted: bool = True) -> tuple[FramedConnection, socket.socket]:
        ours, theirs = socket.socketpair()
        ours.setblocking(False)
        conn = FramedConnection(ours, ("192.0.2.1", 1000 + len(self.pairs)), FrameLimits())
        if greeted:
            conn.gatherer.greeted()
        self.pairs.append((conn, theirs))
        return conn, theirs

    def close(self) -> None:
        self.workers.close()
        for thread in self.threads:
            thread.join(5)
        for conn, theirs in self.pairs:
            conn.close()
            theirs.close()
        self.selector.close()


@pytest.fixture
def bench() -> Iterator[Bench]:
    made = Bench()
    yield made
    made.close()


def frame(size: int = 100, msgtype: int = MSG_INVOKE, *, flags: int = 0, seq: int = 1,
          denial: str | None = None) -> Frame:
    raw = b"frame" + b"." * (size - 5)
    return Frame(raw, msgtype, SERPENT, flags, seq, size - 40, 0, denial)


def eventually(condition: Callable[[], Any], timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.005)
    return True


def watched(bench: Bench, conn: FramedConnection) -> bool:
    try:
        return bench.selector.get_key(conn.sock).data is conn
    except KeyError:
        return False


@pytest.mark.parametrize("workers", [0, -1, True, 1.5, "2"])
def test_a_bad_number_of_workers_is_refused(workers: object) -> None:
    with pytest.raises(ValueError, match="positive int"):
        check_workers(workers)
    assert check_workers(3) == 3 and WORKERS == 16


def test_workers_for_small_messages_and_one_for_large_ones_start_at_once() -> None:
    bench = Bench(workers=3)
    try:
        assert sorted(thread.name for thread in bench.threads) == ["frames-0", "frames-1", "frames-2", "frames-large"]
        assert all(thread.daemon and thread.is_alive() for thread in bench.threads)
    finally:
        bench.close()
    assert not any(thread.is_alive() for thread in bench.threads)  # closed: every one ends


def test_a_call_answered_whole_is_watched_again_by_the_worker_itself(bench: Bench) -> None:
    conn, theirs = bench.connection()
    bench.workers.serve(conn, frame())
    assert theirs.recv(100) == b"the answer"
    assert eventually(lambda: watched(bench, conn))
    assert bench.finished.empty() and not conn.closing and not conn.outgoing
    [(what, thread, read)] = bench.daemon.served
    assert (what, read) == ("request", b"frame") and thread.startswith("frames-") and thread != "frames-large"
    with pytest.raises(Pyro5.errors.ConnectionClosedError):  # an idle connection keeps nothing of its message
        conn.recv(1)


def test_a_large_message_goes_to_the_large_messages_worker(bench: Bench) -> None:
    conn, theirs = bench.connection()
    bench.workers.serve(conn, frame(SMALL_FRAME))
    assert theirs.recv(100) == b"the answer"
    bench.workers.serve(conn, frame(SMALL_FRAME + 1))
    assert theirs.recv(100) == b"the answer"
    assert [thread for _, thread, _ in bench.daemon.served][1] == "frames-large"
    assert bench.daemon.served[0][1] != "frames-large"


def test_after_a_costly_large_message_its_worker_rests_as_long_at_most_a_tenth_of_a_second(bench: Bench) -> None:
    bench.daemon.taking = 0.05
    first, first_client = bench.connection()
    second, second_client = bench.connection()
    bench.workers.serve(first, frame(SMALL_FRAME + 1))
    bench.workers.serve(second, frame(SMALL_FRAME + 1))
    assert first_client.recv(100) and second_client.recv(100)
    (_, first_end), (second_start, _) = bench.daemon.times
    assert second_start - first_end >= 0.045  # rested about as long as it worked


def test_small_messages_are_served_side_by_side_without_rest(bench: Bench) -> None:
    bench.daemon.taking = 0.2
    clients = []
    for _ in range(2):
        conn, theirs = bench.connection()
        bench.workers.serve(conn, frame())
        clients.append(theirs)
    assert all(client.recv(100) for client in clients)
    (first_start, first_end), (second_start, _) = sorted(bench.daemon.times)
    assert second_start < first_end  # two workers: the second did not wait for the first


def test_a_handshake_greets_the_connection_or_closes_it(bench: Bench) -> None:
    conn, _ = bench.connection(greeted=False)
    bench.workers.serve(conn, frame(msgtype=MSG_CONNECT, denial="no marshal here"))
    assert eventually(lambda: watched(bench, conn))
    assert conn.gatherer.is_greeted and bench.daemon.denied_reason == "no marshal here"
    refused, _ = bench.connection(greeted=False)
    bench.daemon.handshake_ok = False
    bench.workers.serve(refused, frame(msgtype=MSG_CONNECT))
    assert bench.finished.get(timeout=5) is refused
    assert refused.closing and not refused.gatherer.is_greeted and not watched(bench, refused)


def test_a_body_that_does_not_parse_is_answered_counted_and_its_connection_closed(bench: Bench) -> None:
    bench.daemon.failure = Pyro5.errors.SerializeError("malformed serpent message: SyntaxError")
    conn, theirs = bench.connection()
    bench.workers.serve(conn, frame())
    assert bench.finished.get(timeout=5) is conn
    assert conn.closing and bench.refusals.counts == {"malformed": 1}
    assert theirs.recv(100) == b"the answer"  # Pyro5's, naming the error


@pytest.mark.parametrize("failure", [OSError("broken"), Pyro5.errors.ConnectionClosedError("gone"),
                                     Pyro5.errors.SecurityError("no"), Pyro5.errors.TimeoutError("slow"),
                                     RuntimeError("a bug")])
def test_a_call_that_fails_closes_its_connection_and_the_worker_goes_on(bench: Bench,
                                                                        failure: BaseException) -> None:
    bench.daemon.failure = failure
    conn, _ = bench.connection()
    bench.workers.serve(conn, frame())
    assert bench.finished.get(timeout=5) is conn and conn.closing
    assert not bench.refusals.counts
    bench.daemon.failure = None
    other, theirs = bench.connection()
    bench.workers.serve(other, frame())
    assert theirs.recv(100) == b"the answer"


def test_compressed_data_that_does_not_inflate_is_refused_by_name_to_the_client(bench: Bench) -> None:
    conn, theirs = bench.connection()
    header = bytes(Pyro5.protocol.SendingMessage(MSG_INVOKE, 0, 9, SERPENT, b"not zlib at all").data)[:40]
    conn.gatherer.feed(header, 0.0)  # the header read: the refusal is numbered as the call
    bench.workers.serve(conn, frame(flags=FLAGS_COMPRESSED, seq=9))
    assert bench.finished.get(timeout=5) is conn and conn.closing
    assert bench.refusals.counts == {"malformed": 1}
    assert not bench.daemon.served
    received = Pyro5.protocol.ReceivingMessage(theirs.recv(40, socket.MSG_WAITALL))
    received.add_payload(theirs.recv(received.data_size, socket.MSG_WAITALL))
    assert received.seq == 9 and received.flags & Pyro5.protocol.FLAGS_EXCEPTION
    error = Pyro5.serializers.serializers_by_id[SERPENT].loads(bytes(received.data))
    assert "does not inflate" in str(error)


def test_an_answer_the_socket_does_not_take_whole_is_handed_back_to_write(bench: Bench) -> None:
    bench.daemon.answer = b"x" * 50_000_000
    conn, _ = bench.connection()
    bench.workers.serve(conn, frame())
    assert bench.finished.get(timeout=5) is conn
    assert 0 < len(conn.outgoing) < 50_000_000 and not conn.closing and not watched(bench, conn)


def test_an_answer_to_a_client_gone_is_dropped_and_its_connection_closed(bench: Bench) -> None:
    conn, theirs = bench.connection()
    theirs.close()
    bench.workers.serve(conn, frame())
    assert bench.finished.get(timeout=5) is conn
    assert conn.closing and not conn.outgoing


@pytest.mark.parametrize("busy", ["reserved", "buffered"])
def test_a_connection_with_more_under_way_is_handed_back(bench: Bench, busy: str) -> None:
    conn, theirs = bench.connection()
    if busy == "reserved":
        conn.reserved = SMALL_FRAME + 1  # its message's share of the large-message budget, the gatherer's to give back
    else:
        conn.gatherer.feed(b"PYRO", 0.0)  # sent ahead
    bench.workers.serve(conn, frame())
    assert bench.finished.get(timeout=5) is conn
    assert theirs.recv(100) == b"the answer" and not conn.closing and not watched(bench, conn)


def test_shutting_down_a_worker_serves_nothing_more(bench: Bench) -> None:
    bench.stopping = True
    conn, _ = bench.connection()
    bench.workers.serve(conn, frame())
    bench.workers.serve(conn, frame(SMALL_FRAME + 1))
    with pytest.raises(queue.Empty):  # the workers are gone: nothing comes back
        bench.finished.get(timeout=0.3)
    assert not bench.daemon.served


def test_a_message_wakes_only_the_last_worker_to_go_idle_and_one_none_is_idle_for_waits() -> None:
    crew, first, last = _Crew(), _Hand(), _Hand()
    for hand in (first, last):  # idle in this order, as a worker's get does before it waits
        crew._idle.append(hand)
    crew.put(None)
    assert last.wake.acquire(blocking=False) and last.item is None  # woken: its lock was released
    assert not first.wake.acquire(blocking=False)                   # still waiting: never woken for nothing
    crew.put(None)
    assert first.wake.acquire(blocking=False)
    crew.put(None)  # no one idle: kept, and taken by the next worker to finish without waiting
    assert crew.get(_Hand()) is None and not crew._idle
