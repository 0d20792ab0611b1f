"""Locks, semaphores and elections from asyncio: :class:`AsyncLock`, :class:`AsyncSemaphore`,
:class:`AsyncElection`.

Each wraps its threaded recipe (:class:`~landlord.Lock`, :class:`~landlord.Semaphore`,
:class:`~landlord.Election`: a :class:`~landlord.recipe.claim.Claim` each, which keeps
the lease alive and turns invalid in time, as it does for threads) and runs
the phases of its acquire: the calls (asking the landlord, making sense of the
answer, letting go) on a worker of a :class:`~landlord.aio.CallPool`, the wait
for the pushed grant on the loop, as a future the inbox's thread resolves
(:meth:`~landlord.holder.claiminbox.Expected.when_heard`). No worker waits for
a grant, and nothing blocks the loop: what runs on it (:attr:`~AsyncLock.valid`,
:attr:`~AsyncLock.token`, the start of :meth:`~AsyncLock.acquire`) takes the
claim's lock for a moment only. ::

    lock = AsyncLock(landlord_uri, "orders")
    async with lock:
        await write(lock.token, ...)      # the resource refuses an older token
    if await lock.acquire(timeout=5):
        ...
        await lock.release()

**Cancelling.** An :meth:`~AsyncLock.acquire` cancelled (or timed out) leaves
nothing held: whatever its request got (a place in line, or the name itself
if it was granted just then) is let go on the pool, once the call in flight,
if any, has ended (a call on a worker cannot be interrupted). The next
acquire or release of the same object waits for that first.

The timeout of an acquire counts on the event loop's clock; the claim's
validity, on the landlord's clock in-process, else on this process's monotonic clock.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

from ..errors import LeaseDeniedError
from ..holder.claiminbox import Expected
from ..holder.landlordlease import LandlordLease
from ..recipe.claim import DEFAULT_DURATION, Claim
from ..recipe.election import Election
from ..recipe.lock import Lock, Semaphore
from ..recipe.watch import HoldersWatch
from .renewals import on_loop
from .transport import CallPool, pool_of

__all__ = ["AsyncLock", "AsyncSemaphore", "AsyncElection", "AsyncWatch"]

log = logging.getLogger("landlord.aio")

T = TypeVar("T")


class _AsyncClaim:
    """What the three share: a threaded claim acquired and released from a loop."""

    def __init__(self, claim: Claim, pool: CallPool | None) -> None:
        if pool is not None and not isinstance(pool, CallPool):
            raise TypeError(f"pool must be a CallPool or None, got {type(pool).__name__}")
        self.claim = claim
        self._pool = pool
        self._undoing: asyncio.Future[None] | None = None  # letting go of a cancelled acquire's gains
        self._tasks: set[asyncio.Future[Any]] = set()  # listeners' coroutines running on the loop

    # -- the holder's view -----------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.claim.name

    @property
    def valid(self) -> bool:
        """Whether the name is held now (as :attr:`Claim.valid <landlord.recipe.claim.Claim.valid>`)."""
        return self.claim.valid

    @property
    def token(self) -> int | None:
        """The fencing token of the current holding while it is valid, else ``None``."""
        return self.claim.token

    @property
    def lease(self) -> LandlordLease | None:
        return self.claim.lease

    def on_lost(self, callback: Callable[[str], object]) -> None:
        """Call ``callback(reason)`` on this loop each time a holding is lost (not released): a plain
        function, or a coroutine function (run as a task). Call it from the loop.

        Raises:
            RuntimeError: no event loop is running in this thread.
        """
        self.claim.on_lost(on_loop(callback, asyncio.get_running_loop(), self._tasks))

    # -- acquiring and releasing -----------------------------------------------------------------

    async def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Hold the name: ``True`` once held, ``False`` if not within ``timeout`` seconds (``None``:
        no limit) or, not ``blocking``, if it is taken now. Cancelled, it leaves nothing held.

        Raises:
            as :meth:`Claim.acquire <landlord.recipe.claim.Claim.acquire>`.
        """
        await self._settled()
        claim, pool = self.claim, pool_of(self._pool)
        wait = claim._reserve(blocking, timeout)
        loop = asyncio.get_running_loop()
        deadline = None if wait is None or math.isinf(wait) else loop.time() + wait
        job: asyncio.Future[Any] | None = None
        try:
            job = asyncio.ensure_future(pool.run(claim._request, wait))
            asked = await asyncio.shield(job)
            if asked is None:
                return False
            lease, token, expected = asked
            if token is None:
                heard = await _heard(expected, deadline)
                job = asyncio.ensure_future(pool.run(claim._settle, lease, expected, heard))
                token = await asyncio.shield(job)
                if token is None:
                    return False
            job = asyncio.ensure_future(pool.run(claim._hold, lease, token))
            held: bool = await asyncio.shield(job)
            return held
        except BaseException as exc:
            self._undoing = asyncio.ensure_future(self._undo(job, pool))
            if not isinstance(exc, asyncio.CancelledError):
                await self._settled()  # as a thread's acquire: free again when it raises
            raise

    async def release(self) -> None:
        """Let the name go at once (as :meth:`Claim.release <landlord.recipe.claim.Claim.release>`)."""
        await self._settled()
        await pool_of(self._pool).run(self.claim.release)

    async def aclose(self) -> None:
        """Release, and close what the claim made for itself (a renewal manager, an inbox)."""
        await self._settled()
        await pool_of(self._pool).run(self.claim.close)

    async def __aenter__(self) -> Any:
        if not await self.acquire():
            raise LeaseDeniedError(f"{self.name!r} was not acquired")
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.release()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} on {self.claim!r}>"

    # -- internals ---------------------------------------------------------------------------------

    async def _settled(self) -> None:
        """Wait until a cancelled acquire's gains are let go."""
        undoing = self._undoing
        if undoing is not None:
            await asyncio.shield(undoing)
            if self._undoing is undoing:
                self._undoing = None

    async def _undo(self, job: asyncio.Future[Any] | None, pool: CallPool) -> None:
        """After an acquire failed or was cancelled: once its call in flight has ended, let go of
        whatever it got (the claim is free again)."""
        if job is not None:
            await asyncio.wait([job])
        try:
            await pool.run(self.claim.release)
        except Exception as exc:
            log.warning("could not let go of %r after an acquire was given up (%s: %s); its lease ends at "
                        "its term", self.claim, type(exc).__name__, exc)


async def _heard(expected: Expected, deadline: float | None) -> bool:
    """Wait on the loop until ``expected`` hears something (a grant, a revocation), or until
    ``deadline`` on the loop's clock: whether anything was heard."""
    loop = asyncio.get_running_loop()
    heard: asyncio.Future[None] = loop.create_future()

    def wake() -> None:  # on the thread that heard it
        try:
            loop.call_soon_threadsafe(_set, heard)
        except RuntimeError:
            pass  # the loop is closed: nobody waits

    expected.when_heard(wake)
    if deadline is None:
        await heard
        return True
    try:
        await asyncio.wait_for(heard, max(0.0, deadline - loop.time()))
    except asyncio.TimeoutError:
        return False
    return True


def _set(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class AsyncLock(_AsyncClaim):
    """A :class:`~landlord.Lock` from asyncio: ``async with lock:``, ``await lock.acquire(timeout=)``,
    ``await lock.release()``, :attr:`token`, :attr:`valid` (see the module's docstring).

    Args:
        landlord, name, duration, lock_delay, margin, value: as :class:`~landlord.Lock`'s (and
            ``renewals=``, ``inbox=``).
        pool: the pool its calls go on (``None``: the loop's shared pool).
    """

    def __init__(self, landlord: Any, name: str, *, duration: float = DEFAULT_DURATION, lock_delay: float = 0.0,
                 margin: float | None = None, value: str | None = None, pool: CallPool | None = None,
                 **more: Any) -> None:
        super().__init__(Lock(landlord, name, duration=duration, lock_delay=lock_delay, margin=margin, value=value,
                              **more), pool)

    def locked(self) -> bool:
        """Whether this object holds the lock now (:attr:`valid`)."""
        return self.valid


class AsyncSemaphore(_AsyncClaim):
    """A :class:`~landlord.Semaphore` of ``n`` places from asyncio, used as :class:`AsyncLock` is.

    Args:
        landlord, name, n, duration, lock_delay, margin, value: as :class:`~landlord.Semaphore`'s.
        pool: the pool its calls go on (``None``: the loop's shared pool).
    """

    def __init__(self, landlord: Any, name: str, n: int, *, duration: float = DEFAULT_DURATION,
                 lock_delay: float = 0.0, margin: float | None = None, value: str | None = None,
                 pool: CallPool | None = None, **more: Any) -> None:
        super().__init__(Semaphore(landlord, name, n, duration=duration, lock_delay=lock_delay, margin=margin,
                                   value=value, **more), pool)


class AsyncWatch:
    """A watch of who leads, from :meth:`AsyncElection.watch`: ``await watch.close()`` stops it."""

    def __init__(self, watch: HoldersWatch, pool: CallPool) -> None:
        self.watch, self._pool = watch, pool

    @property
    def lease(self) -> LandlordLease | None:
        return self.watch.lease

    async def close(self) -> None:
        await self._pool.run(self.watch.close)


class AsyncElection(_AsyncClaim):
    """An :class:`~landlord.Election` from asyncio: ``await election.campaign(timeout=)``,
    :attr:`leading`, ``await election.leader()``, ``await election.watch(callback)``,
    ``await election.resign()``, ``await election.hand_over(successor)``; ``async with election:``
    campaigns and resigns. Cancelled, a campaign leaves nothing held.

    Args:
        landlord, name, value, duration, lock_delay, margin: as :class:`~landlord.Election`'s.
        pool: the pool its calls go on (``None``: the loop's shared pool).
    """

    claim: Election

    def __init__(self, landlord: Any, name: str, value: str, *, duration: float = DEFAULT_DURATION,
                 lock_delay: float = 0.0, margin: float | None = None, pool: CallPool | None = None,
                 **more: Any) -> None:
        super().__init__(Election(landlord, name, value, duration=duration, lock_delay=lock_delay, margin=margin,
                                  **more), pool)

    async def campaign(self, timeout: float | None = None) -> bool:
        """Wait to lead: as :meth:`acquire` (cancelled, it leaves nothing held)."""
        return await self.acquire(timeout=timeout)

    @property
    def leading(self) -> bool:
        """Whether this candidate leads now."""
        return self.claim.leading

    async def resign(self) -> None:
        """Stop leading, or waiting to: the next candidate in line leads at once."""
        await self.release()

    async def leader(self) -> str | None:
        """The value of the candidate leading now, or ``None`` (as :meth:`Election.leader
        <landlord.Election.leader>`)."""
        leader: str | None = await pool_of(self._pool).run(self.claim.leader)
        return leader

    async def watch(self, callback: Callable[[str | None], object]) -> AsyncWatch:
        """Call ``callback(leader)`` on this loop at once and each time leadership changes (as
        :meth:`Election.watch <landlord.Election.watch>`): a plain function, or a coroutine function
        (run as a task)."""
        pool = pool_of(self._pool)
        told = on_loop(callback, asyncio.get_running_loop(), self._tasks)
        watch: HoldersWatch = await pool.run(self.claim.watch, told)
        return AsyncWatch(watch, pool)

    async def hand_over(self, successor: str) -> None:
        """Pass leadership to the waiting candidate ``successor``, with no gap (as
        :meth:`Claim.hand_over <landlord.recipe.claim.Claim.hand_over>`)."""
        await self._settled()
        await pool_of(self._pool).run(self.claim.hand_over, successor)
