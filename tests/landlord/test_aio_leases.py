"""landlord.aio.leases: awaitable renew/cancel/renew_all/cancel_all against a served landlord, over
asyncio streams and over worker threads; what is refused before anything is sent."""

from __future__ import annotations

import math

import pytest
from aio_rooms import Rooms, pool, rent, served  # noqa: F401  (fixtures)

from landlord import LeaseMap, LeaseMapError, UnknownLeaseError, aio


@pytest.mark.asyncio
async def test_renew_and_cancel_go_over_the_wire(served: tuple[Rooms, str], pool: aio.CallPool) -> None:
    rooms, uri = served
    lease = await rent(uri, "101", 30, pool)
    assert lease.landlord_uri == uri  # it crossed the wire: its calls go through a proxy
    assert await aio.renew(lease, 10, pool=pool) == 10
    assert lease.term == 10 and 9 < lease.remaining <= 10
    assert rooms.renewed.items == [lease.cookie]
    await aio.cancel(lease, pool=pool)
    assert len(rooms) == 0
    with pytest.raises(UnknownLeaseError):
        await aio.renew(lease, 10, pool=pool)


@pytest.mark.asyncio
async def test_renew_all_sends_one_call_for_a_landlords_leases(served: tuple[Rooms, str],
                                                               pool: aio.CallPool) -> None:
    rooms, uri = served
    leases = [await rent(uri, f"{number}", 30, pool) for number in range(3)]
    await aio.renew_all(leases, 12, pool=pool)
    assert rooms.batches.items == [3]
    assert all(lease.term == 12 for lease in leases)
    rooms.cancel(leases[1].cookie)  # gone at the landlord: that one fails, the others are renewed
    with pytest.raises(LeaseMapError) as failed:
        await aio.renew_all(leases, 20, pool=pool)
    assert list(failed.value.failures) == [leases[1]]
    assert isinstance(failed.value.failures[leases[1]], UnknownLeaseError)
    assert leases[0].term == 20 and leases[2].term == 20
    lease_map = LeaseMap({leases[0]: 25, leases[2]: 30})
    await aio.renew_all(lease_map, pool=pool)
    assert (leases[0].term, leases[2].term) == (25, 30)
    await aio.cancel_all(lease_map, pool=pool)
    assert len(lease_map) == 0 and len(rooms) == 0


@pytest.mark.asyncio
async def test_bad_input_is_refused_before_anything_is_sent(served: tuple[Rooms, str], pool: aio.CallPool) -> None:
    rooms, uri = served
    lease = await rent(uri, "104", 30, pool)
    for duration in (-5, math.nan, -math.inf, "10", True, None):
        with pytest.raises(ValueError):
            await aio.renew(lease, duration, pool=pool)  # type: ignore[arg-type]
    for timeout in (0, -1, math.nan, "1"):
        with pytest.raises(ValueError, match="timeout"):
            await aio.renew(lease, 10, timeout=timeout, pool=pool)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Lease"):
        await aio.renew("a cookie", 10, pool=pool)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Lease"):
        await aio.cancel(object(), pool=pool)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no leases"):
        await aio.renew_all([], 10, pool=pool)
    with pytest.raises(TypeError):
        await aio.renew_all("abc", 10, pool=pool)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="LandlordLease"):
        await aio.renew_all([lease, "x"], 10, pool=pool)  # type: ignore[list-item]
    with pytest.raises(ValueError):
        await aio.renew_all([lease], math.nan, pool=pool)
    other = Rooms()
    try:
        with pytest.raises(ValueError, match="one landlord"):
            await aio.renew_all([lease, other.new_lease("elsewhere", 10)], 10, pool=pool)
    finally:
        other.close()
    with pytest.raises(TypeError, match="pool"):
        await aio.renew(lease, 10, pool="mine")  # type: ignore[arg-type]
    assert rooms.renewed.items == [] and rooms.batches.items == []  # nothing was sent
