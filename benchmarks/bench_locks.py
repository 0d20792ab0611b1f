"""Landlord's Lock against etcd's, ZooKeeper's and Redis' locks: acquire-and-release and hand-over (issue 25, item 7).

Every system runs here, started by the script on free loopback ports with a
temporary directory (tmpfs by default) and stopped however the run ends: a
landlord (``--child landlord``, a plain ``landlord.Landlord()`` on a Pyro5
daemon), a single-member etcd (``harness.EtcdProcess``), a standalone
ZooKeeper (Debian's jars, ``ZooKeeperServerMain``) and a Redis
(``redis-server``, no persistence). Each is used through its usual Python lock
(a :class:`LockBackend`): ``landlord.Lock``, etcd-sdk-python's
``client.lock()``, kazoo's ``Lock`` and redis-py's ``Lock``.
``benchmarks/setup_etcd.sh`` and ``benchmarks/setup_locks.sh`` install them.

Two measurements, every system in the same rounds, taking turns; a row per
baseline:

- **uncontended acquire-and-release**: one client in this process acquires
  and releases one lock over and over (acquires/s; goal >= 3x etcd and
  ZooKeeper, none against Redis);
- **hand-over**: two client processes (``--child client``) alternate on one
  lock; the waiter is already blocked in ``acquire`` when the holder lets go;
  the time from the holder starting its release to the waiter holding, on the
  machine's monotonic clock (median ms; no goal).

Fencing tokens are read where the lock gives one (landlord's ``lock.token``,
etcd's revision of the lock key's creation, the sequence number of kazoo's
znode; redis-py's lock has none) and checked to increase; a token that does
not, or a waiter that holds before the holder let go, is a problem (exit
status 1). Without a server or client it says why and measures the others.
The method: ``benchmarks/README.md``; the options, rounds, table and JSON:
``harness.py``. Not a test: pytest collects only ``tests/``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import harness
import Pyro5
import serpent
from harness import Report, Row, ServerUnavailable, compare, positive_seconds, progress, rate
from lock_backends import (
    CALL_TIMEOUT,
    TOKENS,
    LockBackend,
    ZooKeeperLocks,
    open_locks,
    start_server,
    start_systems,
    system_names,
)

import landlord
from landlord.testing import ChildProcess

GOAL = 3.0            # landlord's acquire-and-release >= 3x etcd's and ZooKeeper's
TTL = 10              # seconds every lock is held for at most (etcd and Redis count whole seconds)
LOCK = "bench-lock"   # the one lock name, on every system
HAS_LANDLORD_LOCK = hasattr(landlord, "Lock")    # the recipe (issue 25, item 4), once it has landed

SYSTEMS = ("landlord", "etcd", "ZooKeeper", "Redis")
BASELINES = {"etcd": GOAL, "ZooKeeper": GOAL, "Redis": None}  # each baseline and the goal against it


# -- the landlord --------------------------------------------------------------------------------


def serve(args: argparse.Namespace) -> int:
    """The landlord process: serve a plain Landlord on loopback until SIGTERM or Ctrl-C."""
    return harness.serve_forever(landlord.Landlord())


# -- the locks -----------------------------------------------------------------------------------


class LandlordLocks(LockBackend):
    """``landlord.Lock`` on the served landlord at ``uri``; the token is ``lock.token``."""

    def __init__(self, uri: str) -> None:
        super().__init__()
        self.uri = uri

    def make(self, name: str) -> Any:
        return landlord.Lock(self.uri, name, duration=float(TTL))  # type: ignore[attr-defined]

    def _acquire(self, lock: Any, timeout: float | None) -> bool:
        return bool(lock.acquire(blocking=timeout != 0, timeout=timeout))

    @property
    def token(self) -> int | None:
        return None if self.held is None else self.held.token  # type: ignore[no-any-return]

    def close(self) -> None:
        for lock in self.locks.values():
            lock.close()


def backend(system: str, address: Any, args: argparse.Namespace) -> LockBackend:
    """A client of ``system`` at ``address`` (a URI or a port)."""
    if system == "landlord":
        return LandlordLocks(address)
    if system == "ZooKeeper":  # its locks last as long as the session, whose timeout is the calls'
        return ZooKeeperLocks(address, CALL_TIMEOUT)
    return open_locks(system, address, TTL, redis_sleep=args.redis_sleep)


def client(args: argparse.Namespace) -> int:
    """A hand-over client process: its system and address on the first line of stdin, then one command a line,
    ``acquire`` (prints ``waiting <t>`` before, ``acquired <t> <token>`` after) or ``release`` (``released <t>``,
    the time it started to). Times are ``time.monotonic()``, the machine's clock."""
    config = json.loads(sys.stdin.readline())
    try:
        locks = backend(config["system"], config["address"], args)
    except Exception as exc:
        print(f"FAILED {type(exc).__name__}: {exc}", flush=True)
        return 1
    print("READY", flush=True)
    try:
        for line in sys.stdin:
            try:
                if line.strip() == "acquire":
                    print(f"waiting {time.monotonic()!r}", flush=True)
                    token = locks.hold(LOCK)
                    print(f"acquired {time.monotonic()!r} {token}", flush=True)
                elif line.strip() == "release":
                    started = time.monotonic()
                    locks.release()
                    print(f"released {started!r}", flush=True)
            except Exception as exc:
                print(f"error {type(exc).__name__}: {exc}", flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        locks.close()
    return 0


# -- the systems ---------------------------------------------------------------------------------


class System:
    """One system compared: its server, this process's client (uncontended) and two client processes
    (hand-over); or why it is missing. Failing while measuring drops it, and the others go on."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.server: Any = None          # has stop()
        self.address: Any = None         # a URI or a port
        self.version = ""
        self.locks: LockBackend | None = None
        self.clients: list[ChildProcess] = []
        self.reason = ""                 # why it is not measured (any more)
        self.last_token: int | None = None
        self.tokens = 0                  # tokens checked
        self.latencies: list[float] = []  # every hand-over, in ms
        self.problems: list[str] = []

    @property
    def up(self) -> bool:
        return not self.reason

    def start(self, args: argparse.Namespace) -> None:
        """Start the server and connect this process's client; set :attr:`reason` if it cannot be had."""
        progress(f"starting {self.name}...")
        try:
            self._start_server(args)
            self.locks = backend(self.name, self.address, args)
        except Exception as exc:
            self.drop(str(exc) if isinstance(exc, ServerUnavailable) else f"{type(exc).__name__}: {exc}")

    def _start_server(self, args: argparse.Namespace) -> None:
        if self.name == "landlord":
            if not HAS_LANDLORD_LOCK:
                raise ServerUnavailable("landlord.Lock not available yet")
            self.server = harness.ServerProcess(__file__, "landlord", "landlord", new_session=True)
            self.address, self.version = self.server.uri(), landlord.__version__
            return
        self.server = start_server(self.name, args.data_dir, etcd=args.etcd)
        self.address, self.version = self.server.port, self.server.version

    def start_clients(self) -> None:
        """Start the two hand-over client processes (their READY is awaited by :meth:`await_clients`)."""
        for number in range(2):
            child = ChildProcess(os.path.abspath(__file__), "--child", "client", name=f"{self.name} client {number}",
                                 stdin=True, stderr="inherit", env=harness.UNBUFFERED, new_session=True)
            self.clients.append(child)
            child.send(json.dumps({"system": self.name, "address": self.address}))

    def await_clients(self) -> None:
        """Wait for both client processes to be connected; drop the system if one cannot."""
        for child in self.clients:
            self.guarded(lambda child=child: len(self.reply(child, "READY")))

    def drop(self, reason: str) -> None:
        """Measure it no more, for ``reason``; stop its clients and its server."""
        if not self.reason:
            self.reason = reason
            progress(f"{self.name}: {reason}; going on without it")
        self.stop()

    def guarded(self, work: Callable[[], float]) -> float:
        """``work``'s figure, or NaN once dropped; failing drops it."""
        if not self.up:
            return math.nan
        try:
            return work()
        except Exception as exc:
            self.drop(f"failed while measuring ({type(exc).__name__}: {str(exc)[:200]})")
            return math.nan

    @staticmethod
    def reply(child: ChildProcess, word: str) -> list[str]:
        """The words after ``word`` on a client process's next line that starts with it.

        Raises:
            RuntimeError: the client said it failed instead.
            WaitFailed: it said neither within CALL_TIMEOUT.
        """
        found = child.wait_for(rf"^({word}|error|FAILED)\b ?(.*)$", CALL_TIMEOUT)
        if found[1] != word:
            raise RuntimeError(f"{child.name}: {found[2]}")
        return found[2].split()

    def token(self, token: int | None) -> None:
        """Check that a fencing token came (where the system gives them) and went up."""
        if token is None:
            return
        if self.last_token is not None and token <= self.last_token:
            self.problems.append(f"{self.name}: token {token} after {self.last_token}")
        self.last_token, self.tokens = token, self.tokens + 1

    # what is timed

    def cycles(self, seconds: float) -> float:
        """Acquire-and-release round trips per second from this process, for ``seconds``."""
        def cycle() -> None:
            assert self.locks is not None
            self.token(self.locks.hold(LOCK))
            self.locks.release()
        return self.guarded(lambda: rate(cycle, seconds))

    def handovers(self, count: int, settle: float) -> float:
        """``count`` hand-overs between the two client processes; their median, in ms."""
        def run() -> float:
            holder, waiter = self.clients
            self.send(holder, "acquire")
            self.token(self.acquired(holder)[1])
            latencies = []
            for _ in range(count):
                self.send(waiter, "acquire")
                time.sleep(settle)  # the waiter blocked in acquire by now: watching, polling or queued
                released = float(self.send(holder, "release")[0])
                acquired, token = self.acquired(waiter)
                self.token(token)
                if acquired < released:
                    self.problems.append(f"{self.name}: a waiter held the lock before its holder let go")
                latencies.append(1000 * (acquired - released))
                holder, waiter = waiter, holder
            self.send(holder, "release")
            self.latencies += latencies
            return statistics.median(latencies)
        return self.guarded(run)

    def send(self, child: ChildProcess, command: str) -> list[str]:
        """Tell a client process to ``acquire`` (the answer: once it waits) or ``release`` (once released)."""
        child.send(command)
        return self.reply(child, "waiting" if command == "acquire" else "released")

    def acquired(self, child: ChildProcess) -> tuple[float, int | None]:
        """When a client process that was told to acquire held the lock, and its token."""
        moment, token = self.reply(child, "acquired")
        return float(moment), None if token == "None" else int(token)

    def stop(self) -> None:
        for child in self.clients:
            harness.stop_child(child)
        self.clients = []
        if self.locks is not None:
            locks, self.locks = self.locks, None
            try:
                locks.close()
            except Exception as exc:
                progress(f"warning: closing {self.name}'s client: {exc}")
        if self.server is not None:
            server, self.server = self.server, None
            server.stop()


# -- measuring -----------------------------------------------------------------------------------


def row(metric: str, unit: str, ours: list[float], theirs: list[float], goal: float | None, baseline: str) -> Row:
    """A row against one baseline; without landlord's figures (no landlord.Lock yet), the baseline's alone."""
    if any(harness.finite(x) for x in ours):
        return compare(metric, unit, ours, theirs, goal=goal, extra={"baseline_system": baseline})
    known = [x for x in theirs if harness.finite(x)]
    spread = {"rounds": len(theirs), **({"baseline_min": min(known), "baseline_max": max(known)} if known else {})}
    return Row(metric, None, statistics.median_low(known) if known else None, unit, goal=goal, spread=spread,
               extra={"baseline_system": baseline})


def measure_all(systems: dict[str, System], args: argparse.Namespace) -> list[Row]:
    """Both measurements, every system in the same rounds, taking turns; a row per baseline and measurement."""
    progress("measuring uncontended acquire-and-release...")
    for system in systems.values():
        system.cycles(args.warm_up)
    per_round = args.seconds / args.rounds
    cycles = harness.alternate({name: lambda s=s: s.cycles(per_round) for name, s in systems.items()},
                               args.rounds)
    progress("measuring hand-over...")
    for system in systems.values():
        system.handovers(1, args.settle)
        system.latencies = []  # the warm-up's is no figure
    handovers = harness.alternate({name: lambda s=s: s.handovers(args.handovers, args.settle)
                                   for name, s in systems.items()}, args.rounds)
    rows = []
    for baseline, goal in BASELINES.items():
        rows.append(row(f"acquire+release vs {baseline}", "acquires/s", cycles["landlord"], cycles[baseline], goal,
                        baseline))
    for baseline in BASELINES:
        rows.append(row(f"hand-over vs {baseline}", "ms", handovers["landlord"], handovers[baseline], None,
                        baseline))
    return rows


def percentiles(latencies: list[float]) -> str:
    if not latencies:
        return "none"
    ordered = sorted(latencies)
    at = [ordered[min(len(ordered) - 1, int(share * len(ordered)))] for share in (0.1, 0.5, 0.9)]
    return f"p10 {at[0]:.2f}, p50 {at[1]:.2f}, p90 {at[2]:.2f}, max {ordered[-1]:.2f} ms ({len(ordered)})"



def notes(systems: dict[str, System], args: argparse.Namespace) -> list[str]:
    lines = ["what was compared:"]
    for name, system in systems.items():
        state = f"{system.version}" if system.up else f"not measured: {system.reason}"
        lines.append(f"  {name}: {state}")
        if system.version:
            checked = f"; {system.tokens:,} checked, the last {system.last_token}" if system.tokens else ""
            lines.append(f"    tokens: {TOKENS.get(name, 'lock.token')}{checked}")
            lines.append(f"    hand-over latencies: {percentiles(system.latencies)}")
    lines += [f"hand-over: the waiter told to acquire, {args.settle:g} s for it to block, then the holder released; "
              "from the holder's release call to the waiter's acquire returning (time.monotonic() in both processes)",
              f"redis-py's waiter polls every {args.redis_sleep:g} s (its default 0.1; --redis-sleep)",
              f"data: {args.data_dir or 'the system temp dir'} ({harness.filesystem_of(args.data_dir or '/tmp')}); "
              f"every lock held for at most {TTL} s"]
    return lines


def measure(args: argparse.Namespace) -> Report:
    """Start every system, measure, stop them all (also on errors and Ctrl-C)."""
    systems = {name: System(name) for name in SYSTEMS}
    try:
        start_systems(systems.values(), args.without, args)
        landlord.set_call_timeout(CALL_TIMEOUT)
        for system in systems.values():
            if system.up:
                system.start_clients()
        for system in systems.values():
            system.await_clients()
        rows = measure_all(systems, args)
    finally:
        for system in systems.values():
            system.stop()
    title = (f"landlord.Lock (Pyro5) against etcd's lock (etcd-sdk-python), kazoo's Lock on ZooKeeper and redis-py's "
             f"Lock on Redis, each server in a process of its own on loopback; {args.rounds} round(s), the systems "
             "taking turns")
    missing = [f"{name}: {system.reason}" for name, system in systems.items() if not system.up]
    return Report(rows, title="\n".join([title, *missing]), notes=notes(systems, args),
                  problems=[problem for system in systems.values() for problem in system.problems],
                  machine={f"{name} (lock)": system.version or system.reason for name, system in systems.items()})


BENCH = harness.Benchmark(
    "locks", "Locks: uncontended acquire-and-release per second from one client, and the hand-over between two "
    "client processes, landlord.Lock against etcd, ZooKeeper (kazoo) and Redis (redis-py), all started here on "
    f"loopback and measured in turns. Goal: acquire-and-release >= {GOAL:g}x etcd and ZooKeeper. Without a server "
    "or client it says why and measures the others.", rounds=5, modules=(landlord, Pyro5, serpent),
    quick={"seconds": 0.6, "rounds": 2, "handovers": 5, "warm_up": 1.0})
BENCH.option("--seconds", positive_seconds, 5.0, "acquire-and-release time per system, split into --rounds rounds")
BENCH.option("--warm-up", positive_seconds, 2.0, "acquire-and-release per system before measuring (ZooKeeper's JVM "
             "takes a few seconds to reach its pace)")
BENCH.option("--handovers", harness.positive_int, 20, "hand-overs per system and round")
BENCH.option("--settle", positive_seconds, 0.05, "seconds a waiter has to block in acquire before the release")
BENCH.option("--redis-sleep", positive_seconds, 0.1, "how often redis-py's waiting Lock tries again, in seconds")
BENCH.option("--data-dir", str, harness.default_data_parent(), "where the servers' temporary directories go "
             "(tmpfs: the servers' best case)")
BENCH.option("--etcd", str, "etcd", "the etcd binary")
BENCH.option("--without", system_names(SYSTEMS), "", "comma-separated systems to leave out (etcd, zookeeper, "
             "redis, landlord)")


if __name__ == "__main__":
    raise SystemExit(BENCH.main(measure, children={"landlord": serve, "client": client}))
