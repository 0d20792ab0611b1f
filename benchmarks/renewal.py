"""What keeping many leases alive costs: a LeaseRenewalManager against a landlord in another process.

Issue 3 asks for the figure: "Keeping 100,000 leases on one landlord alive
must cost a small fraction of one core; measure it and report the figure."

What is measured
----------------
A landlord runs in a separate process (this script started again with a
hidden ``--serve`` flag: a Pyro5 daemon serving a :class:`landlord.Landlord`
subclass). This process, the *holder*, sets up in three steps:

1. rent ``--leases`` leases in calls of ``--chunk`` (on a long first term:
   renting 100,000 leases takes seconds);
2. renew them all in one batch so that they end together, a little later
   than the time step 3 needs, and switch the landlord to granting at most
   ``--term`` seconds from then on;
3. hand every lease to one :class:`landlord.LeaseRenewalManager` (default
   settings) with ``renew_for(lease, FOREVER)``.

The manager's first round then renews them all together, and every round
after it comes at the pace of ``--term``: short terms make several rounds
happen in ``--seconds``. The measured window opens at a quiet moment after
that first round and closes at a quiet moment ``--seconds`` later ("quiet":
neither process used CPU for a tenth of a second, so no round was in
flight). Over it we read:

* the holder's CPU seconds (``time.process_time()``: every thread of this process);
* the landlord's CPU seconds (its own ``time.process_time()``, asked over Pyro5);
* the renewals the landlord granted and its ``renew_all`` calls (it counts them);
* the leases lost (calls of the manager's listener): must be 0;
* the tightest margin: how long before its end the last lease of each
  ``renew_all`` call (renewed last) was renewed, as the landlord saw it.

and print each side's CPU as a percentage of one core and in microseconds per
lease renewal, the renewal rounds (renewals / leases, and the bursts of
``renew_all`` calls the landlord saw) and the calls per round.

Why a baseline
--------------
Microseconds depend on the machine, so the same run also measures the
floor: a raw Pyro5 call of the same shape. The holder sends the same cookies
and durations, in calls of exactly the sizes the manager's ``renew_all``
calls had in the window, to an exposed method on the same daemon that does
nothing but return a list of that many floats. Its CPU per lease, on both
sides, is what moving the data costs; the ratio manager / raw is what the
renewal manager (scheduling, bookkeeping, checking the answers) and the
landlord (validation, policy, expiration index) add on top.

The CPU a holder spends is per *renewal*, so the percentage of a core
scales with how often leases are renewed: the script also projects it to
longer terms with the manager's own schedule (:func:`landlord.renewal_time`).

Run ``python benchmarks/renewal.py --help`` for the options. This file is not
a test: pytest collects only ``tests/``.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import Pyro5
import Pyro5.api
import serpent
from common import (  # the benchmarks' shared pieces
    ServerProcess,
    machine_info,
    positive_int,
    positive_seconds,
    serve_forever,
    stop_on_sigterm,
)

import landlord
import landlord.renewal
from landlord import FOREVER, Landlord, LandlordLease, LeaseDurationPolicy, LeaseMap, LeaseRenewalEvent
from landlord.grantor import MAX_BATCH
from landlord.landlordlease import CALL_BATCH

DEFAULT_LEASES = 100_000
DEFAULT_SECONDS = 30.0
DEFAULT_TERM = 5.0
DEFAULT_CHUNK = 10_000
PROJECTED_TERMS = (60.0, 300.0, 3600.0)
RENEW_AFTER = landlord.renewal.RENEW_AFTER  # the manager's default share of the term, to project and group rounds

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


def serve() -> int:
    """The landlord process: serve a BenchLandlord on loopback until SIGTERM or Ctrl-C."""
    return serve_forever(BenchLandlord())


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
    baseline: Window
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
    # a LeaseMap sends all its leases of one landlord in one call, and the
    # landlord refuses calls of more than MAX_BATCH: hence the slices
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


def replay_raw(landlord_proxy: Any, cookies: list[str], sizes: list[int]) -> Window:
    """The baseline: one raw ``echo_durations`` call per recorded ``renew_all`` call, same sizes.

    Each call sends ``size`` real cookies and as many FOREVER durations (what
    the manager asks for here); the lists are built before the clock starts,
    so only the calls themselves are timed.
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
        answer = landlord_proxy.echo_durations(call_cookies, durations)
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


def run(args: argparse.Namespace) -> Results:
    """Start the landlord, measure the manager then the raw baseline, stop the landlord."""
    server = ServerProcess(__file__, "--serve", "landlord")
    try:
        uri = server.uri()
        landlord.set_call_timeout(CALL_TIMEOUT)  # the manager's calls: 100,000 leases take a while
        with Pyro5.api.Proxy(uri) as landlord_proxy:
            landlord_proxy._pyroTimeout = CALL_TIMEOUT
            return measure(landlord_proxy, args)
    finally:
        status = server.stop()
        if status is None:
            print("warning: the landlord ignored SIGTERM and had to be killed", file=sys.stderr)


def measure(landlord_proxy: Any, args: argparse.Namespace) -> Results:
    progress = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731

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

    progress(f"replaying the {len(calls)} renew_all calls as raw Pyro5 calls...")
    sizes = [int(call[2]) for call in calls]
    baseline = replay_raw(landlord_proxy, [lease.cookie for lease in leases], sizes)

    config = {"leases": args.leases, "seconds": args.seconds, "term": args.term, "chunk": args.chunk,
              "renew_after": args.renew_after, "batch_window": 1.0, "max_batch": CALL_BATCH}
    rounds_by_renewals = window.renewals / args.leases
    return Results(
        config=config, setup=setup, manager=window, baseline=baseline,
        rounds_by_renewals=rounds_by_renewals,
        rounds_observed=len(rounds),
        renew_all_calls_per_round=len(calls) / rounds_by_renewals if rounds_by_renewals else math.nan,
        mean_leases_per_call=sum(sizes) / len(sizes) if sizes else math.nan,
        tightest_margin=min((call[4] for call in calls), default=math.nan),
        leases_lost=len(lost),
        lost_examples=[f"{event.lease!r}: {event.exception!r}" for event in lost[:5]],
        projections=project(window.us_per_renewal(window.holder_cpu), args.leases, args.renew_after),
    )


# -- output ------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return machine_info(landlord, Pyro5, serpent)


def ratio(ours: float, base: float) -> str:
    return f"{ours / base:.2f}x" if base > 0 else "n/a"


def format_results(r: Results, info: dict[str, Any], wall: float) -> str:
    m, b, c = r.manager, r.baseline, r.config
    holder_us, landlord_us = m.us_per_renewal(m.holder_cpu), m.us_per_renewal(m.landlord_cpu)
    raw_holder_us, raw_landlord_us = b.us_per_renewal(b.holder_cpu), b.us_per_renewal(b.landlord_cpu)
    lines = [
        f"LeaseRenewalManager keeping {c['leases']:,} leases on one landlord (another process) alive; "
        f"term {c['term']:g} s, renew_for(lease, FOREVER), manager defaults "
        f"(renewed after {c['renew_after']:.3g} of the term, batch window {c['batch_window']:g} s, "
        f"max batch {c['max_batch']:,})",
        f"setup: rented {c['leases']:,} leases in {r.setup.rent_calls} calls in {r.setup.rent_seconds:.1f} s, "
        f"renewed them to end together in {r.setup.sync_term:.1f} s; "
        f"renew_for x{c['leases']:,} took {r.setup.add_seconds:.2f} s "
        f"({1e6 * r.setup.add_holder_cpu / c['leases']:.1f} us CPU per lease)",
        f"steady state: {m.seconds:.1f} s window, {m.renewals:,} renewals, "
        f"{r.rounds_by_renewals:.1f} rounds (renewals / leases), {r.rounds_observed} rounds observed, "
        f"{r.renew_all_calls_per_round:.2f} renew_all calls per round, "
        f"{r.mean_leases_per_call:,.0f} leases per call",
        f"tightest margin: a lease renewed {r.tightest_margin:.2f} s before it would have expired "
        f"(the last lease of each call, renewed last, as the landlord saw it)",
        f"leases lost: {r.leases_lost}" + ("" if not r.leases_lost else
                                           "  <-- SHOULD BE 0; e.g. " + "; ".join(r.lost_examples)),
        "",
        f"{'':<36} {'holder':>10} {'landlord':>10}",
        f"{'CPU % of one core':<36} {m.percent_of_core(m.holder_cpu):>9.1f}% "
        f"{m.percent_of_core(m.landlord_cpu):>9.1f}%",
        f"{'CPU us per lease renewal':<36} {holder_us:>10.2f} {landlord_us:>10.2f}",
        f"{'raw Pyro5 call, CPU us per lease':<36} {raw_holder_us:>10.2f} {raw_landlord_us:>10.2f}",
        f"{'ratio renewal / raw call':<36} {ratio(holder_us, raw_holder_us):>10} "
        f"{ratio(landlord_us, raw_landlord_us):>10}",
        f"(raw: the same {b.calls} calls of the same sizes, {b.renewals:,} cookies + FOREVER durations, "
        f"to a method returning as many floats; {b.seconds:.1f} s back to back)",
        "",
        "holder CPU projected to longer terms (same us per renewal, the manager's schedule):",
    ]
    for row in r.projections:
        lines.append(f"  term {row['term']:>6g} s: renewed every {row['renewed_every']:>7.1f} s -> "
                     f"{row['holder_percent_of_core']:6.2f}% of one core")
    lines += [
        "",
        f"machine: {info['platform']} ({info['processor']}), {info['cpu_count']} CPUs",
        f"python:  {info['python']}; landlord {info['landlord']}, Pyro5 {info['Pyro5']}, "
        f"serpent {info['serpent']}",
        f"wall time: {wall:.1f} s",
    ]
    return "\n".join(lines)


def write_json(path: str, results: Results, info: dict[str, Any], wall: float) -> None:
    """Write the figures as JSON to ``path``."""
    m, b = results.manager, results.baseline
    report = asdict(results)
    report["figures"] = {
        "holder_percent_of_core": m.percent_of_core(m.holder_cpu),
        "landlord_percent_of_core": m.percent_of_core(m.landlord_cpu),
        "holder_us_per_renewal": m.us_per_renewal(m.holder_cpu),
        "landlord_us_per_renewal": m.us_per_renewal(m.landlord_cpu),
        "raw_holder_us_per_lease": b.us_per_renewal(b.holder_cpu),
        "raw_landlord_us_per_lease": b.us_per_renewal(b.landlord_cpu),
    }
    figures = report["figures"]
    # the rows every benchmark writes, for run_all's one table; ratio > 1: landlord does better
    report["name"] = "renewal"
    report["rows"] = [
        {"metric": f"keep {results.config.get('leases', 0):,} leases alive: holder CPU", "landlord":
         figures["holder_percent_of_core"], "baseline": None, "unit": "% of a core", "ratio": None,
         "goal": None, "met": None},
        {"metric": "holder CPU per renewal vs raw call", "landlord": figures["holder_us_per_renewal"],
         "baseline": figures["raw_holder_us_per_lease"], "unit": "µs", "ratio":
         figures["raw_holder_us_per_lease"] / figures["holder_us_per_renewal"], "goal": None, "met": None},
        {"metric": "leases lost", "landlord": results.leases_lost, "baseline": None, "unit": "leases",
         "ratio": None, "goal": 0, "met": results.leases_lost == 0},
    ]
    report["machine"] = info
    report["wall_seconds"] = wall
    with open(path, "w", encoding="utf-8") as out:
        json.dump(report, out, indent=2)
        out.write("\n")


# -- command line --------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="CPU cost of a LeaseRenewalManager keeping many leases on one landlord (in another "
                    "process) alive, on both sides, against a raw Pyro5 call of the same shape "
                    "measured in the same run.")
    parser.add_argument("--leases", type=positive_int, default=DEFAULT_LEASES,
                        help="leases to keep alive (default: %(default)s)")
    parser.add_argument("--seconds", type=positive_seconds, default=DEFAULT_SECONDS,
                        help="length of the measured steady state (default: %(default)s)")
    parser.add_argument("--term", type=positive_seconds, default=DEFAULT_TERM,
                        help="the landlord's longest grant, in seconds; short, so that several renewal "
                             "rounds fall in the window (default: %(default)s)")
    parser.add_argument("--chunk", type=positive_int, default=DEFAULT_CHUNK,
                        help="leases rented per call while setting up (default: %(default)s)")
    parser.add_argument("--renew-after", type=float, default=RENEW_AFTER, metavar="SHARE",
                        help="renew once this share of the term has passed (default a third; 0.5: at half)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the landlord process
    args = parser.parse_args(argv)
    if args.chunk > MAX_BATCH:
        parser.error(f"--chunk is at most {MAX_BATCH}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve:
        return serve()
    signal.signal(signal.SIGTERM, stop_on_sigterm)  # so that run() stops the landlord on SIGTERM too
    started = time.monotonic()
    try:
        results = run(args)
    except KeyboardInterrupt:
        print("interrupted; the landlord was stopped", file=sys.stderr)
        return 130
    wall = time.monotonic() - started
    info = machine()
    print(format_results(results, info, wall))
    if args.json:
        write_json(args.json, results, info, wall)
    return 0 if results.leases_lost == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
