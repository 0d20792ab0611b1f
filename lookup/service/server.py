"""Serving a lookup service in its own process: :func:`serve` and :class:`ServedLookupService`.

``python -m lookup serve`` runs :func:`serve`: a :class:`ServedLookupService`
on a Pyro5 daemon at ``host:port``, registered under the fixed object id
:data:`~lookup.discovery.unicast.LOOKUP_OBJECT_ID`, answering until SIGTERM or SIGINT.
Its URI, and so every lease it grants, names the ``advertise`` address (this
host's own when it listens on every interface), and it prints that URI to
stdout once it answers: ``lookup service at PYRO:lookup.LookupService@host:port (...)``.

Many clients
------------
A lookup service is something every service and client of a network keeps a
connection to, and that strangers can reach, so it is served by the
``"guarded"`` server (:mod:`landlord.transport.frameserver`: one thread gathers whole
messages under per-message deadlines and caps, workers serve them): the loop
of :func:`landlord.serving.serve_object`, shared
with :func:`landlord.serving.serve_landlord`. Why, what it costs and the
measurements are in :mod:`landlord.serving`'s docstring.

Metrics
-------
``serve(metrics_port=9160)`` (``python -m lookup serve --metrics-port 9160``)
serves health checks over HTTP (``/healthz``, ``/readyz``: nothing to
install) and, with prometheus-client, the landlord's metrics
(:mod:`landlord.metrics`) and the lookup service's own (:class:`LookupMetrics`):
the registrations it holds, its event deliveries, the attempts that failed,
and the listeners given up on.

TLS
---
``serve(tls=TLSConfig(...))`` (``python -m lookup serve --cert --key --ca``)
serves over two-way TLS: only clients with a certificate signed by the CA
connect, and TLS is in force for the whole server process, so the listeners
it delivers events to must be served over TLS with the same CA too (see
:mod:`landlord.tls`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import Pyro5.server

from landlord import Landlord, LeaseDurationPolicy, LeaseStore, RenewResults, UnknownLeaseError
from landlord.admin import LandlordAdmin
from landlord.metrics import LeaseMetrics, prometheus_available
from landlord.serving import (
    COMM_TIMEOUT,
    MAX_MESSAGE_SIZE,
    SERVER_TYPE,
    SERVER_TYPES,
    THREADPOOL_SIZE,
    WANTED_OPEN_FILES,
    FrameLimits,
    pyro_settings,
    raise_open_files_limit,
    serve_object,
)
from landlord.tls import TLSConfig

# the serving constants and helpers lived here before landlord.serving: still importable from here
from landlord.transport.addresses import advertised_host, check_advertise

from ..discovery.announcer import DEFAULT_INTERVAL, PUBLIC_GROUPS, Announcing
from ..discovery.network import DiscoveryNetwork
from ..discovery.unicast import DEFAULT_HOST, DEFAULT_PORT, LOOKUP_OBJECT_ID
from ..entry import Entry, entry_class_name, entry_fields
from ..registration import DEFAULT_LEASE, DEFAULT_MAX_LEASE
from .lookupservice import LookupService
from .mailer import DeliveryObserver
from .outbox import MailLimits
from .pyrons.bridge import NameServerBridge, PyroNs
from .quotas import LookupLimits, answer_bytes, fitting

if TYPE_CHECKING:
    from prometheus_client import Counter

__all__ = [
    "serve", "ServedLookupService", "raise_open_files_limit", "entry_text",
    "SERVER_TYPE", "MAX_MESSAGE_SIZE", "COMM_TIMEOUT", "THREADPOOL_SIZE", "MAX_TABLE_ROWS", "REAPERS",
    "WANTED_OPEN_FILES", "pyro_settings", "STORE_NAME", "LookupMetrics",
]

log = logging.getLogger("lookup.server")  # its name before it moved; logs and tests know it by it

MAX_TABLE_ROWS = 10_000    # rows of one registrations_table answer
NAMED_IN_A_BATCH = 10      # leases a DEBUG line names, of a batch renewal; the rest are counted
REAPERS = ("sleeper", "polling", "lazy")
STORE_NAME = "lookup"      # the lookup service's name within a store file (see landlord.LeaseStore)

#: ``page(service, admin, admin_token)``: what serves the browser page beside the service (see ``serve``)
PageStarter = Callable[[LookupService, "LandlordAdmin | None", "str | None"], contextlib.AbstractContextManager[Any]]


def entry_text(entry: Entry) -> str:
    """An entry as an operator reads it: ``Name(name='quoter')``, its ``None`` fields left out."""
    short = entry_class_name(entry).rsplit(".", 1)[-1]
    fields = ", ".join(f"{name}={value!r}" for name, value in entry_fields(entry).items() if value is not None)
    return f"{short}({fields})"


class ServedLookupService(LookupService):
    """The lookup service as :func:`serve` runs it: a :class:`LookupService`
    that logs its leases' lives and tells an operator what it holds.

    Renewals are logged at DEBUG on ``lookup.service.server`` (they are frequent),
    expiries and cancellations at INFO. Never a cookie: holding one is the
    capability to renew or cancel. Constructed as :class:`LookupService`.
    """

    @Pyro5.server.expose
    def registrations_table(self, max_rows: int = MAX_TABLE_ROWS) -> tuple[list[tuple[Any, ...]], int]:
        """The live registrations for an operator: at most ``max_rows`` rows
        ``(service_id, types, attributes, seconds_left)`` sorted by service id,
        attributes as text (see :func:`entry_text`), as many as fit
        :data:`~lookup.service.quotas.ANSWER_BYTES` (the text of an item is about as large as
        its :func:`~lookup.service.quotas.answer_bytes`), and how many there are in all.

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
        shown = live[:max_rows]
        shown = shown[:fitting(answer_bytes(item) for item, _ in shown)]
        rows = [(item.service_id, list(item.types), [entry_text(entry) for entry in item.attributes],
                 round(max(0.0, seconds_left), 3))
                for item, seconds_left in shown]
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
            renewed = [(cookie, granted) for cookie, granted in zip(cookies, results.granted) if granted != -1]
            named = ", ".join(f"{self._describe(cookie)} for {granted:.1f} s"
                              for cookie, granted in renewed[:NAMED_IN_A_BATCH])
            if len(renewed) > NAMED_IN_A_BATCH:
                named += f" and {len(renewed) - NAMED_IN_A_BATCH} more"
            log.debug("renewed %d lease(s) in one call%s, %d refused", len(renewed),
                      f" ({named})" if named else "", len(results.granted) - len(renewed))
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




class LookupMetrics(LeaseMetrics):
    """A lookup service's metrics: a landlord's (:class:`landlord.metrics.LeaseMetrics`: its
    registrations and event registrations are its leases), what it holds, read when scraped:
    ``lookup_registrations_active`` (services registered) and ``lookup_event_registrations_active``
    (event registrations; both counting those run out but not yet freed, as ``landlord_leases_active``
    does, and 0 on a replica that does not lead); and its event mail's:
    ``lookup_event_deliveries_total`` (events that reached their listener),
    ``lookup_event_delivery_failures_total`` (attempts that could not reach it; each retry
    counts), ``lookup_event_listeners_dropped_total`` (listeners given up on, their
    registrations ended) and ``lookup_events_dropped_total`` (events dropped undelivered:
    a full queue, a deadline passed, a listener given up on; see :mod:`lookup.service.outbox`);
    and, with the browser page served beside it (:meth:`count_page`), ``lookup_browser_refused_total{rule}``.
    Attach it to a :class:`~lookup.service.lookupservice.LookupService` or a
    :class:`~lookup.service.replicated.ReplicatedLookupService` (every term's service is counted).

    Raises:
        ImportError: prometheus-client is not installed.
    """

    def __init__(self) -> None:
        super().__init__()
        from prometheus_client import Counter, Gauge

        Gauge("lookup_registrations_active", "Services registered now (run out but not yet freed among them).",
              registry=self.registry).set_function(lambda: self._held_by(lambda service: len(service.registry)))
        Gauge("lookup_event_registrations_active", "Event registrations held now (run out but not yet freed "
              "among them).", registry=self.registry).set_function(
            lambda: self._held_by(lambda service: len(service.fanout)))
        self.mail = _CountedMail(
            Counter("lookup_event_deliveries", "Events that reached their listener.", registry=self.registry),
            Counter("lookup_event_delivery_failures", "Event deliveries that could not reach the listener "
                    "(each attempt, retries too).", registry=self.registry),
            Counter("lookup_event_listeners_dropped", "Listeners given up on after their last retry "
                    "(their event registrations ended).", registry=self.registry),
            Counter("lookup_events_dropped", "Events dropped undelivered: their listener's queue was full, "
                    "their deadline passed, or their listener was given up on.", registry=self.registry))

    def count_page(self, refusals: Callable[[], Mapping[str, int]]) -> None:
        """Serve what the lookup browser page refused so far, by rule (``BrowserServer.refusals``: too many
        connections or streams, a Host or Origin not taken, a wrong token), read when scraped, as
        ``lookup_browser_refused_total{rule}``."""
        self.count_by_label("lookup_browser_refused", "Requests and connections the lookup browser page refused, "
                            "by rule (connections, streams, host, origin, token).", "rule", refusals)

    def landlord_attached(self, landlord: Landlord) -> None:
        if isinstance(landlord, LookupService):
            landlord.fanout.mailer.observer = self.mail

    def _held_by(self, count: Callable[[LookupService], int]) -> float:
        """``count`` of the service attached (a replica's: of its term, while it leads), else 0."""
        service, watched = self.latest_landlord(), self.landlord
        if not isinstance(service, LookupService) or watched is None or watched.manager is not service.manager:
            return 0.0  # a replica that does not lead, or whose term has ended
        return float(count(service))


class _CountedMail(DeliveryObserver):
    """Each outcome one ``inc``: a delivery costs its mailer thread a lock and an add."""

    def __init__(self, delivered: Counter, failed: Counter, gave_up: Counter, dropped: Counter) -> None:
        self._delivered, self._failed, self._gave_up, self._dropped = delivered, failed, gave_up, dropped

    def delivered(self) -> None:
        self._delivered.inc()

    def failed(self) -> None:
        self._failed.inc()

    def gave_up(self) -> None:
        self._gave_up.inc()

    def dropped(self) -> None:
        self._dropped.inc()


def serve(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, advertise: str | None = None,
          max_lease: float = DEFAULT_MAX_LEASE, default_lease: float = DEFAULT_LEASE, reaper: str = "sleeper",
          server_type: str = SERVER_TYPE, threadpool_size: int = THREADPOOL_SIZE, tls: TLSConfig | None = None,
          store: str | os.PathLike[str] | None = None, stop: threading.Event | None = None,
          ready: Callable[[str], None] | None = None, announce: bool = True, metrics_port: int | None = None,
          metrics_host: str | None = None, admin_token: str | None = None,
          admin_names: Iterable[str] = (), discovery: bool = True, groups: Iterable[str] = PUBLIC_GROUPS,
          announce_interval: float = DEFAULT_INTERVAL, discovery_network: DiscoveryNetwork | None = None,
          mail_limits: MailLimits | None = None, callback_hosts: Iterable[str] | None = None,
          limits: FrameLimits | None = None, lookup_limits: LookupLimits | None = None,
          pyro_ns: PyroNs | None = None, page: PageStarter | None = None) -> None:
    """Serve a lookup service at ``host:port`` until SIGTERM or SIGINT (or ``stop`` is set).

    Once it answers, prints ``lookup service at <uri> (...)`` to stdout
    (unless ``announce`` is false) and logs the same at INFO; and, unless
    ``discovery`` is false, announces itself to ``groups`` on the network
    and answers discovery requests (:mod:`lookup.discovery.announcer`). Returns once
    the daemon is closed, the announcer, the service's reaper and event
    delivery stopped, and every client connection closed.

    Args:
        host: the address to listen on (``0.0.0.0`` or ``::``: every interface).
        port: the port (0: any free port; see ``ready``).
        advertise: the host name or address put in the service's URI and so
            in every lease it grants (registrations, event registrations);
            ``None``: ``host``, or this host's own address when ``host`` is
            every interface, never the wildcard (see
            `landlord.transport.addresses.advertised_host`).
        max_lease: the longest lease granted, in seconds.
        default_lease: the lease granted for ``ANY``, in seconds.
        reaper: ``"sleeper"``, ``"polling"`` or ``"lazy"`` (see :class:`~landlord.LeaseManager`).
        server_type: ``"guarded"`` (the default; see :mod:`landlord.serving`), Pyro5's ``"multiplex"``
            or ``"thread"`` (with ``threadpool_size`` workers, one per connection).
        threadpool_size: the most connections the ``"thread"`` server takes.
        tls: serve over two-way TLS (in force for the whole process while
            serving; see :mod:`landlord.tls`); ``None`` leaves the process's SSL settings as they are.
        store: an SQLite file keeping the registrations, event registrations
            and their leases (see :class:`~landlord.LeaseStore`): restarted on
            it, the service has them back, at the same URI, with the same
            landlord id and cookies. ``None``: in memory only.
        stop: set it to stop serving (from another thread); signals set it too
            when called from the main thread.
        ready: called with the service's URI once it answers.
        announce: print the line saying where it is served (flushed) once it answers.
        metrics_port: serve its health checks and metrics (:class:`LookupMetrics`) over
            HTTP at this port (0: any free one), printing ``lookup service metrics at
            http://...`` (see :func:`landlord.serving.serve_object`); ``None``: none. Without
            prometheus-client the health checks are served alone (a warning logged says so).
        metrics_host: the address the metrics listen on (default: ``host``).
        admin_token, admin_names: serve an admin object beside the service
            (:class:`landlord.admin.LandlordAdmin`: ``python -m lookup leases|evict``),
            for callers with this token or an admin certificate of these names.
        discovery: announce the service and answer discovery requests (multicast, or broadcast
            where multicast does not work; see :mod:`lookup.discovery.network`). Not to be confused with
            ``announce``, the line printed. A discovery port that cannot be bound is logged
            (WARNING) and the service is served without discovery.
        groups: the discovery groups it is a member of (default: the public group ``""``).
        announce_interval: seconds between announcements.
        discovery_network: the discovery port, interface and mode (default: port 4160; every
            interface, or loopback only when ``host`` is a loopback address; multicast).
        mail_limits: the bounds of event delivery (see :class:`~lookup.service.outbox.MailLimits`).
        callback_hosts: the only hosts event listeners may be served on (``None``: any).
        limits: what one message may be and how many connections are held, on the ``"guarded"``
            server (see :class:`landlord.FrameLimits`; default: its defaults).
        lookup_limits: what one client may hold (see :class:`~lookup.service.quotas.LookupLimits`).
        pyro_ns: also serve Pyro5's name server protocol there (see :mod:`lookup.service.pyrons`),
            on ``host`` unless it names its own; its names' leases must fit ``max_lease``.
        page: also serve the lookup browser page: called with the service, its admin (or
            ``None``) and ``admin_token`` before the service answers, it returns what serves
            the page, closed (as a context manager) when serving stops
            (:func:`lookup.browser.page_at`, for ``--http-port``).

    Raises:
        ValueError: bad lease terms, an unknown reaper or server type, an
            ``advertise`` that is not a host name or address, a bad ``metrics_port``,
            bad ``groups`` or ``announce_interval``, a ``discovery_network.interface`` not ours.
        TypeError: ``tls`` is not a TLSConfig, or ``advertise`` not a str.
        OSError: the address is in use or cannot be bound.
        sqlite3.Error: ``store`` cannot be opened as a database.
    """
    _check_choices(server_type=server_type, reaper=reaper, tls=tls, advertise=advertise)  # before the store opens
    check_pyro_ns(pyro_ns, max_lease)
    policy = LeaseDurationPolicy(maximum=max_lease, default=default_lease)  # raises on bad terms
    announcing = Announcing(discovery, groups=groups, interval=announce_interval, network=discovery_network)
    # before the store is opened; without prometheus-client, health checks alone (serve_object says so)
    metrics = LookupMetrics() if metrics_port is not None and prometheus_available() else None
    service = ServedLookupService(policy=policy, reaper=reaper, mail_limits=mail_limits, callback_hosts=callback_hosts,
                                  limits=lookup_limits,
                                  store=LeaseStore(store, name=STORE_NAME) if store is not None else None)
    kept = f"kept in {os.fspath(store)} ({len(service)} lease(s) taken back)" if store is not None else "in memory"
    bridge = None
    try:
        if metrics is not None:
            metrics.attach(service)
        admin = LandlordAdmin.if_asked(service, token=admin_token, admin_names=admin_names)
        announcing.open(advertised_host(host, advertise))
        if pyro_ns is not None:
            bridge = NameServerBridge(service, pyro_ns, host=host, advertise=advertise, tls=tls,
                                      server_type=server_type, limits=limits)

        def answering(uri: str) -> None:
            announcing.start(service.landlord_id, [uri])
            if ready is not None:
                ready(uri)

        with contextlib.ExitStack() as pages:
            if page is not None:
                start_page(pages, page(service, admin, admin_token), metrics)
            serve_object(service, host, port, advertise=advertise, object_id=LOOKUP_OBJECT_ID, tls=tls,
                         server_type=server_type, threadpool_size=threadpool_size, stop=stop, ready=answering,
                         name="lookup service", announce=announce, metrics=metrics, metrics_host=metrics_host,
                         metrics_port=metrics_port, admin=admin, limits=limits,
                         details=f"leases up to {max_lease:g} s, {default_lease:g} s for ANY, {reaper} reaper, {kept}")
    finally:
        announcing.close()  # first: no client should be sent to a service that is going
        if bridge is not None:
            bridge.close()
        service.close()  # its reaper and event delivery


def start_page(pages: contextlib.ExitStack, page: contextlib.AbstractContextManager[Any],
               metrics: LookupMetrics | None) -> None:
    """Start the browser page ``page`` (what a page starter made: a plain lookup's or a replica's),
    closed with ``pages``; its refusals, if it keeps them (a ``BrowserServer`` does), counted in
    ``metrics``."""
    started = pages.enter_context(page)
    if metrics is not None and isinstance(getattr(started, "refusals", None), Mapping):
        metrics.count_page(lambda: started.refusals)


def _check_choices(*, server_type: str, reaper: str, tls: TLSConfig | None, advertise: str | None) -> None:
    """:func:`serve`'s arguments that name a choice, checked before anything is opened.

    Raises:
        ValueError: an unknown server type or reaper, or an ``advertise`` that is no host.
        TypeError: ``tls`` is not a TLSConfig, or ``advertise`` not a str.
    """
    if server_type not in SERVER_TYPES:
        raise ValueError(f"server_type must be one of {', '.join(SERVER_TYPES)}, got {server_type!r}")
    if reaper not in REAPERS:
        raise ValueError(f"reaper must be one of {', '.join(REAPERS)}, got {reaper!r}")
    if tls is not None and not isinstance(tls, TLSConfig):
        raise TypeError(f"tls must be a TLSConfig or None, got {type(tls).__name__}")
    if advertise is not None:
        check_advertise(advertise)


def check_pyro_ns(pyro_ns: PyroNs | None, max_lease: float) -> None:
    """:func:`serve`'s (and a replica's) ``pyro_ns``, checked before anything is opened.

    Raises:
        TypeError: not a PyroNs.
        ValueError: its names' leases would be longer than ``max_lease``.
    """
    if pyro_ns is None:
        return
    if not isinstance(pyro_ns, PyroNs):
        raise TypeError(f"pyro_ns must be a PyroNs or None, got {type(pyro_ns).__name__}")
    if pyro_ns.terms.lease_term > max_lease:
        raise ValueError(f"the name server face's leases ({pyro_ns.terms.lease_term:g} s) exceed "
                         f"the longest lease ({max_lease:g} s): ping more often, or grant longer leases")

