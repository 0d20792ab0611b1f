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
import textwrap
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import figure, finite, lines_of, ratio_of, table

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
IMAGES = ROOT / "docs" / "img"

# (script, extra arguments, name of its report if not the script's own): in the order of the list
BENCHMARKS: list[tuple[str, list[str], str | None]] = [
    ("bench_renew.py", [], None),
    ("bench_wire.py", [], None),
    ("bench_etcd.py", [], None),
    ("bench_lookup.py", [], None),
    ("bench_pyrons.py", [], None),
    # the liveness pings' cost at issue 28's larger size: 10,000 names registered through the face
    ("bench_pyrons.py", ["--names", "10000"], "pyrons_10k"),
    ("bench_expiry.py", [], None),
    ("bench_scale.py", [], None),  # with its memory pass: the grantor's bytes per lease at 1M is a goal
    ("bench_renewal_manager.py", [], None),
    ("bench_store.py", [], None),
    ("bench_replicated.py", [], None),
    # the failover goal's size: a million leases written to etcd first, held by the group; TTL 1 (docs/replication.md)
    ("bench_replicated.py", ["--failover-held", "1000000", "--ttl", "1"], "replicated_1m"),
    ("bench_metrics.py", [], None),
    ("bench_adaptive.py", [], None),
    ("bench_aio.py", [], None),
    ("bench_holders.py", [], None),
    ("bench_locks.py", [], None),
    ("bench_lock_safety.py", [], None),
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


RATIO_CAP = 3.0  # the ratio axes end here (linear); a longer bar is cut, and its value printed on it
GOAL_REACH = 2.0  # a goal up to this many times RATIO_CAP moves the axis' end; a further one (30x) is printed
COLOURS = {True: "tab:green", False: "tab:red", None: "tab:blue"}  # met, missed, no goal
LABEL_WIDTH = 46  # characters per line of a bar's label
TEXT_WIDTH = 0.07  # of the axis, about what a bar's printed value takes


# what each family's plot compares, for its title (a plot is read on its own)
FAMILY_TITLES = {
    "renew": "renewals against raw Pyro5 calls of their shape, on serpent and msgpack",
    "etcd": "landlord against etcd (single member on loopback, data on tmpfs)",
    "lookup": "the lookup service against the Pyro5 name server",
    "pyrons": "the lookup service's name server face (--pyro-ns) against Pyro5's own name server",
    "pyrons_10k": "the name server face at 10,000 names, and the cost of its pings",
    "expiry": "the reapers against a bare dict + SortedList + one sleeping thread",
    "renewal": "the renewal manager's CPU against raw calls of its calls' shape",
    "store": "the SQLite LeaseStore against a landlord in memory",
    "replicated": "a replicated landlord against in-memory, SQLite and etcd",
    "replicated_1m": "failover with 1,000,000 leases held (TTL 1), and the rows again at that size",
    "metrics": "a landlord with metrics on against one without",
    "adaptive": "an AdaptivePolicy landlord against a fixed term",
    "aio": "landlord.aio against sync lease.renew() from a thread",
    "holders": "concurrent holders, landlord and lookup service against etcd",
    "locks": "landlord.Lock against etcd, ZooKeeper and Redis locks",
    "lock_safety": "stale writes under the safety checker's pauses and kills, landlord.Lock against etcd, ZooKeeper "
                   "and Redis locks",
}


def family_of(name: Any) -> str:
    """A benchmark's family, as its plot is named: its report's name without ``bench_``."""
    return str(name or "?").removeprefix("bench_")


@dataclass
class Bar:
    """One row drawn as a ratio bar: the ratio of its median-ratio round, the min–max over its rounds, its goal."""

    label: str
    ratio: float
    low: float | None = None
    high: float | None = None
    goal: float | None = None
    met: bool | None = None


def bars_of(rows: Sequence[Mapping[str, Any]], prefix: str = "") -> list[Bar]:
    """The rows that have a ratio, as bars (``prefix`` before each label), a bar per baseline (a row with two
    is two bars, each named after its baseline and judged on its own goal); rows without a baseline are left out."""
    bars = []
    for row in (line for whole in rows for line in lines_of(whole)):
        ratio = ratio_of(row.get("landlord"), row.get("baseline"), row.get("unit"))
        if ratio is None:
            continue
        low, high = row.get("ratio_min"), row.get("ratio_max")
        spread = row.get("rounds", 1) > 1 and finite(low) and finite(high)
        goal = row.get("goal") if finite(row.get("goal")) and row.get("goal") else None
        met = row.get("met") if isinstance(row.get("met"), bool) else None
        bars.append(Bar(prefix + str(row.get("metric")), ratio, low if spread else None, high if spread else None,
                        goal, met))
    return bars


def axis_end(bars: Sequence[Bar], cap: float = RATIO_CAP) -> float:
    """Where a ratio axis ends: ``cap``, or further if a goal lies beyond it (up to ``GOAL_REACH`` times
    ``cap``: a goal of 30x would squash every other bar), or closer if every bar and whisker ends well before
    it (but never before 1.2: 1, the baseline, is always in sight)."""
    reach = max([bar.ratio for bar in bars] + [bar.high or 0 for bar in bars] + [1.0])
    goals = [bar.goal for bar in bars if bar.goal and bar.goal <= GOAL_REACH * cap]
    return max(min(cap, reach * 1.15), 1.2, max(goals, default=0) * 1.1)


def draw_bars(ax: Any, bars: Sequence[Bar], end: float) -> list[Any]:
    """Horizontal ratio bars on a linear axis from 0 to ``end``: whiskers over the rounds, the goal per bar, 1
    marked; a bar or whisker past ``end`` is cut there, hatched, its value printed. The legend's handles."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    positions = range(len(bars))
    ax.barh(positions, [min(bar.ratio, end) for bar in bars], color=[COLOURS[bar.met] for bar in bars],
            hatch=["//" if bar.ratio > end else "" for bar in bars], edgecolor="white", height=0.7, zorder=2)
    for i, bar in enumerate(bars):
        if bar.low is not None and bar.high is not None:
            low, high = min(bar.low, end), min(bar.high, end)
            ax.plot([low, high], [i, i], color="black", linewidth=1, zorder=3)
            for x in (low, high):
                ax.plot([x, x], [i - 0.15, i + 0.15], color="black", linewidth=1, zorder=3)
        if bar.goal is not None and bar.goal <= end:
            ax.plot([bar.goal, bar.goal], [i - 0.45, i + 0.45], color="black", linewidth=3, zorder=4)
        text = f"{bar.ratio:.2f}x" if bar.ratio < 100 else f"{bar.ratio:,.0f}x"
        goal_off = f", goal {bar.goal:g}x" if bar.goal is not None and bar.goal > end else ""  # said in words
        inside = {"va": "center", "ha": "right", "color": "white", "fontsize": 8, "fontweight": "bold", "zorder": 5,
                  "bbox": {"facecolor": COLOURS[bar.met], "edgecolor": "none", "pad": 1}}  # hides a whisker
        if bar.ratio > end:  # cut: the value on the bar's end, where the bar would go on
            spread = f" ({bar.low:.3g}–{bar.high:.3g})" if bar.low is not None and bar.high is not None else ""
            ax.text(end * 0.98, i, f"{text}{spread}{goal_off} →", **inside)
            continue
        if bar.high is not None and bar.high > end:  # the whisker is cut: say where it ends
            text += f" (max {bar.high:.3g})"
        text += goal_off
        # right of the bar and its whisker; past the goal if the goal would cross it
        right = max(bar.ratio, min(bar.high or 0, end)) + end * 0.01
        if bar.goal is not None and right - end * 0.01 <= bar.goal <= right + end * TEXT_WIDTH:
            right = bar.goal + end * 0.015
        if right + end * TEXT_WIDTH * len(text) / 5 < end:
            ax.text(right, i, text, va="center", ha="left", fontsize=8, zorder=5)
        else:
            ax.text(bar.ratio - end * 0.01, i, text, **inside)
    ax.axvline(1.0, color="0.35", linestyle=":", linewidth=1.5, zorder=2.5)  # over the bars: 1 is the yardstick
    ax.set_xlim(0, end)
    ax.set_ylim(len(bars) - 0.5, -0.5)
    ax.set_yticks(list(positions), [textwrap.fill(bar.label, LABEL_WIDTH) for bar in bars], fontsize=8)
    ax.grid(axis="x", color="0.9", zorder=0)
    handles: list[Any] = []
    for met, what in ((True, "goal met"), (False, "goal missed"), (None, "no goal")):
        if any(bar.met is met for bar in bars):
            handles.append(Patch(color=COLOURS[met], label=what))
    if any(bar.goal is not None for bar in bars):
        handles.append(Line2D([], [], color="black", linewidth=3, label="goal"))
    if any(bar.low is not None for bar in bars):
        handles.append(Line2D([], [], color="black", linewidth=1, marker="|", markersize=8,
                              label="min–max over the rounds"))
    if any(bar.ratio > end for bar in bars):
        handles.append(Patch(facecolor="0.6", hatch="//", edgecolor="white", label=f"cut at {end:g}x (value on it)"))
    handles.append(Line2D([], [], color="0.35", linestyle=":", linewidth=1.5, label="1x: as good as the baseline"))
    return handles


def bar_figure(plt: Any, bars: Sequence[Bar], title: str, path: Path, footnote: str = "") -> Path:
    """One figure of ratio bars, its legend and ``footnote`` below, written to ``path``."""
    lines = sum(len(textwrap.wrap(bar.label, LABEL_WIDTH)) or 1 for bar in bars)
    notes = footnote.count("\n") + 1 if footnote else 0
    below = 0.5 + 0.13 * notes + (0.1 if notes else 0)  # inches: the legend, the footnote
    height = 0.22 * lines + 0.3 * len(bars) + 1.1 + below
    fig, ax = plt.subplots(figsize=(10, height))
    handles = draw_bars(ax, bars, axis_end(bars))
    ax.set_xlabel("ratio: times better than the baseline measured in the same run (> 1: landlord better)", fontsize=9)
    ax.set_title(title, fontsize=11)
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, (below + 0.02) / height), ncol=3,
               fontsize=8, frameon=False)
    if footnote:
        fig.text(0.01, 0.08 / height, footnote, fontsize=7, va="bottom", ha="left", color="0.3")
    fig.tight_layout(rect=(0, below / height, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def unplotted(rows: Sequence[Mapping[str, Any]], most: int = 6) -> str:
    """The rows without a ratio (no baseline), as lines for a footnote."""
    left = [line for row in rows for line in lines_of(row)
            if ratio_of(line.get("landlord"), line.get("baseline"), line.get("unit")) is None]
    lines = [f"{row.get('metric')}: {figure(row.get('landlord'))} {row.get('unit') or ''}".strip()
             for row in left[:most]]
    if len(left) > most:
        lines.append(f"... and {len(left) - most} more (in benchmarks/results.json)")
    return "no baseline, so not drawn: " + "; ".join(lines) if lines else ""


def plot_scale(plt: Any, scale: Mapping[str, Any], path: Path) -> Path | None:
    """Cost per operation against leases held, landlord solid and the bare baseline dashed (left), and the
    ratio with its min–max (right)."""
    from matplotlib.lines import Line2D

    series: dict[str, list[Mapping[str, Any]]] = {}
    for row in scale.get("rows", []):
        if row.get("size") and row.get("op") and finite(row.get("landlord")):
            series.setdefault(str(row["op"]), []).append(row)
    if not series:
        return None
    fig, (costs, ratios) = plt.subplots(1, 2, figsize=(12, 4.8))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for number, (op, rows) in enumerate(sorted(series.items())):
        rows.sort(key=lambda row: row["size"])
        colour = colours[number % len(colours)]
        sizes = [row["size"] for row in rows]
        costs.plot(sizes, [row["landlord"] for row in rows], marker="o", color=colour, label=op)
        base = [(row["size"], row["baseline"]) for row in rows if finite(row.get("baseline"))]
        if base:
            costs.plot([b[0] for b in base], [b[1] for b in base], marker="s", markersize=4, linestyle="--",
                       color=colour)
        points = [(row["size"], ratio, row) for row in rows
                  if (ratio := ratio_of(row.get("landlord"), row.get("baseline"), row.get("unit"))) is not None]
        if points:
            lows = [p[1] - (p[2].get("ratio_min") or p[1]) if p[2].get("rounds", 1) > 1 else 0 for p in points]
            highs = [(p[2].get("ratio_max") or p[1]) - p[1] if p[2].get("rounds", 1) > 1 else 0 for p in points]
            # nudged sideways so that the ops' whiskers do not hide each other
            xs = [p[0] * 1.08 ** (number - len(series) / 2) for p in points]
            ratios.errorbar(xs, [p[1] for p in points], yerr=[lows, highs], marker="o", color=colour, capsize=3,
                            label=op)
    costs.set_xscale("log")
    costs.set_xlabel("leases held")
    costs.set_ylabel("µs per operation")
    costs.set_title("Cost per operation: landlord (solid) against\na bare dict + SortedList (dashed)", fontsize=10)
    style = [Line2D([], [], color="black", marker="o", label="landlord"),
             Line2D([], [], color="black", marker="s", markersize=4, linestyle="--",
                    label="baseline: dict + SortedList")]
    first = costs.legend(loc="upper left", fontsize=8, title="op", title_fontsize=8)
    costs.add_artist(first)
    costs.legend(handles=style, loc="lower right", fontsize=8)
    costs.set_ylim(bottom=0)
    ratios.axhline(1.0, color="grey", linestyle=":", linewidth=1.5, label="1x: as fast as the baseline")
    goals = {float(row["goal"]) for rows in series.values() for row in rows if finite(row.get("goal"))}
    for goal in sorted(goals):
        ratios.axhline(goal, color="black", linewidth=2, label=f"goal {goal:g}x")
    ratios.set_xscale("log")
    ratios.set_ylim(0, max(1.2, max((row.get("ratio_max") or 0 for rows in series.values() for row in rows),
                                    default=1) * 1.1))
    ratios.set_xlabel("leases held")
    ratios.set_ylabel("baseline time / landlord time (> 1: landlord faster)")
    ratios.set_title("Ratio to the baseline, whiskers: min–max over the rounds", fontsize=10)
    ratios.legend(fontsize=8, loc="upper left", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot(results: list[dict[str, Any]], images: Path = IMAGES) -> list[Path]:
    """The plots of docs/performance.md, into ``images``: every goal (``ratios.png``), the expiry delays, the
    scale curves, and one plot of ratio bars per benchmark family (``<family>.png``; scale's is ``scale.png``).
    Nothing (and a note) without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plots (pip install -e '.[bench]')")
        return []
    images.mkdir(parents=True, exist_ok=True)
    made: list[Path] = []
    by_family = {family_of(r.get("name")): r for r in results}

    goals = [bar for r in results for bar in bars_of(r.get("rows", []), f"{family_of(r.get('name'))}: ")
             if bar.goal is not None]
    if goals:
        made.append(bar_figure(plt, goals, "Every goal, each ratio against its baseline measured in the same run",
                               images / "ratios.png"))

    samples = by_family.get("expiry", {}).get("samples")
    if samples:
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.boxplot([samples[k] for k in samples], showfliers=True, whis=(1, 99))
        ax.set_xticks(range(1, len(samples) + 1), list(samples))
        ax.set_yscale("log")
        ax.set_ylabel("delay from expiration to on_expire (ms)")
        ax.set_title("Expiry delay per reaper, 100,000 live leases")
        fig.tight_layout()
        made.append(images / "expiry_delay.png")
        fig.savefig(made[-1], dpi=110)
        plt.close(fig)

    for family, result in by_family.items():
        rows = result.get("rows", [])
        if family == "scale":
            drawn = plot_scale(plt, result, images / "scale.png")
            made += [drawn] if drawn is not None else []
            continue
        bars = bars_of(rows)
        if not bars:
            print(f"{family}: no row has a baseline, so no plot of ratios")
            continue
        what = FAMILY_TITLES.get(family, "landlord against its baseline")
        made.append(bar_figure(plt, bars, f"{family}: {what}, in the same run",
                               images / f"{family}.png", textwrap.fill(unplotted(rows), 170)))
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run every benchmark and print one table of figures and ratios.")
    parser.add_argument("--only", nargs="*", help="run only these scripts (e.g. bench_renew.py)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds allowed per benchmark (default 900)")
    parser.add_argument("--results", type=Path, default=HERE / "results.json", help="where to write all results")
    parser.add_argument("--from-results", action="store_true",
                        help="run nothing: print the table and draw the plots from --results")
    parser.add_argument("--quick", action="store_true",
                        help="run every benchmark with --quick: small and fast, a check that they all work")
    parser.add_argument("--images", type=Path, default=IMAGES,
                        help="where the plots go (default: docs/img, where docs/performance.md shows them)")
    args = parser.parse_args(argv)
    if args.from_results:
        saved = json.loads(args.results.read_text())
        print(table(saved["results"]))
        print(f"\nmachine: {saved['machine']}")
        for path in plot(saved["results"], args.images):
            print(f"plot: {path}")
        return 0
    started = time.monotonic()
    results: list[dict[str, Any]] = []
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        for script, extra, name in BENCHMARKS:
            if args.only and script not in args.only or args.quick and name:
                continue  # --quick: a variant is the same script at another size, already checked
            result, failure = run(script, extra + ["--quick"] * args.quick, Path(scratch) / f"{script}.json",
                                  args.timeout)
            if result is not None:
                result["name"] = name or result.get("name") or script.removesuffix(".py")
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
    for path in plot(results, args.images):
        print(f"plot: {path}")
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
