"""What durability costs: a landlord on a LeaseStore against the same landlord in memory.

What is measured
----------------
An in-process :class:`landlord.Landlord` (no daemon: the store's cost alone)
with ``--leases`` leases, once with ``store=LeaseStore(file)`` and once
without (the baseline, in the same run, same operations, same order):

* ``grant``     -- ``new_lease``: one SQLite transaction per lease;
* ``renew``     -- ``renew(cookie, duration)``: one transaction per call;
* ``renew_all`` -- ``renew_all`` in batches of ``--batch`` (default
  ``CALL_BATCH``, 1,000, what a holder sends a call; at most a landlord's
  ``MAX_BATCH``, 2,000): one transaction per call, reported per lease;
* ``cancel``    -- ``cancel(cookie)``: one transaction per call;
* ``restart``   -- opening a new landlord on the file holding them all
  (reading every lease back), per lease; the baseline has nothing to restart
  from, so only the landlord's figure is printed.

Each section runs ``--rounds`` times, durable and in memory taking turns, and
the median-ratio round is reported with the min and max; the ratio (in-memory
/ durable time) is below 1 by what durability costs. The file is on ``--dir`` (default: a
temporary directory; on tmpfs the figures are the CPU cost alone, on a disk
they include the WAL's writes). ``--synchronous FULL`` adds an fsync per
transaction. Options, rounds, the table and the JSON are the harness's
(``harness.py``); ``python benchmarks/bench_store.py --help`` lists them.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import harness
from harness import Report, positive_int

import landlord
from landlord import Landlord, LeaseDurationPolicy, LeaseStore
from landlord.grantor.landlord import MAX_BATCH
from landlord.holder.landlordlease import CALL_BATCH

OPERATIONS = ("grant", "renew", "renew_all", "cancel", "restart")


def timed(operation: Callable[[], Any]) -> float:
    started = time.perf_counter()
    operation()
    return time.perf_counter() - started


def one_round(leases: int, batch: int, store_path: Path | None, synchronous: str) -> dict[str, float]:
    """Microseconds per lease for each operation, on one landlord (durable when ``store_path`` is given)."""
    def open_landlord() -> Landlord:
        store = LeaseStore(store_path, synchronous=synchronous) if store_path is not None else None
        return Landlord(policy=LeaseDurationPolicy(maximum=3600), reaper="lazy", store=store)

    if store_path is not None:
        for leftover in store_path.parent.glob(store_path.name + "*"):
            leftover.unlink()
    grantor = open_landlord()
    cookies: list[str] = []
    figures = {"grant": timed(lambda: cookies.extend(grantor.new_lease(i, 600).cookie for i in range(leases)))}
    figures["renew_all"] = timed(lambda: [grantor.renew_all(cookies[i:i + batch], [900.0] * len(cookies[i:i + batch]))
                                          for i in range(0, leases, batch)])
    figures["renew"] = timed(lambda: [grantor.renew(cookie, 1200.0) for cookie in cookies])
    grantor.close()
    if store_path is not None:
        reopened: list[Landlord] = []
        figures["restart"] = timed(lambda: reopened.append(open_landlord()))
        grantor = reopened[0]
        assert len(grantor) == leases, "a lease was lost across the restart"
    else:
        grantor = open_landlord()
        cookies = [grantor.new_lease(i, 600).cookie for i in range(leases)]
    figures["cancel"] = timed(lambda: [grantor.cancel(cookie) for cookie in cookies])
    grantor.close()
    return {name: 1e6 * seconds / leases for name, seconds in figures.items()}


BENCH = harness.Benchmark("store", "The cost of a durable LeaseStore against an in-memory landlord.",
                          modules=(landlord,), quick={"leases": 2000, "rounds": 2})
BENCH.option("--leases", positive_int, 20_000, "leases per round")
BENCH.option("--batch", harness.at_most(MAX_BATCH), CALL_BATCH, "leases per renew_all, at most a landlord's MAX_BATCH")
BENCH.parser.add_argument("--dir", type=Path, default=None, help="where the SQLite file goes (default: a temp dir)")
BENCH.parser.add_argument("--synchronous", choices=landlord.grantor.store.SYNCHRONOUS_MODES, default="NORMAL")


def measure(args: argparse.Namespace) -> Report:
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        path = Path(scratch) / "leases.sqlite"
        figures = harness.alternate({"durable": lambda: one_round(args.leases, args.batch, path, args.synchronous),
                                     "memory": lambda: one_round(args.leases, args.batch, None, args.synchronous)},
                                    args.rounds, what="durable and in memory")
    rows = [harness.compare(f"{name}, durable ({args.synchronous}) vs in memory, per lease", "µs/lease",
                            [r[name] for r in figures["durable"]],
                            [r[name] for r in figures["memory"] if name in r] or None)
            for name in OPERATIONS]
    return Report(rows, title=f"{args.leases:,} leases, synchronous={args.synchronous}, file in "
                              f"{args.dir or tempfile.gettempdir()}; the baseline has no restart",
                  extra={"config": {"leases": args.leases, "batch": args.batch, "rounds": args.rounds,
                                    "synchronous": args.synchronous}})


if __name__ == "__main__":
    raise SystemExit(BENCH.main(measure))
