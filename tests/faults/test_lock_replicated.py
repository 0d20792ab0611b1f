"""A replicated landlord's leader killed with kill -9 while its lock is held and contended (issue 25,
item 6): three replicas (landlord.testing.replicacheck, each a process of its own) over a real
three-member etcd, the holders tests/processes/lock_holder.py on the group's URIs.

The holder keeps its lock through the failover with the same token (its next renewal is served by
the successor, and it never hears of a loss); the successor refuses the lock to a third client,
queues the waiter as the old leader had, and grants it the lock once the holder releases it, with
a higher token; the token after that is higher still: no token ever goes back.

And the safety checker (landlord.testing.lockcheck) run small on such a group, its leader killed
with kill -9 and started again twice during the run, besides pauses and a kill of its clients: no
stale write gets through the fence, and the tokens only go up across the failovers.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from etcd_fixtures import cluster, etcd_cluster  # noqa: F401
from lock_processes import ask, holding, processes, renewed_after

from landlord import call_group, timeout_within
from landlord.testing import WaitFailed
from landlord.testing.etcd import EtcdCluster
from landlord.testing.lockcheck import Faults, LockCheck, read_log
from landlord.testing.replicacheck import ReplicaGroupBackend

__all__ = ["processes"]  # a fixture, imported for pytest

pytestmark = pytest.mark.slow

TERM = 10.0  # seconds: the holder's validity (the term less a fifth) outlives a failover (at most 3 s) from any phase


@pytest.fixture
def group(cluster: EtcdCluster, tmp_path: Path) -> Iterator[ReplicaGroupBackend]:
    """Three replicas of one new group, each a process of its own (the safety checker's replica
    group): ``group.replicas[i]`` serves ``group.uris[i]``."""
    backend = ReplicaGroupBackend(cluster.endpoints)
    try:
        backend.start(tmp_path)
        yield backend
    finally:
        backend.close()


def name_view(group: ReplicaGroupBackend, name: str) -> dict[str, Any]:
    with timeout_within(2.0):
        view: dict[str, Any] = call_group(group.uris, "name_view", name)
        return view


def wait_view(group: ReplicaGroupBackend, name: str, want: dict[str, Any], timeout: float = 10.0) -> None:
    """Poll the leader (replicas tell nothing unasked) until its view of ``name`` has ``want``'s items."""
    deadline, seen = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            seen = name_view(group, name)
        except Exception as exc:  # a failover under way
            seen = {"error": repr(exc)}
        if {key: seen.get(key) for key in want} == want:
            return
        time.sleep(0.05)
    raise WaitFailed(f"the group's view of {name!r} is not {want} within {timeout} s: {seen}")


def test_kill_9_of_the_leader_keeps_the_lock_its_holder_its_waiter_and_its_tokens(
        group: ReplicaGroupBackend, processes: Any) -> None:
    target = ",".join(group.uris)
    a = processes.holder("a", target, "--term", str(TERM))
    token_a, _ = holding(a)
    b = processes.holder("b", target, "--term", str(TERM))
    b.send("acquire")
    wait_view(group, "x", {"holders": [token_a], "waiters": 1})
    c = processes.holder("c", target, "--term", str(TERM))

    leader, killed_at = group.kill_leader()
    successor = group.leader(excluding=leader)
    # a renewal sent after the kill: only the successor can have served it
    renewed_after(a, killed_at + TERM, timeout=TERM / 3 + 5)
    assert ask(a, "status", r"^status (\S+) (\S+) ").groups() == ("True", str(token_a))
    wait_view(group, "x", {"holders": [token_a], "waiters": 1})  # the successor queued b as the leader had
    assert ask(c, "try", r"^(refused|holding) ").group(1) == "refused"

    a.send("release")
    token_b, _ = holding(b, "")
    assert token_b > token_a
    b.send("release")
    token_c, _ = holding(c)
    assert token_c > token_b
    print(f"leader {leader} killed, successor {successor}: tokens {token_a}, {token_b}, {token_c}")
    for holder in (a, b, c):
        assert not holder.matches(r"^lost "), f"{holder.name} lost its lock: {holder.tail()}"


def test_the_safety_checker_on_a_replicated_landlord_whose_leader_is_killed_twice_accepts_no_stale_write(
        cluster: EtcdCluster, tmp_path: Path) -> None:
    """3 clients x 20 rounds on a replica group; two pauses of holders past their term, a kill -9 of a
    holder, and two kills -9 of the group's leader, each started again once another leads."""
    backend = ReplicaGroupBackend(cluster.endpoints)
    check = LockCheck(backend, clients=3, rounds=20, writes=3, work=0.05, term=1.0, timeout=120.0,
                      faults=Faults(pauses=2, kills=1, restarts=2, gap=(0.2, 0.5), holder_bias=1.0), workdir=tmp_path)
    report = check.run()
    print(report.format(), *backend.failovers, sep="\n", file=sys.stderr)
    assert report.finished, report.format()
    assert report.faults == {"pause": 2, "kill": 1, "restart": 2}, "not all the faults were applied: it proves less"
    assert report.analysis.safe and report.ok
    assert report.analysis.stale_accepted == () and report.analysis.shared_tokens == {}
    assert report.rounds_done == 3 * 20 and report.analysis.accepted > 0

    # two failovers, each to another replica; tokens in the order the clients acquired only went up
    assert [f.killed != f.successor for f in backend.failovers] == [True, True]
    assert report.analysis.tokens_back == (), report.analysis.tokens_back
    acquired = {(w.client, w.token): w.acquired_at for w in read_log(tmp_path / "writes.log")}
    across = 0
    for failover in backend.failovers:
        before = [token for (_, token), at in acquired.items() if at < failover.killed_at]
        after = [token for (_, token), at in acquired.items() if at > failover.led_at]
        if before and after:
            assert max(before) < min(after), failover
            across += 1
    assert across >= 1, "no failover fell between two holdings: the tokens were not seen across one"
