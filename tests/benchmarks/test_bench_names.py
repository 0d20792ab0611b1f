"""The benchmarks' names: every script in benchmarks/ is a ``bench_*.py`` benchmark or one of the few that run
them (or that several share), and ``run_all`` (``make bench``) names only benchmarks that exist. No benchmark is
run here."""

from __future__ import annotations

import pathlib
import sys

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:  # the scripts import each other as top-level modules; last, so none shadows
    sys.path.append(str(BENCHMARKS))

import run_all  # noqa: E402

# what runs the benchmarks: the shared harness, the lock services two of them share, and make bench's driver
RUNNERS = {"harness.py", "lock_backends.py", "run_all.py"}


def test_every_script_is_a_bench_or_a_runner() -> None:
    scripts = {path.name for path in BENCHMARKS.glob("*.py")}
    assert RUNNERS <= scripts
    assert sorted(name for name in scripts - RUNNERS if not name.startswith("bench_")) == []


def test_run_all_names_existing_benchmarks_once() -> None:
    names = [script for script, _, _ in run_all.BENCHMARKS]
    assert all(name.startswith("bench_") and (BENCHMARKS / name).is_file() for name in names), names
    runs = [(script, tuple(extra)) for script, extra, _ in run_all.BENCHMARKS]
    assert len(runs) == len(set(runs))
    reports = [report for script, _, report in run_all.BENCHMARKS if report]  # a script run twice: its reports apart
    assert len(reports) == len(set(reports)) and not set(reports) & {name.removesuffix(".py") for name in names}
