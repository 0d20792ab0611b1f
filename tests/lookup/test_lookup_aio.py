"""lookup.aio against a real LookupService served in a daemon: the async client (register with a
kept lease, lookup, lookup_all, notify), the async join manager, and the async cache whose changes
are read with ``async for``."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Iterator

import Pyro5.api
import pytest

from landlord import FakeClock, aio
from landlord.testing import Recorder, ServingDaemon, free_port
from lookup import (
    TRANSITION_MATCH_NOMATCH,
    TRANSITION_NOMATCH_MATCH,
    LookupService,
    Name,
    ServiceEvent,
    ServiceItem,
    ServiceTemplate,
)
from lookup.aio import AsyncJoinManager, AsyncLookup, AsyncLookupCache, CacheChange
from lookup.ownership import NotOwnerError, service_id_for

QUOTER = "examples.Quoter"
TIMEOUT = 10.0


def item(name: str, *, types: tuple[str, ...] = (QUOTER,)) -> ServiceItem:
    return ServiceItem(None, f"PYRO:{name.replace(' ', '_')}@127.0.0.1:9", types, [Name(name)])


@pytest.fixture
def served() -> Iterator[tuple[LookupService, str, ServingDaemon]]:
    service = LookupService()
    with ServingDaemon() as serving:
        yield service, serving.register(service), serving
    service.close()


async def next_change(changes: AsyncIterator[CacheChange]) -> tuple[str, str]:
    change = await asyncio.wait_for(changes.__anext__(), TIMEOUT)
    return change.kind, change.item.attributes[0].name


@Pyro5.api.expose
class Quoter:
    def quote(self, symbol: str) -> float:
        return 42.0 if symbol == "ACME" else 1.0


@Pyro5.api.expose
class Listener:
    def __init__(self) -> None:
        self.events: Recorder[ServiceEvent] = Recorder()

    def notify(self, event: ServiceEvent) -> None:
        self.events(event)


@pytest.mark.asyncio
async def test_the_client_registers_looks_up_and_hears(served: tuple[LookupService, str, ServingDaemon]) -> None:
    service, uri, serving = served
    client = AsyncLookup(uri)
    listener = Listener()
    wanted = ServiceTemplate(types=[QUOTER])
    events = await client.notify(wanted, TRANSITION_NOMATCH_MATCH | TRANSITION_MATCH_NOMATCH,
                                 serving.register(listener), handback="mine", duration=30)
    async with aio.AsyncLeaseRenewalManager() as renewals:
        registration = await client.register(item("ACME"), 30, renewals=renewals)
        assert len(renewals) == 1  # its lease is kept alive there
        await client.register(item("other", types=("other.Type",)), 30)
        assert await client.lookup(wanted) == "PYRO:ACME@127.0.0.1:9"
        matches = await client.lookup_all(wanted)
        assert matches.total == 1 and matches.items[0].service_id == registration.service_id
        assert await client.lookup(ServiceTemplate(types=["nobody.Here"])) is None
        assert await client.call("service_types", ServiceTemplate(), "examples.") == [QUOTER]
        [event] = await asyncio.to_thread(listener.events.wait_for, 1)
        assert event.service_id == registration.service_id and event.handback == "mine"
        await renewals.cancel(registration.lease)
    assert await client.lookup(wanted) is None
    await aio.cancel(events.lease)
    await aio.close_shared_pool()


@pytest.mark.asyncio
async def test_registering_an_id_again_takes_its_proof(served: tuple[LookupService, str, ServingDaemon]) -> None:
    _, uri, _ = served
    client = AsyncLookup(uri)
    first = await client.register(item("ACME"), 30)
    again = item("ACME again").replace(service_id=first.service_id)
    with pytest.raises(NotOwnerError):  # the id alone proves nothing
        await client.register(again, 30)
    with pytest.raises(TypeError, match="proof"):
        await client.register(again, 30, proof=5)  # type: ignore[arg-type]
    assert (await client.register(again, 30, proof=first.secret)).service_id == first.service_id
    [found] = (await client.lookup_all(ServiceTemplate(service_id=first.service_id))).items
    assert found.attributes == (Name("ACME again"),)
    await aio.close_shared_pool()


@pytest.mark.asyncio
async def test_lookup_all_goes_on_after_a_cursor(served: tuple[LookupService, str, ServingDaemon]) -> None:
    _, uri, _ = served
    client = AsyncLookup(uri)
    registered = [(await client.register(item(f"q{number}"), 30)).service_id for number in range(3)]
    first = await client.lookup_all(ServiceTemplate(), 2)
    assert first.cursor is not None and first.total == 3
    rest = await client.lookup_all(ServiceTemplate(), 2, after=first.cursor)
    assert [found.service_id for found in first.items + rest.items] == registered and rest.cursor is None
    with pytest.raises(TypeError, match="a cursor is a str"):
        await client.lookup_all(ServiceTemplate(), 2, after=5)  # type: ignore[arg-type]
    await aio.close_shared_pool()


@pytest.mark.asyncio
async def test_the_cache_tells_added_changed_and_removed_through_async_for(
        served: tuple[LookupService, str, ServingDaemon]) -> None:
    service, uri, _ = served
    early = service.register(item("early"), 30)
    service.register(item("elsewhere", types=("other.Type",)), 30)
    async with AsyncLookupCache(uri, ServiceTemplate(types=[QUOTER])) as cache:
        assert await cache.wait_ready(TIMEOUT)
        assert [i.attributes[0].name for i in cache.items()] == ["early"]
        changes = cache.changes()
        assert await next_change(changes) == ("added", "early")  # the view as it is, replayed
        late = service.register(item("late"), 30)
        assert await next_change(changes) == ("added", "late")
        late.add_attributes([Name("second name")])
        assert await next_change(changes) == ("changed", "late")
        early.lease.cancel()
        assert await next_change(changes) == ("removed", "early")
        assert await cache.wait_until(lambda items: len(items) == 1, TIMEOUT)
        found = cache.first()
        assert found is not None and found.service_uri == "PYRO:late@127.0.0.1:9"
        assert cache.first(lambda i: False) is None
        cache.discard(found)  # the client found it dead
        assert await next_change(changes) == ("removed", "late")
        assert len(cache) == 0
    with pytest.raises(StopAsyncIteration):  # closing ends every reader
        await asyncio.wait_for(changes.__anext__(), TIMEOUT)


@pytest.mark.asyncio
async def test_a_service_whose_lease_runs_out_leaves_the_cache() -> None:
    clock = FakeClock()
    service = LookupService(clock=clock)
    try:
        with ServingDaemon() as serving:
            uri = serving.register(service)
            service.register(item("brief"), 5)
            async with AsyncLookupCache(uri, ServiceTemplate(types=[QUOTER])) as cache:
                changes = cache.changes()
                assert await next_change(changes) == ("added", "brief")
                clock.advance(6)  # nobody renews it: the lookup service's reaper ends it
                assert await next_change(changes) == ("removed", "brief")
    finally:
        service.close()


@pytest.mark.asyncio
async def test_the_join_manager_keeps_a_service_the_cache_finds_and_calls(
        served: tuple[LookupService, str, ServingDaemon]) -> None:
    service, uri, serving = served
    quoter = Quoter()
    serving.daemon.register(quoter)
    async with aio.AsyncLeaseRenewalManager() as renewals:
        async with AsyncJoinManager(quoter, types=[QUOTER], attributes=[Name("ACME quotes")], lookups=[uri],
                                    lease_duration=30, renewal_manager=renewals) as join:
            assert await join.wait_registered(1, TIMEOUT)
            assert join.service_id is not None and list(join.registrations()) == [uri]
            assert join.secret is not None and service_id_for(join.secret) == join.service_id
            wanted = ServiceTemplate(types=[QUOTER], attributes=[Name("ACME quotes")])
            async with AsyncLookupCache(uri, wanted) as cache:
                changes = cache.changes()
                kind, name = await next_change(changes)
                assert (kind, name) == ("added", "ACME quotes")
                found = cache.first()
                assert found is not None and found.service_id == join.service_id
                assert await aio.call(found.service_uri, "quote", "ACME") == 42.0
                await join.set_attributes([Name("ACME quotes"), Name("second")])
                assert await next_change(changes) == ("changed", "ACME quotes")
                await join.aclose()  # cancels its registration: the service leaves at once
                assert await next_change(changes) == ("removed", "ACME quotes")
    assert service.registrations() == []
    await aio.close_shared_pool()


@pytest.mark.asyncio
async def test_a_wait_on_an_unreachable_lookup_service_leaves_the_loop_running_and_can_be_cancelled() -> None:
    nowhere = f"PYRO:lookup@127.0.0.1:{free_port()}"
    async with AsyncJoinManager("PYRO:svc@127.0.0.1:9", types=[QUOTER], lookups=[nowhere],
                                retry_initial=0.05, retry_max=0.1) as join:
        waiting = asyncio.ensure_future(join.wait_registered(1))
        ticks = 0
        while ticks < 100:  # the loop runs on while the wait is under way
            await asyncio.sleep(0)
            ticks += 1
        assert not waiting.done()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert not await join.wait_registered(1, timeout=0.3)  # a bounded wait says it did not happen
        assert join.lookup_services() == [nowhere]
        join.remove_lookups([nowhere])  # the same words as the JoinManager and the caches
        assert join.lookup_services() == []
    async with AsyncLookupCache(nowhere, ServiceTemplate(types=[QUOTER]), retry_initial=0.05) as cache:
        assert not await cache.wait_ready(0.3)
        assert cache.last_error is not None


@pytest.mark.asyncio
async def test_bad_input_gets_a_clear_error(served: tuple[LookupService, str, ServingDaemon]) -> None:
    service, uri, _ = served
    with pytest.raises(TypeError, match="lookup service"):
        AsyncLookup(42)
    with pytest.raises(TypeError, match="pool"):
        AsyncLookup(uri, pool="mine")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timeout"):
        AsyncLookup(uri, timeout=-1)
    client = AsyncLookup(uri)
    with pytest.raises(TypeError, match="ServiceItem"):
        await client.register("an item", 30)  # type: ignore[arg-type]
    for duration in (-5, math.nan, "30"):
        with pytest.raises(ValueError):
            await client.register(item("x"), duration)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="renewals"):
        await client.register(item("x"), 30, renewals="manager")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ServiceTemplate"):
        await client.lookup("a template")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_matches"):
        await client.lookup_all(ServiceTemplate(), -1)
    with pytest.raises(TypeError, match="max_matches"):
        await client.lookup_all(ServiceTemplate(), 1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="transitions"):
        await client.notify(ServiceTemplate(), 0, "PYRO:l@127.0.0.1:9")
    with pytest.raises(TypeError, match="method"):
        await client.call("_pyroRelease")
    assert service.registrations() == []  # nothing reached the lookup service
    with pytest.raises(TypeError, match="ServiceTemplate"):
        AsyncLookupCache(uri, "a template")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="async for"):
        AsyncLookupCache(uri, ServiceTemplate(), listener=print)
    with pytest.raises(TypeError, match="renewal manager"):
        AsyncLookupCache(uri, ServiceTemplate(), renewal_manager="mine")
    cache = AsyncLookupCache(uri, ServiceTemplate())
    with pytest.raises(RuntimeError, match="not started"):
        await cache.wait_ready(1)
    async with cache:
        for timeout in (-1, math.nan):
            with pytest.raises(ValueError, match="timeout"):
                await cache.wait_until(bool, timeout)
            with pytest.raises(ValueError, match="timeout"):
                await cache.wait_ready(timeout)
        with pytest.raises(RuntimeError, match="started"):
            await cache.start()
    await aio.close_shared_pool()


