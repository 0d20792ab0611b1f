"""The etcd cluster the etcd tests run against, and when they skip.

A test module imports :func:`etcd_cluster` (one real three-member cluster
for the module, torn down when the module ends) and :func:`cluster` (that
cluster, mended after each test that paused, stopped or killed members).

Where the ``etcd`` program or the etcd-sdk-python client is missing, the
tests skip and say which, unless ``LANDLORD_REQUIRE_ETCD=1``: then they fail
instead (as tests/multihost does with ``LANDLORD_REQUIRE_MULTIHOST``).

Test modules import the fixtures from here (``from etcd_fixtures import
cluster, etcd_cluster  # noqa: F401``), as they do tests/lookup_processes.py's:
only the modules that use etcd pay for it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

import pytest
from conftest import skip_unless_required, wait_until

from landlord import ReplicatedLandlord, replica_uris
from landlord.replication.election import connect
from landlord.testing import ServingDaemon, free_port
from landlord.testing.etcd import EtcdCluster, unavailable_reason

__all__ = ["REQUIRE_ENV", "require_etcd", "etcd_cluster", "cluster", "new_group", "ReplicaGroup", "FAILOVER"]

R = TypeVar("R", bound=ReplicatedLandlord)

FAILOVER = 5.0  # seconds a test waits for a new leader after a resignation (takes milliseconds)

REQUIRE_ENV = "LANDLORD_REQUIRE_ETCD"  # "1": a missing etcd or client fails the etcd tests instead of skipping them


def require_etcd() -> None:
    """Skip the calling test (or fail it, with ``LANDLORD_REQUIRE_ETCD=1``) where etcd cannot be run."""
    skip_unless_required(unavailable_reason(), env=REQUIRE_ENV, tests="etcd", needs="etcd and its client")


@pytest.fixture(scope="module")
def etcd_cluster() -> Iterator[EtcdCluster]:
    """A three-member etcd cluster on loopback for the test module; gone (processes and data) after it."""
    require_etcd()
    with EtcdCluster() as started:
        yield started


@pytest.fixture
def cluster(etcd_cluster: EtcdCluster) -> Iterator[EtcdCluster]:
    """The module's cluster, every member healthy; mended after the test (members resumed or restarted)."""
    yield etcd_cluster
    etcd_cluster.heal()


def new_group() -> str:
    """A group name no other test uses (tests share one cluster)."""
    return f"g{uuid.uuid4().hex[:12]}"


class ReplicaGroup(Generic[R]):
    """Replicas of one new group in this process, each served by a daemon of its own and with an etcd
    client of its own: ``make(client, group, uris)`` makes one (a ReplicatedLandlord or subclass)."""

    def __init__(self, cluster: EtcdCluster, make: Callable[..., R], *, size: int = 3,
                 object_id: str | None = None) -> None:
        self.name = new_group()
        ports = [free_port() for _ in range(size)]
        self.uris = replica_uris([("127.0.0.1", port) for port in ports], self.name, object_id=object_id)
        self.daemons = [ServingDaemon(port=port) for port in ports]
        self.replicas: list[R] = []
        for daemon in self.daemons:
            replica = make(connect(cluster.endpoints), self.name, self.uris)
            daemon.register(replica, replica.object_id)
            self.replicas.append(replica)

    def start(self) -> ReplicaGroup[R]:
        for replica in self.replicas:
            replica.start()
        return self

    def leader(self, *, excluding: R | None = None, timeout: float = FAILOVER) -> R:
        """The replica that answers as leader (waiting for one)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for replica in self.replicas:
                if replica is not excluding and replica.wait_leading(0.02):
                    return replica
        raise AssertionError(f"no replica of {self.name} leads after {timeout} s")

    def wait_named(self, leader: R, *, excluding: R | None = None, timeout: float = FAILOVER) -> None:
        """Wait until every other replica (but ``excluding``, a closed one) names ``leader`` as the leader:
        a follower learns of a new leader a moment after it leads."""
        others = [replica for replica in self.replicas if replica is not leader and replica is not excluding]
        wait_until(lambda: all(replica.leader() == leader.uri for replica in others), timeout,
                   f"every replica of {self.name} names {leader.uri}")

    def followers(self, leader: R) -> list[R]:
        return [replica for replica in self.replicas if replica is not leader]

    def close(self) -> None:
        for replica in self.replicas:
            replica.close()
        for daemon in self.daemons:
            daemon.close()
