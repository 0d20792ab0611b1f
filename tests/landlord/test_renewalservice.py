"""The lease renewal service: renewal sets, their events, their store, and the command.

In-process tests run the service and the landlords on a fake clock; the service's
events go to listeners served by a real Pyro5 daemon. The last tests run the
service, a landlord and a client as separate processes.
"""

from __future__ import annotations

import math
import pathlib
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import Pyro5.api
import pytest
from conftest import Child, free_port

from landlord import AbstractLease, FakeClock, Landlord, LandlordLease, LeaseDurationPolicy, UnknownLeaseError
from landlord.renewalservice import service as service_module
from landlord.renewalservice.client import RenewalSetClient, RenewalSetListener
from landlord.renewalservice.service import IN_PROCESS, SERVICE_OBJECT_ID, LeaseRenewalService, RenewalLimits
from landlord.testing import Recorder, ServingDaemon, start_server

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "hostile"))
from targets import serving, watched  # noqa: E402 (the hostile suite's servers and canary)

TERM = 10.0  # the rooms' leases


class Rooms(Landlord):
    @Pyro5.api.expose
    def rent(self, room: str, duration: float) -> LandlordLease:
        return self.new_lease(room, duration)


class World:
    """A landlord of rooms and a renewal service on one fake clock, both served, and a listener."""

    def __init__(self, clock: FakeClock, tmp_path: pathlib.Path, limits: RenewalLimits | None = None) -> None:
        self.clock = clock
        self.limits = limits
        self.freed: Recorder[str] = Recorder()
        self.rooms = Rooms(clock=clock, reaper="lazy", policy=LeaseDurationPolicy(maximum=TERM),
                           on_expire=self.freed)
        self.serving = ServingDaemon()
        self.rooms_uri = self.serving.register(self.rooms)
        self.store = tmp_path / "sets.sqlite"
        self.service = self.start_service()
        self.failures: Recorder[tuple[str, Any, str]] = Recorder()
        self.warnings: Recorder[tuple[str, LandlordLease, float]] = Recorder()
        listener = RenewalSetListener(on_failure=lambda *event: self.failures(event),
                                      on_warning=lambda *event: self.warnings(event))
        self.listener_uri = self.serving.register(listener)

    def start_service(self) -> LeaseRenewalService:
        self.service = LeaseRenewalService(clock=self.clock, store=self.store, reaper="lazy", limits=self.limits)
        self.service_uri = self.serving.register(self.service, SERVICE_OBJECT_ID)
        return self.service

    def restart_service(self) -> LeaseRenewalService:
        self.serving.daemon.unregister(self.service)
        self.service.close()
        return self.start_service()

    def rent(self, room: str) -> LandlordLease:
        with Pyro5.api.Proxy(self.rooms_uri) as proxy:
            lease: LandlordLease = proxy.rent(room, TERM)
        return lease

    def settle(self) -> None:
        assert self.service._renewals._wait_idle(10), "the service's renewals did not go back to sleep"

    def run(self, seconds: float) -> None:
        """Let ``seconds`` pass on the fake clock, stopping wherever a thread sleeps towards, and
        where a set's lease ends (the service reaps then, as its sleeper reaper would)."""
        end = self.clock.monotonic() + seconds
        self.service.manager.reap()
        while True:
            self.settle()
            target = min(min(self.clock.sleeping_deadlines(), default=math.inf),
                         self.service.manager.next_expiration(), end)
            if target > self.clock.monotonic():
                self.clock.advance(target - self.clock.monotonic())
            self.service.manager.reap()  # the service's reaper is lazy: sets end here, in step with the clock
            if target >= end:
                self.settle()
                return

    def alive(self, lease: LandlordLease) -> bool:
        try:
            self.rooms.manager.get(lease.cookie)
        except UnknownLeaseError:
            return False
        return True

    def close(self) -> None:
        self.serving.close()
        self.service.close()
        self.rooms.close()


@pytest.fixture
def world(clock: FakeClock, tmp_path: pathlib.Path) -> Iterator[World]:
    made = World(clock, tmp_path)
    yield made
    made.close()


def _client(world: World, duration: float) -> RenewalSetClient:
    return RenewalSetClient.create(world.service_uri, duration)


def test_a_set_keeps_its_leases_alive_until_it_ends_then_they_end_within_their_terms(world: World) -> None:
    renewals = _client(world, 60)
    leases = [world.rent(f"room {n}") for n in range(3)]
    for lease in leases:
        renewals.renew_for(lease)  # FOREVER: while the set lasts
    assert set(renewals.leases()) == set(leases)
    world.run(55)  # five and a half terms: the rooms' landlord saw them renewed
    assert all(world.alive(lease) for lease in leases) and world.freed.items == []
    world.run(5 + TERM)  # the set ends at 60; each lease within its 10 s term after
    world.rooms.manager.reap()
    assert sorted(world.freed.items) == ["room 0", "room 1", "room 2"]
    with pytest.raises(UnknownLeaseError):
        renewals.leases()
    assert world.service.sets() == 0


def test_a_lease_with_a_desired_expiration_leaves_the_set_then(world: World) -> None:
    renewals = _client(world, 120)
    short, kept = world.rent("short"), world.rent("kept")
    renewals.renew_for(short, 25)
    renewals.renew_for(kept)
    world.run(26)
    assert renewals.leases() == [kept]
    world.run(TERM)
    world.rooms.manager.reap()
    assert world.freed.items == ["short"]


def test_a_lease_the_set_loses_is_reported_to_the_failure_listener(world: World) -> None:
    renewals = _client(world, 120)
    renewals.set_failure_listener(world.listener_uri)
    lost, kept = world.rent("lost"), world.rent("kept")
    renewals.renew_for(lost)
    renewals.renew_for(kept)
    world.rooms.revoke(lost.cookie, "the room is flooded")
    world.run(TERM)
    [(set_id, lease, reason)] = world.failures.wait_for(1)
    assert set_id == renewals.set_id and lease == lost
    assert "LeaseDeniedError" in reason and "the room is flooded" in reason
    assert renewals.leases() == [kept]


def test_the_warning_comes_before_the_set_ends_and_again_after_each_renewal(world: World) -> None:
    renewals = _client(world, 60)
    renewals.set_warning_listener(world.listener_uri, 15)
    renewals.renew_for(world.rent("room"))
    world.run(44)
    assert world.warnings.items == []
    world.run(2)  # 15 s before the end at 60
    [(set_id, lease, expiration)] = world.warnings.wait_for(1)
    assert set_id == renewals.set_id and lease == renewals.lease
    assert expiration == pytest.approx(world.clock.time() + 14, abs=1.01)
    assert lease.renew(60) == 60  # the warned holder renews the set: ends at 106 now
    world.run(44)
    assert len(world.warnings.items) == 1
    world.run(2)
    world.warnings.wait_for(2)
    assert world.service.sets() == 1


def test_sets_their_listeners_and_leases_survive_a_restart(world: World) -> None:
    renewals = _client(world, 300)
    renewals.set_warning_listener(world.listener_uri, 30)
    leases = [world.rent(f"room {n}") for n in range(3)]
    for lease in leases:
        renewals.renew_for(lease)
    renewals.remove(leases[2])
    world.run(25)
    world.restart_service()
    assert world.service.sets() == 1
    assert set(renewals.leases()) == set(leases[:2])
    world.run(100)  # ten terms
    assert all(world.alive(lease) for lease in leases[:2])
    world.run(TERM)
    world.rooms.manager.reap()
    assert world.freed.items == ["room 2"]  # the one removed, not renewed since
    world.run(150)  # the set's warning, remembered across the restart, 30 s before its end at 300
    [(set_id, _, _)] = world.warnings.wait_for(1)
    assert set_id == renewals.set_id


def test_bad_calls_are_refused_and_change_nothing(world: World) -> None:
    renewals = _client(world, 60)
    lease = world.rent("room")
    renewals.renew_for(lease)
    with Pyro5.api.Proxy(world.service_uri) as service:
        for call, error in [
            (lambda: service.renew_for("x" * 22, lease, 10), UnknownLeaseError),  # a forged cookie
            (lambda: service.renew_for(renewals.lease.cookie, "a lease", 10), TypeError),
            (lambda: service.renew_for(renewals.lease.cookie, lease, -1), ValueError),
            (lambda: service.renew_for(renewals.lease.cookie, lease, math.nan), ValueError),
            (lambda: service.renew_for(renewals.lease.cookie, lease, 10, 0), ValueError),
            (lambda: service.create_set(-5), ValueError),
            (lambda: service.set_failure_listener(renewals.lease.cookie, "not a uri"), ValueError),
            (lambda: service.set_warning_listener(renewals.lease.cookie, world.listener_uri, 0), ValueError),
            (lambda: service.set_warning_listener(renewals.lease.cookie, world.listener_uri, math.inf), ValueError),
            (lambda: service.remove(renewals.lease.cookie, 42), TypeError),
            (lambda: service.leases(None), TypeError),
        ]:
            with pytest.raises(error):
                call()
    other = _client(world, 60)
    with pytest.raises(ValueError, match="in another renewal set"):
        other.renew_for(lease)
    assert renewals.leases() == [lease] and other.leases() == []
    with pytest.raises(TypeError):
        RenewalSetClient("id", "not a lease")  # type: ignore[arg-type]


# -- what a client may hold, and where its leases may lead ------------------------------------

LOOPBACK = "127.0.0.1"  # the host every call of these tests comes from


@pytest.fixture
def limited(clock: FakeClock, tmp_path: pathlib.Path) -> Iterator[World]:
    made = World(clock, tmp_path, RenewalLimits(sets_per_client=2, leases_per_set=3, leases_per_client=4,
                                                landlord_hosts=frozenset({"127.0.0.1"})))
    yield made
    made.close()


def forged(landlord: str, landlords: list[str] | None = None) -> LandlordLease:
    """A lease naming ``landlord``, as a stranger can make one (no landlord granted it)."""
    return LandlordLease("c" * 22, landlord, f"id-{landlord}", time.time() + 60, landlords=landlords)


def test_a_client_may_hold_only_so_many_sets(limited: World) -> None:
    first, second = _client(limited, 60), _client(limited, 60)
    with pytest.raises(ValueError, match=r"at most 2 renewal sets \(127.0.0.1 holds 2\)"):
        _client(limited, 60)
    assert limited.service.sets() == 2 and limited.service.held_by(LOOPBACK) == (2, 0)
    first.lease.cancel()  # a set ended makes room for another
    third = _client(limited, 60)
    assert limited.service.held_by(LOOPBACK) == (2, 0) and third.leases() == [] and second.leases() == []
    limited.service.create_set(60)  # a call made in the service's process is a client of its own
    assert limited.service.held_by(IN_PROCESS) == (1, 0)
    assert limited.service.limit_refusals() == {"sets_per_client": 1, "leases_per_set": 0, "leases_per_client": 0}


def test_a_set_and_a_client_hold_only_so_many_leases(limited: World) -> None:
    big, small = _client(limited, 60), _client(limited, 60)
    kept = [limited.rent(f"room {n}") for n in range(3)]
    for lease in kept:
        big.renew_for(lease)
    with pytest.raises(ValueError, match="a renewal set holds at most 3 leases"):
        big.renew_for(limited.rent("a fourth"))
    big.renew_for(kept[0], 30)  # a lease already held takes new settings: nothing more is held
    small.renew_for(limited.rent("room 3"))
    with pytest.raises(ValueError, match=r"hold at most 4 leases together \(127.0.0.1 holds 4\)"):
        small.renew_for(limited.rent("a fifth"))
    assert set(big.leases()) == set(kept) and len(small.leases()) == 1
    assert limited.service.held_by(LOOPBACK) == (2, 4)
    assert big.remove(kept[2])  # a lease let go makes room
    small.renew_for(limited.rent("room 4"))
    assert limited.service.held_by(LOOPBACK) == (2, 4)
    big.lease.cancel()  # and a set ended frees what it held
    limited.service.manager.reap()
    assert limited.service.held_by(LOOPBACK) == (1, 2)
    assert limited.service.limit_refusals() == {"sets_per_client": 0, "leases_per_set": 1, "leases_per_client": 1}


def test_what_a_client_holds_is_counted_again_after_a_restart(limited: World) -> None:
    renewals = _client(limited, 60)
    renewals.renew_for(limited.rent("room"))
    limited.restart_service()
    assert limited.service.held_by(LOOPBACK) == (1, 1)
    _client(limited, 60)
    with pytest.raises(ValueError, match="at most 2 renewal sets"):
        _client(limited, 60)


@pytest.mark.parametrize("landlord, landlords, refusal", [
    ("PYRONAME:rooms", None, "must be a PYRO: URI"),  # would send the service to a name server
    ("PYROMETA:rooms.kind", None, "must be a PYRO: URI"),
    ("PYRO:rooms@10.1.2.3:9", None, "does not renew with"),  # not among the landlord hosts
    ("PYRO:rooms@localhost:9", None, "does not renew with"),  # hosts are compared as written
    ("PYRO:rooms@127.0.0.1:9", ["PYRO:rooms@127.0.0.1:9", "PYRO:rooms@10.9.9.9:9"], "does not renew with"),
])
def test_a_lease_whose_landlord_the_service_may_not_call_is_refused(
        limited: World, landlord: str, landlords: list[str] | None, refusal: str) -> None:
    renewals = _client(limited, 60)
    kept = limited.rent("kept")
    renewals.renew_for(kept)
    with pytest.raises(ValueError, match=refusal):
        renewals.renew_for(forged(landlord, landlords))
    assert renewals.leases() == [kept] and limited.service.held_by(LOOPBACK) == (1, 1)
    assert len(limited.service._renewals) == 1  # nothing more is renewed


def test_landlord_hosts_are_compared_as_uris_name_them() -> None:
    limits = RenewalLimits(landlord_hosts=["Rooms.Example.org", "[::1]", " 10.0.0.5 "])
    assert limits.landlord_hosts == {"rooms.example.org", "::1", "10.0.0.5"}
    for uri in ("PYRO:r@rooms.example.ORG:9", "PYRO:r@[::1]:9", "PYRO:r@10.0.0.5:9"):
        assert service_module.check_pyro_uri(uri, "landlord", hosts=limits.landlord_hosts) == uri
    with pytest.raises(ValueError, match="does not renew with"):
        service_module.check_pyro_uri("PYRO:r@10.0.0.6:9", "landlord", hosts=limits.landlord_hosts)


def test_any_host_is_taken_without_landlord_hosts_but_never_a_name_server(world: World) -> None:
    renewals = _client(world, 60)
    renewals.renew_for(forged("PYRO:rooms@10.1.2.3:9"))
    with pytest.raises(ValueError, match="must be a PYRO: URI"):
        renewals.renew_for(forged("PYRONAME:rooms"))
    assert len(renewals.leases()) == 1


class ItsOwnLease(AbstractLease):
    """A lease of a class of the user's: where it renews, the service cannot tell."""

    def _do_renew(self, duration: float) -> float:
        return duration

    def cancel(self) -> None:
        pass


def test_with_landlord_hosts_only_landlord_leases_are_taken(limited: World, close_later: list) -> None:
    _, lease = limited.service.create_set(60)
    with pytest.raises(ValueError, match="renews only LandlordLeases"):
        limited.service.renew_for(lease.cookie, ItsOwnLease(time.time() + 60), 10)
    assert limited.service.leases(lease.cookie) == []
    anywhere = LeaseRenewalService(reaper="lazy")  # without landlord hosts: taken, as before
    close_later.append(anywhere)
    _, lease = anywhere.create_set(60)
    anywhere.renew_for(lease.cookie, ItsOwnLease(time.time() + 60), 10)
    assert len(anywhere.leases(lease.cookie)) == 1


@pytest.mark.parametrize("listener", ["PYRONAME:listener", "PYROMETA:x.y", "not a uri",
                                      "PYRO:obj@127.0.0.1:9" + "x" * 600])
def test_a_listener_the_service_may_not_call_is_refused(world: World, listener: str) -> None:
    renewals = _client(world, 60)
    renewals.set_failure_listener(world.listener_uri)
    with Pyro5.api.Proxy(world.service_uri) as service:
        with pytest.raises(ValueError):
            service.set_failure_listener(renewals.lease.cookie, listener)
        with pytest.raises(ValueError):
            service.set_warning_listener(renewals.lease.cookie, listener, 5)
    kept = world.service._ledger.sets[renewals.set_id]
    assert kept.failure_listener == world.listener_uri and kept.warning_listener is None


@pytest.mark.parametrize("limits, error", [
    (dict(sets_per_client=0), ValueError),
    (dict(leases_per_set=-1), ValueError),
    (dict(leases_per_client=1.5), TypeError),
    (dict(sets_per_client=True), TypeError),
    (dict(landlord_hosts="127.0.0.1"), TypeError),  # one string is not a list of hosts
    (dict(landlord_hosts=frozenset({""})), ValueError),
    (dict(landlord_hosts=[7]), TypeError),
])
def test_bad_limits_are_refused(limits: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        RenewalLimits(**limits)


def test_the_command_takes_the_limits_and_refuses_bad_ones(capsys: pytest.CaptureFixture[str]) -> None:
    from landlord.__main__ import build_parser
    from landlord.cli import resolve
    args = resolve(build_parser().parse_args(["renewal-service", "--sets-per-client", "3", "--leases-per-set", "50",
                                              "--leases-per-client", "70", "--landlord-hosts", "a.example, 10.0.0.1",
                                              "--callback-hosts", "b.example"]), environ={})
    assert (args.sets_per_client, args.leases_per_set, args.leases_per_client) == (3, 50, 70)
    assert args.landlord_hosts == ["a.example", "10.0.0.1"] and args.callback_hosts == ["b.example"]
    defaults = resolve(build_parser().parse_args(["renewal-service"]), environ={})
    assert defaults.landlord_hosts is None and defaults.callback_hosts is None
    assert defaults.sets_per_client == service_module.SETS_PER_CLIENT
    for bad, said in ((["--sets-per-client", "0"], "must be at least 1"),
                      (["--landlord-hosts", "a.example,"], "comma-separated list")):
        with pytest.raises(SystemExit) as exited:
            build_parser().parse_args(["renewal-service", *bad])
        assert exited.value.code == 2 and said in capsys.readouterr().err



class SilentListener:
    """An address that takes connections and never answers: a hung listener."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.uri = f"PYRO:listener@127.0.0.1:{self.sock.getsockname()[1]}"
        self.accepted: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self.accepted.append(self.sock.accept()[0])
            except OSError:
                return  # closed

    def close(self) -> None:
        self.sock.close()
        for connection in self.accepted:
            connection.close()


@pytest.mark.slow
def test_a_strangers_hung_listener_delays_no_other_sets_events(world: World) -> None:
    canary = _client(world, 60)
    canary.set_warning_listener(world.listener_uri, 30)
    stranger = _client(world, 60)
    silent = SilentListener()
    try:
        stranger.set_failure_listener(silent.uri)
        for number in range(50):  # each denied at its first renewal: fifty events for the hung listener
            stranger.renew_for(LandlordLease(f"forged{number:016d}", world.rooms_uri, world.rooms.landlord_id,
                                             time.time() + 100, term=3600))
        world.run(1)
        assert stranger.leases() == []  # all lost, all to be told
        world.run(30)  # the canary's warning, due while the stranger's events are being tried
        world.warnings.wait_for(1, timeout=2)  # not after fifty (or one) 5 s delivery timeouts
        assert world.service._events.wait_idle(10)
        assert len(silent.accepted) == 1  # the first failed; the other 49 were skipped
    finally:
        silent.close()





class Eavesdropper:
    """A stranger's object posing as a landlord: keeps every cookie it is sent."""

    def __init__(self) -> None:
        self.cookies: list[str] = []

    @Pyro5.api.expose
    def renew_all(self, cookies: list[str], durations: list[float]) -> Any:
        from landlord import RenewResults
        self.cookies.extend(cookies)
        return RenewResults([float(d) for d in durations], [])


def test_a_lease_forged_with_anothers_landlord_id_never_draws_its_cookies(world: World) -> None:
    eavesdropper = Eavesdropper()
    elsewhere = world.serving.register(eavesdropper)
    stranger, canary = _client(world, 120), _client(world, 120)
    lease = world.rent("canary")
    canary.renew_for(lease)
    stranger.renew_for(LandlordLease("bait" * 6, elsewhere, world.rooms.landlord_id, time.time() + TERM - 0.5,
                                     term=TERM))  # due half a second before the canary: first in its batch
    world.run(3 * TERM)
    assert lease.cookie not in eavesdropper.cookies and eavesdropper.cookies  # asked: only for its own
    assert world.alive(lease) and canary.leases() == [lease]


@pytest.mark.slow
def test_hung_listeners_at_more_addresses_than_workers_delay_no_event_to_one_that_took_its_last(
        world: World) -> None:
    canary = _client(world, 120)
    canary.set_failure_listener(world.listener_uri)
    forged = iter(range(100))

    def lose_one(renewals: RenewalSetClient) -> None:  # a lease its landlord denies: an event to its listener
        renewals.renew_for(LandlordLease(f"forged{next(forged):016d}", world.rooms_uri, world.rooms.landlord_id,
                                         time.time() + 100, term=3600))

    lose_one(canary)
    world.run(1)
    world.failures.wait_for(1, timeout=5)  # the canary's listener took an event: it answers
    silent = [SilentListener() for _ in range(6)]  # more than the workers for addresses not yet tried
    try:
        for listener in silent:
            stranger = _client(world, 120)
            stranger.set_failure_listener(listener.uri)
            lose_one(stranger)
        world.run(1)  # six events into silence, each held 5 s
        lose_one(canary)
        world.run(1)
        world.failures.wait_for(2, timeout=2)  # at once, not after the silent ones' 5 s
        assert sum(len(listener.accepted) for listener in silent) >= 4  # they were being tried meanwhile
    finally:
        for listener in silent:
            listener.close()


# -- real processes ----------------------------------------------------------------------------


def _serve_service(store: pathlib.Path, port: int) -> tuple[Child, str]:
    child, uri = start_server("-m", "landlord", "renewal-service", "--port", str(port), "--store", str(store),
                              "-v", pattern=r"^renewal service at (?P<uri>\S+)")
    return child, uri  # type: ignore[return-value]


@pytest.mark.slow
def test_a_client_that_exits_keeps_its_leases_alive_and_is_warned_before_the_set_ends(
        spawn: Any, tmp_path: pathlib.Path) -> None:
    rooms = spawn("served_landlord.py")
    rooms_uri = rooms.expect("URI: ").strip()
    service, service_uri = _serve_service(tmp_path / "sets.sqlite", free_port())
    warnings: Recorder[tuple[str, LandlordLease, float]] = Recorder()
    with service, ServingDaemon() as serving:
        listener_uri = serving.register(RenewalSetListener(on_warning=lambda *event: warnings(event)))
        term, set_lease, warn_before = 1.5, 8.0, 3.0
        client = spawn("renewal_client.py", service_uri, rooms_uri, str(term), str(set_lease), listener_uri,
                       str(warn_before))
        cookies = client.expect("cookies: ").split(",")
        assert client.process.wait(30) == 0 and len(cookies) == 3  # the client has gone
        started = time.monotonic()
        [(_, lease, expiration)] = warnings.wait_for(1, timeout=set_lease + 5)
        warned_at = time.monotonic() - started
        assert set_lease - warn_before - 1.5 < warned_at < set_lease - warn_before + 1.0, warned_at
        assert expiration - time.time() == pytest.approx(warn_before, abs=1.5)
        assert rooms.matches(r"^freed") == []  # four terms and more since the client exited
        assert lease.renew(set_lease) == set_lease  # woken by the warning: the set goes on
        warnings.wait_for(2, timeout=set_lease + 5)
        assert rooms.matches(r"^freed") == []  # the set outlived its first lease: so did the rooms
        rooms.wait_count(r"^freed room \d", 3, timeout=warn_before + term + 5)  # nobody renewed the set again


@pytest.mark.slow
def test_the_service_killed_and_restarted_on_its_store_goes_on_renewing(spawn: Any, tmp_path: pathlib.Path) -> None:
    rooms = spawn("served_landlord.py")
    rooms_uri = rooms.expect("URI: ").strip()
    store, port = tmp_path / "sets.sqlite", free_port()
    service, service_uri = _serve_service(store, port)
    with service:
        client = spawn("renewal_client.py", service_uri, rooms_uri, "4", "120")
        client.expect("cookies: ")
        assert client.process.wait(30) == 0
        service.wait_for(r"renewal set \w+ created")
        service.kill()
    restarted, _ = _serve_service(store, port)
    with restarted:
        assert restarted.matches(r"took back 1 set\(s\) keeping 3 lease\(s\)"), restarted.tail()  # before its URI
        with Pyro5.api.Proxy(rooms_uri) as proxy:
            proxy.rent("probe", 12)  # the test's timer: freed 12 s on, three of the rooms' terms
        rooms.wait_for(r"^freed probe", timeout=20)
        assert rooms.matches(r"^freed room") == [], rooms.tail()


@pytest.fixture
def dead_landlords() -> Iterator[list[str]]:
    """URIs of two landlords that cannot be renewed with: a closed port, and a listener that
    takes connections and never answers (a hung host)."""
    closed = free_port()
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(128)
    yield [f"PYRO:rooms@127.0.0.1:{closed}", f"PYRO:rooms@127.0.0.1:{silent.getsockname()[1]}"]
    silent.close()


def stranger_lease(number: int, landlord: str) -> LandlordLease:
    """A forged lease of a landlord of its own (so a call of its own), due for renewal at once
    and with a long term, so that each attempt may wait long."""
    return LandlordLease(f"stranger{number:014d}", landlord, f"stranger-{number}", time.time() + 1000, term=3600)


@pytest.mark.slow
def test_a_strangers_set_of_dead_landlords_costs_no_other_set_a_renewal(
        spawn: Any, dead_landlords: list[str], request: pytest.FixtureRequest) -> None:
    # the hostile suite's canary renews a set's 2 s lease on the service throughout, and the service's memory
    # is checked (tests/hostile/targets.py); its set is the first of the four this host may hold
    rooms = spawn("served_landlord.py")
    rooms_uri = rooms.expect("URI: ").strip()
    with serving("renewal service", request, "--sets-per-client", "4", "--leases-per-set", "1000") as target, \
            watched(target):
        canary = RenewalSetClient.create(target.uri, 60)
        with Pyro5.api.Proxy(rooms_uri) as proxy:
            canary.renew_for(proxy.rent("canary", 3.0))  # renewed once a second, or lost within 3 s
        stranger = RenewalSetClient.create(target.uri, 60)
        with Pyro5.api.Proxy(target.uri) as proxy:
            for number in range(1000):  # two dead landlords under a thousand names
                proxy.renew_for(stranger.lease.cookie, stranger_lease(number, dead_landlords[number % 2]))
            with pytest.raises(ValueError, match="at most 1000 leases"):
                proxy.renew_for(stranger.lease.cookie, stranger_lease(1000, dead_landlords[0]))
            proxy.create_set(60)  # the fourth set a host may hold
            with pytest.raises(ValueError, match="at most 4 renewal sets"):
                proxy.create_set(60)
        with Pyro5.api.Proxy(rooms_uri) as proxy:
            proxy.rent("probe", 12.0)  # the test's timer: freed four of the canary's terms on
        rooms.wait_for(r"^freed probe", timeout=30)
        assert rooms.matches(r"^freed canary") == [], target.process.tail()
        assert len(stranger.leases()) == 1000  # still being tried: none has run out of its term


def test_the_served_service_takes_the_server_options_an_operator_lists_its_sets_with_the_token(
        tmp_path: pathlib.Path) -> None:
    import json
    import subprocess
    import sys

    token_file = tmp_path / "admin-token"
    token_file.write_text("the renewal service's operators' token\n")
    port = free_port()
    config = tmp_path / "renewal-service.toml"  # the options from a file, as deploy/ runs it
    config.write_text(f'port = {port}\nadmin-token-file = "{token_file}"\nlog-format = "json"\n')
    child, uri = start_server("-m", "landlord", "renewal-service", "--config", str(config),
                              pattern=r"^renewal service at (?P<uri>\S+)")
    with child:
        assert str(uri).endswith(f"@127.0.0.1:{port}")
        with Pyro5.api.Proxy(str(uri)) as proxy:
            set_id, set_lease = proxy.create_set(60)

        def listed(*extra: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-m", "landlord", "list", "--port", str(port), "-o", "json",
                                   *extra], capture_output=True, text=True, timeout=60)

        done = listed("--token-file", str(token_file))
        assert done.returncode == 0, done.stderr
        [row] = [json.loads(line) for line in done.stdout.splitlines()]
        assert row["kind"] == "lease" and row["cookie"] == set_lease.cookie[:8] and 50 < row["seconds_left"] <= 60
        wrong = tmp_path / "wrong-token"
        wrong.write_text("not the operators' token at all\n")
        refused = listed("--token-file", str(wrong))
        assert refused.returncode == 1 and refused.stdout == "" and set_lease.cookie[:8] not in refused.stderr
        assert set_lease.renew(60) == 60  # the refused caller touched nothing
