"""The Quoter story, as make demo tells it: real processes, a kill -9, and a service that vanishes by itself."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "examples" / "quoter" / "demo.py"


def test_a_killed_quoter_vanishes_from_lookup_within_its_lease() -> None:
    result = subprocess.run([sys.executable, str(DEMO)], capture_output=True, text=True, timeout=120)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    registered = re.search(r"quoter\s+registered (\S+)", out)
    assert registered, out
    service_id = registered.group(1)
    assert f"cache: added {service_id}" in out
    assert len(re.findall(r"client\s+quote \w+: \d+\.\d\d", out)) == 3
    assert re.search(rf"list\s+{service_id}\s+.*quoter_api\.Quoter.*Exchange\(name='NYSE'\)", out), out
    before_kill = out[:out.index("kill -9 the quoter")]
    renewals = re.findall(rf"renewed .*registration {service_id} for ([\d.]+) s", before_kill)
    assert len(renewals) >= 3 and all(float(granted) == 3.0 for granted in renewals), out  # its own term, each time
    assert f"registration {service_id} expired" in out  # by expiry, not by a cancel
    assert f"cache: removed {service_id}" in out
    gone = re.search(r"lost the quoter ([\d.]+) s after the kill \(lease 3 s\)", out)
    assert gone and float(gone.group(1)) <= 3.0 + 1.0, out  # within the lease, plus the reaper's promptness
