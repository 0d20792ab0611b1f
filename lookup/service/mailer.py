"""The lookup service's delivery of remote events: :class:`EventMailer`.

The :class:`EventMailer` delivers each listener's events
(:class:`~lookup.events.ServiceEvent`) in order, on threads of its own, so a
slow or dead listener never holds up a request thread of the lookup service,
nor another listener's events (:mod:`lookup.service.outbox` decides what goes
out when); a :class:`DeliveryObserver` is told how deliveries go.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import functools
import logging
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import Pyro5.errors
from Pyro5 import config as pyro_config

from landlord import SYSTEM_CLOCK, Clock, discard_proxy, proxy_for, timeout_within
from landlord.aio import StreamCalls

from ..events import ServiceEvent
from .outbox import GAVE_UP, Attempt, MailLimits, Outbox

__all__ = ["EventMailer", "DeliveryObserver", "CONNECTIONS_PER_LISTENER"]

log = logging.getLogger("lookup.events")  # the name it had in lookup/events.py; logs and tests know it by it

CONNECTIONS_PER_LISTENER = 2  # calls at once to one listener URI (registrations may share one)


class DeliveryObserver:
    """Told how a mailer's deliveries go (for metrics: see :class:`lookup.service.server.LookupMetrics`);
    every method does nothing unless overridden. Called on a mailer thread, once per attempt:
    it must be quick, and what it raises is logged and changes no delivery."""

    def delivered(self) -> None:
        """An event reached its listener (one whose ``notify`` raised counts: it was reached)."""

    def failed(self) -> None:
        """An attempt could not reach the listener (it is tried again, unless given up on)."""

    def gave_up(self) -> None:
        """A listener was given up on after its last retry: its registration ends."""

    def dropped(self) -> None:
        """An event was dropped undelivered: its listener's queue was full, its deadline
        passed, or its listener was given up on."""


class EventMailer:
    """Delivers events to listeners: in order per registration, never on the caller's thread,
    and no listener, however slow or dead, holds up another's events.

    Each registration (``key``) has its own queue in an :class:`~lookup.service.outbox.Outbox`,
    which says what to send when (see :mod:`lookup.service.outbox`: bounded queues,
    deadlines, slots kept for live listeners, retries, giving up). A listener
    that cannot be reached is tried again after each delay in ``retry_delays``;
    after the last, its mail is dropped and ``on_undeliverable(key)`` is
    called, once. An exception raised by the listener's own ``notify`` is
    logged and the event counts as delivered.

    Three threads, made at the first post: one that takes the attempts due
    from the outbox (on ``clock``), one asyncio loop that makes every remote
    call over asyncio streams (``landlord.aio.StreamCalls``: plain ``PYRO:``
    listeners, no TLS), so a dead listener costs a socket, never a
    thread, and a pool of ``workers`` threads for the rest (in-process
    listeners, and every listener when TLS is in force:
    then no more attempts are out at once than there are workers, the same
    share of them kept for live listeners).

    Args:
        on_undeliverable: called with the key of a listener given up on (on the
            mailer's pump thread, under no lock of the mailer's).
        workers: threads for the calls that do not go over streams.
        retry_delays: seconds to wait before each retry of an unreachable
            listener (default: ``limits.retry_delays``).
        clock: what retry pauses and event deadlines are measured on.
        observer: told of each delivery, failed attempt, listener given up on and
            event dropped (a :class:`DeliveryObserver`); the attribute ``observer`` may be set later.
        limits: the bounds on queues, deadlines, timeouts and attempts at once
            (default: :class:`~lookup.service.outbox.MailLimits`'s).

    Raises:
        ValueError: ``workers`` is not a positive integer, or a bad limit or delay.
        TypeError: ``limits`` is not a MailLimits.
    """

    def __init__(self, *, on_undeliverable: Callable[[Hashable], None] | None = None, workers: int = 8,
                 retry_delays: Sequence[float] | None = None, clock: Clock = SYSTEM_CLOCK,
                 observer: DeliveryObserver | None = None, limits: MailLimits | None = None) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a positive integer, got {workers!r}")
        if limits is not None and not isinstance(limits, MailLimits):
            raise TypeError(f"limits must be a MailLimits, got {type(limits).__name__}")
        limits = limits if limits is not None else MailLimits()
        if retry_delays is not None:
            limits = dataclasses.replace(limits, retry_delays=tuple(retry_delays))
        self.observer = observer
        self._on_undeliverable = on_undeliverable
        self._workers = workers
        self._clock = clock
        self._outbox = Outbox(limits)
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)     # the pump waits here for work or a retry's time
        self._settled = threading.Condition(self._lock)  # wait_idle waits here
        self._closed = False
        self._given_up: list[tuple[Hashable, BaseException | None]] = []  # for the pump to hand on
        self._finishing = 0  # listeners given up on whose on_undeliverable has not yet been called
        self._threads: list[threading.Thread] = []
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._streams = StreamCalls(connections=CONNECTIONS_PER_LISTENER)

    @property
    def limits(self) -> MailLimits:
        """The bounds in force."""
        return self._outbox.limits

    def post(self, key: Hashable, listener: Any, event: ServiceEvent) -> None:
        """Queue ``event`` for ``listener`` (a Pyro5 URI, or an object with ``notify``); never blocks."""
        with self._lock:
            if self._closed:
                return
            self._outbox.post(key, listener, event, self._clock.monotonic())
            self._tell_dropped()
            self._start()
            self._wake.notify()

    def forget(self, key: Hashable) -> None:
        """Drop the mail of a registration that has ended."""
        with self._lock:
            self._release(self._outbox.forget(key))
            self._settled.notify_all()

    def pending(self) -> int:
        """How many events wait to be delivered (being delivered included)."""
        with self._lock:
            return self._outbox.pending()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every queued event is delivered or dropped (closing drops them all), and
        ``on_undeliverable`` has been told of every listener given up on; return whether that happened."""
        with self._lock:
            return self._settled.wait_for(lambda: self._closed or (self._outbox.idle() and not self._finishing),
                                          timeout)

    def close(self) -> None:
        """Stop delivering; undelivered mail is dropped, attempts out are abandoned."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._outbox = Outbox(self._outbox.limits)  # the mail dropped
            self._wake.notify_all()
            self._settled.notify_all()
        if not self._threads:
            return  # nothing was ever posted
        pump, io = self._threads
        if pump is not threading.current_thread():
            pump.join(10)
        assert self._loop is not None
        if io is not threading.current_thread():
            asyncio.run_coroutine_threadsafe(self._abandon(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            io.join(10)
            if not io.is_alive():
                self._loop.close()
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)

    # -- the threads ------------------------------------------------------------------------

    def _start(self) -> None:
        """Under the lock: the threads, at the first post."""
        if self._threads:
            return
        self._executor = concurrent.futures.ThreadPoolExecutor(self._workers, thread_name_prefix="EventMailer-call")
        self._loop = asyncio.new_event_loop()
        self._threads = [threading.Thread(target=self._pump, name="EventMailer", daemon=True),
                         threading.Thread(target=self._loop.run_forever, name="EventMailer-io", daemon=True)]
        for thread in self._threads:
            thread.start()

    def _pump(self) -> None:
        """Send what is due and hand on the listeners given up on, then sleep until a retry's time or a change."""
        while True:
            with self._lock:
                if self._closed:
                    return
                # on the workers alone (TLS), attempts at once are as many as they are
                room = None if _streams_usable() else self._workers
                attempts = self._outbox.take(self._clock.monotonic(), room=room)
                given_up, self._given_up = self._given_up, []
                self._tell_dropped()
                self._settled.notify_all()  # events past their deadline may have gone
                if not attempts and not given_up:
                    self._clock.wait(self._wake, self._outbox.next_due())
                    continue
            for attempt in attempts:  # not under the lock: a call done at once reports at once
                self._send(attempt)
            for key, error in given_up:  # here, not on the loop: ending a registration takes the service's lock
                self._give_up(key, error)

    def _send(self, attempt: Attempt) -> None:
        """Start ``attempt``, over a stream where it can go on one, else on a worker."""
        assert self._loop is not None and self._executor is not None
        future: concurrent.futures.Future[None]
        try:
            if isinstance(attempt.listener, str) and _streams_usable():
                future = asyncio.run_coroutine_threadsafe(self._call_over_stream(attempt), self._loop)
            else:
                future = self._executor.submit(self._call_on_worker, attempt)
        except RuntimeError:  # closed meanwhile
            return
        future.add_done_callback(functools.partial(self._finished, attempt))

    async def _call_over_stream(self, attempt: Attempt) -> None:
        # wait_for bounds the wait for the listener's connection too, not only the call
        await asyncio.wait_for(self._streams.call(attempt.listener, "notify", attempt.event,
                                                  timeout=attempt.timeout), attempt.timeout)

    def _call_on_worker(self, attempt: Attempt) -> None:
        with self._lock:
            if not self._outbox.wanted(attempt.key):  # forgotten while waiting for a worker
                return
        with timeout_within(attempt.timeout):
            _call_notify(attempt.listener, attempt.event)

    def _finished(self, attempt: Attempt, future: concurrent.futures.Future[None]) -> None:
        """How ``attempt`` went, back to the outbox and its observer; a listener given up on is
        handed to the pump, which tells ``on_undeliverable``."""
        if future.cancelled():
            return  # closing
        error = future.exception()
        delivered = not isinstance(error, _UNREACHED)
        if error is not None and delivered:  # logged before its next event can go
            log.warning("the listener of registration %r raised on %r", attempt.key, attempt.event, exc_info=error)
        self._tell("delivered" if delivered else "failed")
        with self._lock:
            if self._closed:
                return
            if self._outbox.report(attempt.key, delivered, self._clock.monotonic()) == GAVE_UP:
                self._release(attempt.listener)
                self._given_up.append((attempt.key, error))
                self._finishing += 1  # idle again once told
            self._tell_dropped()
            self._wake.notify()
            self._settled.notify_all()

    async def _abandon(self) -> None:
        """On the loop, closing: cancel the calls out and close the connections."""
        calls = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in calls:
            task.cancel()
        await asyncio.gather(*calls, return_exceptions=True)
        self._streams.close()

    # -- helpers ----------------------------------------------------------------------------

    def _release(self, listener: Any) -> None:
        """Under the lock: close the connections to ``listener`` if no registration's mail goes to it any more."""
        if isinstance(listener, str) and self._loop is not None and not self._closed \
                and not self._outbox.serves(listener):
            self._loop.call_soon_threadsafe(self._streams.drop, listener)

    def _tell_dropped(self) -> None:
        """Under the lock: tell the observer of the events dropped (a full queue, a deadline, a listener gone)."""
        dropped = self._outbox.drain_dropped()
        if dropped:
            log.debug("dropped %d event(s), of registration(s) %s", len(dropped), sorted(set(map(str, dropped)))[:10])
        for _ in dropped:
            self._tell("dropped")

    def _tell(self, outcome: str) -> None:
        observer = self.observer
        if observer is None:
            return
        try:
            getattr(observer, outcome)()
        except Exception:
            log.exception("the delivery observer %r failed", observer)

    def _give_up(self, key: Hashable, error: BaseException | None) -> None:
        """On the pump: tell the observer and ``on_undeliverable`` that ``key``'s listener was given up on."""
        log.info("giving up on the listener of registration %r: %s", key, error)
        self._tell("gave_up")
        try:
            if self._on_undeliverable is not None:
                self._on_undeliverable(key)
        except Exception:
            log.exception("on_undeliverable failed for %r", key)
        finally:
            with self._lock:
                self._finishing -= 1
                self._settled.notify_all()


# what says an attempt did not reach its listener (anything else came from the listener: it was reached)
_UNREACHED = (Pyro5.errors.CommunicationError, asyncio.TimeoutError, TimeoutError, ConnectionError)


def _streams_usable() -> bool:
    """Whether calls may go over asyncio streams: no TLS (``landlord.aio.StreamCalls``'s terms)."""
    return not pyro_config.SSL


def _call_notify(listener: Any, event: ServiceEvent) -> None:
    if not isinstance(listener, str):
        listener.notify(event)
        return
    try:
        proxy_for(listener).notify(event)
    except Pyro5.errors.CommunicationError:
        discard_proxy(listener)  # reconnect on the next try
        raise
