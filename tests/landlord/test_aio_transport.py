"""landlord.aio.transport: the pool of worker threads (bounded, shared, closed), asyncio streams (what
they carry, connections kept, dropped, cut), timeouts and cancellation, and a loop that keeps running
while a landlord is slow on purpose; each call over streams and over the threads."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time

import Pyro5.api
import Pyro5.errors
import pytest
from aio_rooms import Rooms, pool, rent, served  # noqa: F401  (fixtures)
from Pyro5 import config as pyro_config

from landlord import LandlordLease, aio
from landlord.testing import free_port


@pytest.mark.asyncio
async def test_the_shared_pool_serves_when_none_is_given(served: tuple[Rooms, str]) -> None:
    rooms, uri = served
    lease = await aio.call(uri, "rent", "102", 30)
    assert await aio.renew(lease, 20, timeout=5) == 20
    assert aio.shared_pool() is aio.shared_pool()
    assert aio.shared_pool().max_workers == aio.DEFAULT_MAX_WORKERS
    await aio.close_shared_pool()
    assert await aio.renew(lease, 15) == 15  # a new shared pool, made on use
    await aio.close_shared_pool()


@pytest.mark.asyncio
async def test_a_pool_is_bounded_and_refuses_calls_once_closed() -> None:
    for workers in (0, -1, 257):
        with pytest.raises(ValueError, match="max_workers"):
            aio.CallPool(max_workers=workers)
    for workers in (1.5, "4", True):
        with pytest.raises(TypeError, match="max_workers"):
            aio.CallPool(max_workers=workers)  # type: ignore[arg-type]
    pool = aio.CallPool(max_workers=1)
    threads = set(await asyncio.gather(*(pool.run(threading.get_ident) for _ in range(20))))
    assert len(threads) == 1 and threading.get_ident() not in threads  # one worker, never the loop's thread
    await pool.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await pool.run(threading.get_ident)


@pytest.mark.asyncio
async def test_a_call_is_refused_before_anything_is_sent_without_a_uri_or_a_remote_method(
        served: tuple[Rooms, str], pool: aio.CallPool) -> None:
    rooms, uri = served
    with pytest.raises(TypeError, match="method"):
        await aio.call(uri, "_pyroRelease", pool=pool)
    with pytest.raises(TypeError, match="uri"):
        await aio.call(42, "rent", pool=pool)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        await aio.call(uri, "rent", "105", 30, timeout=0, pool=pool)
    assert len(rooms) == 0  # nothing was rented


@pytest.mark.asyncio
async def test_a_remote_call_leaves_the_loop_running(served: tuple[Rooms, str], pool: aio.CallPool) -> None:
    rooms, uri = served
    lease = await rent(uri, "103", 30, pool)
    rooms.slow = True
    renewal = asyncio.ensure_future(aio.renew(lease, 10, pool=pool))
    await asyncio.to_thread(rooms.entered.wait_for, 1)  # the landlord holds the renewal now
    ticks = 0
    for _ in range(200):  # the loop runs other tasks meanwhile: a ticker's turns
        await asyncio.sleep(0)
        ticks += 1
    assert ticks == 200 and not renewal.done()
    rooms.release.set()
    assert await renewal == 10


@pytest.mark.asyncio
async def test_a_call_that_takes_too_long_times_out_and_the_next_goes_through(served: tuple[Rooms, str],
                                                                               pool: aio.CallPool) -> None:
    rooms, uri = served
    lease = await rent(uri, "105", 30, pool)
    rooms.slow = True
    with pytest.raises(Pyro5.errors.TimeoutError):
        await aio.renew(lease, 10, timeout=0.3, pool=pool)  # the landlord holds it until released
    assert lease.term == 30  # a failed renewal leaves the lease as it was
    rooms.slow = False
    rooms.release.set()
    assert await aio.renew(lease, 10, pool=pool) == 10  # on a fresh connection


@pytest.mark.asyncio
async def test_a_cancelled_renewal_leaves_the_pool_working(served: tuple[Rooms, str], pool: aio.CallPool) -> None:
    rooms, uri = served
    lease = await rent(uri, "106", 30, pool)
    rooms.slow = True
    renewal = asyncio.ensure_future(aio.renew(lease, 10, pool=pool))
    await asyncio.to_thread(rooms.entered.wait_for, 1)
    renewal.cancel()
    with pytest.raises(asyncio.CancelledError):
        await renewal
    rooms.slow = False
    rooms.release.set()
    assert await aio.renew(lease, 12, pool=pool) == 12


@pytest.mark.asyncio
@pytest.mark.parametrize("streams", [True, False], ids=["streams", "threads"])
async def test_a_connection_lost_is_a_communication_error_and_the_next_call_reconnects(
        served: tuple[Rooms, str], streams: bool) -> None:
    rooms, uri = served
    async with aio.CallPool(max_workers=1, streams=streams) as pool:  # one worker: one connection to cut
        lease = await rent(uri, "107", 30, pool)
        assert await aio.renew(lease, 10, pool=pool) == 10  # a connection made, then kept for the next call
        for client in rooms.clients:  # the landlord's side of it cut, as a landlord that died would
            with contextlib.suppress(OSError):
                client.sock.shutdown(socket.SHUT_RDWR)
        with pytest.raises(Pyro5.errors.CommunicationError):
            await aio.renew(lease, 11, timeout=5, pool=pool)
        assert await aio.renew(lease, 12, timeout=5, pool=pool) == 12


@pytest.mark.asyncio
async def test_a_landlord_not_there_is_a_communication_error(pool: aio.CallPool) -> None:
    nowhere = LandlordLease("c" * 20, f"PYRO:landlord@127.0.0.1:{free_port()}", "nobody", time.time() + 30)
    with pytest.raises(Pyro5.errors.CommunicationError):
        await aio.renew(nowhere, 10, timeout=5, pool=pool)
    with pytest.raises(Pyro5.errors.CommunicationError):
        await aio.cancel(nowhere, timeout=5, pool=pool)


@pytest.mark.asyncio
async def test_streams_carry_only_what_they_can(served: tuple[Rooms, str], pool: aio.CallPool,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    rooms, uri = served
    lease = await rent(uri, "108", 30, pool)
    assert aio.StreamCalls.usable(lease) == uri
    assert aio.StreamCalls.usable(rooms.new_lease("in process", 30)) is None  # called directly, on a worker
    replicated = LandlordLease("c" * 20, uri, rooms.landlord_id, time.time() + 30,
                               landlords=[uri, "PYRO:other@127.0.0.1:1"])
    assert aio.StreamCalls.usable(replicated) is None  # its group and leader: the sync path knows them
    monkeypatch.setattr(pyro_config, "SSL", True)
    assert aio.StreamCalls.usable(lease) is None  # TLS: the sync proxies'
    monkeypatch.setattr(pyro_config, "SSL", False)
    monkeypatch.setattr(pyro_config, "SERIALIZER", "json")
    assert aio.StreamCalls.usable(lease) == uri  # streams speak landlord's own serializer, whatever Pyro5's default


@pytest.mark.asyncio
async def test_a_dropped_uri_keeps_no_connection_not_even_one_in_use_when_dropped(served: tuple[Rooms, str]) -> None:
    rooms, uri = served
    cookie = rooms.new_lease("109", 30).cookie
    streams = aio.StreamCalls(connections=1)
    try:
        await streams.call(uri, "renew", cookie, 10, timeout=5)
        await streams.call(uri, "renew", cookie, 10, timeout=5)
        first, again = rooms.clients[-2:]
        assert again is first  # kept between calls
        streams.drop(uri)
        await streams.call(uri, "renew", cookie, 10, timeout=5)
        assert rooms.clients[-1] is not first
        rooms.slow = True
        in_flight = asyncio.ensure_future(streams.call(uri, "renew", cookie, 10, timeout=5))
        await asyncio.to_thread(rooms.entered.wait_for, 1)
        streams.drop(uri)  # while its call is out
        rooms.slow = False
        rooms.release.set()
        assert await in_flight == 10
        used = rooms.clients[-1]
        await streams.call(uri, "renew", cookie, 10, timeout=5)
        assert rooms.clients[-1] is not used  # the one in use when dropped was not kept
    finally:
        streams.close()
