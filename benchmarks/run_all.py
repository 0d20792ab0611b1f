"""Run every side-by-side benchmark and print one table: what ``make bench`` does.

Each benchmark script runs in its own process with ``--json``; this script
collects their rows (metric, landlord figure, baseline figure, unit, ratio,
goal, met: the harness's, ``harness.py``) into one table, writes them all to
``benchmarks/results.json``, and draws the plots of docs/performance.md into
``docs/img/`` when matplotlib is installed (``pip install -e '.[bench]'``).

A benchmark that fails (exits non-zero, times out, writes no report) or leaves
a row without a figure fails the run: the table of what was got is printed
all the same, then what failed, and the exit status is 1. Goals missed are
measurements, not failures. ``--quick`` runs every benchmark with its
``--quick`` (small, fast, figures meaning little): a check that they all work.

Never part of ``make test``: every figure here is a measurement, and
measurements are not assertions.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import ratio_of, table

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
IMAGES = ROOT / "docs" / "img"

# (script, extra arguments): in the order of the list
BENCHMARKS: list[tuple[str, list[str]]] = [
    ("bench_renew.py", []),
    ("bench_etcd.py", []),
    ("bench_lookup.py", []),
    ("bench_expiry.py", []),
    ("scale.py", ["--no-memory"]),
    ("renewal.py", []),
    ("bench_store.py", []),
    ("bench_replicated.py", []),
    ("bench_metrics.py", []),
    ("bench_adaptive.py", []),
    ("bench_aio.py", []),
]


def run(script: str, args: list[str], out: Path, timeout: float) -> tuple[dict[str, Any] | None, str]:
    """Run one benchmark: its JSON report (even when it failed, if it wrote one), and what went wrong ('' if
    nothing), printed."""
    started = time.monotonic()
    print(f"== {script} {' '.join(args)}", flush=True)
    try:
        done = subprocess.run([sys.executable, str(HERE / script), *args, "--json", str(out)],
                              timeout=timeout, text=True, capture_output=True)
    except subprocess.TimeoutExpired:
        print(f"   {script}: no result within {timeout:g} s", flush=True)
        return None, f"no result within {timeout:g} s"
    took = time.monotonic() - started
    result = json.loads(out.read_text()) if out.exists() else None
    rows = result.get("rows", []) if result else []
    failures = [f"exit status {done.returncode}"] if done.returncode else []
    failures += ["no report"] if result is None else [] if rows else ["no rows"]
    missing = [str(row.get("metric")) for row in rows if row.get("landlord") is None]
    failures += [f"no figure for {', '.join(missing)}"] if missing else []
    if failures:
        print(f"   {script}: failed ({'; '.join(failures)}) after {took:.0f} s", flush=True)
        print("   " + "\n   ".join((done.stdout + done.stderr).strip().splitlines()[-15:]), flush=True)
    else:
        print(f"   done in {took:.0f} s", flush=True)
    return result, "; ".join(failures)


def plot(results: list[dict[str, Any]]) -> list[Path]:
    """The plots of docs/performance.md; nothing (and a note) without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plots (pip install -e '.[bench]')")
        return []
    IMAGES.mkdir(parents=True, exist_ok=True)
    made: list[Path] = []
    by_name = {r.get("name"): r for r in results}

    def better(row: dict[str, Any]) -> float | None:
        return ratio_of(row.get("landlord"), row.get("baseline"), row.get("unit"))

    ratios = [(f"{r.get('name')}: {row['metric']}", better(row), row.get("goal"))
              for r in results for row in r.get("rows", [])
              if better(row) is not None and isinstance(row.get("goal"), (int, float)) and row.get("goal")]
    if ratios:
        fig, ax = plt.subplots(figsize=(9, 0.45 * len(ratios) + 1.5))
        labels = [label[:70] for label, _, _ in ratios]
        ax.barh(labels, [ratio for _, ratio, _ in ratios],
                color=["tab:green" if ratio >= goal else "tab:red" for _, ratio, goal in ratios])
        for i, (_, _, goal) in enumerate(ratios):
            ax.plot([goal, goal], [i - 0.4, i + 0.4], color="black", linewidth=2)
        ax.set_xscale("log")
        ax.invert_yaxis()
        ax.set_xlabel("landlord / baseline (black: the goal)")
        ax.set_title("Side by side, measured in the same run")
        fig.tight_layout()
        made.append(IMAGES / "ratios.png")
        fig.savefig(made[-1], dpi=110)
        plt.close(fig)

    samples = by_name.get("expiry", {}).get("samples")
    if samples:
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.boxplot([samples[k] for k in samples], showfliers=True, whis=(1, 99))
        ax.set_xticks(range(1, len(samples) + 1), list(samples))
        ax.set_yscale("log")
        ax.set_ylabel("delay from expiration to on_expire (ms)")
        ax.set_title("Expiry delay per reaper, 100,000 live leases")
        fig.tight_layout()
        made.append(IMAGES / "expiry_delay.png")
        fig.savefig(made[-1], dpi=110)
        plt.close(fig)

    scale = by_name.get("scale")
    if scale and scale.get("rows"):
        series: dict[str, list[tuple[float, float]]] = {}
        for row in scale["rows"]:
            if row.get("size") and row.get("op"):
                series.setdefault(row["op"], []).append((row["size"], row["landlord"]))
        if series:
            fig, ax = plt.subplots(figsize=(7, 4))
            for op, points in sorted(series.items()):
                points.sort()
                ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=op)
            ax.set_xscale("log")
            ax.set_xlabel("leases held")
            ax.set_ylabel("µs per operation")
            ax.set_title("Cost per operation against number of leases")
            ax.legend()
            fig.tight_layout()
            made.append(IMAGES / "scale.png")
            fig.savefig(made[-1], dpi=110)
            plt.close(fig)
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run every benchmark and print one table of figures and ratios.")
    parser.add_argument("--only", nargs="*", help="run only these scripts (e.g. bench_renew.py)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds allowed per benchmark (default 600)")
    parser.add_argument("--results", type=Path, default=HERE / "results.json", help="where to write all results")
    parser.add_argument("--from-results", action="store_true",
                        help="run nothing: print the table and draw the plots from --results")
    parser.add_argument("--quick", action="store_true",
                        help="run every benchmark with --quick: small and fast, a check that they all work")
    args = parser.parse_args(argv)
    if args.from_results:
        saved = json.loads(args.results.read_text())
        print(table(saved["results"]))
        print(f"\nmachine: {saved['machine']}")
        for path in plot(saved["results"]):
            print(f"plot: {path}")
        return 0
    started = time.monotonic()
    results: list[dict[str, Any]] = []
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        for script, extra in BENCHMARKS:
            if args.only and script not in args.only:
                continue
            result, failure = run(script, extra + ["--quick"] * args.quick, Path(scratch) / f"{script}.json",
                                  args.timeout)
            if result is not None:
                result.setdefault("name", script.removesuffix(".py"))
                results.append(result)
            if failure:
                failures.append(f"{script}: {failure}")
    print()
    print(table(results))
    print()
    machine = f"{platform.platform()}, {platform.machine()}, Python {platform.python_version()}"
    print(f"machine: {machine}; total {time.monotonic() - started:.0f} s")
    args.results.write_text(json.dumps({"machine": machine, "results": results}, indent=1, default=str))
    print(f"results: {args.results}")
    for path in plot(results):
        print(f"plot: {path}")
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
