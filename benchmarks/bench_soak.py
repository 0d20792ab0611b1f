"""Soak: several client processes each keep 10,000 leases alive for minutes, and none may be lost (issue 6).

One landlord process (``--child landlord``: :func:`landlord.serve_landlord`
serving a :class:`SoakLandlord`, which counts per client the leases held,
renewals, calls, and leases expired, every one of them spurious) and
``--clients`` client processes (``--child client``), each renting ``--leases``
leases of ``--term`` seconds and keeping them with its own
``LeaseRenewalManager``. This process, the conductor, opens the window once
every client is ready, runs ``--minutes`` (a progress line every
``--every`` seconds) and stops the clients, which then renew every lease once
more (a failure is a lost lease), cancel them all and report.

The table: leases lost (goal 0), the landlord's share of a core and its RSS
growth after the first progress line (a leak would show); per client below
it. The method in full: ``benchmarks/README.md``; the options and JSON:
``harness.py``. Exit status 1 if any lease was lost (or not every lease was
held). ``tests/faults/test_soak.py`` runs a short one.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import harness
import Pyro5
import Pyro5.api
from harness import SERVER_START_TIMEOUT, UNBUFFERED, Report, Row, ServerProcess, positive_seconds, progress

import landlord
from landlord import (
    FOREVER,
    Landlord,
    LandlordLease,
    LeaseDurationPolicy,
    LeaseMap,
    LeaseMapError,
    LeaseRenewalEvent,
    LeaseRenewalManager,
    RenewResults,
    serve_landlord,
)
from landlord.grantor.landlord import MAX_BATCH
from landlord.testing import ChildProcess, WaitFailed

DEFAULT_TERM = 10.0

RENT_CHUNK = MAX_BATCH  # leases rented per call (SoakLandlord.rent takes at most MAX_BATCH): an answer of ~0.4 MB
CALL_TIMEOUT = 60.0   # renting 2,000 leases, or renewing 1,000 in one call, on a busy machine
MAX_CLIENTS = 48
CLIENT_READY_TIMEOUT = 120.0  # start, rent and hand over 10,000 leases on a loaded machine
CLIENT_RESULT_TIMEOUT = 120.0  # close the manager, renew and cancel every lease


# -- the landlord process ----------------------------------------------------------------


@dataclass
class ClientCounts:
    """What the landlord has seen of one client's leases."""

    live: int = 0        # leases rented and neither expired nor cancelled
    renewals: int = 0    # renewals granted
    calls: int = 0       # renew and renew_all calls
    expired: int = 0     # leases that ran out: spurious, the client meant to keep them
    cancelled: int = 0   # leases cancelled by the client at the end


class SoakLandlord(Landlord):
    """A landlord that grants any term asked and keeps :class:`ClientCounts` per client.

    The resource of every lease is the number of the client that rented it,
    so expiries and cancellations are counted per client, and each
    ``renew_all`` call (one client's manager renews only that client's leases)
    is attributed by its first lease.
    """

    def __init__(self) -> None:
        super().__init__(policy=LeaseDurationPolicy(maximum=FOREVER, default=DEFAULT_TERM),
                         on_expire=self._expired, on_cancel=self._cancelled)
        self._lock = threading.Lock()  # Pyro5 serves calls on many threads; the reaper runs on its own
        self._counts: dict[int, ClientCounts] = {}

    def _client(self, client: int) -> ClientCounts:
        counts = self._counts.get(client)
        if counts is None:
            counts = self._counts[client] = ClientCounts()
        return counts

    def _expired(self, client: int) -> None:
        with self._lock:
            counts = self._client(client)
            counts.live -= 1
            counts.expired += 1

    def _cancelled(self, client: int) -> None:
        with self._lock:
            counts = self._client(client)
            counts.live -= 1
            counts.cancelled += 1

    def _count_call(self, cookie: str, granted: int) -> None:
        try:
            client = self.manager.get(cookie).resource
        except Exception:  # that lease is gone, so the call cannot be attributed; it renewed nothing of it
            return
        with self._lock:
            counts = self._client(client)
            counts.calls += 1
            counts.renewals += granted

    @Pyro5.api.expose
    def rent(self, client: int, count: int, duration: float) -> list[LandlordLease]:
        """Lease ``count`` resources (all named ``client``) for ``duration`` seconds each."""
        if not 0 < count <= MAX_BATCH:
            raise ValueError(f"rent 1 to {MAX_BATCH} leases at a time, got {count}")
        leases = [self.new_lease(client, duration) for _ in range(count)]
        with self._lock:
            self._client(client).live += count
        return leases

    @Pyro5.api.expose
    def renew(self, cookie: str, duration: float) -> float:
        # overriding drops Pyro5's exposure: hence the decorator again
        granted = super().renew(cookie, duration)
        self._count_call(cookie, 1)
        return granted

    @Pyro5.api.expose
    def renew_all(self, cookies: Sequence[str], durations: Sequence[float]) -> RenewResults:
        results = super().renew_all(cookies, durations)
        if cookies:
            self._count_call(cookies[0], len(results.granted) - len(results.denied))
        return results

    @Pyro5.api.expose
    def stats(self) -> dict[str, Any]:
        """This process's CPU seconds, RSS bytes and threads, the leases held, and the counts per client."""
        with self._lock:
            clients = {str(client): asdict(counts) for client, counts in self._counts.items()}
        # allocated blocks count live Python objects and buffers: unlike RSS, they
        # do not keep the high-water mark of the allocator's arenas
        return {"cpu": time.process_time(), "wall": time.monotonic(), "rss": rss_bytes(),
                "blocks": sys.getallocatedblocks(), "threads": threading.active_count(), "leases": len(self),
                "clients": clients}


def rss_bytes() -> int:
    """This process's resident set size now (Linux), else its peak."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB elsewhere


def serve(args: argparse.Namespace) -> int:
    """The landlord process: a SoakLandlord served by serve_landlord (its default guarded server, as in production)
    on loopback until SIGTERM or Ctrl-C."""
    soak = SoakLandlord()
    try:
        serve_landlord(soak, "127.0.0.1", 0, ready=lambda uri: print(f"URI: {uri}", flush=True))
    finally:
        soak.close()
    return 0


# -- a client process ------------------------------------------------------------------------


def run_client(uri: str, index: int, leases: int, term: float) -> int:
    """A client process: rent, keep alive until told to stop, check, cancel, report.

    It talks to the conductor on its standard streams: it prints ``READY
    <json>`` once its leases are in its manager, waits for a ``go`` line (the
    soak window opens), then for a ``stop`` line (or the end of its input),
    and prints ``RESULT <json>``.
    """
    signal.signal(signal.SIGTERM, harness.stop_on_sigterm)
    landlord.set_call_timeout(CALL_TIMEOUT)
    lost: list[LeaseRenewalEvent] = []
    lost_lock = threading.Lock()

    def on_lost(event: LeaseRenewalEvent) -> None:
        with lost_lock:
            lost.append(event)

    started = time.monotonic()
    held: list[LandlordLease] = []
    with Pyro5.api.Proxy(uri) as proxy:
        proxy._pyroTimeout = CALL_TIMEOUT
        while len(held) < leases:
            held.extend(proxy.rent(index, min(RENT_CHUNK, leases - len(held)), term))
    rent_seconds = time.monotonic() - started

    manager = LeaseRenewalManager(name=f"soak-client-{index}")
    try:
        for lease in held:
            manager.renew_for(lease, FOREVER, on_lost, renew_duration=term)
        print("READY " + json.dumps({"rent_seconds": rent_seconds, "setup_seconds": time.monotonic() - started}),
              flush=True)
        if sys.stdin.readline().strip() != "go":
            return 1  # the conductor went away before the soak began
        cpu, wall = time.process_time(), time.monotonic()
        sys.stdin.readline()  # "stop", or the end of input if the conductor died
        window_cpu, window_seconds = time.process_time() - cpu, time.monotonic() - wall
        with lost_lock:
            lost_in_window = len(lost)
            examples = [f"{event.lease!r}: {event.exception!r}" for event in lost[:3]]
        managed = len(manager)
    finally:
        manager.close()

    # Every lease must still be live: one more renewal of all of them says so
    # (the manager is closed, and a lease has at least a term minus a round left).
    check = LeaseMap({lease: term for lease in held})
    failed_check = 0
    try:
        check.renew_all()
    except LeaseMapError as exc:
        failed_check = len(exc.failures)
        examples += [f"{lease!r}: {error!r}" for lease, error in list(exc.failures.items())[:3]]
    cleanup = LeaseMap({lease: term for lease in check})
    try:
        cleanup.cancel_all()
    except LeaseMapError:
        pass  # those are already counted as failed above
    # the work is done: the conductor's SIGTERM, racing this process's exit, just ends it quietly
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    print("RESULT " + json.dumps({
        "index": index, "leases": len(held), "managed_at_end": managed, "lost": lost_in_window,
        "failed_final_renewal": failed_check, "cpu_seconds": window_cpu, "window_seconds": window_seconds,
        "rent_seconds": rent_seconds, "examples": examples[:5]}), flush=True)
    return 0


def client(args: argparse.Namespace) -> int:
    """The client role: :func:`run_client` on the conductor's arguments."""
    try:
        return run_client(args.uri, args.index, args.leases, args.term)
    except KeyboardInterrupt:
        return 130


class ClientProcess:
    """One client process (a landlord.testing.ChildProcess); its ``READY`` and ``RESULT`` lines, read as they come."""

    def __init__(self, uri: str, index: int, leases: int, term: float) -> None:
        self.index = index
        # stderr is inherited, so a failing client shows its traceback here
        self.child = ChildProcess(os.path.abspath(__file__), "--child", "client", "--uri", uri, "--index", str(index),
                                  "--leases", str(leases), "--term", repr(term), name=f"client {index}",
                                  stderr="inherit", stdin=True, env=UNBUFFERED, new_session=True)

    def expect(self, word: str, timeout: float) -> dict[str, Any]:
        """The JSON after the next line starting with ``word``.

        Raises:
            RuntimeError: the client exited, or printed no such line in ``timeout`` seconds.
        """
        try:
            return json.loads(self.child.expect(word + " ", timeout))  # type: ignore[no-any-return]
        except WaitFailed as exc:
            raise RuntimeError(str(exc)) from None

    def tell(self, word: str) -> None:
        """Send one line to the client."""
        self.child.send(word)

    def stop(self) -> None:
        harness.stop_child(self.child)


# -- the conductor ---------------------------------------------------------------------------


@dataclass
class Soak:
    """Everything one soak found."""

    config: dict[str, Any]
    clients: list[dict[str, Any]]
    server: dict[str, Any]
    samples: list[dict[str, Any]] = field(default_factory=list)
    lost: int = 0
    ok: bool = False


def conduct(args: argparse.Namespace) -> Soak:
    """Start the landlord and the clients, soak, collect, stop everything."""
    server = ServerProcess(__file__, "landlord", "landlord", new_session=True)
    clients: list[ClientProcess] = []
    try:
        uri = server.uri()
        with Pyro5.api.Proxy(uri) as proxy:
            proxy._pyroTimeout = CALL_TIMEOUT
            progress(f"{args.clients} clients renting {args.leases:,} leases of {args.term:g} s each...")
            clients = [ClientProcess(uri, i, args.leases, args.term) for i in range(args.clients)]
            ready = [client.expect("READY", CLIENT_READY_TIMEOUT + SERVER_START_TIMEOUT) for client in clients]
            start = proxy.stats()
            for client in clients:
                client.tell("go")
            progress(f"soaking for {args.minutes:g} min...")
            samples = [sample(start, start)]
            end_at = time.monotonic() + 60.0 * args.minutes
            while (left := end_at - time.monotonic()) > 0:
                time.sleep(min(args.every, left))
                samples.append(sample(start, proxy.stats()))
                progress(describe(samples[-1]))
            end = proxy.stats()
            for client in clients:
                client.tell("stop")
            results = [client.expect("RESULT", CLIENT_RESULT_TIMEOUT) for client in clients]
            after = proxy.stats()
    finally:
        for client in clients:
            client.stop()
        server.stop()
    return summarise(args, ready, results, start, end, after, samples)


def sample(start: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    """One progress point: seconds into the window, the landlord's CPU share since the start, RSS, leases."""
    seconds = now["wall"] - start["wall"]
    renewals = sum(c["renewals"] for c in now["clients"].values()) - sum(
        c["renewals"] for c in start["clients"].values())
    return {"seconds": seconds, "server_cpu_percent": 100 * (now["cpu"] - start["cpu"]) / seconds if seconds else 0.0,
            "rss": now["rss"], "blocks": now["blocks"], "threads": now["threads"], "leases": now["leases"],
            "renewals": renewals,
            "expired": sum(c["expired"] for c in now["clients"].values())}


def describe(point: dict[str, Any]) -> str:
    return (f"  {point['seconds']:6.0f} s: {point['leases']:,} leases, {point['renewals']:,} renewals, "
            f"{point['expired']} expired; landlord {point['server_cpu_percent']:.1f}% of a core, "
            f"RSS {point['rss'] / 2**20:.1f} MiB, {point['blocks']:,} blocks, {point['threads']} threads")


def summarise(args: argparse.Namespace, ready: list[dict[str, Any]], results: list[dict[str, Any]],
              start: dict[str, Any], end: dict[str, Any], after: dict[str, Any],
              samples: list[dict[str, Any]]) -> Soak:
    rows = []
    for setup, result in zip(ready, results):
        key = str(result["index"])
        first, last, final = (stats["clients"].get(key, asdict(ClientCounts())) for stats in (start, end, after))
        renewals = last["renewals"] - first["renewals"]
        rows.append({
            "client": result["index"], "leases": result["leases"], "live_at_end": last["live"],
            "renewals": renewals, "renewals_per_lease": renewals / result["leases"] if result["leases"] else 0.0,
            "renew_calls": last["calls"] - first["calls"], "lost": result["lost"],
            "failed_final_renewal": result["failed_final_renewal"], "expired_at_landlord": final["expired"],
            "left_at_landlord": final["live"], "cpu_seconds": result["cpu_seconds"],
            "cpu_percent": 100 * result["cpu_seconds"] / result["window_seconds"],
            "setup_seconds": setup["setup_seconds"], "examples": result["examples"]})
    seconds = end["wall"] - start["wall"]
    # RSS grows in the first rounds (connections' threads, buffers, allocator
    # arenas): growth after the first progress point is what a leak would show.
    warm = samples[1] if len(samples) > 2 else samples[0]
    server = {"seconds": seconds, "cpu_seconds": end["cpu"] - start["cpu"],
              "cpu_percent": 100 * (end["cpu"] - start["cpu"]) / seconds,
              "rss_start": start["rss"], "rss_warm": warm["rss"], "warm_at_seconds": warm["seconds"],
              "rss_end": end["rss"], "rss_growth": end["rss"] - start["rss"],
              "rss_growth_after_warm": end["rss"] - warm["rss"],
              "blocks_start": start["blocks"], "blocks_warm": warm["blocks"], "blocks_end": end["blocks"],
              "threads_start": start["threads"], "threads_end": end["threads"],
              "leases_start": start["leases"], "leases_end": end["leases"], "leases_after_cancel": after["leases"]}
    # The three counts see the same lost lease from three sides (the holder's
    # listener, its final check, the landlord's expiry): the largest is a floor.
    lost = sum(max(row["lost"], row["failed_final_renewal"], row["expired_at_landlord"]) for row in rows)
    held_all = end["leases"] == args.clients * args.leases
    config = {"clients": args.clients, "leases": args.leases, "minutes": args.minutes, "term": args.term,
              "renewal_manager": "defaults", "server": "serve_landlord (guarded)"}
    return Soak(config, rows, server, samples, lost, ok=lost == 0 and held_all and len(rows) == args.clients)


def report_of(report: Soak) -> Report:
    """The harness's report: the verdict and the landlord's figures as rows, the rest as notes."""
    c, s = report.config, report.server
    rows = [Row("leases lost", report.lost, None, "leases", limit=0),
            Row(f"landlord CPU, {c['clients']} x {c['leases']:,} leases kept alive", s["cpu_percent"], None,
                "% of one core"),
            Row(f"landlord RSS growth after {s['warm_at_seconds']:.0f} s", s["rss_growth_after_warm"] / 2**20, None,
                "MiB")]
    notes = [f"{'client':>6} {'leases':>8} {'live':>8} {'renewals':>10} {'/lease':>7} {'calls':>6} "
             f"{'lost':>5} {'final':>6} {'expired':>8} {'CPU s':>7} {'CPU %':>6}"]
    notes += [f"{row['client']:>6} {row['leases']:>8,} {row['live_at_end']:>8,} {row['renewals']:>10,} "
              f"{row['renewals_per_lease']:>7.1f} {row['renew_calls']:>6,} {row['lost']:>5} "
              f"{row['failed_final_renewal']:>6} {row['expired_at_landlord']:>8} {row['cpu_seconds']:>7.2f} "
              f"{row['cpu_percent']:>6.2f}" for row in report.clients]
    notes += [
        "(live: held at the landlord at the end of the window; lost: the listener's calls; final: leases that "
        "failed the last renew_all; expired: leases the landlord saw run out, all spurious)",
        "",
        f"landlord: {s['cpu_percent']:.2f}% of one core ({s['cpu_seconds']:.1f} CPU s in {s['seconds']:.0f} s); "
        f"RSS {s['rss_start'] / 2**20:.1f} -> {s['rss_warm'] / 2**20:.1f} (at {s['warm_at_seconds']:.0f} s) -> "
        f"{s['rss_end'] / 2**20:.1f} MiB; allocated blocks {s['blocks_start']:,} -> {s['blocks_warm']:,} -> "
        f"{s['blocks_end']:,}; threads {s['threads_start']} -> {s['threads_end']}; leases {s['leases_start']:,} -> "
        f"{s['leases_end']:,}, {s['leases_after_cancel']:,} after the clients cancelled",
        f"leases lost: {report.lost}" + ("" if report.ok else "  <-- SHOULD BE 0 (and every lease held)"),
    ]
    notes += [f"  client {row['client']}: {example}" for row in report.clients for example in row["examples"]]
    return Report(rows, notes=notes, extra=asdict(report),
                  problems=[] if report.ok else [f"{report.lost} leases lost, or not every lease held"],
                  title=f"soak: {c['clients']} client processes x {c['leases']:,} leases of {c['term']:g} s, kept "
                        f"alive by a LeaseRenewalManager each (defaults) for {c['minutes']:g} min "
                        f"({s['seconds']:.0f} s measured), one landlord process")


BENCH = harness.Benchmark(
    "soak", "Soak: several client processes each keep many leases on one landlord process alive with a "
    "LeaseRenewalManager for minutes; reports renewals, losses (goal: 0), CPU and the landlord's RSS. Exits 1 if "
    "any lease was lost.", rounds=None, modules=(landlord, Pyro5),
    quick={"clients": 2, "leases": 2000, "minutes": 0.25, "term": 3.0, "every": 5.0})
BENCH.option("--clients", harness.at_most(MAX_CLIENTS), 4, f"client processes, at most {MAX_CLIENTS}")
BENCH.option("--leases", harness.positive_int, 10_000, "leases each client keeps alive")
BENCH.option("--minutes", positive_seconds, 3.0, "length of the soak, in minutes; fractions allowed")
BENCH.option("--term", positive_seconds, DEFAULT_TERM, "seconds each lease is granted and renewed for")
BENCH.option("--every", positive_seconds, 30.0, "seconds between progress lines")
BENCH.parser.add_argument("--uri", help=argparse.SUPPRESS)  # a client process: the landlord's
BENCH.parser.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)  # and its number


if __name__ == "__main__":
    raise SystemExit(BENCH.main(lambda args: report_of(conduct(args)), children={"landlord": serve, "client": client}))
