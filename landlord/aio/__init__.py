"""landlord from asyncio: awaitable renew and cancel, :class:`AsyncLeaseRenewalManager`, and
locks, semaphores and elections (:class:`AsyncLock`, :class:`AsyncSemaphore`, :class:`AsyncElection`).

Everything here is usable from one event loop without blocking it. Checks
of what is given (types, negative or NaN durations) run on the loop, before
anything is sent, and raise at once; then a call goes over asyncio streams
or on a worker thread of a bounded :class:`CallPool` (which, and why:
:mod:`~landlord.aio.transport`).

::

    async with AsyncLeaseRenewalManager() as renewals:
        granted = await aio.renew(lease, 30)
        renewals.renew_for(lease, FOREVER, lost)   # lost(event): a plain function or a coroutine function
        ...
        await renewals.cancel(lease)

One job per module, each on the one below it:

- :mod:`~landlord.aio.locks`: :class:`AsyncLock`, :class:`AsyncSemaphore`,
  :class:`AsyncElection` (and :class:`AsyncWatch`): the recipes of :mod:`landlord.recipe`,
  their calls on the pool, their waits for a pushed grant on the loop;
- :mod:`~landlord.aio.renewals`: :class:`AsyncLeaseRenewalManager` and listeners on
  the loop (:data:`AsyncListener`, :func:`on_loop`);
- :mod:`~landlord.aio.leases`: awaitable :func:`renew`, :func:`cancel`,
  :func:`renew_all` and :func:`cancel_all` of leases;
- :mod:`~landlord.aio.transport`: the asyncio Pyro5 transport: :class:`CallPool`
  (worker threads; :func:`shared_pool`), :class:`StreamCalls` (Pyro5 messages over
  asyncio streams), :func:`call`, :func:`check_timeout`.

Import the names from ``landlord.aio``, as ``lookup`` does; the modules are
its parts. It may import the holder side (the renewal manager,
:class:`~landlord.LandlordLease`), the recipes (:mod:`landlord.recipe`), :mod:`landlord.lease`,
:mod:`landlord.transport` (the proxies) and the basics; never the grantor,
replication, the renewal service or serving (import-linter holds it to
that). Its logger is ``landlord.aio``.
"""

from __future__ import annotations

from .leases import cancel, cancel_all, renew, renew_all
from .locks import AsyncElection, AsyncLock, AsyncSemaphore, AsyncWatch
from .renewals import AsyncLeaseRenewalManager, AsyncListener, on_loop
from .transport import (
    DEFAULT_MAX_WORKERS,
    MAX_WORKERS,
    CallPool,
    StreamCalls,
    call,
    check_timeout,
    close_shared_pool,
    shared_pool,
)

__all__ = [
    "DEFAULT_MAX_WORKERS", "CallPool", "shared_pool", "close_shared_pool", "call", "renew", "cancel", "renew_all",
    "cancel_all", "AsyncLeaseRenewalManager", "AsyncListener", "on_loop", "StreamCalls", "check_timeout",
    "MAX_WORKERS", "AsyncLock", "AsyncSemaphore", "AsyncElection", "AsyncWatch",
]
