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

import uuid
from collections.abc import Iterator

import pytest
from conftest import skip_unless_required

from landlord.testing_etcd import EtcdCluster, unavailable_reason

__all__ = ["REQUIRE_ENV", "require_etcd", "etcd_cluster", "cluster", "new_group"]

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
