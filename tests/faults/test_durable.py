"""kill -9 of a landlord, and of a lookup service, that keep their leases in a store.

Restarted on the same port with the same store, each has every lease back:
the holders' renewal managers carry on with the same leases, and hear of no
loss; a join manager does not register again. A landlord killed while it
frees resources frees, once restarted, every one whose lease had ended: none
is leaked, some may be freed twice (with the same cookie).
"""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import Pyro5.api
import Pyro5.errors
import pytest
from conftest import Child, free_port, wait_until
from faultkit import Losses, short_call_timeout  # noqa: F401 (a fixture)
from lookup_processes import READY, LookupProcess

from landlord import FOREVER, LeaseRenewalManager, LeaseStore, UnknownLeaseError
from landlord.testing import Recorder
from lookup import TRANSITION_NOMATCH_MATCH, JoinManager, Name, ServiceEvent, ServiceItem, ServiceTemplate
from lookup.discovery.unicast import LOOKUP_OBJECT_ID
from lookup.ownership import NotOwnerError

pytestmark = pytest.mark.slow




def test_a_landlord_killed_and_restarted_on_its_store_loses_no_lease(
        spawn: Callable[..., Child], tmp_path: Path, short_call_timeout: None) -> None:
    port, store = str(free_port()), str(tmp_path / "rooms.sqlite")
    server = spawn("room_landlord.py", port, store)
    server.expect("took back")
    with Pyro5.api.Proxy(server.expect("URI:")) as rooms:
        leases = [rooms.rent(f"room {n}", 4.0) for n in range(200)]
    losses = Losses()
    with LeaseRenewalManager(retry_initial=0.1) as manager:
        for lease in leases:
            manager.renew_for(lease, FOREVER, losses, renew_duration=4.0)
        server.kill()  # SIGKILL: no chance to write anything more
        killed_at = time.time()
        restarted = spawn("room_landlord.py", port, store)
        assert restarted.expect("took back") == "200"
        with Pyro5.api.Proxy(restarted.expect("URI:")) as rooms:
            back_at = time.time()
            # A 4 s term counted from a request sent after the kill: only the restarted landlord can have granted it.
            wait_until(lambda: min(lease.expiration for lease in leases) > killed_at + 4.0, 15,
                       "every lease renewed after the restart")
            assert rooms.held() == 200
        assert losses.events == [] and len(manager) == 200
    assert not [line for line in restarted.output + server.output if line.startswith("freed")]
    assert back_at - killed_at < 4.0  # the restart was quicker than the leases' term (else they would be gone)


FREED = re.compile(r"^freed (expired|cancelled) (\S+) (\S+)$")  # what tests/processes/freeing_landlord.py prints


def freed_by(*children: Child) -> list[tuple[str, ...]]:
    """``(kind, room, cookie)`` of every resource the children said they freed, in order."""
    return [match.groups() for child in children for line in child.output if (match := FREED.match(line))]


def stored_leases(path: str) -> int:
    """How many leases the store at ``path`` holds (its landlord must be down)."""
    store = LeaseStore(path)
    try:
        return len(store)
    finally:
        store.close()


def test_a_landlord_killed_while_freeing_expired_leases_frees_every_one_after_a_restart(
        spawn: Callable[..., Child], tmp_path: Path, short_call_timeout: None) -> None:
    port, store = str(free_port()), str(tmp_path / "rooms.sqlite")
    server = spawn("freeing_landlord.py", port, store, "100")  # SIGKILLs itself as it starts freeing the 100th
    with Pyro5.api.Proxy(server.expect("URI:")) as rooms:
        leases = rooms.rent(300, 1.0)  # all granted, and so all ending, within milliseconds
    assert server.process.wait(20) == -signal.SIGKILL
    server.wait_count(FREED.pattern, 99, timeout=20)  # what it printed before it died, read to the last line
    assert len(freed_by(server)) == 99
    left = stored_leases(store)  # the leases whose end the dead landlord had not yet written

    restarted = spawn("freeing_landlord.py", port, store)
    restarted.expect("URI:")
    restarted.wait_count(FREED.pattern, left, timeout=20)
    cookies = {f"room-{n}": lease.cookie for n, lease in enumerate(leases)}
    freed = freed_by(server, restarted)
    assert {room for _, room, _ in freed} == set(cookies), f"{len(set(cookies) - {r for _, r, _ in freed})} leaked"
    assert all(kind == "expired" and cookie == cookies[room] for kind, room, cookie in freed)


def test_a_landlord_killed_while_freeing_a_cancelled_lease_frees_it_after_a_restart_and_never_revives_it(
        spawn: Callable[..., Child], tmp_path: Path, short_call_timeout: None) -> None:
    port, store = str(free_port()), str(tmp_path / "rooms.sqlite")
    server = spawn("freeing_landlord.py", port, store, "1")  # SIGKILLs itself as it starts freeing the first
    with Pyro5.api.Proxy(server.expect("URI:")) as rooms:
        cancelled, *kept = rooms.rent(3, 600.0)
    with pytest.raises(Pyro5.errors.CommunicationError):
        cancelled.cancel()  # the landlord dies in on_cancel: its holder hears of a lost connection only
    assert server.process.wait(20) == -signal.SIGKILL

    restarted = spawn("freeing_landlord.py", port, store)
    with Pyro5.api.Proxy(restarted.expect("URI:")) as rooms:
        restarted.wait_count(FREED.pattern, 1, timeout=20)
        with pytest.raises(UnknownLeaseError):
            cancelled.renew(60)  # not back as the 600 s lease it was
        for lease in kept:
            lease.renew(60)
        assert rooms.held() == 2
    assert freed_by(server, restarted) == [("cancelled", "room-0", cancelled.cookie)]


class Quoter:
    @Pyro5.api.expose
    def quote(self) -> float:
        return 42.0


class Listener(Recorder[ServiceEvent]):
    """A remote event listener that keeps what it hears (``wait_for(count, timeout)``)."""

    @Pyro5.api.expose
    def notify(self, event: ServiceEvent) -> None:
        self.record(event)


@pytest.fixture
def durable_lookup(tmp_path: Path) -> Iterator[tuple[Callable[[], LookupProcess], str]]:
    """Starts ``python -m lookup serve --store`` on one port and store, again and again; returns its URI too."""
    port, store = free_port(), str(tmp_path / "lookup.sqlite")
    servers: list[LookupProcess] = []

    def start() -> LookupProcess:
        servers.append(LookupProcess("serve", "--port", str(port), "--store", store, "--max-lease", "4"))
        servers[-1].wait_for(re.escape(READY))
        return servers[-1]

    yield start, f"PYRO:{LOOKUP_OBJECT_ID}@127.0.0.1:{port}"
    for server in servers:
        server.kill()


def test_a_lookup_service_killed_and_restarted_on_its_store_keeps_its_registrations(
        daemon: Any, durable_lookup: tuple[Callable[[], LookupProcess], str], short_call_timeout: None) -> None:
    start, uri = durable_lookup
    first = start()
    quoter, listener = Quoter(), Listener()
    daemon.register(quoter)
    losses = Losses()
    with JoinManager(quoter, attributes=[Name("survivor")], lookups=[uri], lease_duration=4.0) as join, \
            LeaseRenewalManager(retry_initial=0.1) as renewals:
        assert join.wait_times_registered(1, timeout=10)
        with Pyro5.api.Proxy(uri) as lookup:
            watch = lookup.notify(ServiceTemplate(types=["test.Other"]), TRANSITION_NOMATCH_MATCH,
                                  daemon.register(listener), "watching", 4.0)
            lookup.register(ServiceItem(None, "PYRO:other@127.0.0.1:1", ["test.Other"]), 60)
        renewals.renew_for(watch.lease, FOREVER, losses, renew_duration=4.0)
        assert [e.sequence_number for e in listener.wait_for(1, timeout=15)] == [1]

        first.kill()  # SIGKILL
        killed_at = time.time()
        second = start()
        [registration] = join.registrations().values()
        wait_until(lambda: registration.lease.expiration > killed_at + 4.0 and watch.lease.expiration > killed_at + 4.0,
                   15, "the join manager's and the event registration's leases renewed by the restarted service")
        with Pyro5.api.Proxy(uri) as lookup:
            found = lookup.lookup_all(ServiceTemplate(attributes=[Name("survivor")]), 10)
            assert [item.service_id for item in found.items] == [join.service_id]
            lookup.register(ServiceItem(None, "PYRO:other@127.0.0.1:2", ["test.Other"]), 60)
        events = listener.wait_for(2, timeout=15)
        assert (events[1].event_id, events[1].sequence_number, events[1].handback) == (watch.event_id, 2, "watching")
        assert join.times_registered == 1  # renewed, never registered again
        assert losses.events == []
    assert second.stop() == 0


def test_ids_stay_their_owners_across_kills_and_restarts_on_the_store(
        durable_lookup: tuple[Callable[[], LookupProcess], str], short_call_timeout: None) -> None:
    start, uri = durable_lookup
    server = start()
    owner = "PYRO:owner@127.0.0.1:1"

    def quoter(service_id: str | None, service: str) -> ServiceItem:
        return ServiceItem(service_id, service, ["test.Quoter"])

    with Pyro5.api.Proxy(uri) as lookup:
        assigned = lookup.register(quoter(None, owner), 4.0)
        chosen = lookup.register(quoter("my-quoter", owner), 4.0)
    assert assigned.secret is not None

    server.kill()  # SIGKILL: both registrations come back from the store, with their leases
    server = start()
    with Pyro5.api.Proxy(uri) as lookup:
        for service_id in (assigned.service_id, "my-quoter"):
            with pytest.raises(NotOwnerError):
                lookup.register(quoter(service_id, STRANGER), 4.0)
        lookup.register(quoter("my-quoter", owner), 4.0, chosen.lease.cookie)  # the restored lease proves it
        lookup.register(quoter(assigned.service_id, owner), 4.0, assigned.secret).lease.cancel()  # ended

    server.kill()  # the assigned id's registration has ended: the store holds nothing of it
    start()
    with Pyro5.api.Proxy(uri) as lookup:
        with pytest.raises(NotOwnerError):
            lookup.register(quoter(assigned.service_id, STRANGER), 4.0)
        back = lookup.register(quoter(assigned.service_id, owner), 4.0, assigned.secret)  # the secret still does
        assert back.service_id == assigned.service_id
        [found] = lookup.lookup_all(ServiceTemplate(service_id=assigned.service_id), 10).items
        assert found.service_uri == owner


STRANGER = "PYRO:stranger@127.0.0.1:9"
