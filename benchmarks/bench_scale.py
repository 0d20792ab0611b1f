"""How the grantor's bookkeeping scales: time per operation and memory per lease, against a bare structure.

An in-process :class:`landlord.Landlord` (no daemon: the bookkeeping alone),
filled with N leases for each N in ``--sizes``, times ``grant``
(``new_lease``), ``renew``, ``renew_all`` (in batches of ``--batch``, per
lease) and ``cancel`` at that population, ``--sample`` operations a section,
plus the mean grant while filling. Durations vary so that every renewal moves
its lease in the expiration index; a round leaves the population at N. Below
``--sample`` leases the sections are shorter and repeated more, so every size
times as many operations.

The baseline, same operations in the same order, in turns: a ``dict`` of
``secrets.token_urlsafe(16)`` cookies and a ``sortedcontainers.SortedList``
of ``(expiration, cookie)``, the minimal structure that does the job. Printed
besides: growth from the smallest size to the largest next to log n, and
(unless ``--no-memory``) bytes per lease under tracemalloc. The method in
full: ``benchmarks/README.md``; the options, rounds, table and JSON:
``harness.py``. Not a test: pytest collects only ``tests/``.
"""

from __future__ import annotations

import argparse
import gc
import math
import random
import secrets
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import harness
import sortedcontainers
from harness import Report, Row, compare, positive_int, progress
from sortedcontainers import SortedList

import landlord
from landlord.grantor.landlord import MAX_BATCH

REAPERS = ("lazy", "sleeper", "polling")
OPS = ("fill", "grant", "renew", "renew_all", "cancel")
GROWTH_OPS = ("grant", "renew", "renew_all", "cancel")
UNIT = "µs/op"
MEMORY_GOAL = 200.0  # bytes of grantor state per lease, at a million leases (issue 15)
GOALS = {"grant": 0.8, "renew": 0.8}  # bare structure's time / landlord's, at every size (issue 26 names 1,000)

# Every lease is on this one object, so memory figures count bookkeeping only.
RESOURCE = object()


# -- the two subjects ---------------------------------------------------------------


class BaselineGrantor:
    """The minimal structure doing the grantor's job, to measure landlord against.

    A dict from cookie to ``(expiration, resource)`` and a sorted list of
    ``(expiration, cookie)``; grant inserts, renew re-keys, cancel deletes,
    and an expired lease is not renewable. No validation, policy or locking.
    """

    __slots__ = ("_by_cookie", "_by_expiration")

    def __init__(self) -> None:
        self._by_cookie: dict[str, tuple[float, Any]] = {}
        self._by_expiration: SortedList = SortedList()

    def grant(self, resource: Any, duration: float) -> str:
        cookie = secrets.token_urlsafe(16)
        expiration = time.monotonic() + duration
        self._by_cookie[cookie] = (expiration, resource)
        self._by_expiration.add((expiration, cookie))
        return cookie

    def renew(self, cookie: str, duration: float) -> float:
        now = time.monotonic()
        old, resource = self._by_cookie[cookie]
        if old <= now:
            raise KeyError(cookie)
        expiration = now + duration
        self._by_expiration.remove((old, cookie))
        self._by_expiration.add((expiration, cookie))
        self._by_cookie[cookie] = (expiration, resource)
        return duration

    def renew_all(self, cookies: Sequence[str], durations: Sequence[float]) -> list[float]:
        granted: list[float] = []
        for cookie, duration in zip(cookies, durations):
            try:
                granted.append(self.renew(cookie, duration))
            except KeyError:
                granted.append(-1.0)
        return granted

    def cancel(self, cookie: str) -> None:
        expiration, _ = self._by_cookie.pop(cookie)
        self._by_expiration.remove((expiration, cookie))


@dataclass
class Subject:
    """One grantor under test, as the bound methods the timed loops call."""

    name: str
    grant: Callable[[Any, float], Any]
    renew: Callable[[str, float], Any]
    renew_all: Callable[[list[str], list[float]], Any]
    cancel: Callable[[str], Any]
    cookie_of: Callable[[Any], str]
    close: Callable[[], None]


def make_landlord(reaper: str) -> Subject:
    """A fresh in-process landlord that grants up to FOREVER, 3600 s by default."""
    policy = landlord.LeaseDurationPolicy(maximum=landlord.FOREVER, default=3600)
    grantor = landlord.Landlord(reaper=reaper, policy=policy)
    return Subject("landlord", grantor.new_lease, grantor.renew, grantor.renew_all,
                   grantor.cancel, lambda lease: lease.cookie, grantor.close)


def make_baseline() -> Subject:
    """A fresh baseline grantor (its grants hand out the bare cookie)."""
    grantor = BaselineGrantor()
    return Subject("baseline", grantor.grant, grantor.renew, grantor.renew_all,
                   grantor.cancel, lambda cookie: cookie, lambda: None)


# -- the workload ---------------------------------------------------------------------


def durations_for(count: int, offset: int = 0) -> list[float]:
    """``count`` lease durations of 3600 s to 4599 s, varied so the sorted index works."""
    return [float(3600 + (offset + i) % 1000) for i in range(count)]


@dataclass
class Round:
    """The operations of one round, by position in the live-cookie list, shared by both subjects."""

    grant_durations: list[float]
    renew_positions: list[int]
    renew_durations: list[float]
    batch_positions: list[int]
    batch_durations: list[float]
    cancel_positions: list[int]


def plan_round(size: int, sample: int, rng: random.Random) -> Round:
    """Random positions (distinct within each op) and varied durations for one round."""
    return Round(
        grant_durations=durations_for(sample, rng.randrange(1000)),
        renew_positions=rng.sample(range(size), sample),
        renew_durations=durations_for(sample, rng.randrange(1000)),
        batch_positions=rng.sample(range(size), sample),
        batch_durations=durations_for(sample, rng.randrange(1000)),
        cancel_positions=rng.sample(range(size), sample),
    )


# -- timed sections (one job each: gc.collect(), then time one loop) --------------------


Batches = list[tuple[list[str], list[float]]]


def time_grants(grant: Callable[[Any, float], Any],
                durations: list[float]) -> tuple[float, list[Any]]:
    """Seconds to grant one lease per duration, and what the grants returned."""
    granted: list[Any] = []
    append = granted.append
    resource = RESOURCE
    gc.collect()
    start = time.perf_counter()
    for duration in durations:
        append(grant(resource, duration))
    return time.perf_counter() - start, granted


def time_renews(renew: Callable[[str, float], Any], cookies: list[str],
                durations: list[float]) -> float:
    """Seconds to renew each cookie once, one call each."""
    gc.collect()
    start = time.perf_counter()
    for cookie, duration in zip(cookies, durations):
        renew(cookie, duration)
    return time.perf_counter() - start


def time_renew_batches(renew_all: Callable[[list[str], list[float]], Any],
                       batches: Batches) -> float:
    """Seconds to renew every batch, one call per batch."""
    gc.collect()
    start = time.perf_counter()
    for cookies, durations in batches:
        renew_all(cookies, durations)
    return time.perf_counter() - start


def time_cancels(cancel: Callable[[str], Any], cookies: list[str]) -> float:
    """Seconds to cancel each cookie, one call each."""
    gc.collect()
    start = time.perf_counter()
    for cookie in cookies:
        cancel(cookie)
    return time.perf_counter() - start


# -- running the timing pass -------------------------------------------------------------


def split_batches(cookies: list[str], durations: list[float], batch: int) -> Batches:
    """``cookies`` and ``durations`` cut into consecutive batches of at most ``batch``."""
    return [(cookies[i:i + batch], durations[i:i + batch]) for i in range(0, len(cookies), batch)]


def fill(subject: Subject, size: int) -> tuple[float, list[str]]:
    """Grant ``size`` leases; return the seconds it took and their cookies."""
    elapsed, granted = time_grants(subject.grant, durations_for(size))
    return elapsed, [subject.cookie_of(g) for g in granted]


def run_round(subject: Subject, live: list[str], plan: Round, batch: int) -> dict[str, float]:
    """Time one round on ``subject``; return seconds per op. ``live`` is updated in place."""
    seconds: dict[str, float] = {}
    seconds["grant"], granted = time_grants(subject.grant, plan.grant_durations)
    new_cookies = [subject.cookie_of(g) for g in granted]
    del granted
    seconds["renew"] = time_renews(subject.renew, [live[i] for i in plan.renew_positions],
                                   plan.renew_durations)
    batches = split_batches([live[i] for i in plan.batch_positions], plan.batch_durations, batch)
    seconds["renew_all"] = time_renew_batches(subject.renew_all, batches)
    seconds["cancel"] = time_cancels(subject.cancel, [live[i] for i in plan.cancel_positions])
    for position, cookie in zip(plan.cancel_positions, new_cookies):
        live[position] = cookie
    return seconds


def time_size(size: int, *, reaper: str, sample: int, batch: int, rounds: int, seed: int) -> list[Row]:
    """The timing pass at one size: fill both subjects, then rounds of every op, the subjects taking turns.

    A size below ``sample`` gets proportionally more (shorter) rounds, so that
    every size times about ``rounds * sample`` operations.
    """
    repeats = rounds * math.ceil(sample / min(size, sample))
    sample = min(size, sample)
    subjects = [make_landlord(reaper), make_baseline()]
    fills: dict[str, float] = {}
    live: dict[str, list[str]] = {}
    try:
        for subject in subjects:
            elapsed, live[subject.name] = fill(subject, size)
            fills[subject.name] = 1e6 * elapsed / size
        rng = random.Random(seed + size)
        plans = [plan_round(size, sample, rng) for _ in range(repeats)]  # the same operations for both

        def side(subject: Subject) -> Callable[[], dict[str, float]]:
            todo = iter(plans)
            return lambda: {op: 1e6 * seconds / sample
                            for op, seconds in run_round(subject, live[subject.name], next(todo), batch).items()}

        figures = harness.alternate({subject.name: side(subject) for subject in subjects}, repeats)
    finally:
        for subject in subjects:
            subject.close()
    rows = [compare(f"fill at {size:,} leases", UNIT, [fills["landlord"]], [fills["baseline"]],
                    extra={"size": size, "op": "fill"})]
    return rows + [compare(f"{op} at {size:,} leases", UNIT, [r[op] for r in figures["landlord"]],
                           [r[op] for r in figures["baseline"]], goal=GOALS.get(op), extra={"size": size, "op": op})
                   for op in OPS[1:]]


# -- the memory pass ------------------------------------------------------------------------


@dataclass
class Memory:
    """Bytes per lease at one size, as tracemalloc counts them."""

    size: int
    subject: str
    state: float        # what the grantor keeps: resource records, cookies, indexes
    handed_out: float   # the objects returned by grant, kept by the holder (0 for bare cookies)
    holder_list: float  # the list the holder keeps them in

    @property
    def total(self) -> float:
        return self.state + self.handed_out + self.holder_list


def traced_now() -> int:
    """Bytes currently traced, after a full collection."""
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def measure_memory(make: Callable[[], Subject], size: int) -> Memory:
    """Grant ``size`` leases under tracemalloc, keeping what grant returns, then drop that."""
    durations = durations_for(size)
    gc.collect()
    tracemalloc.start()
    try:
        subject = make()
        empty = traced_now()
        kept = [subject.grant(RESOURCE, d) for d in durations]
        list_bytes = sys.getsizeof(kept)
        with_kept = traced_now()
        del kept
        state = traced_now() - empty
    finally:
        tracemalloc.stop()
    subject.close()
    return Memory(size, subject.name, state / size,
                  (with_kept - empty - state - list_bytes) / size, list_bytes / size)


def memory_rows(pairs: list[tuple[Memory, Memory]]) -> list[Row]:
    """The grantor's bytes per lease as table rows, landlord against the baseline, per size
    (with issue 15's goal at a million leases and over)."""
    return [Row(f"grantor memory at {ours.size:,} leases", ours.state, base.state, "B/lease",
                limit=MEMORY_GOAL if ours.size >= 1_000_000 else None)
            for ours, base in pairs]


def format_memory(pairs: list[tuple[Memory, Memory]]) -> str:
    """The memory lines, landlord next to baseline, per size."""
    lines = ["memory, bytes per lease (tracemalloc; one shared resource object):"]
    for ours, base in pairs:
        share = ours.handed_out / ours.total if ours.total else 0.0
        lines += [
            f"  N={ours.size:,}:",
            f"    grantor state (LeasedResource + cookie + indexes): {ours.state:7.1f}   "
            f"baseline {base.state:7.1f}   ratio {ours.state / base.state:.2f}x",
            f"    LandlordLease objects kept by the holder:          {ours.handed_out:7.1f}   "
            f"(the baseline hands out the cookie, counted in its state)",
            f"    holder's list of leases:                           {ours.holder_list:7.1f}",
            f"    total with the leases kept:                        {ours.total:7.1f}   "
            f"baseline {base.total:7.1f}   ratio {ours.total / base.total:.2f}x; "
            f"the leases are {share:.0%} of it",
        ]
    return "\n".join(lines)



def growth(rows: list[Row]) -> list[dict[str, Any]]:
    """Per op: cost at the largest size over cost at the smallest, for both subjects."""
    at = {(row.extra["size"], row.extra["op"]): row for row in rows}
    sizes = sorted({size for size, _ in at})
    if len(sizes) < 2:
        return []
    small, large = sizes[0], sizes[-1]
    return [{"op": op, "from": small, "to": large,
             "landlord": (at[large, op].landlord or math.nan) / (at[small, op].landlord or math.nan),
             "baseline": (at[large, op].baseline or math.nan) / (at[small, op].baseline or math.nan),
             "log_n": math.log(large) / math.log(small)}
            for op in GROWTH_OPS]


def format_growth(rows: list[dict[str, Any]]) -> list[str]:
    """The growth lines: how per-op cost changes from the smallest to the largest size."""
    if not rows:
        return ["growth: needs at least two sizes"]
    first = rows[0]
    lines = [f"growth from N={first['from']:,} to N={first['to']:,} "
             f"(cost at largest / at smallest; log n grows {first['log_n']:.2f}x, "
             f"n grows {first['to'] / first['from']:,.0f}x):"]
    for row in rows:
        lines.append(f"  {row['op']:<10} landlord {row['landlord']:5.2f}x   baseline {row['baseline']:5.2f}x")
    return lines


BENCH = harness.Benchmark(
    "scale", "Time per operation and memory per lease of an in-process landlord.Landlord at several populations, "
    "against a dict + SortedList baseline measured in the same run.", sizes="1000,100000,1000000",
    modules=(landlord, sortedcontainers), quick={"sizes": "1000,10000", "sample": 2000, "rounds": 2})
BENCH.parser.add_argument("--reaper", choices=REAPERS, default="lazy",
                          help="the landlord's reaper (default: %(default)s, no background thread)")
BENCH.option("--sample", positive_int, 20_000, "operations per timed section, at most the size")
BENCH.option("--batch", harness.at_most(MAX_BATCH), 1000, "cookies per renew_all call, at most a landlord's MAX_BATCH")
BENCH.parser.add_argument("--seed", type=int, default=0, help="seed of the random choice of leases")
BENCH.parser.add_argument("--no-memory", dest="memory", action="store_false",
                          help="skip the (slower) tracemalloc pass")


def measure(args: argparse.Namespace) -> Report:
    rows: list[Row] = []
    memory: list[tuple[Memory, Memory]] = []
    for size in args.sizes:
        progress(f"N={size:,}: timing...")
        rows += time_size(size, reaper=args.reaper, sample=args.sample, batch=args.batch, rounds=args.rounds,
                          seed=args.seed)
        if args.memory:
            progress(f"N={size:,}: memory...")
            memory.append((measure_memory(lambda: make_landlord(args.reaper), size),
                           measure_memory(make_baseline, size)))
    growth_rows = growth(rows)
    rows += memory_rows(memory)
    return Report(
        rows, notes=format_growth(growth_rows) + (["", format_memory(memory)] if memory else []),
        title=f"landlord vs dict + SortedList baseline; reaper={args.reaper}, sample=min(N, {args.sample:,}), "
              f"renew_all batch={args.batch:,}\nfill = mean grant while filling from 0 to N (once); renew_all = "
              "per lease, in batches",
        extra={"config": {"sizes": args.sizes, "reaper": args.reaper, "sample": args.sample, "batch": args.batch,
                          "rounds": args.rounds, "seed": args.seed},
               "growth": growth_rows, "memory": [dict(asdict(m), total=m.total) for pair in memory for m in pair]})


if __name__ == "__main__":
    raise SystemExit(BENCH.main(measure))
