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

Against ``"thread"`` with a pool as large as the clients, multiplex answered
a further client as fast, with a hundredth of the threads and far less
memory, exited at once on SIGTERM (Pyro5's pool joins each busy worker with
a 0.1 s timeout) and served more calls a second (one thread, no GIL
hand-offs): the figures are in ``docs/performance.md``.

Since issue 23 the default is the ``"guarded"`` server
(:mod:`landlord.transport.frameserver`): like the multiplex server it waits on every
socket from one thread, but that thread only gathers whole messages (under a
deadline from each message's first byte, and caps read from its header) and
hands them to workers, so no client can hold it. What follows is about the
multiplex server, which stays available.

The price of one thread: a request is handled from start to end before the
next, so a client that stalls in the middle of a message (or of its
handshake) stalls everyone, for at most :data:`COMM_TIMEOUT`. A client that
connects and sends nothing at all costs nothing: Pyro5 would read its
handshake at once and wait for it (4.9 s measured behind one silent raw
connection, so 1,000 of them would starve renewals for over an hour), but
:mod:`landlord.transport.multiplex` makes the server greet a connection only once it has
sent data. Idle connections are never timed out (the selector only reads a
socket that has data), and :data:`MAX_MESSAGE_SIZE` bounds what one
message may make the server read or allocate. This is robustness against a
stuck client, not a defence against a hostile one: against strangers, use
TLS (only holders of a certificate from your CA get as far as a message).

Addresses
---------
``host`` is where the daemon listens; ``advertise`` is the address put in
every URI it hands out (the object's own, and so every lease a landlord
grants). Listening on all interfaces (``0.0.0.0``, ``::``, ``""``) without
``advertise`` advertises this host's own address, never the wildcard, which
no other host can connect to: :mod:`landlord.transport.addresses` makes that choice
(:func:`~landlord.transport.addresses.advertised_host`); Pyro5's daemon puts it in the
URIs (its ``nathost``).

Metrics and health checks
-------------------------
``serve_landlord(..., metrics_port=9170)`` (and :func:`serve_replica`,
:func:`serve_object`, ``python -m lookup serve --metrics-port``) also
answers plain HTTP on that port while it serves: ``/healthz`` and
``/readyz`` for a load balancer or systemd, and ``/metrics`` for Prometheus
(see :mod:`landlord.metrics`). The health checks need nothing installed;
without prometheus-client, ``/metrics`` answers 501 naming the extra, and
the server logs so once, at start. That HTTP server has a thread of its own
and bounds every client (:mod:`landlord.transport.httpserver`): a slow
scraper, or a hostile one, never holds up a renewal.

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
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import Pyro5.api
from Pyro5 import config as pyro_config

from .admin.server import LandlordAdmin, admin_object_id
from .grantor.landlord import Landlord
from .replication.replicated import ReplicatedLandlord
from .tls import TLSConfig, tls_settings
from .transport.addresses import WILDCARD_HOSTS, advertised_host, uri_host
from .transport.frameserver import WORKERS, guard
from .transport.framing import FrameLimits
from .transport.multiplex import greet_when_spoken

if TYPE_CHECKING:  # imported when metrics are asked for: import landlord never loads them
    from .metrics import LeaseMetrics, Metrics, MetricsEndpoint

try:  # not on Windows
    import resource
except ImportError:  # pragma: no cover
    resource = None  # type: ignore[assignment]


__all__ = [
    "serve_landlord", "serve_replica", "serve_object", "landlord_object_id", "pyro_settings", "raise_open_files_limit",
    "SERVER_TYPE", "SERVER_TYPES", "MAX_MESSAGE_SIZE", "COMM_TIMEOUT", "THREADPOOL_SIZE", "WANTED_OPEN_FILES",
    "FrameLimits", "DEFAULT_HOST", "print_line",
]

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
SERVER_TYPE = "guarded"  #: landlord.transport.frameserver: one thread gathers whole messages, workers serve them
SERVER_TYPES = ("guarded", "multiplex", "thread")
THREADPOOL_SIZE = 2048     #: workers if the "thread" server type is asked for: one per connection

# Requests to a landlord or a lookup service are small (a batch of 1,000
# renewals is ~60 KiB, an item with its attributes a few KiB); Pyro5's default
# of 1 GiB would let one client make the server read and allocate a gigabyte —
# while, with one thread, nobody else is served. 16 MiB keeps room for big
# batches and for answers of tens of thousands of items. It also caps the
# answers: a lookup service keeps each within 1 MiB of items, at most 10 MiB on
# any wire, and hands the rest on asking again (lookup.service.quotas.ANSWER_BYTES).
MAX_MESSAGE_SIZE = 16 * 1024 * 1024

# Seconds one socket read, or one whole response's sending, may take. With the
# multiplex server a client that stops halfway through a message (or connects
# and never sends its handshake) holds up every other client until this passes;
# shorter would also cut off big answers to slow links (16 MiB needs ~27 Mbit/s
# at 5 s). It does not disconnect idle clients: their sockets are only read
# when they have data. (The thread server would time idle connections out, so
# it runs without one.)
COMM_TIMEOUT = 5.0


WANTED_OPEN_FILES = 65536  #: soft limit asked for when the hard limit is unlimited
_FEW_OPEN_FILES = 1100     # below this, warn: 1,000 clients cannot connect


def raise_open_files_limit(wanted: int = WANTED_OPEN_FILES) -> int:
    """Raise this process's soft limit of open files towards its hard limit
    (each client connection is a socket); return the soft limit now in force.

    Args:
        wanted: the soft limit to ask for when the hard limit is unlimited
            (or higher than this).

    It raises nothing: where the limit cannot be read or raised, the current one stays.
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
    """Set Pyro5 config items for the block, restoring the old values after it (blocks that
    overlap, nested or on other threads, may end in any order).

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
    token = object()
    with _settings_lock:
        for name, value in settings.items():
            if name not in _settings_in_force:
                _settings_in_force[name] = (getattr(pyro_config, name), [])
            _settings_in_force[name][1].append((token, value))
            setattr(pyro_config, name, value)
    try:
        yield
    finally:
        with _settings_lock:
            for name in settings:
                before, holders = _settings_in_force[name]
                holders[:] = [(held, value) for held, value in holders if held is not token]
                if holders:  # another block still holds it (a nested one, or another thread's): its value
                    setattr(pyro_config, name, holders[-1][1])
                else:
                    del _settings_in_force[name]
                    setattr(pyro_config, name, before)


# Blocks of pyro_settings that may overlap, on one thread or on several (two servers
# started and stopped in any order): per item, its value before the first block and
# the blocks holding it with their values, latest last. A block that ends hands the
# item to the latest block still holding it, or back to the value before them all,
# so that blocks ending out of order leave nothing behind.
_settings_lock = threading.Lock()
_settings_in_force: dict[str, tuple[Any, list[tuple[object, Any]]]] = {}


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
                   advertise: str | None = None, object_id: str | None = None, tls: TLSConfig | None = None,
                   server_type: str = SERVER_TYPE, threadpool_size: int = THREADPOOL_SIZE,
                   stop: threading.Event | None = None, ready: Callable[[str], None] | None = None,
                   announce: bool = True, metrics_port: int | None = None, metrics_host: str | None = None,
                   metrics: LeaseMetrics | None = None, admin: LandlordAdmin | None = None,
                   limits: FrameLimits | None = None, workers: int = WORKERS, name: str = "landlord") -> None:
    """Serve ``landlord`` (a :class:`~landlord.Landlord` or subclass) at
    ``host:port`` until SIGTERM or SIGINT (or ``stop`` is set).

    With ``metrics_port``, its health checks and Prometheus metrics are served
    over HTTP at ``metrics_host:metrics_port`` for as long (see
    :mod:`landlord.metrics`): ``/healthz``, ``/readyz``, which answers 200 from
    the moment the landlord answers until it is told to stop, and ``/metrics``
    (which needs prometheus-client: without it, 501 and a warning logged at
    start). A second line is printed: ``landlord metrics at
    http://host:port/metrics (...)``. The :class:`~landlord.metrics.LeaseMetrics`
    stays among the landlord's hooks, and serving it again with metrics goes
    on counting in it.

    Its leases carry the URI it is served under, with the advertised address
    (see :func:`advertised_host`). Prints ``landlord at <uri> (...)`` to
    stdout once it answers (unless ``announce`` is false). Returns once the
    daemon is closed and every client connection closed; the landlord is
    unregistered but not closed (it is the caller's: it may be served again).

    Args:
        landlord: what to serve.
        host: the address to listen on (``0.0.0.0`` or ``::``: every interface).
        port: the port (0: any free port; see ``ready``).
        advertise: the host name or address put in its URI and so in every
            lease it grants, for clients to connect to; ``None``: ``host``,
            or this host's own address when ``host`` is every interface.
        object_id: the Pyro5 object id (default :func:`landlord_object_id`:
            ``"landlord." + landlord.landlord_id``).
        tls: serve over two-way TLS: only clients with a certificate signed by
            its CA connect. In force for the whole process while serving (see
            :mod:`landlord.tls`); ``None`` leaves the process's SSL settings as they are.
        server_type: ``"guarded"`` (the default; see the module docstring), ``"multiplex"``
            or ``"thread"`` (with ``threadpool_size`` workers, one per connection).
        threadpool_size: the most connections the ``"thread"`` server takes.
        limits, workers: as for :func:`serve_object`.
        stop: set it to stop serving (from another thread); SIGTERM and SIGINT
            set it too when called from the main thread.
        ready: called with the landlord's URI once it answers.
        announce: print the line saying where it is served (flushed) once it answers.
        metrics_port: serve its metrics and health checks at this port (0: any free
            one; the printed line says which); ``None``: no metrics.
        metrics_host: the address the metrics listen on (default: ``host``).
        metrics: the :class:`~landlord.metrics.LeaseMetrics` to serve (attached to
            ``landlord`` here, if it is not yet); default: the one already among its
            hooks, else a new one. Only with ``metrics_port``.
        admin: serve this :class:`~landlord.admin.LandlordAdmin` of ``landlord`` beside
            it, on the same daemon (``python -m landlord list|evict`` calls it).
        name: what the printed line calls it (``<name> at <uri> (...)``).

    Raises:
        TypeError: ``landlord`` is not a Landlord, ``tls`` not a TLSConfig, or
            ``advertise`` not a str.
        ValueError: an unknown server type, a bad pool size or object id, an
            ``advertise`` that is not a host name or address, a bad ``metrics_port``,
            ``metrics`` without ``metrics_port``, or ``metrics`` counting another
            landlord (nothing is bound).
        OSError: the address (or the metrics' address) is in use or cannot be bound.
    """
    if not isinstance(landlord, Landlord):
        raise TypeError(f"expected a Landlord, got {type(landlord).__name__}")
    object_id = landlord_object_id(landlord) if object_id is None else object_id
    metrics = _attached_metrics(landlord, metrics, metrics_port)
    serve_object(landlord, host, port, advertise=advertise, object_id=object_id, tls=tls,
                 server_type=server_type, threadpool_size=threadpool_size, stop=stop, ready=ready,
                 name=name, announce=announce, metrics=metrics, metrics_host=metrics_host,
                 metrics_port=metrics_port, admin=_admin_of(landlord, admin), limits=limits, workers=workers)


def serve_replica(replica: ReplicatedLandlord, host: str = DEFAULT_HOST, port: int = 0, *,
                  advertise: str | None = None, tls: TLSConfig | None = None, server_type: str = SERVER_TYPE,
                  threadpool_size: int = THREADPOOL_SIZE, stop: threading.Event | None = None,
                  ready: Callable[[str], None] | None = None, announce: bool = True,
                  name: str = "replica", metrics_port: int | None = None, metrics_host: str | None = None,
                  metrics: LeaseMetrics | None = None, admin: LandlordAdmin | None = None,
                  limits: FrameLimits | None = None, workers: int = WORKERS) -> None:
    """Serve one replica of a replicated landlord at ``host:port`` until SIGTERM or SIGINT (or ``stop``),
    as :func:`serve_landlord` serves a landlord; then close it (it resigns: another replica leads at once).

    It is registered under its ``object_id`` (:func:`~landlord.replication.replicated.replica_object_id`),
    so its URI is ``PYRO:landlord.<group>@<advertised host>:<port>``, which must
    be one of the group's ``replicas``; it joins the group's election once it
    answers, before ``ready`` is called.

    Served by the ``"guarded"`` server by default, never ``"multiplex"``: a
    grant or cancel waits for its etcd transaction (for up to 2 s while etcd
    elects a leader of its own) on one of the server's workers, and must not
    hold up other holders' renewals meanwhile, which never wait for etcd.

    With ``metrics_port``, its health checks and metrics are served as :func:`serve_landlord`
    serves a landlord's, counted across its terms of leadership; ``/readyz``
    answers 200 only while it leads (a load balancer sends clients to the leader),
    with prometheus-client or without.

    Args:
        replica: what to serve (not yet started).
        host, port, advertise, tls, server_type, threadpool_size, stop, announce:
            as for :func:`serve_landlord`.
        ready: called with the replica's URI once it answers and has joined the election.
        name: what the log lines call it (the first: ``"<name> at <uri> (...)"``).
        metrics_port, metrics_host: as for :func:`serve_landlord`.
        metrics: the :class:`~landlord.metrics.LeaseMetrics` to serve, attached to
            ``replica`` here (default: a new one). Only with ``metrics_port``.
        admin, limits, workers: as for :func:`serve_landlord`.

    Raises:
        TypeError: ``replica`` is not a :class:`~landlord.ReplicatedLandlord`.
        ValueError: its URI is not one of its ``replicas``, or as :func:`serve_landlord`.
        OSError: the address is in use or cannot be bound.
    """
    if not isinstance(replica, ReplicatedLandlord):
        raise TypeError(f"expected a ReplicatedLandlord, got {type(replica).__name__}")
    metrics = _attached_metrics(replica, metrics, metrics_port)

    def joined(uri: str) -> None:
        replica.start(uri)
        if ready is not None:
            ready(uri)

    try:
        serve_object(replica, host, port, advertise=advertise, object_id=replica.object_id, tls=tls,
                     server_type=server_type, threadpool_size=threadpool_size, stop=stop, ready=joined,
                     name=name, details=f"replica of group {replica.group}", announce=announce,
                     metrics=metrics, metrics_host=metrics_host, metrics_port=metrics_port,
                     admin=_admin_of(replica, admin), limits=limits, workers=workers)
    finally:
        replica.close()


# -- what serve_landlord and serve_replica check and attach ---------------------------------------------


def _admin_of(served: Landlord | ReplicatedLandlord, admin: LandlordAdmin | None) -> LandlordAdmin | None:
    """``admin``, checked to administer ``served``.

    Raises:
        TypeError: ``admin`` is not a LandlordAdmin.
        ValueError: it administers another landlord.
    """
    if admin is None:
        return None
    if not isinstance(admin, LandlordAdmin):
        raise TypeError(f"admin must be a LandlordAdmin, got {type(admin).__name__}")
    if admin.object_id != admin_object_id(served):
        raise ValueError(f"this admin object administers another landlord ({admin.object_id})")
    return admin


def _attached_metrics(served: Landlord | ReplicatedLandlord, metrics: LeaseMetrics | None,
                      metrics_port: int | None) -> LeaseMetrics | None:
    """The metrics to serve with ``served``, attached to it: ``metrics``, else (a landlord) those among its
    hooks, else new ones; ``None`` without a ``metrics_port``, or without prometheus-client (then
    :func:`serve_object` serves the health checks alone, and says so).

    Raises:
        ValueError: a bad ``metrics_port``, ``metrics`` without one, or ``metrics`` counting another.
        RuntimeError: ``served`` is a replica that has started.
    """
    if metrics_port is None:
        if metrics is not None:
            raise ValueError("metrics given without metrics_port: say where to serve them")
        return None
    from .metrics import LeaseMetrics, check_metrics_port, find_metrics, prometheus_available

    check_metrics_port(metrics_port)
    if metrics is None:  # a landlord served again with metrics counts on in those it had
        metrics = find_metrics(served) if isinstance(served, Landlord) else None
        if metrics is None:
            if not prometheus_available():
                return None
            metrics = LeaseMetrics()
    return metrics.attach(served)


def serve_object(obj: object, host: str = DEFAULT_HOST, port: int = 0, *, object_id: str,
                 advertise: str | None = None, tls: TLSConfig | None = None, server_type: str = SERVER_TYPE,
                 threadpool_size: int = THREADPOOL_SIZE, stop: threading.Event | None = None,
                 ready: Callable[[str], None] | None = None, name: str = "object", details: str = "",
                 announce: bool = True, metrics: Metrics | None = None, metrics_host: str | None = None,
                 metrics_port: int | None = None, admin: LandlordAdmin | None = None,
                 limits: FrameLimits | None = None, workers: int = WORKERS) -> None:
    """Serve one Pyro5 object at ``host:port`` under ``object_id`` until
    SIGTERM or SIGINT (or ``stop`` is set): the loop behind :func:`serve_landlord`
    and ``python -m lookup serve``.

    The request loop runs on a thread; the calling thread waits for ``stop``
    (so that signals reach it, and the daemon is shut down from outside its
    loop), then shuts the daemon down and closes the clients' connections,
    which the multiplex server would leave open. Once serving, it logs on
    ``landlord.serving`` at INFO and (with ``announce``) prints to stdout the
    same line, ``"<name> at <uri> (<server type> server[, two-way TLS][,
    <details>][, listening on <host:port>])"``; and it logs how it stopped.

    Every URI the daemon hands out (the object's, and any of the proxies and
    leases it returns) names :func:`advertised_host`, never a wildcard.

    With ``metrics_port`` (or ``metrics``), its health checks and metrics
    (:func:`landlord.metrics.serve_metrics`) are bound once the daemon is, and
    closed before the daemon; ``/readyz`` answers 200 from just before
    ``ready`` is called until ``stop`` is set, while ``metrics.answering()``
    and, for a :class:`~landlord.ReplicatedLandlord`, while it leads. A second
    line says where: ``"<name> metrics at http://<host:port>/metrics (health:
    /healthz, /readyz)"``. Without prometheus-client, the health checks are
    served alone: that line, and a warning logged, say so.

    Args:
        obj: the Pyro5-exposed object; unregistered (not closed) afterwards.
        host: the address to listen on (``0.0.0.0``, ``::`` or ``""``: every interface).
        port: the port (0: any free port; see ``ready``).
        object_id: its Pyro5 object id: no spaces, no ``@``.
        advertise: the host name or address to put in its URIs instead of
            ``host`` (see :func:`advertised_host`).
        tls: serve over two-way TLS (in force for the whole process while
            serving); ``None`` leaves the process's SSL settings as they are.
        server_type: ``"guarded"``, ``"multiplex"`` or ``"thread"`` (see the module docstring).
        threadpool_size: the most connections the ``"thread"`` server takes.
        limits: what one message may be on the ``"guarded"`` server (default:
            :class:`~landlord.transport.framing.FrameLimits`' defaults).
        workers: the ``"guarded"`` server's workers for small messages.
        stop: set it to stop serving; SIGTERM and SIGINT set it too when
            called from the main thread.
        ready: called with the object's URI once it answers.
        name: what the log lines call the object.
        details: more words for the first log line.
        announce: print the first log line's message to stdout (flushed),
            for whoever started the server; a closed stdout is no error.
        metrics: serve these metrics and health checks too (attached by the caller): a landlord's
            :class:`~landlord.metrics.LeaseMetrics`, or a :class:`~landlord.metrics.Metrics` counting
            fences (:meth:`~landlord.metrics.Metrics.count_fence`) for a served :class:`~landlord.RemoteFence`.
            ``None`` with a ``metrics_port``: a plain :class:`~landlord.metrics.Metrics` (its server's
            refusals, the process's series) if prometheus-client is installed, else health checks alone.
        metrics_host: where the metrics listen (default: ``host``).
        metrics_port: their port (0: any free one); ``None``: any free one if ``metrics`` is given,
            else no health checks or metrics are served.
        admin: serve this :class:`~landlord.admin.LandlordAdmin` on the same daemon, under its
            ``object_id`` (logged, and printed with ``announce``: ``"<name> admin at <uri>"``).

    Raises:
        TypeError: ``tls`` is not a TLSConfig, ``limits`` not a FrameLimits, or ``advertise`` not a str.
        ValueError: an unknown server type, a bad pool size, worker count or object id, an
            ``advertise`` that is not a host name or address (nothing is bound).
        OSError: the address (or the metrics' address) is in use or cannot be bound.
    """
    _check_options(server_type, threadpool_size, workers, limits, object_id, tls, metrics_port)
    advertised = advertised_host(host, advertise)  # checked before anything is bound
    health = metrics is not None or metrics_port is not None
    if metrics is None and metrics_port is not None:
        metrics = _plain_metrics(name)
    translated = advertise is not None or host in WILDCARD_HOSTS  # the URIs carry another address than host
    stop = stop if stop is not None else threading.Event()
    _warn_if_few_open_files()

    with contextlib.ExitStack() as stack:
        stack.enter_context(_process_settings(tls, server_type, threadpool_size))
        daemon = _bound_daemon(host, port, uri_host(advertised) if translated else None, server_type)
        _guard_or_greet(stack, daemon, server_type, limits, workers, metrics)
        stack.callback(daemon.close)
        uri, admin_uri = _register(stack, daemon, obj, object_id, admin)
        answering = threading.Event()  # /readyz: from ready until told to stop
        endpoint = _metrics_endpoint(stack, obj, metrics, host if metrics_host is None else metrics_host,
                                     metrics_port or 0, answering, stop) if health else None
        stack.enter_context(_stopped_by_signals(stop))

        loop = threading.Thread(target=daemon.requestLoop, name=f"{name}-requests", daemon=True)
        loop.start()
        answering.set()  # before the lines that say so: whoever reads them and asks /readyz hears "ready"
        _announce(name, announce, _serving_line(name, uri, server_type, tls is not None, details,
                                                daemon.locationStr if translated else None), admin_uri, endpoint)
        if ready is not None:
            ready(uri)
        _wait_for_stop(stop, loop)
        answering.clear()
        _shut_down(daemon, loop, name)


# -- the steps of serve_object, in order ---------------------------------------------------------------


def _check_options(server_type: str, threadpool_size: int, workers: int, limits: FrameLimits | None,
                   object_id: str, tls: TLSConfig | None, metrics_port: int | None) -> None:
    """Refuse :func:`serve_object`'s bad options before anything is bound.

    Raises:
        TypeError, ValueError: as :func:`serve_object`.
    """
    if metrics_port is not None:
        from .metrics import check_metrics_port

        check_metrics_port(metrics_port)
    if server_type not in SERVER_TYPES:
        raise ValueError(f"server_type must be one of {', '.join(SERVER_TYPES)}, got {server_type!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    if limits is not None and not isinstance(limits, FrameLimits):
        raise TypeError(f"limits must be a FrameLimits or None, got {type(limits).__name__}")
    if isinstance(threadpool_size, bool) or not isinstance(threadpool_size, int) or threadpool_size < 1:
        raise ValueError(f"threadpool_size must be a positive int, got {threadpool_size!r}")
    if not isinstance(object_id, str) or not object_id or "@" in object_id \
            or any(char.isspace() for char in object_id):
        raise ValueError(f"object_id must be a non-empty str without spaces or '@', got {object_id!r:.80}")
    if tls is not None and not isinstance(tls, TLSConfig):
        raise TypeError(f"tls must be a TLSConfig or None, got {type(tls).__name__}")


def _plain_metrics(name: str) -> Metrics | None:
    """What a server with a metrics port and no metrics of its own serves: a plain Metrics (its server's
    refusals, the process's series), or nothing without prometheus-client (said once, here)."""
    from .metrics import INSTALL_METRICS, Metrics, prometheus_available

    if prometheus_available():
        return Metrics()
    log.warning("%s: no /metrics (%s); /healthz and /readyz are served", name, INSTALL_METRICS)
    return None


def _warn_if_few_open_files() -> None:
    """Raise the open-files limit (a connection is a file); warn if it stays too low for 1,000 clients."""
    open_files = raise_open_files_limit()
    if 0 <= open_files < _FEW_OPEN_FILES:
        log.warning("only %d files may be open: fewer than 1,000 clients can connect", open_files)


@contextlib.contextmanager
def _process_settings(tls: TLSConfig | None, server_type: str, threadpool_size: int) -> Iterator[None]:
    """The process's TLS (if given) and Pyro5 settings a server needs, for as long as it serves."""
    with tls_settings(tls) if tls is not None else contextlib.nullcontext():
        comm_timeout = 0.0 if server_type == "thread" else COMM_TIMEOUT
        with pyro_settings(MAX_MESSAGE_SIZE=MAX_MESSAGE_SIZE, COMMTIMEOUT=comm_timeout,
                           THREADPOOL_SIZE=threadpool_size):
            yield


def _bound_daemon(host: str, port: int, nathost: str | None, server_type: str) -> Pyro5.api.Daemon:
    """A daemon bound at ``host:port`` whose URIs carry ``nathost`` (if given) and the port bound."""
    # Pyro5's NAT address is the one its URIs carry; natport 0: the port bound
    # SERVERTYPE is read once, by the daemon's constructor; a guarded server takes over a multiplex server's socket
    with pyro_settings(SERVERTYPE="multiplex" if server_type == "guarded" else server_type):
        return Pyro5.api.Daemon(host=host, port=port, nathost=nathost, natport=None if nathost is None else 0)


def _guard_or_greet(stack: contextlib.ExitStack, daemon: Pyro5.api.Daemon, server_type: str,
                      limits: FrameLimits | None, workers: int, metrics: Metrics | None) -> None:
    """Make the daemon's server ``server_type``'s: guarded (its refusals counted in ``metrics`` while it
    serves), or multiplex greeting a connection only once it speaks."""
    if server_type == "guarded":
        guarded = guard(daemon, limits, workers=workers)
        if metrics is not None:
            metrics.count_refusals(guarded.refusals.copy)
            stack.callback(metrics.count_refusals, None)
    elif server_type == "multiplex":
        greet_when_spoken(daemon.transportServer)  # a silent connection must not stall the one thread


def _register(stack: contextlib.ExitStack, daemon: Pyro5.api.Daemon, obj: object, object_id: str,
              admin: LandlordAdmin | None) -> tuple[str, str | None]:
    """Register ``obj`` (and ``admin``, if given) on the daemon until the stack closes; their URIs."""
    uri = str(daemon.register(obj, objectId=object_id))
    stack.callback(daemon.unregister, obj)  # so that it can be served again, elsewhere
    if admin is None:
        return uri, None
    admin_uri = str(daemon.register(admin, objectId=admin.object_id))
    stack.callback(daemon.unregister, admin)
    return uri, admin_uri


def _metrics_endpoint(stack: contextlib.ExitStack, obj: object, metrics: Metrics | None, host: str, port: int,
                      answering: threading.Event, stop: threading.Event) -> MetricsEndpoint:
    """The health checks' and metrics' HTTP endpoint, bound now and closed with the stack; ready while
    ``answering`` is set, ``stop`` is not, the metrics say the object answers, and a replica leads."""
    from .metrics import serve_metrics

    def ready() -> bool:
        return (answering.is_set() and not stop.is_set() and (metrics is None or metrics.answering())
                and (not isinstance(obj, ReplicatedLandlord) or obj.leading))

    endpoint = serve_metrics(metrics, host, port, is_ready=ready)
    stack.callback(endpoint.close)
    return endpoint


def _serving_line(name: str, uri: str, server_type: str, two_way_tls: bool, details: str,
                  listening_on: str | None) -> str:
    """``"<name> at <uri> (<server type> server[, two-way TLS][, <details>][, listening on <host:port>])"``."""
    how = [f"{server_type} server"] + (["two-way TLS"] if two_way_tls else []) + ([details] if details else [])
    if listening_on is not None:
        how.append(f"listening on {listening_on}")
    return f"{name} at {uri} ({', '.join(how)})"


def _announce(name: str, announce: bool, serving: str, admin_uri: str | None,
              endpoint: MetricsEndpoint | None) -> None:
    """Say where the object, its admin object and its metrics are served: with ``announce``, printed
    to stdout (what a script reads the URI from) and logged at DEBUG only, so that an operator whose
    stdout and stderr go to one journal sees each event once; without, logged at INFO."""
    lines = [serving] + ([f"{name} admin at {admin_uri}"] if admin_uri is not None else []) + (
        [_metrics_line(name, endpoint)] if endpoint is not None else [])
    for line in lines:
        log.log(logging.DEBUG if announce else logging.INFO, "%s", line)
        if announce:
            print_line(line)


def _metrics_line(name: str, endpoint: MetricsEndpoint) -> str:
    """``"<name> metrics at <url> (health: /healthz, /readyz[; /metrics needs prometheus-client: ...])"``."""
    from .metrics import INSTALL_EXTRA

    missing = "" if endpoint.metrics is not None else f"; /metrics needs prometheus-client: {INSTALL_EXTRA}"
    return f"{name} metrics at {endpoint.url} (health: /healthz, /readyz{missing})"


def _wait_for_stop(stop: threading.Event, loop: threading.Thread) -> None:
    """Wait until ``stop`` is set, or the request loop has stopped by itself (logged)."""
    while not stop.wait(1.0):
        if not loop.is_alive():
            log.error("the request loop stopped by itself")
            break


def _shut_down(daemon: Pyro5.api.Daemon, loop: threading.Thread, name: str) -> None:
    """Shut the daemon down, wait for its request loop, and close its clients' connections (logged)."""
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


def print_line(line: str) -> None:
    """Print ``line`` to stdout, flushed; a missing or closed stdout (nobody reads it) stops no server
    (what every server prints its "served at" lines with)."""
    if sys.stdout is None:  # pythonw, or a daemonized process
        return
    try:
        print(line, flush=True)
    except (OSError, ValueError) as exc:  # a broken pipe, a closed file
        log.debug("cannot print to stdout: %s", exc)


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
