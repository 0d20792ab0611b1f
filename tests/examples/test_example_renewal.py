"""Integration test of examples/renewal: real processes, real sockets, real time.

The demo starts a room landlord that revokes room green 2.5 s after renting
it, and a holder that keeps three rooms alive with a LeaseRenewalManager.
The test runs the demo once and checks the story in its output: green's
renewal denied and reported to the listener exactly once, a replacement
rented, the other rooms kept alive through several batched renewals, and
everything shut down cleanly.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import run_to_the_end

REPO_ROOT = Path(__file__).resolve().parents[2]
RENEWAL_DEMO = REPO_ROOT / "examples" / "renewal" / "demo.py"

# The demo takes about 6 s; the limit only keeps a hung process from hanging the run.
DEMO_TIMEOUT_SECONDS = 60
REVOKED_ROOM = "green"
MIN_RENEWALS = 3  # rooms held from the start are renewed about every second for 5.5 s

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo_output() -> str:
    """Everything the renewal demo printed, once it has exited with status 0."""
    return run_to_the_end(RENEWAL_DEMO, timeout=DEMO_TIMEOUT_SECONDS)


def lines_matching(pattern: str, output: str) -> list[re.Match[str]]:
    return list(re.finditer(pattern, output, re.MULTILINE))


def kept_alive(output: str) -> dict[str, int]:
    """Room -> renewals, from the holder's closing report."""
    return {m.group(1): int(m.group(2))
            for m in lines_matching(r"^holder \| .* (\w+) kept alive through (\d+) renewals", output)}


def test_the_denial_reaches_the_listener_exactly_once(demo_output: str) -> None:
    lost = lines_matching(r"^holder \| .*LOST (\w+): renewal denied, LeaseDeniedError: .*$", demo_output)
    assert [m.group(1) for m in lost] == [REVOKED_ROOM], demo_output
    assert len(lines_matching(r"LOST", demo_output)) == 1, demo_output


def test_the_landlord_denied_only_the_revoked_room_and_renewed_the_rest_in_the_same_call(
        demo_output: str) -> None:
    denied = lines_matching(r"^server \| .*renewed (.+) in one renew_all call; DENIED (\w+)$", demo_output)
    assert len(denied) == 1, demo_output
    assert denied[0].group(2) == REVOKED_ROOM
    assert REVOKED_ROOM not in denied[0].group(1)
    assert len(denied[0].group(1).split(", ")) == 2  # the two other rooms, in that same call


def test_the_other_rooms_are_kept_alive_through_several_batched_renewals(demo_output: str) -> None:
    rooms = kept_alive(demo_output)
    assert REVOKED_ROOM not in rooms
    originals = [room for room in rooms if room != replacement(demo_output)]
    assert len(originals) == 2, demo_output
    for room in originals:
        assert rooms[room] >= MIN_RENEWALS, demo_output
    # before the revocation, all three rooms went out in one call per round
    batched = lines_matching(r"^server \| .*renewed \w+, \w+, \w+ in one renew_all call$", demo_output)
    assert len(batched) >= 2, demo_output
    assert "the landlord still has it: False" not in demo_output


def replacement(output: str) -> str:
    match = re.search(rf"^holder \| .*asked for a replacement for {REVOKED_ROOM}: got (\w+)", output,
                      re.MULTILINE)
    assert match, output
    return match.group(1)


def test_the_holder_rents_a_replacement_and_keeps_it_alive(demo_output: str) -> None:
    room = replacement(demo_output)
    assert room != REVOKED_ROOM
    assert kept_alive(demo_output).get(room, 0) >= 1, demo_output


def test_the_revoked_room_runs_out_and_everything_shuts_down_cleanly(demo_output: str) -> None:
    assert lines_matching(rf"^server \| .*{REVOKED_ROOM} freed: its lease expired$", demo_output), demo_output
    assert lines_matching(r"^holder \| .*done$", demo_output), demo_output
    assert lines_matching(r"^server \| .*shutting down; 0 room\(s\) still rented$", demo_output), demo_output
    for trouble in ("UNEXPECTED", "FAILED", "Traceback"):
        assert trouble not in demo_output, demo_output
