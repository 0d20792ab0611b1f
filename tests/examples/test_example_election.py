"""Integration test of examples/election: a served landlord, three candidates and a watcher, each a process.

The demo starts a landlord and a watcher, then alice, bob and carol campaign for "leader" in turn:
alice leads and works while the others wait; she is killed (kill -9) and bob, first in line, leads once
her lease has run out; bob hands the lead over to carol by name; carol resigns. The demo steps on by
what the processes print, never by sleeping. The test runs it once and checks that story in its output.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import lines, one, run_to_the_end

DEMO = Path(__file__).resolve().parents[2] / "examples" / "election" / "demo.py"
DEMO_TIMEOUT = 120  # it takes about 4 s; the limit only keeps a hung process from hanging the run
TERM = 2.0  # seconds: the candidates' terms
MARGIN = 1.0  # seconds past the term for the landlord to free the name and tell the next in line

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def output() -> str:
    return run_to_the_end(DEMO, timeout=DEMO_TIMEOUT)


def said(who: str, what: str) -> str:
    """A line ``who`` printed (relayed by the demo under its name, with the seconds since the start)."""
    return rf"^{who} *\| +[\d.]+ {what}$"


def test_one_leader_at_a_time_each_working_with_its_own_token(output: str) -> None:
    leads = {name: one(said(name, r"leads with token (\d+)"), output) for name in ("alice", "bob", "carol")}
    for name, led in leads.items():
        works = lines(said(name, r"work \d+ done with token (\d+)"), output)
        assert len(works) >= 2 and {work.group(1) for work in works} == {led.group(1)}, output
    killed = output.index("killing alice (kill -9)")
    told = output.index("telling bob to hand the lead over to carol")
    handing = one(said("bob", "handing over to carol"), output)
    assert all(line.start() < killed for line in lines(r"^alice *\|", output)), output  # nothing after the kill
    assert killed < leads["bob"].start() < told < leads["carol"].start(), output
    assert all(work.start() < handing.start() for work in lines(said("bob", r"work .*"), output)), output  # he
    # stopped working before handing over (his own lines: in order; carol's may come before his "handing")
    grants = [int(m.group(1)) for m in lines(said("server", r"'leader' granted with token (\d+).*"), output)]
    assert grants == sorted(int(led.group(1)) for led in leads.values()), output  # three grants, one per leader


def test_the_next_in_line_leads_within_the_term_once_the_leader_is_killed(output: str) -> None:
    took = float(one(r"^demo *\| +[\d.]+ bob leads ([\d.]+) s after alice was killed", output).group(1))
    assert 0.5 < took <= TERM + MARGIN, output  # not while her lease lived; soon after it ran out
    assert lines(said("server", r"a candidate waits in line for 'leader'"), output)[1].start() \
        < output.index("killing alice (kill -9)"), output  # bob and carol both waited in line before


def test_tokens_only_increase(output: str) -> None:
    tokens = [int(one(said(name, r"leads with token (\d+)"), output).group(1)) for name in ("alice", "bob", "carol")]
    assert tokens[0] < tokens[1] < tokens[2], output
    assert lines(r"^demo *\| +[\d.]+ tokens: alice \d+, bob \d+, carol \d+$", output), output


def test_the_lead_is_handed_over_to_the_named_candidate_with_no_gap(output: str) -> None:
    one(said("bob", "handed over to carol"), output)
    bob = one(said("bob", r"leads with token (\d+)"), output)
    carol = one(said("carol", r"leads with token (\d+)"), output)
    one(said("server", rf"'leader' granted with token {carol.group(1)} to a candidate that waited"), output)
    assert int(carol.group(1)) > int(bob.group(1)), output
    watched = [m.group(1) for m in lines(said("watcher", r"(nobody leads|the leader is now \w+)"), output)]
    assert "the leader is now bob" in watched, output
    after_bob = watched[watched.index("the leader is now bob") + 1]
    assert after_bob == "the leader is now carol", output  # nobody in between, not even nobody


def test_the_watcher_saw_each_change_of_leader(output: str) -> None:
    watched = [m.group(1) for m in lines(said("watcher", r"(nobody leads|the leader is now \w+)"), output)]
    leaders = [line.removeprefix("the leader is now ") for line in watched if line != "nobody leads"]
    assert leaders == ["alice", "bob", "carol"], output
    assert watched[0] == watched[-1] == "nobody leads", output  # before alice, and once carol resigned
    assert lines(r"^demo *\| +[\d.]+ the watcher saw, in turn: alice, bob, carol$", output), output
    assert lines(r"^demo *\| +[\d.]+ done: ", output), output
    for trouble in ("FAILED", "Traceback", "lost the lead"):
        assert trouble not in output, output
