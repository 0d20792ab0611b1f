"""Integration test of examples/replicated: a real three-member etcd, three replica processes, a kill -9.

The demo rents rooms through the group, keeps them renewed with a
LeaseRenewalManager, rents an orphan nobody renews, kills the leader and
tells what follows. The test runs it once and checks what it says against
what it promised: a successor leads within about 2 s (at most 3 s) holding
every lease, every room is renewed through it and none is lost, the orphan
is freed by the successor at its own deadline (not a term after the
failover), and everything stops cleanly. Where etcd cannot run, those tests
skip (or fail, with LANDLORD_REQUIRE_ETCD=1), and the demo must say why and
exit 0. rooms.py with bad arguments: one line on stderr, exit status 2.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_to_the_end
from etcd_fixtures import require_etcd

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / "examples" / "replicated"
DEMO = EXAMPLE / "demo.py"
ROOMS = EXAMPLE / "rooms.py"

# The demo takes about 10 s; the limit only keeps a hung process from hanging the run.
DEMO_TIMEOUT_SECONDS = 120
FAILOVER_GOAL = 3.0  # seconds from the kill to a successor that leads (the election's TTL is 2 s)
ROOM_NAMES = ("room 101", "room 102", "room 103")
ON_TIME = 1.0  # the orphan freed at most this late...
EARLY = 0.5  # ...and at most this early, against its deadline


@pytest.fixture(scope="module")
def demo_output() -> str:
    """Everything the demo printed, once it has exited with status 0."""
    require_etcd()
    return run_to_the_end(DEMO, timeout=DEMO_TIMEOUT_SECONDS)


def line(pattern: str, output: str) -> re.Match[str]:
    """The match of ``pattern`` in the one line of ``output`` it matches."""
    found = list(re.finditer(pattern, output, re.MULTILINE))
    assert len(found) == 1, f"{len(found)} lines match {pattern!r} in:\n{output}"
    return found[0]


def killed(output: str) -> str:
    return line(r"demo +kill -9 (replica\d) \(pid \d+\), the leader$", output).group(1)


def successor(output: str) -> str:
    return line(r"demo +(replica\d) leads now, ", output).group(1)


@pytest.mark.slow
class TestDemo:
    def test_a_successor_leads_within_about_2_s_of_the_kill_holding_every_lease(self, demo_output: str) -> None:
        found = line(r"demo +(replica\d) leads now, ([\d.]+) s after the kill, with (\d+) leases loaded from etcd$",
                     demo_output)
        assert found.group(1) != killed(demo_output)
        assert float(found.group(2)) <= FAILOVER_GOAL, demo_output
        assert int(found.group(3)) == len(ROOM_NAMES) + 1, demo_output  # the rooms and the orphan

    def test_every_room_is_renewed_through_the_successor_and_none_is_lost(self, demo_output: str) -> None:
        before = demo_output.index("kill -9")
        assert re.search(r"demo +the manager renewed every room through replica\d$", demo_output[:before],
                         re.MULTILINE), demo_output
        name = successor(demo_output)
        line(rf"demo +every room renewed by {name} after the kill; the renewal manager lost none ", demo_output)
        assert "LOST" not in demo_output
        for room in ROOM_NAMES:  # the cookies still work after the failover: cancelled on the successor
            line(rf"^\[[ \d.]+s\] {name} +freed {room}: its lease was cancelled$", demo_output)

    def test_the_orphan_is_freed_by_the_successor_at_its_own_deadline(self, demo_output: str) -> None:
        name = successor(demo_output)
        freed = list(re.finditer(r"^\[[ \d.]+s\] (replica\d) +freed orphan: its lease expired$", demo_output,
                                 re.MULTILINE))
        assert [match.group(1) for match in freed] == [name], demo_output
        late = float(line(rf"demo +the orphan was freed by {name} ([+-][\d.]+) s from its own deadline \(a fresh "
                          r"term from the failover would have been [\d.]+ s late\)$", demo_output).group(1))
        assert -EARLY <= late <= ON_TIME, demo_output

    def test_everything_stops_cleanly(self, demo_output: str) -> None:
        survivors = {f"replica{number}" for number in (1, 2, 3)} - {killed(demo_output)}
        for name in survivors:
            line(rf"^\[[ \d.]+s\] {name} +stopped: resigned from group rooms$", demo_output)
        line(r"demo +done in [\d.]+ s: a successor led [\d.]+ s after the kill, no lease lost, "
             r"the orphan freed on time", demo_output)
        for trouble in ("FAILED", "Traceback", "ERROR"):
            assert trouble not in demo_output, demo_output


def test_the_demo_says_why_and_exits_0_where_etcd_cannot_run() -> None:
    missing = str(REPO_ROOT / "no-such-etcd")
    done = subprocess.run([sys.executable, str(DEMO)], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=DEMO_TIMEOUT_SECONDS, env={**os.environ, "LANDLORD_ETCD": missing})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cannot run etcd here" in done.stdout and missing in done.stdout, done.stdout
    assert done.stderr == ""


GOOD = {"--etcd": "http://127.0.0.1:2379", "--group": "rooms", "--port": "7001",
        "--replicas": "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003"}


@pytest.mark.parametrize(("option", "value", "said"), [
    ("--etcd", "https://127.0.0.1:2379", "not an etcd client URL"),
    ("--etcd", "127.0.0.1", "not an etcd client URL"),
    ("--group", "rooms/east", "a group is a name of letters, digits and _.-"),
    ("--group", "", "a group is a name"),
    ("--port", "7004", "port 7004 is not in --replicas"),
    ("--port", "seven", "invalid int value"),
    ("--replicas", "127.0.0.1:7001,127.0.0.1", "not an address of the form host:port"),
    ("--replicas", "127.0.0.1:7001,127.0.0.1:7001", "names a replica twice"),
    ("--replicas", "h1:7001,h2:7001,h3:7001", "say which is this replica with --advertise HOST"),
    ("--max-lease", "-1", "--max-lease must be a positive number"),
    ("--etcd", None, "the following arguments are required: --etcd"),
])
def test_rooms_with_a_bad_argument_prints_one_line_and_exits_2(option: str, value: str | None, said: str) -> None:
    arguments = {**GOOD, option: value}
    argv = [item for name, given in arguments.items() if given is not None for item in (name, given)]
    done = subprocess.run([sys.executable, str(ROOMS), *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("rooms.py: error: ") and option in done.stderr, done.stderr
    assert said in done.stderr
