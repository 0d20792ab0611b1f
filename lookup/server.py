"""Serving a lookup service in its own process: :func:`serve` and :class:`ServedLookupService`.

``python -m lookup serve`` runs :func:`serve`: a :class:`ServedLookupService`
on a Pyro5 daemon at ``host:port``, registered under the fixed object id
:data:`~lookup.locate.LOOKUP_OBJECT_ID`, answering until SIGTERM or SIGINT.

Many clients
------------
A lookup service is something every service and client of a network keeps a
connection to, so it must take thousands of connections. Pyro5's default
``"thread"`` server gives each *connection* a worker thread for the
connection's whole life, from a pool of 80: the 81st client is turned away.
The lookup service is served with the ``"multiplex"`` server instead: one
thread waits on every socket with the OS's selector (epoll, kqueue) and runs
each request as it arrives. That fits the lookup service, whose remote methods
are all short and never block on the network — event delivery runs on the
service's own mailer threads, expiry on its reaper — and it scales with
connections at the cost of one file descriptor each, no thread each.

Measured on loopback (a server process; 1,000 idle clients held by 10
threads of another process; then a further client), multiplex vs. ``"thread"``
with a 2,048-worker pool: a further client's lookup p50 0.34 vs 0.33 ms,
renewal 0.9 vs 1.2 ms — the same; server threads 11 vs 1,013 and RSS
+1.5 MB vs +33 MB; SIGTERM to exit with the 1,000 still connected 0.17 s vs
101 s (Pyro5's pool joins each busy worker with a 0.1 s timeout). Four client
processes hammering lookups: 4,750 vs 3,640 calls/s (one thread, no GIL
hand-offs).

The price of one thread: a request is handled from start to end before the
next, so a client that stalls in the middle of a message — or connects and
never sends its handshake — stalls everyone, for at most :data:`COMM_TIMEOUT`
(measured: 4.9 s behind a silent raw connection; the thread server: none).
Idle connections are never timed out (the selector only reads a socket that
has data), and :data:`MAX_MESSAGE_SIZE` bounds what one message may make the
server read or allocate. The lookup service trusts its network (anyone who
reaches it may register), so this is robustness against a stuck client, not a
defence against a hostile one.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from typing import Any, Callable, Iterator, Sequence

import Pyro5.api
import Pyro5.server
from Pyro5 import config as pyro_config

from landlord import LeaseDurationPolicy, RenewResults, UnknownLeaseError

from .entry import Entry, entry_class_name, entry_fields
from .locate import DEFAULT_HOST, DEFAULT_PORT, LOOKUP_OBJECT_ID
from .service import DEFAULT_LEASE, DEFAULT_MAX_LEASE, LookupService

try:  # not on Windows
    import resource
except ImportError:  # pragma: no cover
    resource = None  # type: ignore[assignment]

__all__ = [
    "serve", "ServedLookupService", "raise_open_files_limit", "entry_text",
    "SERVER_TYPE", "MAX_MESSAGE_SIZE", "COMM_TIMEOUT", "THREADPOOL_SIZE", "MAX_TABLE_ROWS", "REAPERS",
]

log = logging.getLogger(__name__)

SERVER_TYPE = "multiplex"  # one selector thread for every connection; see the module docstring
THREADPOOL_SIZE = 2048     # workers if the "thread" server type is asked for: one per connection

# Requests to a lookup service are small (an item with its attributes is a few
# KiB); Pyro5's default of 1 GiB would let one client make the server read and
# allocate a gigabyte — while, with one thread, nobody else is served. 16 MiB
# keeps room for big items and for answers of tens of thousands of items. It
# also caps the answers: a lookup_all whose answer exceeds it fails (ask for
# fewer matches).
MAX_MESSAGE_SIZE = 16 * 1024 * 1024

# Seconds one socket read, or one whole response's sending, may take. With the
# multiplex server a client that stops halfway through a message (or connects
# and never sends its handshake) holds up every other client until this passes;
# shorter would also cut off big answers to slow links (16 MiB needs ~27 Mbit/s
# at 5 s). It does not disconnect idle clients: their sockets are only read
# when they have data. (The thread server would time idle connections out, so
# it runs without one.)
COMM_TIMEOUT = 5.0

WANTED_OPEN_FILES = 65536  # soft limit asked for when the hard limit is unlimited
MAX_TABLE_ROWS = 10_000    # rows of one registrations_table answer
REAPERS = ("sleeper", "polling", "lazy")


def entry_text(entry: Entry) -> str:
    """An entry as an operator reads it: ``Name(name='quoter')``, its ``None`` fields left out."""
    short = entry_class_name(entry).rsplit(".", 1)[-1]
    fields = ", ".join(f"{name}={value!r}" for name, value in entry_fields(entry).items() if value is not None)
    return f"{short}({fields})"


class ServedLookupService(LookupService):
    """The lookup service as :func:`serve` runs it: a :class:`LookupService`
    that logs its leases' lives and tells an operator what it holds.

    Renewals are logged at DEBUG on ``lookup.server`` (they are frequent),
    expiries and cancellations at INFO. Never a cookie: holding one is the
    capability to renew or cancel. Constructed as :class:`LookupService`.
    """

    @Pyro5.server.expose
    def registrations_table(self, max_rows: int = MAX_TABLE_ROWS) -> tuple[list[tuple[Any, ...]], int]:
        """The live registrations for an operator: at most ``max_rows`` rows
        ``(service_id, types, attributes, seconds_left)`` sorted by service id,
        attributes as text (see :func:`entry_text`), and how many there are in all.

        Raises:
            TypeError: ``max_rows`` is not an int.
            ValueError: ``max_rows`` is negative or above ``MAX_TABLE_ROWS``.
        """
        if isinstance(max_rows, bool) or not isinstance(max_rows, int):
            raise TypeError(f"max_rows must be an int, got {type(max_rows).__name__}")
        if not 0 <= max_rows <= MAX_TABLE_ROWS:
            raise ValueError(f"max_rows must be 0 to {MAX_TABLE_ROWS}, got {max_rows}")
        self.manager.reap()  # what has run out goes now, as for a lookup
        live = sorted(self.registrations(), key=lambda pair: pair[0].service_id or "")
        rows = [(item.service_id, list(item.types), [entry_text(entry) for entry in item.attributes],
                 round(max(0.0, seconds_left), 3))
                for item, seconds_left in live[:max_rows]]
        return rows, len(live)

    # -- logging the leases' lives ---------------------------------------------------

    @Pyro5.server.expose
    def renew(self, cookie: str, duration: float) -> float:
        """As :meth:`landlord.Landlord.renew`; logged at DEBUG with what the lease is of."""
        what = self._describe(cookie) if log.isEnabledFor(logging.DEBUG) else ""
        granted = super().renew(cookie, duration)
        log.debug("renewed %s for %.1f s", what, granted)
        return granted

    @Pyro5.server.expose
    def renew_all(self, cookies: Sequence[str], durations: Sequence[float]) -> RenewResults:
        """As :meth:`landlord.Landlord.renew_all`; logged at DEBUG."""
        results = super().renew_all(cookies, durations)
        if log.isEnabledFor(logging.DEBUG):
            renewed = sum(1 for granted in results.granted if granted != -1)
            log.debug("renewed %d lease(s) in one call, %d refused", renewed, len(results.granted) - renewed)
        return results

    def _describe(self, cookie: str) -> str:
        try:
            return _describe_record(self.get_resource(cookie))
        except (UnknownLeaseError, TypeError, ValueError):
            return "an unknown lease"

    def _lease_ended(self, record: Any) -> None:
        # on_expire and on_cancel of the base class: a lease still running when
        # it ends was cancelled (by its holder, or by the service), else it expired
        if not getattr(record, "replaced", False):  # a replaced registration lives on
            leased = getattr(record, "leased", None)
            expired = leased is not None and leased.expiration <= self.clock.monotonic()
            log.info("%s %s", _describe_record(record), "expired" if expired else "cancelled")
        super()._lease_ended(record)


def _describe_record(record: Any) -> str:
    item = getattr(record, "item", None)
    if item is not None:
        return f"registration {item.service_id}"
    event_id = getattr(record, "event_id", None)
    return f"event registration {event_id}" if event_id is not None else repr(record)


def raise_open_files_limit(wanted: int = WANTED_OPEN_FILES) -> int:
    """Raise this process's soft limit of open files towards its hard limit
    (each client connection is a socket); return the soft limit now in force.

    Args:
        wanted: the soft limit to ask for when the hard limit is unlimited
            (or higher than this).

    Raises:
        Nothing: where the limit cannot be read or raised, the current one stays.
    """
    if resource is None:  # pragma: no cover
        return -1
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(hard, max(wanted, soft))
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as exc:  # e.g. macOS caps below an "unlimited" hard limit
            log.warning("cannot raise the open-files limit from %d to %d: %s", soft, target, exc)
    return soft


@contextlib.contextmanager
def _pyro_settings(**settings: Any) -> Iterator[None]:
    """Set Pyro5 config items for the block, restoring the old values after it.

    Pyro5 has one configuration per process, read when a daemon is made
    (SERVERTYPE) or on every message (MAX_MESSAGE_SIZE, COMMTIMEOUT): they
    must stay set while the daemon serves.
    """
    old = {name: getattr(pyro_config, name) for name in settings}
    for name, value in settings.items():
        setattr(pyro_config, name, value)
    try:
        yield
    finally:
        for name, value in old.items():
            setattr(pyro_config, name, value)


def serve(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, max_lease: float = DEFAULT_MAX_LEASE,
          default_lease: float = DEFAULT_LEASE, reaper: str = "sleeper", server_type: str = SERVER_TYPE,
          threadpool_size: int = THREADPOOL_SIZE, stop: threading.Event | None = None,
          ready: Callable[[str], None] | None = None) -> None:
    """Serve a lookup service at ``host:port`` until SIGTERM or SIGINT (or ``stop`` is set).

    Returns once the daemon is closed, the service's reaper and event
    delivery stopped, and every client connection closed.

    Args:
        host: the address to listen on.
        port: the port (0: any free port; see ``ready``).
        max_lease: the longest lease granted, in seconds.
        default_lease: the lease granted for ``ANY``, in seconds.
        reaper: ``"sleeper"``, ``"polling"`` or ``"lazy"`` (see :class:`~landlord.LeaseManager`).
        server_type: Pyro5's ``"multiplex"`` (the default; see the module
            docstring) or ``"thread"`` (with ``threadpool_size`` workers, one per connection).
        threadpool_size: the most connections the ``"thread"`` server takes.
        stop: set it to stop serving (from another thread); signals set it too
            when called from the main thread.
        ready: called with the service's URI once it answers.

    Raises:
        ValueError: bad lease terms, an unknown reaper or server type.
        OSError: the address is in use or cannot be bound.
    """
    if server_type not in ("multiplex", "thread"):
        raise ValueError(f"server_type must be 'multiplex' or 'thread', got {server_type!r}")
    if reaper not in REAPERS:
        raise ValueError(f"reaper must be one of {', '.join(REAPERS)}, got {reaper!r}")
    policy = LeaseDurationPolicy(maximum=max_lease, default=default_lease)  # raises on bad terms
    stop = stop if stop is not None else threading.Event()
    open_files = raise_open_files_limit()
    if 0 <= open_files < 1100:
        log.warning("only %d files may be open: fewer than 1,000 clients can connect", open_files)

    with contextlib.ExitStack() as stack:
        comm_timeout = COMM_TIMEOUT if server_type == "multiplex" else 0.0
        stack.enter_context(_pyro_settings(MAX_MESSAGE_SIZE=MAX_MESSAGE_SIZE, COMMTIMEOUT=comm_timeout,
                                           THREADPOOL_SIZE=threadpool_size))
        with _pyro_settings(SERVERTYPE=server_type):  # read once, by the daemon's constructor
            daemon = Pyro5.api.Daemon(host=host, port=port)
        stack.callback(daemon.close)
        service = ServedLookupService(policy=policy, reaper=reaper)
        stack.callback(service.close)
        uri = str(daemon.register(service, objectId=LOOKUP_OBJECT_ID))
        stack.enter_context(_stopped_by_signals(stop))

        loop = threading.Thread(target=daemon.requestLoop, name="lookup-requests", daemon=True)
        loop.start()
        log.info("lookup service at %s (%s server, leases up to %g s, %g s for ANY, %s reaper)",
                 uri, server_type, max_lease, default_lease, reaper)
        if ready is not None:
            ready(uri)
        # the main thread waits, so that signals reach it and the daemon is shut down from outside its loop
        while not stop.wait(1.0):
            if not loop.is_alive():
                log.error("the request loop stopped by itself")
                break

        log.info("stopping the lookup service")
        started = time.monotonic()
        connections = _client_sockets(daemon)
        daemon.shutdown()
        loop.join(timeout=10)
        for connection in connections:  # the multiplex server leaves its clients' sockets open
            with contextlib.suppress(Exception):
                connection.close()
        log.info("lookup service stopped (%d connection(s) closed in %.2f s)",
                 len(connections), time.monotonic() - started)


def _client_sockets(daemon: Pyro5.api.Daemon) -> list[Any]:
    """The multiplex server's client connections (the thread server's workers own theirs)."""
    transport = daemon.transportServer
    if transport is None:
        return []
    return [sock for sock in daemon.sockets if sock is not transport.sock]


@contextlib.contextmanager
def _stopped_by_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM and SIGINT set ``stop`` for the block (only where handlers can be set: the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        stop.set()  # only that: the main thread logs and shuts down once its wait returns

    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
