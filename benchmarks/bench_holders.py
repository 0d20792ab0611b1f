"""1,000 concurrent holders renewing against one landlord, one lookup service, and etcd (issue 15, "load that matters").

``--holders`` (1,000) holder threads spread over ``--processes`` (4) client
processes (``--child client``); each holder holds a lease of every side:

* **landlord**: a ``LandlordLease`` granted by one landlord served by
  ``landlord.serve_landlord`` (``--child landlord``; its default server, the
  guarded one: one thread gathers every connection's messages, workers serve
  them), renewed with
  ``lease.renew(TTL)``;
* **lookup**: the holder's own registration with the lookup service as
  ``python -m lookup serve`` runs it (``lookup.discovery.unicast(...).register(item,
  TTL)``), renewed through its lease (``registration.lease.renew(TTL)``);
* **etcd**: an etcd lease (``client.lease(TTL)``) kept alive by one
  ``LeaseKeepAlive`` stream of its own (one request in flight), on its
  process's one gRPC channel to a single-member etcd on loopback, data on tmpfs
  (``bench_etcd.py``'s set-up and client; ``Lease.refresh()``, a stream per
  renewal, made far fewer renewals a second here: ``docs/performance.md``).

Every holder thread has its own Pyro5 connections (a proxy belongs to the
thread that made it), made before the rounds. Two ways of renewing: **flat
out** (a closed loop, the next renewal as soon as the last is answered: the
capacity, with the latency that 1,000 renewals in flight queue for) and **at
a fixed rate** (``--rate`` per holder, each on its own schedule: the latency
at a load every side carries, timed from when each renewal was due). The
sides take turns, round after round (``--rounds``, the order rotated), all
holders of all processes starting together; each round is ``--warm-up`` s
not counted, then ``--seconds`` s counted. Latency is measured in the
holder's thread, so it includes waiting for the client process's GIL: on 2
cores with 1,000 threads, scheduling. Rows: throughput (flat out), p50 and
p99 (both ways), landlord against etcd and the lookup service against etcd;
issue 26's goal: the landlord's renewals/s flat out >= 3x etcd's.
Every answer is checked; a landlord or lookup renewal that fails is a problem
(exit status 1).

Without etcd or its client it says why, measures the landlord and the lookup
service alone, and exits 0. The method in full: ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import threading
import time
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import bench_etcd
import harness
import Pyro5
import Pyro5.api
import serpent
from harness import Report, Row, compare, cpu_seconds, positive_int, positive_seconds, progress

import landlord
from landlord import FOREVER, Landlord, LandlordLease, LeaseDurationPolicy
from landlord.serving import raise_open_files_limit
from landlord.testing import ChildProcess

HOST = "127.0.0.1"
TTL = 300                  # seconds asked for on every side; longer than a run's pauses between a side's rounds
SIDES = ("landlord", "lookup", "etcd")
START_DELAY = 0.3          # from sending a round's command to its start: every client has it by then
SETUP_TIMEOUT = 180.0      # a client's holders all set up (1,000 x three leases on a busy 2-core machine)
RESULT_TIMEOUT = 60.0      # after a round's end, for a client's figures (a renewal in flight may take a while)
ERRORS_KEPT = 3            # error messages a client sends back per round
GOAL = 3.0                 # the landlord's renewals/s, holders flat out, >= 3x etcd's (issue 26)

def non_negative(text: str) -> float:
    """An argparse type: a finite number, 0 or more."""
    return 0.0 if text.strip() in ("0", "0.0") else positive_seconds(text)


BENCH = harness.Benchmark(
    "holders", "Renewal throughput and latency of 1,000 concurrent holders (threads in several client processes), "
    "each renewing its own lease in a closed loop: one landlord (serve_landlord) and one lookup service (as "
    "`python -m lookup serve` runs it) against etcd (single member on loopback), the sides taking turns.",
    rounds=5, modules=(landlord, Pyro5, serpent),
    quick={"holders": 50, "processes": 2, "seconds": 0.5, "warm_up": 0.2, "rounds": 3, "rate": 10})
BENCH.option("--holders", positive_int, 1000, "concurrent holders, each with a lease of every side")
BENCH.option("--processes", positive_int, 4, "client processes the holders are spread over (threads in each)")
BENCH.option("--seconds", positive_seconds, 2.0, "counted seconds per side and round")
BENCH.option("--warm-up", positive_seconds, 0.3, "seconds at the start of each round, renewing but not counted")
BENCH.option("--rate", non_negative, 2.0, "renewals a second per holder in the fixed-rate rounds (0: none)")
BENCH.parser.add_argument("--etcd", metavar="BINARY", help="the etcd binary (default: etcd on PATH)")
BENCH.parser.add_argument("--etcd-dir", metavar="DIR", default=harness.default_data_parent(),
                          help="where etcd's temporary data directory goes (default: %(default)s)")
BENCH.parser.add_argument("--no-etcd", action="store_true", help="measure the landlord and the lookup service alone")


# -- the landlord process ------------------------------------------------------------------------


class HolderLandlord(harness.GrantsOnRequest, Landlord):
    """A landlord that grants a lease to whoever asks."""

    def __init__(self) -> None:
        super().__init__(policy=LeaseDurationPolicy(maximum=FOREVER, default=float(TTL)))


def serve(args: argparse.Namespace) -> int:
    """The landlord process: ``serve_landlord`` with its defaults (the guarded server) until SIGTERM."""
    try:
        landlord.serve_landlord(HolderLandlord(), HOST, 0, announce=False,
                                ready=lambda uri: print(f"URI: {uri}", flush=True))
    except KeyboardInterrupt:  # stopped before serve_landlord set its handlers
        pass
    return 0


# -- the client processes --------------------------------------------------------------------------


class Holder:
    """One holder: its three leases, set up and renewed in its own thread (its proxies are that thread's)."""

    def __init__(self, index: int, config: Mapping[str, Any], etcd: Any) -> None:
        self.index = index
        self.config = config
        self.etcd = etcd  # a bench_etcd.KeepAliveStream's view of the process's etcd client, or None
        self.renew: dict[str, Callable[[], None]] = {}
        self.streams: list[bench_etcd.KeepAliveStream] = []

    def set_up(self) -> None:
        """Lease from every side, and renew each lease once (in the holder's thread): the rounds measure
        renewals on connections already made, as a holder's are after its first renewal, not 1,000
        connections being made at once (some of which would wait for a TCP SYN retransmission)."""
        from lookup import Name, ServiceItem, locate

        with Pyro5.api.Proxy(self.config["landlord"]) as granter:
            lease: LandlordLease = granter.grant(TTL)
        self.renew["landlord"] = lambda: self._check(lease.renew(TTL), "landlord")
        host, port = self.config["lookup"]
        with locate(host, port) as service:
            registration = service.register(ServiceItem(None, f"PYRO:holder.{self.index}@{HOST}:9",
                                                        types=["bench.Holder"],
                                                        attributes=[Name(f"holder-{self.index}")]), TTL)
        self.renew["lookup"] = lambda: self._check(registration.lease.renew(TTL), "lookup")
        if self.etcd is not None:
            etcd_lease = self.etcd.client.lease(TTL)
            stream = bench_etcd.KeepAliveStream(self.etcd)
            self.streams.append(stream)
            self.renew["etcd"] = lambda: self._check(stream.refresh(etcd_lease.id), "etcd")
        for renew in self.renew.values():
            renew()

    @staticmethod
    def _check(granted: float, side: str) -> None:
        if not granted > 0:
            raise RuntimeError(f"{side} granted no time: {granted!r}")

    def close(self) -> None:
        for stream in self.streams:
            stream.close()


class Round:
    """What every holder of a client process does in one round, and what they found.

    ``rate`` 0: a closed loop (each renewal as soon as the last is answered);
    else each holder renews ``rate`` times a second on a schedule of its own (a
    random phase), and a renewal's latency runs from its scheduled moment, so
    that one held up by a slow predecessor counts its wait too.
    """

    def __init__(self, side: str, start: float, counted_from: float, end: float, rate: float, holders: int) -> None:
        self.side, self.start, self.counted_from, self.end, self.rate = side, start, counted_from, end, rate
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.counts: list[int] = []
        self.errors: list[str] = []
        self.error_count = 0
        self.left = holders
        self.done = threading.Event()

    def run(self, holder: Holder) -> None:
        """One holder's renewals for the round."""
        renew = holder.renew.get(self.side)
        latencies: list[float] = []
        error = ""
        clock = time.monotonic
        period = 1 / self.rate if self.rate else 0.0
        due = self.start + random.random() * period  # the first renewal's moment
        time.sleep(max(0.0, due - clock()))
        if renew is not None:
            try:
                while due < self.end:
                    began = due if period else clock()
                    renew()
                    answered = clock()
                    # closed loop: the renewals answered in the counted window (its rate); fixed rate: those
                    # due in it, however late answered
                    if self.counted_from <= (began if period else answered) <= self.end:
                        latencies.append(answered - began)
                    if period:
                        due += period
                        time.sleep(max(0.0, due - clock()))
                    else:
                        due = answered
            except Exception as exc:  # a failed renewal ends this holder's round; the round reports it
                error = f"{type(exc).__name__}: {str(exc)[:200]}"
        else:
            error = f"no {self.side} lease"
        with self.lock:
            self.latencies += latencies
            self.counts.append(len(latencies))
            if error:
                self.error_count += 1
                if len(self.errors) < ERRORS_KEPT:
                    self.errors.append(error)
            self.left -= 1
            if not self.left:
                self.done.set()

    def result(self) -> dict[str, Any]:
        return {"side": self.side, "renewals": len(self.latencies), "seconds": self.end - self.counted_from,
                "latencies_us": [round(x * 1e6) for x in self.latencies], "counts": self.counts,
                "errors": self.error_count, "error_messages": self.errors}


class HolderThreads:
    """A client process's holders, each on a thread of its own waiting for the next round."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.etcd = self._etcd_client(config.get("etcd_port"))
        self.holders = [Holder(config["first"] + i, config, self.etcd) for i in range(config["holders"])]
        self._changed = threading.Condition()
        self._round: Round | None = None
        self._number = 0
        self._setup_left = len(self.holders)
        self.setup_errors: list[str] = []
        self.threads = [threading.Thread(target=self._live, args=(holder,), name=f"holder-{holder.index}",
                                         daemon=True) for holder in self.holders]
        for thread in self.threads:
            thread.start()

    @staticmethod
    def _etcd_client(port: int | None) -> Any:
        """The process's one etcd client (a gRPC channel carries every holder's stream), as KeepAliveStream reads it."""
        if port is None:
            return None
        from pyetcd import etcdrpc

        client = harness.etcd_client(port, bench_etcd.CALL_TIMEOUT)
        return types.SimpleNamespace(client=client, rpc=etcdrpc, stub=client.leasestub)

    def _live(self, holder: Holder) -> None:
        try:
            holder.set_up()
        except Exception as exc:
            with self._changed:
                self.setup_errors.append(f"holder {holder.index}: {type(exc).__name__}: {str(exc)[:200]}")
        with self._changed:
            self._setup_left -= 1
            self._changed.notify_all()
        seen = 0
        while True:
            with self._changed:
                while self._number == seen:
                    self._changed.wait()
                seen, current = self._number, self._round
            if current is None:
                return
            current.run(holder)

    def wait_set_up(self) -> None:
        with self._changed:
            self._changed.wait_for(lambda: not self._setup_left)

    def run(self, side: str, start: float, counted_from: float, end: float, rate: float) -> dict[str, Any]:
        current = Round(side, start, counted_from, end, rate, len(self.holders))
        with self._changed:
            self._round, self._number = current, self._number + 1
            self._changed.notify_all()
        current.done.wait()
        return current.result()

    def close(self) -> None:
        with self._changed:
            self._round, self._number = None, self._number + 1
            self._changed.notify_all()
        for holder in self.holders:
            holder.close()
        if self.etcd is not None:
            self.etcd.client.close()


def client(args: argparse.Namespace) -> int:
    """A client process: its configuration on the first line of stdin, then a round per line until EOF.

    Prints ``READY {...}`` once every holder has its leases and ``RESULT {...}``
    after each round (JSON: the renewals, their latencies, per-holder counts, errors).
    """
    raise_open_files_limit()  # a socket per holder and side
    config = json.loads(sys.stdin.readline())
    started = time.monotonic()
    threads = HolderThreads(config)
    threads.wait_set_up()
    print("READY " + json.dumps({"seconds": time.monotonic() - started, "errors": threads.setup_errors}), flush=True)
    try:
        for line in sys.stdin:
            command = json.loads(line)
            print("RESULT " + json.dumps(threads.run(command["side"], command["start"], command["counted_from"],
                                                     command["end"], command["rate"])), flush=True)
    finally:
        threads.close()
    return 0


# -- the measuring process ---------------------------------------------------------------------------


def percentile(ordered: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile of ``ordered`` (sorted), nearest rank; NaN for none."""
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


def split(total: int, parts: int) -> list[int]:
    """``total`` holders over at most ``parts`` processes, as evenly as can be (none empty)."""
    parts = min(parts, total)
    return [total // parts + (i < total % parts) for i in range(parts)]


class Servers:
    """The landlord, the lookup service and etcd, and the client processes; stop() ends them all."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.landlord: harness.ServerProcess | None = None
        self.lookup: ChildProcess | None = None
        self.etcd: bench_etcd.EtcdSide | None = None
        self.etcd_status = ""
        self.etcd_storage = "n/a"
        self.clients: list[ChildProcess] = []

    def start(self) -> None:
        progress("starting the landlord and the lookup service...")
        self.landlord = harness.ServerProcess(__file__, "landlord", "landlord", new_session=True)
        self.landlord_uri = self.landlord.uri()
        self.lookup = ChildProcess("-m", "lookup", "serve", "--host", HOST, "--port", "0", "--no-announce",
                                   "--max-lease", str(TTL), "--default-lease", str(TTL), name="the lookup service",
                                   env=harness.UNBUFFERED, new_session=True)
        lookup_uri = self.lookup.read_uri(harness.SERVER_START_TIMEOUT)
        self.lookup_address = [HOST, int(lookup_uri.rsplit(":", 1)[1])]
        self.etcd, started, reason, self.etcd_storage = bench_etcd.start_etcd(self.args)
        self.etcd_status = started or f"unavailable ({reason})"
        sizes = split(self.args.holders, self.args.processes)
        progress(f"starting {len(sizes)} client processes, {self.args.holders:,} holders, and their leases...")
        first = 0
        for number, size in enumerate(sizes):
            child = ChildProcess(os.path.abspath(__file__), "--child", "client", name=f"client {number}",
                                 stdin=True, stderr="inherit", env=harness.UNBUFFERED, new_session=True)
            self.clients.append(child)
            child.send(json.dumps({"holders": size, "first": first, "landlord": self.landlord_uri,
                                   "lookup": self.lookup_address,
                                   "etcd_port": self.etcd.server.port if self.etcd is not None else None}))
            first += size

    def wait_ready(self) -> tuple[float, list[str]]:
        """The longest set-up of a client, in seconds, and the holders that could not get their leases."""
        longest, errors = 0.0, []
        for child in self.clients:
            ready = json.loads(child.expect("READY ", SETUP_TIMEOUT))
            longest = max(longest, ready["seconds"])
            errors += ready["errors"]
        return longest, errors

    def pid(self, side: str) -> int | None:
        if side == "landlord" and self.landlord is not None:
            return self.landlord.child.pid
        if side == "lookup" and self.lookup is not None:
            return self.lookup.pid
        if side == "etcd" and self.etcd is not None and self.etcd.server.process is not None:
            return self.etcd.server.process.pid
        return None

    def stop(self) -> None:
        for child in self.clients:
            if child.process.stdin is not None:
                try:
                    child.process.stdin.close()  # the client's end of input: it stops its holders
                except OSError:
                    pass
        for child in self.clients:
            harness.stop_child(child)
        if self.lookup is not None:
            harness.stop_child(self.lookup)
        if self.landlord is not None:
            self.landlord.stop()
        if self.etcd is not None:
            self.etcd.close()


class Measured:
    """One side's figures in one round, merged over the client processes."""

    def __init__(self, results: Sequence[Mapping[str, Any]], server_cpu: float, clients_cpu: float,
                 wall: float) -> None:
        self.renewals = sum(result["renewals"] for result in results)
        seconds = max(result["seconds"] for result in results)
        self.errors = sum(result["errors"] for result in results)
        # each different message once, in the order seen
        self.messages = list(dict.fromkeys(message for result in results for message in result["error_messages"]))
        latencies = sorted(x / 1000 for result in results for x in result["latencies_us"])  # ms
        self.rate = self.renewals / seconds if not self.errors else math.nan
        self.p50 = percentile(latencies, 0.50) if not self.errors else math.nan
        self.p99 = percentile(latencies, 0.99) if not self.errors else math.nan
        self.max = latencies[-1] if latencies else math.nan
        self.counts = sorted(count for result in results for count in result["counts"])  # renewals per holder
        self.server_cpu = server_cpu / wall * 100  # % of one core, while counting
        self.clients_cpu = clients_cpu / wall * 100
        # CPU per renewal, µs (the CPU was read over about the counted window)
        self.server_us = server_cpu / self.renewals * 1e6 if self.renewals else math.nan
        self.clients_us = clients_cpu / self.renewals * 1e6 if self.renewals else math.nan

    def figures(self) -> dict[str, float | None]:
        """For the JSON: the round's figures (latencies in ms, CPU in % of a core and µs a renewal; None: none)."""
        figures = {"rate": self.rate, "p50": self.p50, "p99": self.p99, "max": self.max, "errors": self.errors,
                   "server_cpu": self.server_cpu, "clients_cpu": self.clients_cpu, "server_us": self.server_us,
                   "clients_us": self.clients_us, "fewest_per_holder": self.counts[0] if self.counts else 0}
        return {name: value if harness.finite(value) else None for name, value in figures.items()}


def run_round(servers: Servers, side: str, rate: float, args: argparse.Namespace) -> Measured:
    """Every holder renewing on ``side`` at once for a round (``rate`` per holder, or 0: flat out); the figures."""
    start = time.monotonic() + START_DELAY
    counted_from = start + args.warm_up
    end = counted_from + args.seconds
    command = json.dumps({"side": side, "start": start, "counted_from": counted_from, "end": end, "rate": rate})
    for child in servers.clients:
        child.send(command)
    server_pid = servers.pid(side)

    def cpu() -> tuple[float, float, float]:
        return (cpu_seconds(server_pid) if server_pid else math.nan,
                sum(cpu_seconds(child.pid) for child in servers.clients), time.monotonic())

    time.sleep(max(0.0, counted_from - time.monotonic()))
    before = cpu()
    time.sleep(max(0.0, end - time.monotonic()))
    after = cpu()
    results = [json.loads(child.expect("RESULT ", args.seconds + args.warm_up + RESULT_TIMEOUT))
               for child in servers.clients]
    return Measured(results, *(b - a for a, b in zip(before, after)))


Rounds = dict[tuple[str, str], list[Measured]]  # (mode, side): the side's figures in each round


def modes(args: argparse.Namespace) -> list[tuple[str, float, str]]:
    """The ways of renewing measured: (mode, renewals a second per holder or 0, how a row says it)."""
    flat_out = [("closed", 0.0, f"{args.holders:,} holders flat out")]
    if not args.rate:
        return flat_out
    return flat_out + [("fixed", args.rate, f"{args.holders:,} holders at {args.rate * args.holders:,.0f}/s")]


def rows_of(per_round: Rounds, args: argparse.Namespace) -> list[Row]:
    """Landlord against etcd and the lookup service against etcd, round by round: throughput, p50 and p99 flat out;
    p50 and p99 at the fixed rate."""
    rows = []
    for mode, _, how in modes(args):
        figures = [("renewals/s", "renewals/s", "rate")] if mode == "closed" else []
        figures += [("p50 latency", "ms", "p50"), ("p99 latency", "ms", "p99")]
        for what, unit, field in figures:
            for side in ("landlord", "lookup"):
                ours = [getattr(measured, field) for measured in per_round.get((mode, side), [])]
                theirs = [getattr(measured, field) for measured in per_round.get((mode, "etcd"), [])] or None
                goal = GOAL if (side, field) == ("landlord", "rate") else None
                rows.append(compare(f"{side}: {what}, {how}", unit, ours, theirs, goal=goal, extra={"mode": mode}))
    return rows


def summary(measured: Sequence[Measured]) -> str:
    """A side's figures over every round, for the notes."""
    def span(values: Sequence[float], form: str) -> str:
        good = [v for v in values if not math.isnan(v)]
        return f"{form.format(min(good))}–{form.format(max(good))}" if good else "—"

    counts = [count for m in measured for count in m.counts]
    idle = sum(1 for count in counts if count == 0)
    return (f"{span([m.rate for m in measured], '{:,.0f}')} renewals/s; p50 {span([m.p50 for m in measured], '{:.1f}')}"
            f" ms, p99 {span([m.p99 for m in measured], '{:.1f}')} ms, max {span([m.max for m in measured], '{:.0f}')}"
            f" ms; CPU: server {span([m.server_cpu for m in measured], '{:.0f}')}% of a core "
            f"({span([m.server_us for m in measured], '{:.0f}')} µs a renewal), clients "
            f"{span([m.clients_cpu for m in measured], '{:.0f}')}% ({span([m.clients_us for m in measured], '{:.0f}')}"
            f" µs); renewals per holder per round: median {statistics.median(counts) if counts else 0:g}, min "
            f"{min(counts, default=0)}" + (f" ({idle} holder-rounds with none)" if idle else ""))


def take_rounds(servers: Servers, args: argparse.Namespace, per_round: Rounds, problems: list[str],
                notes: list[str]) -> None:
    """Every mode and side in every round, the sides' order rotated each round."""
    sides = [side for side in SIDES if side != "etcd" or servers.etcd is not None]
    for number in range(args.rounds):
        progress(f"round {number + 1} of {args.rounds}...")
        shift = number % len(sides)
        for mode, rate, how in modes(args):
            for side in sides[shift:] + sides[:shift]:
                measured = run_round(servers, side, rate, args)
                per_round.setdefault((mode, side), []).append(measured)
                if measured.errors:
                    what = (f"{measured.errors} {side} holder(s) failed to renew ({how}) in round {number + 1}: "
                            + "; ".join(measured.messages))
                    (notes if side == "etcd" else problems).append(what)


def measure(args: argparse.Namespace) -> Report:
    """Start the servers and the clients, take the rounds, stop everything (also on errors and Ctrl-C)."""
    servers = Servers(args)
    per_round: Rounds = {}
    problems: list[str] = []
    notes: list[str] = []  # set-up, then any failed etcd rounds
    try:
        servers.start()
        setup_seconds, setup_errors = servers.wait_ready()
        if setup_errors:
            raise RuntimeError(f"{len(setup_errors)} holder(s) could not get their leases, the first: "
                               f"{setup_errors[0]}")
        notes.append(f"set-up: {args.holders:,} holders in {len(servers.clients)} processes got their leases (and "
                     f"renewed each once) in {setup_seconds:.1f} s")
        take_rounds(servers, args, per_round, problems, notes)
    except Exception as exc:  # a server or a client failed: report what was measured, and fail
        problems.append(f"{type(exc).__name__}: {exc}")
    finally:
        servers.stop()
    summaries = ["per side over the rounds (min–max of the rounds; CPU while counting, in % of one core and per "
                 "renewal):"]
    for mode, _, how in modes(args):
        summaries.append(f"  {how}:")
        summaries += [f"    {side}: {summary(per_round[mode, side])}" for side in SIDES if (mode, side) in per_round]
    title = (f"{args.holders:,} holder threads in {len(servers.clients)} client processes, each renewing its own "
             f"lease (TTL {TTL} s) flat out (closed loop)" + (f" and at {args.rate:g}/s each" if args.rate else "") +
             f", against one landlord (serve_landlord, guarded server) | one lookup service (python -m lookup "
             f"serve) | etcd; {args.rounds} rounds of {args.seconds:g} s per side and way (after {args.warm_up:g} s "
             "not counted), the sides taking turns. A lookup row's 'landlord' column is the lookup service; the "
             "baseline is etcd")
    if servers.etcd is None:
        title += f"\netcd: {servers.etcd_status}: no etcd figures"
    return Report(rows_of(per_round, args), title=title, notes=summaries + notes, problems=problems,
                  machine={"etcd": servers.etcd_status, "etcd_client": bench_etcd.client_description(),
                           "etcd_data_dir": servers.etcd_storage, "load_average": os.getloadavg()},
                  extra={"config": {"holders": args.holders, "processes": len(servers.clients), "ttl": TTL,
                                    "seconds": args.seconds, "warm_up": args.warm_up, "rounds": args.rounds,
                                    "rate_per_holder": args.rate},
                         "rounds": {f"{mode} {side}": [measured.figures() for measured in each]
                                    for (mode, side), each in per_round.items()}})


if __name__ == "__main__":
    raise SystemExit(BENCH.main(measure, children={"landlord": serve, "client": client}))
