"""The async renewal manager and listeners on the loop: :class:`AsyncLeaseRenewalManager`, :func:`on_loop`.

The manager keeps leases alive on the threads of a
:class:`~landlord.LeaseRenewalManager`, as that one does, and tells its
listeners (plain callables or coroutine functions, :data:`AsyncListener`) on
the event loop, never blocking either side (:func:`on_loop`). Failed
listeners are logged on ``landlord.aio``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, TypeVar

from ..holder.renewal import LeaseRenewalManager
from ..holder.schedule import LeaseRenewalEvent
from ..lease import Lease
from .leases import cancel, check_lease
from .transport import CallPool, check_timeout, pool_of

__all__ = ["AsyncLeaseRenewalManager", "AsyncListener", "on_loop"]

log = logging.getLogger("landlord.aio")  # its name before the package was split

T = TypeVar("T")

AsyncListener = Callable[[LeaseRenewalEvent], object]
"""A renewal listener for :class:`AsyncLeaseRenewalManager`: a plain callable or a coroutine
function, called on the event loop with the :class:`~landlord.LeaseRenewalEvent`."""


# -- listeners on the loop ---------------------------------------------------------------------


def on_loop(listener: Callable[[T], object], loop: asyncio.AbstractEventLoop,
            tasks: set[asyncio.Future[Any]]) -> Callable[[T], None]:
    """A callback for another thread that runs ``listener`` on ``loop``, never blocking either:
    a plain callable is called there; what it returns, if awaitable (a coroutine function's
    coroutine), runs as a task of the loop, kept in ``tasks`` until done. An exception is logged.
    A loop already closed drops the call, with a line at DEBUG.
    """
    def run(item: T) -> None:
        try:
            outcome = listener(item)
        except Exception:
            log.exception("an asyncio listener failed on %r", item)
            return
        if isinstance(outcome, Awaitable):
            task = asyncio.ensure_future(outcome)
            tasks.add(task)
            task.add_done_callback(functools.partial(_done, tasks, item))

    def threadsafe(item: T) -> None:
        try:
            loop.call_soon_threadsafe(run, item)
        except RuntimeError:  # the loop is closed: nobody is left to tell
            log.debug("event loop closed; %r not told", item)

    return threadsafe


def _done(tasks: set[asyncio.Future[Any]], item: object, task: asyncio.Future[Any]) -> None:
    tasks.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("an asyncio listener failed on %r", item, exc_info=task.exception())


# -- the renewal manager -----------------------------------------------------------------------


class AsyncLeaseRenewalManager:
    """A :class:`~landlord.LeaseRenewalManager` for asyncio: it keeps leases alive on its own
    threads, as that one does, and tells its listeners on the event loop.

    Make it on the loop that is to hear of its leases (``async with
    AsyncLeaseRenewalManager() as renewals:``). :meth:`renew_for`,
    :meth:`renew_until`, :meth:`remove` and the others that change what is
    managed only take the manager's lock for a moment (no remote call), so
    they are plain methods; :meth:`cancel` calls the landlord and is awaited.

    Listeners (``listener``, ``on_desired_expiration``) may be plain callables
    or coroutine functions: each is called on the loop with the
    :class:`~landlord.LeaseRenewalEvent` (a coroutine then runs as a task), never
    on the manager's threads and never blocking them. :meth:`aclose` waits for
    listener tasks still running.

    Args:
        pool: the :class:`CallPool` :meth:`cancel` goes through (default: the loop's shared one).
        options: the :class:`~landlord.LeaseRenewalManager`'s own (``clock``,
            ``renew_after``, ``batch_window``, ``retry_initial``, ``retry_max``,
            ``max_batch``, ``workers``, ``name``, ``revocations``).

    Raises:
        RuntimeError: no event loop is running in this thread.
        TypeError, ValueError: as :class:`~landlord.LeaseRenewalManager` (an unknown option is a TypeError).
    """

    def __init__(self, *, pool: CallPool | None = None, **options: Any) -> None:
        self._loop = asyncio.get_running_loop()
        self._pool = pool if pool is None else pool_of(pool)
        self._tasks: set[asyncio.Future[Any]] = set()
        self._manager = LeaseRenewalManager(**options)
        self._closed = False

    @property
    def manager(self) -> LeaseRenewalManager:
        """The thread-based manager underneath (for :class:`lookup.aio` and other wrappers)."""
        return self._manager

    def _wrap(self, listener: AsyncListener | None, name: str) -> Callable[[LeaseRenewalEvent], None] | None:
        if listener is None:
            return None
        if not callable(listener):
            raise TypeError(f"{name} must be callable or None, got {type(listener).__name__}")
        return on_loop(listener, self._loop, self._tasks)

    def renew_for(self, lease: Lease, duration: float, listener: AsyncListener | None = None, *,
                  renew_duration: float | None = None, on_desired_expiration: AsyncListener | None = None) -> None:
        """Keep ``lease`` alive ``duration`` more seconds (``FOREVER``: until removed); see
        :meth:`LeaseRenewalManager.renew_for`. The listeners are told on the loop.

        Raises:
            TypeError: ``lease`` is not a Lease, or a listener is not callable.
            ValueError: ``duration`` negative, NaN, ``ANY`` or not a number; a bad ``renew_duration``.
            RuntimeError: the manager is closed.
        """
        self._manager.renew_for(lease, duration, self._wrap(listener, "listener"), renew_duration=renew_duration,
                                on_desired_expiration=self._wrap(on_desired_expiration, "on_desired_expiration"))

    def renew_until(self, lease: Lease, expiration: float, listener: AsyncListener | None = None, *,
                    renew_duration: float | None = None, on_desired_expiration: AsyncListener | None = None) -> None:
        """Keep ``lease`` alive until the wall-clock time ``expiration``; see
        :meth:`LeaseRenewalManager.renew_until`. The listeners are told on the loop.

        Raises:
            TypeError: ``lease`` is not a Lease, or a listener is not callable.
            ValueError: ``expiration`` NaN, ``-inf`` or not a number; a bad ``renew_duration``.
            RuntimeError: the manager is closed.
        """
        self._manager.renew_until(lease, expiration, self._wrap(listener, "listener"),
                                  renew_duration=renew_duration,
                                  on_desired_expiration=self._wrap(on_desired_expiration, "on_desired_expiration"))

    def remove(self, lease: Lease) -> None:
        """Stop managing ``lease`` without cancelling it (no listener is told).

        Raises:
            TypeError: not a Lease.
            UnknownLeaseError: not managed here.
        """
        self._manager.remove(lease)

    async def cancel(self, lease: Lease, *, timeout: float | None = None) -> None:
        """Stop managing ``lease``, then cancel it at its landlord (it is removed even if that fails).

        Raises:
            TypeError: not a Lease.
            ValueError: a bad ``timeout``.
            UnknownLeaseError: not managed here (it is not cancelled), or its landlord no longer knows it.
            LeaseError, Pyro5.errors.CommunicationError: as :meth:`Lease.cancel`.
        """
        check_lease(lease)
        check_timeout(timeout)
        self._manager.remove(lease)
        await cancel(lease, timeout=timeout, pool=self._pool)

    def get_expiration(self, lease: Lease) -> float:
        """The desired expiration of a managed lease (wall clock); see :meth:`LeaseRenewalManager.get_expiration`."""
        return self._manager.get_expiration(lease)

    def set_expiration(self, lease: Lease, expiration: float) -> None:
        """Change the desired expiration of a managed lease; see :meth:`LeaseRenewalManager.set_expiration`."""
        self._manager.set_expiration(lease, expiration)

    def clear(self) -> None:
        """Stop managing every lease, cancelling none (no listener is told)."""
        self._manager.clear()

    def __len__(self) -> int:
        return len(self._manager)

    async def aclose(self) -> None:
        """Stop the manager's threads (off the loop: a renewal in flight is waited for) and wait
        for listener tasks still running. Safe to call more than once."""
        if not self._closed:
            self._closed = True
            await asyncio.to_thread(self._manager.close)
        while self._tasks:  # a listener told as the manager stopped may have started one more
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def __aenter__(self) -> AsyncLeaseRenewalManager:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<AsyncLeaseRenewalManager {'closed' if self._closed else f'{len(self)} leases'}>"
