"""Metrics of a landlord (landlord.metrics): each change counted once (fake clock), the leases held read
when scraped, one registry per LeaseMetrics with the process's series and the build's, the endpoint's
pages and health checks (OpenMetrics and gzip when asked, through prometheus-client's own exposition;
health checks alone without it), a replica ready only while it leads (real etcd), a landlord served with
metrics in its own process, scraped over HTTP, and the renewal service served without prometheus-client.
"""

from __future__ import annotations

import contextlib
import gzip
import logging
import math
import platform
import re
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping

import prometheus_client
import Pyro5.api
import pytest
from conftest import ChildProcess, Spawner, free_port
from etcd_fixtures import FAILOVER, ReplicaGroup, cluster, etcd_cluster  # noqa: F401
from prometheus_client.exposition import choose_encoder
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families

import landlord as landlord_package
from landlord import (
    FOREVER,
    FakeClock,
    Fence,
    Landlord,
    LandlordLease,
    LeaseDeniedError,
    LeasedResource,
    LeaseDurationPolicy,
    RemoteFence,
    ReplicatedLandlord,
    StaleTokenError,
    serve_landlord,
)
from landlord.grantor.hooks import LeaseHooks
from landlord.metrics import (
    DENIAL_REASONS,
    INSTALL_METRICS,
    HttpLimits,
    LeaseMetrics,
    Metrics,
    find_metrics,
    prometheus_available,
    serve_metrics,
)
from landlord.serving import serve_object
from landlord.testing import NamesHeard, Recorder
from landlord.testing.etcd import EtcdCluster

COUNTERS = ("granted", "renewed", "cancelled", "expired", "revoked")
NAME_COUNTERS = ("acquired", "waits", "handed_over", "refused", "wait_timeouts")
UNKNOWN = "x" * 22  # a well-formed cookie no lease has
METRICS_LINE = r"landlord metrics at (?P<url>http://\S+/metrics)"
HTTP_TIMEOUT = 10.0


def counts(metrics: LeaseMetrics) -> dict[str, float | None]:
    """Every counter of ``metrics``, the denials by reason (``denied.<reason>``)."""
    found = {name: metrics.registry.get_sample_value(f"landlord_leases_{name}_total") for name in COUNTERS}
    for reason in DENIAL_REASONS:
        found[f"denied.{reason}"] = metrics.registry.get_sample_value("landlord_leases_denied_total",
                                                                      {"reason": reason})
    return found


def expect(**changed: float) -> dict[str, float | None]:
    """What :func:`counts` should say: ``changed`` (``denied_unknown`` for ``denied.unknown``), the rest 0."""
    every = dict.fromkeys([*COUNTERS, *(f"denied.{reason}" for reason in DENIAL_REASONS)], 0.0)
    every.update({name.replace("denied_", "denied."): float(value) for name, value in changed.items()})
    return every  # type: ignore[return-value]


def active(metrics: LeaseMetrics) -> float | None:
    return metrics.registry.get_sample_value("landlord_leases_active")


def renewal_calls(metrics: LeaseMetrics) -> float | None:
    return metrics.registry.get_sample_value("landlord_renewal_duration_seconds_count")


# -- counting, on a fake clock --------------------------------------------------------------------


def test_each_change_is_counted_once(clock: FakeClock) -> None:
    metrics = LeaseMetrics()
    landlord = Landlord(policy=LeaseDurationPolicy(maximum=10, lifetime=15), clock=clock, reaper="lazy")
    metrics.attach(landlord)
    a, b, c, d = (landlord.new_lease(name, 10) for name in "abcd")
    assert counts(metrics) == expect(granted=4)
    clock.advance(5)
    landlord.renew_all([a.cookie, b.cookie, UNKNOWN], [5, 5, 5])  # one batch: two renewed, one unknown
    assert counts(metrics) == expect(granted=4, renewed=2, denied_unknown=1)
    clock.advance(4)
    assert landlord.renew(a.cookie, 10) == 6  # up to its lifetime cap
    with pytest.raises(LeaseDeniedError):
        landlord.renew(a.cookie, 10)  # past it
    landlord.cancel(b.cookie)
    landlord.revoke(d.cookie, "maintenance")
    with pytest.raises(LeaseDeniedError):
        landlord.renew(d.cookie, 5)  # revoked: denied with the reason
    assert counts(metrics) == expect(granted=4, renewed=3, denied_unknown=1, denied_denied=2, cancelled=1,
                                     revoked=1)
    clock.advance(6)
    assert len(landlord) == 0  # the lazy reaper frees a and c now
    assert counts(metrics) == expect(granted=4, renewed=3, denied_unknown=1, denied_denied=2, cancelled=1,
                                     revoked=1, expired=2)
    assert renewal_calls(metrics) == 4  # a call each, whatever its size: the batch, two renews, the revoked one


def test_a_refused_grant_and_a_failing_policy_are_denials(clock: FakeClock) -> None:
    class Fussy(LeaseDurationPolicy):
        def lease_for(self, resource: LeasedResource, requested: float) -> object:  # type: ignore[override]
            if resource.resource == "refused":
                raise LeaseDeniedError("full")
            return super().lease_for(resource, requested)

        def renew(self, resource: LeasedResource, requested: float) -> float:
            raise RuntimeError("the quota service is down")

    metrics = LeaseMetrics()
    landlord = metrics.attach(Landlord(policy=Fussy(), clock=clock, reaper="lazy")).landlord
    assert isinstance(landlord, Landlord)
    with pytest.raises(LeaseDeniedError):
        landlord.new_lease("refused", 10)
    lease = landlord.new_lease("fine", 10)
    with pytest.raises(RuntimeError):
        landlord.renew(lease.cookie, 10)
    assert counts(metrics) == expect(granted=1, denied_denied=1, denied_other=1)


def test_the_sleeper_reaper_counts_what_it_frees(clock: FakeClock) -> None:
    metrics = LeaseMetrics()
    landlord = Landlord(clock=clock, reaper="sleeper", hooks=metrics)  # made with the hooks, then attached
    metrics.attach(landlord)
    try:
        landlord.new_lease("a", 10)
        landlord.new_lease("b", 10)
        clock.wait_for_sleeper(10)
        clock.advance(10)
        clock.wait_for_sleeper(math.inf)  # asleep again with nothing held: it has freed and told
        assert counts(metrics) == expect(granted=2, expired=2)  # counted once, not once per attach
    finally:
        landlord.close()


def test_leases_active_is_read_when_scraped(clock: FakeClock) -> None:
    metrics = LeaseMetrics()
    assert active(metrics) == 0  # nothing attached yet
    landlord = Landlord(clock=clock, reaper="lazy")
    metrics.attach(landlord)
    leases = [landlord.new_lease(n, 10) for n in range(3)]
    assert active(metrics) == 3
    landlord.cancel(leases[0].cookie)
    assert active(metrics) == 2
    clock.advance(10)
    assert active(metrics) == 2  # run out but not yet freed: still held (a scrape wakes no lazy reaper)
    assert len(landlord) == 0
    assert active(metrics) == 0


def test_renewal_latency_is_one_observation_per_call(clock: FakeClock) -> None:
    metrics = LeaseMetrics()
    landlord = metrics.attach(Landlord(clock=clock, reaper="lazy")).landlord
    assert isinstance(landlord, Landlord)
    leases = [landlord.new_lease(n, 10) for n in range(50)]
    landlord.renew_all([lease.cookie for lease in leases], [10] * 50)
    landlord.renew(leases[0].cookie, 10)
    sample = metrics.registry.get_sample_value
    assert renewal_calls(metrics) == 2
    assert sample("landlord_renewal_duration_seconds_bucket", {"le": "+Inf"}) == 2
    assert 0 < (sample("landlord_renewal_duration_seconds_sum") or 0) < 5
    assert sample("landlord_renewal_duration_seconds_bucket", {"le": "0.0001"}) is not None  # sub-millisecond


def test_other_hooks_are_still_told(clock: FakeClock) -> None:
    class Granted(LeaseHooks):
        def __init__(self) -> None:
            self.told: list[object] = []

        def granted(self, leased: LeasedResource) -> None:
            self.told.append(leased.resource)

    first = Granted()
    landlord = Landlord(clock=clock, reaper="lazy", hooks=first)
    metrics = LeaseMetrics().attach(landlord)
    landlord.new_lease("a", 10)
    assert first.told == ["a"]
    assert counts(metrics)["granted"] == 1
    assert find_metrics(landlord) is metrics


def test_two_landlords_in_one_process_count_apart(clock: FakeClock) -> None:
    one, two = LeaseMetrics(), LeaseMetrics()
    first = one.attach(Landlord(clock=clock, reaper="lazy")).landlord
    second = two.attach(Landlord(clock=clock, reaper="lazy")).landlord
    assert isinstance(first, Landlord) and isinstance(second, Landlord)
    first.new_lease("a", 10)
    second.new_lease("b", 10)
    second.new_lease("c", 10)
    assert (counts(one)["granted"], counts(two)["granted"]) == (1, 2)
    assert (active(one), active(two)) == (1, 2)
    global_names = {metric.name for metric in prometheus_client.REGISTRY.collect()}
    assert not [name for name in global_names if name.startswith("landlord_")]  # never the global registry


def test_the_exposition_names_and_types() -> None:
    families = {family.name: family.type
                for family in text_string_to_metric_families(LeaseMetrics().exposition().decode())}
    expected = {f"landlord_leases_{name}": "counter" for name in (*COUNTERS, "denied")}
    expected |= {"landlord_leases_active": "gauge", "landlord_renewal_duration_seconds": "histogram",
                 "landlord_transport_refused": "counter", "landlord_fence_checks": "counter",
                 "landlord_limits_refused": "counter", "landlord_build_info": "gauge"}
    expected |= {f"landlord_names_{name}": "counter" for name in NAME_COUNTERS}
    assert {name: kind for name, kind in families.items()
            if name.startswith("landlord_") and not name.endswith("_created")} == expected
    text = LeaseMetrics().exposition().decode()
    for line in ("landlord_leases_granted_total 0.0", 'landlord_leases_denied_total{reason="unknown"} 0.0',
                 "# TYPE landlord_leases_active gauge",
                 'landlord_renewal_duration_seconds_bucket{le="0.00025"} 0.0'):
        assert line in text.splitlines()


def test_every_registry_has_the_process_platform_gc_and_build_series(clock: FakeClock) -> None:
    for metrics in (Metrics(), LeaseMetrics()):
        sample = metrics.registry.get_sample_value
        assert sample("landlord_build_info", {"version": landlord_package.__version__,
                                              "python": platform.python_version()}) == 1
        assert (sample("process_open_fds") or 0) > 0  # this process's own, read when scraped
        assert (sample("process_resident_memory_bytes") or 0) > 0
        assert sample("python_info", {"implementation": platform.python_implementation(),
                                      "major": str(sys.version_info.major), "minor": str(sys.version_info.minor),
                                      "patchlevel": str(sys.version_info.micro),
                                      "version": platform.python_version()}) == 1
        assert sample("python_gc_collections_total", {"generation": "0"}) is not None
    global_names = {metric.name for metric in prometheus_client.REGISTRY.collect()}
    assert "landlord_build" not in global_names  # registered on our registries alone


def name_counts(metrics: LeaseMetrics) -> dict[str, float | None]:
    return {name: metrics.registry.get_sample_value(f"landlord_names_{name}_total") for name in NAME_COUNTERS}


def test_named_leases_are_counted_acquired_waits_handed_over_refused_and_timed_out(clock: FakeClock) -> None:
    metrics = LeaseMetrics()
    landlord = metrics.attach(Landlord(clock=clock, reaper="lazy")).landlord
    assert isinstance(landlord, Landlord)
    heard = NamesHeard()
    first, token = landlord.acquire("orders", 10)
    assert token is not None
    with pytest.raises(LeaseDeniedError):
        landlord.acquire("orders", 10)  # held, and the caller would not wait
    second, queued = landlord.acquire("orders", 10, wait=FOREVER, listener=heard)
    impatient, also_queued = landlord.acquire("orders", 10, wait=2.0, listener=heard)
    assert queued is None and also_queued is None
    assert name_counts(metrics) == {"acquired": 1, "waits": 2, "handed_over": 0, "refused": 1, "wait_timeouts": 0}
    clock.advance(3)  # the impatient waiter's wait times out: it is revoked, and told
    assert heard.told.wait_for(1)[0][:2] == ("revoked", impatient.cookie)
    landlord.cancel(first.cookie)  # released: the name goes to the next waiter at once
    assert heard.told.wait_for(2)[1] == ("granted", second.cookie, token + 1)
    assert name_counts(metrics) == {"acquired": 2, "waits": 2, "handed_over": 1, "refused": 1, "wait_timeouts": 1}
    assert counts(metrics)["granted"] == 3  # named leases are leases, counted as such too (not the refused one)


def test_a_semaphores_places_are_counted_each_and_a_policy_refusal_is_a_refused_name(clock: FakeClock) -> None:
    metrics = LeaseMetrics()
    landlord = metrics.attach(Landlord(policy=LeaseDurationPolicy(maximum=10), clock=clock, reaper="lazy")).landlord
    assert isinstance(landlord, Landlord)
    for _ in range(3):
        landlord.acquire("pool", 10, limit=3)
    with pytest.raises(LeaseDeniedError, match="held"):
        landlord.acquire("pool", 10, limit=3)
    with pytest.raises(ValueError):
        landlord.acquire("pool", 10, limit=2)  # not a refusal: a request at odds with the name
    assert name_counts(metrics) == {"acquired": 3, "waits": 0, "handed_over": 0, "refused": 1, "wait_timeouts": 0}


def test_fences_are_counted_by_name_and_outcome_when_scraped() -> None:
    orders, remote = Fence(), RemoteFence(Fence(highest=5))
    metrics = Metrics().count_fence(orders, "orders").count_fence(remote, "ledger")
    orders.check(2)
    orders.check(3)
    for stale in (1, 2):
        with pytest.raises(StaleTokenError):
            orders.check(stale)
    with pytest.raises(StaleTokenError):
        remote.check(4)
    with pytest.raises(TypeError):
        remote.check("5")  # type: ignore[arg-type]
    assert metrics.fence_counts() == {"ledger": {"accepted": 0, "refused": 1, "invalid": 1},
                                      "orders": {"accepted": 2, "refused": 2}}

    def checks(fence: str, outcome: str) -> float | None:
        return metrics.registry.get_sample_value("landlord_fence_checks_total", {"fence": fence, "outcome": outcome})

    assert (checks("orders", "accepted"), checks("orders", "refused"), checks("orders", "invalid")) == (2, 2, None)
    assert (checks("ledger", "refused"), checks("ledger", "invalid")) == (1, 1)
    assert metrics.count_fence(orders, "orders") is metrics  # again: nothing more
    with pytest.raises(ValueError, match="another fence"):
        metrics.count_fence(Fence(), "orders")
    with pytest.raises(TypeError, match="counts"):
        metrics.count_fence(object(), "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        metrics.count_fence(Fence(), "")
    lease_metrics = LeaseMetrics().count_fence(orders, "orders")  # beside a landlord's, in one registry
    assert isinstance(lease_metrics, LeaseMetrics) and "orders" in lease_metrics.fence_counts()


def test_a_served_fence_is_scraped_over_http_with_its_refusals() -> None:
    fence = Fence()
    metrics = Metrics().count_fence(fence, "orders")
    stop, ready = threading.Event(), Recorder[str]()
    port = free_port()
    thread = threading.Thread(target=serve_object, args=(RemoteFence(fence),),
                              kwargs={"object_id": "fence.orders", "stop": stop, "ready": ready, "announce": False,
                                      "metrics": metrics, "metrics_port": port})
    thread.start()
    try:
        [uri] = ready.wait_for(1)
        with Pyro5.api.Proxy(uri) as proxy:
            proxy.check(7)
            with pytest.raises(StaleTokenError):
                proxy.check(6)
        status, _, body = get(f"http://127.0.0.1:{port}/metrics")
        lines = body.splitlines()
        assert status == 200
        assert 'landlord_fence_checks_total{fence="orders",outcome="accepted"} 1.0' in lines
        assert 'landlord_fence_checks_total{fence="orders",outcome="refused"} 1.0' in lines
        assert not [line for line in lines if line.startswith("landlord_leases")]  # no landlord here
        assert get(f"http://127.0.0.1:{port}/readyz")[0] == 200
    finally:
        stop.set()
        thread.join(30)


def test_attach_refuses_what_it_cannot_count(clock: FakeClock) -> None:
    metrics = LeaseMetrics()
    landlord = Landlord(clock=clock, reaper="lazy")
    assert metrics.attach(landlord) is metrics
    assert metrics.attach(landlord) is metrics  # again: nothing more
    with pytest.raises(ValueError, match="one per landlord"):
        metrics.attach(Landlord(clock=clock, reaper="lazy"))
    with pytest.raises(TypeError):
        LeaseMetrics().attach("a landlord")  # type: ignore[arg-type]
    landlord.new_lease("a", 10)
    assert counts(metrics)["granted"] == 1


def test_serve_landlord_checks_its_metrics_options(clock: FakeClock) -> None:
    landlord = Landlord(clock=clock, reaper="lazy")
    with pytest.raises(ValueError, match="without metrics_port"):
        serve_landlord(landlord, metrics=LeaseMetrics())
    for bad in (-1, 65536, "9100", True):
        with pytest.raises(ValueError, match="metrics_port"):
            serve_landlord(landlord, metrics_port=bad)  # type: ignore[arg-type]


def test_landlord_imports_without_prometheus_client() -> None:
    script = """if True:
        import sys
        sys.modules["prometheus_client"] = None  # not installed: its import fails
        import landlord
        assert "landlord.metrics" not in sys.modules, "import landlord imported landlord.metrics"
        import lookup
        from landlord.metrics import LeaseMetrics
        try:
            LeaseMetrics()
        except ImportError as exc:
            print(exc)
        else:
            raise AssertionError("LeaseMetrics() without prometheus-client")
    """
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "landlord's metrics need prometheus-client: pip install 'landlord[metrics]'\n"


# -- the endpoint -------------------------------------------------------------------------------


def get(url: str, method: str = "GET") -> tuple[int, str, str]:
    """Status, content type and body of an HTTP request (an error status is an answer too)."""
    status, headers, body = request(url, method=method)
    return status, headers.get("Content-Type", ""), body.decode()


def request(url: str, method: str = "GET", headers: Mapping[str, str] | None = None
            ) -> tuple[int, Mapping[str, str], bytes]:
    """Status, headers and the raw body of an HTTP request (an error status is an answer too)."""
    asked = urllib.request.Request(url, method=method, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(asked, timeout=HTTP_TIMEOUT) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def base(url: str) -> str:
    return url.removesuffix("/metrics")


def raw_request(port: int, data: bytes) -> bytes:
    """Send ``data`` on a fresh connection; what comes back before the server closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=HTTP_TIMEOUT) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
        return answer


def test_the_endpoint_answers_each_page(clock: FakeClock) -> None:
    metrics = LeaseMetrics()
    landlord = metrics.attach(Landlord(clock=clock, reaper="lazy")).landlord
    assert isinstance(landlord, Landlord)
    landlord.new_lease("a", 10)
    ready = threading.Event()
    with serve_metrics(metrics, "127.0.0.1", 0, is_ready=ready.is_set) as endpoint:
        root = base(endpoint.url)
        status, kind, body = get(endpoint.url)
        assert (status, kind) == (200, choose_encoder("")[1])  # what prometheus-client answers a plain scraper
        assert "landlord_leases_granted_total 1.0" in body.splitlines()
        assert "landlord_leases_active 1.0" in body.splitlines()
        assert get(root + "/healthz") == (200, "text/plain; charset=utf-8", "ok\n")
        assert get(root + "/readyz")[::2] == (503, "not ready\n")
        ready.set()
        assert get(root + "/readyz")[::2] == (200, "ready\n")
        assert get(root + "/metrics?name[]=x")[0] == 200  # a query is ignored
        assert get(root + "/")[0] == 404
        assert get(root + "/metrics/x")[0] == 404
        assert get(endpoint.url, "HEAD")[::2] == (200, "")
        assert get(endpoint.url, "POST")[0] == 405
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", endpoint.port), timeout=HTTP_TIMEOUT).close()  # closed: port free


def test_no_request_stops_the_endpoint() -> None:
    with serve_metrics(LeaseMetrics(), "127.0.0.1", 0, limits=HttpLimits(head_bytes=4096)) as endpoint:
        assert raw_request(endpoint.port, b"\x00\xff\xfe garbage\r\n\r\n").startswith(b"HTTP/1.1 400 Bad Request")
        assert raw_request(endpoint.port, b"GET /metrics HTTP/1.1\r\n" + b"X: y\r\n" * 1000 + b"\r\n").startswith(
            b"HTTP/1.1 431 Request Header Fields Too Large")
        for hostile in (b"GET /metrics HTTP/1.1\r\nHost", b"GET /metr", b"", b"\r\n" * 1000, bytes(range(256)),
                        b"GET /" + b"x" * 70000 + b" HTTP/1.0\r\n\r\n"):
            raw_request(endpoint.port, hostile)  # whatever it answers, it answers the next one
        with socket.create_connection(("127.0.0.1", endpoint.port), timeout=HTTP_TIMEOUT):  # silent, held open
            assert get(base(endpoint.url) + "/healthz")[0] == 200  # others are answered meanwhile
        assert get(endpoint.url)[0] == 200
        assert endpoint.refused().keys() >= {"malformed", "too large", "cut off"}


def test_metrics_are_negotiated_as_prometheus_client_does_openmetrics_gzip_and_names(clock: FakeClock) -> None:
    metrics = LeaseMetrics()
    landlord = metrics.attach(Landlord(clock=clock, reaper="lazy")).landlord
    assert isinstance(landlord, Landlord)
    landlord.new_lease("a", 10)
    with serve_metrics(metrics) as endpoint:
        status, headers, body = request(endpoint.url, headers={
            "Accept": "application/openmetrics-text; version=1.0.0; charset=utf-8,text/plain;q=0.5",
            "Accept-Encoding": "gzip, deflate"})
        assert status == 200
        assert headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
        assert headers["Content-Encoding"] == "gzip"
        families = {family.name: family for family in openmetrics_families(gzip.decompress(body).decode())}
        assert families["landlord_leases_granted"].samples[0].value == 1
        assert families["landlord_build"].type == "info"
        assert families["process_open_fds"].samples[0].value > 0

        status, headers, body = request(endpoint.url)  # a scraper asking for nothing: plain text, not gzipped
        assert (status, headers["Content-Type"]) == (200, choose_encoder("")[1])
        assert "Content-Encoding" not in headers
        assert "landlord_leases_active 1.0" in body.decode().splitlines()

        body = request(endpoint.url + "?name[]=landlord_leases_active&name[]=landlord_build_info")[2]
        names = {family.name for family in text_string_to_metric_families(body.decode())}
        assert names == {"landlord_leases_active", "landlord_build_info"}


def test_without_metrics_the_endpoint_serves_health_checks_and_names_the_extra() -> None:
    ready = threading.Event()
    with serve_metrics(None, is_ready=ready.is_set) as endpoint:
        assert endpoint.metrics is None
        assert get(endpoint.url) == (501, "text/plain; charset=utf-8", f"no metrics here: {INSTALL_METRICS}\n")
        assert get(base(endpoint.url) + "/healthz")[::2] == (200, "ok\n")
        assert get(base(endpoint.url) + "/readyz")[::2] == (503, "not ready\n")
        ready.set()
        assert get(base(endpoint.url) + "/readyz")[::2] == (200, "ready\n")
    with serve_metrics(None) as endpoint:
        assert get(base(endpoint.url) + "/readyz")[0] == 200  # nothing to ask: ready
    with pytest.raises(TypeError, match="Metrics"):
        serve_metrics("metrics")  # type: ignore[arg-type]


def test_serve_landlord_serves_metrics_while_it_serves(clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="landlord.serving")
    landlord = Landlord(clock=clock, reaper="lazy")
    for served in (1, 2):  # served again: counted on in the same metrics
        stop, ready = threading.Event(), Recorder[str]()
        thread = threading.Thread(target=serve_landlord, args=(landlord,),
                                  kwargs={"stop": stop, "metrics_port": 0, "ready": ready, "announce": False})
        caplog.clear()
        thread.start()
        try:
            ready.wait_for(1)
            [url] = [match["url"] for record in caplog.records
                     if (match := re.search(METRICS_LINE, record.getMessage()))]
            assert get(base(url) + "/readyz")[0] == 200
            landlord.new_lease(served, 10)
            assert f"landlord_leases_granted_total {served:.1f}" in get(url)[2].splitlines()
            port = int(ready.items[0].rsplit(":", 1)[1])
            with socket.create_connection(("127.0.0.1", port), timeout=5) as garbage:
                garbage.sendall(b"GET / HTTP/1.1\r\n\r\n")  # refused by the guarded server, and counted
                assert garbage.recv(4096)  # its refusal, then the server closes
            assert 'landlord_transport_refused_total{rule="not pyro"} 1.0' in get(url)[2].splitlines()
        finally:
            stop.set()
            thread.join(10)
        assert not thread.is_alive()
        with pytest.raises(urllib.error.URLError):
            get(url)  # closed with the landlord's serving
    assert landlord.manager.hooks is not None
    assert [type(told) for told in landlord.manager.hooks.hooks] == [LeaseMetrics]  # one, reused


# -- a replica is ready only while it leads (real etcd) -------------------------------------------


def test_a_replica_is_ready_only_while_it_leads_and_counted_across_terms(cluster: EtcdCluster) -> None:
    every: dict[int, LeaseMetrics] = {}

    def make(client: object, name: str, uris: list[str]) -> ReplicatedLandlord:
        replica = ReplicatedLandlord(client, group=name, replicas=uris,  # type: ignore[arg-type]
                                     policy=LeaseDurationPolicy(maximum=60))
        every[id(replica)] = LeaseMetrics().attach(replica)
        return replica

    group = ReplicaGroup(cluster, make)
    with contextlib.ExitStack() as stack:
        stack.callback(group.close)
        group.start()
        with pytest.raises(RuntimeError, match="before it starts"):
            LeaseMetrics().attach(group.replicas[0])
        endpoints = {id(replica): stack.enter_context(serve_metrics(every[id(replica)])) for replica in group.replicas}

        def ready(replica: ReplicatedLandlord) -> int:
            return get(base(endpoints[id(replica)].url) + "/readyz")[0]

        leader = group.leader()
        lease = leader.new_lease("room", 30)
        assert ready(leader) == 200
        assert [ready(follower) for follower in group.followers(leader)] == [503, 503]
        assert (counts(every[id(leader)])["granted"], active(every[id(leader)])) == (1, 1)
        assert [active(every[id(follower)]) for follower in group.followers(leader)] == [0, 0]

        leader.close()  # resigns: another leads, loading the lease from etcd into a term of its own
        successor = group.leader(excluding=leader, timeout=FAILOVER)
        assert ready(leader) == 503
        assert ready(successor) == 200
        assert active(every[id(successor)]) == 1
        assert successor.renew(lease.cookie, 30) > 0
        assert counts(every[id(successor)]) == expect(renewed=1)  # its term's landlord is counted


# -- a served landlord in its own process, scraped over HTTP --------------------------------------


@pytest.fixture
def served(spawn: Spawner) -> Iterator[tuple[object, str, str]]:
    """A landlord with metrics in its own process: (the child, its URI, its metrics' URL)."""
    child = spawn("metrics_landlord.py")
    uri = child.read_uri()
    url = child.wait_for(METRICS_LINE)["url"]
    yield child, uri, url


def scrape(url: str) -> dict[str, float]:
    """Every sample of a scrape, by name and labels (``name{label="value"}``)."""
    status, _, body = get(url)
    assert status == 200
    return {sample.name + "".join(f'{{{key}="{value}"}}' for key, value in sorted(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(body) for sample in family.samples}


def test_a_served_landlord_is_scraped_over_http(served: tuple[object, str, str]) -> None:
    child, uri, url = served
    assert get(base(url) + "/healthz")[::2] == (200, "ok\n")
    assert get(base(url) + "/readyz")[::2] == (200, "ready\n")
    before = scrape(url)
    assert (before["landlord_leases_granted_total"], before["landlord_leases_active"]) == (0, 0)
    with Pyro5.api.Proxy(uri) as rooms:
        leases: list[LandlordLease] = [rooms.rent(f"room {n}", 60) for n in range(3)]
        rooms.renew_all([lease.cookie for lease in leases] + [UNKNOWN], [60] * 4)
    leases[0].renew(60)
    after = scrape(url)
    assert after["landlord_leases_granted_total"] == 3
    assert after["landlord_leases_active"] == 3
    assert after["landlord_leases_renewed_total"] == 4
    assert after['landlord_leases_denied_total{reason="unknown"}'] == 1
    assert after["landlord_renewal_duration_seconds_count"] == 2
    leases[1].cancel()
    assert scrape(url)["landlord_leases_cancelled_total"] == 1

    port = int(url.split(":")[2].split("/")[0])
    assert raw_request(port, b"\x16\x03\x01 not http\r\n\r\n").startswith(b"HTTP/1.1 400 ")  # TLS to a plain port
    raw_request(port, b"GET /metr")  # cut off
    assert scrape(url)["landlord_leases_active"] == 2  # still answering, and the landlord too
    assert leases[2].renew(60) > 0



# -- served without metrics of their own, or without prometheus-client ---------------------------------


@contextlib.contextmanager
def served_in_thread(serve: Callable[..., None], caplog: pytest.LogCaptureFixture, *args: object,
                     **options: object) -> Iterator[tuple[str, str]]:
    """``serve(*args, **options)`` on a thread for the block: its URI, and its metrics' URL as logged."""
    caplog.set_level(logging.INFO, logger="landlord.serving")
    caplog.clear()
    stop, ready = threading.Event(), Recorder[str]()
    thread = threading.Thread(target=serve, args=args,
                              kwargs={"stop": stop, "ready": ready, "announce": False, **options})
    thread.start()
    try:
        [uri] = ready.wait_for(1)
        [url] = [match["url"] for record in caplog.records
                 if (match := re.search(r"metrics at (?P<url>http://\S+/metrics)", record.getMessage()))]
        yield uri, url
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()


def refused_by_pyro_port(uri: str) -> None:
    """Send HTTP to a Pyro5 port: its guarded server refuses it (rule ``not pyro``) and closes."""
    with socket.create_connection(("127.0.0.1", int(uri.rsplit(":", 1)[1])), timeout=HTTP_TIMEOUT) as garbage:
        garbage.sendall(b"GET / HTTP/1.1\r\n\r\n")
        assert garbage.recv(4096)


def test_serve_object_with_a_metrics_port_and_no_metrics_serves_its_refusals_and_the_process(
        caplog: pytest.LogCaptureFixture) -> None:
    with served_in_thread(serve_object, caplog, RemoteFence(Fence()), object_id="fence.plain",
                          metrics_port=0) as (uri, url):
        refused_by_pyro_port(uri)
        samples = scrape(url)
        assert samples['landlord_transport_refused_total{rule="not pyro"}'] == 1
        assert samples["process_open_fds"] > 0
        assert get(base(url) + "/readyz")[0] == 200


def test_without_prometheus_client_a_landlord_is_served_with_health_checks_alone(
        clock: FakeClock, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # not installed: its import fails
    assert not prometheus_available()
    landlord = Landlord(clock=clock, reaper="lazy")
    with served_in_thread(serve_landlord, caplog, landlord, metrics_port=0) as (_, url):
        assert get(url) == (501, "text/plain; charset=utf-8", f"no metrics here: {INSTALL_METRICS}\n")
        assert get(base(url) + "/healthz")[::2] == (200, "ok\n")
        assert get(base(url) + "/readyz")[::2] == (200, "ready\n")
        warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
        assert warnings == [f"landlord: no /metrics ({INSTALL_METRICS}); /healthz and /readyz are served"]
        [line] = [record.getMessage() for record in caplog.records if " metrics at " in record.getMessage()]
        assert line.endswith("(health: /healthz, /readyz; /metrics needs prometheus-client: "
                             "pip install 'landlord[metrics]')")
    assert landlord.manager.hooks is None  # no metrics among its hooks


def test_the_renewal_service_without_prometheus_client_answers_health_checks_and_names_the_extra() -> None:
    script = """if True:
        import sys
        sys.modules["prometheus_client"] = None  # not installed: its import fails
        from landlord.__main__ import main
        sys.exit(main(sys.argv[1:]))
    """
    port, metrics_port = free_port(), free_port()
    with ChildProcess("-c", script, "renewal-service", "--port", str(port), "--metrics-port", str(metrics_port),
                      name="renewal service without prometheus-client") as service:
        url = service.wait_for(r"renewal service metrics at (?P<url>http://\S+/metrics)")["url"]
        assert url == f"http://127.0.0.1:{metrics_port}/metrics"
        assert get(base(url) + "/healthz")[::2] == (200, "ok\n")
        assert get(base(url) + "/readyz")[::2] == (200, "ready\n")
        status, _, body = get(url)
        assert (status, body) == (501, f"no metrics here: {INSTALL_METRICS}\n")
        assert len(service.matches(r"WARNING .*no /metrics \(landlord's metrics need prometheus-client")) == 1
        assert service.stop() == 0
