"""What keeping many leases alive costs: a LeaseRenewalManager against a landlord in another process (issue 3).

The landlord runs in its own process (``--child landlord``), counting and
timing its ``renew_all`` calls. This process, the holder, rents ``--leases``
leases, renews them all once so that they end together, caps the landlord's
grants at ``--term`` and hands every lease to one manager (defaults) with
``renew_for(lease, FOREVER)``. After the first round it measures
``--seconds`` from one quiet moment to another: both processes' CPU (as a
share of a core and per renewal), the rounds and calls, the tightest margin,
and the leases lost (must be 0).

The baselines, in the same run: the same cookies and durations, in calls of
exactly the sizes the manager's had, as raw Pyro5 calls to a method that only
answers as many floats, through a plain proxy on Pyro5's default serializer
(serpent: what a user would otherwise run), then through one on Pyro5's own
msgpack (the serializer landlord's calls speak, in landlord's dialect: the
limit of its wire). The holder's CPU is also projected to longer terms with
the manager's own schedule. The method in full: ``benchmarks/README.md``;
the options, table and JSON: ``harness.py``. Exit status 1 if a lease was
lost. Not a test: pytest collects only ``tests/``.
"""

from __future__ import annotations

import argparse
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import harness
import msgpack  # type: ignore[import-untyped]
import Pyro5
import Pyro5.api
import serpent
from harness import Report, Row, ServerProcess, positive_int, positive_seconds, progress

import landlord
import landlord.holder.renewal
from landlord import FOREVER, Landlord, LandlordLease, LeaseDurationPolicy, LeaseMap, LeaseRenewalEvent
from landlord.grantor.landlord import MAX_BATCH
from landlord.holder.landlordlease import CALL_BATCH

PROJECTED_TERMS = (60.0, 300.0, 3600.0)
RENEW_AFTER = landlord.holder.renewal.RENEW_AFTER  # the manager's share of the term, to project and group rounds

# Setting up is slower than renewing (renting 100,000 leases takes seconds), so
# the leases are rented on a long term, then all renewed in one batch to end
# together, SYNC_MARGIN + ADD_SECONDS_PER_LEASE * N seconds after --term,
# enough to hand them all to the manager before the first is due (adding costs
# under 10 us a lease here; the margin allows a much slower machine). They then
# go out in one round.
SETUP_TERM = 600.0
ADD_SECONDS_PER_LEASE = 60e-6
SYNC_MARGIN = 2.0

CALL_TIMEOUT = 120.0         # renting or replaying 100,000 leases in one call takes a while
QUIET_INTERVAL = 0.1         # both processes idle this long: no renewal round in flight
QUIET_CPU = 0.005            # "idle": less CPU than this per process over QUIET_INTERVAL
QUIET_TIMEOUT = 60.0         # give up waiting for a quiet moment after this long

# The second baseline's serializer: Pyro5's own msgpack, of which landlord's calls speak a dialect
SAME_SERIALIZER = "msgpack"
BASELINES = {"baseline_name": f"raw Pyro5, {Pyro5.config.SERIALIZER}",
             "baseline2_name": f"raw Pyro5, {SAME_SERIALIZER}"}


# -- the landlord process ----------------------------------------------------------------


class BenchLandlord(Landlord):
    """A landlord that rents leases in bulk and counts what it renews.

    It starts out granting whatever is asked (so the holder can rent and set
    up at leisure); :meth:`use_term` then caps every grant at ``term`` seconds,
    so a holder asking for FOREVER is renewed every few seconds. Every
    ``renew_all`` call is recorded (start and end on this machine's monotonic
    clock, leases asked, leases granted, and the margin: how long before its
    end the call's last lease, renewed last, was renewed) so the holder can see
    the rounds and how close they came to losing a lease.
    """

    def __init__(self) -> None:
        super().__init__(policy=LeaseDurationPolicy(maximum=FOREVER, default=SETUP_TERM))
        self._lock = threading.Lock()  # Pyro5 serves calls on a pool of threads
        self._term = SETUP_TERM
        self._calls: list[tuple[float, float, int, int, float]] = []
        self._renewed = 0
        self._in_progress = 0

    @Pyro5.api.expose
    def use_term(self, term: float) -> None:
        """From now on, grant at most ``term`` seconds (FOREVER asks for exactly that)."""
        policy = self.policy
        assert isinstance(policy, LeaseDurationPolicy)
        policy.default = policy.maximum = self._term = float(term)

    @Pyro5.api.expose
    def rent_many(self, count: int, duration: float) -> list[LandlordLease]:
        """Lease ``count`` fresh resources (the numbers themselves) for ``duration`` seconds each."""
        return [self.new_lease(i, duration) for i in range(count)]

    @Pyro5.api.expose
    def renew_all(self, cookies: Sequence[str], durations: Sequence[float]) -> landlord.RenewResults:
        # overriding drops Pyro5's exposure: hence the decorator again
        with self._lock:
            self._in_progress += 1
        started = time.monotonic()
        try:
            # one look-up per call, not per lease, so the landlord's CPU figure stays honest
            last_ends = self.manager.get(cookies[-1]).expiration if cookies else math.nan
        except Exception:  # already expired (or not a cookie): the renewal fails, the margin is unknown
            last_ends = math.nan
        try:
            results = super().renew_all(cookies, durations)
        finally:
            with self._lock:
                self._in_progress -= 1
        granted = len(results.granted) - len(results.denied)
        ended = time.monotonic()
        with self._lock:
            self._calls.append((started, ended, len(cookies), granted, last_ends - ended))
            self._renewed += granted
        return results

    @Pyro5.api.expose
    def echo_durations(self, cookies: Sequence[str], durations: Sequence[float]) -> list[float]:
        """The baseline: take a renew_all-shaped request, answer with as many floats, do nothing else."""
        return [self._term] * len(durations)

    @Pyro5.api.expose
    def stats(self) -> dict[str, Any]:
        """This process's CPU seconds, and what has been renewed so far."""
        with self._lock:
            return {"cpu": time.process_time(), "renewed": self._renewed,
                    "renew_all_calls": len(self._calls), "in_progress": self._in_progress,
                    "leases": len(self)}

    @Pyro5.api.expose
    def calls_since(self, index: int) -> list[list[float]]:
        """The recorded ``renew_all`` calls from the ``index``-th on: [start, end, asked, granted, margin]."""
        with self._lock:
            return [list(call) for call in self._calls[index:]]


def serve(args: argparse.Namespace) -> int:
    """The landlord process: serve a BenchLandlord on loopback until SIGTERM or Ctrl-C."""
    return harness.serve_forever(BenchLandlord())


# -- measuring -------------------------------------------------------------------------------


@dataclass
class Snapshot:
    """Both processes' counters at one moment."""

    wall: float           # this process's monotonic clock
    holder_cpu: float     # this process's CPU seconds, all threads
    landlord_cpu: float   # the landlord's CPU seconds, all threads
    renewed: int          # renewals the landlord has granted so far
    renew_all_calls: int  # renew_all calls the landlord has finished so far
    in_progress: int      # renew_all calls the landlord is working on


def snapshot(landlord_proxy: Any) -> Snapshot:
    stats = landlord_proxy.stats()
    return Snapshot(time.monotonic(), time.process_time(), stats["cpu"], stats["renewed"],
                    stats["renew_all_calls"], stats["in_progress"])


def wait_until_quiet(landlord_proxy: Any) -> Snapshot:
    """A snapshot taken when neither process has used CPU for QUIET_INTERVAL (no round in flight).

    Raises:
        RuntimeError: no quiet moment within QUIET_TIMEOUT (renewal never stops: the term is too short).
    """
    deadline = time.monotonic() + QUIET_TIMEOUT
    before = snapshot(landlord_proxy)
    while time.monotonic() < deadline:
        time.sleep(QUIET_INTERVAL)
        after = snapshot(landlord_proxy)
        if (after.holder_cpu - before.holder_cpu < QUIET_CPU
                and after.landlord_cpu - before.landlord_cpu < QUIET_CPU
                and after.in_progress == 0):
            return after
        before = after
    raise RuntimeError(f"the holder and the landlord were never idle together within {QUIET_TIMEOUT:g} s; "
                       "is --term too short for --leases?")


@dataclass
class Window:
    """What happened between two snapshots."""

    seconds: float
    holder_cpu: float
    landlord_cpu: float
    renewals: int
    calls: int

    @classmethod
    def between(cls, start: Snapshot, end: Snapshot) -> Window:
        return cls(end.wall - start.wall, end.holder_cpu - start.holder_cpu,
                   end.landlord_cpu - start.landlord_cpu, end.renewed - start.renewed,
                   end.renew_all_calls - start.renew_all_calls)

    def percent_of_core(self, cpu: float) -> float:
        return 100.0 * cpu / self.seconds if self.seconds > 0 else math.nan

    def us_per_renewal(self, cpu: float) -> float:
        return 1e6 * cpu / self.renewals if self.renewals else math.nan


def count_rounds(calls: list[list[float]], gap: float) -> list[list[list[float]]]:
    """Group ``renew_all`` calls ([start, end, asked, granted, margin]) into rounds.

    A call that starts more than ``gap`` seconds after the previous one ended
    opens a new round; the calls of one round follow one another closely.
    """
    rounds: list[list[list[float]]] = []
    last_end = -math.inf
    for call in sorted(calls):
        if call[0] - last_end > gap or not rounds:
            rounds.append([])
        rounds[-1].append(call)
        last_end = max(last_end, call[1])
    return rounds


@dataclass
class Setup:
    """What it took to get the leases into the manager."""

    rent_seconds: float
    rent_calls: int
    sync_term: float
    add_seconds: float
    add_holder_cpu: float


@dataclass
class Results:
    """Everything printed, and written with --json."""

    config: dict[str, Any]
    setup: Setup
    manager: Window
    baseline: Window       # the raw replay on Pyro5's default serializer
    baseline_same: Window  # the same on SAME_SERIALIZER
    rounds_by_renewals: float
    rounds_observed: int
    renew_all_calls_per_round: float
    mean_leases_per_call: float
    tightest_margin: float
    leases_lost: int
    lost_examples: list[str] = field(default_factory=list)
    projections: list[dict[str, float]] = field(default_factory=list)


def rent(landlord_proxy: Any, leases: int, chunk: int) -> tuple[list[LandlordLease], int]:
    """Rent ``leases`` leases of SETUP_TERM seconds in calls of at most ``chunk``; the leases and the calls made."""
    rented: list[LandlordLease] = []
    calls = 0
    while len(rented) < leases:
        rented.extend(landlord_proxy.rent_many(min(chunk, leases - len(rented)), SETUP_TERM))
        calls += 1
    return rented, calls


def synchronise(leases: list[LandlordLease], term: float) -> None:
    """Renew every lease for ``term`` seconds in as few calls as the landlord accepts, so they end together.

    Raises:
        LeaseMapError: some were not renewed.
    """
    # slices of MAX_BATCH leases, each LeaseMap sending its slice in calls of CALL_BATCH
    for i in range(0, len(leases), MAX_BATCH):
        LeaseMap(dict.fromkeys(leases[i:i + MAX_BATCH], term)).renew_all()


def wait_for_calls(landlord_proxy: Any, calls: int, timeout: float) -> None:
    """Wait until the landlord has finished ``calls`` renew_all calls in all.

    Raises:
        RuntimeError: it had not within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while landlord_proxy.stats()["renew_all_calls"] < calls:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the manager made no renewal within {timeout:g} s")
        time.sleep(QUIET_INTERVAL)


def replay_raw(landlord_proxy: Any, raw: Any, cookies: list[str], sizes: list[int]) -> Window:
    """A baseline: one raw ``echo_durations`` call through ``raw`` per recorded ``renew_all`` call, same sizes.

    Each call sends ``size`` real cookies and as many FOREVER durations (what
    the manager asks for here); the lists are built before the clock starts,
    so only the calls themselves are timed (both processes' CPU read through
    ``landlord_proxy``).
    """
    requests = []
    offset = 0
    for size in sizes:
        if offset + size > len(cookies):
            offset = 0
        requests.append((cookies[offset:offset + size], [FOREVER] * size))
        offset += size
    start = snapshot(landlord_proxy)
    for call_cookies, durations in requests:
        answer = raw.echo_durations(call_cookies, durations)
        if len(answer) != len(call_cookies):
            raise RuntimeError(f"echo_durations answered {len(answer)} floats for {len(call_cookies)} cookies")
    end = snapshot(landlord_proxy)
    window = Window.between(start, end)
    window.renewals = sum(sizes)  # nothing is renewed: count the leases sent, for "per lease" figures
    window.calls = len(sizes)
    return window


def project(us_per_renewal: float, leases: int, renew_after: float) -> list[dict[str, float]]:
    """The holder's CPU at longer terms, at the measured cost per renewal and the manager's schedule."""
    rows = []
    for term in PROJECTED_TERMS:
        interval = landlord.renewal_time(0.0, term, term, renew_after=renew_after)  # granted at 0: renewed then
        rows.append({"term": term, "renewed_every": interval,
                     "holder_percent_of_core": 100.0 * leases * us_per_renewal * 1e-6 / interval})
    return rows


def keep_alive(landlord_proxy: Any, args: argparse.Namespace) -> Results:
    """Rent, synchronise, hand the leases to a manager, measure a steady window, then the raw replay."""
    progress(f"renting {args.leases:,} leases...")
    started = time.monotonic()
    leases, rent_calls = rent(landlord_proxy, args.leases, args.chunk)
    rent_seconds = time.monotonic() - started

    sync_term = args.term + SYNC_MARGIN + ADD_SECONDS_PER_LEASE * args.leases
    progress(f"renewing them all to end in {sync_term:.1f} s, then handing them to the manager...")
    synchronise(leases, sync_term)
    landlord_proxy.use_term(args.term)  # every renewal from now on gets --term seconds

    lost: list[LeaseRenewalEvent] = []
    lost_lock = threading.Lock()

    def on_lost(event: LeaseRenewalEvent) -> None:
        with lost_lock:
            lost.append(event)

    manager = landlord.LeaseRenewalManager(renew_after=args.renew_after)
    try:
        calls_before = landlord_proxy.stats()["renew_all_calls"]
        started, cpu = time.monotonic(), time.process_time()
        for lease in leases:
            manager.renew_for(lease, FOREVER, on_lost)
        setup = Setup(rent_seconds, rent_calls, sync_term, time.monotonic() - started,
                      time.process_time() - cpu)

        # The window opens after the first round: from then on, renewals come at the term's pace.
        wait_for_calls(landlord_proxy, calls_before + 1, timeout=sync_term + QUIET_TIMEOUT)
        start = wait_until_quiet(landlord_proxy)
        progress(f"first round done; measuring for {args.seconds:g} s...")
        time.sleep(args.seconds)
        end = wait_until_quiet(landlord_proxy)
        managed = len(manager)
    finally:
        manager.close()
    window = Window.between(start, end)
    calls = landlord_proxy.calls_since(start.renew_all_calls)[:window.calls]
    interval = landlord.renewal_time(0.0, args.term, args.term, renew_after=args.renew_after)
    rounds = count_rounds(calls, gap=interval / 4)
    if managed + len(lost) != args.leases:
        raise RuntimeError(f"the manager holds {managed} leases and lost {len(lost)}, of {args.leases}")

    progress(f"replaying the {len(calls)} renew_all calls as raw Pyro5 calls, on {Pyro5.config.SERIALIZER} "
             f"then on {SAME_SERIALIZER}...")
    sizes = [int(call[2]) for call in calls]
    cookies = [lease.cookie for lease in leases]
    baseline = replay_raw(landlord_proxy, landlord_proxy, cookies, sizes)
    with Pyro5.api.Proxy(landlord_proxy._pyroUri) as same:
        same._pyroSerializer = SAME_SERIALIZER
        same._pyroTimeout = CALL_TIMEOUT
        baseline_same = replay_raw(landlord_proxy, same, cookies, sizes)

    config = {"leases": args.leases, "seconds": args.seconds, "term": args.term, "chunk": args.chunk,
              "renew_after": args.renew_after, "batch_window": 1.0, "max_batch": CALL_BATCH}
    rounds_by_renewals = window.renewals / args.leases
    return Results(
        config=config, setup=setup, manager=window, baseline=baseline, baseline_same=baseline_same,
        rounds_by_renewals=rounds_by_renewals,
        rounds_observed=len(rounds),
        renew_all_calls_per_round=len(calls) / rounds_by_renewals if rounds_by_renewals else math.nan,
        mean_leases_per_call=sum(sizes) / len(sizes) if sizes else math.nan,
        tightest_margin=min((call[4] for call in calls), default=math.nan),
        leases_lost=len(lost),
        lost_examples=[f"{event.lease!r}: {event.exception!r}" for event in lost[:5]],
        projections=project(window.us_per_renewal(window.holder_cpu), args.leases, args.renew_after),
    )


# -- the run -------------------------------------------------------------------------------


def notes(r: Results) -> list[str]:
    """What the table does not say: set-up, rounds, margins, both sides' CPU, the projection."""
    m, b, c = r.manager, r.baseline, r.config
    holder_us, landlord_us = m.us_per_renewal(m.holder_cpu), m.us_per_renewal(m.landlord_cpu)
    raw_lines = []
    for name, raw in ((Pyro5.config.SERIALIZER, b), (SAME_SERIALIZER, r.baseline_same)):
        raw_holder_us, raw_landlord_us = raw.us_per_renewal(raw.holder_cpu), raw.us_per_renewal(raw.landlord_cpu)
        raw_lines += [f"{f'raw Pyro5 call on {name}, CPU us per lease':<44} {raw_holder_us:>10.2f} "
                      f"{raw_landlord_us:>10.2f}",
                      f"{f'ratio renewal / raw call on {name}':<44} {ratio(holder_us, raw_holder_us):>10} "
                      f"{ratio(landlord_us, raw_landlord_us):>10}"]
    lines = [
        f"setup: rented {c['leases']:,} leases in {r.setup.rent_calls} calls in {r.setup.rent_seconds:.1f} s, "
        f"renewed them to end together in {r.setup.sync_term:.1f} s; renew_for x{c['leases']:,} took "
        f"{r.setup.add_seconds:.2f} s ({1e6 * r.setup.add_holder_cpu / c['leases']:.1f} us CPU per lease)",
        f"steady state: {m.seconds:.1f} s window, {m.renewals:,} renewals, {r.rounds_by_renewals:.1f} rounds "
        f"(renewals / leases), {r.rounds_observed} rounds observed, {r.renew_all_calls_per_round:.2f} renew_all "
        f"calls per round, {r.mean_leases_per_call:,.0f} leases per call",
        f"tightest margin: a lease renewed {r.tightest_margin:.2f} s before it would have expired "
        f"(the last lease of each call, renewed last, as the landlord saw it)",
        f"leases lost: {r.leases_lost}" + ("  <-- SHOULD BE 0; e.g. " + "; ".join(r.lost_examples)
                                           if r.leases_lost else ""),
        "",
        f"{'':<44} {'holder':>10} {'landlord':>10}",
        f"{'CPU % of one core':<44} {m.percent_of_core(m.holder_cpu):>9.1f}% "
        f"{m.percent_of_core(m.landlord_cpu):>9.1f}%",
        f"{'CPU us per lease renewal':<44} {holder_us:>10.2f} {landlord_us:>10.2f}",
        *raw_lines,
        f"(raw: the same {b.calls} calls of the same sizes, {b.renewals:,} cookies + FOREVER durations, "
        f"to a method returning as many floats; {b.seconds:.1f} s back to back on {Pyro5.config.SERIALIZER}, "
        f"then {r.baseline_same.seconds:.1f} s on {SAME_SERIALIZER})",
        "",
        "holder CPU projected to longer terms (same us per renewal, the manager's schedule):",
    ]
    return lines + [f"  term {row['term']:>6g} s: renewed every {row['renewed_every']:>7.1f} s -> "
                    f"{row['holder_percent_of_core']:6.2f}% of one core" for row in r.projections]


def ratio(ours: float, base: float) -> str:
    return f"{ours / base:.2f}x" if base > 0 else "n/a"


def measure(args: argparse.Namespace) -> Report:
    """Start the landlord, measure the manager then the raw baseline, stop the landlord."""
    server = ServerProcess(__file__, "landlord", "landlord")
    try:
        uri = server.uri()
        landlord.set_call_timeout(CALL_TIMEOUT)  # the manager's calls: 100,000 leases take a while
        with Pyro5.api.Proxy(uri) as landlord_proxy:
            landlord_proxy._pyroTimeout = CALL_TIMEOUT
            results = keep_alive(landlord_proxy, args)
    finally:
        server.stop()
    m, b, c = results.manager, results.baseline, results.config
    same = results.baseline_same
    figures = {
        "holder_percent_of_core": m.percent_of_core(m.holder_cpu),
        "landlord_percent_of_core": m.percent_of_core(m.landlord_cpu),
        "holder_us_per_renewal": m.us_per_renewal(m.holder_cpu),
        "landlord_us_per_renewal": m.us_per_renewal(m.landlord_cpu),
        "raw_holder_us_per_lease": b.us_per_renewal(b.holder_cpu),
        "raw_landlord_us_per_lease": b.us_per_renewal(b.landlord_cpu),
        "raw_same_holder_us_per_lease": same.us_per_renewal(same.holder_cpu),
        "raw_same_landlord_us_per_lease": same.us_per_renewal(same.landlord_cpu),
    }
    rows = [Row(f"keep {c['leases']:,} leases alive: holder CPU", figures["holder_percent_of_core"], None,
                "% of a core"),
            Row("holder CPU per renewal", figures["holder_us_per_renewal"],
                figures["raw_holder_us_per_lease"], "µs", baseline2=figures["raw_same_holder_us_per_lease"],
                **BASELINES),
            Row("leases lost", results.leases_lost, None, "leases", limit=0)]
    return Report(
        rows, notes=notes(results), extra=dict(asdict(results), figures=figures),
        problems=[f"{results.leases_lost:,} leases lost"] if results.leases_lost else [],
        title=f"LeaseRenewalManager keeping {c['leases']:,} leases on one landlord (another process) alive; term "
              f"{c['term']:g} s, renew_for(lease, FOREVER), manager defaults (renewed after {c['renew_after']:.3g} "
              f"of the term, batch window {c['batch_window']:g} s, max batch {c['max_batch']:,})")


BENCH = harness.Benchmark(
    "renewal", "CPU cost of a LeaseRenewalManager keeping many leases on one landlord (in another process) alive, "
    "on both sides, against raw Pyro5 calls of the same shape (on Pyro5's default serializer and on msgpack) "
    "measured in the same run.", rounds=None,
    modules=(landlord, Pyro5, serpent, msgpack), quick={"leases": 5000, "seconds": 4.0, "term": 3.0})
BENCH.option("--leases", positive_int, 100_000, "leases to keep alive")
BENCH.option("--seconds", positive_seconds, 30.0, "length of the measured steady state")
BENCH.option("--term", positive_seconds, 5.0, "the landlord's longest grant, in seconds; short, so that several "
             "renewal rounds fall in the window")
BENCH.option("--chunk", harness.at_most(MAX_BATCH), MAX_BATCH, "leases rented per call while setting up")
BENCH.parser.add_argument("--renew-after", type=float, default=RENEW_AFTER, metavar="SHARE",
                          help="renew once this share of the term has passed (default a third; 0.5: at half)")


if __name__ == "__main__":
    raise SystemExit(BENCH.main(measure, children={"landlord": serve}))
