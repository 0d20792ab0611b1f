"""Serving the lookup service: ``locate``, ``serve``, the operator's table, and 1,000 clients at once.

The server type was chosen by measurement (figures in ``lookup/service/server.py``'s
docstring): with 1,000 idle clients connected the multiplex server answers a
further client as fast as a 2,048-worker thread server, with 11 threads
instead of 1,013, and stops at once instead of after ~100 s.
"""

from __future__ import annotations

import logging
import pathlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import Pyro5.api
import Pyro5.errors
import Pyro5.server
import pytest
from conftest import MANY_CLIENTS as CLIENTS
from conftest import free_port, sockets_of
from lookup_processes import LookupProcess, serve_lookup  # noqa: F401  (a fixture)
from Pyro5 import config as pyro_config

import landlord
from landlord import FakeClock, Landlord, LeaseDurationPolicy, UnknownLeaseError
from landlord.transport.addresses import own_address
from lookup import Comment, Name, ServiceItem, ServiceTemplate
from lookup.discovery.unicast import LOOKUP_OBJECT_ID, LookupServiceNotFoundError, locate, lookup_uri
from lookup.service.server import MAX_MESSAGE_SIZE, ServedLookupService, entry_text, raise_open_files_limit, serve

try:
    import resource
except ImportError:  # pragma: no cover
    resource = None  # type: ignore[assignment]

SERVICE_URI = "PYRO:quoter@127.0.0.1:9999"
ADVERTISED = "127.0.0.2"  # loopback too (all of 127/8 is, on Linux), yet not the address listened on
Serve = Callable[..., "tuple[LookupProcess, int]"]

HOLDER_THREADS = 10       # a Pyro5 proxy belongs to the thread that made it: each holds CLIENTS / 10
PROMPT = 2.0              # seconds a further client may take while the 1,000 are connected


# -- locate ------------------------------------------------------------------------------

def test_lookup_uri_is_fixed_by_host_and_port() -> None:
    assert lookup_uri("10.0.0.7", 4160) == "PYRO:lookup.LookupService@10.0.0.7:4160"
    assert lookup_uri("::1", 4160) == "PYRO:lookup.LookupService@[::1]:4160"
    with pytest.raises(ValueError):
        lookup_uri("", 4160)
    with pytest.raises(ValueError):
        lookup_uri("127.0.0.1", 0)
    with pytest.raises(TypeError):
        lookup_uri("127.0.0.1", "4160")  # type: ignore[arg-type]


def test_locate_finds_a_served_lookup_service(serve_lookup: Serve) -> None:
    server, port = serve_lookup()
    with locate("127.0.0.1", port, timeout=5) as lookup:
        assert str(lookup._pyroUri) == lookup_uri("127.0.0.1", port)
        assert lookup._pyroTimeout == 5
        registration = lookup.register(ServiceItem(None, SERVICE_URI, ["x.Quoter"], [Name("q")]), 30)
        found = lookup.lookup(ServiceTemplate(types=["x.Quoter"]))
        assert str(found._pyroUri) == SERVICE_URI
        assert 28 < registration.lease.renew(30) <= 30


def test_locate_when_nothing_answers() -> None:
    port = free_port()
    with pytest.raises(LookupServiceNotFoundError, match=f"no lookup service answers at 127.0.0.1:{port}") as caught:
        locate(port=port, timeout=2)
    assert isinstance(caught.value, Pyro5.errors.CommunicationError)  # handled like any unreachable peer


def test_locate_refuses_what_is_not_a_lookup_service(daemon: Any, close_later: list) -> None:
    port = int(daemon.daemon.locationStr.rsplit(":", 1)[1])
    with pytest.raises(LookupServiceNotFoundError, match="no lookup service answers"):
        locate(port=port, timeout=2)  # a Pyro5 daemon, but no object under the lookup service's id
    impostor = Landlord()
    close_later.append(impostor)
    daemon.daemon.register(impostor, objectId=LOOKUP_OBJECT_ID)
    with pytest.raises(LookupServiceNotFoundError, match="is not a lookup service .*lookup_all"):
        locate(port=port, timeout=2)


def test_locate_checks_its_timeout() -> None:
    for bad in (0, -1, True, "5"):
        with pytest.raises(ValueError):
            locate(port=4160, timeout=bad)  # type: ignore[arg-type]


# -- the operator's view and the log ------------------------------------------------------------

@pytest.fixture
def served(clock: FakeClock) -> Iterator[ServedLookupService]:
    service = ServedLookupService(policy=LeaseDurationPolicy(maximum=100), reaper="lazy", clock=clock)
    yield service
    service.close()


def test_registrations_table_lists_items_and_time_left_and_no_cookies(
        served: ServedLookupService, clock: FakeClock) -> None:
    one = served.register(ServiceItem("b-one", SERVICE_URI, ["x.A", "x.B"], [Name("one"), Comment(None)]), 30)
    two = served.register(ServiceItem("a-two", SERVICE_URI, ["x.A"]), 60)
    clock.advance(10)
    rows, total = served.registrations_table()
    assert total == 2
    assert rows == [("a-two", ["x.A"], [], 50.0), ("b-one", ["x.A", "x.B"], ["Name(name='one')", "Comment()"], 20.0)]
    assert one.lease.cookie not in repr(rows) and two.lease.cookie not in repr(rows)
    assert served.registrations_table(1) == ([rows[0]], 2)
    clock.advance(25)  # the first has expired: gone from the table, reaper or not
    assert served.registrations_table() == ([("a-two", ["x.A"], [], 25.0)], 1)
    for bad, error in ((-1, ValueError), (10**9, ValueError), ("3", TypeError), (True, TypeError)):
        with pytest.raises(error):
            served.registrations_table(bad)  # type: ignore[arg-type]


def test_registrations_table_is_exposed_and_cookies_are_not(served: ServedLookupService) -> None:
    exposed = Pyro5.server._get_exposed_members(served)["methods"]  # type: ignore[attr-defined]
    assert {"registrations_table", "register", "lookup", "renew", "renew_all", "cancel", "cancel_all"} <= exposed
    assert not any("cookie" in name or name == "registrations" for name in exposed)


def test_leases_lives_are_logged(served: ServedLookupService, clock: FakeClock,
                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="lookup")
    kept = served.register(ServiceItem("kept", SERVICE_URI, ["x.A"]), 30)
    gone = served.register(ServiceItem("gone", SERVICE_URI, ["x.A"]), 30)
    served.register(ServiceItem("brief", SERVICE_URI, ["x.A"]), 5)
    served.register(ServiceItem("kept", SERVICE_URI, ["x.B"]), 30, kept.lease.cookie)  # replaced: not ended
    served.renew(gone.lease.cookie, 20)
    served.renew_all([gone.lease.cookie, kept.lease.cookie], [20, 20])
    with pytest.raises(UnknownLeaseError):
        served.renew(kept.lease.cookie, 20)
    gone.lease.cancel()
    clock.advance(6)
    served.lookup(ServiceTemplate())  # reaps
    messages = [(r.name, r.levelname, r.getMessage()) for r in caplog.records if r.name == "lookup.server"]
    assert messages == [
        ("lookup.server", "DEBUG", "renewed registration gone for 20.0 s"),
        ("lookup.server", "DEBUG", "renewed 1 lease(s) in one call (registration gone for 20.0 s), 1 refused"),
        ("lookup.server", "INFO", "registration gone cancelled"),
        ("lookup.server", "INFO", "registration brief expired"),
    ]
    every = " ".join(r.getMessage() for r in caplog.records)
    assert kept.lease.cookie not in every and gone.lease.cookie not in every


def test_a_big_batch_renewal_names_ten_leases_and_counts_the_rest(served: ServedLookupService,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="lookup.server")
    leases = [served.register(ServiceItem(f"s{i:02}", SERVICE_URI, ["x.A"]), 30).lease for i in range(12)]
    served.renew_all([lease.cookie for lease in leases], [10] * 12)
    [line] = [r.getMessage() for r in caplog.records if r.name == "lookup.server"]
    assert line.startswith("renewed 12 lease(s) in one call (registration s00 for 10.0 s, ")
    assert line.endswith("registration s09 for 10.0 s and 2 more), 0 refused") and "s10" not in line


def test_entry_text_leaves_out_empty_fields() -> None:
    assert entry_text(Name("quoter")) == "Name(name='quoter')"
    assert entry_text(Comment()) == "Comment()"


# -- serve, in-process ----------------------------------------------------------------------

def test_serve_in_a_thread_until_stopped_and_pyro_settings_restored() -> None:
    before = {name: getattr(pyro_config, name) for name in ("SERVERTYPE", "MAX_MESSAGE_SIZE", "COMMTIMEOUT")}
    stop = threading.Event()
    ready: list[str] = []
    during: dict[str, Any] = {}

    answering = threading.Event()

    def on_ready(uri: str) -> None:
        during.update({name: getattr(pyro_config, name) for name in before})
        ready.append(uri)
        answering.set()

    thread = threading.Thread(target=serve, args=("127.0.0.1", 0), daemon=True,
                              kwargs={"stop": stop, "ready": on_ready, "max_lease": 50, "default_lease": 5})
    thread.start()
    assert answering.wait(10)
    assert ready and ready[0].startswith(f"PYRO:{LOOKUP_OBJECT_ID}@127.0.0.1:")
    # the daemon was made as multiplex; the server type is set back at once, the rest while serving
    assert during == {"SERVERTYPE": before["SERVERTYPE"], "MAX_MESSAGE_SIZE": MAX_MESSAGE_SIZE, "COMMTIMEOUT": 5.0}
    port = int(ready[0].rsplit(":", 1)[1])
    with locate(port=port) as lookup:
        registration = lookup.register(ServiceItem(None, SERVICE_URI, ["x.A"]))
        assert 4 < registration.lease.remaining <= 5
        stop.set()
        thread.join(10)
        assert not thread.is_alive()
    assert {name: getattr(pyro_config, name) for name in before} == before
    with pytest.raises(LookupServiceNotFoundError):
        locate(port=port, timeout=2)


def test_serve_refuses_bad_options() -> None:
    with pytest.raises(ValueError, match="server_type"):
        serve(port=0, server_type="forked")
    with pytest.raises(ValueError, match="reaper"):
        serve(port=0, reaper="grim")
    with pytest.raises(ValueError):
        serve(port=0, max_lease=-1)


def test_serve_refuses_a_bad_address_to_advertise_before_opening_its_store(tmp_path: pathlib.Path) -> None:
    store = tmp_path / "lookup.sqlite"
    with pytest.raises(ValueError, match="cannot advertise 'h1:4160': give the address without a port"):
        serve("0.0.0.0", 0, advertise="h1:4160", store=store)
    with pytest.raises(TypeError, match="advertise"):
        serve("0.0.0.0", 0, advertise=4160, store=store)  # type: ignore[arg-type]
    assert not store.exists()


@pytest.mark.parametrize("advertise", [ADVERTISED, None])
def test_serve_on_every_interface_hands_out_the_advertised_address_only(
        advertise: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    stop, answering = threading.Event(), threading.Event()
    ready: list[str] = []

    def on_ready(uri: str) -> None:
        ready.append(uri)
        answering.set()

    thread = threading.Thread(target=serve, args=("0.0.0.0", 0), daemon=True,
                              kwargs={"advertise": advertise, "stop": stop, "ready": on_ready})
    thread.start()
    try:
        assert answering.wait(10)
        host = advertise if advertise is not None else own_address()
        port = int(ready[0].rsplit(":", 1)[1])
        assert ready[0] == f"PYRO:{LOOKUP_OBJECT_ID}@{host}:{port}"  # never 0.0.0.0
        with locate(host, port) as lookup:
            registration = lookup.register(ServiceItem(None, SERVICE_URI, ["x.A"]), 30)
            assert str(registration.lease.landlord) == ready[0]
            assert str(lookup.lookup(ServiceTemplate(types=["x.A"]))._pyroUri) == SERVICE_URI  # the service's own
        assert 29 < registration.lease.renew(30) <= 30
        registration.lease.cancel()
        landlord.transport.proxies.discard(ready[0])
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()
    assert capsys.readouterr().out.startswith(f"lookup service at {ready[0]} (guarded server, leases up to ")


def test_an_oversized_message_is_refused_and_the_service_keeps_answering(serve_lookup: Serve) -> None:
    server, port = serve_lookup()
    huge = ServiceItem(None, SERVICE_URI, ["x.Huge"], [Comment("x" * (MAX_MESSAGE_SIZE + 1))])
    with locate(port=port) as lookup:
        with pytest.raises(Pyro5.errors.CommunicationError):
            lookup.register(huge)  # the server drops the connection rather than read 16 MiB+
    with Pyro5.api.Proxy(lookup_uri(port=port)) as plain:  # a plain client's serpent, over its cap: refused by name
        with pytest.raises(Pyro5.errors.ProtocolError, match="at most 65536 are taken"):
            plain.register(ServiceItem(None, SERVICE_URI, ["x.Large"], [Comment("x" * 100_000)]))
    with locate(port=port) as lookup:  # landlord's msgpack, over its own cap: refused by name too
        with pytest.raises(Pyro5.errors.ProtocolError, match="at most 262144 are taken"):
            lookup.register(ServiceItem(None, SERVICE_URI, ["x.Large"], [Comment("x" * 300_000)]))
    with locate(port=port) as lookup:
        assert lookup.lookup(ServiceTemplate(types=["x.Huge"])) is None
        assert lookup.lookup(ServiceTemplate(types=["x.Large"])) is None
        lookup.register(ServiceItem(None, SERVICE_URI, ["x.Small"], [Comment("x" * 30_000)]))  # under both caps


def test_raise_open_files_limit_never_lowers_it() -> None:
    if resource is None:
        pytest.skip("no resource module here")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        assert raise_open_files_limit(soft) >= soft
        raised = raise_open_files_limit()
        assert raised >= soft
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == raised
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


# -- many clients ------------------------------------------------------------------------------

class Holders:
    """``threads`` threads, each connecting ``per_thread`` clients, each client doing a lookup;
    then holding them all until released, with one more lookup each before closing."""

    def __init__(self, port: int, threads: int, per_thread: int) -> None:
        self.port = port
        self.connected = threading.Barrier(threads + 1)
        self.release = threading.Event()
        self.errors: list[str] = []
        self.answers = 0
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._hold, args=(per_thread,), name=f"holder-{n}", daemon=True)
                        for n in range(threads)]
        for thread in self.threads:
            thread.start()

    def _hold(self, count: int) -> None:
        clients: list[Pyro5.api.Proxy] = []
        template = ServiceTemplate(types=["x.Findable"])
        try:
            try:
                for _ in range(count):
                    client = locate(port=self.port, timeout=20)
                    clients.append(client)
                    self._answered(client.lookup(template))
            except Exception as exc:
                self._fail(exc)
            self.connected.wait(timeout=30)
            self.release.wait(timeout=60)
            for client in clients:  # every one still connected, and answered
                try:
                    self._answered(client.lookup(template))
                except Exception as exc:
                    self._fail(exc)
                    break
        finally:
            for client in clients:
                client._pyroRelease()

    def _answered(self, found: Any) -> None:
        with self._lock:
            if found is None:
                self.errors.append("a lookup found nothing")
            else:
                self.answers += 1

    def _fail(self, exc: Exception) -> None:
        with self._lock:
            self.errors.append(f"{type(exc).__name__}: {exc}")

    def close(self) -> None:
        self.release.set()
        for thread in self.threads:
            thread.join(timeout=30)


def test_a_further_client_is_answered_promptly_while_1000_clients_are_connected(
        serve_lookup: Serve, open_files_for_many_clients: None) -> None:
    started = time.monotonic()
    server, port = serve_lookup()
    with locate(port=port) as setup:
        setup.register(ServiceItem(None, SERVICE_URI, ["x.Findable"], [Name("findable")]), 120)

    holders = Holders(port, HOLDER_THREADS, CLIENTS // HOLDER_THREADS)
    try:
        holders.connected.wait(timeout=30)
        connected_in = time.monotonic() - started
        assert holders.errors == []
        assert holders.answers == CLIENTS
        sockets = sockets_of(server.process.pid)
        if sockets is not None:  # the server holds them all: its listening socket and 1,000 connections
            assert sockets >= CLIENTS + 1

        # a further client, while the 1,000 stay connected
        asked = time.monotonic()
        with locate(port=port, timeout=PROMPT) as client:
            assert str(client.lookup(ServiceTemplate(types=["x.Findable"]))._pyroUri) == SERVICE_URI
            registration = client.register(ServiceItem(None, SERVICE_URI, ["x.Late"]), 30)
            assert 28 < registration.lease.renew(60) <= 60
            assert client.lookup_all(ServiceTemplate(), 10).total == 2
            rows, total = client.registrations_table()
            assert total == 2
        answered_in = time.monotonic() - asked
        assert answered_in < PROMPT
    finally:
        holders.close()
    assert holders.errors == []
    assert holders.answers == 2 * CLIENTS  # none was dropped while connected
    assert server.stop() == 0
    elapsed = time.monotonic() - started
    print(f"{CLIENTS} clients connected in {connected_in:.2f} s; a further client answered in "
          f"{answered_in * 1000:.0f} ms; whole test {elapsed:.2f} s")
    assert elapsed < 30
