"""The lookup service's metrics (lookup.service.server.LookupMetrics): the registrations it holds and its
event mail counted (deliveries, failed attempts, listeners given up on), in-process and in ``python -m
lookup serve --metrics-port`` scraped over HTTP, the replica path (``--etcd``) too, ready only while it
leads; and both served without prometheus-client: health checks alone, the extra named.
"""

from __future__ import annotations

import contextlib
import gc
import platform
import threading
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Callable, Iterator

import Pyro5.api
import Pyro5.errors
import pytest
from conftest import ChildProcess, free_port
from etcd_fixtures import cluster, etcd_cluster, new_group  # noqa: F401
from lookup_processes import run_lookup, serve_lookup  # noqa: F401
from prometheus_client.parser import text_string_to_metric_families

import landlord
from landlord.metrics import INSTALL_METRICS
from landlord.testing import Recorder, ServingDaemon
from landlord.testing.etcd import EtcdCluster
from lookup import ALL_TRANSITIONS, LookupService, Name, ServiceEvent, ServiceItem, ServiceTemplate
from lookup.discovery.unicast import locate
from lookup.service.mailer import DeliveryObserver, EventMailer
from lookup.service.outbox import MailLimits
from lookup.service.server import LookupMetrics

METRICS_LINE = r"lookup service metrics at (?P<url>http://\S+/metrics)"
SERVICE_URI = "PYRO:quoter@127.0.0.1:9999"
DEAD_LISTENER = "PYRO:listener@127.0.0.1:{port}"
SETTLE = 15.0  # seconds a scraped counter may take to reach its value (after the event is received)
HTTP_TIMEOUT = 10.0


def quoter(name: str) -> ServiceItem:
    return ServiceItem(None, SERVICE_URI, ("example.Quoter",), (Name(name),))


class Listener(Recorder[ServiceEvent]):
    """A remote event listener: records the events it is sent."""

    @Pyro5.api.expose
    def notify(self, event: ServiceEvent) -> None:
        self.record(event)


class Tally(DeliveryObserver):
    def __init__(self) -> None:
        self.told: list[str] = []

    def delivered(self) -> None:
        self.told.append("delivered")

    def failed(self) -> None:
        self.told.append("failed")

    def gave_up(self) -> None:
        self.told.append("gave_up")


class Unreachable:
    def __init__(self) -> None:
        self.calls = 0

    def notify(self, event: ServiceEvent) -> None:
        self.calls += 1
        raise Pyro5.errors.CommunicationError("nobody there")


class Raising:
    def notify(self, event: ServiceEvent) -> None:
        raise RuntimeError("the listener's own bug")


def event(number: int) -> ServiceEvent:
    return ServiceEvent(1, number, None, "s", 2, None)


# -- the mailer's observer -------------------------------------------------------------------------


def test_the_mailer_tells_its_observer_each_outcome() -> None:
    tally, gone = Tally(), Recorder[object]()
    mailer = EventMailer(observer=tally, retry_delays=(0.0, 0.0), on_undeliverable=gone)
    try:
        mailer.post("reached", Listener(), event(1))
        mailer.post("raising", Raising(), event(1))  # reached: its own exception is its own
        assert mailer.wait_idle(10)
        assert tally.told == ["delivered", "delivered"]
        unreachable = Unreachable()
        mailer.post("unreachable", unreachable, event(1))
        assert gone.wait_for(1) == ["unreachable"]
        assert mailer.wait_idle(10)
        assert unreachable.calls == 3
        assert tally.told == ["delivered", "delivered", "failed", "failed", "failed", "gave_up"]
    finally:
        mailer.close()


def test_a_failing_observer_changes_no_delivery() -> None:
    class Broken(DeliveryObserver):
        def delivered(self) -> None:
            raise RuntimeError("metrics broke")

    listener = Listener()
    mailer = EventMailer(observer=Broken())
    try:
        for number in (1, 2):
            mailer.post("key", listener, event(number))
        assert [received.sequence_number for received in listener.wait_for(2)] == [1, 2]
    finally:
        mailer.close()


def test_lookup_metrics_count_a_services_registrations_and_mail() -> None:
    service = LookupService(reaper="lazy")
    metrics = LookupMetrics()
    sample = metrics.registry.get_sample_value
    assert (sample("lookup_registrations_active"), sample("lookup_event_registrations_active")) == (0, 0)
    metrics.attach(service)
    try:
        listener = Listener()
        service.notify(ServiceTemplate(), ALL_TRANSITIONS, listener, None, 60)
        registration = service.register(quoter("one"), 60)
        service.register(quoter("two"), 60)
        listener.wait_for(2)
        assert service.fanout.mailer.wait_idle(10)
        assert sample("lookup_event_deliveries_total") == 2
        assert sample("lookup_event_delivery_failures_total") == 0
        assert sample("landlord_leases_granted_total") == 3  # the event registration and the services'
        assert sample("landlord_leases_active") == 3
        assert (sample("lookup_registrations_active"), sample("lookup_event_registrations_active")) == (2, 1)
        service.cancel(registration.lease.cookie)
        assert sample("lookup_registrations_active") == 1  # read when scraped
    finally:
        service.close()


def test_lookup_metrics_keep_no_terms_service_alive() -> None:
    metrics = LookupMetrics()
    service = LookupService(reaper="lazy")
    metrics._hook(service)  # as each term's service of a replica is hooked (attach() keeps a plain one)
    assert metrics.limit_refusals()["registrations_per_client"] == 0
    service.close()
    gone = weakref.ref(service)
    del service
    gc.collect()
    assert gone() is None  # a follower holds no old term's registry for its metrics' sake
    assert metrics.limit_refusals() == {}
    assert metrics.registry.get_sample_value("lookup_registrations_active") == 0


def test_lookup_metrics_count_the_events_dropped_with_a_listener_given_up_on() -> None:
    service = LookupService(reaper="lazy", mail_limits=MailLimits(retry_delays=()))
    metrics = LookupMetrics().attach(service)
    try:
        service.notify(ServiceTemplate(), ALL_TRANSITIONS, f"PYRO:gone@127.0.0.1:{free_port()}", None, 60)
        service.register(quoter("one"), 60)
        assert service.fanout.mailer.wait_idle(10)
        sample = metrics.registry.get_sample_value
        assert sample("lookup_event_listeners_dropped_total") == 1
        assert sample("lookup_event_delivery_failures_total") == 1
        assert sample("lookup_events_dropped_total") == 1  # the one event, never delivered
        assert len(service.fanout) == 0  # its registration ended
    finally:
        service.close()


# -- python -m lookup serve --metrics-port, scraped over HTTP ---------------------------------------


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=HTTP_TIMEOUT) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def scrape(url: str) -> dict[str, float]:
    status, body = get(url)
    assert status == 200
    return {sample.name + "".join(f'{{{key}="{value}"}}' for key, value in sorted(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(body) for sample in family.samples}


def settled(check: Callable[[], bool], what: str, timeout: float = SETTLE) -> None:
    """Wait until ``check()`` holds, asking again and again: a counter scraped from another process
    moves after what the test saw (a delivery is counted once the listener's call has returned)."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout:g} s: {what}"
        pause.wait(0.02)  # between two scrapes, not a synchronisation: the check decides


@pytest.fixture
def listener_daemon() -> Iterator[ServingDaemon]:
    with ServingDaemon() as daemon:
        yield daemon


def test_served_lookup_counts_a_registration_and_an_event_delivery(
        serve_lookup: Callable[..., tuple[ChildProcess, int]], listener_daemon: ServingDaemon) -> None:
    server, port = serve_lookup("--metrics-port", "0", "--event-registrations-per-client", "2")
    url = server.wait_for(METRICS_LINE)["url"]
    root = url.removesuffix("/metrics")
    assert get(root + "/healthz") == (200, "ok\n")
    assert get(root + "/readyz") == (200, "ready\n")
    assert scrape(url)["lookup_event_deliveries_total"] == 0

    listener = Listener()
    listener_uri = listener_daemon.register(listener)
    dead = DEAD_LISTENER.format(port=free_port())
    with locate("127.0.0.1", port) as proxy:
        proxy.notify(ServiceTemplate(), ALL_TRANSITIONS, listener_uri, None, 60)
        proxy.notify(ServiceTemplate(), ALL_TRANSITIONS, dead, None, 60)  # nobody listens there
        with pytest.raises(landlord.LeaseDeniedError, match="at most 2 event registrations"):
            proxy.notify(ServiceTemplate(), ALL_TRANSITIONS, listener_uri, None, 60)
        proxy.register(quoter("counted"), 60)
    assert listener.wait_for(1)[0].item.attributes == (Name("counted"),)

    settled(lambda: scrape(url)["lookup_event_deliveries_total"] == 1, "the delivery counted")
    assert scrape(url)["landlord_leases_granted_total"] == 3  # two event registrations and the service's
    assert scrape(url)["lookup_registrations_active"] == 1
    refused = {key: value for key, value in scrape(url).items() if key.startswith("landlord_limits_refused_total")}
    assert refused == {'landlord_limits_refused_total{limit="attribute_bytes"}': 0,
                       'landlord_limits_refused_total{limit="event_registrations_per_client"}': 1,
                       'landlord_limits_refused_total{limit="registrations_per_client"}': 0}
    build = f'landlord_build_info{{python="{platform.python_version()}"}}{{version="{landlord.__version__}"}}'
    assert scrape(url)[build] == 1
    settled(lambda: scrape(url)["lookup_event_listeners_dropped_total"] == 1, "the dead listener given up on")
    final = scrape(url)
    assert final["lookup_event_delivery_failures_total"] == 4  # its first attempt and three retries
    assert final["landlord_leases_cancelled_total"] == 1  # its event registration ended with it
    assert final["lookup_event_deliveries_total"] == 1


def test_served_lookup_counts_what_its_browser_page_refused(
        serve_lookup: Callable[..., tuple[ChildProcess, int]]) -> None:
    server, _ = serve_lookup("--metrics-port", "0", "--http-port", "0")
    url = server.wait_for(METRICS_LINE)["url"]
    [(_, printed)] = server.matches(r"lookup browser at (?P<url>http://\S+/)")  # before the service's own lines
    page = printed["url"]
    assert scrape(url)['lookup_browser_refused_total{rule="host"}'] == 0
    rebound = urllib.request.Request(page, headers={"Host": "rebound.example:80"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(rebound, timeout=HTTP_TIMEOUT)
    assert refused.value.code == 421
    counts = {key: value for key, value in scrape(url).items() if key.startswith("lookup_browser_refused_total")}
    assert counts == {f'lookup_browser_refused_total{{rule="{rule}"}}': float(rule == "host")
                      for rule in ("connections", "host", "origin", "streams", "token")}


def test_the_metrics_options_on_the_command_line() -> None:
    help_text = run_lookup("serve", "--help").stdout
    assert "--metrics-port" in help_text and "--metrics-host" in help_text
    done = run_lookup("serve", "--port", str(free_port()), "--metrics-host", "127.0.0.1")
    assert done.returncode == 2
    assert "--metrics-host needs --metrics-port" in done.stderr.splitlines()[-1]


WITHOUT_PROMETHEUS = """if True:
    import sys
    sys.modules["prometheus_client"] = None  # not installed: its import fails
    from lookup.cli import main
    sys.exit(main(sys.argv[1:]))
"""


def without_prometheus(*args: str, name: str) -> ChildProcess:
    """``python -m lookup ARGS`` with prometheus-client hidden from it."""
    return ChildProcess("-c", WITHOUT_PROMETHEUS, *args, name=name)


def test_serve_without_prometheus_client_answers_health_checks_and_names_the_extra() -> None:
    port, metrics_port = free_port(), free_port()
    with without_prometheus("serve", "--port", str(port), "--metrics-port", str(metrics_port), "--no-announce",
                            name="lookup serve without prometheus-client") as server:
        root = server.wait_for(METRICS_LINE)["url"].removesuffix("/metrics")
        assert root == f"http://127.0.0.1:{metrics_port}"
        assert get(root + "/healthz") == (200, "ok\n")
        assert get(root + "/readyz") == (200, "ready\n")
        assert get(root + "/metrics") == (501, f"no metrics here: {INSTALL_METRICS}\n")
        assert len(server.matches(r"WARNING .*lookup service: no /metrics \(landlord's metrics need")) == 1
        with locate("127.0.0.1", port) as proxy:  # and it serves
            assert proxy.register(quoter("served"), 60).lease.remaining > 0
        assert server.stop() == 0


def test_a_served_replica_is_ready_while_it_leads_and_counts(cluster: EtcdCluster,
                                                              listener_daemon: ServingDaemon) -> None:
    group, port = new_group(), free_port()
    replica = ChildProcess("-m", "lookup", "serve", "--etcd", ",".join(cluster.endpoints), "--group", group,
                           "--replicas", f"127.0.0.1:{port}", "--port", str(port), "--metrics-port", "0",
                           name="replica")
    try:
        uri = replica.read_uri(20, pattern=r"^lookup service at (?P<uri>\S+) ")
        url = replica.wait_for(METRICS_LINE)["url"]
        root = url.removesuffix("/metrics")
        settled(lambda: get(root + "/readyz") == (200, "ready\n"), "the only replica leads")
        listener = Listener()
        with Pyro5.api.Proxy(uri) as proxy:
            proxy.notify(ServiceTemplate(), ALL_TRANSITIONS, listener_daemon.register(listener), None, 60)
            proxy.register(quoter("replicated"), 60)
        listener.wait_for(1)
        settled(lambda: scrape(url)["lookup_event_deliveries_total"] == 1, "the term's delivery counted")
        assert scrape(url)["landlord_leases_granted_total"] == 2
        assert scrape(url)["landlord_leases_active"] == 2
        assert scrape(url)["lookup_registrations_active"] == 1  # the term's service's
    finally:
        replica.close()


def test_without_prometheus_client_only_the_leading_replica_is_ready(cluster: EtcdCluster) -> None:
    group, ports = new_group(), [free_port(), free_port()]
    replicas = ",".join(f"127.0.0.1:{port}" for port in ports)
    metrics_ports = [free_port(), free_port()]
    with contextlib.ExitStack() as stack:
        for port, metrics_port in zip(ports, metrics_ports):
            replica = stack.enter_context(without_prometheus(
                "serve", "--etcd", ",".join(cluster.endpoints), "--group", group, "--replicas", replicas,
                "--port", str(port), "--metrics-port", str(metrics_port), "--no-announce", name=f"replica {port}"))
            replica.wait_for(METRICS_LINE)
        roots = [f"http://127.0.0.1:{metrics_port}" for metrics_port in metrics_ports]

        def readiness() -> list[int]:
            return sorted(get(root + "/readyz")[0] for root in roots)

        settled(lambda: readiness() == [200, 503], "one replica leads, the other follows")
        assert [get(root + "/healthz")[0] for root in roots] == [200, 200]
        assert [get(root + "/metrics")[0] for root in roots] == [501, 501]
