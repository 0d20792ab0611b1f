"""Replicas of a lookup service, each answering as a Pyro5 name server, in processes of their own
(``python -m lookup serve --etcd ... --pyro-ns``): started, and their leader found
(tests/lookup/test_pyrons_replicated.py, tests/hostile/test_pyrons_replica_attacks.py)."""

from __future__ import annotations

import Pyro5.api
from conftest import ChildProcess, free_port, wait_until
from etcd_fixtures import FAILOVER

from landlord.testing.etcd import EtcdCluster

Replica = tuple[ChildProcess, str, int]  # the process, its lookup service's URI, its name server's port


def serve_replicas(cluster: EtcdCluster, group: str, ping: float, *options: str) -> list[Replica]:
    """Three replicas of ``group``, pinging every ``ping`` seconds, with ``options`` too; no broadcast answered.

    The caller closes them.
    """
    ports = [free_port() for _ in range(3)]
    replicas = ",".join(f"127.0.0.1:{port}" for port in ports)
    started = []
    for port in ports:
        ns_port = free_port()
        process = ChildProcess("-m", "lookup", "serve", "--etcd", ",".join(cluster.endpoints), "--group", group,
                               "--replicas", replicas, "--port", str(port), "--no-announce",
                               "--pyro-ns", f"127.0.0.1:{ns_port}", "--pyro-ns-ping", str(ping),
                               "--pyro-ns-broadcast", "0", *options, name=f"replica {port}")
        started.append((process, ns_port))
    return [(process, process.read_uri(20, pattern=r"^lookup service at (?P<uri>\S+) "), ns_port)
            for process, ns_port in started]


def leading(replicas: list[Replica], *, excluding: str | None = None) -> tuple[str, int]:
    """The (lookup URI, name server port) of the replica that leads, waiting for one, and for every
    replica but ``excluding`` (a killed one) to name it."""
    found: list[tuple[str, int]] = []

    def leads(uri: str) -> bool:
        with Pyro5.api.Proxy(uri) as proxy:
            return bool(proxy.replica_status()["leading"])

    def one_leads() -> bool:
        found[:] = [(uri, ns) for _, uri, ns in replicas if uri != excluding and leads(uri)]
        return bool(found)

    wait_until(one_leads, FAILOVER, "a replica leads")
    leader = found[0][0]

    def named(uri: str) -> bool:
        with Pyro5.api.Proxy(uri) as proxy:
            return bool(proxy.replica_status()["leader"] == leader)

    # a follower learns of a new leader a moment after it leads
    wait_until(lambda: all(named(uri) for _, uri, _ in replicas if uri != excluding), FAILOVER,
               "every replica names the leader")
    return found[0]
