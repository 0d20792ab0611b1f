"""The lock services' wrappers and bench_lock_safety's rows, without servers: a lock renewed while held and
not after, etcd's whole-second terms, the backends the safety checker loads, and the rows and problems made of
its reports. No benchmark is run here."""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import sys
import threading
from typing import Any

import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:  # the scripts import each other as top-level modules; last, so none shadows
    sys.path.append(str(BENCHMARKS))

import bench_lock_safety  # noqa: E402
import lock_backends  # noqa: E402

from landlord.testing import lockcheck  # noqa: E402


class FakeLocks(lock_backends.LockBackend):
    """Locks that are always free, counting renewals; ``fail`` makes a renewal fail (the lock was lost)."""

    def __init__(self) -> None:
        super().__init__()
        self.refreshed = threading.Semaphore(0)
        self.fail = False

    def make(self, name: str) -> Any:
        return threading.Lock()

    def _acquire(self, lock: Any, timeout: float | None) -> bool:
        return bool(lock.acquire(timeout=-1 if timeout is None else timeout))

    def refresh(self) -> None:
        self.refreshed.release()
        if self.fail:
            raise RuntimeError("lost")


def test_a_checked_lock_is_renewed_while_held_and_no_longer() -> None:
    locks = FakeLocks()
    lock = lock_backends.CheckedLock(locks, "n", renew_every=0.01)
    assert lock.acquire() and lock.token is None
    assert locks.refreshed.acquire(timeout=5) and locks.refreshed.acquire(timeout=5)
    lock.release()
    while locks.refreshed.acquire(timeout=0.1):  # one may have begun before the release
        pass
    assert not locks.refreshed.acquire(timeout=0.1)
    assert not hasattr(lock, "valid")  # believed held until released


def test_a_failed_renewal_ends_the_renewals_of_that_holding() -> None:
    locks = FakeLocks()
    locks.fail = True
    lock = lock_backends.CheckedLock(locks, "n", renew_every=0.01)
    assert lock.acquire()
    assert locks.refreshed.acquire(timeout=5)
    assert not locks.refreshed.acquire(timeout=0.1)
    assert lock.failed_renewals == 1
    lock.release()


def test_not_blocking_asks_for_no_wait() -> None:
    locks = FakeLocks()
    first = lock_backends.CheckedLock(locks, "n")
    second = lock_backends.CheckedLock(locks, "n")
    assert first.acquire()
    assert not second.acquire(blocking=False)
    assert not second.acquire(timeout=0.01)


@pytest.mark.parametrize("term", [2, 3.0, 60])
def test_etcd_terms_are_whole_seconds(term: float) -> None:
    assert lock_backends.whole_seconds(term) == int(term)


@pytest.mark.parametrize("term", [1, 1.5, 2.5, 0])
def test_etcd_refuses_a_term_it_would_not_grant(term: float) -> None:
    with pytest.raises(ValueError):
        lock_backends.whole_seconds(term)


def test_the_checker_loads_each_backend_by_its_path() -> None:
    for backend in (lock_backends.EtcdBackend, lock_backends.ZooKeeperBackend, lock_backends.RedisBackend):
        assert backend.path() == f"lock_backends:{backend.__name__}"
        assert lockcheck.load_backend(backend.path()) is backend
    assert not lock_backends.RedisBackend.fencing_tokens
    assert lock_backends.EtcdBackend.fencing_tokens and lock_backends.ZooKeeperBackend.fencing_tokens


def test_the_options_parse() -> None:
    assert bench_lock_safety.gap("0.3,1.5") == (0.3, 1.5)
    for text in ("2,1", "1", "0,1"):
        with pytest.raises(argparse.ArgumentTypeError):
            bench_lock_safety.gap(text)
    without = lock_backends.system_names(lock_backends.SYSTEMS)
    assert without(" Redis,zookeeper ") == {"redis", "zookeeper"} and without("") == set()
    with pytest.raises(argparse.ArgumentTypeError, match="landlord"):
        without("landlord")


def report(fenced: bool, stale: int = 0, overlaps: int = 0) -> lockcheck.Report:
    """A run's report whose log had ``stale`` stale writes accepted and ``overlaps`` overlapping windows."""
    write = lockcheck.Write("c0.0", 1, 1, True, 0.0, 0.0, 0.0, 0.0, True, True)
    holding = lockcheck.Holding("c0.0", 1, 0.0, 1.0, 0.0)
    analysis = dataclasses.replace(lockcheck.analyse([]), stale_accepted=(write,) * stale,
                                   overlaps=((holding, holding),) * overlaps)
    return lockcheck.Report("x", fenced, 4, 30, 2.0, 25, {"pause": 5, "kill": 2}, {"pause": 4}, 120, 0, {}, True,
                            30.0, analysis)


def systems(**figures: tuple[int, int, int, int]) -> dict[str, bench_lock_safety.System]:
    """Systems whose runs found (unfenced stale, unfenced overlaps, fenced stale, fenced overlaps)."""
    made = {}
    for name in ("landlord", *lock_backends.SYSTEMS):
        system = made[name] = bench_lock_safety.System(name)
        if name in figures:
            stale, overlaps, fenced_stale, fenced_overlaps = figures[name]
            system.reports["unfenced"] = report(False, stale, overlaps)
            if system.fencing_tokens:
                system.reports["fenced"] = report(True, fenced_stale, fenced_overlaps)
        else:
            system.reason = "not here"
    return made


def test_rows_hold_landlord_against_each_system_with_limits_on_its_own_figures() -> None:
    rows = {row.metric: row for row in bench_lock_safety.rows(systems(
        landlord=(3, 0, 0, 0), etcd=(6, 20, 0, 30), ZooKeeper=(10, 40, 0, 35), Redis=(6, 40, 9, 9)))}
    unfenced = rows["stale writes landed, unfenced, vs ZooKeeper"]
    assert (unfenced.landlord, unfenced.baseline, unfenced.limit, unfenced.ratio) == (3, 10, None, 10 / 3)
    assert "stale writes accepted, fenced, vs Redis" not in rows  # no tokens, no fenced run
    fenced = rows["stale writes accepted, fenced, vs etcd"]
    assert (fenced.landlord, fenced.baseline, fenced.limit, fenced.met) == (0, 0, 0, True)
    assert rows["two believed holders (2 runs) vs etcd"].baseline == 50
    assert rows["two believed holders (1 run) vs Redis"].baseline == 40
    assert rows["two believed holders (1 run) vs Redis"].met is True


def test_a_missing_system_leaves_its_rows_without_a_baseline() -> None:
    rows = bench_lock_safety.rows(systems(landlord=(1, 0, 0, 0)))
    assert all(row.landlord is not None and row.baseline is None for row in rows)


def test_a_stale_write_through_landlords_fence_is_a_problem() -> None:
    assert bench_lock_safety.problems(systems(landlord=(3, 0, 0, 0))) == []
    found = bench_lock_safety.problems(systems(landlord=(3, 0, 1, 0)))
    assert len(found) == 1 and "accepted 1 stale write" in found[0]
    unsafe = systems(landlord=(0, 0, 0, 0), etcd=(0, 0, 2, 0))
    assert bench_lock_safety.problems(unsafe) == []  # a baseline's is a measurement
