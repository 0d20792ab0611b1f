"""Landlord against etcd: granting leases and keeping them alive from one Python client thread (issue 5, item 3).

A landlord in another process (``--child landlord``, a Pyro5 daemon on
loopback, exposing ``grant``, ``grant_many`` and a no-op ``ping``) against
Debian's etcd (``etcd-server``), started here as a single member on free
loopback ports with a temporary data directory (tmpfs by default, etcd's best
case; ``--etcd-dir`` for a disk), through ``etcd-sdk-python`` (``pyetcd``;
``benchmarks/setup_etcd.sh`` installs both). Four rows, items per second:
grant one at a time (against ``LeaseGrant``), grant in a batch of N (against
N pipelined ``LeaseGrant`` RPCs: etcd has no batch grant), keep-alive one at a
time (against the faster of ``Lease.refresh()`` and one long-lived
``LeaseKeepAlive`` stream), keep-alive of N (``LeaseMap.renew_all`` against one
stream carrying N requests; issue 26's goal >= 30x etcd, the only goal here).
Every answer is checked. The no-op ``ping``, timed beside row 3, is the
ceiling of any one-at-a-time call.

Without etcd or its client it says why, measures the landlord alone and exits
0. The method in full: ``benchmarks/README.md``; the options, rounds, table
and JSON: ``harness.py``. Not a test: pytest collects only ``tests/``.
"""

from __future__ import annotations

import argparse
import collections
import importlib.metadata
import math
import queue
import shutil
import statistics
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import harness
import Pyro5
import Pyro5.api
import serpent
from harness import Report, Row, ServerProcess, ServerUnavailable, compare, positive_seconds, progress, rate

import landlord
from landlord import FOREVER, Landlord, LandlordLease, LeaseDurationPolicy, LeaseMap
from landlord.grantor.landlord import MAX_BATCH

KEEP_ALIVE_BATCHED_GOAL = 30.0  # LeaseMap.renew_all of N >= 30x etcd's stream of N keep-alives (issue 26)
TTL = 60                   # seconds asked for on both sides (etcd TTLs are whole seconds)
WARM_UP_SECONDS = 0.2

CALL_TIMEOUT = 60.0          # any one call, either side
# etcd answers "too many requests" once its applied index falls 5,000 behind the
# committed one, which thousands of pipelined grants do; this many is safe.
ETCD_MAX_IN_FLIGHT = 1000
CLIENT_PACKAGE = "etcd-sdk-python"
CLIENT_REQUIREMENT = "etcd-sdk-python>=0.0.7 protobuf>=5.27.2"


# -- the landlord process ----------------------------------------------------------------


class BenchLandlord(harness.GrantsOnRequest, Landlord):
    """A landlord that grants on request: one lease, or many in one call."""

    def __init__(self) -> None:
        super().__init__(policy=LeaseDurationPolicy(maximum=FOREVER, default=float(TTL)))

    @Pyro5.api.expose
    def ping(self) -> None:
        """Nothing: a raw Pyro5 call, the ceiling of any one-at-a-time call to this daemon."""


def serve(args: argparse.Namespace) -> int:
    """The landlord process: serve a BenchLandlord on loopback until SIGTERM or Ctrl-C."""
    return harness.serve_forever(BenchLandlord())


# -- the etcd side ---------------------------------------------------------------------------


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
        ServerUnavailable: no client, no etcd binary, or etcd would not start.
    """

    def __init__(self, binary: str | None, parent_dir: str | None) -> None:
        try:
            from pyetcd import etcdrpc
        except Exception as exc:  # ImportError, or protobuf refusing the generated code
            raise ServerUnavailable(f"no Python etcd client ({type(exc).__name__}: {exc}); "
                                    f"pip install {CLIENT_REQUIREMENT}, or run benchmarks/setup_etcd.sh") from None
        path = shutil.which(binary or "etcd")
        if path is None:
            raise ServerUnavailable(f"no etcd binary at {binary}" if binary else
                                    "no etcd binary on PATH; apt-get install etcd-server, "
                                    "or run benchmarks/setup_etcd.sh")
        self.rpc = etcdrpc
        self.server = harness.EtcdProcess(path, parent_dir)
        try:
            self.client = harness.etcd_client(self.server.port, CALL_TIMEOUT)
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
        return keep_alive_stream(self.stub, self.rpc, self.client.metadata, lease_ids)


def keep_alive_stream(stub: Any, rpc: Any, metadata: Any, lease_ids: Sequence[int]) -> int:
    """One LeaseKeepAlive stream (through etcd's lease ``stub``) carrying a request per lease, all sent at
    once; every answer read and checked; how many came (bench_replicated.py uses it too)."""
    requests = [rpc.LeaseKeepAliveRequest(ID=lease_id) for lease_id in lease_ids]
    answered = 0
    for answer in stub.LeaseKeepAlive(iter(requests), CALL_TIMEOUT, metadata=metadata):
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


Side = Callable[[float], float]  # one way of doing a row's work: its items per second over so many seconds


class Bench:
    """Both sides set up, and the rows measured side by side; if etcd fails, it is dropped and the landlord goes
    on alone."""

    def __init__(self, proxy: Any, etcd: EtcdSide | None, args: argparse.Namespace) -> None:
        self.proxy = proxy
        self.etcd = etcd
        self.etcd_reason = "" if etcd is not None else "not started"
        self.args = args
        self.notes = ["what was compared (landlord | etcd):"]
        self.ceiling = math.nan  # raw Pyro5 no-op calls per second, one at a time

    def _etcd_failed(self, exc: BaseException) -> None:
        self.etcd_reason = f"failed while measuring ({type(exc).__name__}: {str(exc)[:200]})"
        progress(f"etcd: {self.etcd_reason}; going on with landlord figures only")
        etcd, self.etcd = self.etcd, None
        if etcd is not None:
            etcd.close()

    def _guarded(self, setup: Callable[[], Any]) -> Any:
        """Run an etcd set-up step; None (and etcd dropped) if it fails."""
        if self.etcd is None:
            return None
        try:
            return setup()
        except Exception as exc:
            self._etcd_failed(exc)
            return None

    def etcd_side(self, op: Callable[[], object], items: int = 1) -> Side:
        """An etcd way of doing a row's work: NaN once etcd is gone; failing drops etcd."""
        def side(seconds: float) -> float:
            if self.etcd is None:
                return math.nan
            try:
                return rate(op, seconds, items)
            except Exception as exc:  # etcd trouble never stops the landlord's figures
                self._etcd_failed(exc)
                return math.nan
        return side

    def measure(self, metric: str, unit: str, what: str, landlord_side: Side, etcd: Mapping[str, Side],
                references: Mapping[str, Side] | None = None,
                goal: float | None = None) -> tuple[Row, dict[str, list[float]]]:
        """Warm up, then every side in turns, round by round; the row, against etcd's faster way, and the rounds."""
        progress(f"measuring {metric}...")
        sides = {"landlord": landlord_side, **(references or {}), **etcd}
        for side in sides.values():
            side(WARM_UP_SECONDS)
        per_round = self.args.seconds / self.args.rounds
        figures = harness.alternate({name: lambda side=side: side(per_round) for name, side in sides.items()},
                                    self.args.rounds)
        medians = {name: statistics.median_low(xs) for name in etcd if (xs := [x for x in figures[name] if x > 0])}
        best = max(medians, key=medians.__getitem__, default=None)
        self.notes.append(f"  {metric}: {what}")
        if len(etcd) > 1:
            self.notes.append("    etcd ways (median): " + "; ".join(
                f"{name} {harness.figure(medians.get(name))} {unit}" for name in etcd) + f" (baseline: {best})")
        return compare(metric, unit, figures["landlord"], figures[best] if best else None, goal=goal), figures

    def rows(self) -> list[Row]:
        n = self.args.batch
        proxy = self.proxy
        rows = []

        # 1. grant, sequential
        def landlord_grant() -> None:
            if not isinstance(proxy.grant(TTL), LandlordLease):
                raise RuntimeError("the landlord granted no lease")

        etcd_grant = self.etcd_side(lambda: self.etcd.grant())  # type: ignore[union-attr]
        rows.append(self.measure("grant, sequential", "grants/s",
                                 "proxy.grant(60) -> LandlordLease, one call at a time | client.lease(60), one "
                                 "LeaseGrant RPC at a time",
                                 lambda s: rate(landlord_grant, s), {"etcd client.lease()": etcd_grant})[0])

        # 2. grant, batched
        def landlord_grant_many() -> None:
            if len(leases := proxy.grant_many(n, TTL)) != n:
                raise RuntimeError(f"the landlord granted {len(leases)} of {n} leases")

        etcd_pipelined = self.etcd_side(lambda: self.etcd.grant_pipelined(n), n)  # type: ignore[union-attr]
        rows.append(self.measure(f"grant, batched (N={n:,})", "grants/s",
                                 f"proxy.grant_many({n}, 60), one call | {n} LeaseGrant RPCs pipelined on one gRPC "
                                 f"channel, {min(n, ETCD_MAX_IN_FLIGHT)} in flight at once (etcd has no batch grant)",
                                 lambda s: rate(landlord_grant_many, s, n),
                                 {"etcd pipelined LeaseGrant": etcd_pipelined})[0])

        # 3. keep-alive, sequential
        lease: LandlordLease = proxy.grant(TTL)

        def landlord_renew() -> None:
            if not lease.renew(TTL) > 0:
                raise RuntimeError("the landlord granted no time")

        etcd_ways: dict[str, Side] = {}
        stream: KeepAliveStream | None = None
        etcd_lease = self._guarded(lambda: self.etcd.grant())  # type: ignore[union-attr]
        if etcd_lease is not None:
            def etcd_refresh() -> None:
                answers = etcd_lease.refresh()
                if not answers or answers[0].TTL <= 0:
                    raise RuntimeError("etcd did not keep the lease alive")

            etcd_ways["etcd Lease.refresh()"] = self.etcd_side(etcd_refresh)
            stream = self._guarded(lambda: KeepAliveStream(self.etcd))  # type: ignore[arg-type]
            if stream is not None:
                live_stream = stream
                etcd_ways["etcd long-lived stream"] = self.etcd_side(lambda: live_stream.refresh(etcd_lease.id))
        try:
            # the ceiling of rows 1 and 3 on the landlord's side: a raw Pyro5 call that does nothing
            row, figures = self.measure(
                "keep-alive, sequential", "renewals/s",
                "lease.renew(60) on one lease, one call at a time | the better of the client's Lease.refresh() (a "
                "LeaseKeepAlive stream per refresh) and one long-lived stream with one request in flight",
                lambda s: rate(landlord_renew, s), etcd_ways, {"ping": lambda s: rate(proxy.ping, s)})
            rows.append(row)
            self.ceiling = statistics.median_low(figures["ping"])
        finally:
            if stream is not None:
                stream.close()

        # 4. keep-alive, batched
        lease_map = LeaseMap(dict.fromkeys(proxy.grant_many(n, TTL), float(TTL)))
        etcd_ids = self._guarded(lambda: self.etcd.grant_pipelined(n))  # type: ignore[union-attr]
        etcd_stream = {"etcd keep-alive stream": self.etcd_side(
            lambda: self.etcd.keep_alive_stream(etcd_ids), n)} if etcd_ids is not None else {}  # type: ignore
        rows.append(self.measure(f"keep-alive, batched (N={n:,})", "renewals/s",
                                 f"LeaseMap.renew_all() of {n} leases (one renew_all call) | one LeaseKeepAlive "
                                 f"stream with {n} requests (one per lease) sent at once, {n} responses read",
                                 # renew_all raises LeaseMapError if any renewal failed
                                 lambda s: rate(lease_map.renew_all, s, n), etcd_stream,
                                 goal=KEEP_ALIVE_BATCHED_GOAL)[0])
        return rows


# -- running -------------------------------------------------------------------------------


def ceiling_lines(rows: list[Row], ceiling: float) -> list[str]:
    """How the one-at-a-time rows compare with a raw Pyro5 call that does nothing."""
    sequential = [row for row in rows if row.metric.endswith("sequential") and row.landlord]
    if not sequential or math.isnan(ceiling):
        return []
    shares = ", ".join(f"{row.metric.split(',')[0]} at {100 * (row.landlord or 0) / ceiling:.0f}%"
                       for row in sequential)
    return [f"raw Pyro5 no-op call, one at a time: {ceiling:,.0f} calls/s, the ceiling of every one-at-a-time "
            f"landlord call here ({shares} of it)"]


def start_etcd(args: argparse.Namespace) -> tuple[EtcdSide | None, str, str, str]:
    """etcd and its client, if they can be had: the side, how it started, why not, and where its data is."""
    if args.no_etcd:
        return None, "", "skipped (--no-etcd)", "n/a"
    progress("setting up etcd...")
    try:
        etcd = EtcdSide(args.etcd, args.etcd_dir)
    except ServerUnavailable as exc:
        reason = str(exc)
    except Exception as exc:  # anything else etcd-side: still report the landlord
        reason = f"{type(exc).__name__}: {exc}"
    else:
        storage = f"{etcd.server.workdir} ({etcd.server.filesystem}), removed afterwards"
        if etcd.server.filesystem == "tmpfs":
            storage += "; tmpfs: etcd's fsyncs cost nothing (its best case)"
        return etcd, f"{etcd.server.version} ({etcd.server.binary}, single member on 127.0.0.1)", "", storage
    progress(f"etcd: unavailable ({reason}); measuring the landlord alone")
    return None, "", reason, "n/a"


def measure(args: argparse.Namespace) -> Report:
    """Start both servers, measure, stop both (also on errors and Ctrl-C)."""
    etcd: EtcdSide | None = None
    server = ServerProcess(__file__, "landlord", "landlord", new_session=True)
    try:
        uri = server.uri()
        etcd, started, reason, storage = start_etcd(args)
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
    finally:
        if etcd is not None:
            etcd.close()
        server.stop()
    if etcd is not None:
        status = started
    elif started:  # it started, then failed: the rows measured before that keep their etcd figures
        status = f"{started}; {reason}: no etcd figures from then on"
    else:
        status = f"unavailable ({reason})"
    title = [f"landlord (Pyro5, another process) against etcd (gRPC, another process), one Python client thread, "
             f"TTL {TTL} s on both sides; {args.rounds} round(s) of {args.seconds / args.rounds:.2g} s each, "
             "the sides taking turns"]
    if etcd is None:
        title.append(f"etcd: {status}" + (": landlord figures only" if status.startswith("unavailable") else ""))
    return Report(rows, title="\n".join(title), notes=ceiling_lines(rows, bench.ceiling) + [""] + bench.notes,
                  machine={"etcd": status, "etcd_client": client_description(), "etcd_data_dir": storage})


BENCH = harness.Benchmark(
    "etcd", "Lease grants and keep-alives per second from one Python client thread: a landlord (Pyro5, in "
    "another process) against etcd (started here on loopback, through the etcd-sdk-python gRPC client), "
    f"measured side by side in the same run. Goal: the batched keep-alive >= {KEEP_ALIVE_BATCHED_GOAL:g}x etcd. "
    "Without etcd or its client it says why and measures the landlord alone.", modules=(landlord, Pyro5, serpent),
    quick={"seconds": 0.6, "rounds": 2, "batch": 100})
BENCH.option("--seconds", positive_seconds, 3.0, "time per metric and side, split into --rounds rounds")
BENCH.option("--batch", harness.at_most(MAX_BATCH), 1000, "N, the leases per batch in the batched rows")
BENCH.parser.add_argument("--etcd", metavar="BINARY", help="the etcd binary (default: etcd on PATH)")
BENCH.parser.add_argument("--etcd-dir", metavar="DIR", default=harness.default_data_parent(),
                          help="where etcd's temporary data directory goes (default: %(default)s, tmpfs: etcd's "
                               "best case; a directory on a disk makes every grant wait for an fsync)")
BENCH.parser.add_argument("--no-etcd", action="store_true", help="measure the landlord alone")


if __name__ == "__main__":
    raise SystemExit(BENCH.main(measure, children={"landlord": serve}))
