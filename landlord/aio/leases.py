"""Awaitable renewals and cancels of leases, single or batched, over the asyncio transport.

:func:`renew` and :func:`cancel` take any :class:`~landlord.Lease`;
:func:`renew_all` and :func:`cancel_all` a :class:`~landlord.LeaseMap` or a
list of one landlord's :class:`~landlord.LandlordLease`. What is given is
checked on the loop, before anything is sent. A plain remote landlord's
leases go over asyncio streams (:meth:`StreamCalls.usable
<landlord.aio.transport.StreamCalls.usable>`), recorded as the sync code
records them (:meth:`~landlord.AbstractLease.record_grant`,
:func:`~landlord.holder.landlordlease.record_renewals`); everything else runs
the sync code on a worker of the :class:`~landlord.aio.CallPool`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..duration import ANY, check_duration
from ..errors import LeaseMapError
from ..holder.landlordlease import CALL_BATCH, LandlordLease, record_renewals
from ..lease import Lease, LeaseMap, check_granted, sent_now
from .transport import CallPool, StreamCalls, check_timeout, pool_of

__all__ = ["renew", "cancel", "renew_all", "cancel_all", "check_lease"]


def check_lease(lease: object) -> Lease:
    """``lease`` if it is a :class:`~landlord.Lease`.

    Raises:
        TypeError: it is not.
    """
    if not isinstance(lease, Lease):
        raise TypeError(f"expected a Lease, got {type(lease).__name__}")
    return lease


async def _renew_over(streams: StreamCalls, uri: str, lease: LandlordLease, duration: float,
                      timeout: float | None) -> float:
    """``lease.renew(duration)`` over a stream: the new expiration is the sending time plus the grant."""
    sent = sent_now(lease.clock)
    granted = check_granted(await streams.call(uri, "renew", lease.cookie, duration, timeout=timeout))
    lease.record_grant(sent, granted)
    return granted


async def _renew_all_over(streams: StreamCalls, uri: str, leases: Sequence[LandlordLease], duration: float,
                          timeout: float | None) -> dict[Lease, BaseException]:
    """One landlord's leases renewed over a stream, ``CALL_BATCH`` a call, as
    :meth:`LandlordLease.renew_batch` does on a thread; the failures."""
    failures: dict[Lease, BaseException] = {}
    for start in range(0, len(leases), CALL_BATCH):
        chunk = leases[start:start + CALL_BATCH]
        sent = sent_now(chunk[0].clock)
        results = await streams.call(uri, "renew_all", [lease.cookie for lease in chunk], [duration] * len(chunk),
                                     timeout=timeout)
        failures.update(record_renewals(chunk, sent, results))
    return failures


async def renew(lease: Lease, duration: float = ANY, *, timeout: float | None = None,
                pool: CallPool | None = None) -> float:
    """``lease.renew(duration)``, awaited: the seconds granted.

    Raises:
        TypeError: ``lease`` is not a :class:`~landlord.Lease`.
        ValueError: an invalid ``duration`` or ``timeout`` (nothing is sent).
        LeaseDeniedError, UnknownLeaseError, Pyro5.errors.CommunicationError: as :meth:`Lease.renew`.
    """
    check_lease(lease)
    duration, timeout, calls = check_duration(duration), check_timeout(timeout), pool_of(pool)
    uri = StreamCalls.usable(lease) if calls.streams is not None else None
    if uri is None:
        return await calls.run(lease.renew, duration, timeout=timeout)
    assert calls.streams is not None and isinstance(lease, LandlordLease)
    return await _renew_over(calls.streams, uri, lease, duration, timeout)


async def cancel(lease: Lease, *, timeout: float | None = None, pool: CallPool | None = None) -> None:
    """``lease.cancel()``, awaited.

    Raises:
        TypeError: ``lease`` is not a :class:`~landlord.Lease`.
        ValueError: a bad ``timeout``.
        UnknownLeaseError, Pyro5.errors.CommunicationError: as :meth:`Lease.cancel`.
    """
    check_lease(lease)
    timeout, calls = check_timeout(timeout), pool_of(pool)
    uri = StreamCalls.usable(lease) if calls.streams is not None else None
    if uri is None:
        await calls.run(lease.cancel, timeout=timeout)
        return
    assert calls.streams is not None and isinstance(lease, LandlordLease)
    await calls.streams.call(uri, "cancel", lease.cookie, timeout=timeout)


def _lease_map(leases: LeaseMap | Sequence[LandlordLease], duration: float) -> LeaseMap:
    """``leases`` as a map: a :class:`LeaseMap` as it is, a list of one landlord's leases each at ``duration``.

    Raises:
        TypeError: not a LeaseMap or a list of LandlordLeases.
        ValueError: an empty list, leases of different landlords, or a bad duration.
    """
    if isinstance(leases, LeaseMap):
        return leases
    if isinstance(leases, (str, bytes)) or not isinstance(leases, Sequence):
        raise TypeError(f"expected a LeaseMap or a list of LandlordLeases, got {type(leases).__name__}")
    if not leases:
        raise ValueError("no leases to renew")
    for lease in leases:
        if not isinstance(lease, LandlordLease):
            raise TypeError(f"a batch holds LandlordLeases, got a {type(lease).__name__}")
    first = leases[0]
    if not all(first.can_batch(lease) for lease in leases):
        raise ValueError("a batch holds leases of one landlord; renew a LeaseMap for leases of several")
    duration = check_duration(duration)
    return LeaseMap(dict.fromkeys(leases, duration))


async def renew_all(leases: LeaseMap | Sequence[LandlordLease], duration: float = ANY, *,
                    timeout: float | None = None, pool: CallPool | None = None) -> None:
    """Renew a batch: a :class:`~landlord.LeaseMap` (each lease for its duration, one call per
    landlord), or a list of :class:`~landlord.LandlordLease` of one landlord, each for ``duration``
    (one ``renew_all`` call per 10,000 leases). Do not change a map while this is awaited.

    Raises:
        TypeError: not a LeaseMap or a list of LandlordLeases.
        ValueError: an empty list, leases of several landlords, a bad ``duration`` or ``timeout``.
        LeaseMapError: some renewals failed (a map loses those leases); ``.failures`` says which and why.
        Pyro5.errors.CommunicationError: the call failed as a whole: no lease's outcome is known.
    """
    batch = _lease_map(leases, duration)
    timeout, calls = check_timeout(timeout), pool_of(pool)
    uri = _streamed(leases, calls)
    if uri is None:
        await calls.run(batch.renew_all, timeout=timeout)
        return
    assert calls.streams is not None
    assert not isinstance(leases, LeaseMap)
    failures = await _renew_all_over(calls.streams, uri, leases, check_duration(duration), timeout)
    if failures:
        raise LeaseMapError(failures)


def _streamed(leases: LeaseMap | Sequence[LandlordLease], calls: CallPool) -> str | None:
    """The landlord's URI when a list of one landlord's leases (checked already) can go over a stream."""
    if calls.streams is None or isinstance(leases, LeaseMap):
        return None
    return StreamCalls.usable(leases[0])


async def cancel_all(leases: LeaseMap | Sequence[LandlordLease], *, timeout: float | None = None,
                     pool: CallPool | None = None) -> None:
    """Cancel a batch (as :func:`renew_all` takes it); a map is emptied.

    Raises:
        TypeError, ValueError: as :func:`renew_all`.
        LeaseMapError: some cancellations failed.
    """
    batch = _lease_map(leases, ANY)
    timeout, calls = check_timeout(timeout), pool_of(pool)
    uri = _streamed(leases, calls)
    if uri is None:
        await calls.run(batch.cancel_all, timeout=timeout)
        return
    assert calls.streams is not None and not isinstance(leases, LeaseMap)
    by_cookie = {lease.cookie: lease for lease in leases}
    failures: dict[Lease, BaseException] = {}
    cookies = list(by_cookie)
    for start in range(0, len(cookies), CALL_BATCH):
        errors = await calls.streams.call(uri, "cancel_all", cookies[start:start + CALL_BATCH], timeout=timeout)
        failures.update((by_cookie[cookie], exc) for cookie, exc in dict(errors).items() if cookie in by_cookie)
    if failures:
        raise LeaseMapError(failures)
