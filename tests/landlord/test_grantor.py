"""Landlord over a real Pyro5 daemon: leases that arrive working, errors that arrive as themselves,
and hostile input that changes nothing."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import Pyro5.api
import pytest

from landlord import (
    ANY,
    FOREVER,
    Landlord,
    LandlordLease,
    LeaseDeniedError,
    LeaseDurationPolicy,
    LeaseMap,
    LeaseMapError,
    LeasePolicy,
    RenewResults,
    UnknownLeaseError,
)
from landlord.grantor.hooks import LeaseHooks
from landlord.grantor.manager import LeasedResource
from landlord.holder.claiminbox import NameListener
from landlord.testing import FakeClock, Recorder
from landlord.transport import proxies


class RoomLandlord(Landlord):
    """A landlord with one exposed method that hands out leases, as applications write them."""

    @Pyro5.api.expose
    def rent(self, room: str, duration: float) -> LandlordLease:
        return self.new_lease(room, duration)


@pytest.fixture
def rooms(daemon: Any, close_later: list) -> tuple[RoomLandlord, str, list]:
    freed: list = []
    landlord = RoomLandlord(policy=LeaseDurationPolicy(maximum=600, default=60), on_expire=freed.append)
    close_later.append(landlord)
    return landlord, daemon.register(landlord), freed


def test_a_lease_returned_by_a_remote_method_arrives_working(rooms: tuple) -> None:
    landlord, uri, freed = rooms
    with Pyro5.api.Proxy(uri) as proxy:
        lease = proxy.rent("101", 30)
    assert isinstance(lease, LandlordLease)
    assert lease.landlord == uri and lease.landlord_id == landlord.landlord_id
    assert 29 < lease.remaining <= 30
    assert lease.renew(300) == 300 and 299 < lease.remaining <= 300
    assert landlord.manager.get(lease.cookie).expiration > landlord.clock.monotonic() + 299
    assert lease.renew(FOREVER) == 600  # capped at the maximum
    lease.cancel()
    assert freed == ["101"] and len(landlord) == 0
    with pytest.raises(UnknownLeaseError):
        lease.renew(10)
    with pytest.raises(UnknownLeaseError):
        lease.cancel()


def test_a_lease_made_locally_travels_with_the_landlords_uri(rooms: tuple) -> None:
    landlord, uri, _ = rooms
    lease = landlord.new_lease("102", 10)
    assert lease.landlord is landlord and lease.landlord_uri == uri


def test_denials_arrive_as_lease_denied_error(daemon: Any, close_later: list) -> None:
    class NoRenewals(LeasePolicy):
        def lease_for(self, resource: LeasedResource, requested: float):  # type: ignore[no-untyped-def]
            resource.expiration = self.clock.monotonic() + 30
            return self._make_lease(resource, 30)

        def renew(self, resource: LeasedResource, requested: float) -> float:
            raise LeaseDeniedError("renewals are not allowed here")

    landlord = RoomLandlord(policy=NoRenewals())
    close_later.append(landlord)
    with Pyro5.api.Proxy(daemon.register(landlord)) as proxy:
        lease = proxy.rent("1", 30)
    before = lease.expiration
    with pytest.raises(LeaseDeniedError, match="not allowed"):
        lease.renew(10)
    assert lease.expiration == before
    with Pyro5.api.Proxy(landlord.uri) as proxy:
        second = proxy.rent("2", 30)
    with pytest.raises(LeaseMapError) as caught:
        LeaseMap({lease: 10, second: 10}).renew_all()
    assert {type(e) for e in caught.value.failures.values()} == {LeaseDeniedError}
    assert set(caught.value.failures) == {lease, second}


class CountingRoomLandlord(RoomLandlord):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls: list[str] = []

    @Pyro5.api.expose
    def renew(self, cookie: str, duration: float) -> float:
        self.calls.append("renew")
        return super().renew(cookie, duration)

    @Pyro5.api.expose
    def renew_all(self, cookies: Any, durations: Any) -> RenewResults:
        self.calls.append("renew_all")
        return super().renew_all(cookies, durations)


def test_batch_renewal_is_one_call(daemon: Any, close_later: list) -> None:
    landlord = CountingRoomLandlord(policy=LeaseDurationPolicy(maximum=600))
    close_later.append(landlord)
    with Pyro5.api.Proxy(daemon.register(landlord)) as proxy:
        leases = [proxy.rent(str(i), 10) for i in range(50)]
    LeaseMap({lease: 100 for lease in leases}).renew_all()
    assert landlord.calls == ["renew_all"]
    assert all(99 < lease.remaining <= 100 for lease in leases)


def test_leases_renew_from_any_thread_with_one_proxy_per_thread(rooms: tuple) -> None:
    landlord, uri, _ = rooms
    with Pyro5.api.Proxy(uri) as proxy:
        leases = [proxy.rent(str(i), 10) for i in range(20)]
    proxy_counts: list[int] = []
    errors: list[BaseException] = []

    def renew_all_of_them() -> None:
        try:
            for lease in leases:
                lease.renew(20)
            proxy_counts.append(len(proxies._cache()))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=renew_all_of_them) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and proxy_counts == [1, 1, 1, 1]
    assert all(19 < lease.remaining <= 20 for lease in leases)


@pytest.mark.parametrize("call, error", [
    (lambda p, c: p.renew(c, math.nan), ValueError),
    (lambda p, c: p.renew(c, -5), ValueError),
    (lambda p, c: p.renew(c, "ten"), ValueError),
    (lambda p, c: p.renew(c, None), ValueError),
    (lambda p, c: p.renew(12345, 10), TypeError),
    (lambda p, c: p.renew(["x"], 10), TypeError),
    (lambda p, c: p.renew("forged-cookie-that-nobody-issued", 10), UnknownLeaseError),
    (lambda p, c: p.renew(c[:-1], 10), UnknownLeaseError),
    (lambda p, c: p.renew("x" * 100_000, 10), ValueError),
    (lambda p, c: p.cancel(None), TypeError),
    (lambda p, c: p.cancel("forged"), UnknownLeaseError),
    (lambda p, c: p.renew_all([c], [10, 20]), ValueError),
    (lambda p, c: p.renew_all(c, [10]), TypeError),
    (lambda p, c: p.renew_all([c, 5], [10, 10]), TypeError),
    (lambda p, c: p.renew_all([c, c], [10, math.nan]), ValueError),
    # a batch is checked whole however it is checked: the bad one last, among plain strings and floats
    (lambda p, c: p.renew_all([c, c], [10.0, math.nan]), ValueError),
    (lambda p, c: p.renew_all([c, c], [10.0, -math.inf]), ValueError),
    (lambda p, c: p.renew_all([c, c], [10.0, -2.0]), ValueError),
    (lambda p, c: p.renew_all([c, c], [10.0, True]), ValueError),
    (lambda p, c: p.renew_all([c, ""], [10.0, 10.0]), ValueError),
    (lambda p, c: p.renew_all([c, "x" * 257], [10.0, 10.0]), ValueError),
    (lambda p, c: p.cancel_all({"a": 1}), TypeError),
    (lambda p, c: p.cancel_all([c, None]), TypeError),
    (lambda p, c: p.cancel_all([c, ""]), ValueError),
])
def test_bad_remote_calls_get_clear_errors_and_change_nothing(rooms: tuple, call: Any, error: type) -> None:
    landlord, uri, freed = rooms
    with Pyro5.api.Proxy(uri) as proxy:
        lease = proxy.rent("7", 30)
        before = landlord.manager.get(lease.cookie).expiration
        with pytest.raises(error):
            call(proxy, lease.cookie)
        assert landlord.manager.get(lease.cookie).expiration == before
        assert len(landlord) == 1 and freed == []
        assert proxy.renew(lease.cookie, 40) == 40  # still serving


def test_a_forged_lease_sent_to_a_server_is_refused_and_the_server_lives(rooms: tuple) -> None:
    class Echo:
        @Pyro5.api.expose
        def echo(self, value: Any) -> Any:
            return value

    landlord, uri, _ = rooms
    echo_uri = landlord._pyroDaemon.register(Echo())
    forged = {"__class__": "landlord.LandlordLease", "cookie": 7, "landlord": "x", "landlord_id": 1,
              "remaining": -1}
    with Pyro5.api.Proxy(echo_uri) as proxy:
        with pytest.raises(TypeError, match="malformed"):
            proxy.echo(forged)
        assert proxy.echo("still here") == "still here"


def test_renew_all_mixes_grants_and_failures(rooms: tuple) -> None:
    landlord, uri, _ = rooms
    with Pyro5.api.Proxy(uri) as proxy:
        live = proxy.rent("a", 10)
        results = proxy.renew_all([live.cookie, "unknown-cookie"], [50, 50])
    assert results.granted == [50.0, -1]
    assert [type(e) for e in results.denied] == [UnknownLeaseError]


def test_renew_all_grants_each_duration_as_renew_would(close_later: list) -> None:
    clock = FakeClock()
    landlord = Landlord(reaper="lazy", clock=clock, policy=LeaseDurationPolicy(maximum=100, default=60))
    close_later.append(landlord)
    cookies = [landlord.new_lease(i, 10).cookie for i in range(5)]
    results = landlord.renew_all(cookies, [ANY, 20, 5.0, FOREVER, 30.5])
    assert results == RenewResults([60.0, 20.0, 5.0, 100.0, 30.5], [])
    assert all(type(granted) is float for granted in results.granted)
    assert landlord.renew_all(cookies[:2], [7.0, 8.0]) == RenewResults([7.0, 8.0], [])  # every one granted
    assert [landlord.manager.get(cookie).expiration - clock.monotonic() for cookie in cookies] == [7, 8, 5, 100, 30.5]


def test_cookies_carry_at_least_128_random_bits(close_later: list) -> None:
    import base64
    landlord = Landlord(reaper="lazy")
    close_later.append(landlord)
    cookies = {landlord.new_lease(i, 10).cookie for i in range(1000)}
    assert len(cookies) == 1000
    for cookie in cookies:
        assert len(base64.urlsafe_b64decode(cookie + "=" * (-len(cookie) % 4))) >= 16


def test_the_remote_surface_is_ten_methods_and_none_lists_cookies(daemon: Any, close_later: list) -> None:
    """Five for leases, five for named leases (name_holders and the watches' notices show tokens and
    values, never cookies)."""
    landlord = Landlord(reaper="lazy")
    close_later.append(landlord)
    with Pyro5.api.Proxy(daemon.register(landlord)) as proxy:
        proxy._pyroBind()  # fetches the metadata a client sees
        assert proxy._pyroMethods == {"renew", "cancel", "renew_all", "cancel_all", "listen",
                                      "acquire", "name_token", "name_holders", "hand_over", "watch_name"}
        assert proxy._pyroAttrs == set() and proxy._pyroOneway == set()


def test_a_replica_stamps_its_group_on_every_lease(daemon: Any, close_later: list) -> None:
    """Every lease of a replicated landlord names each replica, in the order given, its own need not be first."""
    own = str(daemon.daemon.uriFor("replica-b"))
    replicas = ["PYRO:replica-a@10.0.0.1:7000", own, "PYRO:replica-c@10.0.0.3:7000"]
    landlord = RoomLandlord(policy=LeaseDurationPolicy(maximum=600), replicas=replicas, landlord_id="group-1")
    close_later.append(landlord)
    assert daemon.register(landlord, "replica-b") == own and landlord.replicas == tuple(replicas)
    local = landlord.new_lease("1", 30)
    assert local.replicated and local.landlords == tuple(replicas) and local.landlord is landlord
    with Pyro5.api.Proxy(own) as proxy:
        lease = proxy.rent("2", 30)
    assert isinstance(lease, LandlordLease) and lease.landlord == own and lease.landlord_id == "group-1"
    assert lease.landlords == tuple(replicas)
    assert lease.renew(60) == 60  # it asks the replica it came from first: this one, which leads


def test_a_plain_landlords_leases_name_it_alone(rooms: tuple) -> None:
    landlord, uri, _ = rooms
    assert landlord.replicas is None
    with Pyro5.api.Proxy(uri) as proxy:
        lease = proxy.rent("1", 30)
    assert not lease.replicated and lease.landlords == (uri,)
    assert not landlord.new_lease("2", 30).replicated


@pytest.mark.parametrize("replicas, error", [
    ("PYRO:x@10.0.0.1:1", TypeError),  # one str, not a list of them
    ([], ValueError),
    ([b"PYRO:x@10.0.0.1:1"], TypeError),
    (["http://10.0.0.1:1"], ValueError),
    (["PYRONAME:landlord"], ValueError),
    (["PYRO:x@10.0.0.1:1", "PYRO:x@10.0.0.1:1"], ValueError),
    ([f"PYRO:x@10.0.0.{i}:1" for i in range(100)], ValueError),
])
def test_bad_replicas_are_refused(replicas: Any, error: type) -> None:
    with pytest.raises(error, match="replicas"):
        Landlord(replicas=replicas, reaper="lazy")


# -- answers that fit: a batch's answer never exceeds the message cap ------------------------

TWO_MIB = 2 * 1024 * 1024


def answer_sizes(answer: Any) -> dict[str, int]:
    """The bytes ``answer`` takes as a daemon would send it, in serpent and in json."""
    from Pyro5.serializers import JsonSerializer, SerpentSerializer
    return {name: len(serializer.dumps(answer))
            for name, serializer in (("serpent", SerpentSerializer()), ("json", JsonSerializer()))}


def test_the_worst_cancel_all_answer_of_a_maximal_batch_fits_in_2_mib(close_later: list) -> None:
    from landlord.grantor.landlord import MAX_BATCH
    from landlord.holder.landlordlease import MAX_COOKIE_LENGTH
    landlord = Landlord(reaper="lazy")
    close_later.append(landlord)
    longest = [f"{i:08d}".ljust(MAX_COOKIE_LENGTH, "x") for i in range(MAX_BATCH)]  # all unknown, all echoed
    failures = landlord.cancel_all(longest)
    assert len(failures) == MAX_BATCH and all(isinstance(e, UnknownLeaseError) for e in failures.values())
    assert max(answer_sizes(failures).values()) < TWO_MIB, answer_sizes(failures)


def test_the_worst_renew_all_answer_of_a_maximal_batch_fits_in_2_mib(close_later: list) -> None:
    from landlord.grantor.landlord import MAX_BATCH, MAX_DENIAL, MAX_REASON
    landlord = Landlord(reaper="lazy", policy=LeaseDurationPolicy(maximum=600))
    close_later.append(landlord)
    leases = [landlord.new_lease(i, 60) for i in range(MAX_BATCH)]
    for lease in leases:  # each denied with the longest reason a landlord takes
        landlord.revoke(lease.cookie, "r" * MAX_REASON)
    results = landlord.renew_all([lease.cookie for lease in leases], [1.234567890123] * MAX_BATCH)
    assert results.granted == [-1] * MAX_BATCH
    assert all(type(e) is LeaseDeniedError and len(str(e)) == MAX_DENIAL for e in results.denied)
    assert str(results.denied[0]).startswith("revoked by the landlord: rrr") and str(results.denied[0])[-1] == "…"
    assert max(answer_sizes(results).values()) < TWO_MIB, answer_sizes(results)


class HugeDenial(LeaseDeniedError):
    """A policy's own denial that carries a large attribute, which Pyro5 would send too."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.evidence = "e" * 10_000


class TalkativePolicy(LeaseDurationPolicy):
    def renew(self, resource: LeasedResource, requested: float) -> float:
        if resource.resource == "short":
            raise LeaseDeniedError("no")
        raise HugeDenial("d" * 5000)


def test_a_long_or_heavy_denial_in_a_batch_keeps_its_kind_and_a_short_one_is_untouched(close_later: list) -> None:
    landlord = Landlord(reaper="lazy", policy=TalkativePolicy(maximum=600))
    close_later.append(landlord)
    short, heavy = landlord.new_lease("short", 60), landlord.new_lease("heavy", 60)
    results = landlord.renew_all([short.cookie, heavy.cookie], [10, 10])
    assert results.granted == [-1, -1]
    assert type(results.denied[0]) is LeaseDeniedError and str(results.denied[0]) == "no"
    assert isinstance(results.denied[1], LeaseDeniedError)  # a holder still reads it as a denial
    assert "evidence" not in vars(results.denied[1]) and len(str(results.denied[1])) <= 200
    with pytest.raises(HugeDenial):  # one renewal alone still gets the whole of it
        landlord.renew(heavy.cookie, 10)


@pytest.mark.parametrize("method", ["renew_all", "cancel_all"])
def test_a_batch_over_max_batch_is_refused_over_the_wire_and_changes_nothing(rooms: tuple, method: str) -> None:
    from landlord.grantor.landlord import MAX_BATCH
    landlord, uri, freed = rooms
    with Pyro5.api.Proxy(uri) as proxy:
        live = proxy.rent("a", 10)
        ends = landlord.manager.get(live.cookie).expiration
        cookies = [live.cookie] + [f"unknown-{i}" for i in range(MAX_BATCH)]
        args = (cookies, [600] * len(cookies)) if method == "renew_all" else (cookies,)
        with pytest.raises(ValueError, match=f"at most {MAX_BATCH}"):
            getattr(proxy, method)(*args)
        assert landlord.manager.get(live.cookie).expiration == ends and freed == []
        assert proxy.renew_all(cookies[:MAX_BATCH], [10] * MAX_BATCH).granted[0] == 10.0  # the most it takes


def test_a_waiter_holds_the_name_once_the_lock_delay_of_an_expired_holder_has_passed(clock: FakeClock) -> None:
    # the lock-delay's end is a deadline of its own: the landlord's timer must wake for it, though no
    # waiter has a timeout (it slept on, and the waiter waited until something else happened)
    class Told(NameListener, LeaseHooks):
        def __init__(self) -> None:
            self.granted_tokens: Recorder[int] = Recorder()
            self.ended: Recorder[str] = Recorder()

        def granted(self, cookie: str, token: int) -> None:  # type: ignore[override]
            self.granted_tokens(token)

        def expired(self, leased: Sequence[LeasedResource]) -> None:
            for each in leased:
                self.ended(each.cookie)

    told = Told()
    landlord = Landlord(policy=LeaseDurationPolicy(maximum=60), clock=clock, hooks=told)
    try:
        holder, token = landlord.acquire("orders", 10, lock_delay=5.0)
        landlord.acquire("orders", 60, wait=FOREVER, listener=told)
        clock.advance(10)  # the holder's lease runs out (it may be paused, not dead): closed for 5 s
        assert told.ended.wait_for(1) == [holder.cookie]
        [orders] = landlord.names()
        assert orders.holders == () and orders.closed_until == clock.monotonic() + 5.0
        clock.advance(5)
        assert told.granted_tokens.wait_for(1) == [token + 1]
    finally:
        landlord.close()
