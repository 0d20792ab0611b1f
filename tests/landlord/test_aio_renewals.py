"""landlord.aio.renewals: the async renewal manager on a fake clock, its listeners (coroutine and
plain) told on the loop, cancel through it, and the loop it needs."""

from __future__ import annotations

import asyncio
import logging
import math
import threading

import pytest
from aio_rooms import Rooms

from landlord import FOREVER, LeaseRenewalEvent, UnknownLeaseError, aio, renewal_time
from landlord.testing import FakeClock


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
async def test_a_listener_that_fails_is_logged_on_landlord_aio_plain_or_coroutine(
        caplog: pytest.LogCaptureFixture) -> None:
    loop, tasks = asyncio.get_running_loop(), set[asyncio.Future[object]]()

    def plain(item: str) -> None:
        raise RuntimeError(f"plain bug on {item}")

    async def coroutine(item: str) -> None:
        await asyncio.sleep(0)
        raise RuntimeError(f"coroutine bug on {item}")

    with caplog.at_level(logging.DEBUG, logger="landlord.aio"):
        for listener, item in ((plain, "one"), (coroutine, "two")):
            await asyncio.to_thread(aio.on_loop(listener, loop, tasks), item)  # told from another thread
        for _ in range(100):
            if len(caplog.records) == 2 and not tasks:
                break
            await asyncio.sleep(0.01)
    assert [(record.name, record.exc_info[1].args[0] if record.exc_info else None) for record in caplog.records] == [
        ("landlord.aio", "plain bug on one"), ("landlord.aio", "coroutine bug on two")]

