"""A replicated landlord against its baselines, in one run: failover, batched renewals, grants, etcd keep-alive.

Three replica processes (this script again, ``--child replica``: a
``ReplicatedLandlord`` subclass that also exposes ``grant``, ``grant_many``
and ``status``, served by ``landlord.serve_replica``) over a real
three-member etcd on loopback (``landlord.testing.etcd.EtcdCluster``, data on
tmpfs), election TTL 2 s and renewals committed to etcd every 0.1 s (the
defaults). This process is the holder, one client thread.

1. **Failover**: a holder renews a batch (``--failover-leases``) in one
   ``renew_all`` call after another through the group (a ``LandlordLease``'s
   group call); the leader is killed with SIGKILL; the row is the time from
   the kill to the first renewal served by the successor, over ``--rounds``
   rounds (the killed replica is started again, as a follower, between
   rounds). Goal <= 3 s. No renewal may be refused (a problem otherwise).
2. **Batched renewals**, leases per second, ``renew_all`` of ``--batch``
   leases a call (at most ``MAX_BATCH``, 2,000, what a landlord takes; by
   default ``CALL_BATCH``, 1,000, what a holder sends) through a lease's
   ``call_landlord``: the replicated leader
   against an in-memory ``Landlord`` in a child process (the baseline; goal
   >= 0.5x) and against a ``Landlord`` on the SQLite ``LeaseStore`` (also on
   tmpfs); both served by ``serve_landlord`` on the same server as the
   replicas, ``serve_replica``'s default (the guarded server).
3. **Grant latency**: the leader's ``grant`` (one etcd transaction) against
   etcd's own ``LeaseGrant`` (pyetcd, the same cluster); the in-memory
   landlord's grant is timed beside them for reference.
4. **Leases kept alive per second**: the replicated ``renew_all`` of item 2
   against etcd keep-alives: one ``LeaseKeepAlive`` stream carrying a request
   per lease for ``--batch`` etcd leases (as ``bench_etcd.py`` does),
   measured in the same rounds as item 2.
5. **The renewal stream across a failover**: every answer of the reported
   round of item 1, stamped, in the JSON under ``stream``; with matplotlib,
   also a plot of renewals per second over time, the kill marked (``--plot``).

Each measurement takes turns with its baselines, round after round, and the
median-ratio round is reported with the min and max (``harness.py``).
Without etcd or its client it says why, measures the SQLite against the
in-memory landlord alone and exits 0. Not a test: pytest collects only
``tests/``.
"""

from __future__ import annotations

import argparse
import collections
import functools
import logging
import math
import os
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import bench_etcd
import harness
import Pyro5
import Pyro5.api
import Pyro5.errors
import Pyro5.serializers
import serpent
from harness import Report, Row, compare, positive_seconds, progress, rate

import landlord
from landlord import (
    Landlord,
    LandlordLease,
    LeaseDurationPolicy,
    LeaseStore,
    NotLeaderError,
    RenewResults,
    ReplicatedLandlord,
    known_leader,
    replica_uris,
    timeout_within,
)
from landlord.grantor.landlord import MAX_BATCH
from landlord.holder.landlordlease import CALL_BATCH
from landlord.testing import ChildProcess, WaitFailed, free_port
from landlord.testing.etcd import EtcdCluster, EtcdUnavailable, leading_replica, replica_status, unavailable_reason

HERE = Path(__file__).resolve().parent
PLOT = HERE / "replicated_failover.png"

TERM = 60.0                 # seconds asked for on every grant and renewal: nothing expires during the run
ETCD_TTL = 60               # the same, for etcd's leases (whole seconds)
FAILOVER_GOAL = 3.0         # seconds from the leader's death to the first renewal served by its successor
THROUGHPUT_GOAL = 0.5       # replicated renew_all / in-memory renew_all
COMMIT_INTERVAL = 0.1       # seconds: ReplicatedLandlord's default, which the replicas keep
HOLDER_TIMEOUT = 1.0        # seconds one renewal call of the failover holder may take
RETRY_PAUSE = 0.02          # the failover holder's pause after a call that must be retried
BEFORE_KILL = 1.0           # seconds of renewals recorded before the kill
AFTER_FAILOVER = 1.0        # ... and after the successor's first
LEADER_WAIT = 20.0          # seconds for a group to show a leader (a cold start on a busy machine)
STATUS_TIMEOUT = 1.0        # seconds one status poll may take
POLL = 0.05                 # seconds between status polls
START_TIMEOUT = 30.0        # seconds for a child to serve
CALL_TIMEOUT = 120.0        # any one measured call (10,000 grants at a few ms each fit)
GRANT_CHUNK = 1000          # leases granted per call while setting up
WARM_UP = 0.2               # seconds each side runs before the rounds
ETCD_MAX_IN_FLIGHT = 1000   # pipelined LeaseGrants at once (etcd answers "too many requests" far beyond)
BIN = 0.1                   # seconds per bar of the failover plot
SEED_TERM = 3600.0          # seconds each lease written straight to etcd has (--failover-held): none ends in the run
SEED_BATCH = 127            # leases a seeding transaction writes (etcd's --max-txn-ops is 128)
SEED_THREADS = 4            # seeding transactions at once
LOADED_PER_SECOND = 10_000  # leases a replica loads from etcd per second, cold, at the least (waits scale with it)
UNBUFFERED = {"PYTHONUNBUFFERED": "1"}
# every landlord here is served the same way (serve_replica's default, the guarded server: its workers serve
# renewals while a grant waits for etcd); the baselines on the same server type, so that only the store differs.
# Every message it takes is capped (serpent: 64 KiB): a renew_all of MAX_BATCH cookies asking TERM fits.
SERVER_TYPE = "guarded"

log = logging.getLogger("bench_replicated")


# -- the child processes ---------------------------------------------------------------------------


def policy() -> LeaseDurationPolicy:
    return LeaseDurationPolicy(maximum=3600.0, default=TERM)


class BenchLandlord(harness.GrantsOnRequest, Landlord):
    """A plain landlord (in memory, or on a LeaseStore) that grants on request."""

    def __init__(self, store: LeaseStore | None = None) -> None:
        super().__init__(policy=policy(), store=store)


class BenchReplica(harness.GrantsOnRequest, ReplicatedLandlord):
    """A replica that grants on request (only its group's leader does: each grant one etcd transaction)
    and says whether it leads."""


def serve_plain(store_dir: str | None) -> int:
    """Serve a BenchLandlord on loopback, as the replicas are served (``serve_landlord``), until SIGTERM."""
    logging.basicConfig(level=logging.WARNING, format="landlord %(name)s %(levelname)s %(message)s")
    store = LeaseStore(Path(store_dir) / "leases.sqlite") if store_dir is not None else None
    served = BenchLandlord(store)
    try:
        landlord.serve_landlord(served, "127.0.0.1", 0, server_type=SERVER_TYPE)
    finally:
        served.close()
    return 0


def serve_memory(args: argparse.Namespace) -> int:
    return serve_plain(None)


def serve_sqlite(args: argparse.Namespace) -> int:
    """The SQLite landlord, its file in a directory of its own on tmpfs when there is one (as etcd's data)."""
    with tempfile.TemporaryDirectory(prefix="bench-replicated-", dir=tmpfs()) as scratch:
        return serve_plain(scratch)


def serve_a_replica(args: argparse.Namespace) -> int:
    """One replica: ``--replica ENDPOINTS GROUP PORT ADDRESSES``, served at 127.0.0.1:PORT until SIGTERM."""
    from landlord.replication.election import connect

    endpoints, group, port, addresses = args.replica
    logging.basicConfig(level=logging.WARNING, format="replica %(name)s %(levelname)s %(message)s")
    logging.getLogger("landlord.replicated").setLevel(logging.INFO)  # each term's start: its leases, whence, how fast
    replica = BenchReplica(connect(endpoints), group=group, replicas=replica_uris(addresses, group), policy=policy(),
                           commit_interval=COMMIT_INTERVAL)
    landlord.serve_replica(replica, "127.0.0.1", int(port), server_type=SERVER_TYPE)
    return 0


def tmpfs() -> str | None:
    """/dev/shm when it can be written to (where EtcdCluster puts etcd's data), else the usual temp dir."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def spawn(role: str, *more: str, what: str) -> ChildProcess:
    """This script again as ``role``, in a session of its own, its stderr shown here."""
    return ChildProcess(os.path.abspath(__file__), "--child", role, *more, name=what, stderr="inherit",
                        env=UNBUFFERED, new_session=True)


def served_at(child: ChildProcess) -> str:
    """The URI the child announces once it serves (``landlord at ...`` or ``replica at ...``).

    Raises:
        RuntimeError: it exited, or announced nothing in time.
    """
    try:
        return child.read_uri(START_TIMEOUT)
    except WaitFailed as exc:
        raise RuntimeError(str(exc)) from None


def stop(child: ChildProcess | None, what: str) -> None:
    if child is not None and harness.stop_child(child) is None:
        progress(f"warning: {what} ignored SIGTERM and had to be killed")


# -- the replica group ------------------------------------------------------------------------------


class Group:
    """Three replica processes of one group over the cluster; ``children[i]`` serves ``uris[i]``. With
    ``held``, the group holds that many leases more, written to etcd before the replicas start."""

    def __init__(self, cluster: EtcdCluster, held: int = 0) -> None:
        self.name = f"bench{uuid.uuid4().hex[:10]}"
        self.ports = [free_port() for _ in range(3)]
        self.addresses = ",".join(f"127.0.0.1:{port}" for port in self.ports)
        self.uris = replica_uris(self.addresses, self.name)
        self.endpoints = ",".join(cluster.endpoints)
        self.children: list[ChildProcess | None] = [None, None, None]
        self.wait = LEADER_WAIT + held / LOADED_PER_SECOND  # a cold load of every lease, on a busy machine
        if held:
            seed(cluster, self.name, held)
        try:
            for index in range(3):
                self._spawn(index)
            for index in range(3):
                self._started(index)
        except BaseException:
            self.close()
            raise

    def _spawn(self, index: int) -> None:
        self.children[index] = spawn("replica", "--replica", self.endpoints, self.name, str(self.ports[index]),
                                     self.addresses, what=f"replica {index}")

    def _started(self, index: int) -> None:
        child = self.children[index]
        assert child is not None
        uri = served_at(child)
        if uri != self.uris[index]:
            raise RuntimeError(f"replica {index} serves at {uri}, not {self.uris[index]}")

    def status(self, index: int) -> dict[str, Any] | None:
        return replica_status(self.uris[index], timeout=STATUS_TIMEOUT)

    def leader(self, *, excluding: int | None = None, timeout: float = LEADER_WAIT) -> int:
        """The index of the replica that answers as leader.

        Raises:
            WaitFailed: none does within ``timeout`` seconds.
        """
        return leading_replica(self.uris, excluding=excluding, timeout=max(timeout, self.wait), poll=POLL)

    def wait_warm(self, leader: int) -> float:
        """Wait until every follower holds a warm copy (read once, then following etcd's watch; a replica
        that keeps none, as before hot followers, says nothing and counts as ready); the seconds it took.

        Raises:
            RuntimeError: a follower did not within the group's wait.
        """
        started = time.monotonic()
        for index in range(3):
            while index != leader:
                status = self.status(index)
                if status is not None and ("warm" not in status or (status["warm"] or 0) > 0):
                    break
                if time.monotonic() - started > self.wait:
                    raise RuntimeError(f"replica {index} keeps no warm copy after {self.wait:.0f} s: {status}")
                time.sleep(POLL)
        return time.monotonic() - started

    def proxy(self, index: int) -> Pyro5.api.Proxy:
        proxy = Pyro5.api.Proxy(self.uris[index])
        proxy._pyroTimeout = CALL_TIMEOUT
        return proxy

    def kill(self, index: int) -> float:
        """kill -9 replica ``index`` and reap it; the moment (monotonic) the signal was sent."""
        child = self.children[index]
        assert child is not None
        killed_at = time.monotonic()
        child.kill()
        return killed_at

    def restart(self, index: int, leader: int) -> float:
        """Start replica ``index`` again (its port and URI as before) and wait until it follows ``leader``;
        the seconds that took.

        Raises:
            RuntimeError: it did not serve, or did not name the leader, within LEADER_WAIT.
        """
        started = time.monotonic()
        child = self.children[index]
        if child is not None:
            child.close()
        self._spawn(index)
        self._started(index)
        deadline = time.monotonic() + self.wait
        while (status := self.status(index)) is None or status["leader"] != self.uris[leader]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"replica {index}, started again, does not follow replica {leader}: {status}")
            time.sleep(POLL)
        return time.monotonic() - started

    def close(self) -> None:
        # all told at once: stopped one by one, each leader resigning would elect the next only to stop it
        for child in self.children:
            if child is not None and child.alive:
                child.process.terminate()
        for index, child in enumerate(self.children):
            stop(child, f"replica {index}")


def seed(cluster: EtcdCluster, group: str, count: int) -> None:
    """Write ``count`` leases of SEED_TERM straight into the group's keys in etcd, as a leader stores them
    (one key each, SEED_BATCH a transaction, SEED_THREADS transactions at once): granting them one etcd
    transaction at a time would take minutes a hundred thousand."""
    from landlord.grantor.landlord import new_cookie
    from landlord.replication.etcdstore import pack_record

    prefix = f"/landlord/{group}/leases/"
    now = time.time()
    dumps = Pyro5.serializers.SerpentSerializer().dumps
    started = time.monotonic()

    def write(first: int) -> None:
        client = cluster.client(timeout=30.0)
        try:
            tx = client.transactions
            for start in range(first, count, SEED_BATCH * SEED_THREADS):
                puts = [tx.put(prefix + new_cookie(), pack_record(now + SEED_TERM, now, dumps(f"held {number}")))
                        for number in range(start, min(start + SEED_BATCH, count))]
                client.transaction(compare=[], success=puts, failure=[])
        finally:
            client.close()
    threads = [threading.Thread(target=write, args=(n * SEED_BATCH,)) for n in range(SEED_THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    progress(f"  {count:,} leases written to etcd for the group in {time.monotonic() - started:.1f} s")


def grant(proxy: Any, count: int, what: str) -> list[LandlordLease]:
    """``count`` leases of TERM from ``proxy``'s grant_many, GRANT_CHUNK a call."""
    leases: list[LandlordLease] = []
    started = said = time.monotonic()
    while len(leases) < count:
        chunk = min(GRANT_CHUNK, count - len(leases))
        leases.extend(proxy.grant_many(chunk, TERM))
        if time.monotonic() - said > 5 and len(leases) < count:
            said = time.monotonic()
            progress(f"  {what}: {len(leases):,} of {count:,} leases granted...")
    progress(f"  {what}: {count:,} leases granted in {time.monotonic() - started:.1f} s")
    return leases


def renew_all(leases: Sequence[LandlordLease]) -> Callable[[], None]:
    """One ``renew_all`` of every lease, through the first's ``call_landlord`` (a replicated lease's goes
    through its group), checked: every lease granted time."""
    cookies = [lease.cookie for lease in leases]
    durations = [TERM] * len(cookies)
    first = leases[0]

    def call() -> None:
        results: RenewResults = first.call_landlord("renew_all", cookies, durations)
        if results.denied or len(results.granted) != len(cookies) or min(results.granted) <= 0:
            raise RuntimeError(f"a renewal was refused: {results!r}")
    return call


# -- 1 and 5: failover --------------------------------------------------------------------------------


class Holder:
    """Renews ``leases`` in one batch call after another through their group, on a thread of its own, and
    records every answer: ``(monotonic time, "granted", replica index)``, ``(time, "retry", error type)``
    (no answer, or a NotLeaderError: the holder tries again after RETRY_PAUSE) or ``(time, "denied", n)``
    (leases refused: must never happen)."""

    def __init__(self, leases: Sequence[LandlordLease], uris: Sequence[str]) -> None:
        self.answers: list[tuple[float, str, Any]] = []
        self._cookies = [lease.cookie for lease in leases]
        self._lease = leases[0]
        self._uris = list(uris)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="holder", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        durations = [TERM] * len(self._cookies)
        while not self._stop.is_set():
            try:
                with timeout_within(HOLDER_TIMEOUT):
                    results: RenewResults = self._lease.call_landlord("renew_all", self._cookies, durations)
            except (Pyro5.errors.CommunicationError, NotLeaderError) as exc:
                self.answers.append((time.monotonic(), "retry", type(exc).__name__))
                self._stop.wait(RETRY_PAUSE)
                continue
            now = time.monotonic()
            if results.denied:
                self.answers.append((now, "denied", len(results.denied)))
            else:  # the replica that answered is the one the group call learnt as leader
                served = known_leader(self._lease.landlord_id)
                self.answers.append((now, "granted", self._uris.index(served) if served in self._uris else None))

    def granted(self, *, after: float = -math.inf, by: int | None = None,
                not_by: int | None = None) -> list[float]:
        return [at for at, kind, replica in list(self.answers) if kind == "granted" and at > after
                and (by is None or replica == by) and (not_by is None or replica != not_by)]

    def wait(self, condition: Callable[[], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline or not self._thread.is_alive():
                return False
            self._stop.wait(0.01)
        return True

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(HOLDER_TIMEOUT + 5)


def failover_round(group: Group, leases: Sequence[LandlordLease], number: int) -> dict[str, Any]:
    """One kill -9 of the leader under a renewing holder: what was seen, times relative to the kill."""
    leader = group.leader()
    warmed = group.wait_warm(leader)
    holder = Holder(leases, group.uris)
    try:
        started = time.monotonic()
        if not holder.wait(lambda: len(holder.granted(by=leader)) >= 3
                           and time.monotonic() - started >= BEFORE_KILL, LEADER_WAIT):
            raise RuntimeError(f"round {number}: the holder's renewals were not served by replica {leader}")
        killed_at = group.kill(leader)
        served = holder.wait(lambda: bool(holder.granted(after=killed_at, not_by=leader)), group.wait)
        if served:
            first = holder.granted(after=killed_at, not_by=leader)[0]
            holder.wait(lambda: time.monotonic() > first + AFTER_FAILOVER, AFTER_FAILOVER + 1)
    finally:
        holder.stop()
    answers = [(at - killed_at, kind, detail) for at, kind, detail in holder.answers]
    successor = next((detail for at, kind, detail in answers if at > 0 and kind == "granted" and detail != leader),
                     None)
    failover = next((at for at, kind, detail in answers if at > 0 and kind == "granted" and detail != leader),
                    math.nan)
    last_before = max((at for at, kind, _ in answers if kind == "granted" and at <= 0), default=math.nan)
    result = {
        "round": number, "killed": leader, "successor": successor, "failover_seconds": failover,
        "warm_wait_seconds": warmed,  # waited before the kill, for the followers' warm copies
        "gap_seconds": failover - last_before,  # from the old leader's last renewal to the successor's first
        "retries": sum(1 for at, kind, _ in answers if kind == "retry" and at > 0),
        "retry_kinds": dict(collections.Counter(detail for at, kind, detail in answers if kind == "retry" and at > 0)),
        "denied": sum(detail for _, kind, detail in answers if kind == "denied"),
        "answers": [[round(at, 4), kind, detail] for at, kind, detail in answers],
    }
    if successor is not None:
        result["restart_seconds"] = group.restart(leader, successor)
    return result


def measure_failover(group: Group, args: argparse.Namespace) -> tuple[Row, list[dict[str, Any]], list[str]]:
    """Item 1 over ``--rounds`` rounds on a batch of ``--failover-leases``: the row, each round, problems."""
    leases = grant(group.proxy(group.leader()), args.failover_leases, "failover batch")
    rounds: list[dict[str, Any]] = []
    problems: list[str] = []
    for number in range(1, args.rounds + 1):
        progress(f"failover: round {number} of {args.rounds} (kill -9 of the leader)...")
        outcome = failover_round(group, leases, number)
        rounds.append(outcome)
        progress(f"  first renewal by the successor {outcome['failover_seconds']:.2f} s after the kill; "
                 f"{outcome['retries']} retries, {outcome['denied']} refused")
        if outcome["denied"]:
            problems.append(f"failover round {number}: {outcome['denied']} renewal(s) refused (a definite answer)")
        if outcome["successor"] is None:
            problems.append(f"failover round {number}: no renewal served within {group.wait:g} s of the kill")
            break  # the group is not whole again: the other rounds would not mean the same
    try:  # every cookie still renews, then the batch goes: the throughput rows' leader holds their leases alone
        renew_all(leases)()
        leases[0].call_landlord("cancel_all", [lease.cookie for lease in leases])
    except Exception as exc:
        problems.append(f"after the failovers, the batch did not renew: {type(exc).__name__}: {exc}")
    row = compare(f"failover: kill -9 of leader → successor's 1st renewal ({args.failover_leases:,} renewed, "
                  f"{args.failover_leases + args.failover_held:,} held)", "s",
                  [r["failover_seconds"] for r in rounds], limit=FAILOVER_GOAL)
    return row, rounds, problems


def stream_of(rounds: list[dict[str, Any]], row: Row) -> dict[str, Any]:
    """Item 5: the answers of the round whose figure the row reports (the median round)."""
    chosen = next((r for r in rounds if r["failover_seconds"] == row.landlord), rounds[0])
    return {"round": chosen["round"], "killed_replica": chosen["killed"], "successor": chosen["successor"],
            "failover_seconds": chosen["failover_seconds"],
            "format": "[seconds from the kill, answer (granted | retry | denied), replica index (granted) or "
                      "error type (retry) or leases refused (denied)]",
            "answers": chosen["answers"]}


def plot_stream(stream: Mapping[str, Any], path: Path) -> str:
    """Renewal calls granted per second over time, the kill and the first renewal by the successor marked;
    what was done, for the notes."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ("matplotlib is not installed: no plot of the failover stream (it is in the JSON under 'stream'; "
                "pip install -e '.[bench]' for the plot)")
    answers = stream["answers"]
    start = math.floor(min(at for at, _, _ in answers) / BIN)
    end = max(math.ceil(max(at for at, _, _ in answers) / BIN), start + 1)
    edges = [BIN * i for i in range(start, end + 1)]
    counts: dict[str, list[float]] = {kind: [0.0] * (len(edges) - 1) for kind in ("granted", "retry")}
    for at, kind, _ in answers:
        if kind in counts:
            counts[kind][min(int(at / BIN - start), len(edges) - 2)] += 1 / BIN
    fig, ax = plt.subplots(figsize=(8, 4))
    for kind, colour in (("granted", "tab:green"), ("retry", "tab:orange")):
        ax.step(edges[:-1], counts[kind], where="post", color=colour, label=f"renew_all calls {kind}")
    ax.axvline(0.0, color="tab:red", linestyle="--", label="kill -9 of the leader")
    ax.axvline(stream["failover_seconds"], color="black", linestyle=":",
               label=f"first renewal by the successor ({stream['failover_seconds']:.2f} s)")
    ax.set_xlabel("seconds from the kill")
    ax.set_ylabel("calls per second")
    ax.set_title("Renewals through a replica group across the leader's death")
    ax.legend(loc="center left", bbox_to_anchor=(0.3, 0.55))  # the empty middle of the outage
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"plot of the failover stream: {path}"


# -- 2, 3 and 4: throughput, grants, etcd ----------------------------------------------------------


class EtcdLeases:
    """etcd's own leases on the same cluster, through pyetcd: grants and keep-alive streams."""

    def __init__(self, cluster: EtcdCluster) -> None:
        from pyetcd import etcdrpc
        self.rpc: Any = etcdrpc  # pyetcd's stubs here name only what the library uses
        self.client: Any = cast(Any, cluster.client(timeout=CALL_TIMEOUT))
        self.stub = self.client.leasestub
        self.member = cluster.serving(self.client) if self.client.endpoint_in_use else None

    def grant(self) -> None:
        if not self.client.lease(ETCD_TTL).id:
            raise RuntimeError("etcd granted no lease")

    def grant_pipelined(self, count: int) -> list[int]:
        """``count`` LeaseGrant RPCs, up to ETCD_MAX_IN_FLIGHT at once; the lease ids."""
        request = self.rpc.LeaseGrantRequest(TTL=ETCD_TTL)
        in_flight: collections.deque[Any] = collections.deque()
        ids: list[int] = []
        for number in range(count + ETCD_MAX_IN_FLIGHT):
            if len(in_flight) >= ETCD_MAX_IN_FLIGHT or (number >= count and in_flight):
                answer = in_flight.popleft().result()
                if answer.error or not answer.ID:
                    raise RuntimeError(f"etcd refused a lease: {answer.error!r}")
                ids.append(answer.ID)
            if number < count:
                in_flight.append(self.stub.LeaseGrant.future(request, CALL_TIMEOUT, metadata=self.client.metadata))
        return ids

    def keep_alive(self, ids: Sequence[int]) -> Callable[[], None]:
        """One LeaseKeepAlive stream carrying a request per lease, all sent at once; every answer checked."""
        return functools.partial(bench_etcd.keep_alive_stream, self.stub, self.rpc, self.client.metadata, list(ids))

    def size(self) -> tuple[int, int]:
        """The size of the database of the member this client talks to (bytes), and etcd's revision."""
        status = self.client.maintenancestub.Status(self.rpc.StatusRequest(), CALL_TIMEOUT,
                                                    metadata=self.client.metadata)
        return int(status.dbSize), int(status.header.revision)

    def close(self) -> None:
        self.client.close()


def latencies(op: Callable[[], object], seconds: float) -> list[float]:
    """Milliseconds each call of ``op`` took, called over and over for about ``seconds``."""
    taken: list[float] = []
    deadline = time.perf_counter() + seconds
    while (started := time.perf_counter()) < deadline:
        op()
        taken.append(1000 * (time.perf_counter() - started))
    return taken


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else math.nan


def measure_grants(leader: Any, etcd: EtcdLeases, memory: Any, args: argparse.Namespace) -> tuple[Row, list[str]]:
    """Item 3: grant latency, the replicated leader's against etcd's LeaseGrant, the in-memory landlord's
    beside them; each round's median latency."""
    cookies: list[str] = []

    def replicated() -> None:
        cookies.append(leader.grant(TERM).cookie)

    sides: dict[str, Callable[[], list[float]]] = {
        "replicated": lambda: latencies(replicated, args.seconds),
        "etcd": lambda: latencies(etcd.grant, args.seconds),
        "memory": lambda: latencies(lambda: memory.grant(TERM), args.seconds),
    }
    for side in ("replicated", "etcd", "memory"):
        latencies({"replicated": replicated, "etcd": etcd.grant, "memory": lambda: memory.grant(TERM)}[side], WARM_UP)
    figures = harness.alternate(sides, args.rounds, what="grant latency")
    medians = {name: [statistics.median(r) for r in rounds] for name, rounds in figures.items()}
    row = compare("grant latency: replicated vs etcd LeaseGrant", "ms",
                  medians["replicated"], medians["etcd"])
    for start in range(0, len(cookies), MAX_BATCH):  # the throughput rows' leader holds their leases alone
        leader.cancel_all(cookies[start:start + MAX_BATCH])
    notes = ["grant latency, all rounds pooled (ms: p50 / p90 / p99; calls):"]
    for name, what in (("replicated", "replicated leader's grant over Pyro5 (one guarded etcd transaction)"),
                       ("etcd", "etcd LeaseGrant through pyetcd (client.lease), same cluster"),
                       ("memory", "in-memory landlord's grant over Pyro5 (reference)")):
        pooled = [ms for r in figures[name] for ms in r]
        notes.append(f"  {what}: {percentile(pooled, 0.5):.2f} / {percentile(pooled, 0.9):.2f} / "
                     f"{percentile(pooled, 0.99):.2f}; {len(pooled):,}")
    return row, notes


def measure_renewals(sides: Mapping[str, Callable[[], None]], args: argparse.Namespace) -> dict[str, list[float]]:
    """Items 2 and 4: leases renewed per second by each side, in turns over the rounds."""
    n = args.batch
    for op in sides.values():
        rate(op, WARM_UP, n)
    return harness.alternate({name: functools.partial(rate, op, args.seconds, n) for name, op in sides.items()},
                             args.rounds, what=f"renew_all of {n:,}")


def renewal_rows(figures: Mapping[str, list[float]], n: int) -> list[Row]:
    rows = []
    if "replicated" in figures:
        rows.append(compare(f"renew_all {n:,}/call: replicated vs in-memory", "leases/s",
                            figures["replicated"], figures["memory"], goal=THROUGHPUT_GOAL))
        rows.append(compare(f"renew_all {n:,}/call: replicated vs SQLite store", "leases/s",
                            figures["replicated"], figures["sqlite"]))
    rows.append(compare(f"renew_all {n:,}/call: SQLite store vs in-memory", "leases/s",
                        figures["sqlite"], figures["memory"]))
    if "etcd" in figures:
        rows.append(compare(f"leases kept alive: replicated vs etcd keep-alive (N={n:,})",
                            "leases/s", figures["replicated"], figures["etcd"]))
    return rows


# -- the run ----------------------------------------------------------------------------------------


def start_cluster(args: argparse.Namespace) -> tuple[EtcdCluster | None, str]:
    """A three-member etcd, if it can be had: it, or None and why not."""
    if args.no_etcd:
        return None, "not used: --no-etcd"
    reason = unavailable_reason()
    if reason is None:
        progress("starting a three-member etcd on loopback...")
        try:
            return EtcdCluster().start(), ""
        except EtcdUnavailable as exc:
            reason = str(exc)
    progress(f"etcd: unavailable ({reason}); measuring the SQLite and in-memory landlords alone")
    return None, reason


def measure(args: argparse.Namespace) -> Report:
    """Start everything, measure, stop everything (also on errors and Ctrl-C)."""
    load_start = os.getloadavg()
    landlord.set_call_timeout(CALL_TIMEOUT)
    cluster, reason = start_cluster(args)
    group: Group | None = None
    etcd: EtcdLeases | None = None
    plain: dict[str, ChildProcess] = {}
    rows: list[Row] = []
    notes: list[str] = []
    problems: list[str] = []
    extra: dict[str, Any] = {"config": {"rounds": args.rounds, "batch": args.batch, "seconds": args.seconds,
                                        "failover_leases": args.failover_leases, "term": TERM}}
    machine: dict[str, Any] = {"etcd": f"unavailable ({reason})" if cluster is None else
                               f"{cluster.version} ({cluster.binary}), three members on 127.0.0.1, data on "
                               f"{cluster.workdir} (removed afterwards)"}
    try:
        if cluster is not None:
            progress("starting three replicas...")
            group = Group(cluster, args.failover_held)
            row, rounds, found = measure_failover(group, args)
            rows.append(row)
            problems += found
            notes += failover_lines(rounds)
            extra["failover_rounds"] = [{k: v for k, v in r.items() if k != "answers"} for r in rounds]
            extra["stream"] = stream_of(rounds, row)
            notes.append(plot_stream(extra["stream"], args.plot))
        progress("starting the in-memory and SQLite landlords...")
        plain = {"memory": spawn("memory", what="the in-memory landlord"),
                 "sqlite": spawn("sqlite", what="the SQLite landlord")}
        proxies = {name: Pyro5.api.Proxy(served_at(child)) for name, child in plain.items()}
        for proxy in proxies.values():
            proxy._pyroTimeout = CALL_TIMEOUT
        sides = {name: renew_all(grant(proxy, args.batch, name)) for name, proxy in proxies.items()}
        if cluster is not None and group is not None:
            etcd = EtcdLeases(cluster)
            leader = group.proxy(group.leader())
            grant_row, grant_notes = measure_grants(leader, etcd, proxies["memory"], args)
            sides["replicated"] = renew_all(grant(leader, args.batch, "replicated leader"))
            progress(f"  etcd: {args.batch:,} leases granted (pipelined) for the keep-alive stream")
            sides["etcd"] = etcd.keep_alive(etcd.grant_pipelined(args.batch))
            before = etcd.size()
            figures = measure_renewals(sides, args)
            after = etcd.size()
            rows += renewal_rows(figures, args.batch)
            extra["etcd_db"] = growth(before, after, args)
            notes.append(growth_line(extra["etcd_db"], args.batch))
            rows.append(grant_row)
            notes += grant_notes
            etcd_leader = cluster.leader()
            notes.append(f"etcd: its own leader is member {etcd_leader}; the baseline client talks to member "
                         f"{etcd.member}; each replica's client picks one member at random")
        else:
            rows += renewal_rows(measure_renewals(sides, args), args.batch)
        notes += renewal_notes(args, cluster is not None)
    finally:
        if etcd is not None:
            etcd.close()
        for name, child in plain.items():
            stop(child, f"the {name} landlord")
        if group is not None:
            group.close()
        if cluster is not None:
            cluster.close()
    load_end = os.getloadavg()
    machine["load_average"] = f"{load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end (1 min; other work " \
                              "shares these cores, so the figures are noisy: read the min–max)"
    title = [f"ReplicatedLandlord (three replica processes, election TTL 2 s, renewals committed every 0.1 s) "
             f"over a three-member etcd on loopback; {args.rounds} round(s), the sides taking turns"]
    if cluster is None:
        title.append(f"etcd: unavailable ({reason}): the SQLite and in-memory landlords only")
    return Report(rows, title="\n".join(title), notes=notes, problems=problems, machine=machine, extra=extra)


def failover_lines(rounds: list[dict[str, Any]]) -> list[str]:
    lines = ["failover rounds (seconds from the kill; gap: the holder's wait from its last renewal by the old "
             "leader to its first by the successor):"]
    for r in rounds:
        kinds = ", ".join(f"{n} {kind}" for kind, n in r["retry_kinds"].items()) or "none"
        restart = r.get("restart_seconds", math.nan)
        lines.append(f"  round {r['round']}: replica {r['killed']} killed, replica {r['successor']} served after "
                     f"{r['failover_seconds']:.2f} s (gap {r['gap_seconds']:.2f} s); {r['retries']} retries "
                     f"({kinds}), {r['denied']} refused; the killed replica was following again {restart:.1f} s "
                     "after its restart")
    lines.append("  the floor is the election TTL (2 s): the successor is elected once the dead leader's etcd lease "
                 "expires, then loads the group's leases")
    return lines


def growth(before: tuple[int, int], after: tuple[int, int], args: argparse.Namespace) -> dict[str, float]:
    """What the replicated renewals added to etcd's database. etcd keeps every revision until it is compacted,
    and the replicas never compact it (the store's own compaction rewrites its renewal log, not etcd's history).
    Renewing continuously, the leader's committer writes each lease at most once per commit interval."""
    seconds = WARM_UP + args.rounds * args.seconds
    written = args.batch * seconds / COMMIT_INTERVAL
    return {"db_bytes_before": before[0], "db_bytes_after": after[0], "revisions": after[1] - before[1],
            "renewing_seconds": seconds, "bytes_per_lease_written": (after[0] - before[0]) / written}


def growth_line(db: Mapping[str, float], n: int) -> str:
    return (f"etcd's database (the baseline client's member) grew from {db['db_bytes_before'] / 2**20:.1f} to "
            f"{db['db_bytes_after'] / 2**20:.1f} MiB in {db['revisions']:,} revisions over "
            f"{db['renewing_seconds']:.1f} s of the leader renewing {n:,} leases without pause (each written at most "
            f"once per {COMMIT_INTERVAL:g} s: about {db['bytes_per_lease_written']:.0f} bytes a lease written); "
            "etcd keeps every revision until compacted (this cluster: every 5 min, "
            "--auto-compaction-retention 5m, as docs/replication.md asks of production)")


def renewal_notes(args: argparse.Namespace, replicated: bool) -> list[str]:
    n = args.batch
    lines = ["what was compared:",
             f"  renew_all: one call of {n:,} cookies through a LandlordLease's call_landlord, every answer checked; "
             f"{args.seconds:g} s per side per round"]
    if replicated:
        lines.append("    replicated: to the group's leader (the group call), which records the renewals in memory; "
                     "its committer writes them to etcd every 0.1 s (one or two transactions of packed chunks)")
    lines.append(f"    in-memory and SQLite: a Landlord served by serve_landlord in a child process (the "
                 f"{SERVER_TYPE} server, as the replicas); SQLite's file on {tmpfs() or tempfile.gettempdir()}, "
                 "synchronous=NORMAL (one transaction per 1,000 renewals)")
    if replicated:
        lines.append(f"  etcd keep-alive: one LeaseKeepAlive stream carrying {n:,} requests (one per lease: etcd has "
                     f"no batch keep-alive), all sent at once, {n:,} answers read; the same cluster and rounds")
    return lines


BENCH = harness.Benchmark(
    "replicated", "A replicated landlord (three ReplicatedLandlord processes over a three-member etcd on loopback) "
    "against its baselines in the same run: failover time after kill -9 of the leader, batched renewals against an "
    "in-memory and a SQLite landlord, grant latency against etcd's LeaseGrant, leases kept alive against etcd "
    "keep-alive streams. Without etcd or its client it says why and measures the SQLite and in-memory landlords.",
    modules=(landlord, Pyro5, serpent),
    quick={"rounds": 1, "batch": 1000, "seconds": 0.5, "failover_leases": 200})
BENCH.option("--batch", harness.at_most(MAX_BATCH), CALL_BATCH,
             "leases per renew_all call, at most a landlord's MAX_BATCH (and etcd leases per stream)")
BENCH.option("--seconds", positive_seconds, 2.0, "seconds per side per round of the renewal and grant rows")
BENCH.option("--failover-leases", harness.at_most(MAX_BATCH), 1000,
             "leases the failover holder renews in each call, at most a landlord's MAX_BATCH")
BENCH.option("--failover-held", harness.at_most(10_000_000), 0,
             "leases the group holds besides the renewed batch, written straight to etcd before the replicas "
             "start (each replica loads them; a new leader takes them from its warm copy)")
BENCH.parser.add_argument("--plot", type=Path, default=PLOT, help="where the failover plot goes, if matplotlib is "
                          "installed (default: benchmarks/replicated_failover.png)")
BENCH.parser.add_argument("--no-etcd", action="store_true", help="measure the SQLite and in-memory landlords alone")
BENCH.parser.add_argument("--replica", nargs=4, help=argparse.SUPPRESS)  # a child replica's ENDPOINTS GROUP PORT ADDRS


if __name__ == "__main__":
    raise SystemExit(BENCH.main(measure, children={"replica": serve_a_replica, "memory": serve_memory,
                                                   "sqlite": serve_sqlite}))
