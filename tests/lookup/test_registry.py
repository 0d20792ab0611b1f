"""Registry alone: registrations and their leases, with a fake clock and no
lookup service, lease manager or Pyro5 daemon (leases are LeasedResources made here)."""

from __future__ import annotations

import itertools
from typing import Any

import Pyro5.api
import pytest
from Pyro5.serializers import SerpentSerializer

from landlord import FakeClock, LeasedResource, UnknownLeaseError
from lookup import Expiry, Location, Name, ServiceItem, ServiceTemplate
from lookup.service.registry import Registry, ServiceRecord

URI = "PYRO:registered@127.0.0.1:9999"
EVERYTHING = ServiceTemplate()
_cookies = (f"cookie-{n:015d}" for n in itertools.count())


@pytest.fixture
def registry(clock: FakeClock) -> Registry:
    return Registry(clock=clock)


def leased(service_id: str, *attributes: Any, types: tuple[str, ...] = ("t.A",), until: float = 30.0,
           service: Any = URI) -> ServiceRecord:
    """A record as the lookup service makes it: its item, and its lease granted until ``until``."""
    record = ServiceRecord(ServiceItem(service_id, service, types, attributes))
    lease = LeasedResource(next(_cookies), until, record)
    record.cookie, record.leased = lease.cookie, lease
    return record


def found(registry: Registry, template: ServiceTemplate = EVERYTHING) -> list[str | None]:
    return [item.service_id for item in registry.matching(template)]


def test_add_stores_files_and_answers_in_registration_order(registry: Registry) -> None:
    for name in ("one", "two", "three"):
        assert registry.add(leased(name, Name(name))) is None
    assert found(registry) == ["one", "two", "three"] and len(registry) == 3
    assert found(registry, ServiceTemplate(attributes=[Name("two")])) == ["two"]
    assert found(registry, ServiceTemplate(service_id="three")) == ["three"]
    assert found(registry, ServiceTemplate(service_id="nobody")) == []
    assert [item.service_id for item in registry.matching(ServiceTemplate(), limit=2)] == ["one", "two"]
    assert set(registry.index.position) == set(registry.records) == {"one", "two", "three"}


def test_a_record_without_a_lease_or_an_id_is_refused(registry: Registry) -> None:
    with pytest.raises(ValueError):
        registry.add(ServiceRecord(ServiceItem("x", URI)))
    record = leased("y")
    record.item = ServiceItem(None, URI)
    with pytest.raises(ValueError):
        registry.add(record)
    assert len(registry) == 0 and len(registry.index) == 0


def test_adding_under_the_same_id_replaces_in_place(registry: Registry) -> None:
    first = registry.add(leased("one", Name("v1")))
    registry.add(leased("two"))
    old = registry.records["one"]
    assert first is None
    assert registry.add(leased("one", Name("v2"), types=("t.B",))) is old and old.replaced
    assert found(registry) == ["one", "two"]  # its place kept
    assert found(registry, ServiceTemplate(attributes=[Name("v1")])) == []
    assert found(registry, ServiceTemplate(types=["t.B"])) == ["one"]
    assert not registry.end(old)  # the end of the replaced lease is not the service's
    assert found(registry) == ["one", "two"]


def test_expired_records_are_never_found(registry: Registry, clock: FakeClock) -> None:
    registry.add(leased("short", until=5))
    registry.add(leased("long", until=50))
    clock.advance(5)  # an expiration is exclusive: at 5 the short one is gone
    assert found(registry) == ["long"] and found(registry, ServiceTemplate(service_id="short")) == []
    assert [(item.service_id, left) for item, left in registry.registrations()] == [("long", 45)]
    assert "short" in registry.records  # still stored until its end is reported
    assert registry.end(registry.records["short"]) and "short" not in registry.index.position


def test_the_holder_of_an_id_is_its_live_record_or_one_in_its_grace(registry: Registry, clock: FakeClock) -> None:
    record = leased("one", until=10)
    registry.add(record)
    assert registry.holder("one") is record and registry.holder("nobody") is None
    clock.advance(10)  # its term is over...
    assert registry.holder("one") is None
    assert registry.holder("one", grace=5) is record  # ...its grace is not
    clock.advance(5)
    assert registry.holder("one", grace=5) is None
    for bad in (-1.0, float("nan")):
        with pytest.raises(ValueError, match="grace"):
            registry.holder("one", grace=bad)


def test_change_refiles_the_item_and_returns_the_one_before(registry: Registry, clock: FakeClock) -> None:
    record = leased("one", Location(floor=1))
    registry.add(record)
    before = registry.change(record, lambda item: item.replace(attributes=[Location(floor=2)]))
    assert before.attributes == (Location(floor=1),) and record.item.attributes == (Location(floor=2),)
    assert found(registry, ServiceTemplate(attributes=[Location(floor=1)])) == []
    assert found(registry, ServiceTemplate(attributes=[Location(floor=2)])) == ["one"]
    clock.advance(30)
    with pytest.raises(UnknownLeaseError):
        registry.change(record, lambda item: item)


def test_a_replaced_record_cannot_be_changed(registry: Registry) -> None:
    old = leased("one", Name("v1"))
    registry.add(old)
    registry.add(leased("one", Name("v2")))
    with pytest.raises(UnknownLeaseError):
        registry.change(old, lambda item: item.replace(attributes=[Name("stolen")]))
    assert found(registry, ServiceTemplate(attributes=[Name("v2")])) == ["one"]


def test_end_forgets_only_the_stored_record(registry: Registry) -> None:
    record = leased("one")
    registry.add(record)
    stranger = leased("one")  # never added
    assert not registry.end(stranger)
    assert registry.end(record)
    assert not registry.end(record)  # once
    assert len(registry) == 0 and len(registry.index) == 0 and not registry.index.by_type


def test_the_stored_form_survives_serpent_and_is_restored(registry: Registry, clock: FakeClock) -> None:
    record = leased("one", Name("kept"), Location(floor=3))
    record.client = "10.0.0.7"
    data = registry.dump(record)
    assert data == {"item": record.item, "client": "10.0.0.7"}
    serpent = SerpentSerializer()
    copy = registry.load(serpent.loads(serpent.dumps(data)))
    assert copy.item == record.item and copy.leased is None and not copy.replaced and copy.client == "10.0.0.7"
    assert registry.load({"item": record.item}).client == ""  # stored before clients were: nobody's
    with pytest.raises(TypeError, match="client is a str"):
        registry.load({"item": record.item, "client": 7})
    registry.restored(LeasedResource("restored-cookie-000000", 30.0, copy))
    assert copy.cookie == "restored-cookie-000000" and registry.records["one"] is copy
    assert found(registry, ServiceTemplate(attributes=[Location(floor=3)])) == ["one"]


def test_a_records_term_is_said_with_what_it_has_left(registry: Registry, clock: FakeClock) -> None:
    record = leased("one", until=30.0)
    record.term = 40.0
    registry.add(record)
    clock.advance(10)
    assert registry.expiry(record) == Expiry(20.0, 40.0)
    assert registry.matching_records(EVERYTHING) == [record]
    assert registry.expiries([record, ServiceRecord(ServiceItem("x", URI))]) == [Expiry(20.0, 40.0), None]
    assert registry.load(registry.dump(record)).term is None  # the store keeps no term
    record.term = None
    assert registry.expiry(record) == Expiry(20.0, 20.0)  # what it has left stands for its term
    clock.advance(20)
    assert registry.expiry(record) is None  # nothing left to say
    assert registry.expiry(ServiceRecord(ServiceItem("x", URI))) is None  # no lease yet


def test_a_record_restored_twice_under_one_id_replaces_the_first(registry: Registry) -> None:
    # the process died between registering again and cancelling the old lease
    older, newer = registry.load({"item": ServiceItem("one", URI)}), registry.load({"item": ServiceItem("one", URI)})
    registry.restored(LeasedResource("cookie-older-00000000", 30.0, older))
    registry.restored(LeasedResource("cookie-newer-00000000", 30.0, newer))
    assert older.replaced and registry.records["one"] is newer


def test_a_proxy_is_stored_as_its_uri(registry: Registry) -> None:
    with Pyro5.api.Proxy(URI) as proxy:  # never connected
        data = registry.dump(leased("proxied", service=proxy))
    assert data["item"].service == URI and isinstance(data["item"].service, str)
    assert registry.load(data).item.service == URI


@pytest.mark.parametrize("data", [{"item": "not an item"}, {"item": ServiceItem(None, URI)}, {}])
def test_what_is_not_a_stored_registration_is_refused(registry: Registry, data: Any) -> None:
    with pytest.raises(TypeError):
        registry.load(data)


def test_restoring_something_else_is_refused(registry: Registry) -> None:
    with pytest.raises(TypeError):
        registry.restored(LeasedResource("cookie-other-00000000", 30.0, "not a record"))
