"""Lookups at 10,000 registrations: the lookup service against the Pyro5 name server.

Issue 5, item 4: "lookups by type and attribute at 10,000 registrations,
against the Pyro5 name server's ``lookup`` and ``yplookup`` on the same data.
Goal: >= 1x."

What is measured
----------------
Two servers run as child processes of this script, each on a free loopback
port:

* the lookup service, served as ``python -m lookup serve`` serves it
  (:func:`lookup.server.serve`: a :class:`~lookup.server.ServedLookupService`
  on Pyro5's multiplex server; this script started again with a hidden
  ``--serve-lookup`` flag);
* the Pyro5 name server (:func:`Pyro5.nameserver.start_ns`, its default
  in-memory storage and thread server, broadcast off; ``--serve-ns``).

Both get the same ``--services`` registrations (10,000 by default). Service
``i`` is named ``svc-i``, implements one of ``--kinds`` types (``i % kinds``)
and a common base type, and sits on floor ``(i // kinds) % 20``, so that every
type has ``services / kinds`` services and every (type, floor) pair
``services / (kinds * 20)``. On the lookup service it registers a
:class:`~lookup.ServiceItem` with types ``benchsvc.Kind07, benchsvc.Service``
and the entries ``Name``, ``Location(floor, room, building)``,
``ServiceInfo`` and ``Comment``; on the name server the name ``svc-i`` with
the same facts as metadata strings (``type:benchsvc.Kind07``, ``floor:3``,
``room:...``, ``building:...``, ``manufacturer:...``, ``version:...``).

Then one client, sequentially, makes as many lookups as it can in
``--seconds`` per side and query kind (in ``--rounds`` alternating windows,
the best kept: noise only ever slows a window down), from a list of random
queries drawn before the clock starts:

(a) by unique name: ``lookup(ServiceTemplate(attributes=[Name("svc-1234")]))``
    against the name server's ``lookup("svc-1234")``;
(b) by type: ``lookup_all(ServiceTemplate(types=[T]), MAX)`` against
    ``yplookup(meta_all={"type:T"})``;
(c) by type and attribute: a template with a type and ``Location(floor="3")``
    against ``yplookup(meta_all={"type:T", "floor:3"})``.

``yplookup`` returns each match's name, URI and metadata (its default), the
lookup service each match's item (id, service, types, entries): both hand
back everything they know about every match. Before timing, a sample of
queries is asked of both servers and the answers compared (the same services,
the same counts), so both really answer the same question.

The figure is lookups per second; the ratio lookup service / name server is
what the row is judged on (goal: >= 1x, PASS or MISS). A last section times
the three lookups on an in-process :class:`~lookup.LookupService` holding the
same items (no network, no serialization: the matching alone), and
``--profile`` adds a cProfile of it.

Run ``python benchmarks/bench_lookup.py --help`` for the options. This file
is not a test: pytest collects only ``tests/``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import pstats
import random
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import Pyro5
import Pyro5.api
import Pyro5.nameserver
import Pyro5.serializers
import serpent
from common import (  # the benchmarks' shared pieces
    ServerProcess,
    machine_info,
    positive_int,
    positive_seconds,
    stop_on_sigterm,
)

import landlord
from lookup import Comment, Location, LookupService, Name, ServiceInfo, ServiceItem, ServiceTemplate, locate
from lookup.service import MAX_MATCHES

DEFAULT_SERVICES = 10_000
DEFAULT_KINDS = 50
DEFAULT_SECONDS = 3.0   # per side and query kind, split over the rounds
DEFAULT_ROUNDS = 3
DEFAULT_SEED = 1
FLOORS = 20
GOAL = 1.0              # lookup service / name server

HOST = "127.0.0.1"
TYPE_PREFIX = "benchsvc"
BASE_TYPE = f"{TYPE_PREFIX}.Service"
LEASE = 3600.0                  # longer than any run: no registration ends while we measure
QUERIES = 1000                  # random queries drawn per kind (cycled through)
CHECKED_QUERIES = 20            # of them, asked of both servers and compared before timing
CALL_TIMEOUT = 60.0
IN_PROCESS_SECONDS = 0.3        # per query kind, for the in-process timing


# -- the data ------------------------------------------------------------------------------


def kind_type(kind: int) -> str:
    """The type name of the ``kind``-th service type."""
    return f"{TYPE_PREFIX}.Kind{kind:02d}"


@dataclass(frozen=True)
class Service:
    """One benchmark service, as both servers learn of it."""

    index: int
    kinds: int

    @property
    def name(self) -> str:
        return f"svc-{self.index}"

    @property
    def uri(self) -> str:
        return f"PYRO:{self.name}@{HOST}:9"  # never dialled: lookups only hand it out

    @property
    def type(self) -> str:
        return kind_type(self.index % self.kinds)

    @property
    def floor(self) -> str:
        return str((self.index // self.kinds) % FLOORS)

    @property
    def room(self) -> str:
        return f"{self.floor}{self.index % 37:02d}"

    @property
    def building(self) -> str:
        return f"B{self.index % 3}"

    @property
    def manufacturer(self) -> str:
        return f"maker-{self.index % 7}"

    def item(self) -> ServiceItem:
        """What the lookup service registers."""
        return ServiceItem(None, self.uri, types=[self.type, BASE_TYPE], attributes=[
            Name(self.name),
            Location(floor=self.floor, room=self.room, building=self.building),
            ServiceInfo(name="bench", manufacturer=self.manufacturer, version="1.0"),
            Comment(f"benchmark service number {self.index}"),
        ])

    def metadata(self) -> set[str]:
        """What the name server registers with the name: the same facts as strings."""
        return {f"type:{self.type}", f"type:{BASE_TYPE}", f"floor:{self.floor}", f"room:{self.room}",
                f"building:{self.building}", f"manufacturer:{self.manufacturer}", "version:1.0"}


# -- the server processes -------------------------------------------------------------------


def serve_lookup() -> int:
    """The lookup-service process: :func:`lookup.server.serve` on a free port, as ``python -m lookup serve``."""
    from lookup.server import serve

    try:
        serve(HOST, 0, max_lease=LEASE, default_lease=LEASE,
              ready=lambda uri: print(f"URI: {uri}", flush=True))  # serve stops on SIGTERM by itself
    except KeyboardInterrupt:  # stopped before serve set its handlers
        pass
    return 0


def serve_ns() -> int:
    """The name-server process: Pyro5's name server on a free port, broadcast off, until SIGTERM."""
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    try:
        uri, daemon, _ = Pyro5.nameserver.start_ns(host=HOST, port=0, enableBroadcast=False)
        try:
            print(f"URI: {uri}", flush=True)
            daemon.requestLoop()
        except KeyboardInterrupt:
            pass
        finally:
            daemon.close()
    except KeyboardInterrupt:
        pass
    return 0


# -- the queries -----------------------------------------------------------------------------


@dataclass
class QueryKind:
    """One row of the table: the same questions, asked of both servers."""

    metric: str
    landlord_call: Callable[[Any], Any]   # one query -> the lookup service's answer
    baseline_call: Callable[[Any], Any]   # one query -> the name server's answer
    queries: list[Any]
    check: Callable[[Any, Any, Any], None]  # (query, landlord answer, baseline answer); raises if they differ


def query_kinds(lookup_proxy: Any, ns_proxy: Any, services: int, kinds: int, seed: int) -> list[QueryKind]:
    """The three kinds of lookup, with their random queries drawn (the same for both servers)."""
    rng = random.Random(seed)
    names = [f"svc-{rng.randrange(services)}" for _ in range(QUERIES)]
    types = [kind_type(rng.randrange(kinds)) for _ in range(QUERIES)]
    pairs = [(kind_type(rng.randrange(kinds)), str(rng.randrange(FLOORS))) for _ in range(QUERIES)]

    def by_name(name: str) -> Any:
        return lookup_proxy.lookup(ServiceTemplate(attributes=[Name(name)]))

    def by_type(kind: str) -> Any:
        return lookup_proxy.lookup_all(ServiceTemplate(types=[kind]), MAX_MATCHES)

    def by_type_and_floor(pair: tuple[str, str]) -> Any:
        return lookup_proxy.lookup_all(ServiceTemplate(types=[pair[0]], attributes=[Location(floor=pair[1])]),
                                       MAX_MATCHES)

    def check_name(name: str, ours: Any, theirs: Any) -> None:
        got = str(ours._pyroUri) if ours is not None else None
        if got is None or got != str(theirs) or f"PYRO:{name}@" not in got:
            raise RuntimeError(f"lookup of {name}: the lookup service says {got}, the name server {theirs}")

    def check_matches(query: Any, ours: Any, theirs: Any) -> None:
        found = {item.service_uri for item in ours.items}
        expected = {str(uri) for uri, _ in theirs.values()}
        if ours.total != len(theirs) or found != expected or not found:
            raise RuntimeError(f"{query}: the lookup service found {ours.total} ({len(found)} sent), "
                               f"the name server {len(theirs)}; the answers differ or are empty")

    return [
        QueryKind("lookup by unique name", by_name, lambda name: ns_proxy.lookup(name), names, check_name),
        QueryKind("lookup_all by type", by_type, lambda kind: ns_proxy.yplookup(meta_all={f"type:{kind}"}),
                  types, check_matches),
        QueryKind("lookup_all by type and attribute", by_type_and_floor,
                  lambda pair: ns_proxy.yplookup(meta_all={f"type:{pair[0]}", f"floor:{pair[1]}"}),
                  pairs, check_matches),
    ]


def rate(call: Callable[[Any], Any], queries: list[Any], seconds: float) -> tuple[float, int]:
    """Calls per second of ``call`` over ``queries`` (cycled) for about ``seconds``; and the calls made."""
    count = 0
    started = time.perf_counter()
    deadline = started + seconds
    while True:
        call(queries[count % len(queries)])
        count += 1
        now = time.perf_counter()
        if now >= deadline:
            return count / (now - started), count


@dataclass
class Row:
    """One line of the table (and of the JSON)."""

    metric: str
    landlord: float   # lookups per second, the lookup service
    baseline: float   # lookups per second, the name server
    calls: int        # lookups made in all windows, both sides
    answer_bytes: int = 0           # one answer as the serializer writes it, the lookup service's
    baseline_answer_bytes: int = 0  # the name server's
    decode_us: float = 0.0          # the client's time to read one answer back into objects
    baseline_decode_us: float = 0.0
    unit: str = "lookups/s"
    goal: float = GOAL

    @property
    def ratio(self) -> float:
        return self.landlord / self.baseline if self.baseline > 0 else math.nan

    @property
    def met(self) -> bool:
        return self.ratio >= self.goal


def measure(kinds: list[QueryKind], seconds: float, rounds: int) -> list[Row]:
    """Each kind: compare sample answers, then alternate timed windows of both sides, keeping the best."""
    rows = []
    window = seconds / rounds
    for kind in kinds:
        for query in kind.queries[:CHECKED_QUERIES]:
            kind.check(query, kind.landlord_call(query), kind.baseline_call(query))
        best_ours, best_theirs, calls = 0.0, 0.0, 0
        for _ in range(rounds):
            ours, ours_calls = rate(kind.landlord_call, kind.queries, window)
            theirs, theirs_calls = rate(kind.baseline_call, kind.queries, window)
            best_ours, best_theirs = max(best_ours, ours), max(best_theirs, theirs)
            calls += ours_calls + theirs_calls
        row = Row(kind.metric, best_ours, best_theirs, calls)
        query = kind.queries[0]
        row.answer_bytes, row.decode_us = answer_cost(kind.landlord_call(query))
        row.baseline_answer_bytes, row.baseline_decode_us = answer_cost(kind.baseline_call(query))
        rows.append(row)
    return rows


def answer_cost(answer: Any) -> tuple[int, float]:
    """An answer's size as the client's serializer writes it, and the microseconds the
    client takes to read it back into objects (the best of a few tries)."""
    serializer = Pyro5.serializers.serializers[Pyro5.config.SERIALIZER]
    data = serializer.dumps(answer)
    best = math.inf
    for _ in range(5):
        started = time.perf_counter()
        serializer.loads(data)
        best = min(best, time.perf_counter() - started)
    return len(data), 1e6 * best


# -- the run ---------------------------------------------------------------------------------


@dataclass
class Setup:
    """How long filling the two servers took."""

    lookup_seconds: float
    ns_seconds: float


def register_all(lookup_proxy: Any, ns_proxy: Any, services: list[Service]) -> Setup:
    """Register every service with both servers (one call each; the name server's thread server)."""
    started = time.monotonic()
    for service in services:
        lookup_proxy.register(service.item(), LEASE)
    lookup_seconds = time.monotonic() - started
    started = time.monotonic()
    for service in services:
        ns_proxy.register(service.name, service.uri, metadata=service.metadata())
    return Setup(lookup_seconds, time.monotonic() - started)


def run(args: argparse.Namespace) -> tuple[list[Row], Setup]:
    """Start both servers, fill them, measure, stop them."""
    progress = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    servers = [ServerProcess(__file__, "--serve-lookup", "lookup service"),
               ServerProcess(__file__, "--serve-ns", "name server")]
    try:
        lookup_uri, ns_uri = servers[0].uri(), servers[1].uri()
        port = int(lookup_uri.rsplit(":", 1)[1])
        with locate(HOST, port, timeout=CALL_TIMEOUT) as lookup_proxy, Pyro5.api.Proxy(ns_uri) as ns_proxy:
            ns_proxy._pyroTimeout = CALL_TIMEOUT
            services = [Service(i, args.kinds) for i in range(args.services)]
            progress(f"registering {args.services:,} services with the lookup service and the name server...")
            setup = register_all(lookup_proxy, ns_proxy, services)
            if ns_proxy.count() != args.services + 1:  # the name server lists itself too
                raise RuntimeError(f"the name server holds {ns_proxy.count()} names")
            progress(f"measuring ({args.rounds} rounds of {args.seconds / args.rounds:.2f} s per side and kind)...")
            rows = measure(query_kinds(lookup_proxy, ns_proxy, args.services, args.kinds, args.seed),
                           args.seconds, args.rounds)
        return rows, setup
    finally:
        for server in servers:
            if server.stop() is None:
                print(f"warning: the {server.what} ignored SIGTERM and had to be killed", file=sys.stderr)


def run_for(calls: list[Callable[[], Any]], seconds: float) -> tuple[int, float]:
    """Make the ``calls`` in turn (cycled) for about ``seconds``; the calls made and the seconds taken."""
    done = 0
    started = time.perf_counter()
    while True:
        calls[done % len(calls)]()
        done += 1
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return done, elapsed


def in_process(args: argparse.Namespace) -> tuple[list[tuple[str, float]], str]:
    """The three lookups on an in-process LookupService with the same items: microseconds per call.

    No network and no serialization: what the service's matching itself
    costs. With ``--profile``, also a cProfile of every call made (the top
    functions by internal time), else an empty string.
    """
    service = LookupService(reaper="lazy", policy=landlord.LeaseDurationPolicy(maximum=LEASE, default=LEASE))
    try:
        for i in range(args.services):
            service.register(Service(i, args.kinds).item(), LEASE)
        rng = random.Random(args.seed)
        kinds: list[tuple[str, list[Callable[[], Any]]]] = [
            ("lookup by unique name", [
                lambda t=ServiceTemplate(attributes=[Name(f"svc-{rng.randrange(args.services)}")]): service.lookup(t)
                for _ in range(QUERIES)]),
            ("lookup_all by type", [
                lambda t=ServiceTemplate(types=[kind_type(rng.randrange(args.kinds))]): service.lookup_all(
                    t, MAX_MATCHES)
                for _ in range(QUERIES)]),
            ("lookup_all by type and attribute", [
                lambda t=ServiceTemplate(types=[kind_type(rng.randrange(args.kinds))],
                                         attributes=[Location(floor=str(rng.randrange(FLOORS)))]):
                service.lookup_all(t, MAX_MATCHES)
                for _ in range(QUERIES)]),
        ]
        timings = []
        for metric, calls in kinds:
            done, elapsed = run_for(calls, IN_PROCESS_SECONDS)
            timings.append((metric, 1e6 * elapsed / done))
        report = ""
        if args.profile:  # a second pass: the profiler slows every call down
            profiler = cProfile.Profile()
            profiler.enable()
            for _, calls in kinds:
                run_for(calls, IN_PROCESS_SECONDS)
            profiler.disable()
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(15)
            report = out.getvalue()
        return timings, report
    finally:
        service.close()


# -- output ------------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return machine_info(landlord, Pyro5, serpent)


def format_results(args: argparse.Namespace, rows: list[Row], setup: Setup,
                   timings: list[tuple[str, float]], info: dict[str, Any], wall: float) -> str:
    per_type = args.services // args.kinds
    per_pair = args.services // (args.kinds * FLOORS)
    lines = [
        f"Lookups at {args.services:,} registrations: the lookup service (lookup.server.serve, another process) "
        f"against the Pyro5 name server (another process), one client, sequential",
        f"data: {args.kinds} types + a common base, Name(unique), Location(floor of {FLOORS}, room, building), "
        f"ServiceInfo, Comment; about {per_type} services per type, {per_pair} per (type, floor)",
        f"setup: registered in {setup.lookup_seconds:.1f} s (lookup service), {setup.ns_seconds:.1f} s "
        f"(name server), one call each",
        "",
        f"{'':<34} {'lookup service':>15} {'name server':>12} {'ratio':>7} {'goal':>6}",
    ]
    for row in rows:
        lines.append(f"{row.metric:<34} {row.landlord:>15,.0f} {row.baseline:>12,.0f} {row.ratio:>6.2f}x "
                     f"{'>=' + format(row.goal, 'g') + 'x':>6}  {'PASS' if row.met else 'MISS'}")
    lines += [
        f"(lookups per second, the best of {args.rounds} alternating windows of "
        f"{args.seconds / args.rounds:.2f} s per side;",
        " name server: lookup(name), yplookup(meta_all={'type:T'}), yplookup(meta_all={'type:T', 'floor:F'}))",
        "",
        f"one answer, as the client's serializer ({Pyro5.config.SERIALIZER}) writes it, "
        "and the client's time to read it back into objects:",
        f"{'':<34} {'lookup service':>22} {'name server':>22}",
    ]
    for row in rows:
        lines.append(f"{row.metric:<34} {row.answer_bytes:>9,} B {row.decode_us:>7,.0f} us "
                     f"{row.baseline_answer_bytes:>9,} B {row.baseline_decode_us:>7,.0f} us")
    lines += [
        "",
        "the same lookups on an in-process LookupService (no network, no serialization), us per call:",
    ]
    for metric, us in timings:
        lines.append(f"  {metric:<34} {us:>10.1f}")
    lines += [
        "",
        f"machine: {info['platform']} ({info['processor']}), {info['cpu_count']} CPUs",
        f"python:  {info['python']}; landlord {info['landlord']}, Pyro5 {info['Pyro5']}, serpent {info['serpent']}",
        f"wall time: {wall:.1f} s",
    ]
    return "\n".join(lines)


def write_json(path: str, rows: list[Row], info: dict[str, Any]) -> None:
    """Write the rows as JSON to ``path``, in the keys every benchmark of this project uses."""
    report = {
        "name": "lookup",
        "rows": [{"metric": row.metric, "landlord": row.landlord, "baseline": row.baseline, "unit": row.unit,
                  "ratio": row.ratio, "goal": row.goal, "met": row.met} for row in rows],
        "machine": info,
    }
    with open(path, "w", encoding="utf-8") as out:
        json.dump(report, out, indent=2)
        out.write("\n")


# -- command line ------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Lookups per second at 10,000 registrations: the lookup service (served as "
                    "`python -m lookup serve` serves it) against the Pyro5 name server's lookup and "
                    "yplookup on the same data, both in child processes, measured in the same run.")
    parser.add_argument("--services", type=positive_int, default=DEFAULT_SERVICES,
                        help="registrations in each server (default: %(default)s)")
    parser.add_argument("--kinds", type=positive_int, default=DEFAULT_KINDS,
                        help="distinct service types (default: %(default)s)")
    parser.add_argument("--seconds", type=positive_seconds, default=DEFAULT_SECONDS,
                        help="timed seconds per server and kind of lookup (default: %(default)s)")
    parser.add_argument("--rounds", type=positive_int, default=DEFAULT_ROUNDS,
                        help="alternating windows the seconds are split into; the best is kept "
                             "(default: %(default)s)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the random queries")
    parser.add_argument("--profile", action="store_true",
                        help="also print a cProfile of the lookups on the in-process lookup service")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    parser.add_argument("--serve-lookup", action="store_true", help=argparse.SUPPRESS)  # child processes
    parser.add_argument("--serve-ns", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.kinds * FLOORS > args.services:
        parser.error(f"--services must be at least --kinds x {FLOORS}, so that every (type, floor) has a service")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_lookup:
        return serve_lookup()
    if args.serve_ns:
        return serve_ns()
    signal.signal(signal.SIGTERM, stop_on_sigterm)  # so that run() stops the servers on SIGTERM too
    started = time.monotonic()
    try:
        rows, setup = run(args)
        timings, profile = in_process(args)
    except KeyboardInterrupt:
        print("interrupted; the servers were stopped", file=sys.stderr)
        return 130
    wall = time.monotonic() - started
    info = machine()
    print(format_results(args, rows, setup, timings, info, wall))
    if profile:
        print("\ncProfile of the in-process lookups (by internal time):\n" + profile)
    if args.json:
        write_json(args.json, rows, info)
    return 0


if __name__ == "__main__":
    sys.exit(main())
