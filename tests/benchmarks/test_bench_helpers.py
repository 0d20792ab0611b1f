"""The pure helpers of the benchmarks: run_all's plots (which rows become bars, where the axis ends, which
files are drawn) and bench_holders' percentiles and split of holders over processes. No timing here."""

from __future__ import annotations

import math
import pathlib
import sys
from typing import Any

import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:  # the scripts import each other as top-level modules; last, so none shadows
    sys.path.append(str(BENCHMARKS))

import bench_holders  # noqa: E402
import run_all  # noqa: E402


def row(metric: str, landlord: float | None, baseline: float | None, unit: str = "calls/s",
        **more: Any) -> dict[str, Any]:
    return {"metric": metric, "landlord": landlord, "baseline": baseline, "unit": unit, **more}


def test_bars_are_the_rows_with_a_ratio_the_harness_way() -> None:
    bars = run_all.bars_of([
        row("rate", 50.0, 100.0, goal=0.9, met=False, rounds=5, ratio_min=0.4, ratio_max=0.6),
        row("cost", 2.0, 1.0, "ms"),                 # a cost: baseline / landlord
        row("no baseline", 3.0, None),
        row("no figure", None, 1.0),
        row("one round", 1.0, 1.0, rounds=1, ratio_min=1.0, ratio_max=1.0, goal=0),
    ], "fam: ")
    assert [bar.label for bar in bars] == ["fam: rate", "fam: cost", "fam: one round"]
    rate, cost, single = bars
    assert (rate.ratio, rate.low, rate.high, rate.goal, rate.met) == (0.5, 0.4, 0.6, 0.9, False)
    assert cost.ratio == 0.5 and cost.goal is None and cost.met is None
    assert single.low is None and single.high is None  # no whisker from one round
    assert single.goal is None  # a goal of 0 is no goal


def test_the_axis_ends_at_the_cap_past_a_goal_and_never_before_one() -> None:
    assert run_all.axis_end([run_all.Bar("big", 12.0, 11.0, 13.0)]) == run_all.RATIO_CAP
    assert run_all.axis_end([run_all.Bar("goal", 1.0, goal=3.0)]) == pytest.approx(3.3)
    assert run_all.axis_end([run_all.Bar("small", 0.2, 0.1, 0.3)]) == pytest.approx(1.2)
    assert run_all.axis_end([run_all.Bar("some", 1.5, 1.4, 2.0)]) == pytest.approx(2.3)


def test_family_names_drop_the_bench_prefix() -> None:
    assert run_all.family_of("bench_renew") == "renew"
    assert run_all.family_of("holders") == "holders"
    assert run_all.family_of(None) == "?"


def test_plot_draws_every_goal_every_family_and_scale_with_its_baseline(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("matplotlib")
    results = [
        {"name": "bench_renew", "rows": [row("renew", 0.8, 1.0, goal=0.9, met=False, rounds=3, ratio_min=0.7,
                                             ratio_max=0.85)]},
        {"name": "etcd", "rows": [row("keep-alive", 12.0, 1.0, goal=3.0, met=True, rounds=3, ratio_min=11.0,
                                      ratio_max=13.0)]},
        {"name": "scale", "rows": [row(f"{op} at {n}", 2.0 * n ** 0.1, 1.0 * n ** 0.1, "µs/op", size=n, op=op,
                                       rounds=3, ratio_min=0.4, ratio_max=0.6)
                                   for op in ("grant", "renew") for n in (1000, 100_000)]},
        {"name": "renewal", "rows": [row("holder CPU", 22.0, None, "% of a core")]},  # nothing to draw
        {"name": "expiry", "rows": [row("delay", 0.1, 0.2, "ms")], "samples": {"sleeper": [0.1, 0.2, 0.3]}},
    ]
    made = run_all.plot(results, tmp_path)
    assert sorted(path.name for path in made) == sorted(
        ["ratios.png", "renew.png", "etcd.png", "scale.png", "expiry.png", "expiry_delay.png"])
    assert all(path.parent == tmp_path and path.stat().st_size > 0 for path in made)


def test_percentile_is_the_nearest_rank() -> None:
    values = [float(x) for x in range(1, 101)]
    assert bench_holders.percentile(values, 0.50) == 50.0
    assert bench_holders.percentile(values, 0.99) == 99.0
    assert bench_holders.percentile(values, 1.0) == 100.0
    assert bench_holders.percentile([7.0], 0.99) == 7.0
    assert math.isnan(bench_holders.percentile([], 0.5))


def test_holders_are_split_evenly_and_no_process_is_empty() -> None:
    assert bench_holders.split(1000, 4) == [250, 250, 250, 250]
    assert bench_holders.split(10, 4) == [3, 3, 2, 2]
    assert bench_holders.split(2, 4) == [1, 1]
