"""What metrics cost a renewal: a served landlord with its metrics on against the same without (issue 13, item 6).

Two landlords in child processes (this script again, ``--child on`` and
``--child off``), each served by ``landlord.serve_landlord`` (its default,
the guarded server) on loopback: the same ``Landlord`` subclass and policy, the first
with ``metrics_port=0`` (a ``landlord.metrics.LeaseMetrics`` among its hooks
and its HTTP endpoint up), the second without. This process is one client
thread, a plain Pyro5 proxy to each.

1. **Batched renewals**: ``renew_all`` of ``--leases`` cookies in one call
   (``CALL_BATCH``, 1,000, what a holder sends; at most a landlord's
   ``MAX_BATCH``, 2,000), ``--calls`` calls a side a round, the sides taking turns round after
   round; leases renewed per second.
2. **Single renewals**: ``renew(cookie, duration)``, one lease a call, the sides
   taking turns in blocks of ``--block`` calls until each has had ``--seconds``.

The ratio is metrics on / metrics off (> 1: on is faster); the goal is >= 0.95x
(metrics cost under 5%).

Pinned: where this process may use two CPUs or more, both landlords run on
the last of them and this process on the first (``--no-pin``: wherever the
scheduler puts them). Unpinned on a 2-CPU machine, two *identical* landlords
measured this way differed from round to round by far more than the 5% the
goal allows metrics, the one started first mostly ahead (where the scheduler
placed each); pinned, they did not (the figures: ``docs/performance.md``).

After the rounds the "on" landlord is scraped over HTTP, and its
``landlord_leases_renewed_total`` must equal the renewals this process sent
it (a problem otherwise: the metrics were not on, or miscounted).

The method: ``benchmarks/README.md``; the options, rounds, table and JSON:
``harness.py``. Not a test: pytest collects only ``tests/``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import time
import urllib.request
from collections.abc import Iterator, Sequence
from typing import Any

import harness
import Pyro5
import Pyro5.api
import serpent
from harness import Report, at_most, compare, interleave, positive_int, positive_seconds, progress

import landlord
from landlord import Landlord, LeaseDurationPolicy
from landlord.grantor.landlord import MAX_BATCH
from landlord.holder.landlordlease import CALL_BATCH
from landlord.testing import ChildProcess, WaitFailed

TERM = 3600.0                # the landlord's longest grant: nothing expires during the run
RENT_CHUNK = 10_000          # leases rented per call while setting up
CALL_TIMEOUT = 120.0
GOAL = 0.95                  # metrics on / off: on costs under 5%
METRICS_LINE = r"landlord metrics at (?P<url>http://\S+/metrics)"
RENEWED = re.compile(r"^landlord_leases_renewed_total (\S+)$", re.MULTILINE)

BENCH = harness.Benchmark(
    "bench_metrics", "Renewal throughput of a served landlord with its Prometheus metrics on, against the "
    "same landlord with them off, both in child processes, measured in turns in the same run.",
    rounds=7, modules=(landlord, Pyro5, serpent),
    quick={"rounds": 2, "leases": 1000, "calls": 2, "seconds": 0.3})
BENCH.option("--leases", at_most(MAX_BATCH), CALL_BATCH,
             "batched renewals: leases per renew_all call, at most a landlord's MAX_BATCH")
BENCH.option("--calls", positive_int, 20, "batched renewals: calls per side per round")
BENCH.option("--seconds", positive_seconds, 2.0, "single renewals: seconds per side per round")
BENCH.option("--block", positive_int, 25, "single renewals: calls per block while taking turns")
BENCH.parser.add_argument("--no-pin", dest="pin", action="store_false",
                          help="let the scheduler place the landlords and this process (see the docstring)")
BENCH.parser.add_argument("--pin-cpu", type=int, help=argparse.SUPPRESS)  # a landlord child's CPU


# -- the landlord processes --------------------------------------------------------------------


class BenchLandlord(Landlord):
    """A landlord that rents in bulk."""

    def __init__(self) -> None:
        super().__init__(policy=LeaseDurationPolicy(maximum=TERM, default=TERM))

    @Pyro5.api.expose
    def rent_cookies(self, count: int) -> list[str]:
        """``count`` fresh leases as bare cookies."""
        return [self.new_lease(i, TERM).cookie for i in range(count)]


def serve(args: argparse.Namespace, *, metrics: bool) -> int:
    """A landlord process: serve_landlord until SIGTERM, with metrics or without; prints ``URI: <uri>``."""
    if args.pin_cpu is not None:  # before any thread starts: every thread of it stays there
        os.sched_setaffinity(0, {args.pin_cpu})
    rooms = BenchLandlord()
    try:
        landlord.serve_landlord(rooms, metrics_port=0 if metrics else None,
                                ready=lambda uri: print(f"URI: {uri}", flush=True))
    finally:
        rooms.close()
    return 0


# -- measuring ---------------------------------------------------------------------------------


def rent(proxy: Any, count: int) -> list[str]:
    cookies: list[str] = []
    while len(cookies) < count:
        cookies += proxy.rent_cookies(min(RENT_CHUNK, count - len(cookies)))
    return cookies


def renewed_total(url: str) -> float:
    """``landlord_leases_renewed_total`` scraped from ``url``."""
    with urllib.request.urlopen(url, timeout=10) as answer:
        found = RENEWED.search(answer.read().decode())
    if found is None:
        raise RuntimeError(f"no landlord_leases_renewed_total at {url}")
    return float(found[1])


@contextlib.contextmanager
def placed(pin: bool) -> Iterator[list[str]]:
    """This process on its first allowed CPU for the block (with ``pin``, where it may use two or more);
    the arguments that put a landlord child on the last."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if not pin or len(allowed) < 2:
        yield []
        return
    os.sched_setaffinity(0, {allowed[0]})
    try:
        yield ["--pin-cpu", str(allowed[-1])]
    finally:
        os.sched_setaffinity(0, allowed)


def start(role: str, pinning: list[str]) -> ChildProcess:
    return ChildProcess(os.path.abspath(__file__), "--child", role, *pinning, name=f"the landlord {role}",
                        stderr="inherit", env=harness.UNBUFFERED)


def served_at(child: ChildProcess) -> str:
    try:
        return child.read_uri(harness.SERVER_START_TIMEOUT, pattern=harness.URI_LINE)
    except WaitFailed as exc:
        raise RuntimeError(str(exc)) from None


def measure(args: argparse.Namespace) -> Report:
    """Start both landlords, measure in turns, check the metrics counted, stop them."""
    with contextlib.ExitStack() as stack:
        pinning = stack.enter_context(placed(args.pin))
        servers: dict[str, ChildProcess] = {}
        for side in ("on", "off"):
            servers[side] = start(side, pinning)
            stack.callback(harness.stop_child, servers[side])
        report = measure_served(args, servers)
        client = min(os.sched_getaffinity(0)) if pinning else None
        report.machine["pinned"] = f"landlords on CPU {pinning[1]}, this process on CPU {client}" if pinning else "no"
        return report


def measure_served(args: argparse.Namespace, servers: dict[str, ChildProcess]) -> Report:
    sides = list(servers)
    proxies: dict[str, Any] = {}
    try:
        uris = {side: served_at(server) for side, server in servers.items()}
        url = servers["on"].matches(METRICS_LINE)[0][1]["url"]  # printed before the URI line
        for side in sides:
            proxies[side] = Pyro5.api.Proxy(uris[side])
            proxies[side]._pyroTimeout = CALL_TIMEOUT
        progress(f"renting {args.leases:,} leases from each landlord...")
        cookies = {side: rent(proxies[side], args.leases) for side in sides}
        durations = [TERM] * args.leases
        sent = dict.fromkeys(sides, 0)

        def batches(side: str) -> float:
            proxy, mine = proxies[side], cookies[side]
            started = time.perf_counter()
            for _ in range(args.calls):
                results = proxy.renew_all(mine, durations)
                if results.denied:
                    raise RuntimeError(f"{len(results.denied)} renewals denied by the landlord {side}")
            seconds = time.perf_counter() - started
            sent[side] += args.calls * args.leases
            return args.calls * args.leases / seconds

        for side in sides:  # warm up: connections made, caches filled
            batches(side)
        per_round = harness.alternate({side: (lambda side=side: batches(side)) for side in sides}, args.rounds,
                                      what=f"renew_all of {args.leases:,} leases")
        rows = [compare(f"renew_all, {args.leases:,} leases/call: metrics on vs off", "leases/s", per_round["on"],
                        per_round["off"], goal=GOAL)]

        single: dict[str, Any] = {side: (lambda side=side: proxies[side].renew(cookies[side][0], TERM))
                                  for side in sides}
        counted = dict.fromkeys(sides, 0)

        def counting(side: str) -> Any:
            def call() -> None:
                single[side]()
                counted[side] += 1
            return call

        interleave({side: counting(side) for side in sides}, 0.3, args.block)  # warm up
        rates: list[dict[str, float]] = []
        for number in range(args.rounds):
            progress(f"renew, one lease a call: round {number + 1} of {args.rounds} ({2 * args.seconds:g} s)...")
            rates.append(interleave({side: counting(side) for side in sides}, args.seconds, args.block))
        rows.append(compare("renew, one lease/call: metrics on vs off", "calls/s", [r["on"] for r in rates],
                            [r["off"] for r in rates], goal=GOAL))

        expected = sent["on"] + counted["on"]
        scraped = renewed_total(url)
        problems = [] if scraped == expected else [
            f"the landlord with metrics counted {scraped:,.0f} renewals, but was sent {expected:,}"]
        notes = [f"metrics scraped from {url} after the rounds: landlord_leases_renewed_total {scraped:,.0f} "
                 f"(sent {expected:,})"]
    finally:
        for proxy in proxies.values():
            proxy._pyroRelease()
    return Report(rows, notes=notes, problems=problems, title=(
        f"one landlord with metrics on (serve_landlord(metrics_port=0)) against one without, each served by "
        f"serve_landlord in its own process on loopback ({Pyro5.config.SERIALIZER!r} serializer); one client "
        f"thread; {args.rounds} rounds taking turns; ratio on/off, goal >= {GOAL:g}x"))


def children() -> dict[str, Any]:
    return {"on": lambda args: serve(args, metrics=True), "off": lambda args: serve(args, metrics=False)}


def main(argv: Sequence[str] | None = None) -> int:
    return BENCH.main(measure, argv, children=children())


if __name__ == "__main__":
    raise SystemExit(main())
