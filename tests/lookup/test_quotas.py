"""lookup.quotas: what one client may hold in a lookup service, how its attributes are measured,
and what one answer may carry.

Here the rules alone, and a lookup service over a real daemon (where callers are
counted by their host, 127.0.0.1); calls made in process are never counted.
"""

from __future__ import annotations

from typing import Any

import Pyro5.api
import pytest

from landlord import LeaseDeniedError, LeaseStore
from lookup import Comment, LookupService, Name, ServiceItem, ServiceTemplate
from lookup.service.quotas import ClientCounts, LookupLimits, answer_bytes, attribute_bytes, fitting

SERVICE = "PYRO:quotes@127.0.0.1:9"


def item(*attributes: Any, service_id: str | None = None) -> ServiceItem:
    return ServiceItem(service_id, SERVICE, ["quotes.Quoter"], list(attributes))


# -- the rules ------------------------------------------------------------------------------------

def test_a_client_holds_up_to_its_limit_and_gets_room_back_as_its_leases_end() -> None:
    counts = ClientCounts(2, "registrations", exempt=["in-process"])
    for cookie in ("a", "b"):
        counts.check("10.0.0.1")
        counts.hold(cookie, "10.0.0.1")
    with pytest.raises(LeaseDeniedError, match="at most 2 registrations here, and 10.0.0.1 holds 2"):
        counts.check("10.0.0.1")
    counts.check("10.0.0.2")  # another client is counted apart
    counts.check("in-process")  # the operator's own calls never
    counts.hold("c", "in-process")
    assert counts.held("in-process") == 0
    counts.release("a")
    counts.check("10.0.0.1")
    counts.release("a")  # twice, or an uncounted cookie: nothing
    counts.release("unknown")
    assert counts.held("10.0.0.1") == 1
    assert counts.refused == 1


def test_replacing_ones_own_lease_at_the_limit_is_allowed_and_a_strangers_is_not() -> None:
    counts = ClientCounts(1, "registrations")
    counts.hold("mine", "10.0.0.1")
    counts.check("10.0.0.1", replacing="mine")
    with pytest.raises(LeaseDeniedError):
        counts.check("10.0.0.1", replacing="theirs")


def test_attribute_bytes_counts_strings_and_each_other_value() -> None:
    assert attribute_bytes(item()) == 0
    assert attribute_bytes(item(Name("abcd"))) == 4
    assert attribute_bytes(item(Comment("x" * 1000), Name("ab"))) == 1002
    nested = item(Comment([["a" * 10, 5], {"k": "vv"}]))  # type: ignore[arg-type]
    assert attribute_bytes(nested) == 8 + (8 + 10 + 8) + (1 + 2)


@pytest.mark.parametrize("bad", [{"registrations_per_client": 0}, {"attribute_bytes": -1},
                                 {"event_registrations_per_client": True}, {"attribute_bytes": 1.5}])
def test_bad_limits_are_refused_by_name(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        LookupLimits(**bad)


def test_a_lookup_service_takes_only_lookup_limits() -> None:
    with pytest.raises(TypeError, match="LookupLimits"):
        LookupService(limits={"registrations_per_client": 1})  # type: ignore[arg-type]


# -- a lookup service ---------------------------------------------------------------------------------

def test_attributes_over_the_limit_are_refused_on_registering_and_on_changing_and_change_nothing() -> None:
    service = LookupService(limits=LookupLimits(attribute_bytes=100))
    try:
        with pytest.raises(ValueError, match="attributes of 101 bytes: a registration may carry at most 100"):
            service.register(item(Comment("x" * 101)), 30)
        assert len(service.manager) == 0
        registration = service.register(item(Comment("x" * 60)), 30)
        with pytest.raises(ValueError, match="at most 100"):
            service.add_attributes(registration.lease.cookie, [Comment("y" * 41)])
        found = service.lookup_all(ServiceTemplate(), 10).items
        assert [entry.comment for entry in found[0].attributes] == ["x" * 60]  # type: ignore[attr-defined]
        assert service.limit_refusals()["attribute_bytes"] == 2
    finally:
        service.close()


def test_a_remote_client_holds_at_most_its_registrations_and_event_registrations(daemon: Any) -> None:
    limits = LookupLimits(registrations_per_client=2, event_registrations_per_client=1)
    service = LookupService(limits=limits)
    try:
        with Pyro5.api.Proxy(daemon.register(service)) as remote:
            first = remote.register(item(Name("one")), 30)
            second = remote.register(item(Name("two")), 30)
            with pytest.raises(LeaseDeniedError, match="at most 2 registrations here, and 127.0.0.1 holds 2"):
                remote.register(item(Name("three")), 30)
            assert service.lookup_all(ServiceTemplate(), 10).total == 2
            remote.register(item(Name("one again"), service_id=first.service_id), 30, first.secret)  # its own
            with pytest.raises(LeaseDeniedError):  # the replaced one's count went with it: still 2
                remote.register(item(Name("three")), 30)
            second.lease.cancel()
            remote.register(item(Name("three")), 30)  # room again
            watch = remote.notify(ServiceTemplate(), 7, "PYRO:listener@127.0.0.1:9", None, 30)
            with pytest.raises(LeaseDeniedError, match="at most 1 event registrations"):
                remote.notify(ServiceTemplate(), 7, "PYRO:listener@127.0.0.1:9", None, 30)
            watch.lease.cancel()
            remote.notify(ServiceTemplate(), 7, "PYRO:listener@127.0.0.1:9", None, 30)
        for index in range(5):  # in process: the operator's own, not counted
            service.register(item(Name(f"local {index}")), 30)
        assert service.limit_refusals() == {"registrations_per_client": 2, "event_registrations_per_client": 1,
                                            "attribute_bytes": 0}
    finally:
        service.close()


def test_what_a_client_holds_is_counted_again_after_a_restart_on_the_store(daemon: Any, tmp_path: Any) -> None:
    limits = LookupLimits(registrations_per_client=2, event_registrations_per_client=1)
    first = LookupService(limits=limits, store=LeaseStore(tmp_path / "lookup.sqlite"))
    try:
        with Pyro5.api.Proxy(daemon.register(first)) as remote:
            kept = remote.register(item(Name("one")), 60)
            remote.register(item(Name("two")), 60)
            remote.notify(ServiceTemplate(), 7, "PYRO:listener@127.0.0.1:9", None, 60)
    finally:
        daemon.daemon.unregister(first)
        first.close()
    again = LookupService(limits=limits, store=LeaseStore(tmp_path / "lookup.sqlite"))
    try:
        with Pyro5.api.Proxy(daemon.register(again)) as remote:
            with pytest.raises(LeaseDeniedError, match="at most 2 registrations here, and 127.0.0.1 holds 2"):
                remote.register(item(Name("three")), 60)
            with pytest.raises(LeaseDeniedError, match="at most 1 event registrations"):
                remote.notify(ServiceTemplate(), 7, "PYRO:listener@127.0.0.1:9", None, 60)
            remote.cancel(kept.lease.cookie)  # an ended one taken back gives its room back
            remote.register(item(Name("three")), 60)
    finally:
        again.close()


# -- what one answer may carry ----------------------------------------------------------------------

def test_fitting_takes_the_leading_sizes_within_the_budget_and_always_one() -> None:
    assert fitting([40, 60, 1], budget=100) == 2  # 40 + 60 fit; one more would not
    assert fitting([40, 61, 1], budget=100) == 1  # in order: a small one after is not taken instead
    assert fitting([250, 1], budget=100) == 1  # one alone, however large: a long answer still moves on
    assert fitting([], budget=100) == 0
    assert fitting(iter([1] * 10), budget=100) == 10
    with pytest.raises(ValueError, match="budget must be 0 or more"):
        fitting([1], budget=-1)


def test_answer_bytes_counts_attributes_names_and_framing() -> None:
    bare = ServiceItem("0" * 8, SERVICE, [], [])
    assert answer_bytes(bare) == 128 + 8 + len(SERVICE)
    typed = bare.replace(types=["quotes.Quoter"])
    assert answer_bytes(typed) == answer_bytes(bare) + len("quotes.Quoter") + 8
    commented = bare.replace(attributes=[Comment("x" * 1000)])
    lineage = sum(len(name) + 8 for name in Comment("")._entry_lineage)
    assert answer_bytes(commented) == answer_bytes(bare) + 64 + lineage + len("comment") + 8 + 1000
    assert answer_bytes(commented) - answer_bytes(bare) >= attribute_bytes(commented)
