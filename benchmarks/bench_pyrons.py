"""Pyro5's name server calls answered by the lookup service (``lookup serve --pyro-ns``, issue 28 item 6)
against Pyro5's own name server, and what keeping ``ns.register``'s names alive costs.

Two child processes on loopback: the lookup service as :func:`lookup.service.server.serve` runs it with
``pyro_ns`` (``--child bridge``: its name server face pings each registered daemon every
:data:`PING_INTERVAL` s) and Pyro5's name server (``--child ns``, in memory, broadcast off). This
process serves ``--daemons`` Pyro5 daemons and registers ``--names`` names spread over them with both
servers through a plain Pyro5 proxy (serpent, as a Pyro5 user would), then, the two servers taking
turns: ``ns.lookup(name)`` of random names, and ``ns.list()`` of every name (goal: at least as many
calls a second as Pyro5's own, 1x). Then, with no call coming in, the bridge's CPU while it pings, and
the time from closing one daemon to its names gone from ``ns.list()``. Not in ``run_all.py``.
"""

from __future__ import annotations

import argparse
import random
import threading
import time

import harness
import Pyro5
import Pyro5.api
from bench_lookup import serve_ns  # the same baseline process: Pyro5's name server, broadcast off
from harness import Report, ServerProcess, compare, cpu_seconds, positive_int, positive_seconds, progress

import landlord
from landlord.testing import free_port
from lookup.service.pyrons.liveness import PingTerms

HOST = "127.0.0.1"
PING_INTERVAL = 1.0  # the bridge's --pyro-ns-ping here: one ping per daemon a second
TERMS = PingTerms.every(PING_INTERVAL)  # the bridge's terms, and the removal bound the report states
UNCAPPED = 10**9     # names one client may register with the bridge
CPU_SECONDS = 5.0    # the window the bridge's idle CPU is measured over
GOALS = {"ns.lookup(name)": 1.0, "ns.list()": 1.0}

BENCH = harness.Benchmark(
    "pyrons", "Pyro5 name server calls: the lookup service's name server face (lookup serve --pyro-ns) against "
    "Pyro5's own name server, both in child processes, measured in the same run; and the cost of its pings.",
    modules=(landlord, Pyro5), quick={"names": 200, "daemons": 4, "seconds": 0.6, "rounds": 2})
BENCH.option("--names", positive_int, 1000, "names registered with each server")
BENCH.option("--daemons", positive_int, 20, "Pyro5 daemons (in this process) the names are spread over")
BENCH.option("--seconds", positive_seconds, 3.0, "timed seconds per server and call, split over the rounds")


def serve_bridge(args: argparse.Namespace) -> int:
    """The lookup service with its name server face on a free port; prints the face's URI."""
    from lookup.service.pyrons.bridge import PyroNs
    from lookup.service.quotas import LookupLimits
    from lookup.service.server import serve

    port = free_port()
    try:
        serve(HOST, 0, announce=False, discovery=False, lookup_limits=LookupLimits(registrations_per_client=UNCAPPED),
              pyro_ns=PyroNs(port, HOST, TERMS),
              ready=lambda _: print(f"URI: PYRO:Pyro.NameServer@{HOST}:{port}", flush=True))
    except KeyboardInterrupt:
        pass
    return 0


class Daemons:
    """``count`` Pyro5 daemons in this process, each serving on a thread of its own."""

    def __init__(self, count: int) -> None:
        self.daemons = [Pyro5.api.Daemon(host=HOST) for _ in range(count)]
        self.threads = [threading.Thread(target=d.requestLoop, daemon=True) for d in self.daemons]
        for thread in self.threads:
            thread.start()

    def uri(self, index: int) -> str:
        return f"PYRO:bench.{index}@{self.daemons[index % len(self.daemons)].locationStr}"

    def close(self, index: int) -> None:
        self.daemons[index].shutdown()
        self.threads[index].join(10)
        self.daemons[index].close()

    def close_all(self) -> None:
        for index, daemon in enumerate(self.daemons):
            if daemon.transportServer is not None:
                self.close(index)


def calls(args: argparse.Namespace, bridge: Pyro5.api.Proxy, ns: Pyro5.api.Proxy) -> list[harness.Row]:
    names = [f"bench.{i}" for i in range(args.names)]
    picks = random.Random(1).choices(names, k=1000)
    rows = []
    for metric, call in (("ns.lookup(name)", lambda proxy, i: proxy.lookup(picks[i % len(picks)])),
                         ("ns.list()", lambda proxy, i: proxy.list())):
        assert call(bridge, 0) == call(ns, 0) or metric == "ns.list()"  # the list differs in its own entry only
        counter = iter(range(10**12))
        figures = harness.alternate(
            {"bridge": lambda: harness.rate(lambda: call(bridge, next(counter)), args.seconds / args.rounds),  # noqa: B023
             "ns": lambda: harness.rate(lambda: call(ns, next(counter)), args.seconds / args.rounds)},  # noqa: B023
            args.rounds, what=metric)
        rows.append(compare(f"{metric} at {args.names:,} names", "calls/s", figures["bridge"], figures["ns"],
                            goal=GOALS[metric], baseline_name="Pyro5 name server"))
    rows.append(floor(args, bridge, ns))
    return rows


def floor(args: argparse.Namespace, bridge: Pyro5.api.Proxy, ns: Pyro5.api.Proxy) -> harness.Row:
    """Each server's floor, no goal: a ``ping()`` of its Pyro5 daemon, through the same kind of proxy."""
    with Pyro5.api.Proxy(f"PYRO:Pyro.Daemon@{bridge._pyroUri.location}") as ours, \
            Pyro5.api.Proxy(f"PYRO:Pyro.Daemon@{ns._pyroUri.location}") as theirs:
        figures = harness.alternate({"bridge": lambda: harness.rate(ours.ping, args.seconds / args.rounds),
                                     "ns": lambda: harness.rate(theirs.ping, args.seconds / args.rounds)},
                                    args.rounds, what="daemon ping")
    return compare("daemon ping (each server's floor)", "calls/s", figures["bridge"], figures["ns"],
                   baseline_name="Pyro5 name server")


def liveness(args: argparse.Namespace, bridge_pid: int, bridge: Pyro5.api.Proxy, daemons: Daemons) -> list[str]:
    before, started = cpu_seconds(bridge_pid), time.monotonic()
    time.sleep(CPU_SECONDS)  # the window measured: nothing else is asked of the bridge
    cpu = (cpu_seconds(bridge_pid) - before) / (time.monotonic() - started)
    closed = time.monotonic()
    daemons.close(0)
    per_daemon = len(range(0, args.names, args.daemons))
    while sum(1 for name in bridge.list(prefix="bench.") if int(name.split(".")[1]) % args.daemons == 0):
        time.sleep(0.05)
    gone = time.monotonic() - closed
    return [f"liveness at {args.names:,} names on {args.daemons} daemons, a ping per daemon every {PING_INTERVAL:g} s: "
            f"the bridge's CPU {cpu * 100:.1f} % of a core with no call coming in",
            f"one daemon closed: its {per_daemon} names gone from ns.list() {gone:.2f} s later "
            f"(the terms' bound: {TERMS.interval:g} s + {TERMS.misses} misses x ({TERMS.timeout:g} s timeout + "
            f"{TERMS.retry:g} s retry) = {TERMS.removal_bound:g} s)"]


def measure(args: argparse.Namespace) -> Report:
    servers = [ServerProcess(__file__, "bridge", "lookup service with --pyro-ns", new_session=True),
               ServerProcess(__file__, "ns", "Pyro5 name server", new_session=True)]
    daemons = Daemons(args.daemons)
    try:
        bridge_uri, ns_uri = (server.uri() for server in servers)
        with Pyro5.api.Proxy(bridge_uri) as bridge, Pyro5.api.Proxy(ns_uri) as ns:
            progress(f"registering {args.names:,} names with both...")
            for i in range(args.names):
                bridge.register(f"bench.{i}", daemons.uri(i))
                ns.register(f"bench.{i}", daemons.uri(i))
            progress(f"measuring ({args.rounds} rounds of {args.seconds / args.rounds:.2f} s per side and call)...")
            rows = calls(args, bridge, ns)
            notes = liveness(args, servers[0].child.pid, bridge, daemons)
    finally:
        daemons.close_all()
        for server in servers:
            server.stop()
    return Report(rows, notes=notes, title=(
        f"Pyro5 name server calls at {args.names:,} names: the lookup service's name server face "
        "(lookup serve --pyro-ns, another process) against Pyro5's own name server (another process), "
        "one client, sequential, serpent"))


if __name__ == "__main__":
    raise SystemExit(BENCH.main(measure, children={"bridge": serve_bridge, "ns": serve_ns}))
