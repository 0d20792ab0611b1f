"""kill -9 at each step of a lease's end, on every server that frees resources with a store: none leaks.

Each server runs in a child process armed with a kill point
(``LANDLORD_KILL_POINT``, :mod:`landlord.grantor.killpoints`): it SIGKILLs
itself as the first lease to end passes the point, before the callbacks
(``before-free``), between them and the store's delete (``after-free``), or
after the delete (``after-forget``). Restarted on the same store, unarmed, it
must free that lease's resource (at least once, at most twice, the second time
with the same cookie), hold nothing of it any more, and a canary holder of
another lease, renewed by a ``LeaseRenewalManager`` throughout, keeps it:
renewed by the restarted server within its term.

What "the resource" and "freed" are, server by server (each freeing written
outside the process, flushed, before the callback returns):

* a stored landlord (tests/processes/freeing_landlord.py): a room, freed when
  its lease expires; ``freed expired <room> <cookie>`` on its stdout;
* the stored lookup (``python -m lookup serve --store``): a registration,
  cancelled by its holder; freed when it leaves the registry and its removal
  is fired to listeners, logged ``registration <service id> ended``; an event
  registration watching it is a second canary, and hears of its end (except
  after ``after-forget``: the removal event is posted as the registration is
  freed and delivered later from memory, so a kill after the delete and
  before the delivery loses it, and the restarted lookup has no row to send
  it from; docs/reliability.md says so);
* the renewal service (``--store``): a renewal set, whose lease expires;
  freed when the service stops renewing the set's members, seen at the
  members' own landlord (tests/processes/served_landlord.py): the victim set's
  member expires there (``freed <room>``), the canary set's member does not;
* a replica of a replicated landlord over a real three-member etcd
  (tests/processes/replica_landlord.py): a room, freed when its lease expires
  (``freed <room> <cookie>``), again by the replica that leads after the kill.
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
from conftest import PROCESSES, wait_until
from etcd_fixtures import cluster, etcd_cluster, new_group  # noqa: F401
from faultkit import Losses, short_call_timeout  # noqa: F401 (a fixture)
from lookup_processes import READY

from landlord import (
    FOREVER,
    LeaseRenewalManager,
    LeaseStore,
    UnknownLeaseError,
    replica_uris,
)
from landlord.grantor.killpoints import ENVIRONMENT, POINTS
from landlord.testing import ChildProcess, Recorder, ServingDaemon, free_port, start_server
from landlord.testing.etcd import EtcdCluster, leading_replica, replica_status
from lookup import TRANSITION_MATCH_NOMATCH, ServiceEvent, ServiceItem, ServiceTemplate
from lookup.discovery.unicast import LOOKUP_OBJECT_ID
from lookup.service.server import STORE_NAME

pytestmark = pytest.mark.slow

TERM = 4.0  # the canaries' term: longer than a restart, so a canary renewed after it never lapsed
REPLICA_TERM = 6.0  # a replica's canary waits out a failover too: the dead leader's election key lives 2 s (TTL)
DIED = 20.0  # seconds a server has to reach its kill point
KILLED = re.compile(r"^kill point (\S+) reached")




@pytest.fixture
def children() -> Iterator[list[ChildProcess]]:
    """Child processes to kill and reap after the test."""
    started: list[ChildProcess] = []
    yield started
    for child in started:
        child.close()


def armed(point: str | None) -> dict[str, str]:
    """The environment that arms ``point`` for the first lease's end (``None``: unarmed)."""
    return {ENVIRONMENT: f"{point}:1" if point else ""}


def wait_killed_at(child: ChildProcess, point: str) -> None:
    """Wait for ``child`` to kill itself at ``point`` (and not to die any other way)."""
    assert child.process.wait(DIED) == -signal.SIGKILL, child.tail()
    child.wait_for(KILLED.pattern, timeout=5)  # its last line, read to the end
    assert [m.group(1) for line in child.output if (m := KILLED.match(line))] == [point]


def frees(pattern: str, *processes: ChildProcess) -> list[tuple[str, ...]]:
    """The groups of ``pattern`` in every line of ``processes``' output, in order: what they freed."""
    compiled = re.compile(pattern)
    return [match.groups() for child in processes for line in child.output if (match := compiled.match(line))]


def heard(freed: Callable[[], list[tuple[str, ...]]], count: int) -> None:
    """Wait until ``freed()`` lists ``count`` frees at least: a child's lines reach its output by a
    reader thread of ours, after what the test saw happen (the exact count is asserted after)."""
    wait_until(lambda: len(freed()) >= count, 10, f"{count} free(s) read from the servers' output")


def expected_frees(point: str) -> tuple[int, int]:
    """How often the victim's resource is freed before the kill, and after it (by the restarted server)."""
    return {"before-free": (0, 1), "after-free": (1, 1), "after-forget": (1, 0)}[point]


def stored_cookies(path: str, name: str) -> set[str]:
    """The cookies of the leases the store at ``path`` holds for ``name`` (its server must be down)."""
    store = LeaseStore(path, name=name)
    try:
        return {row.cookie for row in store.leases(time.time())}
    finally:
        store.close()


# -- a stored landlord -------------------------------------------------------------------------


ROOM_FREED = r"^freed (?:expired|cancelled) (\S+) (\S+)$"  # tests/processes/freeing_landlord.py


def landlord_case(children: list[ChildProcess], tmp_path: Path, point: str) -> None:
    port, store = str(free_port()), str(tmp_path / "rooms.sqlite")

    def start(point: str | None) -> tuple[ChildProcess, str]:
        child = ChildProcess(str(PROCESSES / "freeing_landlord.py"), port, store, env=armed(point))
        children.append(child)
        return child, child.expect("URI:")

    server, uri = start(point)
    losses = Losses()
    with LeaseRenewalManager(retry_initial=0.1) as renewals:
        with Pyro5.api.Proxy(uri) as rooms:
            [canary] = rooms.rent(1, TERM)
            renewals.renew_for(canary, FOREVER, losses, renew_duration=TERM)
            [victim] = rooms.rent(1, 0.5)  # nobody renews it: it expires, and the reaper frees it
        wait_killed_at(server, point)
        killed_at = time.time()
        restarted, uri = start(None)
        wait_until(lambda: canary.expiration > killed_at + TERM, 15, "the canary renewed by the restarted landlord")
        with pytest.raises(UnknownLeaseError):
            victim.renew(60)  # and a restored row of it would have been freed by now, as found dead
        before, after = expected_frees(point)
        heard(lambda: frees(ROOM_FREED, server, restarted), before + after)
        freed = frees(ROOM_FREED, server) + frees(ROOM_FREED, restarted)
        assert [cookie for _, cookie in freed] == [victim.cookie] * (before + after), freed
        assert losses.events == []
        restarted.close()
    assert stored_cookies(store, "landlord") == {canary.cookie}  # nothing of the victim left behind


# -- the stored lookup ---------------------------------------------------------------------------


REGISTRATION_ENDED = r".*registration (\S+) ended$"  # logged by lookup.service.lookupservice
EVENT_AWAITED = 3.0  # seconds a listener is given to hear of the victim's end once the lookup is back


class Listener(Recorder[ServiceEvent]):
    """A remote event listener that keeps what it hears (``wait_for(count, timeout)``)."""

    @Pyro5.api.expose
    def notify(self, event: ServiceEvent) -> None:
        self.record(event)


def lookup_case(children: list[ChildProcess], tmp_path: Path, point: str) -> None:
    port, store = free_port(), str(tmp_path / "lookup.sqlite")
    uri = f"PYRO:{LOOKUP_OBJECT_ID}@127.0.0.1:{port}"

    def start(point: str | None) -> ChildProcess:
        child = ChildProcess("-m", "lookup", "serve", "--port", str(port), "--store", store, "--max-lease",
                             str(TERM), "--log-level", "info", env=armed(point))
        children.append(child)
        child.wait_for(re.escape(READY), timeout=20)
        return child

    server = start(point)
    losses, listener = Losses(), Listener()
    with LeaseRenewalManager(retry_initial=0.1) as renewals, Pyro5.api.Proxy(uri) as lookup, \
            ServingDaemon() as serving:
        canary = lookup.register(ServiceItem(None, "PYRO:canary@127.0.0.1:1", ["test.Canary"]), TERM)
        watch = lookup.notify(ServiceTemplate(types=["test.Victim"]), TRANSITION_MATCH_NOMATCH,
                              serving.register(listener), "watching", TERM)  # a canary too, stored with its lease
        for lease in (canary.lease, watch.lease):
            renewals.renew_for(lease, FOREVER, losses, renew_duration=TERM)
        victim = lookup.register(ServiceItem(None, "PYRO:victim@127.0.0.1:1", ["test.Victim"]), TERM)
        with pytest.raises(Pyro5.errors.CommunicationError):
            victim.lease.cancel()  # the service dies ending it: its holder hears of a lost connection only
        wait_killed_at(server, point)
        killed_at = time.time()
        lookup._pyroRelease()
        restarted = start(None)
        wait_until(lambda: min(canary.lease.expiration, watch.lease.expiration) > killed_at + TERM, 15,
                   "the registration and the event registration renewed after the restart")
        with pytest.raises(UnknownLeaseError):
            victim.lease.renew(TERM)
        for registration, listed in ((canary, 1), (victim, 0)):
            assert len(lookup.lookup_all(ServiceTemplate(service_id=registration.service_id), 10).items) == listed
        before, after = expected_frees(point)
        heard(lambda: frees(REGISTRATION_ENDED, server, restarted), before + after)
        ended = frees(REGISTRATION_ENDED, server) + frees(REGISTRATION_ENDED, restarted)
        assert ended == [(victim.service_id,)] * (before + after), ended
        if point != "after-forget":  # after the delete, an event not yet delivered is lost (the module docstring)
            listener.wait_for(1, timeout=EVENT_AWAITED)
            assert {event.service_id for event in listener.items} == {victim.service_id}
            assert len(listener.items) <= 2
        assert losses.events == []
        restarted.close()
    assert stored_cookies(store, STORE_NAME) == {canary.lease.cookie, watch.lease.cookie}


# -- the renewal service ---------------------------------------------------------------------


def renewal_service_case(children: list[ChildProcess], tmp_path: Path, point: str) -> None:
    port, store = free_port(), str(tmp_path / "sets.sqlite")
    members = ChildProcess(str(PROCESSES / "served_landlord.py"), "--quiet")
    children.append(members)
    members_uri = members.expect("URI: ").strip()

    def start(point: str | None) -> tuple[ChildProcess, str]:
        child, uri = start_server("-m", "landlord", "renewal-service", "--port", str(port), "--store", store,
                                  pattern=r"^renewal service at (?P<uri>\S+)", env=armed(point))
        children.append(child)
        return child, uri

    service, uri = start(point)
    losses = Losses()
    with LeaseRenewalManager(retry_initial=0.1) as renewals, Pyro5.api.Proxy(uri) as sets, \
            Pyro5.api.Proxy(members_uri) as rooms:
        _, canary_set = sets.create_set(TERM)  # a set is named by its lease's cookie
        renewals.renew_for(canary_set, FOREVER, losses, renew_duration=TERM)
        sets.renew_for(canary_set.cookie, rooms.rent("canary-member", TERM), FOREVER, TERM)
        _, victim_set = sets.create_set(TERM)
        sets.renew_for(victim_set.cookie, rooms.rent("victim-member", TERM), FOREVER, TERM)
        victim_set.renew(0.5)  # and no more: the set's lease expires, and the set with it
        wait_killed_at(service, point)
        killed_at = time.time()
        sets._pyroRelease()
        restarted, _ = start(None)
        wait_until(lambda: canary_set.expiration > killed_at + TERM, 15, "the canary set renewed after the restart")
        wait_until(lambda: sets.leases(canary_set.cookie)[0].expiration > killed_at + TERM, 15,
                   "the canary set's member renewed by the restarted service")
        with pytest.raises(UnknownLeaseError):
            sets.leases(victim_set.cookie)
        members.wait_for(r"^freed victim-member$", timeout=TERM + 5)  # no longer renewed: it ended
        assert [line.text for line, _ in members.matches(r"^freed")] == ["freed victim-member"]  # once, not the canary
        assert losses.events == []
        restarted.close()
    assert stored_cookies(store, "renewal-service") == {canary_set.cookie}


# -- a replica of a replicated landlord over etcd -------------------------------------------------


REPLICA_FREED = r"^freed (\S+) (\S+)$"  # tests/processes/replica_landlord.py


def replica_case(children: list[ChildProcess], cluster: EtcdCluster, point: str) -> None:
    group, ports = new_group(), [free_port() for _ in range(3)]
    addresses = ",".join(f"127.0.0.1:{port}" for port in ports)
    uris = replica_uris(addresses, group)

    def start(index: int, point: str | None) -> ChildProcess:
        child = ChildProcess(str(PROCESSES / "replica_landlord.py"), ",".join(cluster.endpoints), group,
                             str(ports[index]), addresses, env=armed(point))
        children.append(child)
        child.wait_for(r"^replica at ", timeout=20)
        return child

    first = start(0, point)  # alone, so it leads: the armed one frees, its successors do not die
    assert leading_replica(uris, timeout=10) == 0
    others = [start(1, None), start(2, None)]
    losses = Losses()
    with LeaseRenewalManager(retry_initial=0.1) as renewals:
        with Pyro5.api.Proxy(uris[0]) as leader:
            canary = leader.rent("canary", REPLICA_TERM)
            renewals.renew_for(canary, FOREVER, losses, renew_duration=REPLICA_TERM)
            victim = leader.rent("victim", 0.5)
        wait_killed_at(first, point)
        killed_at = time.time()
        others.append(start(0, None))  # back on the same store (etcd), a follower now
        wait_until(lambda: canary.expiration > killed_at + REPLICA_TERM, 15, "the canary renewed by the successor")
        with pytest.raises(UnknownLeaseError):
            victim.renew(60)  # a successor that took back its row has freed it by now, as found dead
        before, after = expected_frees(point)
        heard(lambda: frees(REPLICA_FREED, first, *others), before + after)
        freed, again = frees(REPLICA_FREED, first), frees(REPLICA_FREED, *others)
        assert len(freed) == before, freed
        # etcd's delete is written within the commit interval: one asked for just before the kill may be lost
        assert len(again) == after or (point == "after-forget" and len(again) == 1), again
        assert set(freed + again) == {("victim", victim.cookie)}
        successor = leading_replica(uris, timeout=10)
        assert replica_status(uris[successor])["held"] == 1  # the canary's lease alone
        assert losses.events == []


CASES: dict[str, Callable[..., None]] = {
    "landlord": landlord_case, "lookup": lookup_case, "renewal-service": renewal_service_case, "replica": replica_case,
}


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("server", list(CASES))
def test_a_server_killed_at_a_step_of_a_leases_end_frees_it_once_restarted_and_keeps_the_canarys(
        server: str, point: str, children: list[ChildProcess], tmp_path: Path, request: Any,
        short_call_timeout: None) -> None:
    if server == "replica":
        replica_case(children, request.getfixturevalue("cluster"), point)
    else:
        CASES[server](children, tmp_path, point)
