"""What a renewal costs over the wire: landlord against a raw Pyro5 call of the same shape.

Issue 5, items 1 and 2. Users choosing between this project and a raw Pyro5
object with hand-rolled heartbeats want to know what the lease machinery adds
to the round trip they would pay anyway. So every figure here is measured
against a raw Pyro5 call that carries the same data to the same daemon, in the
same run, interleaved with it.

Set-up
------
A landlord runs in a separate process (this script started again with a
hidden ``--serve`` flag): one Pyro5 daemon on loopback, server type "thread"
(Pyro5's default), serving a :class:`landlord.Landlord` subclass that grants
up to an hour (``TERM``) and also exposes the baselines, plain methods on the
same object that do nothing but answer:

* ``echo(cookie: str, duration: float) -> float`` -- the shape of ``renew``;
* ``echo_all(cookies: list[str], durations: list[float]) -> list[float]`` --
  the shape of ``renew_all``, answering as many floats as it got cookies.

This process is the holder: one client thread.

1. Renew round trip
-------------------
Sequential ``lease.renew(TERM)`` calls on one :class:`landlord.LandlordLease`
(received over the wire, so it reaches its landlord through the library's own
per-thread proxy, with its default call timeout) against sequential
``proxy.echo(cookie, TERM)`` calls through a plain ``Pyro5.api.Proxy`` with
Pyro5's defaults. The two alternate in blocks of ``--block`` calls (the order
swapped each time) until each has run ``--seconds``; that is a round, and
its calls per second give the round's ratio. Of ``--rounds`` rounds the one
with the **median ratio** is reported (both its rates and its ratio), so a
noisy neighbour slows both sides alike and one lucky round decides nothing.
Goal: ratio >= 0.9 (the lease machinery costs under 10%).

A breakdown follows (printed, not a goal; ``--no-breakdown`` skips it), in
shorter interleaved rounds, to show where a gap comes from: the raw call with
the library's call timeout set on its proxy, a raw call to the landlord's own
``renew`` (the grantor's work, no holder-side lease code), and ``lease.renew``
with no call timeout.

2. Batched keep-alive
---------------------
``--sizes`` leases (default 10,000 and 100,000) are rented and kept alive
three ways, each round measuring them all back to back:

* **raw**: ``proxy.echo_all(cookies, durations)``, the lists built beforehand
  (a raw client already has them);
* **LeaseMap.renew_all()**: one :class:`landlord.LeaseMap` of the leases, each
  asking for ``FOREVER`` (the landlord grants ``TERM``); the raw call
  carries the same durations;
* **LeaseRenewalManager**: the leases are handed to a manager (default
  settings) with ``renew_for(lease, FOREVER, renew_duration=FOREVER)``,
  their holder-side expirations set so that they all fall due together a moment after the last one is
  added. The round is timed from the moment they fall due (the manager's own
  schedule, :func:`landlord.renewal_time`) to the moment the manager's thread
  goes back to sleep with every lease renewed and rescheduled an hour ahead
  (seen through an instrumented clock, the manager's ``clock`` argument). The
  landlord counts its ``renew_all`` calls so a round split in several calls
  would show.

Figures are leases renewed per second (for the small size, each round makes
enough calls to renew ``MIN_ROUND_LEASES`` leases). Of ``--rounds`` rounds the
median ratio is reported, as above. Goals: >= 0.7 of raw, and >= 50,000
leases per second.

Output: one table with both sides, the ratio, the goal and PASS/MISS, then
the machine and the wall time; ``--json PATH`` writes the same rows. The exit
status is 0 whether goals are met or not (1 only if something went wrong).
Run ``python benchmarks/bench_renew.py --help`` for the options. This file is
not a test: pytest collects only ``tests/``.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
from landlord import FOREVER, Landlord, LandlordLease, LeaseDurationPolicy, LeaseMap, SystemClock
from landlord.grantor import MAX_BATCH

NAME = "bench_renew"
TERM = 3600.0                   # the landlord's longest grant: nothing expires during the run
DEFAULT_SECONDS = 3.0           # per side, per round, of the renew round trip
DEFAULT_ROUNDS = 3
DEFAULT_BLOCK = 25              # calls per block while alternating (a few ms: load bursts hit both sides)
DEFAULT_SIZES = "10000,100000"
BREAKDOWN_SECONDS = 0.6         # per contender, per round, of the breakdown
MIN_ROUND_LEASES = 100_000      # a batch round renews at least this many leases (several calls if small)
RENT_CHUNK = 10_000             # leases rented per call while setting up

RENEW_GOAL = 0.9                # lease.renew / raw call
BATCH_GOAL = 0.7                # batched keep-alive / raw call
BATCH_RATE_GOAL = 50_000.0      # leases kept alive per second

FIRST_GUESS_PER_LEASE = 40e-6   # seconds to build and add one lease to a manager, before it is measured
DUE_MARGIN = 0.3                # seconds between the last lease added and the round falling due
SETUP_FACTOR = 2.0              # the leases fall due this many times the last setup's length after it starts
ASLEEP_HORIZON = 600.0          # the manager sleeping longer than this: the round is over
ROUND_TIMEOUT = 120.0

CALL_TIMEOUT = 120.0            # renting or renewing 100,000 leases in one call takes a while


# -- the landlord process ----------------------------------------------------------------


class BenchLandlord(Landlord):
    """A landlord that rents in bulk, counts its ``renew_all`` calls, and serves the raw baselines."""

    def __init__(self) -> None:
        super().__init__(policy=LeaseDurationPolicy(maximum=TERM, default=TERM))
        self._lock = threading.Lock()
        self._renew_all_calls = 0

    @Pyro5.api.expose
    def rent(self, count: int) -> list[LandlordLease]:
        """``count`` fresh leases, as a holder gets them (``LandlordLease`` objects over the wire)."""
        return [self.new_lease(i, TERM) for i in range(count)]

    @Pyro5.api.expose
    def rent_cookies(self, count: int) -> list[str]:
        """``count`` fresh leases as bare cookies (the holder builds the leases: renting is not measured)."""
        return [self.new_lease(i, TERM).cookie for i in range(count)]

    @Pyro5.api.expose
    def renew_all(self, cookies: Sequence[str], durations: Sequence[float]) -> landlord.RenewResults:
        # overriding drops Pyro5's exposure: hence the decorator again
        with self._lock:
            self._renew_all_calls += 1
        return super().renew_all(cookies, durations)

    @Pyro5.api.expose
    def renew_all_calls(self) -> int:
        with self._lock:
            return self._renew_all_calls

    @Pyro5.api.expose
    def echo(self, cookie: str, duration: float) -> float:
        """Baseline of ``renew``: same arguments, a float back, nothing done."""
        return TERM

    @Pyro5.api.expose
    def echo_all(self, cookies: Sequence[str], durations: Sequence[float]) -> list[float]:
        """Baseline of ``renew_all``: same lists, as many floats back, nothing done."""
        return [TERM] * len(durations)


def serve() -> int:
    """The landlord process: serve a BenchLandlord on loopback until SIGTERM or Ctrl-C."""
    return serve_forever(BenchLandlord())


# -- results -------------------------------------------------------------------------------


@dataclass
class Row:
    """One line of the table (and of the JSON)."""

    metric: str
    landlord: float
    baseline: float
    unit: str
    goal: float
    rate_goal: float | None = None  # a floor on ``landlord`` itself, besides the ratio

    @property
    def ratio(self) -> float:
        return self.landlord / self.baseline if self.baseline > 0 else math.nan

    @property
    def met(self) -> bool:
        return self.ratio >= self.goal and (self.rate_goal is None or self.landlord >= self.rate_goal)

    def goal_text(self) -> str:
        text = f">= {self.goal:g}x"
        if self.rate_goal is not None:
            text += f", >= {self.rate_goal:,.0f}/s"
        return text

    def as_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "landlord": self.landlord, "baseline": self.baseline,
                "unit": self.unit, "ratio": self.ratio, "goal": self.goal, "met": self.met}


@dataclass
class Round:
    """One round: both sides' rates (per second) and their ratio."""

    ours: float
    raw: float

    @property
    def ratio(self) -> float:
        return self.ours / self.raw if self.raw > 0 else math.nan


def median_round(rounds: list[Round]) -> Round:
    """The round with the median ratio (the lower middle one for an even count)."""
    ordered = sorted(rounds, key=lambda r: r.ratio)
    return ordered[(len(ordered) - 1) // 2]


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- 1. renew round trip ---------------------------------------------------------------------


def interleave(contenders: dict[str, Callable[[], object]], seconds: float, block: int) -> dict[str, float]:
    """Calls per second of each contender, run in alternating blocks until each has had ``seconds``.

    The order of the contenders is rotated after every pass, so none always
    runs first (or right after another).
    """
    names = list(contenders)
    spent = dict.fromkeys(names, 0.0)
    calls = dict.fromkeys(names, 0)
    clock = time.perf_counter
    turn = 0
    while min(spent.values()) < seconds:
        order = names[turn % len(names):] + names[:turn % len(names)]
        turn += 1
        for name in order:
            call = contenders[name]
            started = clock()
            for _ in range(block):
                call()
            spent[name] += clock() - started
            calls[name] += block
    return {name: calls[name] / spent[name] for name in names}


def measure_renew(uri: str, landlord_proxy: Any, args: argparse.Namespace) -> tuple[Row, list[Round], list[str]]:
    """Item 1: ``lease.renew`` against a raw call of the same shape. Returns the row, the rounds, the breakdown."""
    lease = landlord_proxy.rent(1)[0]
    other = landlord_proxy.rent(1)[0]  # the raw calls to Landlord.renew use another lease: same work
    cookie = lease.cookie
    raw = Pyro5.api.Proxy(uri)  # Pyro5's defaults: no call timeout
    timed_raw = Pyro5.api.Proxy(uri)
    timed_raw._pyroTimeout = landlord.get_call_timeout()
    try:
        contenders: dict[str, Callable[[], object]] = {
            "lease": lambda: lease.renew(TERM),
            "raw": lambda: raw.echo(cookie, TERM),
        }
        interleave(contenders, 0.3, args.block)  # warm up: connections made, caches filled
        rounds = []
        for number in range(args.rounds):
            progress(f"renew round trip: round {number + 1} of {args.rounds} ({2 * args.seconds:g} s)...")
            rates = interleave(contenders, args.seconds, args.block)
            rounds.append(Round(rates["lease"], rates["raw"]))
        best = median_round(rounds)
        row = Row("renew round trip (1 client thread)", best.ours, best.raw, "calls/s", RENEW_GOAL)

        breakdown: list[str] = []
        if args.breakdown:
            progress(f"renew round trip: breakdown, {args.rounds} rounds...")
            other_cookie = other.cookie
            timeout = landlord.get_call_timeout()
            contenders = {
                "raw": lambda: raw.echo(cookie, TERM),
                "raw_timeout": lambda: timed_raw.echo(cookie, TERM),
                "raw_renew": lambda: raw.renew(other_cookie, TERM),
                "lease": lambda: lease.renew(TERM),
            }
            per_round = [interleave(contenders, BREAKDOWN_SECONDS, args.block) for _ in range(args.rounds)]
            landlord.set_call_timeout(None)
            try:
                no_timeout = [interleave({"raw": contenders["raw"], "lease": contenders["lease"]},
                                         BREAKDOWN_SECONDS, args.block) for _ in range(args.rounds)]
            finally:
                landlord.set_call_timeout(timeout)

            def share(rates: list[dict[str, float]], name: str) -> str:
                ratios = [r[name] / r["raw"] for r in rates]
                middle = statistics.median(ratios)
                return f"{middle:5.2f}x of raw  (rounds: {', '.join(f'{x:.2f}' for x in ratios)})"

            labels = [
                (f"raw echo, proxy with the library's {timeout:g} s call timeout", share(per_round, "raw_timeout")),
                ("raw call to Landlord.renew (the grantor's work alone)", share(per_round, "raw_renew")),
                (f"lease.renew (library proxy, {timeout:g} s call timeout)", share(per_round, "lease")),
                ("lease.renew with set_call_timeout(None)", share(no_timeout, "lease")),
            ]
            breakdown = [f"  {label:<58} {figure}" for label, figure in labels]
        return row, rounds, breakdown
    finally:
        raw._pyroRelease()
        timed_raw._pyroRelease()


# -- 2. batched keep-alive -------------------------------------------------------------------


class WatchedClock(SystemClock):
    """The system clock, noting when the renewal manager's thread goes to sleep for long.

    Once armed, the first ``wait`` called after the monotonic time ``after``
    (the moment the round falls due) with a deadline more than
    ``ASLEEP_HORIZON`` seconds ahead (every lease renewed for an hour and
    rescheduled) records the moment and sets ``asleep``. Waits before ``after``
    are the thread settling from the previous round or the leases being added.
    """

    def __init__(self) -> None:
        self.asleep = threading.Event()
        self.slept_at = math.nan
        self._after = math.inf

    def arm(self, after: float) -> None:
        self.asleep.clear()
        self.slept_at = math.nan
        self._after = after

    def wait(self, condition: threading.Condition, deadline: float) -> None:
        if math.isfinite(deadline):
            now = time.monotonic()
            if now >= self._after and deadline - now > ASLEEP_HORIZON:
                self._after = math.inf
                self.slept_at = now
                self.asleep.set()
        super().wait(condition, deadline)


def remaining_for_due_in(wait: float) -> float:
    """The term of a fresh lease that the manager's schedule renews ``wait`` seconds from now
    (a share ``RENEW_AFTER`` into it)."""
    return wait / landlord.renewal.RENEW_AFTER


@dataclass
class ManagerRound:
    """One manager round: N leases falling due together."""

    rate: float          # leases per second, from falling due to rescheduled
    seconds: float       # that time
    setup: float         # seconds to build and add the leases (not timed)
    calls: int           # renew_all calls the landlord saw


def manager_round(manager: landlord.LeaseRenewalManager, clock: WatchedClock, landlord_proxy: Any,
                  uri: str, landlord_id: str, cookies: list[str], per_lease: float) -> ManagerRound:
    """Hand ``cookies`` (as fresh leases) to ``manager`` so that they fall due together; time the round."""
    count = len(cookies)
    wait = SETUP_FACTOR * per_lease * count + DUE_MARGIN
    expiration = time.time() + remaining_for_due_in(wait)
    calls_before = landlord_proxy.renew_all_calls()
    started = time.time()
    leases = [LandlordLease(cookie, uri, landlord_id, expiration) for cookie in cookies]
    first_added = time.time()
    for lease in leases:
        # FOREVER renewals: each granted the landlord's hour, so the manager sleeps
        # far ahead once the round is done (its own term would be renewed again in seconds)
        manager.renew_for(lease, FOREVER, renew_duration=FOREVER)
    added = time.time()
    due = landlord.renewal_time(first_added, expiration, leases[0].term)
    if added >= due:
        raise RuntimeError(f"adding {count:,} leases took {added - first_added:.2f} s, past the moment they "
                           "fell due: the round cannot be timed")
    due_monotonic = due - time.time() + time.monotonic()
    clock.arm(after=due_monotonic)
    if not clock.asleep.wait(ROUND_TIMEOUT + (due - added)):
        raise RuntimeError(f"the renewal manager did not finish a round of {count:,} leases "
                           f"within {ROUND_TIMEOUT:g} s")
    seconds = clock.slept_at - due_monotonic
    unrenewed = sum(1 for lease in leases if lease.expiration <= expiration)
    if unrenewed:
        raise RuntimeError(f"{unrenewed:,} of {count:,} leases were not renewed in the round")
    calls = landlord_proxy.renew_all_calls() - calls_before
    manager.clear()
    return ManagerRound(count / seconds, seconds, added - started, calls)


def rent_cookies(landlord_proxy: Any, count: int) -> list[str]:
    cookies: list[str] = []
    while len(cookies) < count:
        cookies += landlord_proxy.rent_cookies(min(RENT_CHUNK, count - len(cookies)))
    return cookies


def measure_batches(uri: str, landlord_proxy: Any, args: argparse.Namespace) -> tuple[list[Row], list[str]]:
    """Item 2: LeaseMap.renew_all and LeaseRenewalManager against a raw call carrying the same lists."""
    landlord_id = landlord_proxy.rent(1)[0].landlord_id
    landlord.set_call_timeout(CALL_TIMEOUT)  # the library's calls: 100,000 leases take a while
    raw = Pyro5.api.Proxy(uri)  # Pyro5's defaults, bar a timeout long enough for the biggest call
    raw._pyroTimeout = CALL_TIMEOUT
    rows: list[Row] = []
    notes: list[str] = []
    clock = WatchedClock()
    # max_batch: one group per round, so that the round ends with one reschedule (the lease still
    # sends it in calls of CALL_BATCH; the default max_batch would make ten groups of 10,000)
    manager = landlord.LeaseRenewalManager(clock=clock, max_batch=MAX_BATCH)
    try:
        for size in args.sizes:
            progress(f"batched keep-alive: renting {size:,} leases...")
            cookies = rent_cookies(landlord_proxy, size)
            durations = [FOREVER] * size
            lease_map = LeaseMap({LandlordLease(cookie, uri, landlord_id, time.time() + TERM): FOREVER
                                  for cookie in cookies})
            calls = max(1, math.ceil(MIN_ROUND_LEASES / size))
            raw.echo_all(cookies, durations)  # warm up both
            lease_map.renew_all()
            map_rounds: list[Round] = []
            manager_rounds: list[Round] = []
            details: list[ManagerRound] = []
            per_lease = FIRST_GUESS_PER_LEASE
            for number in range(args.rounds):
                progress(f"batched keep-alive, {size:,} leases: round {number + 1} of {args.rounds}...")
                started = time.perf_counter()
                for _ in range(calls):
                    answer = raw.echo_all(cookies, durations)
                raw_rate = calls * size / (time.perf_counter() - started)
                if len(answer) != size:
                    raise RuntimeError(f"echo_all answered {len(answer)} floats for {size} cookies")
                started = time.perf_counter()
                for _ in range(calls):
                    lease_map.renew_all()
                map_rate = calls * size / (time.perf_counter() - started)
                detail = manager_round(manager, clock, landlord_proxy, uri, landlord_id, cookies, per_lease)
                per_lease = max(per_lease if number else 0.0, detail.setup / size)
                map_rounds.append(Round(map_rate, raw_rate))
                manager_rounds.append(Round(detail.rate, raw_rate))
                details.append(detail)
            best_map, best_manager = median_round(map_rounds), median_round(manager_rounds)
            rows.append(Row(f"LeaseMap.renew_all, {size:,} leases/call", best_map.ours, best_map.raw,
                            "leases/s", BATCH_GOAL, BATCH_RATE_GOAL))
            rows.append(Row(f"LeaseRenewalManager, {size:,} leases", best_manager.ours, best_manager.raw,
                            "leases/s", BATCH_GOAL, BATCH_RATE_GOAL))
            notes.append(
                f"  {size:,} leases: raw echo_all {', '.join(f'{r.raw:,.0f}' for r in map_rounds)}; "
                f"LeaseMap {', '.join(f'{r.ours:,.0f}' for r in map_rounds)}; "
                f"manager {', '.join(f'{d.rate:,.0f}' for d in details)} leases/s "
                f"(round {', '.join(f'{d.seconds:.3f}' for d in details)} s, "
                f"{', '.join(str(d.calls) for d in details)} renew_all call(s))")
            del lease_map
    finally:
        manager.close()
        raw._pyroRelease()
    return rows, notes


# -- running ---------------------------------------------------------------------------------


@dataclass
class Results:
    rows: list[Row]
    renew_rounds: list[Round]
    breakdown: list[str]
    batch_notes: list[str]


def run(args: argparse.Namespace) -> Results:
    """Start the landlord, measure both items, stop the landlord."""
    server = ServerProcess(__file__, "--serve", "landlord")
    try:
        uri = server.uri()
        with Pyro5.api.Proxy(uri) as landlord_proxy:
            landlord_proxy._pyroTimeout = CALL_TIMEOUT
            rows: list[Row] = []
            renew_rounds: list[Round] = []
            breakdown: list[str] = []
            batch_notes: list[str] = []
            if not args.skip_renew:
                row, renew_rounds, breakdown = measure_renew(uri, landlord_proxy, args)
                rows.append(row)
            if args.sizes:
                batch_rows, batch_notes = measure_batches(uri, landlord_proxy, args)
                rows += batch_rows
            return Results(rows, renew_rounds, breakdown, batch_notes)
    finally:
        status = server.stop()
        if status is None:
            print("warning: the landlord ignored SIGTERM and had to be killed", file=sys.stderr)


# -- output ------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return machine_info(landlord, Pyro5, serpent)


def format_results(results: Results, args: argparse.Namespace, info: dict[str, Any], wall: float) -> str:
    header = f"{'metric':<40} {'landlord':>12} {'raw Pyro5':>12} {'unit':<9} {'ratio':>7}  {'goal':<22} {'met'}"
    lines = [
        f"landlord against a raw Pyro5 call of the same shape, same daemon (server type "
        f"{Pyro5.config.SERVERTYPE!r}, serializer {Pyro5.config.SERIALIZER!r}), landlord in another "
        f"process on loopback; one client thread; median-ratio round of {args.rounds}",
        "",
        header,
        "-" * len(header),
    ]
    for row in results.rows:
        lines.append(f"{row.metric:<40} {row.landlord:>12,.0f} {row.baseline:>12,.0f} {row.unit:<9} "
                     f"{row.ratio:>6.2f}x  {row.goal_text():<22} {'PASS' if row.met else 'MISS'}")
    if results.renew_rounds:
        lines += ["", f"renew round trip, rounds of {args.seconds:g} s a side in blocks of {args.block} calls "
                      f"(lease.renew / raw echo): " + ", ".join(
                          f"{r.ours:,.0f} / {r.raw:,.0f} = {r.ratio:.2f}" for r in results.renew_rounds)]
    if results.breakdown:
        lines += [f"breakdown against a raw echo without timeout, {args.rounds} interleaved rounds of "
                  f"{BREAKDOWN_SECONDS:g} s each (median):"] + results.breakdown
    if results.batch_notes:
        lines += ["", "batched keep-alive, every round (raw echo_all carries the same cookies and durations; "
                      "manager: from falling due to rescheduled):"] + results.batch_notes
    lines += [
        "",
        f"machine: {info['platform']} ({info['processor']}), {info['cpu_count']} CPUs",
        f"python:  {info['python']}; landlord {info['landlord']}, Pyro5 {info['Pyro5']}, "
        f"serpent {info['serpent']}",
        f"wall time: {wall:.1f} s",
    ]
    return "\n".join(lines)


def write_json(path: str, results: Results, info: dict[str, Any]) -> None:
    report = {"name": NAME, "rows": [row.as_json() for row in results.rows], "machine": info}
    with open(path, "w", encoding="utf-8") as out:
        json.dump(report, out, indent=2)
        out.write("\n")


# -- command line --------------------------------------------------------------------------


def sizes(text: str) -> list[int]:
    """An argparse type: comma-separated batch sizes, 1 to MAX_BATCH each (empty: skip item 2)."""
    if not text.strip():
        return []
    values = [positive_int(part.strip()) for part in text.split(",")]
    if any(value > MAX_BATCH for value in values):
        raise argparse.ArgumentTypeError(f"a size is at most {MAX_BATCH:,} (one renew_all call)")
    return values


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Renew round trip and batched keep-alive through landlord (landlord in another "
                    "process), against a raw Pyro5 call of the same shape on the same daemon, "
                    "measured in the same run.")
    parser.add_argument("--seconds", type=positive_seconds, default=DEFAULT_SECONDS,
                        help="renew round trip: seconds per side per round (default: %(default)s)")
    parser.add_argument("--rounds", type=positive_int, default=DEFAULT_ROUNDS,
                        help="rounds of every measurement; the median-ratio round is reported "
                             "(default: %(default)s)")
    parser.add_argument("--block", type=positive_int, default=DEFAULT_BLOCK,
                        help="renew round trip: calls per block while alternating (default: %(default)s)")
    parser.add_argument("--sizes", type=sizes, default=sizes(DEFAULT_SIZES),
                        help=f"batched keep-alive: leases per call, comma-separated; '' skips it "
                             f"(default: {DEFAULT_SIZES})")
    parser.add_argument("--skip-renew", action="store_true", help="skip the renew round trip")
    parser.add_argument("--no-breakdown", dest="breakdown", action="store_false",
                        help="skip the renew round trip's breakdown")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON to PATH")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the landlord process
    return parser.parse_args(argv)


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
    print(format_results(results, args, info, wall))
    if args.json:
        write_json(args.json, results, info)
    return 0


if __name__ == "__main__":
    sys.exit(main())
