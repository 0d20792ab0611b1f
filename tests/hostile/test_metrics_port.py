"""Hostile clients on the metrics port: the canary renews on, and the health checks and scrapes are answered.

A server in its own process (a landlord served by ``serve_landlord``, ``python -m lookup serve``) with
``--metrics-port``; a canary holder renews a 2 s lease on it every 0.1 s while, for longer than the
HTTP deadline, on its metrics port:

- a slow loris: 200 connections from ten client addresses (127.0.0.10 to .19), each sending a request
  one byte every half second, and connecting again whenever the server closes one;
- a flood: another process asking for ``/metrics`` (gzipped) and ``/healthz`` as fast as four threads can,
  from 127.0.0.3;

and a scraper from 127.0.0.1 asks for ``/readyz`` and ``/metrics`` throughout. Checked: the canary never
missed a renewal (the worst under :data:`WORST_RENEWAL`), every one of the scraper's requests was answered
200 within :data:`WORST_SCRAPE`, the flood was answered, and the server cut the slow loris off.
"""

from __future__ import annotations

import collections
import contextlib
import socket
import struct
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import Pyro5.api
import pytest
from attacks import Canary
from conftest import PROCESSES, ChildProcess, free_port

import landlord
from landlord.metrics import HttpLimits
from lookup import ServiceItem, locate

pytestmark = pytest.mark.slow

ATTACK = HttpLimits().deadline + 2.0  # seconds: long enough for trickling connections to be cut off
LORIS_SOURCES = [f"127.0.0.{n}" for n in range(10, 20)]
LORIS_PER_SOURCE = 20  # more than one client may hold, and 200 in all: more than the server holds
TRICKLE = 0.5          # seconds between two bytes of a loris' connection
FLOOD_SOURCE = "127.0.0.3"
WORST_RENEWAL = 0.25   # seconds: the most one of the canary's renewals may take during the attack
WORST_SCRAPE = 2.0     # seconds: the most one of the scraper's requests may take
SERVICE_URI = "PYRO:quotes@127.0.0.1:9"

FLOOD = """if True:
    import http.client, socket, struct, sys, threading, time
    port, source, seconds = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    answered, failed = [], []

    def flood():
        ends = time.monotonic() + seconds
        while time.monotonic() < ends:
            for path, headers in (("/metrics", {"Accept-Encoding": "gzip"}), ("/healthz", {})):
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
                try:
                    connection.connect()
                    # closed with a reset: thousands of TIME_WAITs on 127.0.0.3 would keep later tests'
                    # servers from listening on those ports on every interface
                    connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    connection.request("GET", path, headers=headers)
                    response = connection.getresponse()
                    response.read()
                    answered.append(response.status)
                except Exception:
                    failed.append(1)
                connection.close()

    threads = [threading.Thread(target=flood) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("flooded", answered.count(200), len(answered), len(failed), flush=True)
"""


@dataclass
class Target:
    """A server in a child process, its metrics port, and a lease on it for the canary."""

    process: ChildProcess
    metrics_port: int
    lease: landlord.Lease


@pytest.fixture(params=["landlord", "lookup"])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    metrics_port = free_port()
    if request.param == "landlord":
        process, uri = landlord.testing.start_server(str(PROCESSES / "metrics_landlord.py"),
                                                     "--metrics-port", str(metrics_port))
    else:
        process, uri = landlord.testing.start_server("-m", "lookup", "serve", "--port", str(free_port()),
                                                     "--no-announce", "--metrics-port", str(metrics_port))
    with process:
        if request.param == "landlord":
            with Pyro5.api.Proxy(uri) as rooms:
                lease: landlord.Lease = rooms.rent("canary", 2.0)
        else:
            with locate(port=int(uri.rsplit(":", 1)[1])) as lookup:
                lease = lookup.register(ServiceItem(None, SERVICE_URI, ["quotes.Canary"], []), 2.0).lease
        yield Target(process, metrics_port, lease)
        landlord.transport.proxies.discard(uri)


class SlowLoris:
    """:data:`LORIS_PER_SOURCE` connections from each of :data:`LORIS_SOURCES`, each sending a request a
    byte every :data:`TRICKLE` seconds, replaced when the server closes them, on a thread until :meth:`stop`."""

    REQUEST = b"GET /metrics HTTP/1.1\r\nX-Slow: " + b"y" * 4000

    def __init__(self, port: int) -> None:
        self.port = port
        self.closed_by_server = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="slow loris", daemon=True)

    def __enter__(self) -> SlowLoris:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        trickles: dict[socket.socket, tuple[str, int]] = {}  # each connection: its source, the bytes it sent
        try:
            while not self._stop.is_set():
                held = collections.Counter(source for source, _ in trickles.values())
                for source in LORIS_SOURCES:  # every source at its count again
                    for _ in range(LORIS_PER_SOURCE - held[source]):
                        with contextlib.suppress(OSError):
                            trickles[socket.create_connection(("127.0.0.1", self.port), timeout=5,
                                                              source_address=(source, 0))] = (source, 0)
                for sock, (source, sent) in list(trickles.items()):
                    try:
                        sock.send(self.REQUEST[sent:sent + 1])  # never the end of the head
                        trickles[sock] = (source, sent + 1)
                    except OSError:  # the server closed it: cut off or pushed out
                        self.closed_by_server += 1
                        del trickles[sock]
                        _reset(sock)
                self._stop.wait(TRICKLE)  # the attack's pace, not a wait for the server
        finally:
            for sock in trickles:
                _reset(sock)


def _reset(sock: socket.socket) -> None:
    """Close ``sock`` with a reset: no TIME_WAIT left on its port, which would keep a later test's server
    from listening there on every interface (free_port checks 127.0.0.1 only, not 127.0.0.10 to .19)."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def timed_get(url: str) -> tuple[int, float]:
    asked = time.monotonic()
    with urllib.request.urlopen(url, timeout=10) as answer:
        answer.read()
        return answer.status, time.monotonic() - asked


def test_a_slow_loris_and_a_flood_on_the_metrics_port_hold_up_neither_renewals_nor_scrapes(target: Target) -> None:
    root = f"http://127.0.0.1:{target.metrics_port}"
    canary = Canary(target.lease).start()
    try:
        canary.renew_more(2)
        with SlowLoris(target.metrics_port) as loris, \
                ChildProcess("-c", FLOOD, str(target.metrics_port), FLOOD_SOURCE, str(ATTACK), name="flood") as flood:
            scrapes: list[tuple[int, float]] = []
            ends = time.monotonic() + ATTACK
            while time.monotonic() < ends:
                scrapes += [timed_get(root + "/readyz"), timed_get(root + "/metrics")]
                threading.Event().wait(0.2)  # the scraper's pace
            flooded = flood.wait_for(r"^flooded (?P<ok>\d+) (?P<answered>\d+) (?P<failed>\d+)$", timeout=30)
        canary.renew_more(3)  # and it serves on
    finally:
        canary.stop()
    canary.check(WORST_RENEWAL)
    worst = max(took for _, took in scrapes)
    print(f"scraper: {len(scrapes)} requests, worst {worst * 1000:.0f} ms; flood: {flooded['ok']} of "
          f"{flooded['answered']} answered 200, {flooded['failed']} failed; loris: {loris.closed_by_server} "
          f"connections closed by the server")
    assert {status for status, _ in scrapes} == {200}
    assert worst < WORST_SCRAPE
    assert int(flooded["ok"]) > 100 and int(flooded["failed"]) == 0
    assert loris.closed_by_server > len(LORIS_SOURCES) * LORIS_PER_SOURCE  # cut off and pushed out, not held
    assert target.process.alive
