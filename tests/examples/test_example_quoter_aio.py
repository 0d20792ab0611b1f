"""The Quoter story told in asyncio (examples/quoter_aio/demo.py): real processes, a kill -9, and a
service that vanishes by itself, seen through an AsyncLookupCache's ``async for``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "examples" / "quoter_aio" / "demo.py"
LEASE = 3.0


def test_an_asyncio_quoter_killed_vanishes_from_an_asyncio_clients_cache_within_its_lease() -> None:
    result = subprocess.run([sys.executable, str(DEMO)], capture_output=True, text=True, timeout=120)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    registered = re.search(r"quoter\s+registered (\S+) \(pid \d+, lease 3 s", out)
    assert registered, out
    service_id = registered.group(1)
    assert f"cache: added {service_id}" in out  # found by type and attributes, through async for
    assert len(re.findall(r"client\s+quote \w+: \d+\.\d\d", out)) == 3  # called
    assert re.search(rf"list\s+{service_id}\s+.*quoter_api\.Quoter.*Exchange\(name='NYSE'\)", out), out
    before_kill = out[:out.index("kill -9 the quoter")]
    renewals = re.findall(rf"renewed .*registration {service_id} for ([\d.]+) s", before_kill)
    assert len(renewals) >= 3 and all(float(granted) == LEASE for granted in renewals), out  # its own term
    assert f"registration {service_id} expired" in out  # by expiry, not by a cancel
    assert f"cache: removed {service_id}" in out
    gone = re.search(r"lost the quoter ([\d.]+) s after the kill \(lease 3 s\)", out)
    assert gone and float(gone.group(1)) <= LEASE + 1.0, out  # within the lease, plus the reaper's promptness
    ticked = re.search(r"the loop ticked (\d+) times meanwhile", out)
    assert ticked and int(ticked.group(1)) > 0, out
