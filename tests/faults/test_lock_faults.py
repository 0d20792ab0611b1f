"""Locks under faults, with real processes (issue 25, item 6): a holder killed with kill -9, a holder
paused past its term, a landlord with a store killed and restarted while its lock is held and
contended, and the safety checker (landlord.testing.lockcheck) run small on a plain and on a
stored landlord.

Every process is its own (tests/lock_processes.py): the landlord, the fenced resource, each holder.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import Pyro5.api
import pytest
from conftest import free_port
from lock_processes import Processes, ask, deadlines, holding, processes, queued, renewed_after

from landlord.testing.lockcheck import Faults, LandlordBackend, LockCheck, Report

__all__ = ["processes"]  # a fixture, imported for pytest

pytestmark = pytest.mark.slow

SLACK = 0.5  # seconds: the reaper's wake-up, a grant pushed to the waiter, scheduling on a busy two-core machine


def test_kill_9_of_a_holder_gives_the_lock_to_the_waiter_after_the_term_and_the_lock_delay_not_before(
        processes: Processes) -> None:
    """A holds the lock (1 s term, 1 s lock-delay), B waits; A is killed with kill -9. The landlord
    lets A's lease expire (no release came), keeps the name closed for the lock-delay, then pushes
    the grant to B: B holds within the term plus the lock-delay of the kill, and not before A's
    lease's deadline (as A saw it, which is no later than the landlord's) plus the lock-delay."""
    term, delay = 1.0, 1.0
    landlord, uri = processes.landlord(free_port())
    a = processes.holder("a", uri, "--term", str(term), "--lock-delay", str(delay))
    token_a, _ = holding(a)
    b = processes.holder("b", uri, "--term", str(term), "--lock-delay", str(delay))
    queued(landlord, b)
    a.wait_count(r"^deadline ", 2)  # renewed at least once: the kill falls in a renewed term

    killed_at = time.monotonic()
    a.kill()
    _, lease_end = max(deadlines(a))  # a renewal sent before the kill and answered: the last word
    expired = landlord.wait_for(rf"^expired x {token_a} (\S+)$", term + 10)
    token_b, held_at = holding(b, "", timeout=term + delay + 10)

    print(f"kill -9 at {killed_at:.3f}: A's lease deadline +{lease_end - killed_at:.3f} s, expired at the landlord "
          f"+{float(expired.group(1)) - killed_at:.3f} s, B holds +{held_at - killed_at:.3f} s "
          f"(term {term:g} s, lock-delay {delay:g} s)")
    assert token_b > token_a
    assert lease_end + delay <= held_at, "B held the lock before the lock-delay after A's lease ended"
    assert held_at <= killed_at + term + delay + SLACK, "B waited longer than the term plus the lock-delay"
    assert not landlord.matches(r"^cancelled x "), "A was killed: nothing released its lock"


def test_a_holder_paused_past_its_term_knows_it_lost_before_the_next_holds_and_its_write_is_refused(
        processes: Processes, tmp_path: Path) -> None:
    """A holds the lock, writes through the fenced resource, checks ``valid`` (true) and is frozen
    with SIGSTOP, like a holder paused by a long GC between its check and its write. Its lease
    expires and B, waiting, holds the lock and writes. A's validity, as A computed it before the
    pause, ended before B held; resumed, A says ``valid`` is false and was told it lost; the write
    it then sends with its old token is refused by the fence (B's newer token was accepted)."""
    term = 1.0
    landlord, uri = processes.landlord(free_port())
    resource = processes.resource(tmp_path / "writes.log")
    a = processes.holder("a", uri, "--term", str(term), "--resource", resource)
    token_a, _ = holding(a)
    assert ask(a, "write", r"^wrote (\S+) (\S+) ").groups() == ("accepted", "True")
    b = processes.holder("b", uri, "--term", str(term), "--resource", resource)
    queued(landlord, b)
    assert ask(a, "check", r"^checked (\S+) (\S+) ").groups() == ("True", str(token_a))

    a.process.send_signal(signal.SIGSTOP)
    try:
        paused_at = time.monotonic()
        valid_until, _ = max(deadlines(a))  # A's own view of when it stops being holder
        token_b, held_at = holding(b, "", timeout=term + 10)
        assert ask(b, "write", r"^wrote (\S+) ").group(1) == "accepted"
    finally:
        a.process.send_signal(signal.SIGCONT)

    print(f"SIGSTOP at {paused_at:.3f}: A valid until +{valid_until - paused_at:.3f} s, "
          f"B holds +{held_at - paused_at:.3f} s")
    assert token_b > token_a
    assert valid_until < held_at, "A would still have believed itself holder when B held the lock"
    assert ask(a, "status", r"^status (\S+) (\S+) ").groups() == ("False", "None")
    a.wait_for(r"^lost \S+ ", 10)
    assert ask(a, "write", r"^wrote (\S+) (\S+) ").groups() == ("refused", "False")
    with Pyro5.api.Proxy(resource) as proxy:
        assert proxy.stats() == {"accepted": 2, "refused": 1, "stale": 0}


def test_a_stored_landlord_killed_and_restarted_keeps_its_lock_holder_waiter_and_tokens(
        processes: Processes, tmp_path: Path) -> None:
    """A holds the lock of a landlord that keeps its leases in SQLite, B waits for it. The landlord
    is killed with kill -9 and restarted on the same store: A keeps the lock with the same token
    (its renewals succeed again, and it never hears of a loss), C is refused the lock by the
    restarted landlord, and B gets it once A releases it, with a higher token. Killed and restarted
    again while B holds, it grants C a token higher still: tokens never go back."""
    term = 6.0  # A's validity outlives a restart on a busy machine
    port, store = free_port(), tmp_path / "locks.sqlite"
    landlord, uri = processes.landlord(port, store)
    a = processes.holder("a", uri, "--term", str(term))
    token_a, _ = holding(a)
    b = processes.holder("b", uri, "--term", str(term))
    queued(landlord, b)
    c = processes.holder("c", uri, "--term", str(term))

    def restart() -> float:
        nonlocal landlord
        killed_at = time.monotonic()
        landlord.kill()
        landlord, _ = processes.landlord(port, store)
        return killed_at

    killed_at = restart()
    renewed_after(a, killed_at + term, timeout=term)  # sent after the kill: the restarted landlord granted it
    assert ask(a, "status", r"^status (\S+) (\S+) ").groups() == ("True", str(token_a))
    assert ask(c, "try", r"^(refused|holding) ").group(1) == "refused"
    a.send("release")
    token_b, _ = holding(b, "")
    assert token_b > token_a

    killed_at = restart()
    renewed_after(b, killed_at + term, timeout=term)
    assert ask(b, "status", r"^status (\S+) (\S+) ").groups() == ("True", str(token_b))
    b.send("release")
    token_c, _ = holding(c)
    assert token_c > token_b
    for holder in (a, b, c):
        assert not holder.matches(r"^lost "), f"{holder.name} lost its lock: {holder.tail()}"


# -- the safety checker, small ----------------------------------------------------------------------


def run_check(backend: LandlordBackend, faults: Faults, *, fenced: bool = True, rounds: int = 20) -> Report:
    check = LockCheck(backend, clients=3, rounds=rounds, writes=3, work=0.02, term=1.0, faults=faults,
                      fenced=fenced, timeout=120.0)
    report = check.run()
    print(report.format(), file=sys.stderr)
    return report


def test_the_safety_checker_on_a_plain_landlord_accepts_no_stale_write() -> None:
    report = run_check(LandlordBackend(), Faults(pauses=2, kills=1, gap=(0.3, 0.8), holder_bias=1.0), rounds=40)
    assert report.finished, report.format()
    assert report.faults == {"pause": 2, "kill": 1}, "the faults were not all applied: the test proves less"
    assert report.analysis.safe and report.ok
    assert report.analysis.stale_accepted == () and report.analysis.overlaps == ()
    assert report.rounds_done == 3 * 40 and report.analysis.accepted > 0


def test_the_safety_checker_on_a_stored_landlord_restarted_accepts_no_stale_write() -> None:
    report = run_check(LandlordBackend(store=True),
                       Faults(pauses=1, kills=1, restarts=1, gap=(0.3, 0.8), holder_bias=1.0))
    assert report.finished, report.format()
    assert report.faults == {"pause": 1, "kill": 1, "restart": 1}
    assert report.analysis.safe and report.ok
    assert report.analysis.stale_accepted == () and report.analysis.overlaps == ()
    assert report.rounds_done == 3 * 20


def test_the_safety_checker_without_fencing_counts_the_stale_writes_that_land() -> None:
    """The same pauses of holders, with a resource that checks no token: the paused holders' writes
    land after their lock went to another. What the fenced runs above refuse."""
    # 40 rounds, not 20: on msgpack the clients' 20 rounds could end before the third pause was due
    report = run_check(LandlordBackend(), Faults(pauses=3, gap=(0.3, 0.8), holder_bias=1.0), fenced=False,
                       rounds=40)
    assert report.finished and report.faults == {"pause": 3}
    assert report.on_holders.get("pause", 0) >= 1
    assert len(report.analysis.stale_accepted) >= 1, report.format()
    assert not report.analysis.safe and report.ok  # unfenced, its verdict is a count, not a failure
