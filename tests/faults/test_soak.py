"""A short soak through the real script: two client processes keep 2,000 leases each alive, none is lost.

``benchmarks/bench_soak.py`` is the load test of issue 6 (several clients x 10,000
leases for minutes); this runs the same script with small arguments, so the
test checks what the benchmark runs: separate landlord and client processes,
a ``LeaseRenewalManager`` per client, the landlord's own count of expiries.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "bench_soak.py"
CLIENTS = 2
LEASES = 2_000
MINUTES = 0.25        # 15 s
TERM = 3.0            # renewed about every 1.5 s by the manager's schedule
MIN_RENEWALS = 4      # per lease in the window: several rounds, not one lucky one
RUN_TIMEOUT = 120.0   # the soak is 15 s; the rest is a loaded machine starting three interpreters


def run_soak(tmp_path: pathlib.Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    report = tmp_path / "soak.json"
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), "--clients", str(CLIENTS), "--leases", str(LEASES),
         "--minutes", str(MINUTES), "--term", str(TERM), "--every", "5", "--json", str(report)],
        capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert report.exists(), f"no report; status {completed.returncode}\n{completed.stdout}\n{completed.stderr}"
    return completed, json.loads(report.read_text())


@pytest.mark.slow
def test_a_short_soak_loses_no_lease_and_renews_each_several_times(tmp_path: pathlib.Path) -> None:
    completed, report = run_soak(tmp_path)
    output = f"{completed.stdout}\n{completed.stderr}"
    assert completed.returncode == 0, output
    assert report["ok"] and report["lost"] == 0, output
    assert len(report["clients"]) == CLIENTS
    for row in report["clients"]:
        assert row["leases"] == LEASES
        assert row["lost"] == row["failed_final_renewal"] == row["expired_at_landlord"] == 0, output
        assert row["live_at_end"] == LEASES  # the landlord, not only the client, holds every one
        assert row["renewals"] >= MIN_RENEWALS * LEASES, output
        assert row["renew_calls"] > 0 and row["cpu_seconds"] > 0
    server = report["server"]
    assert server["leases_end"] == CLIENTS * LEASES
    assert server["leases_after_cancel"] == 0  # the clients' final cancel_all reached the landlord
    assert server["rss_start"] > 0 and 0 < server["cpu_percent"] < 100
    assert "leases lost: 0" in completed.stdout  # the table says so too


def test_the_soak_script_explains_itself() -> None:
    completed = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True,
                               timeout=30)
    assert completed.returncode == 0
    for option in ("--clients", "--leases", "--minutes", "--term", "--json"):
        assert option in completed.stdout
    assert "--serve" not in completed.stdout  # the child processes' flags stay hidden
