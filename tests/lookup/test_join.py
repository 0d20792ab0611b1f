"""JoinManager: registers a service everywhere, under one id, and again whenever it is lost."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import Pyro5.api
import Pyro5.errors
import pytest
from conftest import Child, free_port
from served_lookups import LogWatch, RenewalSpy, ServedLookup

from lookup import JoinManager, LookupService, Name, ServiceTemplate, Status


@Pyro5.api.expose
class Quoter:
    def quote(self, symbol: str) -> float:
        return 42.0


class StockQuoter(Quoter):
    pass


@pytest.fixture
def lookups(daemon: Any) -> Iterator[list[tuple[LookupService, str]]]:
    services = [LookupService() for _ in range(2)]
    yield [(service, daemon.register(service)) for service in services]
    for service in services:
        service.close()


def test_registers_with_every_lookup_service_under_one_id(daemon: Any, lookups: list) -> None:
    quoter = StockQuoter()
    daemon.register(quoter)
    with JoinManager(quoter, attributes=[Name("quotes")], locators=[uri for _, uri in lookups],
                     lease_duration=30) as join:
        assert join.wait_registered(2, timeout=10)
        assert join.service_id is not None
        for service, _ in lookups:
            matches = service.lookup_all(ServiceTemplate(types=[Quoter], attributes=[Name("quotes")]), 10)
            assert matches.total == 1
            found = matches.items[0]
            assert found.service_id == join.service_id  # types were read off the class
            assert "test_join.StockQuoter" in found.types[0] and any(t.endswith("Quoter") for t in found.types)
        join.add_attributes([Status(Status.WARNING)])
        join.modify_attributes([Name()], [Name("renamed")])
        for service, _ in lookups:
            [found] = service.lookup_all(ServiceTemplate(service_id=join.service_id), 10).items
            assert found.attributes == (Name("renamed"), Status(Status.WARNING))
    # closing cancelled the registrations: the service left at once
    for service, _ in lookups:
        assert service.lookup(ServiceTemplate(service_id=join.service_id)) is None


def test_a_uri_without_types_is_refused() -> None:
    with pytest.raises(TypeError, match="types"):
        JoinManager("PYRO:quoter@127.0.0.1:1")


def test_registers_again_under_the_same_id_when_a_lookup_service_restarts(
        daemon: Any, spawn: Callable[..., Child]) -> None:
    port = str(free_port())
    uri = spawn("lookup_service.py", port).expect("URI:")
    quoter = Quoter()
    daemon.register(quoter)
    with JoinManager(quoter, attributes=[Name("survivor")], locators=[uri], lease_duration=2.0) as join:
        assert join.wait_times_registered(1, timeout=10)
        service_id = join.service_id
        spawn.children[-1].kill()  # kill -9: it forgets everything
        assert spawn("lookup_service.py", port).expect("URI:") == uri
        # the next renewal (about a second in) meets a lookup service that never heard of it
        assert join.wait_times_registered(2, timeout=10)
        with Pyro5.api.Proxy(uri) as restarted:
            found = restarted.lookup_all(ServiceTemplate(attributes=[Name("survivor")]), 10)
        assert found.total == 1 and found.items[0].service_id == service_id


def test_a_lookup_service_that_comes_up_later_is_joined_when_it_does(
        daemon: Any, spawn: Callable[..., Child]) -> None:
    port = str(free_port())
    quoter = Quoter()
    daemon.register(quoter)
    with JoinManager(quoter, locators=[f"PYRO:lookup@127.0.0.1:{port}"], lease_duration=5,
                     retry_initial=0.1, retry_max=0.5) as join:
        assert not join.wait_registered(1, timeout=0.3)  # nobody there yet
        spawn("lookup_service.py", port).expect("URI:")
        assert join.wait_registered(1, timeout=10)


def test_each_renewal_asks_for_the_term_given_not_the_lookup_services_maximum(daemon: Any) -> None:
    # JoinManager used to renew for FOREVER, which the lookup service cuts to its maximum (300 s):
    # a killed service then stayed listed for minutes, not for its 1.5 s term
    service = RenewalSpy()
    uri = daemon.register(service)
    quoter = Quoter()
    daemon.register(quoter)
    try:
        with JoinManager(quoter, locators=[uri], lease_duration=1.5) as join:
            assert join.wait_registered(1, timeout=10)
            assert service.renewed.wait(10)  # the first renewal, a third of the term in
            [(_, left)] = service.registrations()
            assert 0.5 < left <= 1.5 + 0.01
    finally:
        service.close()


def test_an_unreachable_lookup_service_is_retried_warned_about_once_and_its_error_kept(
        daemon: Any, caplog: pytest.LogCaptureFixture) -> None:
    port = free_port()
    uri = f"PYRO:lookup.LookupService@127.0.0.1:{port}"
    quoter = Quoter()
    daemon.register(quoter)
    caplog.set_level(logging.DEBUG, logger="lookup.join")
    with LogWatch("lookup.join") as watch, \
            JoinManager(quoter, locators=[uri], lease_duration=5, retry_initial=0.02, retry_max=0.05) as join:
        assert watch.wait_count(logging.DEBUG, uri, 3)  # retried, and again, and again
        assert not join.wait_registered(1, timeout=0)
        assert isinstance(join.last_error, Pyro5.errors.CommunicationError)  # why it is not registered
        assert set(join.errors()) == {uri} and join.locators() == [uri]
        served = ServedLookup(port=port)
        try:
            assert join.wait_registered(1, timeout=10)
            assert watch.wait_count(logging.INFO, f"reached {uri} again", 1)
            assert join.last_error is None and join.errors() == {}
        finally:
            served.close()
    warnings = [r for r in caplog.records if r.name == "lookup.join" and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and uri in warnings[0].getMessage()


def test_every_lookup_service_is_kept_through_outages_and_restarts(
        daemon: Any, caplog: pytest.LogCaptureFixture) -> None:
    first, second = ServedLookup(), ServedLookup()
    quoter = Quoter()
    daemon.register(quoter)
    caplog.set_level(logging.DEBUG, logger="lookup.join")
    try:
        with LogWatch("lookup.join") as watch, \
                JoinManager(quoter, locators=[first.uri, second.uri], lease_duration=1.0,
                            retry_initial=0.05, retry_max=0.2) as join:
            assert join.wait_registered(2, timeout=10)
            service_id = join.service_id
            for outage in (1, 2):
                first.stop()  # renewals there fail until the term ends: an outage
                assert watch.wait_count(logging.WARNING, first.uri, outage)
                assert watch.wait_count(logging.DEBUG, first.uri, 2 * outage)  # still retrying, quietly
                assert set(join.registrations()) == {second.uri}  # the other one is untouched
                assert isinstance(join.errors()[first.uri], Pyro5.errors.CommunicationError)
                first.restart()  # a new lookup service, on the same port, that knows nothing
                assert join.wait_times_registered(2 + outage, timeout=10)
                assert watch.wait_count(logging.INFO, f"reached {first.uri} again", outage)
                [found] = first.service.lookup_all(ServiceTemplate(service_id=service_id), 10).items
                assert join.wait_registered(2, timeout=0) and join.last_error is None
            assert second.service.lookup(ServiceTemplate(service_id=service_id)) is not None
    finally:
        first.close()
        second.close()
    warnings = [r for r in caplog.records if r.name == "lookup.join" and r.levelno == logging.WARNING]
    assert len(warnings) == 2  # once per outage, not once per failed attempt
