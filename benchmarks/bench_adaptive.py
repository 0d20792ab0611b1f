"""Load-adaptive terms: the renewal load a landlord serves as its leases grow tenfold (issue 13, item 4).

Two landlord processes in turn (``--child landlord``: ``serve_landlord``, its
default guarded server, on loopback), one with an :class:`~landlord.grantor.adaptive.AdaptivePolicy`
capped at ``--cap`` renewals a second, the baseline with a fixed term
(``LeaseDurationPolicy``, ``--fixed-term``). Each counts the renewals it
serves (a ``LeaseHooks`` subclass, told of every renewed batch). This process
is the holder: one ``LeaseRenewalManager`` (``renew_for(lease, FOREVER,
renew_duration=ANY)``, so the landlord chooses each term) keeps every lease.
``--steps`` times, ``--leases`` more are granted and handed to it; once its
renewals have settled, the landlord's count over a while gives the
renewals per second served at that step, against the cap and the term granted.

Accelerated time: terms of seconds (``--min-term`` 1 s, the fixed term 3 s)
stand for the minutes a deployment would use, and the holder's
``batch_window`` is scaled with them (0.05 s); the load is the same function
of leases and terms (``leases * renewals per term / term``) at any scale.

The options, table and JSON: ``harness.py``. Not a test: pytest collects only ``tests/``.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import harness
import Pyro5
import Pyro5.api
from harness import UNBUFFERED, Report, Row, positive_int, positive_seconds, progress

import landlord
from landlord import ANY, FOREVER, Landlord, LeasedResource, LeaseDurationPolicy, LeaseRenewalEvent
from landlord.grantor.adaptive import AIM, AdaptivePolicy
from landlord.grantor.hooks import LeaseHooks
from landlord.holder.renewal import RENEW_AFTER
from landlord.testing import ChildProcess, WaitFailed

GRANT_CHUNK = 500        # leases granted per call: a step's leases fall due in several batches, not one
BATCH_WINDOW = 0.05      # the holder's: scaled with the terms (its default, 1 s, is a third of the fixed term here)
CALL_TIMEOUT = 60.0
START_TIMEOUT = 20.0
MIN_SETTLE = 1.0         # seconds after a step's grants before counting, at least...
MIN_MEASURE = 3.0        # ...and of counting

BENCH = harness.Benchmark(
    "bench_adaptive", "Renewals per second a landlord serves as its leases grow tenfold: an AdaptivePolicy "
    "capped at --cap against a fixed term, each landlord in its own process, one LeaseRenewalManager keeping "
    "every lease.", rounds=None, modules=(landlord, Pyro5),
    quick={"leases": 200, "steps": 3, "cap": 800.0})
BENCH.option("--leases", positive_int, 2_000, "leases added at each step")
BENCH.option("--steps", positive_int, 10, "steps: the leases grow to steps x --leases")
BENCH.option("--cap", positive_seconds, 8_000.0, "the adaptive policy's renewal_cap, renewals a second")
BENCH.option("--min-term", positive_seconds, 1.0, "the adaptive policy's min_term, seconds")
BENCH.option("--max-term", positive_seconds, 60.0, "the adaptive policy's max_term, seconds")
BENCH.option("--window", positive_seconds, 10.0, "the adaptive policy's window, seconds")
BENCH.option("--fixed-term", positive_seconds, 3.0, "the baseline's term, seconds")
BENCH.option("--settle", positive_seconds, 1.0, "renewal intervals (a third of the term) to wait after a step")
BENCH.option("--measure", positive_seconds, 3.0, "renewal intervals to count over at each step")
BENCH.parser.add_argument("--side", choices=("adaptive", "fixed"), default="adaptive", help=argparse.SUPPRESS)


# -- the landlord process ----------------------------------------------------------------


class RenewalCount(LeaseHooks):
    """Counts the renewals a landlord serves (told once per renewed batch, outside the manager's lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # renewal calls may be served on several threads
        self.renewals = 0

    def renewed(self, leased: Sequence[LeasedResource]) -> None:
        with self._lock:
            self.renewals += len(leased)


class CountingLandlord(harness.GrantsOnRequest, Landlord):
    """A landlord that grants on request and says how many renewals it has served, and at what term."""

    def __init__(self, policy: LeaseDurationPolicy) -> None:
        self.count = RenewalCount()
        super().__init__(policy=policy, hooks=self.count)

    @Pyro5.api.expose
    def stats(self) -> dict[str, Any]:
        """Renewals served so far, on this process's monotonic clock; the term granted now; leases held."""
        policy = self.policy
        stats: dict[str, Any] = {"at": time.monotonic(), "renewals": self.count.renewals, "held": len(self)}
        if isinstance(policy, AdaptivePolicy):
            stats.update(term=policy.term, policy_rate=policy.renewal_rate, per_term=policy.renewals_per_term)
        else:
            assert isinstance(policy, LeaseDurationPolicy)
            stats.update(term=policy.default, policy_rate=None, per_term=None)
        return stats


def make_policy(args: argparse.Namespace) -> LeaseDurationPolicy:
    if args.side == "adaptive":
        return AdaptivePolicy(renewal_cap=args.cap, min_term=args.min_term, max_term=args.max_term,
                              window=args.window)
    return LeaseDurationPolicy(maximum=args.fixed_term, default=args.fixed_term)


def serve(args: argparse.Namespace) -> int:
    """The landlord process: serve a CountingLandlord until SIGTERM."""
    landlord.serve_landlord(CountingLandlord(make_policy(args)), "127.0.0.1")
    return 0


# -- the holder ----------------------------------------------------------------------------


@dataclass
class Step:
    """What the landlord served once its leases had settled at one step."""

    leases: int
    rate: float          # renewals per second, counted by the landlord
    term: float          # the term it granted then
    seconds: float       # how long it was counted
    policy_rate: float | None = None   # the adaptive policy's own measure, and its renewals per term
    per_term: float | None = None


def spawn(args: argparse.Namespace, side: str) -> ChildProcess:
    more = ["--side", side, "--cap", repr(args.cap), "--min-term", repr(args.min_term), "--max-term",
            repr(args.max_term), "--window", repr(args.window), "--fixed-term", repr(args.fixed_term)]
    return ChildProcess(os.path.abspath(__file__), "--child", "landlord", *more, name=f"the {side} landlord",
                        stderr="inherit", env=UNBUFFERED, new_session=True)


def run_side(args: argparse.Namespace, side: str, lost: list[str]) -> list[Step]:
    """Grow one landlord's leases step by step under one renewal manager; what it served at each step."""
    child = spawn(args, side)
    manager = landlord.LeaseRenewalManager(batch_window=BATCH_WINDOW)
    steps: list[Step] = []

    def on_lost(event: LeaseRenewalEvent) -> None:
        lost.append(f"{side}: lease lost: {event.exception!r:.200}")

    try:
        try:
            uri = child.read_uri(START_TIMEOUT)
        except WaitFailed as exc:
            raise RuntimeError(str(exc)) from None
        with Pyro5.api.Proxy(uri) as proxy:
            proxy._pyroTimeout = CALL_TIMEOUT
            for _ in range(args.steps):
                granted = 0
                while granted < args.leases:
                    chunk = min(GRANT_CHUNK, args.leases - granted)
                    for lease in proxy.grant_many(chunk, ANY):
                        manager.renew_for(lease, FOREVER, on_lost, renew_duration=ANY)
                    granted += chunk
                interval = proxy.stats()["term"] * RENEW_AFTER
                time.sleep(max(MIN_SETTLE, args.settle * interval))
                before = proxy.stats()
                time.sleep(max(MIN_MEASURE, args.measure * before["term"] * RENEW_AFTER))
                after = proxy.stats()
                seconds = after["at"] - before["at"]
                step = Step(after["held"], (after["renewals"] - before["renewals"]) / seconds, after["term"],
                            seconds, after["policy_rate"], after["per_term"])
                steps.append(step)
                progress(f"{side}: {step.leases:,} leases, {step.rate:,.0f} renewals/s ({step.rate / args.cap:.2f} "
                         f"of the cap), term {step.term:.3g} s")
    finally:
        manager.close()
        if harness.stop_child(child) is None:
            progress(f"warning: the {side} landlord ignored SIGTERM and had to be killed")
    return steps


def measure(args: argparse.Namespace) -> Report:
    """Both landlords in turn, adaptive first; a row per step."""
    lost: list[str] = []
    adaptive = run_side(args, "adaptive", lost)
    fixed = run_side(args, "fixed", lost)
    cap = args.cap
    rows = [Row(f"renewals/s served at {ours.leases:,} leases", ours.rate, theirs.rate, "renewals a second",
                limit=cap, extra={"leases": ours.leases, "fixed_leases": theirs.leases, "term": ours.term,
                                  "fixed_term": theirs.term, "share_of_cap": ours.rate / cap,
                                  "fixed_share_of_cap": theirs.rate / cap, "policy_rate": ours.policy_rate,
                                  "renewals_per_term": ours.per_term, "seconds": ours.seconds,
                                  "fixed_seconds": theirs.seconds})
            for ours, theirs in zip(adaptive, fixed)]
    notes = [f"{'leases':>8} | {'adaptive: /s':>12} {'/cap':>5} {'term s':>7} {'k':>5} {'policy /s':>9} "
             f"| {'fixed: /s':>10} {'/cap':>5} {'term s':>7}"]
    for ours, theirs in zip(adaptive, fixed):
        notes.append(f"{ours.leases:>8,} | {ours.rate:>12,.0f} {ours.rate / cap:>5.2f} {ours.term:>7.3g} "
                     f"{ours.per_term or 0:>5.2f} {ours.policy_rate or 0:>9,.0f} | {theirs.rate:>10,.0f} "
                     f"{theirs.rate / cap:>5.2f} {theirs.term:>7.3g}")
    if adaptive and fixed:
        notes += ["", f"from {adaptive[0].leases:,} to {adaptive[-1].leases:,} leases the fixed term's load grew "
                      f"{fixed[-1].rate / fixed[0].rate:.1f}x; the adaptive policy's stayed at "
                      f"{min(s.rate for s in adaptive) / cap:.2f}-{max(s.rate for s in adaptive) / cap:.2f} of "
                      f"its cap (it aims at {AIM:g}), its term grew {adaptive[-1].term / adaptive[0].term:.1f}x",
                  "k: the adaptive policy's measured renewals per lease per term; policy /s: its own measure "
                  "of the rate (over its window); /s: counted by the landlord's hook over the step's count"]
    return Report(rows, notes=notes, problems=lost[:10], title=(
        f"renewals per second served as the leases grow {args.steps}x ({args.leases:,} a step): "
        f"AdaptivePolicy(renewal_cap={cap:g}, min_term={args.min_term:g}, max_term={args.max_term:g}, "
        f"window={args.window:g}) against a fixed {args.fixed_term:g} s term; one LeaseRenewalManager "
        f"(renew_duration=ANY, batch_window={BATCH_WINDOW:g}); each step counted after {args.settle:g} "
        f"renewal interval(s), over {args.measure:g} (at least {MIN_SETTLE:g} s and {MIN_MEASURE:g} s); "
        f"accelerated: terms of seconds"))


if __name__ == "__main__":
    raise SystemExit(BENCH.main(measure, children={"landlord": serve}))
