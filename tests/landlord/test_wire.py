"""The wire format: converters registered on import, checked against forged data."""

from __future__ import annotations

import math
import time

import pytest
import serpent
from Pyro5.serializers import JsonSerializer, MarshalSerializer, SerpentSerializer

import landlord
import landlord.wire
from landlord import LandlordLease, LeaseDeniedError, LeaseError, LeaseMapError, RenewResults, UnknownLeaseError
from landlord.holder.landlordlease import MAX_LANDLORDS
from landlord.wire import LEASE_CLASS

URI = "PYRO:obj_1@127.0.0.1:4160"
serializer = SerpentSerializer()


def round_trip(obj: object) -> object:
    return serializer.loads(serializer.dumps(obj))


def test_a_lease_travels_as_remaining_seconds() -> None:
    lease = LandlordLease("cookie-1", URI, "landlord-1", time.time() + 30)
    data = SerpentSerializer.class_to_dict(lease)
    assert data["__class__"] == "landlord.LandlordLease"
    assert set(data) == {"__class__", "cookie", "landlord", "landlord_id", "remaining", "term"}
    assert data["landlord"] == URI and 29 < data["remaining"] <= 30
    copy = round_trip(lease)
    assert isinstance(copy, LandlordLease) and copy == lease and copy.landlord == URI
    assert abs(copy.expiration - lease.expiration) < 1


def test_receiver_sets_expiration_on_its_own_clock() -> None:
    """Clocks of two hosts need not agree: only the remaining time is sent."""
    sender_clock = landlord.FakeClock(wall_offset=5_000_000.0)  # a sender whose wall clock is far off
    lease = LandlordLease("c", URI, "id", sender_clock.time() + 42, clock=sender_clock)
    copy = round_trip(lease)
    assert abs(copy.remaining - 42) < 1  # type: ignore[attr-defined]


def test_forever_travels_as_inf_and_expired_as_zero() -> None:
    forever = round_trip(LandlordLease("c", URI, "id", math.inf))
    assert math.isinf(forever.expiration)  # type: ignore[attr-defined]
    old = round_trip(LandlordLease("c", URI, "id", time.time() - 100))
    assert old.remaining == 0 and old.expired  # type: ignore[attr-defined]


def test_a_lease_keeps_its_term_across_the_wire() -> None:
    """A lease granted for 10 s and sent with 4 s left is still a 10 s lease where it arrives."""
    clock = landlord.FakeClock()
    lease = LandlordLease("c", URI, "id", clock.time() + 10, clock=clock, term=10)
    clock.advance(6)
    data = SerpentSerializer.class_to_dict(lease)
    assert data["remaining"] == pytest.approx(4) and data["term"] == 10
    copy = round_trip(lease)
    assert copy.term == 10 and copy.remaining == pytest.approx(4, abs=0.5)  # type: ignore[attr-defined]
    assert math.isinf(round_trip(LandlordLease("c", URI, "id", math.inf)).term)  # type: ignore[attr-defined]


def test_a_lease_from_an_older_sender_takes_remaining_as_its_term() -> None:
    old_form = {"__class__": "landlord.LandlordLease", "cookie": "c", "landlord": URI, "landlord_id": "id",
                "remaining": 7.0}
    lease = serializer.recreate_classes(old_form)
    assert isinstance(lease, LandlordLease) and lease.term == 7.0
    assert round_trip(old_form).term == 7.0  # type: ignore[attr-defined]


GROUP = [URI, "PYRO:obj_1@10.0.0.2:4160", "PYRO:obj_1@10.0.0.3:4160"]
OLD_FIELDS = {"__class__", "cookie", "landlord", "landlord_id", "remaining", "term"}


def previous_version_reads(data: dict) -> LandlordLease:
    """How the version before replicas read a lease (its lease_from_dict): the named fields, nothing else."""
    cookie, landlord_uri, landlord_id, remaining = landlord.wire.checked_fields(
        data, LEASE_CLASS, {"cookie": str, "landlord": str, "landlord_id": str, "remaining": (int, float)})
    term = data["term"] if "term" in data else remaining
    return LandlordLease(cookie, landlord_uri, landlord_id, time.time() + remaining, term=term)


def test_a_replicated_landlords_lease_travels_with_every_replica() -> None:
    lease = LandlordLease("c", GROUP[1], "group", time.time() + 30, term=30, landlords=GROUP)
    data = SerpentSerializer.class_to_dict(lease)
    assert set(data) == OLD_FIELDS | {"landlords"} and data["landlords"] == GROUP
    assert data["landlord"] == GROUP[1]  # the replica it came from, as before: an older receiver reaches the group
    for serializer_class in (SerpentSerializer, JsonSerializer, MarshalSerializer):
        wire = serializer_class()
        copy = wire.loads(wire.dumps(lease))
        assert isinstance(copy, LandlordLease) and copy == lease and copy.replicated
        assert copy.landlords == tuple(GROUP) and copy.landlord == GROUP[1] and copy.term == 30


def test_what_is_sent_stays_readable_by_the_previous_version() -> None:
    clock = landlord.FakeClock()
    lease = LandlordLease("c", URI, "group", clock.time() + 30, clock=clock, term=30, landlords=GROUP)
    plain = LandlordLease("c", URI, "group", clock.time() + 30, clock=clock, term=30)
    data, plain_data = SerpentSerializer.class_to_dict(lease), SerpentSerializer.class_to_dict(plain)
    assert {k: v for k, v in data.items() if k != "landlords"} == plain_data  # the old fields, as they were
    old = previous_version_reads(serpent.loads(serpent.dumps(data)))  # the dict as it arrives, before converters
    assert old == lease and old.landlord == URI and old.term == 30


def test_a_lease_from_an_older_sender_has_its_one_landlord() -> None:
    old_form = {"__class__": "landlord.LandlordLease", "cookie": "c", "landlord": URI, "landlord_id": "id",
                "remaining": 7.0, "term": 7.0}
    lease = round_trip(old_form)
    assert isinstance(lease, LandlordLease) and not lease.replicated and lease.landlords == (URI,)
    assert "landlords" not in SerpentSerializer.class_to_dict(lease)


def test_uri_objects_are_accepted_and_travel_as_strings() -> None:
    from Pyro5.core import URI as PyroURI
    lease = LandlordLease("c", PyroURI(URI), "id", time.time() + 5)
    assert lease.landlord == URI and round_trip(lease) == lease


@pytest.mark.parametrize("forged", [
    {"cookie": "c", "landlord": URI, "landlord_id": "id"},  # no remaining
    {"cookie": 5, "landlord": URI, "landlord_id": "id", "remaining": 1.0},
    {"cookie": "c", "landlord": "http://evil", "landlord_id": "id", "remaining": 1.0},
    {"cookie": "c", "landlord": URI, "landlord_id": ["id"], "remaining": 1.0},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": -4.0},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": "lots"},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": True},
    {"cookie": "", "landlord": URI, "landlord_id": "id", "remaining": 1.0},
    {"cookie": "c" * 10_000, "landlord": URI, "landlord_id": "id", "remaining": 1.0},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": 1.0, "term": -1.0},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": 1.0, "term": "long"},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": 1.0, "term": False},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": 1.0, "term": None},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": 1.0, "term": math.nan},
    # landlords: a list of distinct PYRO: URIs, 1 to MAX_LANDLORDS of them
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": 1.0, "landlords": URI},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": 1.0, "landlords": None},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": 1.0, "landlords": 5},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": 1.0, "landlords": {URI: 1}},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": 1.0, "landlords": []},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": 1.0, "landlords": [URI, 5]},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": 1.0, "landlords": [[URI]]},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": 1.0, "landlords": ["http://evil"]},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": 1.0, "landlords": ["PYRONAME:x"]},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": 1.0, "landlords": [URI, URI]},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": 1.0,
     "landlords": [f"PYRO:o@10.0.{i // 256}.{i % 256}:1" for i in range(MAX_LANDLORDS + 1)]},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": 1.0,
     "landlords": [f"PYRO:o@10.0.{i // 256}.{i % 256}:1" for i in range(100_000)]},
    {"cookie": "c", "landlord": URI, "landlord_id": "id", "remaining": 1.0,
     "landlords": [f"PYRO:{'o' * 100_000}@10.0.0.1:1"]},
])
def test_forged_leases_are_refused_clearly(forged: dict) -> None:
    with pytest.raises((ValueError, TypeError)):
        serializer.recreate_classes(dict(forged, __class__="landlord.LandlordLease"))


def test_nan_remaining_is_refused() -> None:
    data = {"__class__": "landlord.LandlordLease", "cookie": "c", "landlord": URI, "landlord_id": "id",
            "remaining": math.nan}
    with pytest.raises(ValueError, match="remaining"):
        serializer.recreate_classes(data)
    with pytest.raises(TypeError, match="remaining"):  # serpent sends NaN as a nested float dict
        round_trip(data)


def test_renew_results_travel_with_their_exceptions() -> None:
    results = RenewResults([10.0, -1, 5.0, -1], [UnknownLeaseError("gone"), LeaseDeniedError("no")])
    copy = round_trip(results)
    assert isinstance(copy, RenewResults) and copy == results
    assert [type(e) for e in copy.denied] == [UnknownLeaseError, LeaseDeniedError]  # type: ignore[attr-defined]


def test_forged_renew_results_are_refused() -> None:
    with pytest.raises(TypeError):
        serializer.recreate_classes({"__class__": "landlord.RenewResults", "granted": [1.0], "denied": ["x"]})
    with pytest.raises((TypeError, ValueError)):
        serializer.recreate_classes({"__class__": "landlord.RenewResults", "granted": 3, "denied": []})


@pytest.mark.parametrize("error", [LeaseError("a"), LeaseDeniedError("b"), UnknownLeaseError("c")])
def test_errors_arrive_as_themselves(error: Exception) -> None:
    copy = round_trip(error)
    assert type(copy) is type(error) and copy.args == error.args


def test_lease_map_error_arrives_with_its_failures() -> None:
    lease = LandlordLease("c", URI, "id", time.time() + 5)
    error = LeaseMapError({lease: UnknownLeaseError("gone")})
    copy = round_trip(error)
    assert isinstance(copy, LeaseMapError) and str(copy) == str(error)
    assert list(copy.failures) == [lease] and isinstance(copy.failures[lease], UnknownLeaseError)


def test_user_error_subclasses_can_be_registered() -> None:
    class QuotaExceeded(LeaseDeniedError):
        pass

    QuotaExceeded.__module__ = "tests.quota"
    landlord.register_exception(QuotaExceeded)
    copy = round_trip(QuotaExceeded("over quota"))
    assert type(copy) is QuotaExceeded and isinstance(copy, LeaseDeniedError)


def test_an_admin_refusal_travels_under_the_name_it_had_before_admin_became_a_package() -> None:
    from landlord.admin import AdminRefusedError

    sent = serializer.class_to_dict(AdminRefusedError("list refused (no proof)"))
    assert sent == {"__class__": "landlord.admin.AdminRefusedError", "__exception__": True,
                    "args": ("list refused (no proof)",), "attributes": {}}
    copy = round_trip(AdminRefusedError("list refused (no proof)"))
    assert type(copy) is AdminRefusedError and copy.args == ("list refused (no proof)",)


def test_a_stale_token_error_travels_with_its_tokens() -> None:
    sent = serializer.class_to_dict(landlord.StaleTokenError("fencing token 3 is stale: 5 was accepted", 3, 5))
    assert sent == {"__class__": "landlord.errors.StaleTokenError", "__exception__": True,
                    "args": ("fencing token 3 is stale: 5 was accepted",), "attributes": {"token": 3, "highest": 5}}
    copy = round_trip(landlord.StaleTokenError("fencing token 3 is stale: 5 was accepted", 3, 5))
    assert type(copy) is landlord.StaleTokenError
    assert (str(copy), copy.token, copy.highest) == ("fencing token 3 is stale: 5 was accepted", 3, 5)


def test_a_forged_exception_dict_is_refused() -> None:
    with pytest.raises(TypeError):
        serializer.recreate_classes({"__class__": "landlord.errors.LeaseError", "__exception__": True,
                                     "args": 5, "attributes": {}})


def test_not_leader_names_the_leader_across_a_real_daemon() -> None:
    """A replica's 'ask the leader' answer arrives as itself, leader and all, and is worth retrying."""
    import Pyro5.api

    from landlord.testing import ServingDaemon
    from landlord.transport.verdicts import Verdict, classify

    @Pyro5.api.expose
    class Follower:
        def renew(self, cookie: str, duration: float) -> float:
            raise landlord.NotLeaderError("not the leader", "PYRO:landlord@10.0.0.2:7000")

    with ServingDaemon() as daemon:
        uri = daemon.register(Follower())
        with Pyro5.api.Proxy(uri) as proxy, pytest.raises(landlord.NotLeaderError) as caught:
            proxy.renew("c", 1.0)
    assert caught.value.leader == "PYRO:landlord@10.0.0.2:7000"
    assert classify(caught.value) is Verdict.RETRY
    copy = round_trip(landlord.NotLeaderError("no leader yet"))
    assert type(copy) is landlord.NotLeaderError and copy.leader is None
