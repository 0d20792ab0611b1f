"""A landlord for the asyncio tests (tests/landlord/test_aio_*.py): Rooms, served in a daemon, and
a pool fixture that runs each test over asyncio streams and over worker threads."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import Pyro5.api
import pytest
import pytest_asyncio

from landlord import Landlord, LandlordLease, LeaseDurationPolicy, RenewResults, aio
from landlord.testing import Recorder, ServingDaemon


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
