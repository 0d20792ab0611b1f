"""The safety checker's pause-and-kill schedule against landlord's, etcd's, ZooKeeper's and Redis' locks (issue 25, 7).

The same seeded schedule of the safety checker (``python -m
landlord.testing.lockcheck``: client processes contending for one lock, each
round writing through a resource that logs every write; holders paused with
SIGSTOP past their term and killed with kill -9, a replacement taking over
their rounds) is run against each system, twice:

- **unfenced**: the resource accepts every write; a write whose token is below
  one accepted before is a *stale write that landed*: its client's lock had
  been taken over meanwhile (for Redis, whose lock has no token, the resource
  hands out tickets in the order the clients acquired);
- **fenced**, where the system has a token (landlord's ``lock.token``, etcd's
  revision of the lock key's creation, the sequence number of kazoo's znode):
  the resource refuses an older token with ``landlord.Fence``. Goal: no stale
  write accepted (for landlord, a limit of 0).

Every lock's term is the same whole number of seconds (``--term``):
landlord's lease, etcd's lease TTL, ZooKeeper's session timeout, Redis' key
expiry; so a paused holder loses its lock after about the same time
everywhere. Rows: the stale writes of each, and how often two clients
believed themselves holders at once (overlapping belief windows: landlord's
clients read ``lock.valid``, which turns false before anyone else can win; the
others' locks cannot tell, and are believed held until released), landlord's
against each system's; a ratio where both are above 0.

The servers are started here on free loopback ports (``lock_backends.py``,
shared with ``bench_locks.py``) and stopped however the run ends; without one
it says why and runs the others. The method: ``benchmarks/README.md``; the
options, table and JSON: ``harness.py``. Not a test: pytest collects only
``tests/``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
from collections.abc import Callable, Sequence

import harness
import Pyro5
from harness import ExternalServer, Report, Row, ServerUnavailable, positive_seconds, progress
from lock_backends import (
    SYSTEMS,
    TOKENS,
    EtcdBackend,
    RedisBackend,
    ServiceBackend,
    ZooKeeperBackend,
    start_server,
    start_systems,
    system_names,
)

import landlord
from landlord.testing import ChildProcess, Line
from landlord.testing.lockcheck import Backend, Faults, LandlordBackend, LockCheck
from landlord.testing.lockcheck import Report as CheckReport

HERE = pathlib.Path(__file__).resolve().parent
BACKENDS: dict[str, type[ServiceBackend]] = {"etcd": EtcdBackend, "ZooKeeper": ZooKeeperBackend,
                                             "Redis": RedisBackend}
MODES = ("unfenced", "fenced")


def gap(text: str) -> tuple[float, float]:
    """An argparse type: ``MIN,MAX`` seconds between two faults."""
    parts = text.split(",")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"MIN,MAX seconds, got {text!r}")
    low, high = (positive_seconds(part) for part in parts)
    if low > high:
        raise argparse.ArgumentTypeError(f"MIN above MAX: {text!r}")
    return low, high


def spawn(role: str, index: int, args: Sequence[str], on_line: Callable[[Line], None] | None) -> ChildProcess:
    """The checker's resource and clients, able to import ``lock_backends`` (this directory on their path), in a
    session of their own (Ctrl-C reaches the benchmark, which stops them)."""
    path = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    return ChildProcess(*args, name=role if role == "resource" else f"{role} {index}", on_line=on_line,
                        env={"PYTHONPATH": path}, new_session=True)


class System:
    """One system checked: its server (started once, used by both runs), its runs' reports, or why it is missing."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.server: ExternalServer | None = None
        self.version = ""
        self.reason = ""  # why it is not checked
        self.reports: dict[str, CheckReport] = {}
        self.failed: dict[str, str] = {}  # mode: why that run gave no report

    @property
    def fencing_tokens(self) -> bool:
        return self.name == "landlord" or BACKENDS[self.name].fencing_tokens

    def start(self, args: argparse.Namespace) -> None:
        if self.name == "landlord":
            self.version = landlord.__version__
            return
        progress(f"starting {self.name}...")
        try:
            self.server = start_server(self.name, args.data_dir, etcd=args.etcd,
                                       zookeeper_tick_ms=ZooKeeperBackend.zookeeper_tick_ms)
            self.version = self.server.version
        except ServerUnavailable as exc:
            self.reason = str(exc)
            progress(f"{self.name}: {exc}; going on without it")

    def backend(self, args: argparse.Namespace) -> Backend:
        if self.name == "landlord":
            return LandlordBackend()
        return BACKENDS[self.name](self.server, redis_sleep=args.redis_sleep)

    def check(self, mode: str, args: argparse.Namespace) -> None:
        """One run of the schedule, ``mode`` unfenced or fenced; its report kept, or why it gave none."""
        progress(f"lockcheck: {self.name}, {mode}...")
        faults = Faults(pauses=args.pauses, kills=args.kills, gap=args.gap)
        check = LockCheck(self.backend(args), clients=args.clients, rounds=args.client_rounds, writes=args.writes,
                          work=args.work, term=float(args.term), faults=faults, fenced=mode == "fenced",
                          seed=args.seed, timeout=args.timeout, spawn=spawn)
        try:
            report = check.run()
        except Exception as exc:
            self.failed[mode] = f"{type(exc).__name__}: {str(exc)[:300]}"
            progress(f"  failed: {self.failed[mode]}")
            return
        self.reports[mode] = report
        progress(f"  {summary(report)}")

    def stale(self, mode: str) -> int | None:
        report = self.reports.get(mode)
        return None if report is None else len(report.analysis.stale_accepted)

    def overlaps(self, modes: Sequence[str]) -> int | None:
        """Overlapping belief windows over the runs of ``modes`` (None if one of them gave no report)."""
        if any(mode not in self.reports for mode in modes):
            return None
        return sum(len(self.reports[mode].analysis.overlaps) for mode in modes)

    def stop(self) -> None:
        if self.server is not None:
            server, self.server = self.server, None
            server.stop()


def summary(report: CheckReport) -> str:
    """One line of what a run did and found."""
    a = report.analysis
    faults = ", ".join(f"{count} {kind}" for kind, count in report.faults.items()) or "no faults"
    on_holders = sum(report.on_holders.values())
    worst = (f" (worst {max(min(x.end, y.end) - y.start for x, y in a.overlaps) * 1000:.0f} ms)" if a.overlaps
             else "")
    errors = (", failed calls: " + ", ".join(f"{kind} {count}" for kind, count in report.errors.items())
              if report.errors else "")
    return (f"{faults} ({on_holders} of the holder); {report.rounds_done} rounds"
            f"{'' if report.finished else ' (NOT FINISHED)'} in {report.seconds:.1f} s; {a.writes} writes, "
            f"{a.refused} refused; stale {'accepted' if report.fenced else 'landed'} {len(a.stale_accepted)}; "
            f"late {a.late} ({a.late_accepted} accepted); {report.invalid} rounds found the lock invalid; "
            f"overlapping belief windows {len(a.overlaps)}{worst}{errors}")


def rows(systems: dict[str, System]) -> list[Row]:
    """Landlord's figures against each system's: stale writes unfenced, stale writes through the fence (where the
    system has tokens), overlapping belief windows (over the runs the system had)."""
    ours = systems["landlord"]
    found = []
    for name in SYSTEMS:
        found.append(Row(f"stale writes landed, unfenced, vs {name}", ours.stale("unfenced"),
                         systems[name].stale("unfenced"), "writes", extra={"baseline_system": name}))
    for name in SYSTEMS:
        if systems[name].fencing_tokens:
            found.append(Row(f"stale writes accepted, fenced, vs {name}", ours.stale("fenced"),
                             systems[name].stale("fenced"), "writes", limit=0, extra={"baseline_system": name}))
    for name in SYSTEMS:
        modes = MODES if systems[name].fencing_tokens else ("unfenced",)
        found.append(Row(f"two believed holders ({len(modes)} run{'s' if len(modes) > 1 else ''}) vs {name}",
                         ours.overlaps(modes), systems[name].overlaps(modes), "overlaps", limit=0,
                         extra={"baseline_system": name, "runs": list(modes)}))
    return found


LOCKS = {
    "landlord": "landlord.Lock(duration=term): renewed a third into each term by the process's renewal manager; "
                "valid turns false a fifth of the term before its deadline",
    "etcd": "etcd-sdk-python's client.lock(ttl=term): nothing in it renews the lease, so the checker's client renews "
            "it a third into each term from a thread (as etcd's Go concurrency.Session does); a lease expires within "
            "half a second after its TTL (etcd's lessor looks every 0.5 s)",
    "ZooKeeper": "kazoo's Lock on a KazooClient(timeout=term): kazoo's connection thread pings; the server ends the "
                 "session, deleting the lock's ephemeral znode, within a tick "
                 f"({ZooKeeperBackend.zookeeper_tick_ms} ms here) of the timeout",
    "Redis": "redis-py's client.lock(timeout=term), not thread-local: the key expires term seconds after it was set, "
             "so the checker's client resets it (reacquire) a third into each term from a thread",
}


def notes(systems: dict[str, System], args: argparse.Namespace) -> list[str]:
    lines = [f"schedule: {args.clients} clients x {args.client_rounds} rounds of {args.writes} writes, "
             f"{args.work:g} s of work between a check and its write; {args.pauses} pause(s) of 1.3-2 terms "
             f"(plus the system's expiry delay) and {args.kills} kill(s), four in five aimed at the holder, "
             f"{args.gap[0]:g}-{args.gap[1]:g} s apart; seed {args.seed}; every lock's term {args.term} s",
             "the runs:"]
    for name, system in systems.items():
        if system.reason:
            lines.append(f"  {name}: not checked: {system.reason}")
            continue
        lines.append(f"  {name} {system.version}: {LOCKS[name]}; tokens: {TOKENS.get(name, 'lock.token')}")
        for mode in MODES:
            if mode in system.reports:
                report = system.reports[mode]
                lines.append(f"    {mode}: {summary(report)}")
                short = {kind: planned - report.faults.get(kind, 0)
                         for kind, planned in (("pause", args.pauses), ("kill", args.kills))}
                if any(short.values()):
                    lines.append("      (its clients were done before " + " and ".join(
                        f"{left} {kind}{'s' if left > 1 else ''}" for kind, left in short.items() if left)
                        + " of the schedule: more --client-rounds, or a shorter --gap)")
            elif mode in system.failed:
                lines.append(f"    {mode}: FAILED: {system.failed[mode]}")
    lines += ["stale writes: accepted with a token below one accepted before (unfenced: what a fence would have "
              "refused); overlapping belief windows: pairs of clients whose windows of reading their lock held "
              "overlapped (a lock without valid is believed held from acquire to release)",
              f"data: {args.data_dir or 'the system temp dir'} ({harness.filesystem_of(args.data_dir or '/tmp')})"]
    return lines


def problems(systems: dict[str, System]) -> list[str]:
    """What makes the run fail: landlord's runs not done, or a stale write through landlord's fence."""
    ours = systems["landlord"]
    found = [f"landlord's {mode} run failed: {why}" for mode, why in ours.failed.items()]
    for mode, report in ours.reports.items():
        if not report.finished:
            found.append(f"landlord's {mode} run did not finish its rounds within {report.seconds:.0f} s")
        if mode == "fenced" and not report.analysis.safe:
            found.append(f"landlord's fence accepted {len(report.analysis.stale_accepted)} stale write(s); "
                         f"{len(report.analysis.shared_tokens)} token(s) written by two clients")
    return found


def measure(args: argparse.Namespace) -> Report:
    """Start the servers, run the schedule against every system unfenced and then fenced, stop them all."""
    systems = {name: System(name) for name in ("landlord", *SYSTEMS)}
    try:
        start_systems(systems.values(), args.without, args)
        for mode in MODES:
            for system in systems.values():
                if not system.reason and (mode == "unfenced" or system.fencing_tokens):
                    system.check(mode, args)
    finally:
        for system in systems.values():
            system.stop()
    title = (f"The safety checker's pause-and-kill schedule (seed {args.seed}) against landlord.Lock, etcd's lock "
             f"(etcd-sdk-python), kazoo's Lock on ZooKeeper and redis-py's Lock on Redis, every term {args.term} s; "
             "each unfenced, and fenced where it has tokens")
    missing = [f"{name}: {system.reason}" for name, system in systems.items() if system.reason]
    runs = [{"system": name, "mode": mode, **report.as_dict()} for name, system in systems.items()
            for mode, report in system.reports.items()]
    return Report(rows(systems), title="\n".join([title, *missing]), notes=notes(systems, args),
                  problems=problems(systems),
                  machine={f"{name} (lock)": system.version or system.reason for name, system in systems.items()},
                  extra={"runs": runs, "schedule": {"clients": args.clients, "rounds": args.client_rounds,
                                                    "writes": args.writes, "work": args.work, "term": args.term,
                                                    "pauses": args.pauses, "kills": args.kills,
                                                    "gap": list(args.gap), "seed": args.seed}})


BENCH = harness.Benchmark(
    "lock_safety", "The safety checker's pause-and-kill schedule against landlord.Lock, etcd, ZooKeeper (kazoo) and "
    "Redis (redis-py), all started here on loopback: stale writes that land unfenced, stale writes accepted through "
    "landlord.Fence (goal for landlord: 0) and overlapping belief windows, landlord's against each system's. Without "
    "a server or client it says why and checks the others.", rounds=None, modules=(landlord, Pyro5),
    quick={"clients": 3, "client_rounds": 6, "pauses": 1, "kills": 1, "gap": "0.3,1"})
BENCH.option("--clients", harness.positive_int, 4, "client processes contending for the lock")
BENCH.option("--client-rounds", harness.positive_int, 30, "rounds of acquire, write, release per client")
BENCH.option("--writes", harness.positive_int, 3, "writes per round")
BENCH.option("--work", positive_seconds, 0.05, "seconds a client works between its check and its write (on average)")
BENCH.option("--term", harness.at_least(2), 2, "every lock's term, whole seconds: landlord's lease, etcd's lease TTL "
             "(whole seconds, at least 2), ZooKeeper's session timeout, Redis' expiry")
BENCH.option("--pauses", harness.at_least(0), 5, "SIGSTOPs of 1.3-2 terms")
BENCH.option("--kills", harness.at_least(0), 2, "kill -9s of a client (replaced)")
BENCH.option("--gap", gap, "0.3,1.5", "MIN,MAX seconds between two faults")
BENCH.option("--seed", int, 25, "the schedule's seed (the same for every system)")
BENCH.option("--timeout", positive_seconds, 240.0, "seconds a run's clients have to finish their rounds")
BENCH.option("--redis-sleep", positive_seconds, 0.1, "how often redis-py's waiting Lock tries again, in seconds")
BENCH.option("--data-dir", str, harness.default_data_parent(), "where the servers' temporary directories go")
BENCH.option("--etcd", str, "etcd", "the etcd binary")
BENCH.option("--without", system_names(SYSTEMS), "", "comma-separated systems to leave out (etcd, zookeeper, "
             "redis)")


if __name__ == "__main__":
    raise SystemExit(BENCH.main(measure))
