"""Integration test of the runnable examples: real processes, real sockets, real time.

The Foo landlord demo starts server.py and client.py as separate processes;
the test runs it as ``make demo`` does and checks the story in its output:
one Foo freed by expiry, one by cancellation, and the client refused with
``UnknownLeaseError`` when it renewed a lease that had run out.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
FOO_DEMO = REPO_ROOT / "examples" / "foo_landlord" / "demo.py"

# The demo takes about 2 s; the limit only keeps a hung process from hanging the run.
DEMO_TIMEOUT_SECONDS = 60


@pytest.fixture(scope="module")
def foo_demo_output() -> str:
    """Everything the Foo landlord demo printed, once it has exited with status 0."""
    finished = subprocess.run([sys.executable, str(FOO_DEMO)], cwd=REPO_ROOT, capture_output=True,
                              text=True, timeout=DEMO_TIMEOUT_SECONDS)
    output = finished.stdout + finished.stderr
    assert finished.returncode == 0, f"demo exited with status {finished.returncode}:\n{output}"
    return output


def _foo_named(pattern: str, output: str) -> str:
    """The serial of the foo in the first line matching ``pattern`` (which captures it)."""
    match = re.search(pattern, output, re.MULTILINE)
    assert match, f"no line matches {pattern!r} in:\n{output}"
    return match.group(1)


def test_foo_demo_frees_the_unrenewed_foo_by_expiry(foo_demo_output: str) -> None:
    lapsing = _foo_named(r"^client \| .*letting foo #(\d+) run out$", foo_demo_output)
    expired = _foo_named(r"^server \| .*foo #(\d+) freed: its lease expired$",
                         foo_demo_output)
    assert expired == lapsing


def test_foo_demo_frees_the_cancelled_foo_by_cancellation(foo_demo_output: str) -> None:
    kept = _foo_named(r"^client \| .*cancelled the lease on foo #(\d+)", foo_demo_output)
    cancelled = _foo_named(r"^server \| .*foo #(\d+) freed: its lease was cancelled$",
                           foo_demo_output)
    assert cancelled == kept


def test_foo_demo_client_cannot_renew_an_expired_lease(foo_demo_output: str) -> None:
    refused = re.search(r"^client \| .*renewing foo #\d+ after its lease expired failed, "
                        r"as it should: UnknownLeaseError", foo_demo_output, re.MULTILINE)
    assert refused, foo_demo_output
    assert "UNEXPECTED" not in foo_demo_output


def test_foo_demo_server_stops_cleanly(foo_demo_output: str) -> None:
    assert re.search(r"^server \| .*shutting down; 0 foo\(s\) still leased$",
                     foo_demo_output, re.MULTILINE), foo_demo_output
    assert "FAILED" not in foo_demo_output and "Traceback" not in foo_demo_output
