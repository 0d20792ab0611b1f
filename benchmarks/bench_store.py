"""What durability costs: a landlord on a LeaseStore against the same landlord in memory.

What is measured
----------------
An in-process :class:`landlord.Landlord` (no daemon: the store's cost alone)
with ``--leases`` leases, once with ``store=LeaseStore(file)`` and once
without (the baseline, in the same run, same operations, same order):

* ``grant``     -- ``new_lease``: one SQLite transaction per lease;
* ``renew``     -- ``renew(cookie, duration)``: one transaction per call;
* ``renew_all`` -- ``renew_all`` in batches of ``--batch``: one transaction
  per 1,000 leases (the manager's chunk), reported per lease;
* ``cancel``    -- ``cancel(cookie)``: one transaction per call;
* ``restart``   -- opening a new landlord on the file holding them all
  (reading every lease back), per lease; the baseline has nothing to restart
  from, so only the landlord's figure is printed.

Each section runs ``--rounds`` times and the best round is kept (noise on a
shared machine only ever adds time). The file is on ``--dir`` (default: a
temporary directory; on tmpfs the figures are the CPU cost alone, on a disk
they include the WAL's writes). ``--synchronous FULL`` adds an fsync per
transaction. Run ``python benchmarks/bench_store.py --help`` for the options.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import landlord
from landlord import Landlord, LeaseDurationPolicy, LeaseStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine_info, positive_int  # noqa: E402


def timed(operation: Callable[[], Any]) -> float:
    started = time.perf_counter()
    operation()
    return time.perf_counter() - started


def measure(leases: int, batch: int, store_path: Path | None, synchronous: str) -> dict[str, float]:
    """Seconds per lease for each operation, on one landlord (durable when ``store_path`` is given)."""
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
    return {name: seconds / leases for name, seconds in figures.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The cost of a durable LeaseStore against an in-memory landlord.")
    parser.add_argument("--leases", type=positive_int, default=20_000, help="leases per round (default 20,000)")
    parser.add_argument("--batch", type=positive_int, default=10_000, help="leases per renew_all (default 10,000)")
    parser.add_argument("--rounds", type=positive_int, default=3, help="rounds; the best is kept (default 3)")
    parser.add_argument("--dir", type=Path, default=None, help="where the SQLite file goes (default: a temp dir)")
    parser.add_argument("--synchronous", choices=landlord.store.SYNCHRONOUS_MODES, default="NORMAL")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    args = parser.parse_args(argv)

    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        path = Path(scratch) / "leases.sqlite"
        durable: dict[str, float] = {}
        memory: dict[str, float] = {}
        for _ in range(args.rounds):  # alternated, so that a noisy moment hits both
            for best, store_path in ((durable, path), (memory, None)):
                for name, seconds in measure(args.leases, args.batch, store_path, args.synchronous).items():
                    best[name] = min(best.get(name, seconds), seconds)

    rows = []
    print(f"{'operation':<10} {'durable µs':>11} {'in memory µs':>13} {'cost':>7}")
    for name in ("grant", "renew", "renew_all", "cancel", "restart"):
        on_disk, in_memory = durable[name] * 1e6, memory.get(name, 0.0) * 1e6
        cost = f"{on_disk / in_memory:.1f}x" if in_memory else "—"
        print(f"{name:<10} {on_disk:>11.1f} {f'{in_memory:.1f}' if in_memory else '—':>13} {cost:>7}")
        rows.append({"metric": f"{name}, durable ({args.synchronous}) vs in memory, per lease",
                     "landlord": on_disk, "baseline": in_memory or None, "unit": "µs/lease", "goal": None,
                     "met": None})
    wall = time.monotonic() - started
    info = machine_info(landlord)
    print(f"\n{args.leases:,} leases, best of {args.rounds}, synchronous={args.synchronous}, "
          f"file in {args.dir or tempfile.gettempdir()}; {info['python']} on {info['platform']}; {wall:.0f} s")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"name": "store", "rows": rows, "machine": info, "wall_seconds": wall,
                       "config": {"leases": args.leases, "batch": args.batch, "rounds": args.rounds,
                                  "synchronous": args.synchronous}}, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
