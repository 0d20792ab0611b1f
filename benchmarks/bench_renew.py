"""What a renewal costs over the wire: landlord against raw Pyro5 calls of the same shape (issues 5 and 26).

A landlord runs in another process (``--child landlord``: one Pyro5 daemon on
loopback, thread server) that also exposes the baselines, methods that only
answer: ``echo(cookie, duration)``, the shape of ``renew``, and
``echo_all(cookies, durations)``, the shape of ``renew_all``. This process is
one client thread.

Every row of items 1 and 2 has two baselines, taking turns with landlord in
the same rounds, both through a plain ``Pyro5.api.Proxy``: on Pyro5's default
serializer (serpent: what a user would otherwise run) and on Pyro5's own
msgpack (``SAME_SERIALIZER``: the serializer landlord's calls speak, in
landlord's dialect; the limit of our wire).

1. **Renew round trip**: ``lease.renew(TERM)`` on a ``LandlordLease`` received
   over the wire against ``echo``, taking turns in blocks of ``--block``
   calls until each has had ``--seconds``. Goals >= 1.4x raw serpent and
   >= 0.95x raw msgpack. A printed breakdown (``--no-breakdown`` skips it)
   shows where a gap to raw msgpack comes from.
2. **Batched keep-alive**, for each of ``--sizes`` (leases kept alive, not
   leases per call): ``LeaseMap.renew_all()`` and a ``LeaseRenewalManager``
   round (timed from the moment its leases fall due to the moment its thread
   sleeps again with all of them renewed, seen through an instrumented clock)
   against ``echo_all`` carrying the same lists. Both sides send them in calls
   of ``CALL_BATCH`` (1,000) leases, as a holder does, so both pay the same
   per-call cost. Goals: ``LeaseMap`` >= 5x raw serpent and >= 0.9x raw
   msgpack; the manager >= 500,000 leases/s and >= 0.85x raw msgpack.
3. **Transport**: ``lease.renew(TERM)`` against a landlord served by
   ``serve_landlord`` on its default, guarded server (``landlord.transport.frameserver``)
   against the same on Pyro5's multiplex server
   (``serve_landlord(..., server_type="multiplex")``), each in a process of its
   own, taking turns in blocks of ``--block`` calls as in item 1; the ratio is
   guarded / multiplex (no goal: the cost of the guarded transport).

Items 1 and 2 share one landlord process served on a plain ``Pyro5.api.Daemon``
(Pyro5's thread server, not the guarded one): both sides of every comparison
there are on that same daemon.

The method in full: ``benchmarks/README.md``; the options, rounds, table and
JSON: ``harness.py``. Not a test: pytest collects only ``tests/``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import harness
import msgpack  # type: ignore[import-untyped]
import Pyro5
import Pyro5.api
import serpent
from harness import Report, Row, ServerProcess, compare, interleave, positive_int, positive_seconds, progress

import landlord
import landlord.holder.renewal
from landlord import FOREVER, Landlord, LandlordLease, LeaseDurationPolicy, LeaseMap, SystemClock
from landlord.holder.landlordlease import CALL_BATCH
from landlord.transport.serializers import WIRE_SERIALIZER

TERM = 3600.0                   # the landlord's longest grant: nothing expires during the run
BREAKDOWN_SECONDS = 0.6         # per contender, per round, of the breakdown
MIN_ROUND_LEASES = 100_000      # a batch round renews at least this many leases (several rounds if small)
RENT_CHUNK = 10_000             # leases rented per call while setting up (an answer: no cap on its size)

# issue 26's goals, against each baseline
RENEW_GOAL = 1.4                # lease.renew / raw call on Pyro5's default serializer
RENEW_SAME_GOAL = 0.95          # lease.renew / raw call on the same serializer
BATCH_GOAL = 5.0                # LeaseMap.renew_all / raw call on the default
BATCH_SAME_GOAL = 0.9           # LeaseMap.renew_all / raw call on the same serializer
MANAGER_RATE_GOAL = 500_000.0   # leases a LeaseRenewalManager keeps alive per second, from one client
MANAGER_SAME_GOAL = 0.85        # the manager / raw call on the same serializer

# The two baselines: a plain Pyro5 proxy on Pyro5's default (serpent), and on Pyro5's own
# msgpack, of which landlord's WIRE_SERIALIZER is a dialect: the same parser, so the limit of our wire
SAME_SERIALIZER = "msgpack"
DEFAULT_NAME = f"raw Pyro5, {Pyro5.config.SERIALIZER}"
SAME_NAME = f"raw Pyro5, {SAME_SERIALIZER}"
BASELINES = {"baseline_name": DEFAULT_NAME, "baseline2_name": SAME_NAME}

FIRST_GUESS_PER_LEASE = 40e-6   # seconds to build and add one lease to a manager, before it is measured
DUE_MARGIN = 0.3                # seconds between the last lease added and the round falling due
SETUP_FACTOR = 2.0              # the leases fall due this many times the last setup's length after it starts
SETUP_ATTEMPTS = 3              # a round whose setup overran its due moment (a busy machine) is tried again
ASLEEP_HORIZON = 600.0          # the manager sleeping longer than this: the round is over
ROUND_TIMEOUT = 120.0

CALL_TIMEOUT = 120.0            # renting 10,000 leases in one call takes a while on a busy machine

BENCH = harness.Benchmark(
    "bench_renew", "Renew round trip and batched keep-alive through landlord (landlord in another process), "
    "against raw Pyro5 calls of the same shape on the same daemon, on Pyro5's default serializer and on "
    "msgpack, measured in the same run.",
    sizes="10000,100000", modules=(landlord, Pyro5, serpent, msgpack),
    quick={"seconds": 0.3, "rounds": 2, "sizes": "1000"})
BENCH.option("--seconds", positive_seconds, 3.0, "renew round trip: seconds per side per round")
# 500, not 25: with blocks of 25 calls, switching between the two connections every 3 ms
# (two server worker threads, two cores) favours whichever side comes second by itself:
# the same lease against the same raw call measured 0.62x in blocks of 25, 0.86x in blocks of
# 500 and 0.88x in blocks of 2,000 (and 1.34x when a third contender joined the turns)
BENCH.option("--block", positive_int, 500, "renew round trip: calls per block while taking turns")
BENCH.parser.add_argument("--skip-renew", action="store_true", help="skip the renew round trip")
BENCH.parser.add_argument("--skip-transport", action="store_true",
                          help="skip the renew round trip on the guarded server against the multiplex server")
BENCH.parser.add_argument("--no-breakdown", dest="breakdown", action="store_false",
                          help="skip the renew round trip's breakdown")


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


def serve(args: argparse.Namespace) -> int:
    """The landlord process: serve a BenchLandlord on loopback until SIGTERM or Ctrl-C."""
    return harness.serve_forever(BenchLandlord())


def serve_landlord_on(server_type: str) -> int:
    """A landlord process of item 3: a BenchLandlord served by ``serve_landlord`` on ``server_type``
    until SIGTERM; prints ``URI: <uri>`` once it answers."""
    served = BenchLandlord()
    try:
        landlord.serve_landlord(served, "127.0.0.1", 0, server_type=server_type, announce=False,
                                ready=lambda uri: print(f"URI: {uri}", flush=True))
    except KeyboardInterrupt:  # stopped before serve_landlord set its handlers
        pass
    finally:
        served.close()
    return 0


def raw_proxy(uri: str, serializer: str | None = None, timeout: float | None = None) -> Any:
    """A plain Pyro5 proxy, as a user would make it: Pyro5's defaults, bar ``serializer`` and ``timeout``."""
    proxy = Pyro5.api.Proxy(uri)
    if serializer is not None:
        proxy._pyroSerializer = serializer
    proxy._pyroTimeout = timeout
    return proxy


# -- 1. renew round trip ---------------------------------------------------------------------


def measure_renew(uri: str, landlord_proxy: Any, args: argparse.Namespace) -> tuple[Row, list[str]]:
    """Item 1: ``lease.renew`` against raw calls of the same shape; the row and the breakdown's lines."""
    lease = landlord_proxy.rent(1)[0]
    other = landlord_proxy.rent(1)[0]  # the raw calls to Landlord.renew use another lease: same work
    cookie = lease.cookie
    raw = raw_proxy(uri)  # Pyro5's defaults: serpent, no call timeout
    same = raw_proxy(uri, SAME_SERIALIZER)
    timed_same = raw_proxy(uri, SAME_SERIALIZER, landlord.get_call_timeout())
    try:
        contenders: dict[str, Callable[[], object]] = {
            "lease": lambda: lease.renew(TERM),
            "raw": lambda: raw.echo(cookie, TERM),
            "same": lambda: same.echo(cookie, TERM),
        }
        interleave(contenders, 0.3, args.block)  # warm up: connections made, caches filled
        rounds = []
        for number in range(args.rounds):
            progress(f"renew round trip: round {number + 1} of {args.rounds} ({3 * args.seconds:g} s)...")
            rounds.append(interleave(contenders, args.seconds, args.block))
        row = compare("renew round trip (1 client thread)", "calls/s", [r["lease"] for r in rounds],
                      [r["raw"] for r in rounds], [r["same"] for r in rounds], goal=RENEW_GOAL,
                      goal2=RENEW_SAME_GOAL, **BASELINES)

        breakdown: list[str] = []
        if args.breakdown:
            progress(f"renew round trip: breakdown, {args.rounds} rounds...")
            other_cookie = other.cookie
            timeout = landlord.get_call_timeout()
            # against the same serializer: what is left between a lease and the limit of its wire
            contenders = {
                "raw": lambda: same.echo(cookie, TERM),
                "raw_timeout": lambda: timed_same.echo(cookie, TERM),
                "raw_renew": lambda: same.renew(other_cookie, TERM),
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
            breakdown = [f"renew round trip, breakdown against a raw echo on {SAME_SERIALIZER} without timeout, "
                         f"{args.rounds} interleaved rounds of {BREAKDOWN_SECONDS:g} s each (median):"]
            breakdown += [f"  {label:<58} {figure}" for label, figure in labels]
        return row, breakdown
    finally:
        for proxy in (raw, same, timed_same):
            proxy._pyroRelease()

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
    return wait / landlord.holder.renewal.RENEW_AFTER


@dataclass
class ManagerRound:
    """One manager round: N leases falling due together."""

    rate: float          # leases per second, from falling due to rescheduled
    seconds: float       # that time
    setup: float         # seconds to build and add the leases (not timed)
    calls: int           # renew_all calls the landlord saw


class SetupTooSlow(RuntimeError):
    """Adding a round's leases took past the moment they fell due: that round cannot be timed."""

    def __init__(self, count: int, seconds: float) -> None:
        super().__init__(f"adding {count:,} leases took {seconds:.2f} s, past the moment they fell due: the round "
                         "cannot be timed")
        self.seconds = seconds


def manager_round(manager: landlord.LeaseRenewalManager, clock: WatchedClock, landlord_proxy: Any,
                  uri: str, landlord_id: str, cookies: list[str], per_lease: float) -> ManagerRound:
    """Hand ``cookies`` (as fresh leases) to ``manager`` so that they fall due together; time the round.

    Raises:
        SetupTooSlow: adding them took past the moment they fell due (the manager is cleared).
    """
    count = len(cookies)
    wait = SETUP_FACTOR * per_lease * count + DUE_MARGIN
    term = remaining_for_due_in(wait)
    expiration = time.time() + term
    started = time.time()
    # one term for all: by default each lease's would be the time left when it was made, and on a
    # busy machine making 100,000 takes seconds, which spreads their renewals past the batch window
    # (two calls, the second still out when the thread first sleeps far ahead: not one round)
    leases = [LandlordLease(cookie, uri, landlord_id, expiration, term=term) for cookie in cookies]
    first_added = time.time()
    for lease in leases:
        # FOREVER renewals: each granted the landlord's hour, so the manager sleeps
        # far ahead once the round is done (its own term would be renewed again in seconds)
        manager.renew_for(lease, FOREVER, renew_duration=FOREVER)
    added = time.time()
    due = landlord.renewal_time(first_added, expiration, leases[0].term)
    if added >= due:
        manager.clear()
        raise SetupTooSlow(count, added - started)
    # counted from here, not from the start: a round tried again may have left calls in flight till now
    calls_before = landlord_proxy.renew_all_calls()
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


def batch_rows(size: int, raws: dict[str, Any], manager: landlord.LeaseRenewalManager, clock: WatchedClock,
               landlord_proxy: Any, uri: str, landlord_id: str, rounds: int) -> tuple[list[Row], str]:
    """Item 2 at one size: raw ``echo_all`` on each of ``raws`` (name: proxy), ``LeaseMap.renew_all`` and the
    manager's round, taking turns."""
    progress(f"batched keep-alive: renting {size:,} leases...")
    cookies = rent_cookies(landlord_proxy, size)
    durations = [FOREVER] * size
    lease_map = LeaseMap({LandlordLease(cookie, uri, landlord_id, time.time() + TERM): FOREVER
                          for cookie in cookies})
    calls = max(1, math.ceil(MIN_ROUND_LEASES / size))
    # the raw side sends the lists in calls of CALL_BATCH, as LeaseMap and the manager do: the same
    # calls, the same per-call cost (the slices are made here, not timed)
    chunks = [(cookies[start:start + CALL_BATCH], durations[start:start + CALL_BATCH])
              for start in range(0, size, CALL_BATCH)]
    for raw in raws.values():  # warm up every side
        for chunk_cookies, chunk_durations in chunks:
            raw.echo_all(chunk_cookies, chunk_durations)
    lease_map.renew_all()
    details: list[ManagerRound] = []

    def timed(call: Callable[[], object]) -> float:
        started = time.perf_counter()
        for _ in range(calls):
            call()
        return calls * size / (time.perf_counter() - started)

    def raw_side(raw: Any) -> Callable[[], float]:
        def call() -> None:
            for chunk_cookies, chunk_durations in chunks:
                if len(answer := raw.echo_all(chunk_cookies, chunk_durations)) != len(chunk_cookies):
                    raise RuntimeError(f"echo_all answered {len(answer)} floats for {len(chunk_cookies)} cookies")
        return lambda: timed(call)

    def manager_side() -> float:
        per_lease = max((d.setup / size for d in details), default=FIRST_GUESS_PER_LEASE)
        for _ in range(SETUP_ATTEMPTS - 1):
            try:
                details.append(manager_round(manager, clock, landlord_proxy, uri, landlord_id, cookies, per_lease))
                return details[-1].rate
            except SetupTooSlow as slow:  # a busy moment: again, allowing twice the setup that overran
                progress(f"{slow}; trying again")
                per_lease = 2 * max(per_lease, slow.seconds / size)
        details.append(manager_round(manager, clock, landlord_proxy, uri, landlord_id, cookies, per_lease))
        return details[-1].rate

    sides = {name: raw_side(raw) for name, raw in raws.items()}
    sides.update(map=lambda: timed(lease_map.renew_all), manager=manager_side)
    figures = harness.alternate(sides, rounds, what=f"batched keep-alive, {size:,} leases")
    per_call = f"{size:,} leases in calls of {min(size, CALL_BATCH):,}"
    rows = [compare(f"LeaseMap.renew_all, {per_call}", "leases/s", figures["map"], figures["raw"], figures["same"],
                    goal=BATCH_GOAL, goal2=BATCH_SAME_GOAL, **BASELINES),
            compare(f"LeaseRenewalManager, {per_call}", "leases/s", figures["manager"], figures["raw"],
                    figures["same"], goal2=MANAGER_SAME_GOAL, limit=MANAGER_RATE_GOAL, **BASELINES)]
    return rows, (f"  {size:,} leases: manager round {', '.join(f'{d.seconds:.3f}' for d in details)} s, "
                  f"{', '.join(str(d.calls) for d in details)} renew_all call(s)")


def measure_batches(uri: str, landlord_proxy: Any, args: argparse.Namespace) -> tuple[list[Row], list[str]]:
    """Item 2: LeaseMap.renew_all and LeaseRenewalManager against raw calls carrying the same lists."""
    landlord_id = landlord_proxy.rent(1)[0].landlord_id
    landlord.set_call_timeout(CALL_TIMEOUT)  # the library's calls, on a busy machine
    # Pyro5's defaults, bar a timeout long enough for the biggest call
    raws = {"raw": raw_proxy(uri, timeout=CALL_TIMEOUT), "same": raw_proxy(uri, SAME_SERIALIZER, CALL_TIMEOUT)}
    rows: list[Row] = []
    notes = [f"batched keep-alive, every round (raw echo_all, on each serializer, carries the same cookies and "
             f"durations in calls of {CALL_BATCH:,}, as the lease sends them; manager: from falling due to "
             f"rescheduled):"]
    clock = WatchedClock()
    # max_batch: one group per round, so that the round ends with one reschedule (the lease still
    # sends it in calls of CALL_BATCH; the default max_batch, CALL_BATCH, would make a group per call)
    manager = landlord.LeaseRenewalManager(clock=clock, max_batch=max(args.sizes))
    try:
        for size in args.sizes:
            size_rows, note = batch_rows(size, raws, manager, clock, landlord_proxy, uri, landlord_id, args.rounds)
            rows += size_rows
            notes.append(note)
    finally:
        manager.close()
        for raw in raws.values():
            raw._pyroRelease()
    return rows, notes


# -- 3. the guarded transport against Pyro5's multiplex server --------------------------------


def measure_transport(args: argparse.Namespace) -> Row:
    """Item 3: ``lease.renew`` on a landlord served by ``serve_landlord`` on the guarded server, against the
    same on the multiplex server, each in its own process, taking turns in blocks of calls."""
    servers: dict[str, ServerProcess] = {}
    proxies: list[Any] = []
    try:
        for kind in ("guarded", "multiplex"):
            servers[kind] = ServerProcess(__file__, kind, f"landlord on the {kind} server")
        leases = {}
        for kind, server in servers.items():
            proxy = Pyro5.api.Proxy(server.uri())
            proxies.append(proxy)
            leases[kind] = proxy.rent(1)[0]
        contenders: dict[str, Callable[[], object]] = {kind: (lambda lease=lease: lease.renew(TERM))
                                                       for kind, lease in leases.items()}
        interleave(contenders, 0.3, args.block)  # warm up: connections made, caches filled
        rounds = []
        for number in range(args.rounds):
            progress(f"renew round trip, guarded vs multiplex server: round {number + 1} of {args.rounds} "
                     f"({2 * args.seconds:g} s)...")
            rounds.append(interleave(contenders, args.seconds, args.block))
        return compare("renew round trip: guarded server vs multiplex (serve_landlord)", "calls/s",
                       [r["guarded"] for r in rounds], [r["multiplex"] for r in rounds])
    finally:
        for proxy in proxies:
            proxy._pyroRelease()
        for server in servers.values():
            server.stop()


# -- running ---------------------------------------------------------------------------------


def measure(args: argparse.Namespace) -> Report:
    """Start the landlord, measure items 1 and 2, stop it; then item 3 on two landlords of its own."""
    server = ServerProcess(__file__, "landlord", "landlord")
    rows: list[Row] = []
    notes: list[str] = []
    try:
        uri = server.uri()
        with Pyro5.api.Proxy(uri) as landlord_proxy:
            landlord_proxy._pyroTimeout = CALL_TIMEOUT
            if not args.skip_renew:
                row, notes = measure_renew(uri, landlord_proxy, args)
                rows.append(row)
            if args.sizes:
                batches, batch_notes = measure_batches(uri, landlord_proxy, args)
                rows += batches
                notes += batch_notes
    finally:
        server.stop()
    if not args.skip_transport:
        rows.append(measure_transport(args))
        notes.append("renew round trip, guarded vs multiplex: lease.renew on two landlords served by "
                     "serve_landlord, one on its default guarded server, one with server_type='multiplex', each in "
                     "its own process; ratio guarded / multiplex")
    return Report(rows, notes=notes, title=(
        f"landlord (its calls on {WIRE_SERIALIZER!r}) against raw Pyro5 calls of "
        f"the same shape on Pyro5's default serializer ({Pyro5.config.SERIALIZER!r}) and on {SAME_SERIALIZER!r}, "
        f"in the same rounds; same plain Pyro5 daemon (server type {Pyro5.config.SERVERTYPE!r}), landlord in "
        f"another process on loopback; one client thread; renew round trip in blocks of {args.block} calls, "
        f"{args.seconds:g} s a side"
        + ("" if args.skip_transport else "; the guarded vs multiplex row on two landlord processes of its own, "
           "served by serve_landlord")))


if __name__ == "__main__":
    raise SystemExit(BENCH.main(measure, children={
        "landlord": serve, "guarded": lambda args: serve_landlord_on("guarded"),
        "multiplex": lambda args: serve_landlord_on("multiplex")}))
