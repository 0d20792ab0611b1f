"""Serving a landlord (or any Pyro5 object) in its own process: :func:`serve_landlord`, :func:`serve_object`.

:func:`serve_landlord` puts a :class:`~landlord.Landlord` on a Pyro5 daemon at
``host:port`` under a stable object id and answers until SIGTERM or SIGINT
(or until told to stop), taking thousands of connections, optionally over
two-way TLS (:mod:`landlord.tls`). The lookup service (``python -m lookup
serve``) is served by the same code, :func:`serve_object`.

Many clients
------------
Every holder of a lease keeps a connection to its landlord (one per thread
that renews), and a lookup service is something every service and client of
a network keeps a connection to, so a server must take thousands of
connections. Pyro5's default ``"thread"`` server gives each *connection* a
worker thread for the connection's whole life, from a pool of 80: the 81st
client is turned away, and a renewal from it fails. These servers use the
``"multiplex"`` server instead: one thread waits on every socket with the
OS's selector (epoll, kqueue) and runs each request as it arrives. That fits a
landlord and the lookup service, whose remote methods are all short and never
block on the network — the lookup service's event delivery runs on its own
mailer threads, expiry on the reaper — and it scales with connections at the
cost of one file descriptor each, no thread each. A landlord subclass whose
remote methods block (on a database, on another server) holds up everyone
while they do: serve it with ``server_type="thread"``.

Measured with the lookup service on loopback (a server process; 1,000 idle
clients held by 10 threads of another process; then a further client),
multiplex vs. ``"thread"`` with a 2,048-worker pool: a further client's lookup
p50 0.34 vs 0.33 ms, renewal 0.9 vs 1.2 ms — the same; server threads 11 vs
1,013 and RSS +1.5 MB vs +33 MB; SIGTERM to exit with the 1,000 still
connected 0.17 s vs 101 s (Pyro5's pool joins each busy worker with a 0.1 s
timeout). Four client processes hammering lookups: 4,750 vs 3,640 calls/s
(one thread, no GIL hand-offs).

The price of one thread: a request is handled from start to end before the
next, so a client that stalls in the middle of a message (or of its
handshake) stalls everyone, for at most :data:`COMM_TIMEOUT`. A client that
connects and sends nothing at all costs nothing: Pyro5 would read its
handshake at once and wait for it (4.9 s measured behind one silent raw
connection, so 1,000 of them would starve renewals for over an hour), but
:mod:`landlord.multiplex` makes the server greet a connection only once it has
sent data. Idle connections are never timed out (the selector only reads a
socket that has data), and :data:`MAX_MESSAGE_SIZE` bounds what one
message may make the server read or allocate. This is robustness against a
stuck client, not a defence against a hostile one: against strangers, use
TLS (only holders of a certificate from your CA get as far as a message).

Per process
-----------
Pyro5's settings (server type, message size, timeouts, SSL) are one per
process. :func:`serve_object` sets what it needs (see :func:`pyro_settings`)
while it serves and restores them after; with ``tls=``, TLS is in force for
the whole process while it serves (see :mod:`landlord.tls`).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from typing import Any, Callable, Iterator

import Pyro5.api
from Pyro5 import config as pyro_config

from .grantor import Landlord
from .multiplex import greet_when_spoken
from .tls import TLSConfig, tls_settings

try:  # not on Windows
    import resource
except ImportError:  # pragma: no cover
    resource = None  # type: ignore[assignment]

__all__ = [
    "serve_landlord", "serve_object", "landlord_object_id", "pyro_settings", "raise_open_files_limit",
    "SERVER_TYPE", "SERVER_TYPES", "MAX_MESSAGE_SIZE", "COMM_TIMEOUT", "THREADPOOL_SIZE", "WANTED_OPEN_FILES",
    "DEFAULT_HOST",
]

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
SERVER_TYPE = "multiplex"  # one selector thread for every connection; see the module docstring
SERVER_TYPES = ("multiplex", "thread")
THREADPOOL_SIZE = 2048     # workers if the "thread" server type is asked for: one per connection

# Requests to a landlord or a lookup service are small (a batch of 1,000
# renewals is ~60 KiB, an item with its attributes a few KiB); Pyro5's default
# of 1 GiB would let one client make the server read and allocate a gigabyte —
# while, with one thread, nobody else is served. 16 MiB keeps room for big
# batches and for answers of tens of thousands of items. It also caps the
# answers: a lookup_all whose answer exceeds it fails (ask for fewer matches).
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
_FEW_OPEN_FILES = 1100     # below this, warn: 1,000 clients cannot connect


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
def pyro_settings(**settings: Any) -> Iterator[None]:
    """Set Pyro5 config items for the block, restoring the old values after it.

    Pyro5 has one configuration per process, read when a daemon is made
    (SERVERTYPE, the SSL items) or on every message (MAX_MESSAGE_SIZE,
    COMMTIMEOUT): those must stay set while the daemon serves. Every thread
    of the process sees the change.

    Args:
        settings: config item names (``Pyro5.config`` attributes) and values.

    Raises:
        AttributeError: an unknown config item (nothing is changed).
    """
    for name in settings:
        if not hasattr(pyro_config, name):
            raise AttributeError(f"Pyro5 has no config item {name!r}")
    old = {name: getattr(pyro_config, name) for name in settings}
    for name, value in settings.items():
        setattr(pyro_config, name, value)
    try:
        yield
    finally:
        for name, value in old.items():
            setattr(pyro_config, name, value)


def landlord_object_id(landlord: Landlord) -> str:
    """The object id :func:`serve_landlord` registers ``landlord`` under: ``"landlord." + landlord_id``.

    A landlord made with a stable ``landlord_id`` therefore keeps its URI
    across restarts on the same host and port.

    Raises:
        TypeError: ``landlord`` is not a :class:`~landlord.Landlord`.
    """
    if not isinstance(landlord, Landlord):
        raise TypeError(f"expected a Landlord, got {type(landlord).__name__}")
    return "landlord." + landlord.landlord_id


def serve_landlord(landlord: Landlord, host: str = DEFAULT_HOST, port: int = 0, *,
                   object_id: str | None = None, tls: TLSConfig | None = None,
                   server_type: str = SERVER_TYPE, threadpool_size: int = THREADPOOL_SIZE,
                   stop: threading.Event | None = None, ready: Callable[[str], None] | None = None) -> None:
    """Serve ``landlord`` (a :class:`~landlord.Landlord` or subclass) at
    ``host:port`` until SIGTERM or SIGINT (or ``stop`` is set).

    Its leases carry the URI it is served under. Returns once the daemon is
    closed and every client connection closed; the landlord is unregistered
    but not closed (it is the caller's: it may be served again).

    Args:
        landlord: what to serve.
        host: the address to listen on.
        port: the port (0: any free port; see ``ready``).
        object_id: the Pyro5 object id (default :func:`landlord_object_id`:
            ``"landlord." + landlord.landlord_id``).
        tls: serve over two-way TLS: only clients with a certificate signed by
            its CA connect. In force for the whole process while serving (see
            :mod:`landlord.tls`); ``None`` leaves the process's SSL settings as they are.
        server_type: ``"multiplex"`` (the default; see the module docstring)
            or ``"thread"`` (with ``threadpool_size`` workers, one per connection).
        threadpool_size: the most connections the ``"thread"`` server takes.
        stop: set it to stop serving (from another thread); SIGTERM and SIGINT
            set it too when called from the main thread.
        ready: called with the landlord's URI once it answers.

    Raises:
        TypeError: ``landlord`` is not a Landlord, or ``tls`` not a TLSConfig.
        ValueError: an unknown server type, a bad pool size or object id.
        OSError: the address is in use or cannot be bound.
    """
    if not isinstance(landlord, Landlord):
        raise TypeError(f"expected a Landlord, got {type(landlord).__name__}")
    object_id = landlord_object_id(landlord) if object_id is None else object_id
    serve_object(landlord, host, port, object_id=object_id, tls=tls, server_type=server_type,
                 threadpool_size=threadpool_size, stop=stop, ready=ready, name="landlord")


def serve_object(obj: object, host: str = DEFAULT_HOST, port: int = 0, *, object_id: str,
                 tls: TLSConfig | None = None, server_type: str = SERVER_TYPE,
                 threadpool_size: int = THREADPOOL_SIZE, stop: threading.Event | None = None,
                 ready: Callable[[str], None] | None = None, name: str = "object", details: str = "") -> None:
    """Serve one Pyro5 object at ``host:port`` under ``object_id`` until
    SIGTERM or SIGINT (or ``stop`` is set): the loop behind :func:`serve_landlord`
    and ``python -m lookup serve``.

    The request loop runs on a thread; the calling thread waits for ``stop``
    (so that signals reach it, and the daemon is shut down from outside its
    loop), then shuts the daemon down and closes the clients' connections,
    which the multiplex server would leave open. Logs on ``landlord.serving``
    ``"<name> at <uri> (<server type> server[, two-way TLS][, <details>])"``
    once serving, and how it stopped.

    Args:
        obj: the Pyro5-exposed object; unregistered (not closed) afterwards.
        host: the address to listen on.
        port: the port (0: any free port; see ``ready``).
        object_id: its Pyro5 object id: no spaces, no ``@``.
        tls: serve over two-way TLS (in force for the whole process while
            serving); ``None`` leaves the process's SSL settings as they are.
        server_type: ``"multiplex"`` or ``"thread"`` (see the module docstring).
        threadpool_size: the most connections the ``"thread"`` server takes.
        stop: set it to stop serving; SIGTERM and SIGINT set it too when
            called from the main thread.
        ready: called with the object's URI once it answers.
        name: what the log lines call the object.
        details: more words for the first log line.

    Raises:
        TypeError: ``tls`` is not a TLSConfig.
        ValueError: an unknown server type, a bad pool size or object id.
        OSError: the address is in use or cannot be bound.
    """
    if server_type not in SERVER_TYPES:
        raise ValueError(f"server_type must be 'multiplex' or 'thread', got {server_type!r}")
    if isinstance(threadpool_size, bool) or not isinstance(threadpool_size, int) or threadpool_size < 1:
        raise ValueError(f"threadpool_size must be a positive int, got {threadpool_size!r}")
    if not isinstance(object_id, str) or not object_id or "@" in object_id \
            or any(char.isspace() for char in object_id):
        raise ValueError(f"object_id must be a non-empty str without spaces or '@', got {object_id!r:.80}")
    if tls is not None and not isinstance(tls, TLSConfig):
        raise TypeError(f"tls must be a TLSConfig or None, got {type(tls).__name__}")
    stop = stop if stop is not None else threading.Event()
    open_files = raise_open_files_limit()
    if 0 <= open_files < _FEW_OPEN_FILES:
        log.warning("only %d files may be open: fewer than 1,000 clients can connect", open_files)

    with contextlib.ExitStack() as stack:
        if tls is not None:
            stack.enter_context(tls_settings(tls))
        comm_timeout = COMM_TIMEOUT if server_type == "multiplex" else 0.0
        stack.enter_context(pyro_settings(MAX_MESSAGE_SIZE=MAX_MESSAGE_SIZE, COMMTIMEOUT=comm_timeout,
                                          THREADPOOL_SIZE=threadpool_size))
        with pyro_settings(SERVERTYPE=server_type):  # read once, by the daemon's constructor
            daemon = Pyro5.api.Daemon(host=host, port=port)
        if server_type == "multiplex":
            greet_when_spoken(daemon.transportServer)  # a silent connection must not stall the one thread
        stack.callback(daemon.close)
        uri = str(daemon.register(obj, objectId=object_id))
        stack.callback(daemon.unregister, obj)  # so that it can be served again, elsewhere
        stack.enter_context(_stopped_by_signals(stop))

        loop = threading.Thread(target=daemon.requestLoop, name=f"{name}-requests", daemon=True)
        loop.start()
        how = [f"{server_type} server"] + (["two-way TLS"] if tls is not None else []) + ([details] if details else [])
        log.info("%s at %s (%s)", name, uri, ", ".join(how))
        if ready is not None:
            ready(uri)
        while not stop.wait(1.0):
            if not loop.is_alive():
                log.error("the request loop stopped by itself")
                break

        log.info("stopping the %s", name)
        started = time.monotonic()
        connections = _client_sockets(daemon)
        daemon.shutdown()
        loop.join(timeout=10)
        for connection in connections:  # the multiplex server leaves its clients' sockets open
            with contextlib.suppress(Exception):
                connection.close()
        log.info("%s stopped (%d connection(s) closed in %.2f s)", name, len(connections),
                 time.monotonic() - started)


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
