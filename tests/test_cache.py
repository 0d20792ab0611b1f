"""LookupCache: a local view kept current by events, across expiry and lookup-service restarts."""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterator

import Pyro5.api
import pytest

from conftest import Child, free_port
from lookup import LookupService, Name, ServiceItem, ServiceTemplate
from lookup.cache import LookupCache
from served_lookups import RenewalSpy

QUOTER = "examples.Quoter"


def item(name: str, *, types: tuple = (QUOTER,)) -> ServiceItem:
    return ServiceItem(None, f"PYRO:{name.replace(' ', '_')}@127.0.0.1:9", types, [Name(name)])


class Changes:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def __call__(self, kind: str, changed: ServiceItem) -> None:
        with self.lock:
            self.seen.append((kind, changed.attributes[0].name))


@pytest.fixture
def lookup(daemon: Any) -> Iterator[tuple[LookupService, str]]:
    service = LookupService()
    yield service, daemon.register(service)
    service.close()


def names(items: list[ServiceItem]) -> set[str]:
    return {i.attributes[0].name for i in items}


def test_snapshot_then_events_keep_the_cache_current(lookup: tuple[LookupService, str]) -> None:
    service, uri = lookup
    early = service.register(item("early"), 30)
    service.register(item("elsewhere", types=("other.Type",)), 30)
    changes = Changes()
    with LookupCache(uri, ServiceTemplate(types=[QUOTER]), listener=changes) as cache:
        assert cache.wait_ready(10)
        assert names(cache.items()) == {"early"}
        late = service.register(item("late"), 30)
        assert cache.wait_until(lambda items: names(items) == {"early", "late"}, 10)
        late.add_attributes([Name("second name")])
        assert cache.wait_until(lambda items: any(len(i.attributes) == 2 for i in items), 10)
        early.lease.cancel()
        assert cache.wait_until(lambda items: names(items) == {"late"}, 10)
        assert str(cache.lookup()._pyroUri) == "PYRO:late@127.0.0.1:9"  # answered locally
        assert cache.lookup(lambda i: names([i]) == {"nobody"}) is None
    assert changes.seen == [("added", "early"), ("added", "late"), ("changed", "late"), ("removed", "early")]
    assert service._events == {}  # closing cancelled the event registration


def test_an_expiring_service_leaves_the_cache(lookup: tuple[LookupService, str]) -> None:
    service, uri = lookup
    service.register(item("brief"), 1.0)
    with LookupCache(uri, ServiceTemplate(types=[QUOTER])) as cache:
        assert cache.wait_ready(10) and len(cache) == 1
        assert cache.wait_until(lambda items: not items, 10)  # gone when its lease ran out


def test_the_cache_subscribes_again_when_the_lookup_service_restarts(
        daemon: Any, spawn: Callable[..., Child]) -> None:
    port = str(free_port())
    uri = spawn("lookup_service.py", port).expect("URI:")
    with Pyro5.api.Proxy(uri) as first:
        first.register(item("before restart"), 60)
    with LookupCache(uri, ServiceTemplate(types=[QUOTER]), lease_duration=2.0, retry_delay=0.2) as cache:
        assert cache.wait_ready(10) and names(cache.items()) == {"before restart"}
        spawn.children[-1].kill()
        assert spawn("lookup_service.py", port).expect("URI:") == uri
        with Pyro5.api.Proxy(uri) as second:
            second.register(item("after restart"), 60)
        # the event lease's next renewal fails, the cache subscribes anew and takes a fresh snapshot
        assert cache.wait_until(lambda items: names(items) == {"after restart"}, 15)


def test_the_event_registration_is_renewed_for_the_term_given(daemon: Any) -> None:
    # not for FOREVER, which the lookup service would cut to its maximum (300 s)
    service = RenewalSpy()
    uri = daemon.register(service)
    try:
        with LookupCache(uri, ServiceTemplate(types=[QUOTER]), lease_duration=1.5) as cache:
            assert cache.wait_ready(10)
            assert service.renewed.wait(10)  # the first renewal, a third of the term in
            [record] = service._events.values()
            left = record.leased.expiration - service.clock.monotonic()
            assert 0.5 < left <= 1.5 + 0.01
    finally:
        service.close()


def test_bad_arguments() -> None:
    with pytest.raises(TypeError):
        LookupCache("PYRO:x@127.0.0.1:1", "not a template")  # type: ignore[arg-type]
    with pytest.raises((TypeError, ValueError)):
        LookupCache(42, ServiceTemplate())
