"""Prometheus metrics of a landlord, and of fences, with health checks over HTTP: :class:`LeaseMetrics`,
:class:`Metrics`, :func:`serve_metrics`.

The metrics need the ``metrics`` extra (``pip install 'landlord[metrics]'``,
which is prometheus-client); the health checks need nothing. Importing this
module does not need it: making a :class:`LeaseMetrics` (or :class:`Metrics`)
does, and says so if it is missing (:func:`prometheus_available` asks
first). ``import landlord`` never imports this module.

Serving a landlord with its metrics is one option::

    serve_landlord(landlord, "0.0.0.0", 4170, metrics_port=9170)

and by hand::

    metrics = LeaseMetrics()
    landlord = Landlord(hooks=metrics)   # or leave hooks out: attach adds them
    metrics.attach(landlord)             # the gauge and /readyz read this landlord
    endpoint = serve_metrics(metrics, "127.0.0.1", 9170)
    ...
    endpoint.close()

A :class:`LeaseMetrics` is a :class:`~landlord.grantor.hooks.LeaseHooks`: the
landlord tells it of every grant, renewal, denial and end, and it counts.
Each has a registry of its own (never prometheus-client's global one), so
two landlords in one process keep their counts apart. Exposed, in the
Prometheus text format (or OpenMetrics, for a scraper that asks):

- ``landlord_leases_granted_total``, ``landlord_leases_renewed_total`` (each
  lease of a batch), ``landlord_leases_cancelled_total``,
  ``landlord_leases_expired_total``, ``landlord_leases_revoked_total``;
- ``landlord_leases_denied_total{reason}``: ``denied`` (the policy said no, or
  the lease was revoked), ``unknown`` (no such lease, or it ended), ``other``;
- ``landlord_leases_active``: the leases held, read from the landlord when
  scraped (those in their grace, and those run out but not yet freed, among them);
- ``landlord_renewal_duration_seconds``: a histogram of how long the landlord
  took to answer one renewal call (``renew``, or a whole ``renew_all``);
- ``landlord_limits_refused_total{limit}``: calls refused by a per-client
  limit (what one client may hold: a lookup service's registrations, a
  renewal service's sets, ...; or how large a registration may be), the limit
  named as its option is (``registrations_per_client``), read when scraped
  from a landlord that has such limits (its ``limit_refusals()``);
- ``landlord_transport_refused_total{rule}``: connections and messages its
  guarded server refused, by the rule broken (``deadline``, ``too large``,
  ``serializer``, ``connections``, ...; see :mod:`landlord.transport.framing`), read from
  the server when scraped;
- named leases (:meth:`~landlord.Landlord.acquire`; locks, semaphores):
  ``landlord_names_acquired_total`` (every grant of a name, at once or after
  waiting), ``landlord_names_waits_total`` (requests that had to wait),
  ``landlord_names_handed_over_total`` (grants to a waiter: its turn came),
  ``landlord_names_refused_total`` (requests refused: held and no wait, too
  many names or waiters, the policy), ``landlord_names_wait_timeouts_total``.

The resource's side counts too. Fences (:class:`~landlord.Fence`,
:class:`~landlord.RemoteFence`, or anything with such ``counts()``) are
counted by :meth:`Metrics.count_fence`, read when scraped:

- ``landlord_fence_checks_total{fence, outcome}``: checks ``accepted``,
  ``refused`` (a stale token: a write a lost holder tried), and ``invalid``
  (a call that carried no token; a served fence's only).

A process that serves a fence and no landlord counts it in a plain
:class:`Metrics`, and serves those::

    metrics = Metrics().count_fence(fence, "orders")
    serve_object(RemoteFence(fence), "0.0.0.0", 4180, object_id="fence.orders",
                 metrics=metrics, metrics_port=9180)

Every registry also holds what every Prometheus client exports, read when
scraped: the process's (``process_cpu_seconds_total``,
``process_resident_memory_bytes``, ``process_open_fds``, ...; Linux only),
the platform's (``python_info``) and the garbage collector's
(``python_gc_collections_total``, ...); and
``landlord_build_info{version, python}``, always 1.

What it costs a renewal: renewals come to the hooks in batches, and each
batch is one ``inc`` and one ``observe``, whatever its size (measured by
``benchmarks/bench_metrics.py``); the process's series cost only the scrape.

The endpoint (:func:`serve_metrics`) answers ``GET /metrics`` through
prometheus-client's own exposition (its WSGI app: the format the scraper's
``Accept`` asks for, gzip when it accepts it); ``/healthz`` (200 ``ok``
while the process serves: a liveness check); and ``/readyz`` (200 while the
landlord answers leases, else 503: a replica of a replicated landlord
answers only while it leads). Without prometheus-client the health checks
are served all the same, and ``/metrics`` answers 501 naming the extra. The
server (:mod:`landlord.transport.httpserver`) is the standard library's
asyncio on a thread of its own, and no client holds it: requests bounded in
size and time, connections in number, scrapes made one at a time. Plain
HTTP: bind it where your monitoring reaches, not the world.
"""

from __future__ import annotations

import logging
import platform
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .errors import LeaseDeniedError, UnknownLeaseError
from .grantor.hooks import HookFanout, LeaseHooks
from .grantor.landlord import Landlord
from .replication.replicated import ReplicatedLandlord
from .transport.httpserver import Answer, HttpLimits, HttpServer, Page, Request, text_answer

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from .grantor.resource import LeasedResource

__all__ = ["Metrics", "LeaseMetrics", "CountedFence", "MetricsEndpoint", "serve_metrics", "find_metrics",
           "require_prometheus", "prometheus_available", "check_metrics_port", "HttpLimits", "RENEWAL_BUCKETS",
           "DENIAL_REASONS", "FENCE_OUTCOMES", "INSTALL_METRICS", "INSTALL_EXTRA"]

log = logging.getLogger(__name__)

M = TypeVar("M", bound="Metrics")

# seconds: a renewal is answered in tens of microseconds in-process, a batch of 10,000 in tens of
# milliseconds, and one that waits on a store's lock may take a second
RENEWAL_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
DENIAL_REASONS = ("denied", "unknown", "other")
FENCE_OUTCOMES = ("accepted", "refused", "invalid")  #: what landlord_fence_checks_total counts, by outcome
INSTALL_EXTRA = "pip install 'landlord[metrics]'"  #: what installs prometheus-client, as the hints say it
INSTALL_METRICS = f"landlord's metrics need prometheus-client: {INSTALL_EXTRA}"


def require_prometheus() -> None:
    """Check that prometheus-client can be imported.

    Raises:
        ImportError: it is not installed; the message says how to install it (:data:`INSTALL_METRICS`).
    """
    try:
        import prometheus_client  # noqa: F401
    except ImportError as exc:
        raise ImportError(INSTALL_METRICS) from exc


def prometheus_available() -> bool:
    """Whether prometheus-client can be imported (and so :class:`Metrics` made)."""
    try:
        require_prometheus()
    except ImportError:
        return False
    return True


def _version() -> str:
    """landlord's version, as ``landlord --version`` says it."""
    # read from the package, which has run before any of its modules, not imported: the package's
    # facade sits above this module (it loads it lazily)
    return str(getattr(sys.modules[__name__.rpartition(".")[0]], "__version__", "unknown"))


class CountedFence(Protocol):
    """What :meth:`Metrics.count_fence` reads: a :class:`~landlord.Fence`, a :class:`~landlord.RemoteFence`,
    or a resource's own fence (``examples/fenced_sqlite``)."""

    def counts(self) -> Mapping[str, int]:
        """Checks so far by outcome (``accepted``, ``refused``; ``invalid`` where calls may carry no token)."""


class Metrics:
    """A Prometheus registry of its own, served by :func:`serve_metrics`: what its server refused
    (:meth:`count_refusals`) and its fences' checks (:meth:`count_fence`), read when scraped. A
    process that serves fences and no landlord serves one of these; a landlord's
    :class:`LeaseMetrics` is one too.

    Raises:
        ImportError: prometheus-client is not installed.
    """

    def __init__(self) -> None:
        require_prometheus()
        from prometheus_client import (
            CollectorRegistry,
            GCCollector,
            Info,
            PlatformCollector,
            ProcessCollector,
            make_wsgi_app,
        )

        self.registry: CollectorRegistry = CollectorRegistry()
        self._refusals: Callable[[], Mapping[str, int]] | None = None
        self._fences: dict[str, CountedFence] = {}
        self._fences_lock = threading.Lock()
        self.count_by_label("landlord_transport_refused", "Connections and messages the server refused and closed, "
                            "by the rule they broke (deadline, too large, serializer, connections, ...).", "rule",
                            self.refused)
        self.registry.register(_FenceCollector(self))
        # the process's own series, as every Prometheus client exports them: read when scraped
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        Info("landlord_build", "landlord's version, and Python's.", registry=self.registry).info(
            {"version": _version(), "python": platform.python_version()})
        self._app: Callable[[dict[str, str], Callable[..., Any]], Iterable[bytes]] = make_wsgi_app(self.registry)

    def count_refusals(self, refusals: Callable[[], Mapping[str, int]] | None) -> None:
        """Read, when scraped, what its server refused so far by rule (``None``: nothing), as
        ``landlord_transport_refused_total{rule}`` (see ``FrameServer.refusals`` in
        :mod:`landlord.transport.frameserver`). Read at scrape time only: a refusal costs the server nothing more."""
        self._refusals = refusals

    def count_by_label(self, name: str, documentation: str, label: str,
                       read: Callable[[], Mapping[str, int]]) -> None:
        """Serve ``name``'s counts, read when scraped (a count costs whoever keeps it nothing more), as a
        counter family with one label.

        Args:
            name: the family's name (``_total`` is added).
            documentation: its help text.
            label: the one label's name.
            read: the counts now, by the label's value.
        """
        self.registry.register(_CountsCollector(name, documentation, label, read))

    def refused(self) -> dict[str, int]:
        """What its server has refused so far, by rule (empty when not counting)."""
        reading = self._refusals
        return dict(reading()) if reading is not None else {}

    def count_fence(self: M, fence: CountedFence, name: str = "fence") -> M:
        """Read ``fence``'s checks when scraped, as ``landlord_fence_checks_total{fence=name, outcome}``
        (a check costs the fence nothing more); return these metrics.

        Raises:
            TypeError: ``fence`` has no ``counts()``, or ``name`` is not a str.
            ValueError: ``name`` is empty, or counts another fence already.
        """
        if not callable(getattr(fence, "counts", None)):
            raise TypeError(f"a fence to count has counts(), got {type(fence).__name__}")
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        if not name:
            raise ValueError("name is empty")
        with self._fences_lock:
            if self._fences.get(name, fence) is not fence:
                raise ValueError(f"these metrics count another fence named {name!r}")
            self._fences[name] = fence
        return self

    def fence_counts(self) -> dict[str, dict[str, int]]:
        """Each fence counted, by name: its checks by outcome, as read now."""
        with self._fences_lock:
            fences = dict(self._fences)
        return {name: dict(fence.counts()) for name, fence in sorted(fences.items())}

    def answering(self) -> bool:
        """Whether what these metrics watch answers (``/readyz`` asks): here, always."""
        return True

    def exposition(self) -> bytes:
        """The metrics in the Prometheus text format, as ``/metrics`` answers a scraper that asks for nothing else."""
        from prometheus_client import generate_latest

        return generate_latest(self.registry)

    def scrape(self, request: Request) -> Answer:
        """``/metrics``' answer to ``request``, as prometheus-client's own WSGI app makes it: the format the
        ``Accept`` header asks for (the text format, or OpenMetrics), gzipped if ``Accept-Encoding`` allows,
        only the series the query's ``name[]`` names if it names any."""
        environ = {"REQUEST_METHOD": "GET", "PATH_INFO": request.path, "QUERY_STRING": request.query,
                   "HTTP_ACCEPT": request.headers.get("accept", ""),
                   "HTTP_ACCEPT_ENCODING": request.headers.get("accept-encoding", "")}
        started: list[tuple[str, list[tuple[str, str]]]] = []

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
            started.append((status, headers))

        body = b"".join(self._app(environ, start_response))
        status, headers = started[0]
        return Answer(int(status.split(" ", 1)[0]), tuple(headers), body)


class LeaseMetrics(Metrics, LeaseHooks):
    """A landlord's counters, gauge and renewal latency in a Prometheus registry of their own.

    Give it to a landlord as its hooks (``Landlord(hooks=metrics)``) or let
    :meth:`attach` add it; :meth:`attach` also makes it read that landlord's
    lease count when scraped and whether it answers (for ``/readyz``). One
    LeaseMetrics counts one landlord (or one replica, across its terms).

    Args:
        buckets: the renewal latency histogram's upper bounds, in seconds.

    Raises:
        ImportError: prometheus-client is not installed.
        ValueError: ``buckets`` not increasing.
    """

    def __init__(self, *, buckets: Sequence[float] = RENEWAL_BUCKETS) -> None:
        super().__init__()
        from prometheus_client import Counter, Gauge, Histogram

        registry = self.registry
        self._granted = Counter("landlord_leases_granted", "Leases granted.", registry=registry)
        self._renewed = Counter("landlord_leases_renewed", "Renewals granted, each lease of a batch counted.",
                                registry=registry)
        denied = Counter("landlord_leases_denied",
                         "Grants and renewals refused: denied (by the policy, or revoked), unknown (no such "
                         "lease, or it ended), other.", ["reason"], registry=registry)
        self._denied = {reason: denied.labels(reason) for reason in DENIAL_REASONS}  # children made once
        self._cancelled = Counter("landlord_leases_cancelled", "Leases cancelled by their holders.",
                                  registry=registry)
        self._expired = Counter("landlord_leases_expired", "Leases that ran out (and their grace) and were freed.",
                                registry=registry)
        self._revoked = Counter("landlord_leases_revoked", "Leases the landlord ended before their term.",
                                registry=registry)
        active = Gauge("landlord_leases_active", "Leases held now (in their grace, or run out but not yet "
                       "freed, among them).", registry=registry)
        active.set_function(self._held)
        self._latency = Histogram("landlord_renewal_duration_seconds",
                                  "Seconds the landlord took to answer one renewal call (renew, or a whole renew_all).",
                                  buckets=list(buckets), registry=registry)
        self._names = {what: Counter(f"landlord_names_{what}", help, registry=registry) for what, help in (
            ("acquired", "Grants of a name (a lock, a semaphore's place), at once or after waiting."),
            ("waits", "Requests for a name that had to wait."),
            ("handed_over", "Grants of a name to a waiter whose turn came."),
            ("refused", "Requests for a name refused: held and no wait, too many names or waiters, the policy."),
            ("wait_timeouts", "Waits for a name that timed out."))}
        self._lock = threading.Lock()
        self._watched: Landlord | ReplicatedLandlord | None = None
        # the landlord last attached (a replica's: its last term's), not kept alive by these metrics
        self._latest: weakref.ref[Landlord] | None = None
        self.count_by_label("landlord_limits_refused", "Calls refused by a per-client limit (what one client may "
                            "hold, or how large a registration may be), by limit.", "limit", self.limit_refusals)

    # -- attaching --------------------------------------------------------------------------------

    def attach(self, landlord: Landlord | ReplicatedLandlord) -> LeaseMetrics:
        """Count ``landlord``'s leases (adding these hooks to it, unless it was made with them), read its
        lease count when scraped and whether it answers; return this LeaseMetrics. Again with the same
        landlord: nothing more is done.

        A replica (:class:`~landlord.ReplicatedLandlord`) is counted across its terms: each term's landlord
        is given these hooks as it is made. Attach it before it starts (:func:`~landlord.serve_replica`
        starts it once served).

        Raises:
            TypeError: ``landlord`` is neither a Landlord nor a ReplicatedLandlord.
            ValueError: this LeaseMetrics counts another landlord already.
            RuntimeError: ``landlord`` is a replica that has started.
        """
        with self._lock:
            if self._watched is landlord:
                return self
            if self._watched is not None:
                raise ValueError(f"this LeaseMetrics counts {self._watched!r:.80} already: make one per landlord")
            if isinstance(landlord, ReplicatedLandlord):
                if landlord.election is not None:
                    raise RuntimeError("attach metrics to a replica before it starts: its term would go uncounted")
                landlord.on_term(self._hook)
            elif isinstance(landlord, Landlord):
                self._hook(landlord)
            else:
                raise TypeError(f"expected a Landlord or ReplicatedLandlord, got {type(landlord).__name__}")
            self._watched = landlord
        return self

    @property
    def landlord(self) -> Landlord | ReplicatedLandlord | None:
        """The landlord (or replica) attached, if any."""
        return self._watched

    def answering(self) -> bool:
        """Whether the landlord attached answers leases: a replica only while it leads; a plain landlord
        (or none attached) always. ``/readyz`` asks this (and whether the landlord is served)."""
        watched = self._watched
        return watched.leading if isinstance(watched, ReplicatedLandlord) else True

    def landlord_attached(self, landlord: Landlord) -> None:
        """Called with each landlord these hooks are added to (each term's, for a replica), before it
        answers anything: a subclass's place to count more of it (the lookup service's event mail)."""

    def _hook(self, landlord: Landlord) -> None:
        if not any(told is self for told in _told(landlord.manager.hooks)):
            landlord.manager.add_hooks(self)
        self._latest = weakref.ref(landlord)
        self.landlord_attached(landlord)

    def limit_refusals(self) -> dict[str, int]:
        """What the landlord attached refused so far by its per-client limits, by limit (empty if it has
        none: only landlords with a ``limit_refusals()``, such as the lookup and the renewal service, do;
        a replica's, of its last term)."""
        reading = getattr(self.latest_landlord(), "limit_refusals", None)
        return dict(reading()) if callable(reading) else {}

    def latest_landlord(self) -> Landlord | None:
        """The landlord these hooks were last added to (a replica's: its last term's), if it is still
        alive: these metrics do not keep an ended term's landlord alive."""
        return self._latest() if self._latest is not None else None

    def _held(self) -> float:
        watched = self._watched
        manager = watched.manager if watched is not None else None
        return float(manager.held_count()) if manager is not None else 0.0

    # -- the hooks: one inc per call, whatever the batch's size -------------------------------------

    def granted(self, leased: LeasedResource) -> None:
        self._granted.inc()

    def renewed(self, leased: Sequence[LeasedResource]) -> None:
        self._renewed.inc(len(leased))

    def denied(self, cookie: str | None, error: Exception) -> None:
        if isinstance(error, LeaseDeniedError):
            self._denied["denied"].inc()
        elif isinstance(error, UnknownLeaseError):
            self._denied["unknown"].inc()
        else:
            self._denied["other"].inc()

    def cancelled(self, leased: LeasedResource) -> None:
        self._cancelled.inc()

    def expired(self, leased: Sequence[LeasedResource]) -> None:
        self._expired.inc(len(leased))

    def revoked(self, leased: LeasedResource, reason: str) -> None:
        self._revoked.inc()

    def renewals_served(self, count: int, seconds: float) -> None:
        self._latency.observe(seconds)

    def name_acquired(self, name: str, token: int, waited: bool) -> None:
        self._names["acquired"].inc()
        if waited:
            self._names["handed_over"].inc()

    def name_queued(self, name: str) -> None:
        self._names["waits"].inc()

    def name_refused(self, name: str, error: Exception) -> None:
        self._names["refused"].inc()

    def name_timed_out(self, name: str) -> None:
        self._names["wait_timeouts"].inc()

    def __repr__(self) -> str:
        return f"LeaseMetrics(landlord={self._watched!r:.80})"


class _CountsCollector:
    """What :meth:`Metrics.count_by_label` serves: a counter family with one label, ``read()`` when scraped."""

    def __init__(self, name: str, documentation: str, label: str, read: Callable[[], Mapping[str, int]]) -> None:
        self._name, self._documentation, self._label, self._read = name, documentation, label, read

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily

        family = CounterMetricFamily(self._name, self._documentation, labels=[self._label])
        for value, count in sorted(self._read().items()):
            family.add_metric([value], count)
        yield family

    def describe(self) -> list[Any]:
        return []  # read when scraped: nothing to check at registration


class _FenceCollector:
    """``landlord_fence_checks_total{fence, outcome}``, read from the fences when scraped."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily

        family = CounterMetricFamily("landlord_fence_checks", "Fencing tokens checked by a fence, by outcome: "
                                     "accepted, refused (stale: a lost holder's write), invalid (no token).",
                                     labels=["fence", "outcome"])
        for name, counts in self._metrics.fence_counts().items():
            for outcome in FENCE_OUTCOMES:
                if outcome in counts:
                    family.add_metric([name, outcome], counts[outcome])
        yield family

    def describe(self) -> list[Any]:
        return []  # read when scraped: nothing to check at registration


def find_metrics(landlord: Landlord) -> LeaseMetrics | None:
    """The LeaseMetrics among ``landlord``'s hooks that counts it (or counts none yet), if any: what
    serving it again with metrics reuses, so that its counts go on."""
    for told in _told(landlord.manager.hooks):
        if isinstance(told, LeaseMetrics) and told.landlord in (None, landlord):
            return told
    return None


def _told(hooks: LeaseHooks | None) -> Iterator[LeaseHooks]:
    """Every observer ``hooks`` tells, fanouts opened."""
    if isinstance(hooks, HookFanout):
        for each in hooks.hooks:
            yield from _told(each)
    elif hooks is not None:
        yield hooks


# -- the endpoint ---------------------------------------------------------------------------------


class MetricsEndpoint:
    """An HTTP server answering ``/metrics``, ``/healthz`` and ``/readyz`` on a thread of its own
    (see :func:`serve_metrics`). Close it to stop it."""

    def __init__(self, metrics: Metrics | None, host: str, port: int, is_ready: Callable[[], bool],
                 limits: HttpLimits | None = None) -> None:
        pages: dict[str, Page] = {"/healthz": lambda request: text_answer(200, "ok"),
                                  "/readyz": lambda request: _readiness(is_ready)}
        slow_pages: dict[str, Page] = {}
        if metrics is None:
            pages["/metrics"] = lambda request: text_answer(501, f"no metrics here: {INSTALL_METRICS}")
        else:
            slow_pages["/metrics"] = metrics.scrape
        self.metrics = metrics
        self._server = HttpServer(host, port, pages=pages, slow_pages=slow_pages, limits=limits, name="metrics")
        self.host: str = self._server.host
        self.port: int = self._server.port

    @property
    def url(self) -> str:
        """Where the metrics are: ``http://host:port/metrics``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def refused(self) -> dict[str, int]:
        """HTTP connections it closed or refused so far, by rule (see :meth:`HttpServer.refused`)."""
        return self._server.refused()

    def close(self) -> None:
        """Stop answering and free the port. Idempotent."""
        self._server.close()

    def __enter__(self) -> MetricsEndpoint:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MetricsEndpoint({self.url!r})"


def serve_metrics(metrics: Metrics | None, host: str = "127.0.0.1", port: int = 0, *,
                  is_ready: Callable[[], bool] | None = None, limits: HttpLimits | None = None) -> MetricsEndpoint:
    """Answer HTTP at ``host:port`` from now until the endpoint is closed, on a thread of its own:

    - ``GET /metrics``: ``metrics`` through prometheus-client's own exposition (:meth:`Metrics.scrape`:
      the text format, or OpenMetrics when the scraper asks for it; gzipped when it accepts gzip);
      without ``metrics`` (prometheus-client is not installed), 501 and a line saying how to install it;
    - ``GET /healthz``: 200 ``ok`` (the process serves);
    - ``GET /readyz``: 200 ``ready`` while ``is_ready()`` is true, else 503 ``not ready``;
    - ``HEAD`` of each the same without the body; any other path 404, another method 405, a malformed
      request 400. No client holds it: requests are bounded in size and time, connections in number,
      and scrapes made on a worker thread one at a time (see :mod:`landlord.transport.httpserver`).

    Args:
        metrics: what ``/metrics`` shows (``None``: health checks only).
        host: the address to listen on (``0.0.0.0``, ``::`` or ``""``: every interface).
        port: the port (0: any free one; the endpoint's ``port`` says which).
        is_ready: what ``/readyz`` asks, on the server's thread: it must be quick (default:
            ``metrics.answering``; without metrics, always ready).
        limits: what one HTTP client may take (default: :class:`HttpLimits`' defaults).

    Raises:
        TypeError: ``metrics`` is neither :class:`Metrics` (a :class:`LeaseMetrics`, say) nor ``None``.
        ValueError: ``port`` is not 0 to 65535.
        OSError: the address is in use or cannot be bound.
    """
    if metrics is not None and not isinstance(metrics, Metrics):
        raise TypeError(f"expected Metrics (a LeaseMetrics, say) or None, got {type(metrics).__name__}")
    check_metrics_port(port, name="port")
    ready = is_ready if is_ready is not None else metrics.answering if metrics is not None else _always
    return MetricsEndpoint(metrics, host, port, ready, limits)


def check_metrics_port(port: object, *, name: str = "metrics_port") -> int:
    """``port`` checked as a port to serve metrics at (0: any free one).

    Raises:
        ValueError: not an int of 0 to 65535 (``name`` says which option).
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < 65536:
        raise ValueError(f"{name} must be 0 to 65535, got {port!r:.40}")
    return port


def _readiness(is_ready: Callable[[], bool]) -> Answer:
    return text_answer(200, "ready") if is_ready() else text_answer(503, "not ready")


def _always() -> bool:
    return True
