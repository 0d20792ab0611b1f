"""Run every side-by-side benchmark and print one table: what ``make bench`` does.

Each benchmark script runs in its own process with ``--json``; this script
collects their rows (metric, landlord figure, baseline figure, unit, ratio,
goal, met) into one table, writes them all to ``benchmarks/results.json``, and
draws the plots of docs/performance.md into ``docs/img/`` when matplotlib is
installed (``pip install -e '.[bench]'``).

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
]


def run(script: str, args: list[str], out: Path, timeout: float) -> dict[str, Any] | None:
    """Run one benchmark; its JSON results, or None (with the reason printed) when it failed."""
    started = time.monotonic()
    print(f"== {script} {' '.join(args)}", flush=True)
    try:
        done = subprocess.run([sys.executable, str(HERE / script), *args, "--json", str(out)],
                              timeout=timeout, text=True, capture_output=True)
    except subprocess.TimeoutExpired:
        print(f"   {script}: no result within {timeout:g} s", flush=True)
        return None
    took = time.monotonic() - started
    if done.returncode != 0 or not out.exists():
        print(f"   {script}: failed (exit {done.returncode}) after {took:.0f} s", flush=True)
        print("   " + "\n   ".join((done.stdout + done.stderr).strip().splitlines()[-15:]), flush=True)
        return None
    print(f"   done in {took:.0f} s", flush=True)
    return json.loads(out.read_text())  # type: ignore[no-any-return]


def figure(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def better(row: dict[str, Any]) -> float | None:
    """How many times better landlord does than the baseline (> 1: better), whatever the unit.

    Rates (a unit ending in ``/s``) are better high, costs and delays low.
    """
    landlord, baseline, unit = row.get("landlord"), row.get("baseline"), str(row.get("unit") or "")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in (landlord, baseline)):
        return None
    return landlord / baseline if unit.endswith("/s") else baseline / landlord  # type: ignore[operator]


def table(results: list[dict[str, Any]]) -> str:
    # as wide as the longest metric: a label cut short reads as another measurement
    width = max([len(str(row.get("metric"))) for result in results for row in result.get("rows", [])] + [6])
    header = (f"{'benchmark':<14} {'metric':<{width}} {'landlord':>12} {'baseline':>12} {'unit':<14} "
              f"{'ratio':>7} {'goal':>7}  met")
    lines = [header, "-" * len(header)]
    for result in results:
        for row in result.get("rows", []):
            met = {True: "PASS", False: "MISS", None: ""}.get(row.get("met"), str(row.get("met")))
            ratio = better(row)
            lines.append(f"{result.get('name', '?'):<14} {str(row.get('metric')):<{width}} "
                         f"{figure(row.get('landlord')):>12} {figure(row.get('baseline')):>12} "
                         f"{str(row.get('unit') or '')[:14]:<14} "
                         f"{(f'{ratio:.2f}x' if isinstance(ratio, (int, float)) else '—'):>7} "
                         f"{figure(row.get('goal')):>7}  {met}")
    return "\n".join(lines)


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
    with tempfile.TemporaryDirectory() as scratch:
        for script, extra in BENCHMARKS:
            if args.only and script not in args.only:
                continue
            result = run(script, extra, Path(scratch) / f"{script}.json", args.timeout)
            if result is not None:
                result.setdefault("name", script.removesuffix(".py"))
                results.append(result)
    print()
    print(table(results))
    print()
    machine = f"{platform.platform()}, {platform.machine()}, Python {platform.python_version()}"
    print(f"machine: {machine}; total {time.monotonic() - started:.0f} s")
    args.results.write_text(json.dumps({"machine": machine, "results": results}, indent=1, default=str))
    print(f"results: {args.results}")
    for path in plot(results):
        print(f"plot: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
