"""lookup.replicated: one replica of a lookup service replicated through etcd.

Three replicas in this process, each on a Pyro5 daemon of its own, against a real three-member etcd:
the leader registers and answers lookups, followers name it; when the leader goes, its successor has
every registration (same service id, same cookie, its remaining term) and every event registration,
whose events go on numbered after the last one sent (a gap at worst, never a repeat).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import Pyro5.api
import pytest
from conftest import free_port, wait_until
from etcd_fixtures import FAILOVER, ReplicaGroup, cluster, etcd_cluster, new_group  # noqa: F401
from lookup_processes import run_lookup

from landlord import LeaseDeniedError, NotLeaderError, UnknownLeaseError
from landlord.testing import ChildProcess, Recorder, ServingDaemon
from landlord.testing.etcd import EtcdCluster
from lookup import (
    ALL_TRANSITIONS,
    TRANSITION_MATCH_NOMATCH,
    TRANSITION_NOMATCH_MATCH,
    JoinManager,
    LookupCache,
    LookupService,
    Name,
    ServiceEvent,
    ServiceItem,
    ServiceTemplate,
)
from lookup.discovery.unicast import LOOKUP_OBJECT_ID, LookupGroup, LookupServiceNotFoundError, locate
from lookup.service.outbox import MailLimits
from lookup.service.quotas import LookupLimits
from lookup.service.replicated import ReplicatedLookupService

SERVICE_URI = "PYRO:quoter@127.0.0.1:9999"


class Quoter:
    pass


Group = ReplicaGroup[ReplicatedLookupService]


@pytest.fixture
def group(cluster: EtcdCluster) -> Iterator[Group]:
    started = ReplicaGroup(cluster, lambda client, name, uris: ReplicatedLookupService(
        client, group=name, replicas=uris, max_lease=60, default_lease=30), object_id=LOOKUP_OBJECT_ID)
    started.start()
    yield started
    started.close()


class Listener(Recorder[ServiceEvent]):
    """A remote event listener: records the events it is sent (``wait_for(count)``)."""

    @Pyro5.api.expose
    def notify(self, event: ServiceEvent) -> None:
        self.record(event)


@pytest.fixture
def listener() -> Iterator[tuple[Listener, str]]:
    listening = Listener()
    with ServingDaemon() as daemon:
        yield listening, daemon.register(listening)


def quoter(name: str) -> ServiceItem:
    return ServiceItem(None, SERVICE_URI, (Quoter,), (Name(name),))


def test_the_leader_registers_and_answers_and_followers_name_it(group: Group) -> None:
    leader = group.leader()
    registration = leader.register(quoter("quotes"), 30)
    assert registration.lease.landlords == tuple(group.uris)
    assert group.uris[0].startswith(f"PYRO:{LOOKUP_OBJECT_ID}@")
    template = ServiceTemplate(None, (Quoter,), ())
    assert leader.lookup(template) == SERVICE_URI
    for follower in group.followers(leader):
        with Pyro5.api.Proxy(follower.uri) as proxy:
            with pytest.raises(NotLeaderError) as caught:
                proxy.lookup(template)
            assert caught.value.leader == leader.uri
            status = proxy.replica_status()
        warm = status.pop("warm")  # the revision its warm copy of the group's leases has reached
        assert status == {"leading": False, "leader": leader.uri, "group": group.name, "held": 0}
        assert isinstance(warm, int) or warm is None


def test_after_a_failover_every_registration_is_found_and_its_lease_renews(group: Group) -> None:
    leader = group.leader()
    kept = leader.register(quoter("kept"), 60)
    changed = leader.register(quoter("changed"), 60)
    changed.set_attributes([Name("renamed")])  # through the group, written to etcd before it returns
    leader.close()
    successor = group.leader(excluding=leader)
    matches = successor.lookup_all(ServiceTemplate(None, (Quoter,), ()))
    assert sorted(item.service_id for item in matches.items) == sorted([kept.service_id, changed.service_id])
    assert successor.lookup(ServiceTemplate(changed.service_id, (), ())) == SERVICE_URI
    assert successor.lookup(ServiceTemplate(None, (), (Name("renamed"),))) == SERVICE_URI
    assert kept.lease.renew(60) == pytest.approx(60)  # the same cookie, against the new leader
    kept.add_attributes([Name("again")])
    kept.lease.cancel()
    with pytest.raises(UnknownLeaseError):
        kept.lease.renew(1)
    assert successor.lookup(ServiceTemplate(kept.service_id, (), ())) is None


def test_a_long_answer_goes_on_after_its_cursor_and_a_cursor_of_the_last_term_is_refused(group: Group) -> None:
    leader = group.leader()
    registered = [leader.register(quoter(f"q{number}"), 60).service_id for number in range(3)]
    first = leader.lookup_all(ServiceTemplate(), 2)
    assert first.cursor is not None
    rest = leader.lookup_all(ServiceTemplate(), 2, first.cursor)
    assert [item.service_id for item in first.items + rest.items] == registered and rest.cursor is None
    leader.close()
    successor = group.leader(excluding=leader)
    with pytest.raises(ValueError, match="ask again from the start"):  # its places are not the last term's
        successor.lookup_all(ServiceTemplate(), 2, first.cursor)
    assert sorted(item.service_id for item in successor.lookup_all(ServiceTemplate()).items) == sorted(registered)


def test_a_registration_nobody_renews_ends_at_its_own_deadline_after_a_failover(group: Group) -> None:
    leader = group.leader()
    orphan = leader.register(quoter("orphan"), 2)
    deadline = time.monotonic() + 2
    leader.close()
    successor = group.leader(excluding=leader)
    template = ServiceTemplate(orphan.service_id, (), ())
    assert successor.lookup(template) == SERVICE_URI
    while successor.lookup(template) is not None:
        assert time.monotonic() < deadline + 1.0, "still listed a second past its own deadline"
        threading.Event().wait(0.02)  # a poll's period
    assert time.monotonic() >= deadline - successor.commit_interval - 0.1


def test_event_registrations_survive_a_failover_and_their_numbers_never_repeat(
        group: Group, listener: tuple[Listener, str]) -> None:
    events, listener_uri = listener
    leader = group.leader()
    watched = leader.notify(ServiceTemplate(None, (Quoter,), ()), TRANSITION_NOMATCH_MATCH | TRANSITION_MATCH_NOMATCH,
                            listener_uri, "handback", 60)
    leader.register(quoter("first"), 30)
    [first] = events.wait_for(1)
    leader.close()
    successor = group.leader(excluding=leader)
    assert watched.lease.renew(60) == pytest.approx(60)  # the event registration's lease, same cookie
    second = successor.register(quoter("second"), 30)
    second.lease.cancel()
    received = events.wait_for(3)
    assert [event.event_id for event in received] == [first.event_id] * 3
    numbers = [event.sequence_number for event in received]
    assert numbers == sorted(set(numbers)), f"a number repeated or went back: {numbers}"
    assert [event.transition for event in received[1:]] == [TRANSITION_NOMATCH_MATCH, TRANSITION_MATCH_NOMATCH]
    assert all(event.handback == "handback" for event in received)


def test_locate_given_every_replica_is_one_group_that_follows_the_leader_from_any_thread(group: Group) -> None:
    addresses = ",".join(uri.split("@", 1)[1] for uri in group.uris)
    located = locate(addresses, timeout=5)
    assert isinstance(located, LookupGroup) and located.uris == tuple(group.uris)
    registration = located.register(quoter("through the group"), 60)  # a follower may be asked first
    template = ServiceTemplate(registration.service_id, (), ())
    leader = group.leader()
    leader.close()
    group.leader(excluding=leader)
    found: list[Any] = []
    elsewhere = threading.Thread(target=lambda: found.append(located.lookup(template)))
    elsewhere.start()
    elsewhere.join(10)
    assert found == [SERVICE_URI]  # the same group object, another thread, the new leader
    assert located.lookup_all(template).items[0].service_id == registration.service_id
    with pytest.raises(AttributeError):
        located._pyroBind  # noqa: B018  (not a remote call)


def test_locate_a_group_nobody_answers_for_is_not_found() -> None:
    with pytest.raises(LookupServiceNotFoundError):
        locate([("127.0.0.1", free_port()), ("127.0.0.1", free_port())], timeout=2)
    with pytest.raises(ValueError):
        locate("127.0.0.1:1,127.0.0.1", timeout=2)


def test_a_join_manager_and_a_cache_given_the_group_keep_the_service_through_a_failover(
        group: Group, daemon: Any) -> None:
    located = LookupGroup(group.uris, timeout=5)
    service = Quoter()
    daemon.register(service)
    with JoinManager(service, attributes=[Name("joined")], lookups=[located], lease_duration=4) as join, \
            LookupCache(located, ServiceTemplate(None, (Quoter,), ()), lease_duration=4,
                        retry_initial=0.1, retry_max=0.5) as cache:
        assert join.wait_registered(1, timeout=10)
        assert join.lookup_services() == [",".join(group.uris)]  # the group is one locator
        assert cache.wait_ready(10)
        deadline = time.monotonic() + 10
        while [item.service_id for item in cache.items()] != [join.service_id]:
            assert time.monotonic() < deadline, cache.items()
            threading.Event().wait(0.02)
        leader = group.leader()
        leader.close()
        successor = group.leader(excluding=leader)
        # past two of the join's lease terms: its registration was renewed through the new leader
        renewed_until = time.monotonic() + 2 * 4
        while time.monotonic() < renewed_until:
            assert successor.lookup(ServiceTemplate(join.service_id, (), ())) is not None
            threading.Event().wait(0.2)
        assert [item.service_id for item in cache.items()] == [join.service_id]
        assert join.times_registered == 1, "the registration was lost and made again"


def test_every_terms_lookup_service_has_the_replicas_limits_and_callback_hosts(cluster: EtcdCluster) -> None:
    limits = LookupLimits(registrations_per_client=3, event_registrations_per_client=2, attribute_bytes=100)
    mail = MailLimits(queue=7)
    limited = ReplicaGroup(cluster, lambda client, name, uris: ReplicatedLookupService(
        client, group=name, replicas=uris, lookup_limits=limits, mail_limits=mail, callback_hosts=["10.9.9.9"]),
        object_id=LOOKUP_OBJECT_ID, size=2).start()
    try:
        leader = limited.leader()
        _check_term(leader, limits)
        leader.close()
        _check_term(limited.leader(excluding=leader), limits)  # the next term's too
    finally:
        limited.close()
    with pytest.raises(TypeError, match="lookup_limits must be a LookupLimits"):
        ReplicatedLookupService(None, group="g", replicas=[], lookup_limits=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not one str"):
        ReplicatedLookupService(None, group="g", replicas=[], callback_hosts="10.9.9.9")  # type: ignore[arg-type]


def _check_term(replica: ReplicatedLookupService, limits: LookupLimits) -> None:
    """The leading ``replica``'s term has ``limits``, a mail queue of 7, and takes listeners on 10.9.9.9 alone."""
    service = replica.answer(lambda term: term)
    assert isinstance(service, LookupService)
    assert service.limits == limits and service.fanout.mailer.limits.queue == 7
    with pytest.raises(ValueError, match="10.0.0.1"):
        replica.notify(ServiceTemplate(), ALL_TRANSITIONS, "PYRO:listener@10.0.0.1:9", None, 30)


# -- python -m lookup serve --etcd, and list --group: real processes ------------------------------------


def test_a_served_replica_enforces_the_per_client_limits_and_callback_hosts_given_it(cluster: EtcdCluster) -> None:
    """They were accepted, then dropped: a replica held any client to the defaults, and called back any host."""
    group, port = new_group(), free_port()
    replica = ChildProcess("-m", "lookup", "serve", "--etcd", ",".join(cluster.endpoints), "--group", group,
                           "--replicas", f"127.0.0.1:{port}", "--port", str(port), "--no-announce",
                           "--registrations-per-client", "3", "--event-registrations-per-client", "2",
                           "--attribute-bytes", "100", "--callback-hosts", "127.0.0.1", "--event-queue", "7",
                           name="limited replica")
    try:
        uri = replica.read_uri(20, pattern=r"^lookup service at (?P<uri>\S+) ")
        with Pyro5.api.Proxy(uri) as proxy:
            wait_until(lambda: proxy.replica_status()["leading"], FAILOVER, "the only replica leads")
            for number in range(3):
                proxy.register(quoter(f"q{number}"), 60)
            with pytest.raises(LeaseDeniedError, match="at most 3 registrations"):
                proxy.register(quoter("one too many"), 60)
            with pytest.raises(ValueError, match="a registration may carry at most 100"):
                proxy.register(ServiceItem(None, SERVICE_URI, (Quoter,), (Name("n" * 200),)), 60)
            with pytest.raises(ValueError, match="127.0.0.2"):
                proxy.notify(ServiceTemplate(), ALL_TRANSITIONS, "PYRO:listener@127.0.0.2:9", None, 30)
            for _ in range(2):
                proxy.notify(ServiceTemplate(), ALL_TRANSITIONS, "PYRO:listener@127.0.0.1:9", None, 30)
            with pytest.raises(LeaseDeniedError, match="at most 2 event registrations"):
                proxy.notify(ServiceTemplate(), ALL_TRANSITIONS, "PYRO:listener@127.0.0.1:9", None, 30)
    finally:
        replica.close()


def _listed_leader(etcd: str, group: str, *, allow_none: bool = False) -> str | None:
    """The leader ``python -m lookup list --etcd --group`` names, reachable or not (``None``: it names none)."""
    done = run_lookup("list", "--etcd", etcd, "--group", group, "--timeout", "5")
    if not done.stdout:
        assert allow_none and "has no leader now" in done.stderr, done.stderr
        return None
    match = re.match(rf"^group {group}: led by (\S+)$", done.stdout.splitlines()[0])
    assert match, done.stdout
    return match.group(1)
