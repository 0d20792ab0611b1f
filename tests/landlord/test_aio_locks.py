"""landlord.aio.locks: AsyncLock, AsyncSemaphore and AsyncElection, their calls on a pool, their
waits for a pushed grant on the loop (no worker held, the loop never blocked), and a cancelled
acquire that leaves nothing held; in-process on a fake clock, and served; and the snippet of
docs/asyncio.md, run as it is there."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import Pyro5.server
import pytest
import pytest_asyncio

from landlord import FakeClock, Landlord, LandlordLease, LeaseDurationPolicy, aio
from landlord.aio import AsyncElection, AsyncLock, AsyncSemaphore
from landlord.testing import Recorder, ServingDaemon

DOCS = Path(__file__).resolve().parents[2] / "docs" / "asyncio.md"


class Grantor(Landlord):
    """A landlord that records the names asked for that wait in line, and can hold requests back."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.queued: Recorder[str] = Recorder()
        self.entered: Recorder[str] = Recorder()
        self.go = threading.Event()
        self.go.set()

    @Pyro5.server.expose
    def acquire(self, name: str, *args: Any, **kwargs: Any) -> tuple[LandlordLease, int | None]:
        self.entered.record(name)
        assert self.go.wait(10)
        lease, token = super().acquire(name, *args, **kwargs)
        if token is None:
            self.queued.record(name)
        return lease, token

    def holders(self, name: str) -> list[int]:
        return [token for token, _ in self.name_holders(name)]

    def waiters(self, name: str) -> int:
        return sum(len(view.waiters) for view in self.names() if view.name == name)


async def waited(recorder: Recorder[Any], count: int) -> list[Any]:
    """``recorder.wait_for(count)``, off the loop."""
    return await asyncio.to_thread(recorder.wait_for, count)


@pytest.fixture
def grantor(clock: FakeClock) -> Iterator[Grantor]:
    landlord = Grantor(clock=clock, policy=LeaseDurationPolicy(maximum=100))
    yield landlord
    landlord.close()


@pytest_asyncio.fixture
async def pool() -> AsyncIterator[aio.CallPool]:
    async with aio.CallPool(max_workers=2) as calls:
        yield calls


@pytest_asyncio.fixture
async def made() -> AsyncIterator[list[Any]]:
    """The async recipes a test makes, closed after it."""
    objects: list[Any] = []
    yield objects
    for each in objects:
        await each.aclose()


@pytest.mark.asyncio
async def test_async_with_holds_and_releases(grantor: Grantor, pool: aio.CallPool, made: list[Any]) -> None:
    lock = AsyncLock(grantor, "orders", duration=10, pool=pool)
    made.append(lock)
    assert not lock.valid and lock.token is None
    async with lock as held:
        assert held is lock and lock.valid and lock.locked() and lock.token == 1
        assert grantor.holders("orders") == [1]
    assert not lock.valid and grantor.names() == ()
    assert await lock.acquire(timeout=1) and lock.token == 2
    await lock.release()
    assert grantor.names() == ()


@pytest.mark.asyncio
async def test_a_waiting_acquire_holds_no_worker_and_never_blocks_the_loop(grantor: Grantor) -> None:
    async with aio.CallPool(max_workers=1) as one:
        first, second, third = (AsyncLock(grantor, "orders", duration=10, pool=one) for _ in range(3))
        other = AsyncLock(grantor, "other", duration=10, pool=one)
        assert await first.acquire()
        waiting = [asyncio.ensure_future(lock.acquire()) for lock in (second, third)]
        await waited(grantor.queued, 2)
        assert await other.acquire(timeout=5) and other.valid  # the loop runs on, and the one worker is free
        await first.release()
        assert await waiting[0] and second.valid and second.token == 3  # pushed: first in line
        assert not waiting[1].done()
        await second.release()
        assert await waiting[1] and third.token == 4
        for lock in (first, second, third, other):
            await lock.aclose()


@pytest.mark.asyncio
async def test_a_cancelled_wait_leaves_nothing_held(grantor: Grantor, pool: aio.CallPool, made: list[Any]) -> None:
    holder, waiter = AsyncLock(grantor, "orders", duration=10, pool=pool), AsyncLock(grantor, "orders", pool=pool)
    made.extend([holder, waiter])
    assert await holder.acquire()
    task = asyncio.ensure_future(waiter.acquire())
    await waited(grantor.queued, 1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await waiter.release()  # waits for the cancelled acquire's lease to be let go
    assert grantor.waiters("orders") == 0 and waiter.lease is None
    await holder.release()
    assert grantor.names() == ()  # nobody was granted it
    assert await waiter.acquire(blocking=False) and waiter.token == 2  # and the object is usable again


@pytest.mark.asyncio
async def test_an_acquire_cancelled_while_its_request_is_out_lets_go_of_the_grant(
        grantor: Grantor, pool: aio.CallPool, made: list[Any]) -> None:
    lock = AsyncLock(grantor, "orders", duration=10, pool=pool)
    made.append(lock)
    grantor.go.clear()  # the request is held back on its worker
    task = asyncio.ensure_future(lock.acquire())
    await waited(grantor.entered, 1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    grantor.go.set()  # the landlord grants it now, after the cancel
    await lock.release()
    assert grantor.names() == () and not lock.valid and lock.lease is None


@pytest.mark.asyncio
async def test_timeouts_and_not_blocking(grantor: Grantor, pool: aio.CallPool, made: list[Any]) -> None:
    holder, other = AsyncLock(grantor, "orders", duration=10, pool=pool), AsyncLock(grantor, "orders", pool=pool)
    made.extend([holder, other])
    assert await holder.acquire()
    assert await other.acquire(blocking=False) is False
    assert await other.acquire(timeout=0) is False
    assert await other.acquire(timeout=0.05) is False  # on the loop's clock; the landlord's is fake
    assert grantor.waiters("orders") == 0 and not other.valid
    with pytest.raises(ValueError):
        await other.acquire(timeout=-5)
    with pytest.raises(TypeError):
        AsyncLock(grantor, "orders", pool="a pool")  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_acquiring_twice_is_refused_and_a_refusal_frees_the_object(grantor: Grantor, pool: aio.CallPool,
                                                                        made: list[Any]) -> None:
    lock = AsyncLock(grantor, "orders", duration=10, pool=pool)
    odd = AsyncSemaphore(grantor, "orders", 3, pool=pool)
    made.extend([lock, odd])
    assert await lock.acquire()
    with pytest.raises(RuntimeError, match="already holds"):
        await lock.acquire()
    with pytest.raises(ValueError, match="limit"):
        await odd.acquire()  # the name's limit is 1
    assert not odd.valid and odd.lease is None


@pytest.mark.asyncio
async def test_a_loss_is_told_on_the_loop(grantor: Grantor, pool: aio.CallPool, made: list[Any]) -> None:
    lock = AsyncLock(grantor, "orders", duration=10, pool=pool)
    made.append(lock)
    loop_thread = threading.current_thread()
    plain: list[tuple[str, bool]] = []
    told = asyncio.Event()

    async def coroutine(reason: str) -> None:
        told.set()

    lock.on_lost(lambda reason: plain.append((reason, threading.current_thread() is loop_thread)))
    lock.on_lost(coroutine)
    assert await lock.acquire()
    assert lock.lease is not None
    grantor.revoke(lock.lease.cookie, "evicted")
    await asyncio.wait_for(told.wait(), 10)
    assert plain == [("evicted", True)] and not lock.valid


@pytest.mark.asyncio
async def test_a_semaphore_admits_n(grantor: Grantor, pool: aio.CallPool, made: list[Any]) -> None:
    places = [AsyncSemaphore(grantor, "pool", 2, duration=10, pool=pool) for _ in range(3)]
    made.extend(places)
    assert await places[0].acquire() and await places[1].acquire()
    third = asyncio.ensure_future(places[2].acquire())
    await waited(grantor.queued, 1)
    await places[0].release()
    assert await third and grantor.holders("pool") == [2, 3]


@pytest.mark.asyncio
async def test_an_election_campaigns_watches_and_hands_over(grantor: Grantor, pool: aio.CallPool,
                                                            made: list[Any]) -> None:
    a, b, c = (AsyncElection(grantor, "leader", value, duration=10, pool=pool) for value in "abc")
    made.extend([a, b, c])
    seen: list[str | None] = []
    changed = asyncio.Condition()

    async def heard(leader: str | None) -> None:
        async with changed:
            seen.append(leader)
            changed.notify_all()

    async def until(expected: list[str | None]) -> None:
        async with changed:
            await asyncio.wait_for(changed.wait_for(lambda: seen[-len(expected):] == expected), 10)

    watch = await c.watch(heard)
    assert await a.leader() is None
    assert await a.campaign() and a.leading and a.token == 1 and await b.leader() == "a"
    await until(["a"])
    first, successor = asyncio.ensure_future(c.campaign()), asyncio.ensure_future(b.campaign())
    await waited(grantor.queued, 2)
    await a.hand_over("b")
    assert not a.leading
    assert await successor and b.leading and b.token == 2  # no grant in between
    assert not first.done()
    await until(["a", "b"])
    await b.resign()
    assert await first and c.token == 3
    await until(["b", "c"])
    await watch.close()
    assert len(grantor._watches) == 0
    cancelled = asyncio.ensure_future(a.campaign())
    await waited(grantor.queued, 3)
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    await a.resign()
    await c.resign()
    assert grantor.names() == ()  # the cancelled campaign holds nothing


# -- served ------------------------------------------------------------------------------------


@pytest_asyncio.fixture
async def served() -> AsyncIterator[tuple[Grantor, str]]:
    grantor = Grantor(policy=LeaseDurationPolicy(maximum=100))
    with ServingDaemon() as daemon:
        yield grantor, daemon.register(grantor)
    grantor.close()


@pytest.mark.asyncio
async def test_served_locks_pass_the_name_on(served: tuple[Grantor, str], pool: aio.CallPool,
                                             made: list[Any]) -> None:
    grantor, uri = served
    first, second = AsyncLock(uri, "served", duration=5, pool=pool), AsyncLock(uri, "served", duration=5, pool=pool)
    made.extend([first, second])
    async with first:
        assert first.token == 1 and first.lease is not None and first.lease.landlord_uri == uri
        waiting = asyncio.ensure_future(second.acquire(timeout=10))
        await waited(grantor.queued, 1)
        assert not waiting.done()
    assert await waiting and second.token == 2 and second.valid
    await second.release()
    assert grantor.names() == ()
    election = AsyncElection(uri, "served-leader", "me", duration=5, pool=pool)
    made.append(election)
    assert await election.campaign(timeout=5) and await election.leader() == "me"
    await election.resign()
    assert await election.leader() is None


# -- the docs ----------------------------------------------------------------------------------


def test_the_snippet_of_docs_asyncio_md_runs(capsys: pytest.CaptureFixture[str]) -> None:
    section = DOCS.read_text().split("\n## Locks, semaphores and elections\n", 1)[1]
    snippet = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert snippet, "the section has no snippet"
    exec(compile(snippet.group(1), str(DOCS), "exec"), {"__name__": "docs_asyncio_md"})
    printed = capsys.readouterr().out.splitlines()
    for line in ("writing with token 1", "[True, True, False]", "True 5 host-a", "the leader is now host-a",
                 "the leader is now host-b", "False True 6"):
        assert line in printed, printed  # what its comments say it prints
