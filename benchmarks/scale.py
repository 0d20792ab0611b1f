"""How the grantor's bookkeeping scales: time per operation and memory per lease.

What is measured
----------------
An in-process :class:`landlord.Landlord` (no Pyro5 daemon, so no network and
no serialization: only the grantor's own bookkeeping) is filled with N leases,
for each N in ``--sizes``. At that population we time, per operation:

* ``grant``     -- ``landlord.new_lease(resource, duration)``;
* ``renew``     -- ``landlord.renew(cookie, duration)``, the remote method called locally;
* ``renew_all`` -- ``landlord.renew_all(cookies, durations)`` in batches of
  ``--batch`` cookies, reported per lease;
* ``cancel``    -- ``landlord.cancel(cookie)``;
* ``fill``      -- the mean cost of a grant while filling from 0 to N (it
  includes the growth of the indexes and the garbage collector's passes).

Durations vary (``3600 + i % 1000`` seconds) so that the expiration index is
really sorted and every renewal moves its lease within it. Each timed section
is ``--sample`` operations (at most N); the section is repeated ``--rounds``
times and the best round is kept, since on a shared machine noise only ever
adds time. Every size times the same number of operations: below
``--sample`` leases the sections are shorter and repeated proportionally more.
A round leaves the population at N: it grants a sample, renews and cancels
random old leases, and puts the new ones in the place of the cancelled ones.

Why a baseline
--------------
Absolute microseconds depend on the machine, so every figure is printed next
to a baseline measured in the same run with the same operations in the same
order: the minimal data structure that does the grantor's job, a ``dict``
from ``secrets.token_urlsafe(16)`` cookies to ``(expiration, resource)`` plus
a ``sortedcontainers.SortedList`` of ``(expiration, cookie)``. The ratio
landlord / baseline is the price of everything the library adds (validation,
policy, reaper hooks, locking, the lease object it hands out). Both are
O(log n) per operation; the growth lines compare the cost at the largest size
with the cost at the smallest, next to what a pure log n would predict.

Memory
------
Memory is measured in a separate pass, because tracemalloc slows every
allocation down. tracemalloc counts the bytes requested from Python's
allocators (a little less than the process's resident size). All leases are
on one shared resource object, so the figures are the bookkeeping alone:

* grantor state: ``LeasedResource`` + cookie + the dict and sorted index;
* the ``LandlordLease`` objects a holder keeps, and the list that keeps them.

Run ``python benchmarks/scale.py --help`` for the options. This file is not a
test: pytest collects only ``tests/``.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import random
import secrets
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import sortedcontainers
from common import machine_info, positive_int  # the benchmarks' shared pieces
from sortedcontainers import SortedList

import landlord

DEFAULT_SIZES = "1000,100000,1000000"
DEFAULT_SAMPLE = 20_000
DEFAULT_BATCH = 1_000
DEFAULT_ROUNDS = 3
REAPERS = ("lazy", "sleeper", "polling")
OPS = ("fill", "grant", "renew", "renew_all", "cancel")
GROWTH_OPS = ("grant", "renew", "renew_all", "cancel")

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


@dataclass
class Timing:
    """Best per-operation cost at one size, in microseconds."""

    size: int
    op: str
    landlord_us: float
    baseline_us: float

    @property
    def ratio(self) -> float:
        return self.landlord_us / self.baseline_us


def time_size(size: int, *, reaper: str, sample: int, batch: int, rounds: int,
              seed: int) -> list[Timing]:
    """The timing pass at one size: fill both subjects, then time rounds, keeping the best.

    A size below ``sample`` gets proportionally more (shorter) rounds, so that
    every size times about ``rounds * sample`` operations.
    """
    repeats = rounds * math.ceil(sample / min(size, sample))
    sample = min(size, sample)
    subjects = [make_landlord(reaper), make_baseline()]
    best: dict[tuple[str, str], float] = {}
    live: dict[str, list[str]] = {}
    try:
        for subject in subjects:
            elapsed, live[subject.name] = fill(subject, size)
            best[subject.name, "fill"] = elapsed / size
        rng = random.Random(seed + size)
        for r in range(repeats):
            plan = plan_round(size, sample, rng)
            order = subjects if r % 2 == 0 else subjects[::-1]  # neither always goes first
            for subject in order:
                for op, seconds in run_round(subject, live[subject.name], plan, batch).items():
                    per_op = seconds / sample
                    key = (subject.name, op)
                    best[key] = min(best.get(key, math.inf), per_op)
    finally:
        for subject in subjects:
            subject.close()
    return [Timing(size, op, best["landlord", op] * 1e6, best["baseline", op] * 1e6) for op in OPS]


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


# -- output ---------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return machine_info(landlord, sortedcontainers)


def format_table(timings: list[Timing]) -> str:
    """The timing table: one row per size and op."""
    lines = [f"{'size':>10}  {'op':<10} {'landlord us/op':>15} {'baseline us/op':>15} {'ratio':>7}"]
    for t in timings:
        lines.append(f"{t.size:>10,}  {t.op:<10} {t.landlord_us:>15.3f} {t.baseline_us:>15.3f} "
                     f"{t.ratio:>6.2f}x")
    return "\n".join(lines)


def growth(timings: list[Timing]) -> list[dict[str, Any]]:
    """Per op: cost at the largest size over cost at the smallest, for both subjects."""
    sizes = sorted({t.size for t in timings})
    if len(sizes) < 2:
        return []
    at = {(t.size, t.op): t for t in timings}
    small, large = sizes[0], sizes[-1]
    return [{"op": op, "from": small, "to": large,
             "landlord": at[large, op].landlord_us / at[small, op].landlord_us,
             "baseline": at[large, op].baseline_us / at[small, op].baseline_us,
             "log_n": math.log(large) / math.log(small)}
            for op in GROWTH_OPS]


def format_growth(rows: list[dict[str, Any]]) -> str:
    """The growth lines: how per-op cost changes from the smallest to the largest size."""
    if not rows:
        return "growth: needs at least two sizes"
    first = rows[0]
    lines = [f"growth from N={first['from']:,} to N={first['to']:,} "
             f"(cost at largest / at smallest; log n grows {first['log_n']:.2f}x, "
             f"n grows {first['to'] / first['from']:,.0f}x):"]
    for row in rows:
        lines.append(f"  {row['op']:<10} landlord {row['landlord']:5.2f}x   "
                     f"baseline {row['baseline']:5.2f}x")
    return "\n".join(lines)


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


def format_machine(info: dict[str, Any], wall: float) -> str:
    """The machine lines."""
    return "\n".join([f"machine: {info['platform']} ({info['processor']}), "
                      f"{info['cpu_count']} CPUs",
                      f"python:  {info['python']}; landlord {info['landlord']}, "
                      f"sortedcontainers {info['sortedcontainers']}",
                      f"wall time: {wall:.1f} s"])


def write_json(path: str, report: dict[str, Any]) -> None:
    """Write the figures as JSON to ``path``."""
    with open(path, "w", encoding="utf-8") as out:
        json.dump(report, out, indent=2)
        out.write("\n")


# -- command line ---------------------------------------------------------------------------


def parse_sizes(text: str) -> list[int]:
    """``"1000,100000"`` -> ``[1000, 100000]``; each size a positive integer."""
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"sizes are comma-separated integers, got {text!r}") from None
    if not sizes or any(s <= 0 for s in sizes):
        raise argparse.ArgumentTypeError(f"sizes must be positive, got {text!r}")
    return sorted(set(sizes))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Time per operation and memory per lease of an in-process landlord.Landlord "
                    "at several populations, against a dict + SortedList baseline "
                    "measured in the same run.")
    # a str default goes through type= too, and reads well in --help
    parser.add_argument("--sizes", type=parse_sizes, default=DEFAULT_SIZES,
                        help="comma-separated lease populations (default: %(default)s)")
    parser.add_argument("--reaper", choices=REAPERS, default="lazy",
                        help="the landlord's reaper (default: %(default)s, no background thread)")
    parser.add_argument("--sample", type=positive_int, default=DEFAULT_SAMPLE,
                        help="operations per timed section, at most the size "
                             "(default: %(default)s)")
    parser.add_argument("--batch", type=positive_int, default=DEFAULT_BATCH,
                        help="cookies per renew_all call (default: %(default)s)")
    parser.add_argument("--rounds", type=positive_int, default=DEFAULT_ROUNDS,
                        help="repeats of each timed section; the best is kept "
                             "(default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random choice of leases")
    parser.add_argument("--no-memory", dest="memory", action="store_false",
                        help="skip the (slower) tracemalloc pass")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    timings: list[Timing] = []
    memory: list[tuple[Memory, Memory]] = []
    for size in args.sizes:
        print(f"N={size:,}: timing...", file=sys.stderr, flush=True)
        timings += time_size(size, reaper=args.reaper, sample=args.sample, batch=args.batch,
                             rounds=args.rounds, seed=args.seed)
        if args.memory:
            print(f"N={size:,}: memory...", file=sys.stderr, flush=True)
            memory.append((measure_memory(lambda: make_landlord(args.reaper), size),
                           measure_memory(make_baseline, size)))
    wall = time.perf_counter() - started
    info = machine()
    growth_rows = growth(timings)

    print(f"landlord vs dict + SortedList baseline; reaper={args.reaper}, "
          f"sample=min(N, {args.sample:,}), renew_all batch={args.batch:,}, "
          f"rounds={args.rounds} (best kept)")
    print("fill = mean grant while filling from 0 to N; renew_all = per lease, in batches")
    print(format_table(timings))
    print()
    print(format_growth(growth_rows))
    if memory:
        print()
        print(format_memory(memory))
    print()
    print(format_machine(info, wall))

    if args.json:
        write_json(args.json, {
            "config": {"sizes": args.sizes, "reaper": args.reaper, "sample": args.sample,
                       "batch": args.batch, "rounds": args.rounds, "seed": args.seed},
            "timings": [dict(asdict(t), ratio=t.ratio) for t in timings],
            "growth": growth_rows,
            "memory": [dict(asdict(m), total=m.total) for pair in memory for m in pair],
            "machine": info,
            "wall_seconds": wall,
            # the rows every benchmark writes, for run_all's one table; ratio > 1: landlord does better
            "name": "scale",
            "rows": [{"metric": f"{t.op} at {t.size:,} leases", "size": t.size, "op": t.op,
                      "landlord": t.landlord_us, "baseline": t.baseline_us, "unit": "µs/op",
                      "ratio": t.baseline_us / t.landlord_us, "goal": None, "met": None} for t in timings],
        })
    return 0


if __name__ == "__main__":
    sys.exit(main())
