"""The pure helpers of the benchmarks: the harness's rows (one baseline or two, each judged on its own median
round), run_all's plots (which rows become bars, where the axis ends, which files are drawn) and bench_holders'
percentiles and split of holders over processes. No timing here."""

from __future__ import annotations

import dataclasses
import math
import pathlib
import sys
from typing import Any

import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:  # the scripts import each other as top-level modules; last, so none shadows
    sys.path.append(str(BENCHMARKS))

import bench_holders  # noqa: E402
import harness  # noqa: E402
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


def two_baselines() -> harness.Row:
    """Three rounds of a rate: landlord 10/12/11 against 5/6/7 (ratios 2, 2, 1.57) and 11/12/10 (0.91, 1, 1.1)."""
    return harness.compare("renew", "calls/s", [10.0, 12.0, 11.0], [5.0, 6.0, 7.0], [11.0, 12.0, 10.0],
                           goal=1.4, goal2=0.95, baseline_name="serpent", baseline2_name="msgpack")


def test_each_baseline_is_judged_on_its_own_median_round() -> None:
    row = two_baselines()
    assert (row.landlord, row.baseline, row.ratio) == (10.0, 5.0, 2.0)  # of 1.57, 2, 2: the middle one
    assert (row.landlord2, row.baseline2, row.ratio2) == (12.0, 12.0, 1.0)  # of 0.91, 1, 1.1: not round 1's 0.91
    assert (row.spread["ratio_min"], row.spread["ratio_max"]) == (pytest.approx(11 / 7), 2.0)
    assert (row.spread["ratio2_min"], row.spread["ratio2_max"]) == (pytest.approx(10 / 11), pytest.approx(1.1))
    assert (row.spread["baseline2_min"], row.spread["baseline2_max"]) == (10.0, 12.0)
    assert row.met is True and row.met2 is True


def test_a_row_is_met_only_if_both_goals_are() -> None:
    row = two_baselines()
    assert dataclasses.replace(row, goal2=1.05).met is False  # the second goal alone missed
    assert dataclasses.replace(row, goal=2.5).met is False    # the first alone
    assert dataclasses.replace(row, goal=None, limit=None).met is True  # only the second to judge
    no_second = dataclasses.replace(row, baseline2=None, landlord2=None)
    assert no_second.ratio2 is None and no_second.met2 is None and no_second.met is None


def test_a_second_baseline_without_goals_leaves_the_verdict_alone() -> None:
    row = harness.Row("cpu", 3.0, 2.0, "µs", baseline2=1.5)
    assert (row.ratio, row.ratio2, row.met) == (pytest.approx(2 / 3), 0.5, None)
    assert row.as_json()["landlord2"] == 3.0  # no landlord2 of its own: the row's


def test_one_baseline_rows_keep_their_json() -> None:
    row = harness.compare("lat", "ms", [1.0, 2.0, 3.0], [2.0, 3.0, 4.0], goal=1.0).as_json()
    assert not any("2" in key for key in row)
    assert harness.lines_of(row) == [row]


def test_two_baselines_are_two_lines_each_with_its_verdict() -> None:
    whole = dataclasses.replace(two_baselines(), goal2=1.05).as_json()
    assert whole["met"] is False and whole["met2"] is False
    first, second = harness.lines_of(whole)
    assert (first["metric"], first["landlord"], first["baseline"], first["goal"], first["met"]) == (
        "renew, vs serpent", 10.0, 5.0, 1.4, True)
    assert (second["metric"], second["landlord"], second["baseline"], second["goal"], second["met"]) == (
        "renew, vs msgpack", 12.0, 12.0, 1.05, False)
    assert (second["ratio_min"], second["rounds"]) == (pytest.approx(10 / 11), 3)
    printed = harness.table([{"name": "renew", "rows": [whole]}]).splitlines()
    assert [line.split()[-1] for line in printed[2:4]] == ["PASS", "MISS"]
    assert "renew, vs msgpack" in printed[3] and "0.91–1.10x" in printed[3]


def test_a_row_with_two_baselines_is_two_bars() -> None:
    bars = run_all.bars_of([dataclasses.replace(two_baselines(), goal2=1.05).as_json()])
    assert [(bar.label, bar.ratio, bar.goal, bar.met) for bar in bars] == [
        ("renew, vs serpent", 2.0, 1.4, True), ("renew, vs msgpack", 1.0, 1.05, False)]
    assert (bars[1].low, bars[1].high) == (pytest.approx(10 / 11), pytest.approx(1.1))


def test_the_axis_ends_at_the_cap_past_a_goal_and_never_before_one() -> None:
    assert run_all.axis_end([run_all.Bar("big", 12.0, 11.0, 13.0)]) == run_all.RATIO_CAP
    assert run_all.axis_end([run_all.Bar("goal", 1.0, goal=3.0)]) == pytest.approx(3.3)
    assert run_all.axis_end([run_all.Bar("small", 0.2, 0.1, 0.3)]) == pytest.approx(1.2)
    assert run_all.axis_end([run_all.Bar("some", 1.5, 1.4, 2.0)]) == pytest.approx(2.3)
    # a goal far past the cap (30x) would squash every other bar: it is printed, not reached for
    assert run_all.axis_end([run_all.Bar("far", 21.0, 16.0, 23.0, goal=30.0)]) == run_all.RATIO_CAP
    assert run_all.axis_end([run_all.Bar("near", 1.0, goal=5.0)]) == pytest.approx(5.5)


def test_family_names_drop_the_bench_prefix() -> None:
    assert run_all.family_of("bench_renew") == "renew"
    assert run_all.family_of("holders") == "holders"
    assert run_all.family_of(None) == "?"


def test_plot_draws_every_goal_every_family_and_scale_with_its_baseline(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("matplotlib")
    results = [
        {"name": "bench_renew", "rows": [row("renew", 0.8, 1.0, goal=0.9, met=False, rounds=3, ratio_min=0.7,
                                             ratio_max=0.85), two_baselines().as_json()]},
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
