"""The guarded server's workers (:mod:`~landlord.transport.frameserver`): how a whole message is served.

A worker inflates a message (capped), parses it and calls the object through the
daemon's own code (Pyro5's ``_handshake`` and ``handleRequest``), then sends the
answer without blocking; what the socket does not take at once it hands back to the
gathering thread, which writes it as the client reads it. Messages larger than
:data:`~landlord.transport.budget.SMALL_FRAME` share one worker of their own, so at
most one expensive parse holds the GIL at a time and small calls (renewals) never
queue behind large ones.

A connection is one worker's while its message is served: the gathering thread does
not read it meanwhile, and takes it back through ``finished`` (or, at the common end
of a call, the worker watches it again itself: :meth:`FrameWorkers._read_on`).
"""

from __future__ import annotations

import collections
import logging
import queue
import selectors
import ssl
import threading
import time
from collections.abc import Callable

import Pyro5.api
import Pyro5.errors

from .budget import SMALL_FRAME
from .connection import FramedConnection, send_some
from .framing import Frame, FrameLimits, FrameRefused, inflate
from .refusals import Refusals, refusal_message

__all__ = ["FrameWorkers", "WORKERS", "check_workers"]

log = logging.getLogger("landlord.frameserver")  # the server's: these were its methods

WORKERS = 16                 # workers for small messages: enough that calls waiting on a store or etcd hold no one up
_REST_AFTER = 0.02           # a large message that took longer than this makes its worker rest
_MOST_REST = 0.1             # the longest the large-message worker rests after a message

_Item = tuple[FramedConnection, Frame] | None
_Lane = queue.SimpleQueue[_Item]


class _Crew:
    """The small-message workers' lane: a message wakes exactly one idle worker, the last to go idle.

    A :class:`queue.SimpleQueue` waited on by many threads wakes two of them per message (a getter
    that takes an item lets the next waiter in, which finds nothing and sleeps again): a thread
    switch per call for nothing. Here each idle worker waits on a lock of its own.
    """

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._idle: list[_Hand] = []                          # the last to go idle is woken first: its cache is warm
        self._waiting: collections.deque[_Item] = collections.deque()  # messages no worker was idle for

    def put(self, item: _Item) -> None:
        """Give ``item`` to an idle worker, or keep it for the first to finish."""
        with self._mutex:
            if not self._idle:
                self._waiting.append(item)
                return
            hand = self._idle.pop()
        hand.item = item
        hand.wake.release()

    def get(self, hand: _Hand) -> _Item:
        """The next item for the worker ``hand``, waiting for one as long as it takes."""
        with self._mutex:
            if self._waiting:
                return self._waiting.popleft()
            self._idle.append(hand)
        hand.wake.acquire()
        return hand.item


class _Hand:
    """One worker's place in a :class:`_Crew`: the lock it waits on (held while it has nothing) and what it is given."""

    def __init__(self) -> None:
        self.wake = threading.Lock()
        self.wake.acquire()
        self.item: _Item = None


def check_workers(workers: object) -> int:
    """``workers`` if it is a number of workers for small messages.

    Raises:
        ValueError: it is not a positive int.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    return workers


class FrameWorkers:
    """Threads serving whole messages: ``workers`` for small ones, one for large ones. They start at once.

    Args:
        daemon: whose code serves each message.
        limits: the caps a message is inflated under.
        selector: the gathering thread's, where a worker watches a connection again.
        refusals: where a message refused when inflated, or that does not parse, is counted.
        finished: takes a connection back to the gathering thread (called on the worker).
        stopping: whether the server is shutting down (a worker then serves nothing more).
        workers: threads for small messages.

    Raises:
        ValueError: ``workers`` is not a positive int.
    """

    def __init__(self, daemon: Pyro5.api.Daemon, limits: FrameLimits, selector: selectors.BaseSelector,
                 refusals: Refusals, finished: Callable[[FramedConnection], None], stopping: Callable[[], bool],
                 workers: int = WORKERS) -> None:
        check_workers(workers)
        self._daemon = daemon
        self._limits = limits
        self._selector = selector
        self._refusals = refusals
        self._finished = finished
        self._stopping = stopping
        self._quick = _Crew()
        self._bulk: _Lane = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, args=(self._crew_member(),), name=f"frames-{i}",
                                          daemon=True) for i in range(workers)]
        self._threads.append(threading.Thread(target=self._work, args=(self._bulk.get,), name="frames-large",
                                              daemon=True))
        for thread in self._threads:
            thread.start()

    def serve(self, conn: FramedConnection, frame: Frame) -> None:
        """Hand a whole message to a worker: a small one to the many, a large one to the one."""
        if len(frame.raw) <= SMALL_FRAME:
            self._quick.put((conn, frame))
        else:
            self._bulk.put((conn, frame))

    def close(self) -> None:
        """Tell every worker to stop once it is done with what it has (nothing queued after is served)."""
        for _ in range(len(self._threads) - 1):
            self._quick.put(None)
        self._bulk.put(None)

    def _crew_member(self) -> Callable[[], _Item]:
        """How one small-message worker takes its next item."""
        hand = _Hand()
        return lambda: self._quick.get(hand)

    def _work(self, take: Callable[[], _Item]) -> None:
        paced = take == self._bulk.get
        while True:
            item = take()
            if item is None or self._stopping():
                return
            conn, frame = item
            started = time.monotonic()
            self._serve_safely(conn, frame)
            if not self._read_on(conn):
                self._finished(conn)
            if paced:
                # A parse holds the GIL from start to end, and with a next large message ready this worker
                # would start its parse before a small call that waited through this one got the GIL.
                # After a costly message it rests as long as it worked, so that a renewal waits behind one
                # such parse at most, never two; a batch of a thousand renewals (a few ms) takes no rest.
                took = time.monotonic() - started
                if took > _REST_AFTER:
                    time.sleep(min(took, _MOST_REST))

    def _serve_safely(self, conn: FramedConnection, frame: Frame) -> None:
        """Serve one message and send what the socket takes of its answer; whatever the message
        does, the worker goes on (a connection that failed is marked to close)."""
        try:
            self._serve(conn, frame)
        except Exception as exc:
            log.warning("error serving %s: %s", conn.peer(), exc)
            conn.closing = True
        conn.load(b"")  # an idle connection keeps nothing of its last message
        if conn.outgoing and not send_some(conn):
            conn.closing = True
            conn.outgoing.clear()

    def _read_on(self, conn: FramedConnection) -> bool:
        """The common end of a call, taken by the worker itself, saving the gathering thread a turn: the
        answer is sent whole and nothing more has come, so the connection is simply watched again.
        Anything else (an answer to finish writing, bytes sent ahead, a connection to close) is left
        to the gathering thread. Whether it was done here.
        """
        if conn.outgoing or conn.closing or conn.reserved or conn.gatherer.buffered or self._stopping():
            return False
        if isinstance(conn.sock, ssl.SSLSocket) and conn.sock.pending():
            return False
        try:  # epoll takes a registration from any thread; the connection is no one else's while served
            self._selector.register(conn.sock, selectors.EVENT_READ, conn)
        except (KeyError, ValueError, OSError):
            return False
        return True

    def _serve(self, conn: FramedConnection, frame: Frame) -> None:
        try:
            frame = inflate(frame, self._limits)
        except FrameRefused as refusal:
            self._refusals.count(refusal.reason, f"refused {conn.peer()}: {refusal}")
            conn.outgoing += refusal_message(conn.gatherer, refusal)
            conn.closing = True
            return
        conn.load(frame.raw)
        if not conn.gatherer.is_greeted:
            if self._daemon._handshake(conn, denied_reason=frame.denial):
                conn.gatherer.greeted()
            else:
                conn.closing = True
            return
        try:
            self._daemon.handleRequest(conn)
        except Pyro5.errors.SerializeError as exc:  # answered, by Pyro5: then closed, as any broken rule
            self._refusals.count("malformed", f"closed {conn.peer()} after answering: {exc}")
            conn.closing = True
        except (OSError, Pyro5.errors.ConnectionClosedError, Pyro5.errors.SecurityError):
            conn.closing = True
        except Pyro5.errors.TimeoutError as exc:
            log.warning("error during handleRequest: %s", exc)
            conn.closing = True
