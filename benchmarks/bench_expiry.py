"""Expiry: how promptly, how fast and at what idle cost a landlord frees expired leases (issue 5, item 5).

Per reaper (``sleeper``, ``polling`` at its default 1 s, ``lazy``), on an
in-process :class:`landlord.Landlord` and the real monotonic clock, with a
trickle thread renewing an unrelated lease every ``--period`` (what drives
the lazy reaper), once each:

(a) **expiry delay**: p50, p99 and max from a lease's scheduled expiration to
    its ``on_expire``, ``--short`` leases ending at random over
    ``[1 s, 1 s + --spread]`` among ``--long`` live ones;
(b) **mass expiry**: ``--burst`` leases granted on a paused clock so that
    they end at one instant; expirations per second, the delay to the first
    callback and the longest renew meanwhile;
(c) **idle CPU**: that population, before it ends, for ``--idle`` seconds.

The baseline, in the same run, is the *bare sleeper*: a dict + SortedList
(``bench_scale.py``'s), one lock and one thread asleep until the earliest
expiration, given the same leases, trickle and callbacks. It is the floor for
the sleeper's delays and for every reaper's rate. The method in full:
``benchmarks/README.md``; the options, table and JSON (with the raw delays of
(a) under ``samples``): ``harness.py``. Exit status 1 if a lease was never
freed. Not a test: pytest collects only ``tests/``.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import random
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import harness
import sortedcontainers
from harness import Report, Row, positive_int, positive_seconds, progress
from sortedcontainers import SortedList

import landlord
from landlord import SystemClock

REAPERS = ("sleeper", "polling", "lazy")
POLLING_INTERVAL = 1.0  # PollingReaper's default, which the "polling" name gets
ETCD_REVOKE_RATE = 1000  # etcd's default leaseRevokeRate; documented, not measured
ETCD_SOURCE = "leaseRevokeRate in etcd's server/lease/lessor.go; documented default, not measured here"
SLEEPER_P99_GOAL_MS = 1.0  # issue 15's goals, for the default reaper: p99 delay at 1M leases held
MASS_EXPIRY_GOAL = 1_000_000  # and expirations per second when a million end together
MAX_SAMPLES = 5000  # raw delays kept per reaper in the JSON
LONG_TERM = 3600.0  # the long leases of (a) and the trickle's lease
SHORT_LEAD = 1.0  # the earliest short lease of (a) ends this long after its grant


# -- clocks -------------------------------------------------------------------------


class PausableClock(SystemClock):
    """The real monotonic clock, stopped while a population is granted.

    ``monotonic()`` is ``time.monotonic()`` minus a constant; :meth:`pause`
    freezes it and :meth:`resume` lets it run on from where it stopped, so that
    leases granted with the same duration during a pause end together. Waits
    are real :class:`threading.Condition` waits; a wait that began during a
    pause may return early, which every caller of ``Clock.wait`` tolerates.
    """

    def __init__(self) -> None:
        super().__init__()
        self._offset = 0.0
        self._paused_at: float | None = None

    def monotonic(self) -> float:
        paused = self._paused_at
        if paused is not None:
            return paused
        return time.monotonic() - self._offset

    def pause(self) -> None:
        self._paused_at = time.monotonic() - self._offset

    def resume(self) -> None:
        paused = self._paused_at
        if paused is None:
            return
        self._offset = time.monotonic() - paused  # set before unfreezing: readers see one or the other
        self._paused_at = None

    def sleep_until(self, deadline: float) -> None:
        """Sleep (really) until ``monotonic()`` reaches ``deadline``; the clock must be running."""
        while (left := deadline - self.monotonic()) > 0:
            time.sleep(left)


# -- the subjects -------------------------------------------------------------------


class Subject(Protocol):
    """What the measurements need from a grantor: grant, renew, read an expiration, close."""

    name: str

    def grant(self, resource: Any, duration: float) -> str: ...
    def renew(self, cookie: str, duration: float) -> Any: ...
    def expiration_of(self, cookie: str) -> float: ...
    def close(self) -> None: ...


def fill(subject: Subject, resource: Any, duration: float, count: int) -> str:
    """Grant ``count`` leases on ``resource`` for ``duration``; return one of their cookies."""
    grant = subject.grant
    cookie = grant(resource, duration)
    for _ in range(count - 1):
        grant(resource, duration)
    return cookie


class LandlordSubject:
    """An in-process :class:`landlord.Landlord` with the given reaper; grants up to FOREVER."""

    def __init__(self, reaper: str, *, clock: landlord.Clock = landlord.SYSTEM_CLOCK,
                 on_expire: Callable[[Any], None]) -> None:
        self.name = reaper
        policy = landlord.LeaseDurationPolicy(maximum=landlord.FOREVER, default=LONG_TERM)
        self.landlord = landlord.Landlord(reaper=reaper, policy=policy, clock=clock,
                                          on_expire=on_expire)
        self._new_lease = self.landlord.new_lease

    def grant(self, resource: Any, duration: float) -> str:
        return self._new_lease(resource, duration).cookie

    def renew(self, cookie: str, duration: float) -> float:
        return self.landlord.renew(cookie, duration)

    def expiration_of(self, cookie: str) -> float:
        return self.landlord.manager.get(cookie).expiration

    def close(self) -> None:
        self.landlord.close()


class BareSleeper:
    """The baseline: dict + SortedList + one lock + one thread asleep until the earliest expiration.

    It does a sleeper reaper's job and nothing else: no validation, policy,
    lease objects or logging. Callbacks run outside the lock, as landlord's do.
    """

    name = "baseline"

    def __init__(self, *, clock: landlord.Clock = landlord.SYSTEM_CLOCK,
                 on_expire: Callable[[Any], None]) -> None:
        self._clock = clock
        self._on_expire = on_expire
        self._condition = threading.Condition()
        self._by_cookie: dict[str, tuple[float, Any]] = {}
        self._by_expiration: SortedList = SortedList()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="BareSleeper", daemon=True)
        self._thread.start()

    def grant(self, resource: Any, duration: float) -> str:
        cookie = secrets.token_urlsafe(16)
        expiration = self._clock.monotonic() + duration
        with self._condition:
            self._by_cookie[cookie] = (expiration, resource)
            self._by_expiration.add((expiration, cookie))
            if self._by_expiration[0][1] == cookie:  # the new earliest: wake the thread to re-aim
                self._condition.notify()
        return cookie

    def renew(self, cookie: str, duration: float) -> float:
        with self._condition:
            now = self._clock.monotonic()
            old, resource = self._by_cookie[cookie]
            if old <= now:
                raise KeyError(cookie)
            expiration = now + duration
            self._by_expiration.remove((old, cookie))
            self._by_expiration.add((expiration, cookie))
            self._by_cookie[cookie] = (expiration, resource)
            if self._by_expiration[0][1] == cookie:
                self._condition.notify()
        return duration

    def expiration_of(self, cookie: str) -> float:
        with self._condition:
            return self._by_cookie[cookie][0]

    def close(self) -> None:
        with self._condition:
            self._closed = True
            self._condition.notify()
        self._thread.join()

    def _run(self) -> None:
        clock, by_cookie, by_expiration = self._clock, self._by_cookie, self._by_expiration
        on_expire = self._on_expire
        while True:
            with self._condition:
                while not self._closed:
                    if by_expiration and by_expiration[0][0] <= clock.monotonic():
                        break
                    clock.wait(self._condition, by_expiration[0][0] if by_expiration else math.inf)
                if self._closed:
                    return
                now = clock.monotonic()
                due = []
                while by_expiration and by_expiration[0][0] <= now:
                    _, cookie = by_expiration.pop(0)
                    due.append(by_cookie.pop(cookie)[1])
            for resource in due:
                try:
                    on_expire(resource)
                except Exception:  # as the library: a failing callback does not stop the reaper
                    pass


def make_subject(kind: str, *, clock: landlord.Clock = landlord.SYSTEM_CLOCK,
                 on_expire: Callable[[Any], None]) -> Subject:
    """A reaper name gives a landlord with that reaper; ``"baseline"`` gives the bare sleeper."""
    if kind == "baseline":
        return BareSleeper(clock=clock, on_expire=on_expire)
    return LandlordSubject(kind, clock=clock, on_expire=on_expire)


# -- the trickle of uses ---------------------------------------------------------------


class Trickle:
    """A thread that renews one unrelated lease every ``period`` seconds, timing each call."""

    def __init__(self, subject: Subject, cookie: str, period: float) -> None:
        self._subject = subject
        self._cookie = cookie
        self._period = period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="Trickle", daemon=True)
        self.calls = 0
        self.longest = 0.0  # seconds, the slowest renew call

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        renew, cookie, period = self._subject.renew, self._cookie, self._period
        next_tick = time.monotonic()
        while not self._stop.is_set():
            started = time.perf_counter()
            renew(cookie, LONG_TERM)
            took = time.perf_counter() - started
            self.calls += 1
            if took > self.longest:
                self.longest = took
            next_tick += period
            now = time.monotonic()
            if next_tick < now:  # a call overran its tick: carry on from now, do not catch up
                next_tick = now
            self._stop.wait(next_tick - now)


# -- (a) expiry delay ------------------------------------------------------------------


class Due:
    """A short lease's resource: knows when its lease is scheduled to end."""

    __slots__ = ("expiration",)

    def __init__(self) -> None:
        self.expiration = math.inf


@dataclass
class DelayRun:
    """The expiry delays of one subject, in seconds, in the order the callbacks came."""

    kind: str
    delays: list[float]
    expected: int
    trickle_calls: int
    seconds: float  # from the first short grant to the last callback (or the give-up)


def measure_delays(kind: str, *, long: int, short: int, spread: float, period: float,
                   rng: random.Random) -> DelayRun:
    """(a): ``long`` live leases, ``short`` leases ending one by one; the delay of each callback."""
    delays: list[float] = []
    all_freed = threading.Event()
    monotonic = time.monotonic

    def on_expire(resource: Any) -> None:
        if type(resource) is Due:
            delays.append(monotonic() - resource.expiration)
            if len(delays) == short:
                all_freed.set()

    subject = make_subject(kind, on_expire=on_expire)
    try:
        keeper = subject.grant(None, LONG_TERM)
        for i in range(long):
            subject.grant(None, LONG_TERM + i % 1000)
        durations = [SHORT_LEAD + rng.uniform(0.0, spread) for _ in range(short)]
        gc.collect()
        trickle = Trickle(subject, keeper, period)
        trickle.start()
        started = monotonic()
        last = -math.inf
        for duration in durations:
            due = Due()
            cookie = subject.grant(due, duration)
            due.expiration = subject.expiration_of(cookie)
            last = max(last, due.expiration)
        give_up = last + POLLING_INTERVAL + 5.0
        all_freed.wait(max(0.0, give_up - monotonic()))
        seconds = monotonic() - started
        trickle.stop()
    finally:
        subject.close()
    return DelayRun(kind, list(delays), short, trickle.calls, seconds)


# -- (b) and (c): one population of a million leases -------------------------------------


class BurstCounter:
    """``on_expire`` for the burst: counts calls, stamps the first and the ``target``-th."""

    __slots__ = ("clock", "target", "count", "first", "last", "done")

    def __init__(self, clock: PausableClock, target: int) -> None:
        self.clock = clock
        self.target = target
        self.count = 0
        self.first = math.nan
        self.last = math.nan
        self.done = threading.Event()

    def __call__(self, resource: Any) -> None:
        self.count += 1
        if self.count == 1:
            self.first = self.clock.monotonic()
        if self.count == self.target:
            self.last = self.clock.monotonic()
            self.done.set()


@dataclass
class BurstRun:
    """Idle CPU and mass expiry of one subject holding ``leases`` leases."""

    kind: str
    leases: int
    fill_seconds: float
    idle_seconds: float = math.nan
    idle_cpu_seconds: float = math.nan
    first_delay: float = math.nan  # seconds from the common expiration to the first on_expire
    total: float = math.nan  # seconds from the common expiration to the last on_expire
    freed: int = 0
    longest_renew: float = math.nan  # seconds, the trickle's slowest call during the burst

    @property
    def idle_cpu_percent(self) -> float:
        return 100.0 * self.idle_cpu_seconds / self.idle_seconds

    @property
    def rate(self) -> float:
        return self.freed / self.total if self.freed == self.leases else math.nan


def measure_burst(kind: str, *, leases: int, idle: float, period: float,
                  measure_idle: bool = True) -> BurstRun:
    """(c) then (b): hold ``leases`` leases that all end together; idle CPU before, rate at the end."""
    clock = PausableClock()
    counter = BurstCounter(clock, leases)
    subject = make_subject(kind, clock=clock, on_expire=counter)
    try:
        keeper = subject.grant(None, LONG_TERM)
        duration = (idle if measure_idle else 0.0) + 1.5  # seconds from the resume
        clock.pause()
        started = time.perf_counter()
        first = fill(subject, None, duration, leases)
        run = BurstRun(kind, leases, time.perf_counter() - started)
        expiration = subject.expiration_of(first)
        gc.collect()
        clock.resume()

        if measure_idle:
            time.sleep(0.2)  # let a reaper that began a wait during the pause re-aim
            cpu, wall = time.process_time(), time.monotonic()
            time.sleep(idle)
            run.idle_cpu_seconds = time.process_time() - cpu
            run.idle_seconds = time.monotonic() - wall
            if counter.count:
                raise RuntimeError(f"{kind}: leases expired during the idle window; "
                                   f"the population was not idle")

        clock.sleep_until(expiration - 0.05)
        trickle = Trickle(subject, keeper, period)
        trickle.start()
        counter.done.wait(POLLING_INTERVAL + 60.0)
        trickle.stop()
        run.freed = counter.count
        run.first_delay = counter.first - expiration
        run.total = counter.last - expiration
        run.longest_renew = trickle.longest
    finally:
        subject.close()
    del subject
    gc.collect()
    return run


# -- figures -----------------------------------------------------------------------------


def percentile(ordered: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0 < q <= 1) of an ascending sequence."""
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def downsample(values: list[float], limit: int = MAX_SAMPLES) -> list[float]:
    """At most ``limit`` values, evenly strided, keeping the order."""
    if len(values) <= limit:
        return list(values)
    step = len(values) / limit
    return [values[int(i * step)] for i in range(limit)]


def delay_rows(runs: dict[str, DelayRun]) -> list[Row]:
    base = runs.get("baseline")
    base_sorted = sorted(base.delays) if base else []
    rows = []
    for kind, run in runs.items():
        if kind == "baseline":
            continue
        ordered = sorted(run.delays)
        for label, q in (("p50", 0.50), ("p99", 0.99), ("max", 1.0)):
            baseline = percentile(base_sorted, q) * 1e3 if kind == "sleeper" and base else None
            limit = SLEEPER_P99_GOAL_MS if (kind, label) == ("sleeper", "p99") else None
            rows.append(Row(f"expiry delay {label} ({kind})", percentile(ordered, q) * 1e3,
                            baseline, "ms", limit=limit))
    return rows


def burst_rows(runs: dict[str, BurstRun]) -> list[Row]:
    base = runs.get("baseline")
    rows = []
    for kind, run in runs.items():
        if kind == "baseline":
            continue
        n = f"{run.leases:,}"
        rows += [
            Row(f"expirations per second, {n} due together ({kind})", run.rate,
                base.rate if base else None, "expirations/s",
                limit=MASS_EXPIRY_GOAL if kind == "sleeper" else None),
            Row(f"first on_expire after the common expiration ({kind})", run.first_delay * 1e3,
                base.first_delay * 1e3 if base and kind == "sleeper" else None, "ms"),
            Row(f"longest renew during the mass expiry ({kind})", run.longest_renew * 1e3,
                base.longest_renew * 1e3 if base else None, "ms"),
        ]
    return rows


def idle_rows(runs: dict[str, BurstRun]) -> list[Row]:
    return [Row(f"idle CPU, {run.leases:,} leases held ({kind})", run.idle_cpu_percent, None,
                "% of one core")
            for kind, run in runs.items() if kind != "baseline" and not math.isnan(run.idle_seconds)]


def load_average() -> list[float] | None:
    """The system's 1, 5 and 15 minute load averages, where the platform has them."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


# -- the run ---------------------------------------------------------------------------------


def parse_reapers(text: str) -> list[str]:
    chosen = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [r for r in chosen if r not in REAPERS]
    if not chosen or unknown:
        raise argparse.ArgumentTypeError(f"choose among {', '.join(REAPERS)}; got {text!r}")
    return list(dict.fromkeys(chosen))


BENCH = harness.Benchmark(
    "expiry", "Per reaper, on an in-process landlord.Landlord and the real clock: (a) the delay from expiration "
    "to on_expire with 1,000,000 live leases, (b) expirations per second when 1,000,000 end together, (c) idle CPU "
    "holding 1,000,000 leases; against a bare sleeper thread over a dict + SortedList, measured in the same run.",
    rounds=None, modules=(landlord, sortedcontainers),
    quick={"long": 10_000, "short": 200, "spread": 1.0, "burst": 20_000, "idle": 1.0})
BENCH.option("--reapers", parse_reapers, ",".join(REAPERS), "comma-separated reapers to measure")
BENCH.option("--long", positive_int, 1_000_000,
             "(a) live long leases held while the short ones expire (a million: issue 15 asks for the p99 there)")
BENCH.option("--short", positive_int, 2000, "(a) short leases whose expiry delays are measured")
BENCH.option("--spread", positive_seconds, 6.0, "(a) the short leases end at random over [1 s, 1 s + SPREAD]")
BENCH.option("--period", positive_seconds, 0.01, "seconds between the trickle's renewals of an unrelated lease, which "
             "is what drives the lazy reaper")
BENCH.option("--burst", positive_int, 1_000_000, "(b, c) leases that end together, held idle first")
BENCH.option("--idle", positive_seconds, 10.0, "(c) seconds of the idle CPU window")
BENCH.parser.add_argument("--no-baseline", dest="baseline", action="store_false",
                          help="skip the bare-sleeper baseline")
BENCH.parser.add_argument("--seed", type=int, default=0, help="seed of the short leases' terms")


def measure(args: argparse.Namespace) -> Report:
    load_before = load_average()
    kinds = list(args.reapers) + (["baseline"] if args.baseline else [])
    delays: dict[str, DelayRun] = {}
    for kind in kinds:
        progress(f"(a) {kind}: {args.long:,} long leases, {args.short:,} expiring over "
                 f"{SHORT_LEAD:g}-{SHORT_LEAD + args.spread:g} s...")
        delays[kind] = measure_delays(kind, long=args.long, short=args.short, spread=args.spread,
                                      period=args.period, rng=random.Random(args.seed))
    bursts: dict[str, BurstRun] = {}
    for kind in kinds:
        idle = kind != "baseline"
        progress(f"(b{', c' if idle else ''}) {kind}: granting {args.burst:,} leases"
                 f"{f', idle {args.idle:g} s' if idle else ''}, then all expire...")
        bursts[kind] = measure_burst(kind, leases=args.burst, idle=args.idle, period=args.period,
                                     measure_idle=idle)
    problems = [f"(a) {k}: {len(r.delays)} of {r.expected} short leases freed"
                for k, r in delays.items() if len(r.delays) != r.expected]
    problems += [f"(b) {k}: {r.freed:,} of {r.leases:,} leases freed" for k, r in bursts.items() if r.freed != r.leases]
    title = [
        "expiry, in-process landlord.Landlord on the real clock; baseline = bare sleeper (dict + SortedList, one "
        "thread)",
        f"(a) {args.long:,} long leases live, {args.short:,} short ones ending at random over "
        f"{SHORT_LEAD:g}-{SHORT_LEAD + args.spread:g} s; polling interval {POLLING_INTERVAL:g} s",
        f"    trickle: one renew of an unrelated lease every {args.period * 1e3:g} ms, for every reaper (for lazy, "
        "the delay is until that next use)",
        f"(b) {args.burst:,} leases granted with one duration on a paused clock, so all end at one instant; "
        "rate = leases / (last on_expire - expiration)",
        f"(c) process CPU over {args.idle:g} s with nothing due and no use, % of one core"]
    notes = [f"etcd, for context: {ETCD_REVOKE_RATE:,} lease revocations per second by default ({ETCD_SOURCE})"]
    notes += [f"fill {kind}: {run.leases:,} grants in {run.fill_seconds:.1f} s "
              f"({run.leases / run.fill_seconds:,.0f}/s)" for kind, run in bursts.items()]
    return Report(
        delay_rows(delays) + burst_rows(bursts) + idle_rows(bursts), title="\n".join(title), notes=notes,
        problems=problems, machine={"load_average": {"start": load_before, "end": load_average()}},
        extra={"samples": {kind: [d * 1e3 for d in downsample(run.delays)] for kind, run in delays.items()},
               "reference": {"metric": "etcd lease revocations per second (default)", "value": ETCD_REVOKE_RATE,
                             "unit": "expirations/s", "measured": False, "source": ETCD_SOURCE}})


if __name__ == "__main__":
    raise SystemExit(BENCH.main(measure))
