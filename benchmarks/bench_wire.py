"""Which serializer landlord's own calls should speak: the same calls on serpent, json and msgpack (issue 26, item 1).

A landlord runs in another process (``--child landlord``: a plain Pyro5
daemon on loopback, the thread server). This process is one client thread
making landlord's real calls, through landlord's own code, with its proxies
set in turn to each serializer (Pyro5 chooses the serializer per message,
and the daemon answers in kind):

1. ``lease.renew()`` of one ``LandlordLease``, in blocks of ``--block`` calls
   taking turns until each serializer has had ``--seconds``;
2. ``LeaseMap.renew_all()`` of ``--leases`` leases (in calls of 1,000, as a
   holder sends them), the serializers taking turns by the round;
3. a ``Lock`` acquired and released (``acquire``, then ``cancel``), in
   blocks as in 1.

landlord's side is ``landlord-msgpack`` (what it speaks since issue 26,
``landlord/transport/serializers.py``); the baseline is serpent (what it
spoke before, and Pyro5's default), the second baseline json. A ratio above 1
is how many times faster msgpack is. The options, rounds, table and JSON are
the harness's (``harness.py``); ``--help`` lists them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import harness
import msgpack
import Pyro5
import Pyro5.api
import serpent
from harness import Report, ServerProcess, positive_int, positive_seconds

import landlord
from landlord import Landlord, LandlordLease, LeaseDurationPolicy, LeaseMap, Lock
from landlord.transport import proxies
from landlord.transport.serializers import WIRE_SERIALIZER

TERM = 3600.0
SERIALIZERS = {WIRE_SERIALIZER: "msgpack (landlord's dialect)", "serpent": "serpent", "json": "json"}
CALL_TIMEOUT = 120.0

BENCH = harness.Benchmark(
    "bench_wire", "landlord's own calls (renew, renew_all, a lock's acquire and release) on msgpack, the "
    "serializer it speaks, against the same calls on serpent and json, in the same run.",
    modules=(landlord, Pyro5, serpent, msgpack), quick={"seconds": 0.3, "rounds": 2, "leases": 2000, "block": 100})
BENCH.option("--seconds", positive_seconds, 2.0, "renew and lock: seconds per serializer per round")
BENCH.option("--block", positive_int, 500, "renew and lock: calls per block while taking turns")
BENCH.option("--leases", positive_int, 10_000, "renew_all: leases kept alive, in calls of 1,000")


class WireLandlord(Landlord):
    """A landlord that rents in bulk (named leases, for the lock, are the landlord's own)."""

    def __init__(self) -> None:
        super().__init__(policy=LeaseDurationPolicy(maximum=TERM, default=TERM))

    @Pyro5.api.expose
    def rent(self, count: int) -> list[LandlordLease]:
        return [self.new_lease(i, TERM) for i in range(count)]


def serve(args: argparse.Namespace) -> int:
    return harness.serve_forever(WireLandlord())


def speaking(uri: str, serializer: str, call: Callable[[], Any]) -> Callable[[], Any]:
    """``call``, made with this thread's proxy for ``uri`` set to ``serializer`` first."""
    def made() -> Any:
        proxies.proxy_for(uri)._pyroSerializer = serializer
        return call()
    return made


def rows_for(metric: str, unit: str, figures: dict[str, list[float]], **row: Any) -> harness.Row:
    return harness.compare(metric, unit, figures[WIRE_SERIALIZER], figures["serpent"], figures["json"],
                           baseline_name="the same on serpent", baseline2_name="the same on json", **row)


def measure(args: argparse.Namespace) -> Report:
    server = ServerProcess(__file__, "landlord", "landlord")
    try:
        uri = server.uri()
        with Pyro5.api.Proxy(uri) as boss:
            boss._pyroTimeout = CALL_TIMEOUT
            leases: list[LandlordLease] = []
            while len(leases) < args.leases:
                leases += boss.rent(min(1000, args.leases - len(leases)))
        one, lock = leases[0], Lock(uri, "bench.wire")

        def cycle() -> None:
            lock.acquire()
            lock.release()

        renew: dict[str, list[float]] = {name: [] for name in SERIALIZERS}
        locked: dict[str, list[float]] = {name: [] for name in SERIALIZERS}
        for number in range(args.rounds):
            harness.progress(f"renew and lock: round {number + 1} of {args.rounds}...")
            for figures, call in ((renew, lambda: one.renew(TERM)), (locked, cycle)):
                rates = harness.interleave({name: speaking(uri, name, call) for name in SERIALIZERS},
                                           args.seconds, args.block)
                for name, rate in rates.items():
                    figures[name].append(rate)
        batch = LeaseMap(dict.fromkeys(leases, TERM))
        batched = harness.alternate(
            {name: speaking(uri, name, lambda: harness.rate(batch.renew_all, 0.5, len(leases)))
             for name in SERIALIZERS}, args.rounds, what="renew_all")
        proxies.proxy_for(uri)._pyroSerializer = WIRE_SERIALIZER
    finally:
        server.stop()
    rows = [rows_for("lease.renew(), one client thread", "calls/s", renew),
            rows_for(f"LeaseMap.renew_all(), {args.leases:,} leases in calls of 1,000", "leases/s", batched),
            rows_for("Lock acquire and release", "cycles/s", locked)]
    return Report(rows, title=(
        "landlord's own calls on msgpack (landlord's dialect) against the same on serpent (baseline) and json "
        "(second baseline): one client thread, a landlord in another process on a plain Pyro5 daemon"))


if __name__ == "__main__":
    raise SystemExit(BENCH.main(measure, children={"landlord": serve}))
