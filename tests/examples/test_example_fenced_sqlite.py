"""Integration test of examples/fenced_sqlite: real processes, a real SQLite file, SIGSTOP and kill -9.

The demo starts a lock service and a ledger fenced in SQLite, and two workers: alice holds the lock,
writes, checks her lock and is paused before her second write; bob gets the lock once her lease has
run out, writes and releases; alice, let go, writes with her old token and is refused; the ledger,
killed and started again on its file, still refuses that token. The demo steps on by what the
processes print, never by sleeping. The test runs it once and checks that story in its output.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import lines, one, run_to_the_end

DEMO = Path(__file__).resolve().parents[2] / "examples" / "fenced_sqlite" / "demo.py"
DEMO_TIMEOUT = 120  # it takes about 3 s; the limit only keeps a hung process from hanging the run
TERM = 2.0  # seconds: the workers' lock terms

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def output() -> str:
    return run_to_the_end(DEMO, timeout=DEMO_TIMEOUT)


def test_the_paused_holders_late_write_is_refused_by_the_fence(output: str) -> None:
    alice = one(r"^alice +\| .* holds the lock with token (\d+)$", output)
    bob = one(r"^bob +\| .* holds the lock with token (\d+)$", output)
    first, second = int(alice.group(1)), int(bob.group(1))
    assert second > first, output
    assert lines(rf"^alice +\| .* lock valid: about to write row 2 with token {first}$", output), output
    refused = one(rf"^alice +\| .* late write refused: StaleTokenError: fencing token {first} is stale: "
                      rf"{second} was accepted$", output)
    assert lines(r"^alice +\| .* lock\.valid is False now$", output), output
    assert output.index("pausing alice (SIGSTOP)") < bob.start() < output.index("letting alice go (SIGCONT)") \
        < refused.start(), output  # the order of the story: paused, the next holder, the late write


def test_the_next_holder_was_granted_once_the_paused_holders_lease_had_run_out(output: str) -> None:
    waited = one(r"^demo +\| bob holds the lock ([\d.]+) s after alice was paused", output)
    assert 0.5 < float(waited.group(1)) <= TERM + 2.0, output  # her renewals stopped: within her term (and the
    assert lines(r"^bob +\| .* released the lock$", output), output  # time to free it and tell bob)
    # once running again, she is told she lost it: by her own clock (her deadline came) or by the landlord
    # (her next renewal refused), whichever of her two threads wakes first
    assert lines(r"^alice +\| .* lost the lock: (its lease's deadline|a renewal failed)", output), output


def test_the_fence_survives_the_ledgers_restart_and_only_the_holders_rows_landed(output: str) -> None:
    assert lines(r"^demo +\| after the restart, token 1 is still refused: fencing token 1 is stale: 2 was "
                 r"accepted$", output), output
    rows = [(int(m.group(1)), m.group(2), m.group(3)) for m in
            lines(r"^demo +\| ledger row \d+: token (\d+), (\w+), (.+)$", output)]
    assert rows == [(1, "alice", "row 1"), (2, "bob", "row 1")], output
    assert len(lines(r"^ledger \| ledger at PYRO:ledger@", output)) == 2  # served twice: before and after
    assert lines(r"^demo +\| done in [\d.]+ s", output), output
    for trouble in ("UNEXPECTED", "FAILED", "Traceback"):
        assert trouble not in output, output
