"""Landlord against etcd: granting leases and keeping them alive, from one Python client thread.

Issue 5, item 3: "grant and keep-alive through a Python etcd client against
landlord grant and renew ... Goal: landlord >= 3x etcd." Users choosing
between this project and etcd leases will do it from Python, so this is what
is compared: what one Python thread gets out of each, on the same machine, in
the same run.

The two servers
---------------
* **landlord**: a :class:`landlord.Landlord` in its own process (this script
  started again with a hidden ``--serve`` flag), on a Pyro5 daemon on
  127.0.0.1, with its default sleeper reaper. Besides the landlord's own
  remote methods it exposes ``grant(duration)`` (one new lease, returned as a
  ``LandlordLease``) and ``grant_many(count, duration)`` (that many).
* **etcd**: Debian's etcd (``etcd-server``), started by this script on
  127.0.0.1 on free ports, a single member with a fresh temporary data
  directory that is removed afterwards. By default the directory is on tmpfs
  (``/dev/shm``), so that etcd's fsync of every lease grant costs nothing:
  that is etcd's best case, and fair to a landlord that keeps its leases in
  memory only. ``--etcd-dir /tmp`` (or any directory on a disk) measures
  etcd as it would run in production. The client is ``etcd-sdk-python``
  (module ``pyetcd``), the maintained fork of the ``etcd3`` gRPC client;
  ``benchmarks/setup_etcd.sh`` installs both.

What is measured (every figure is items per second, one client thread)
--------------------------------------------------------------------------
1. **grant, sequential**: ``proxy.grant(60)`` one after the other, against
   ``client.lease(60)`` (a ``LeaseGrant`` RPC) one after the other.
2. **grant, batched (N)**: ``proxy.grant_many(N, 60)`` (one call, N leases
   back), against N ``LeaseGrant`` RPCs pipelined on the client's gRPC
   channel (``LeaseGrant.future``; all N in flight at once up to 1,000, since
   etcd refuses with "too many requests" once its apply falls 5,000 behind).
   etcd has no batch grant (a ``Txn`` cannot grant leases), so pipelining is
   the fastest one thread can get out of it.
3. **keep-alive, sequential**: ``lease.renew(60)`` on one lease, one call
   after the other, against the faster of two etcd ways of refreshing one
   lease: the client's ``Lease.refresh()`` (which opens a ``LeaseKeepAlive``
   stream per refresh) and one long-lived ``LeaseKeepAlive`` stream with one
   request in flight (what etcd's Go client does). Both are printed.
4. **keep-alive, batched (N)**: ``LeaseMap.renew_all()`` on N leases (one
   ``renew_all`` call), against one ``LeaseKeepAlive`` stream carrying N
   requests, all written without waiting, and its N responses read. etcd's
   keep-alive takes one lease per message and has no batch form; this is
   the fastest the client allows.

Every answer is checked (a grant has an id, a keep-alive a positive TTL, a
renewal grants time), so neither side is timed failing.

A yardstick, printed but not a row: a Pyro5 call that does nothing
(``proxy.ping()``), timed in turns with row 3. No one-at-a-time landlord call
can beat it, so it shows how much of rows 1 and 3 is the landlord and how
much the transport, and the script prints what 3x etcd would need. For each metric the
two sides take turns, ``--rounds`` rounds each of ``--seconds / --rounds``
seconds, after a warm-up; the best round of each side is kept (noise only
slows a round down). The ratio is landlord / etcd; the goal is 3x.

If etcd or its client cannot be had, the script says why ("etcd:
unavailable (reason)"), measures the landlord alone and exits 0; it never
fails for want of etcd. ``--json PATH`` writes the rows as
``{"name", "rows": [{"metric", "landlord", "baseline", "unit", "ratio",
"goal", "met"}], "machine"}``.

Run ``python benchmarks/bench_etcd.py --help`` for the options. This file is
not a test: pytest collects only ``tests/``.
"""

from __future__ import annotations

import argparse
import collections
import importlib.metadata
import json
import math
import os
import platform
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import Pyro5
import Pyro5.api
import serpent
from common import (  # the benchmarks' shared pieces
    ServerProcess,
    positive_int,
    positive_seconds,
    serve_forever,
    stop_on_sigterm,
    stop_process,
)

import landlord
from landlord import FOREVER, Landlord, LandlordLease, LeaseDurationPolicy, LeaseMap
from landlord.grantor import MAX_BATCH

NAME = "etcd"
GOAL = 3.0                 # landlord >= 3x etcd, on every row
TTL = 60                   # seconds asked for on both sides (etcd TTLs are whole seconds)
DEFAULT_SECONDS = 3.0      # per metric and side, split into --rounds rounds
DEFAULT_ROUNDS = 3
DEFAULT_BATCH = 1000
WARM_UP_SECONDS = 0.2

ETCD_START_TIMEOUT = 30.0    # until /health answers true
ETCD_START_ATTEMPTS = 3      # a free port may be taken between choosing it and etcd binding it
CALL_TIMEOUT = 60.0          # any one call, either side
# etcd answers "too many requests" once its applied index falls 5,000 behind the
# committed one, which thousands of pipelined grants do; this many is safe.
ETCD_MAX_IN_FLIGHT = 1000
CLIENT_PACKAGE = "etcd-sdk-python"
CLIENT_REQUIREMENT = "etcd-sdk-python>=0.0.7 protobuf>=5.27.2"


# -- the landlord process ----------------------------------------------------------------


class BenchLandlord(Landlord):
    """A landlord that grants on request: one lease, or many in one call."""

    def __init__(self) -> None:
        super().__init__(policy=LeaseDurationPolicy(maximum=FOREVER, default=float(TTL)))
        self._resources = 0

    @Pyro5.api.expose
    def grant(self, duration: float) -> LandlordLease:
        """Lease a fresh resource (a number) for ``duration`` seconds."""
        self._resources += 1
        return self.new_lease(self._resources, duration)

    @Pyro5.api.expose
    def ping(self) -> None:
        """Nothing: a raw Pyro5 call, the ceiling of any one-at-a-time call to this daemon."""

    @Pyro5.api.expose
    def grant_many(self, count: int, duration: float) -> list[LandlordLease]:
        """Lease ``count`` fresh resources for ``duration`` seconds each."""
        first = self._resources
        self._resources += count
        return [self.new_lease(first + i, duration) for i in range(count)]


def serve() -> int:
    """The landlord process: serve a BenchLandlord on loopback until SIGTERM or Ctrl-C."""
    return serve_forever(BenchLandlord())


# -- the etcd process ----------------------------------------------------------------------


class EtcdUnavailable(Exception):
    """etcd or its client cannot be had; the message says why."""


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on 127.0.0.1 just now."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def filesystem_of(path: str) -> str:
    """The type of the filesystem holding ``path`` (from /proc/mounts), or "unknown"."""
    path = os.path.realpath(path)
    best, kind = "", "unknown"
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                parts = line.split()
                if len(parts) >= 3 and (path == parts[1] or path.startswith(parts[1].rstrip("/") + "/")):
                    if len(parts[1]) > len(best):
                        best, kind = parts[1], parts[2]
    except OSError:
        pass
    return kind


def default_etcd_parent() -> str | None:
    """tmpfs if there is one to write to (etcd's best case: fsync is free), else the usual temp dir."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def _no_proxy_get(url: str, timeout: float) -> bytes:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via a proxy
    with opener.open(url, timeout=timeout) as answer:
        return answer.read()  # type: ignore[no-any-return]


class EtcdProcess:
    """A single-member etcd on 127.0.0.1, free ports, a temporary data directory; stop() ends it all.

    Raises:
        EtcdUnavailable: it would not start or become healthy.
    """

    def __init__(self, binary: str, parent_dir: str | None) -> None:
        self.binary = binary
        self.workdir = tempfile.mkdtemp(prefix="bench-etcd-", dir=parent_dir)
        self.filesystem = filesystem_of(self.workdir)
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.version = "?"
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    @property
    def log_path(self) -> str:
        return os.path.join(self.workdir, "etcd.log")

    def _start(self) -> None:
        status: int | None = None
        for attempt in range(ETCD_START_ATTEMPTS):
            self.port, peer_port = free_ports(2)
            client_url, peer_url = f"http://127.0.0.1:{self.port}", f"http://127.0.0.1:{peer_port}"
            data_dir = os.path.join(self.workdir, f"data{attempt}")
            command = [self.binary, "--name", "bench", "--data-dir", data_dir,
                       "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
                       "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
                       "--initial-cluster", f"bench={peer_url}", "--initial-cluster-state", "new",
                       "--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn"]
            with open(self.log_path, "ab") as log:
                self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                                stderr=subprocess.STDOUT, start_new_session=True)
            if self._wait_healthy():
                self.version = json.loads(_no_proxy_get(f"{client_url}/version", 5.0))["etcdserver"]
                return
            status = self.process.poll()
            if status is None:  # running but never healthy: not a port clash
                raise EtcdUnavailable(f"etcd did not become healthy within {ETCD_START_TIMEOUT:g} s; "
                                      f"its log ends: {self._log_tail()}")
        raise EtcdUnavailable(f"etcd exited with status {status} "
                              f"({ETCD_START_ATTEMPTS} attempts); its log ends: {self._log_tail()}")

    def _wait_healthy(self) -> bool:
        assert self.process is not None
        deadline = time.monotonic() + ETCD_START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                if json.loads(_no_proxy_get(f"http://127.0.0.1:{self.port}/health", 1.0)).get("health") == "true":
                    return True
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        return False

    def _log_tail(self, lines: int = 3) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as log:
                return " | ".join(line.strip() for line in log.readlines()[-lines:]) or "(empty)"
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Stop etcd (SIGTERM, then a kill) and remove its directory."""
        if self.process is not None and stop_process(self.process) is None:
            print("warning: etcd ignored SIGTERM and had to be killed", file=sys.stderr)
        shutil.rmtree(self.workdir, ignore_errors=True)
        if os.path.exists(self.workdir):
            print(f"warning: could not remove etcd's directory {self.workdir}", file=sys.stderr)


def client_description() -> str:
    """The etcd client's distribution and the two it runs on, with their versions (nothing is imported)."""
    versions = []
    for package in (CLIENT_PACKAGE, "grpcio", "protobuf"):
        try:
            versions.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{package} not installed")
    return ", ".join(versions)


class EtcdSide:
    """etcd started here, and a client connected to it.

    Raises:
        EtcdUnavailable: no client, no etcd binary, or etcd would not start.
    """

    def __init__(self, binary: str | None, parent_dir: str | None) -> None:
        try:
            import pyetcd
            from pyetcd import etcdrpc
        except Exception as exc:  # ImportError, or protobuf refusing the generated code
            raise EtcdUnavailable(f"no Python etcd client ({type(exc).__name__}: {exc}); "
                                  f"pip install {CLIENT_REQUIREMENT}, or run benchmarks/setup_etcd.sh") from None
        path = shutil.which(binary or "etcd")
        if path is None:
            raise EtcdUnavailable(f"no etcd binary at {binary}" if binary else
                                  "no etcd binary on PATH; apt-get install etcd-server, "
                                  "or run benchmarks/setup_etcd.sh")
        self.rpc = etcdrpc
        self.server = EtcdProcess(path, parent_dir)
        try:
            # gRPC honours http_proxy; loopback must not go through one
            self.client = pyetcd.client(host="127.0.0.1", port=self.server.port, timeout=CALL_TIMEOUT,
                                        grpc_options=[("grpc.enable_http_proxy", 0)])
            self.client.status()
            self.stub = self.client.leasestub
        except BaseException:
            self.server.stop()
            raise

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            self.server.stop()

    # what is timed

    def grant(self) -> Any:
        lease = self.client.lease(TTL)
        if not lease.id:
            raise RuntimeError(f"etcd granted no lease: {lease!r}")
        return lease

    def grant_pipelined(self, count: int) -> list[int]:
        """``count`` LeaseGrant RPCs with up to ETCD_MAX_IN_FLIGHT in flight at once; the lease ids."""
        request = self.rpc.LeaseGrantRequest(TTL=TTL)
        in_flight: collections.deque[Any] = collections.deque()
        ids = []

        def collect() -> None:
            answer = in_flight.popleft().result()
            if answer.error or not answer.ID:
                raise RuntimeError(f"etcd refused a lease: {answer.error!r}")
            ids.append(answer.ID)

        for _ in range(count):
            if len(in_flight) >= ETCD_MAX_IN_FLIGHT:
                collect()
            in_flight.append(self.stub.LeaseGrant.future(request, CALL_TIMEOUT, metadata=self.client.metadata))
        while in_flight:
            collect()
        return ids

    def keep_alive_stream(self, lease_ids: Sequence[int]) -> int:
        """One LeaseKeepAlive stream carrying a request per lease, all sent at once; the responses read."""
        requests = [self.rpc.LeaseKeepAliveRequest(ID=lease_id) for lease_id in lease_ids]
        answered = 0
        for answer in self.stub.LeaseKeepAlive(iter(requests), CALL_TIMEOUT, metadata=self.client.metadata):
            if answer.TTL <= 0:
                raise RuntimeError(f"etcd did not keep lease {answer.ID} alive")
            answered += 1
        if answered != len(requests):
            raise RuntimeError(f"etcd answered {answered} of {len(requests)} keep-alives")
        return answered


class KeepAliveStream:
    """One long-lived LeaseKeepAlive stream, one request in flight at a time."""

    def __init__(self, etcd: EtcdSide) -> None:
        self._rpc = etcd.rpc
        self._requests: queue.SimpleQueue[Any] = queue.SimpleQueue()
        # no deadline: the stream lives for the whole measurement; close() ends it
        self._answers: Iterator[Any] = etcd.stub.LeaseKeepAlive(iter(self._requests.get, None),
                                                                metadata=etcd.client.metadata)

    def refresh(self, lease_id: int) -> int:
        self._requests.put(self._rpc.LeaseKeepAliveRequest(ID=lease_id))
        answer = next(self._answers)
        if answer.TTL <= 0:
            raise RuntimeError(f"etcd did not keep lease {lease_id} alive")
        return answer.TTL  # type: ignore[no-any-return]

    def close(self) -> None:
        self._requests.put(None)  # ends the request iterator
        self._answers.cancel()  # type: ignore[attr-defined]


# -- measuring -------------------------------------------------------------------------------


def throughput(op: Callable[[], int], seconds: float) -> float:
    """Items per second: ``op()`` (which returns the items it did) called until ``seconds`` have passed."""
    done = 0
    start = now = time.perf_counter()
    deadline = start + seconds
    while now < deadline:
        done += op()
        now = time.perf_counter()
    return done / (now - start)


@dataclass
class Contender:
    """One way of doing the metric's work; ``best`` is its best round."""

    label: str
    op: Callable[[], int]
    best: float = 0.0


@dataclass
class Row:
    metric: str
    unit: str
    what: str                       # what exactly was compared
    landlord: Contender
    etcd: list[Contender] = field(default_factory=list)
    references: list[Contender] = field(default_factory=list)  # landlord-side yardsticks, printed only

    @property
    def baseline(self) -> Contender | None:
        """The best etcd way: the figure landlord is held against."""
        measured = [c for c in self.etcd if c.best > 0]
        return max(measured, key=lambda c: c.best) if measured else None

    @property
    def ratio(self) -> float | None:
        base = self.baseline
        return self.landlord.best / base.best if base is not None else None

    def as_json(self) -> dict[str, Any]:
        base, ratio = self.baseline, self.ratio
        return {"metric": self.metric, "landlord": self.landlord.best,
                "baseline": base.best if base is not None else None, "unit": self.unit,
                "ratio": ratio, "goal": GOAL, "met": ratio >= GOAL if ratio is not None else None}


class Bench:
    """Both sides set up, and the rows measured side by side."""

    def __init__(self, proxy: Any, etcd: EtcdSide | None, args: argparse.Namespace) -> None:
        self.proxy = proxy
        self.etcd = etcd
        self.etcd_reason = "" if etcd is not None else "not started"
        self.args = args
        self.ceiling = math.nan  # raw Pyro5 no-op calls per second, one at a time

    def _etcd_failed(self, exc: BaseException) -> None:
        self.etcd_reason = f"failed while measuring ({type(exc).__name__}: {str(exc)[:200]})"
        print(f"etcd: {self.etcd_reason}; going on with landlord figures only", file=sys.stderr)
        etcd, self.etcd = self.etcd, None
        if etcd is not None:
            etcd.close()

    def measure(self, row: Row) -> Row:
        """Warm up, then alternate the contenders round by round, keeping each one's best round."""
        progress(f"measuring {row.metric}...")
        per_round = self.args.seconds / self.args.rounds
        for contender in [row.landlord] + row.references + row.etcd:
            if not self._run(row, contender, WARM_UP_SECONDS, keep=False):
                return row
        for _ in range(self.args.rounds):
            for contender in [row.landlord] + row.references + row.etcd:
                if not self._run(row, contender, per_round):
                    return row
        return row

    def _run(self, row: Row, contender: Contender, seconds: float, *, keep: bool = True) -> bool:
        """One round (kept if it is the contender's best, unless a warm-up); False if etcd failed
        (its contenders are then dropped from the row, and the landlord measured alone)."""
        if not any(contender is c for c in row.etcd):
            rate = throughput(contender.op, seconds)
            contender.best = max(contender.best, rate) if keep else contender.best
            return True
        try:
            rate = throughput(contender.op, seconds)
            contender.best = max(contender.best, rate) if keep else contender.best
            return True
        except Exception as exc:  # etcd trouble never stops the landlord's figures
            row.etcd.clear()
            self._etcd_failed(exc)
            self._measure_landlord_only(row)
            return False

    def _measure_landlord_only(self, row: Row) -> None:
        per_round = self.args.seconds / self.args.rounds
        for _ in range(self.args.rounds):
            for contender in [row.landlord] + row.references:
                contender.best = max(contender.best, throughput(contender.op, per_round))

    def _guarded(self, setup: Callable[[], Any]) -> Any:
        """Run an etcd set-up step; None (and etcd dropped) if it fails."""
        if self.etcd is None:
            return None
        try:
            return setup()
        except Exception as exc:
            self._etcd_failed(exc)
            return None

    def rows(self) -> list[Row]:
        n = self.args.batch
        proxy = self.proxy
        rows = []

        # 1. grant, sequential
        def landlord_grant() -> int:
            if not isinstance(proxy.grant(TTL), LandlordLease):
                raise RuntimeError("the landlord granted no lease")
            return 1

        row = Row("grant, sequential", "grants/s",
                  "proxy.grant(60) -> LandlordLease, one call at a time | client.lease(60), one LeaseGrant RPC "
                  "at a time",
                  Contender("landlord grant()", landlord_grant))
        if self.etcd is not None:
            etcd = self.etcd
            row.etcd.append(Contender("etcd client.lease()", lambda: (etcd.grant(), 1)[1]))
        rows.append(self.measure(row))

        # 2. grant, batched
        def landlord_grant_many() -> int:
            leases = proxy.grant_many(n, TTL)
            if len(leases) != n:
                raise RuntimeError(f"the landlord granted {len(leases)} of {n} leases")
            return n

        row = Row(f"grant, batched (N={n:,})", "grants/s",
                  f"proxy.grant_many({n}, 60), one call | {n} LeaseGrant RPCs pipelined on one gRPC channel, "
                  f"{min(n, ETCD_MAX_IN_FLIGHT)} in flight at once (etcd has no batch grant)",
                  Contender("landlord grant_many()", landlord_grant_many))
        if self.etcd is not None:
            etcd = self.etcd
            row.etcd.append(Contender("etcd pipelined LeaseGrant", lambda: len(etcd.grant_pipelined(n))))
        rows.append(self.measure(row))

        # 3. keep-alive, sequential
        lease: LandlordLease = proxy.grant(TTL)

        def landlord_renew() -> int:
            if not lease.renew(TTL) > 0:
                raise RuntimeError("the landlord granted no time")
            return 1

        row = Row("keep-alive, sequential", "renewals/s",
                  "lease.renew(60) on one lease, one call at a time | the better of the client's "
                  "Lease.refresh() (a LeaseKeepAlive stream per refresh) and one long-lived stream with one "
                  "request in flight",
                  Contender("landlord lease.renew()", landlord_renew))
        # the ceiling of rows 1 and 3 on the landlord's side: a raw Pyro5 call that does nothing
        ping = Contender("raw Pyro5 no-op call", lambda: (proxy.ping(), 1)[1])
        row.references.append(ping)
        stream: KeepAliveStream | None = None
        etcd_lease = self._guarded(lambda: self.etcd.grant())  # type: ignore[union-attr]
        if etcd_lease is not None:
            def etcd_refresh() -> int:
                answers = etcd_lease.refresh()
                if not answers or answers[0].TTL <= 0:
                    raise RuntimeError("etcd did not keep the lease alive")
                return 1

            row.etcd.append(Contender("etcd Lease.refresh()", etcd_refresh))
            stream = self._guarded(lambda: KeepAliveStream(self.etcd))  # type: ignore[arg-type]
            if stream is not None:
                live_stream = stream
                row.etcd.append(Contender("etcd long-lived stream",
                                          lambda: 1 if live_stream.refresh(etcd_lease.id) > 0 else 0))
        try:
            rows.append(self.measure(row))
        finally:
            if stream is not None:
                stream.close()
        self.ceiling = ping.best

        # 4. keep-alive, batched
        lease_map = LeaseMap(dict.fromkeys(proxy.grant_many(n, TTL), float(TTL)))

        def landlord_renew_all() -> int:
            lease_map.renew_all()  # raises LeaseMapError if any renewal failed
            return n

        row = Row(f"keep-alive, batched (N={n:,})", "renewals/s",
                  f"LeaseMap.renew_all() of {n} leases (one renew_all call) | one LeaseKeepAlive stream with "
                  f"{n} requests (one per lease) sent at once, {n} responses read",
                  Contender("landlord renew_all()", landlord_renew_all))
        etcd_ids = self._guarded(lambda: self.etcd.grant_pipelined(n))  # type: ignore[union-attr]
        if etcd_ids is not None and self.etcd is not None:
            etcd = self.etcd
            row.etcd.append(Contender("etcd keep-alive stream", lambda: etcd.keep_alive_stream(etcd_ids)))
        rows.append(self.measure(row))
        return rows


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- output ------------------------------------------------------------------------------


def machine(etcd_status: str, client: str, etcd_storage: str) -> dict[str, Any]:
    """What the figures were measured on."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "cpu_count": os.cpu_count(),
        "landlord": landlord.__version__,
        "Pyro5": Pyro5.__version__,
        "serpent": serpent.__version__,
        "etcd": etcd_status,
        "etcd_client": client,
        "etcd_data_dir": etcd_storage,
    }


def figure(value: float | None) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:,.0f}"


def format_ceiling(rows: list[Row], ceiling: float) -> list[str]:
    """How the one-at-a-time rows compare with a raw Pyro5 call that does nothing."""
    sequential = [row for row in rows if row.metric.endswith("sequential")]
    if not sequential or math.isnan(ceiling):
        return []
    shares = ", ".join(f"{row.metric.split(',')[0]} at {100 * row.landlord.best / ceiling:.0f}%" for row in sequential)
    lines = [f"raw Pyro5 no-op call, one at a time: {figure(ceiling)} calls/s, the ceiling of every one-at-a-time "
             f"landlord call here ({shares} of it)"]
    needed = [f"{row.metric.split(',')[0]} {figure(GOAL * base.best)}/s" for row in sequential
              if (base := row.baseline) is not None]
    if needed:
        lines.append(f"  {GOAL:g}x etcd one at a time would need: " + ", ".join(needed))
    return lines


def format_results(rows: list[Row], info: dict[str, Any], args: argparse.Namespace, wall: float,
                   ceiling: float = math.nan) -> str:
    lines = [
        f"landlord (Pyro5, another process) against etcd (gRPC, another process), one Python client thread, "
        f"TTL {TTL} s on both sides; best of {args.rounds} round(s) of {args.seconds / args.rounds:.2g} s each, "
        "the sides taking turns",
    ]
    if info["etcd"].startswith("unavailable"):
        lines.append(f"etcd: {info['etcd']}: landlord figures only")
    elif "failed while measuring" in info["etcd"]:
        lines.append(f"etcd: {info['etcd']}")
    lines += [
        "",
        f"{'metric':<30} {'landlord':>12} {'etcd':>12} {'unit':<11} {'ratio':>7} {'goal':>6}  result",
    ]
    for row in rows:
        base, ratio = row.baseline, row.ratio
        result = "n/a (no etcd)" if ratio is None else ("PASS" if ratio >= GOAL else "MISS")
        lines.append(f"{row.metric:<30} {figure(row.landlord.best):>12} "
                     f"{figure(base.best if base else None):>12} {row.unit:<11} "
                     f"{'n/a' if ratio is None else f'{ratio:.2f}x':>7} {f'>={GOAL:g}x':>6}  {result}")
    lines += [""] + format_ceiling(rows, ceiling)
    lines += ["", "what was compared (landlord | etcd):"]
    for row in rows:
        lines.append(f"  {row.metric}: {row.what}")
        if len(row.etcd) > 1:
            lines.append("    etcd ways: " + "; ".join(f"{c.label} {figure(c.best)} {row.unit}" for c in row.etcd)
                         + f" (baseline: {row.baseline.label if row.baseline else 'n/a'})")
    lines += [
        "",
        f"etcd:      {info['etcd']}",
        f"client:    {info['etcd_client']}",
        f"data dir:  {info['etcd_data_dir']}",
        f"machine:   {info['platform']} ({info['processor']}), {info['cpu_count']} CPUs",
        f"python:    {info['python']}; landlord {info['landlord']}, Pyro5 {info['Pyro5']}, "
        f"serpent {info['serpent']}",
        f"wall time: {wall:.1f} s",
    ]
    return "\n".join(lines)


def write_json(path: str, rows: list[Row], info: dict[str, Any]) -> None:
    """Write {"name", "rows", "machine"} to ``path``."""
    with open(path, "w", encoding="utf-8") as out:
        json.dump({"name": NAME, "rows": [row.as_json() for row in rows], "machine": info}, out, indent=2)
        out.write("\n")


# -- running -------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> tuple[list[Row], dict[str, Any], float]:
    """Start both servers, measure, stop both (also on errors and Ctrl-C)."""
    etcd: EtcdSide | None = None
    reason = started = ""
    client = client_description()
    storage = "n/a"
    server = ServerProcess(__file__, "--serve", "landlord", new_session=True)
    try:
        uri = server.uri()
        if args.no_etcd:
            reason = "skipped (--no-etcd)"
        else:
            progress("setting up etcd...")
            try:
                etcd = EtcdSide(args.etcd, args.etcd_dir)
                started = f"{etcd.server.version} ({etcd.server.binary}, single member on 127.0.0.1)"
                storage = f"{etcd.server.workdir} ({etcd.server.filesystem}), removed afterwards"
                if etcd.server.filesystem == "tmpfs":
                    storage += "; tmpfs: etcd's fsyncs cost nothing (its best case)"
            except EtcdUnavailable as exc:
                reason = str(exc)
            except Exception as exc:  # anything else etcd-side: still report the landlord
                reason = f"{type(exc).__name__}: {exc}"
            if etcd is None:
                print(f"etcd: unavailable ({reason}); measuring the landlord alone", file=sys.stderr)
        landlord.set_call_timeout(CALL_TIMEOUT)
        with Pyro5.api.Proxy(uri) as proxy:
            proxy._pyroTimeout = CALL_TIMEOUT
            bench = Bench(proxy, etcd, args)
            try:
                rows = bench.rows()
            finally:
                etcd, bench.etcd = bench.etcd, None
                if etcd is None and not reason:
                    reason = bench.etcd_reason
        if etcd is not None:
            status = started
        elif started:  # it started, then failed: the rows measured before that keep their etcd figures
            status = f"{started}; {reason}: no etcd figures from then on"
        else:
            status = f"unavailable ({reason})"
        return rows, machine(status, client, storage), bench.ceiling
    finally:
        if etcd is not None:
            etcd.close()
        server.stop()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Lease grants and keep-alives per second from one Python client thread: a landlord "
                    "(Pyro5, in another process) against etcd (started here on loopback, through the "
                    "etcd-sdk-python gRPC client), measured side by side in the same run. Goal: landlord "
                    f">= {GOAL:g}x etcd. Without etcd or its client it says why and measures the landlord alone.")
    parser.add_argument("--seconds", type=positive_seconds, default=DEFAULT_SECONDS,
                        help="time per metric and side, split into --rounds rounds (default: %(default)s)")
    parser.add_argument("--rounds", type=positive_int, default=DEFAULT_ROUNDS,
                        help="rounds per metric and side, the sides taking turns; the best is kept "
                             "(default: %(default)s)")
    parser.add_argument("--batch", type=positive_int, default=DEFAULT_BATCH,
                        help="N, the leases per batch in the batched rows (default: %(default)s)")
    parser.add_argument("--etcd", metavar="BINARY", help="the etcd binary (default: etcd on PATH)")
    parser.add_argument("--etcd-dir", metavar="DIR", default=default_etcd_parent(),
                        help="where etcd's temporary data directory goes (default: %(default)s, tmpfs: etcd's "
                             "best case; a directory on a disk makes every grant wait for an fsync)")
    parser.add_argument("--no-etcd", action="store_true", help="measure the landlord alone")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON to PATH")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the landlord process
    args = parser.parse_args(argv)
    if args.batch > MAX_BATCH:
        parser.error(f"--batch is at most {MAX_BATCH}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve:
        return serve()
    signal.signal(signal.SIGTERM, stop_on_sigterm)  # so that run() stops etcd and the landlord on SIGTERM too
    started = time.monotonic()
    try:
        rows, info, ceiling = run(args)
    except KeyboardInterrupt:
        print("interrupted; etcd and the landlord were stopped", file=sys.stderr)
        return 130
    wall = time.monotonic() - started
    print(format_results(rows, info, args, wall, ceiling))
    if args.json:
        write_json(args.json, rows, info)
    return 0


if __name__ == "__main__":
    sys.exit(main())
