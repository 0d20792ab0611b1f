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

from landlord import UnknownLeaseError
from lookup import JoinManager, LookupService, Name, ServiceItem, ServiceTemplate, Status
from lookup.ownership import NotOwnerError, new_registration_secret, service_id_for


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
    with JoinManager(quoter, attributes=[Name("quotes")], lookups=[uri for _, uri in lookups],
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
    with JoinManager(quoter, attributes=[Name("survivor")], lookups=[uri], lease_duration=2.0) as join:
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
    with JoinManager(quoter, lookups=[f"PYRO:lookup@127.0.0.1:{port}"], lease_duration=5,
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
        with JoinManager(quoter, lookups=[uri], lease_duration=1.5) as join:
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
            JoinManager(quoter, lookups=[uri], lease_duration=5, retry_initial=0.02, retry_max=0.05) as join:
        assert watch.wait_count(logging.DEBUG, uri, 3)  # retried, and again, and again
        assert not join.wait_registered(1, timeout=0)
        assert isinstance(join.last_error, Pyro5.errors.CommunicationError)  # why it is not registered
        assert set(join.errors()) == {uri} and join.lookup_services() == [uri]
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
                JoinManager(quoter, lookups=[first.uri, second.uri], lease_duration=1.0,
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


# -- the service's id is its own (lookup.ownership) ------------------------------------------------

def stranger_item(service_id: str | None) -> ServiceItem:
    return ServiceItem(service_id, "PYRO:stranger@127.0.0.1:1", [Quoter], [Name("survivor")])


def test_after_a_restart_a_stranger_cannot_take_the_id_and_the_service_gets_it_back(daemon: Any) -> None:
    served = ServedLookup()
    quoter = Quoter()
    quoter_uri = str(daemon.register(quoter))
    try:
        with JoinManager(quoter, attributes=[Name("survivor")], lookups=[served.uri], lease_duration=1.0,
                         retry_initial=0.05, retry_max=0.2) as join:
            assert join.wait_registered(1, timeout=10)
            service_id, secret = join.service_id, join.secret
            assert service_id is not None and secret is not None and service_id_for(secret) == service_id
            served.stop()
            served.service.close()
            served.service = LookupService()  # restarted, it knows no one: the id is free but still the service's
            with pytest.raises(NotOwnerError):
                served.service.register(stranger_item(service_id), 30)
            served.start()
            assert join.wait_times_registered(2, timeout=10)  # with its secret
            with Pyro5.api.Proxy(served.uri) as remote:
                with pytest.raises(NotOwnerError):  # over the wire, as itself
                    remote.register(stranger_item(service_id), 30)
                [found] = remote.lookup_all(ServiceTemplate(service_id=service_id), 10).items
            assert found.service_uri == quoter_uri and join.service_id == service_id
    finally:
        served.close()


def test_a_service_restarted_with_its_secret_takes_its_id_back_at_once_and_a_stranger_cannot(
        daemon: Any, lookups: list) -> None:
    (service, uri), _ = lookups
    quoter = Quoter()
    daemon.register(quoter)
    crashed = JoinManager(quoter, lookups=[uri], lease_duration=30)
    assert crashed.wait_registered(1, timeout=10)
    service_id, secret, old = crashed.service_id, crashed.secret, crashed.registrations()[uri]
    crashed.close(cancel=False)  # its registration lives on for its 30 s, as after a crash
    with LogWatch("lookup.join") as watch, \
            JoinManager(quoter, lookups=[uri], service_id=service_id, lease_duration=30,
                        retry_initial=0.02, retry_max=0.05) as stranger:  # the id alone: refused, and again
        assert watch.wait_count(logging.DEBUG, uri, 2)
        assert isinstance(stranger.last_error, NotOwnerError) and stranger.registrations() == {}
    with JoinManager(quoter, lookups=[uri], secret=secret, lease_duration=30) as restarted:
        assert restarted.service_id == service_id  # known from the secret before any lookup service answers
        assert restarted.wait_registered(1, timeout=10)
        assert service.lookup_all(ServiceTemplate(service_id=service_id), 10).total == 1
        with pytest.raises(UnknownLeaseError):  # the crashed registration was replaced
            old.lease.renew(30)


def test_a_secret_that_does_not_prove_the_id_given_is_refused() -> None:
    secret = new_registration_secret()
    with pytest.raises(ValueError, match="proves"):
        JoinManager("PYRO:quoter@127.0.0.1:1", types=[Quoter], service_id="my-quoter", secret=secret)
    with pytest.raises(ValueError, match="secret"):
        JoinManager("PYRO:quoter@127.0.0.1:1", types=[Quoter], secret="too short")
    with pytest.raises(TypeError, match="secret"):
        JoinManager("PYRO:quoter@127.0.0.1:1", types=[Quoter], secret=b"s" * 22)  # type: ignore[arg-type]
    assert JoinManager("PYRO:quoter@127.0.0.1:1", types=[Quoter], service_id=service_id_for(secret),
                       secret=secret).service_id == service_id_for(secret)


class FlakyChanges(LookupService):
    """A lookup service whose first attribute change fails, the registration left as it was."""

    def __init__(self) -> None:
        super().__init__()
        self.failed_once = False

    @Pyro5.api.expose
    def add_attributes(self, cookie: str, entries: Any) -> None:
        if not self.failed_once:
            self.failed_once = True
            raise RuntimeError("lost on the way")
        super().add_attributes(cookie, entries)


def test_a_failed_change_registers_a_chosen_id_again_with_its_live_lease_as_proof(daemon: Any) -> None:
    service = FlakyChanges()
    uri = daemon.register(service)
    quoter = Quoter()
    daemon.register(quoter)
    try:
        with JoinManager(quoter, lookups=[uri], service_id="my-quoter", lease_duration=30,
                         retry_initial=5, retry_max=10) as join:  # a refusal would wait out a retry
            assert join.wait_registered(1, timeout=10)
            join.add_attributes([Status(Status.WARNING)])  # fails there: the registration is stale
            assert join.wait_times_registered(2, timeout=4)  # at once: the old lease proved the id
            [found] = service.lookup_all(ServiceTemplate(service_id="my-quoter"), 10).items
            assert found.attributes == (Status(Status.WARNING),) and join.last_error is None
    finally:
        service.close()


def test_a_join_manager_takes_one_lookup_service_as_the_caches_do() -> None:
    first, second = (f"PYRO:lookup@127.0.0.1:{free_port()}" for _ in range(2))
    with JoinManager("PYRO:svc@127.0.0.1:9", types=["x.Quoter"], lookups=first, lease_duration=30) as join:
        join.add_lookups(second)  # one, not its characters
        assert sorted(join.lookup_services()) == sorted([first, second])
        join.remove_lookups(first)
        assert join.lookup_services() == [second]
        with pytest.raises(TypeError, match="a lookup service is a proxy or URI"):
            join.add_lookups(["not a uri"])
        assert join.lookup_services() == [second]  # nothing added
