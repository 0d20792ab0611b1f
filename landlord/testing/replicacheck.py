"""The safety checker (:mod:`landlord.testing.lockcheck`) on a replica group: a backend whose lock
service is three replicas of a :class:`~landlord.ReplicatedLandlord` over etcd, each a process of
its own, and whose restart is a failover (issue 25, item 6).

::

    python -m landlord.testing.lockcheck --replicated --clients 3 --rounds 20 --restarts 2
    python -m landlord.testing.lockcheck --replicated --etcd http://127.0.0.1:2379 --restarts 2

``python -m landlord.testing.replicacheck --etcd ENDPOINTS --group GROUP --replicas ADDRESSES
--port PORT`` is one replica (``--verbose``: a line per named lease that comes or ends, as the
checker's ``landlord --verbose`` prints); it prints ``replica at <uri> (...)`` once it serves and
has joined the group's election, and answers ``name_view(name)`` beside a landlord's methods.

:class:`ReplicaGroupBackend` starts the replicas on an etcd cluster it is given (a test's) or on
one of its own (:class:`~landlord.testing.etcd.EtcdCluster`), and gives the clients the group's
URIs: a client's :class:`~landlord.Lock` follows the leader by itself. Its :meth:`restart
<ReplicaGroupBackend.restart>` kills the replica that leads with kill -9, waits until another
leads (etcd's lease on the dead leader's key runs out first: some two seconds), and starts the
killed one again on its address, a follower now; each is noted in
:attr:`~ReplicaGroupBackend.failovers`.

Importing this module imports no etcd client; starting replicas or a cluster needs the etcd extra
(``pip install 'landlord[etcd]'``) and, for a cluster of its own, the ``etcd`` program.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import pathlib
import sys
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import Pyro5.api

from ..holder.landlordlease import replica_uris
from . import ChildProcess, free_port
from .etcd import EtcdCluster, leading_replica
from .lockcheck import START_TIMEOUT, LandlordBackend, name_view, printing_hooks

if TYPE_CHECKING:
    from ..grantor.landlord import Landlord
    from ..replication.etcdstore import EtcdLeaseStore

__all__ = ["Failover", "ReplicaGroupBackend", "main"]

log = logging.getLogger("landlord.lockcheck")

PROGRAM = [sys.executable, "-m", "landlord.testing.replicacheck"]
FAILOVER_TIMEOUT = 15.0  # seconds for another replica to lead after a kill (some 2 s; etcd may be failing over too)


@dataclasses.dataclass(frozen=True)
class Failover:
    """One :meth:`ReplicaGroupBackend.restart`: the replica killed (it led) and the one that led after
    it, by index in the group's URIs; when it was killed, when the other was seen leading, and when
    the killed one served again (``time.monotonic()``)."""

    killed: int
    successor: int
    killed_at: float
    led_at: float
    back_at: float


class ReplicaGroupBackend(LandlordBackend):
    """landlord's :class:`~landlord.Lock` on a replica group: ``size`` replicas of a replicated
    landlord (``python -m landlord.testing.replicacheck``), each a process of its own, over etcd.

    Args:
        endpoints: the etcd cluster's client URLs (a list, or joined by commas); ``None``: a
            three-member cluster of its own, started by :meth:`start` and removed by :meth:`close`.
        size: how many replicas.
        lock_delay, margin, host, verbose: as for :class:`~landlord.testing.lockcheck.LandlordBackend`
            (``verbose``: each replica prints its lines; see :attr:`replicas`).

    After :meth:`start`: :attr:`uris` (the group's, what the clients lock on), :attr:`replicas`
    (``replicas[i]`` serves ``uris[i]``: the process running now), :attr:`failovers`.
    """

    def __init__(self, endpoints: str | Sequence[str] | None = None, *, size: int = 3, lock_delay: float = 0.0,
                 margin: float | None = None, host: str = "127.0.0.1", verbose: bool = False) -> None:
        super().__init__(lock_delay=lock_delay, margin=margin, host=host, verbose=verbose)
        if size < 1:
            raise ValueError(f"a group has at least one replica, not {size}")
        self.name = f"replicated landlord ({size} replicas)"
        self.restartable = True
        self.endpoints = endpoints.split(",") if isinstance(endpoints, str) else endpoints
        self.size = size
        self.cluster: EtcdCluster | None = None  # one of its own
        self.group = ""
        self.uris: list[str] = []
        self.replicas: list[ChildProcess] = []
        self.failovers: list[Failover] = []
        self._addresses = ""

    def start(self, workdir: pathlib.Path) -> str:
        """Start the replicas (and an etcd cluster, if none was given); the group's URIs for the clients.

        Raises:
            landlord.testing.etcd.EtcdUnavailable: no etcd to start, or it would not become healthy.
            landlord.testing.WaitFailed: a replica did not serve in time.
        """
        if self.endpoints is None:
            self.cluster = EtcdCluster().start()
        self.group = f"lockcheck-{uuid.uuid4().hex[:12]}"  # a group no earlier run used, on a shared cluster
        self._addresses = ",".join(f"{self.host}:{free_port(self.host)}" for _ in range(self.size))
        self.uris = replica_uris(self._addresses, self.group)
        self.replicas = [self._launch(index) for index in range(self.size)]
        for replica in self.replicas:
            replica.read_uri(START_TIMEOUT)
        return self._config(self.uris)

    def _launch(self, index: int) -> ChildProcess:
        endpoints = self.cluster.endpoints if self.cluster is not None else list(self.endpoints or ())
        port = self._addresses.split(",")[index].rpartition(":")[2]
        return ChildProcess(*PROGRAM[1:], "--etcd", ",".join(endpoints), "--group", self.group,
                            "--replicas", self._addresses, "--host", self.host, "--port", port,
                            *(["--verbose"] if self.verbose else []), name=f"replica {index}")

    def leader(self, *, excluding: int | None = None, timeout: float = FAILOVER_TIMEOUT) -> int:
        """The index of the replica that answers as leader (all but ``excluding`` asked in turn until one does).

        Raises:
            landlord.testing.WaitFailed: none does within ``timeout`` seconds.
        """
        return leading_replica(self.uris, excluding=excluding, timeout=timeout)

    def kill_leader(self) -> tuple[int, float]:
        """kill -9 the replica that leads (and reap it); its index, and when it was killed."""
        leader = self.leader()
        killed_at = time.monotonic()
        self.replicas[leader].kill()
        return leader, killed_at

    def restart(self) -> None:
        """kill -9 the leader, wait until another replica leads, and start the killed one again (a follower).

        Raises:
            landlord.testing.WaitFailed: no replica led in time, or the killed one did not serve again.
        """
        killed, killed_at = self.kill_leader()
        successor = self.leader(excluding=killed)
        led_at = time.monotonic()
        self.replicas[killed].close()
        self.replicas[killed] = self._launch(killed)
        self.replicas[killed].read_uri(START_TIMEOUT)
        failover = Failover(killed, successor, killed_at, led_at, time.monotonic())
        self.failovers.append(failover)
        log.info("replica %d (the leader) killed with kill -9; replica %d leads %.2f s later; replica %d back "
                 "%.2f s after the kill", killed, successor, led_at - killed_at, killed, failover.back_at - killed_at)

    def close(self) -> None:
        """Kill every replica, and the etcd cluster if it is this backend's own."""
        for replica in self.replicas:
            replica.close()
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None


# -- a replica ---------------------------------------------------------------------------------------


def _serve_replica(args: argparse.Namespace) -> None:
    from ..grantor.landlord import Landlord
    from ..grantor.policy import LeaseDurationPolicy
    from ..replication.election import connect
    from ..replication.replicated import ReplicatedLandlord, ReplicaTerm
    from ..serving import serve_replica

    class LockTerm(ReplicaTerm, Landlord):
        """The landlord of one term of a :class:`LockReplica`."""

    class LockReplica(ReplicatedLandlord):
        def make_landlord(self, *, store: EtcdLeaseStore, landlord_id: str | None) -> Landlord:
            return LockTerm(self, store=store, landlord_id=landlord_id, policy=self.policy, reaper=self.reaper,
                            clock=self.clock, hooks=printing_hooks() if args.verbose else None)

        @Pyro5.api.expose
        def name_view(self, name: str) -> dict[str, Any]:
            """The leader's view of ``name``: who holds it (tokens), how many wait, until when it is closed."""
            view: dict[str, Any] = self.answer(lambda held: name_view(held, name))
            return view

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    replica = LockReplica(connect(args.etcd), group=args.group, replicas=replica_uris(args.replicas, args.group),
                          policy=LeaseDurationPolicy(maximum=600))
    serve_replica(replica, args.host, args.port)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m landlord.testing.replicacheck",
                                     description="one replica of the safety checker's replica group")
    parser.add_argument("--etcd", required=True, metavar="ENDPOINTS", help="the etcd cluster's URLs, by commas")
    parser.add_argument("--group", required=True, help="the group's name")
    parser.add_argument("--replicas", required=True, metavar="ADDRESSES",
                        help="every replica's host:port, by commas, the same on each (this one's among them)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--verbose", action="store_true", help="a line per named lease that comes or ends")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """One replica (see the module's docstring), until SIGTERM or SIGINT."""
    _serve_replica(_parser().parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
