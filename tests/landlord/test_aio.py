"""landlord.aio: awaitable renew/cancel/renew_all against a served landlord, the async renewal
manager on a fake clock, listeners told on the loop, and a loop that keeps running while a
landlord is slow on purpose."""

from __future__ import annotations

import asyncio
import contextlib
import math
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import Pyro5.api
import Pyro5.errors
import pytest
import pytest_asyncio
from Pyro5 import config as pyro_config

from landlord import (
    FOREVER,
    Landlord,
    LandlordLease,
    LeaseDurationPolicy,
    LeaseMap,
    LeaseMapError,
    LeaseRenewalEvent,
    RenewResults,
    UnknownLeaseError,
    aio,
    renewal_time,
)
from landlord.testing import FakeClock, Recorder, ServingDaemon, free_port


class Rooms(Landlord):
    """Rents rooms; records every renewal; can be made to hold a renewal until released."""

    def __init__(self, **options: Any) -> None:
        super().__init__(policy=LeaseDurationPolicy(maximum=600, default=60), **options)
        self.renewed: Recorder[str] = Recorder()
        self.batches: Recorder[int] = Recorder()
        self.entered: Recorder[str] = Recorder()
        self.slow = False
        self.release = threading.Event()
        self.clients: list[Any] = []

    @Pyro5.api.expose
    def rent(self, name: str, duration: float) -> LandlordLease:
        return self.new_lease(name, duration)

    @Pyro5.api.expose
    def renew(self, cookie: str, duration: float) -> float:
        if self.slow:
            self.entered(cookie)
            assert self.release.wait(20), "the test never released the slow renewal"
        self.clients.append(Pyro5.api.current_context.client)  # whose connection this came on
        granted = super().renew(cookie, duration)
        self.renewed(cookie)
        return granted

    @Pyro5.api.expose
    def renew_all(self, cookies: Sequence[str], durations: Sequence[float]) -> RenewResults:
        results = super().renew_all(cookies, durations)
        self.batches(len(cookies))
        return results


@pytest.fixture
def served() -> Iterator[tuple[Rooms, str]]:
    rooms = Rooms()
    with ServingDaemon() as serving:
        yield rooms, serving.register(rooms)
    rooms.release.set()
    rooms.close()


@pytest_asyncio.fixture(params=[True, False], ids=["streams", "threads"])
async def pool(request: pytest.FixtureRequest) -> AsyncIterator[aio.CallPool]:
    """A pool renewing over asyncio streams, and one renewing on its worker threads: each test runs on both."""
    async with aio.CallPool(max_workers=4, streams=request.param) as calls:
        yield calls


async def rent(uri: str, name: str, duration: float, pool: aio.CallPool) -> LandlordLease:
    lease = await aio.call(uri, "rent", name, duration, pool=pool)
    assert isinstance(lease, LandlordLease)
    return lease


# -- one call ------------------------------------------------------------------------------------------


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
    assert aio.StreamCalls.usable(lease) is None


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
    with pytest.raises(TypeError, match="method"):
        await aio.call(uri, "_pyroRelease", pool=pool)
    with pytest.raises(TypeError, match="uri"):
        await aio.call(42, "rent", pool=pool)  # type: ignore[arg-type]
    assert rooms.renewed.items == [] and rooms.batches.items == []  # nothing was sent


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


# -- the renewal manager ---------------------------------------------------------------------------------


async def pass_due(clock: FakeClock, due: float) -> None:
    """Once the manager's thread sleeps towards ``due`` (waited for off the loop), move the clock past it."""
    await asyncio.to_thread(clock.wait_for_sleeper, due)
    clock.advance(due - clock.monotonic() + 1e-6)


@pytest.mark.asyncio
async def test_the_manager_keeps_a_lease_and_tells_a_coroutine_listener_on_the_loop_of_its_loss() -> None:
    clock = FakeClock()
    rooms = Rooms(clock=clock, reaper="lazy")
    lease = rooms.new_lease("201", 9)
    loop_thread = threading.get_ident()
    told: list[tuple[LeaseRenewalEvent, int]] = []
    lost = asyncio.Event()

    async def listener(event: LeaseRenewalEvent) -> None:
        told.append((event, threading.get_ident()))
        await asyncio.sleep(0)  # a coroutine: it may await
        lost.set()

    try:
        async with aio.AsyncLeaseRenewalManager(clock=clock, name="aio-test") as renewals:
            renewals.renew_for(lease, FOREVER, listener)
            assert len(renewals) == 1 and renewals.get_expiration(lease) == math.inf
            due = renewal_time(clock.monotonic(), lease.deadline, lease.term)
            assert due == pytest.approx(3.0)  # a third into its 9 s term
            await pass_due(clock, due)
            await asyncio.to_thread(rooms.batches.wait_for, 1)  # a managed lease is renewed in batches
            assert rooms.get_resource(lease.cookie) == "201"
            now = clock.monotonic()  # the renewal was sent now (the fake clock stands still): its new deadline
            due = renewal_time(now, now + 9.0, 9.0)  # renewed for its own term, 9 s, from when it was sent
            assert due == pytest.approx(6.0)
            rooms.cancel(lease.cookie)  # the landlord forgets it: the next renewal is refused
            await pass_due(clock, due)
            await asyncio.wait_for(lost.wait(), 10)
            [(event, thread)] = told
            assert event.lease == lease and isinstance(event.exception, UnknownLeaseError)
            assert thread == loop_thread
            assert lease.term == 9
            assert len(renewals) == 0
    finally:
        rooms.close()


@pytest.mark.asyncio
async def test_a_plain_listener_runs_on_the_loop_too_and_cancel_gives_the_lease_back() -> None:
    clock = FakeClock()
    rooms = Rooms(clock=clock, reaper="lazy")
    short, kept = rooms.new_lease("301", 9), rooms.new_lease("302", 9)
    done = asyncio.Event()
    threads: list[int] = []

    def reached(event: LeaseRenewalEvent) -> None:
        threads.append(threading.get_ident())
        done.set()

    try:
        async with aio.AsyncLeaseRenewalManager(clock=clock) as renewals:
            renewals.renew_until(short, clock.time() + 2, on_desired_expiration=reached)
            renewals.renew_for(kept, FOREVER)
            await pass_due(clock, 2.0)  # the desired end of 'short'
            await asyncio.wait_for(done.wait(), 10)
            assert threads == [threading.get_ident()]
            await renewals.cancel(kept)
            assert len(renewals) == 0 and len(rooms) == 1  # 'short' was let go, not cancelled
            with pytest.raises(UnknownLeaseError):
                await renewals.cancel(kept)  # no longer managed
            with pytest.raises(TypeError, match="listener"):
                renewals.renew_for(short, 10, "not callable")  # type: ignore[arg-type]
            with pytest.raises(ValueError):
                renewals.renew_for(short, -1)
            with pytest.raises(ValueError):
                renewals.renew_for(short, math.nan)
            with pytest.raises(TypeError):
                renewals.renew_for("lease", 10)  # type: ignore[arg-type]
        with pytest.raises(RuntimeError, match="closed"):
            renewals.renew_for(short, 10)
    finally:
        rooms.close()


def test_the_manager_needs_a_running_loop() -> None:
    with pytest.raises(RuntimeError):
        aio.AsyncLeaseRenewalManager()


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
