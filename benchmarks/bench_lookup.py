"""Lookups at 10,000 registrations: the lookup service against the Pyro5 name server (issue 5, item 4; issue 26).

Two child processes on loopback: the lookup service as ``python -m lookup
serve`` runs it (``--child lookup``) and Pyro5's name server (``--child
ns``, in-memory, broadcast off). Both get the same ``--services``
registrations: service ``i`` is ``svc-i``, of one of ``--kinds`` types plus a
common base, with ``Name``, ``Location(floor, room, building)``,
``ServiceInfo`` and ``Comment`` entries (on the name server, the same facts
as metadata strings). One client then makes sequential lookups from random
queries drawn beforehand, the two servers taking turns: by unique name
(against ``lookup(name)``), by type (against ``yplookup(meta_all={"type:T"})``)
and by type and floor. Both hand back everything they know about every
match, and a sample of answers is compared first. Each side is used as a
user would: the lookup service through :func:`lookup.locate` (landlord's
wire, msgpack in its dialect), the name server through a plain Pyro5 proxy
(its default serializer, serpent). Goals: :data:`GOALS`. A last row, with
no goal, is each server's floor: a ``ping()`` of its Pyro5 daemon, through
the same kind of proxy.

Printed besides: each answer's size and decoding time (a ``lookup_all``
answer of 1, 200 and 1,000 matches in both its forms, packed and dict, on
the wire's serializer and on serpent), and the same lookups on an
in-process ``LookupService`` (``--profile``: with a cProfile of those, and
one of the client reading the answers). ``--matches dict`` serves
``lookup_all`` answers in the dict form (``lookup.wire.register_all(
packed_matches=False)``), to weigh the packed form end to end. The method
in full: ``benchmarks/README.md``; the options, rounds, table and JSON:
``harness.py``. Not a test: pytest collects only ``tests/``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import itertools
import math
import pstats
import random
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import harness
import Pyro5
import Pyro5.api
import Pyro5.core
import Pyro5.nameserver
import Pyro5.serializers
import serpent
from harness import Report, Row, ServerProcess, compare, positive_int, positive_seconds, progress

import landlord
import lookup.wire
from landlord import wire_proxy
from lookup import Comment, Location, LookupService, Name, ServiceInfo, ServiceItem, ServiceTemplate, locate
from lookup.item import MAX_MATCHES

FLOORS = 20
GOALS = {  # lookup service / name server (issue 26)
    "lookup by unique name": 1.5,
    "lookup_all by type": 4.0,
    "lookup_all by type and attribute": 3.0,
}
PING = "daemon ping (each server's floor)"
ANSWER_SIZES = (1, 200, 1000)   # matches of the lookup_all answers weighed in both forms
MATCH_FORMS = ("packed", "dict")

HOST = "127.0.0.1"
TYPE_PREFIX = "benchsvc"
BASE_TYPE = f"{TYPE_PREFIX}.Service"
LEASE = 3600.0                  # longer than any run: no registration ends while we measure
QUERIES = 1000                  # random queries drawn per kind (cycled through)
UNCAPPED = 10**9                # registrations one client may hold in the benchmark's lookup service
CHECKED_QUERIES = 20            # of them, asked of both servers and compared before timing
CALL_TIMEOUT = 60.0
IN_PROCESS_SECONDS = 0.3        # per query kind, for the in-process timing

BENCH = harness.Benchmark(
    "lookup", "Lookups per second at 10,000 registrations: the lookup service (served as `python -m lookup "
    "serve` serves it) against the Pyro5 name server's lookup and yplookup on the same data, both in child "
    "processes, measured in the same run.", modules=(landlord, Pyro5, serpent),
    quick={"services": 1000, "kinds": 10, "seconds": 0.6, "rounds": 2})
BENCH.option("--services", positive_int, 10_000, "registrations in each server")
BENCH.option("--kinds", positive_int, 50, "distinct service types")
BENCH.option("--seconds", positive_seconds, 3.0, "timed seconds per server and kind of lookup, split over the rounds")
BENCH.parser.add_argument("--seed", type=int, default=1, help="seed of the random queries")
BENCH.parser.add_argument("--matches", choices=MATCH_FORMS, default="packed",
                          help="the form the lookup service sends lookup_all answers in (default: packed)")
BENCH.parser.add_argument("--profile", action="store_true",
                          help="also print a cProfile of the lookups on the in-process lookup service, "
                          "and one of the client reading the lookup service's answers")


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


def serve_lookup_dict(args: argparse.Namespace) -> int:
    """:func:`serve_lookup`, sending ``lookup_all`` answers in the dict form (``--matches dict``)."""
    lookup.wire.register_all(packed_matches=False)
    return serve_lookup(args)


def serve_lookup(args: argparse.Namespace) -> int:
    """The lookup-service process: :func:`lookup.service.server.serve` on a free port, as ``python -m lookup serve``."""
    from lookup.service.quotas import LookupLimits
    from lookup.service.server import serve

    try:
        # one client registers them all (however many --services the parent was given): no per-client cap
        serve(HOST, 0, max_lease=LEASE, default_lease=LEASE,
              lookup_limits=LookupLimits(registrations_per_client=UNCAPPED),
              ready=lambda uri: print(f"URI: {uri}", flush=True))  # serve stops on SIGTERM by itself
    except KeyboardInterrupt:  # stopped before serve set its handlers
        pass
    return 0


def serve_ns(args: argparse.Namespace) -> int:
    """The name-server process: Pyro5's name server on a free port, broadcast off, until SIGTERM."""
    signal.signal(signal.SIGTERM, harness.stop_on_sigterm)
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


def answer_cost(answer: Any, serializer_name: str) -> tuple[int, float]:
    """An answer's size as the serializer named writes it, and the microseconds the
    client takes to read it back into objects (the best of a few tries)."""
    serializer = Pyro5.serializers.serializers[serializer_name]
    data = serializer.dumps(answer)
    best = math.inf
    for _ in range(5):
        started = time.perf_counter()
        serializer.loads(data)
        best = min(best, time.perf_counter() - started)
    return len(data), 1e6 * best


def reading_profile(answer: Any, serializer_name: str) -> str:
    """A cProfile of the client reading ``answer`` back into objects on the serializer named, again and
    again (the top functions by internal time): where an answer costs the client, as the in-process
    profile is where the matching costs the service."""
    serializer = Pyro5.serializers.serializers[serializer_name]
    data = serializer.dumps(answer)
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    while time.perf_counter() - started < IN_PROCESS_SECONDS:
        serializer.loads(data)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(10)
    return out.getvalue()


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



@dataclass
class Measured:
    """One kind of lookup, measured: its row, the line on its answers' cost, and one answer of each server."""

    metric: str
    row: Row
    line: str
    answers: tuple[Any, Any]  # the lookup service's, the name server's


@dataclass(frozen=True)
class Serializers:
    """The serializer each side's proxy speaks (by name, as in Pyro5's table)."""

    ours: str
    theirs: str


def measure_kind(kind: QueryKind, seconds: float, rounds: int, serializers: Serializers) -> Measured:
    """One kind: compare sample answers, then time windows of both sides in turns; the row and its answers' cost."""
    for query in kind.queries[:CHECKED_QUERIES]:
        kind.check(query, kind.landlord_call(query), kind.baseline_call(query))

    def window(call: Callable[[Any], Any]) -> float:
        queries = itertools.cycle(kind.queries)
        return harness.rate(lambda: call(next(queries)), seconds / rounds)

    figures = harness.alternate({"lookup": lambda: window(kind.landlord_call),
                                 "ns": lambda: window(kind.baseline_call)}, rounds)
    answers = (kind.landlord_call(kind.queries[0]), kind.baseline_call(kind.queries[0]))
    ours, theirs = answer_cost(answers[0], serializers.ours), answer_cost(answers[1], serializers.theirs)
    row = compare(kind.metric, "lookups/s", figures["lookup"], figures["ns"], goal=GOALS[kind.metric])
    return Measured(kind.metric, row,
                    f"  {kind.metric:<34} {ours[0]:>9,} B {ours[1]:>7,.0f} us {theirs[0]:>9,} B {theirs[1]:>7,.0f} us",
                    answers)


def measure_ping(lookup_uri: str, ns_uri: str, seconds: float, rounds: int) -> Row:
    """Each server's floor: ``ping()`` of its Pyro5 daemon, through the kind of proxy each side's lookups use
    (no goal: what a call costs on each server before any lookup work)."""
    daemon = Pyro5.core.DAEMON_NAME
    with wire_proxy(lookup_uri.replace(lookup.LOOKUP_OBJECT_ID, daemon)) as ours, \
            Pyro5.api.Proxy(ns_uri.replace(Pyro5.core.NAMESERVER_NAME, daemon)) as theirs:
        ours._pyroTimeout = theirs._pyroTimeout = CALL_TIMEOUT
        figures = harness.alternate({"lookup": lambda: harness.rate(ours.ping, seconds / rounds),
                                     "ns": lambda: harness.rate(theirs.ping, seconds / rounds)}, rounds)
    return compare(PING, "calls/s", figures["lookup"], figures["ns"])


def answer_forms(lookup_proxy: Any, serializers: Serializers) -> list[str]:
    """The lines on ``lookup_all`` answers of :data:`ANSWER_SIZES` matches in both forms: bytes and the
    client's microseconds to read one, on the wire's serializer and on serpent (what a plain client speaks)."""
    lines = [f"a lookup_all answer in either form: bytes, and the client's us to read it "
             f"({serializers.ours}; serpent):", f"  {'matches':>9} {'packed':>30} {'dict':>30}"]
    for size in ANSWER_SIZES:
        template = ServiceTemplate(types=[kind_type(0) if size <= 200 else BASE_TYPE])
        answer = lookup_proxy.lookup_all(template, size)
        figures = []
        for form in MATCH_FORMS:
            lookup.wire.register_all(packed_matches=form == "packed")
            try:
                wire, plain = answer_cost(answer, serializers.ours), answer_cost(answer, "serpent")
            finally:
                lookup.wire.register_all()
            figures.append(f"{wire[0]:>9,} B {wire[1]:>7,.0f}; {plain[1]:>7,.0f} us")
        lines.append(f"  {len(answer.items):>9,} {figures[0]:>30} {figures[1]:>30}")
    return lines


def served(args: argparse.Namespace) -> tuple[list[Row], list[str]]:
    """Start both servers, fill them, measure, stop them; the rows and the lines on set-up and answers
    (with ``--profile``, a profile of the client reading the lookup service's answers)."""
    role = "lookup" if args.matches == "packed" else "lookup-dict"
    servers = [ServerProcess(__file__, role, "lookup service"), ServerProcess(__file__, "ns", "name server")]
    try:
        lookup_uri, ns_uri = servers[0].uri(), servers[1].uri()
        port = int(lookup_uri.rsplit(":", 1)[1])
        with locate(HOST, port, timeout=CALL_TIMEOUT) as lookup_proxy, Pyro5.api.Proxy(ns_uri) as ns_proxy:
            ns_proxy._pyroTimeout = CALL_TIMEOUT
            serializers = Serializers(lookup_proxy._pyroSerializer or Pyro5.config.SERIALIZER,
                                      ns_proxy._pyroSerializer or Pyro5.config.SERIALIZER)
            services = [Service(i, args.kinds) for i in range(args.services)]
            progress(f"registering {args.services:,} services with the lookup service and the name server...")
            setup = register_all(lookup_proxy, ns_proxy, services)
            if ns_proxy.count() != args.services + 1:  # the name server lists itself too
                raise RuntimeError(f"the name server holds {ns_proxy.count()} names")
            progress(f"measuring ({args.rounds} rounds of {args.seconds / args.rounds:.2f} s per side and kind)...")
            measured = [measure_kind(kind, args.seconds, args.rounds, serializers)
                        for kind in query_kinds(lookup_proxy, ns_proxy, args.services, args.kinds, args.seed)]
            ping = measure_ping(lookup_uri, ns_uri, args.seconds, args.rounds)
            forms = answer_forms(lookup_proxy, serializers)
    finally:
        for server in servers:
            server.stop()
    notes = [f"setup: registered in {setup.lookup_seconds:.1f} s (lookup service), {setup.ns_seconds:.1f} s "
             f"(name server), one call each; lookup_all answers sent {args.matches}",
             f"one answer, as each side's serializer writes it (lookup service: {serializers.ours}, name server: "
             f"{serializers.theirs}), and the client's time to read it back into objects:",
             f"  {'':<34} {'lookup service':>22} {'name server':>22}"]
    notes += [each.line for each in measured] + [""] + forms
    if args.profile:
        for each in measured:
            notes += ["", f"cProfile of the client reading a lookup service answer ({each.metric}) back into "
                      "objects (by internal time):", reading_profile(each.answers[0], serializers.ours)]
    return [each.row for each in measured] + [ping], notes


def measure(args: argparse.Namespace) -> Report:
    if args.kinds * FLOORS > args.services:
        BENCH.error(f"--services must be at least --kinds x {FLOORS}, so that every (type, floor) has a service")
    rows, notes = served(args)
    timings, profile = in_process(args)
    notes += ["", "the same lookups on an in-process LookupService (no network, no serialization), us per call:"]
    notes += [f"  {metric:<34} {us:>10.1f}" for metric, us in timings]
    if profile:
        notes += ["", "cProfile of the in-process lookups (by internal time):", profile]
    return Report(rows, notes=notes, title=(
        f"Lookups at {args.services:,} registrations: the lookup service "
        f"(lookup.service.server.serve, another process) "
        f"against the Pyro5 name server (another process), one client, sequential\n"
        f"data: {args.kinds} types + a common base, Name(unique), Location(floor of {FLOORS}, room, building), "
        f"ServiceInfo, Comment; about {args.services // args.kinds} services per type, "
        f"{args.services // (args.kinds * FLOORS)} per (type, floor)\n"
        "name server: lookup(name), yplookup(meta_all={'type:T'}), yplookup(meta_all={'type:T', 'floor:F'})"))


if __name__ == "__main__":
    raise SystemExit(BENCH.main(measure, children={"lookup": serve_lookup, "lookup-dict": serve_lookup_dict,
                                                   "ns": serve_ns}))
