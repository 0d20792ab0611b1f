"""Serving a landlord (``landlord.serving``): ``serve_landlord`` in a thread and in a child process,
its stable default object id, the address its URIs carry (``advertise``; never a wildcard), the line it
prints, and a renewal answered promptly while 1,000 idle clients stay connected — which Pyro5's default
threaded daemon cannot do (it turns away the 81st connection).
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import logging
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import Pyro5.api
import Pyro5.errors
import pytest
from conftest import MANY_CLIENTS as CLIENTS
from conftest import free_port, sockets_of
from Pyro5 import config as pyro_config

import landlord
from landlord import Landlord, LeaseDurationPolicy, UnknownLeaseError, serve_landlord
from landlord.serving import (
    COMM_TIMEOUT,
    MAX_MESSAGE_SIZE,
    landlord_object_id,
    pyro_settings,
    serve_object,
)
from landlord.transport.addresses import own_address
from landlord.transport.multiplex import greet_when_spoken

PROMPT = 2.0          # seconds a further client's renewal may take while the 1,000 are connected
ADVERTISED = "127.0.0.2"  # loopback too (all of 127/8 is, on Linux), yet not the address listened on
NOT_OURS = "203.0.113.77"  # a documentation address (RFC 5737): no host has it
WATCHED = ("SERVERTYPE", "MAX_MESSAGE_SIZE", "COMMTIMEOUT", "THREADPOOL_SIZE", "SSL")


class Rooms(Landlord):
    @Pyro5.api.expose
    def rent(self, room: str, duration: float) -> landlord.LandlordLease:
        return self.new_lease(room, duration)


@pytest.fixture(autouse=True)
def pyro_config_restored() -> Iterator[None]:
    """Pyro5's config is global to this process: each test must leave it as it found it."""
    before = {name: getattr(pyro_config, name) for name in WATCHED}
    yield
    after = {name: getattr(pyro_config, name) for name in WATCHED}
    for name, value in before.items():
        setattr(pyro_config, name, value)
    assert after == before


def _rent(uri: str, room: str, duration: float = 60) -> landlord.LandlordLease:
    with Pyro5.api.Proxy(uri) as rooms:
        rooms._pyroTimeout = 10
        return rooms.rent(room, duration)  # type: ignore[no-any-return]


# -- in-process -----------------------------------------------------------------------------------

def test_serve_landlord_in_a_thread_until_stopped(close_later: list) -> None:
    rooms = Rooms(policy=LeaseDurationPolicy(maximum=50), landlord_id="rooms-in-thread")
    close_later.append(rooms)
    stop, ready = threading.Event(), threading.Event()
    uris: list[str] = []
    during: dict[str, Any] = {}

    def on_ready(uri: str) -> None:
        during.update({name: getattr(pyro_config, name) for name in WATCHED})
        uris.append(uri)
        ready.set()

    thread = threading.Thread(target=serve_landlord, args=(rooms,), daemon=True,
                              kwargs={"stop": stop, "ready": on_ready})
    thread.start()
    assert ready.wait(10)
    assert uris[0].startswith("PYRO:landlord.rooms-in-thread@127.0.0.1:")
    assert rooms.uri == uris[0]
    assert during["MAX_MESSAGE_SIZE"] == MAX_MESSAGE_SIZE and during["COMMTIMEOUT"] == COMM_TIMEOUT
    lease = _rent(uris[0], "101")
    assert str(lease.landlord) == uris[0]  # the lease carries the URI it was served under
    assert 29 < lease.renew(30) <= 30
    lease.cancel()
    landlord.transport.proxies.discard(uris[0])
    stop.set()
    thread.join(10)
    assert not thread.is_alive()
    assert rooms.uri is None  # unregistered: it may be served again


def test_landlord_object_id_is_landlord_dot_its_id(close_later: list) -> None:
    rooms = Landlord(landlord_id="abc")
    close_later.append(rooms)
    assert landlord_object_id(rooms) == "landlord.abc"
    with pytest.raises(TypeError):
        landlord_object_id(object())  # type: ignore[arg-type]


def test_serve_refuses_bad_options_before_binding(close_later: list) -> None:
    rooms = Landlord(landlord_id="with space")
    close_later.append(rooms)
    with pytest.raises(ValueError, match="object_id"):
        serve_landlord(rooms)  # its default object id would have a space
    with pytest.raises(ValueError, match="object_id"):
        serve_landlord(rooms, object_id="a@b")
    with pytest.raises(ValueError, match="server_type"):
        serve_landlord(rooms, object_id="ok", server_type="forked")
    with pytest.raises(ValueError, match="threadpool_size"):
        serve_landlord(rooms, object_id="ok", threadpool_size=0)
    with pytest.raises(TypeError, match="tls"):
        serve_landlord(rooms, object_id="ok", tls="cert.pem")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Landlord"):
        serve_landlord(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Landlord"):
        serve_landlord(object(), object_id="ok")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="object_id"):
        serve_object(rooms, object_id="")


def test_pyro_settings_restores_and_refuses_unknown_items() -> None:
    before = pyro_config.COMMTIMEOUT
    with pyro_settings(COMMTIMEOUT=1.5):
        assert pyro_config.COMMTIMEOUT == 1.5
    assert pyro_config.COMMTIMEOUT == before
    with pytest.raises(AttributeError, match="NO_SUCH_ITEM"):
        with pyro_settings(COMMTIMEOUT=2.5, NO_SUCH_ITEM=1):
            pass
    assert pyro_config.COMMTIMEOUT == before


def test_pyro_settings_blocks_that_end_out_of_order_leave_nothing_behind() -> None:
    """Two servers in one process, started A then B and stopped A then B (the order
    left THREADPOOL_SIZE at landlord's 2048 for the rest of a test session)."""
    before = pyro_config.THREADPOOL_SIZE
    first, second = pyro_settings(THREADPOOL_SIZE=2048), pyro_settings(THREADPOOL_SIZE=4096)
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert pyro_config.THREADPOOL_SIZE == 4096  # the block still open keeps its value
    second.__exit__(None, None, None)
    assert pyro_config.THREADPOOL_SIZE == before
    with pyro_settings(THREADPOOL_SIZE=1):  # and nested blocks still unwind in order
        with pyro_settings(THREADPOOL_SIZE=2):
            assert pyro_config.THREADPOOL_SIZE == 2
        assert pyro_config.THREADPOOL_SIZE == 1
    assert pyro_config.THREADPOOL_SIZE == before


# -- addresses -----------------------------------------------------------------------------------

@contextlib.contextmanager
def _served(rooms: Landlord, host: str, **options: Any) -> Iterator[str]:
    """``serve_landlord(rooms, host, port 0, **options)`` on a thread; yields its URI once it answers."""
    stop, ready = threading.Event(), threading.Event()
    uris: list[str] = []

    def on_ready(uri: str) -> None:
        uris.append(uri)
        ready.set()

    thread = threading.Thread(target=serve_landlord, args=(rooms, host), daemon=True,
                              kwargs={"stop": stop, "ready": on_ready, **options})
    thread.start()
    try:
        assert ready.wait(10), "serve_landlord did not start"
        yield uris[0]
    finally:
        for uri in uris:
            landlord.transport.proxies.discard(uri)
        stop.set()
        thread.join(10)
    assert not thread.is_alive()


def _uri_host(uri: str) -> str:
    """The host of a ``PYRO:id@host:port`` URI, without an IPv6 address's brackets."""
    return str(Pyro5.api.URI(uri).host)


def _uri_port(uri: str) -> int:
    return int(Pyro5.api.URI(uri).port)


def test_serve_landlord_refuses_a_bad_advertise_before_binding(close_later: list) -> None:
    rooms = Rooms()
    close_later.append(rooms)
    with socket.socket() as taken:  # were it bound first, this would be an OSError
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ValueError, match="cannot advertise 'h1:4160': give the address without a port"):
            serve_landlord(rooms, "0.0.0.0", port, advertise="h1:4160")
        with pytest.raises(TypeError, match="advertise"):
            serve_landlord(rooms, "127.0.0.1", port, advertise=4160)  # type: ignore[arg-type]
    assert rooms.uri is None


def test_a_landlord_advertises_the_address_it_is_told_in_its_uri_and_leases(
        close_later: list, capsys: pytest.CaptureFixture[str]) -> None:
    rooms = Rooms(policy=LeaseDurationPolicy(maximum=50), landlord_id="advertised")
    close_later.append(rooms)
    with _served(rooms, "0.0.0.0", advertise=ADVERTISED) as uri:
        port = _uri_port(uri)
        assert uri == f"PYRO:landlord.advertised@{ADVERTISED}:{port}"
        assert rooms.uri == uri
        lease = _rent(uri, "101")
        assert str(lease.landlord) == uri  # the lease carries the advertised address...
        assert 29 < lease.renew(30) <= 30  # ...and renews through it
        lease.cancel()
    printed = capsys.readouterr().out.splitlines()
    assert printed == [f"landlord at {uri} (guarded server, listening on 0.0.0.0:{port})"]


@pytest.mark.parametrize("host", ["0.0.0.0", "", "::"])
def test_a_landlord_on_every_interface_advertises_this_hosts_address_never_the_wildcard(
        close_later: list, host: str) -> None:
    if host == "::":
        try:
            with socket.socket(socket.AF_INET6) as sock:
                sock.bind(("::", 0))
        except OSError as exc:
            pytest.skip(f"no IPv6 here: {exc}")
    rooms = Rooms()
    close_later.append(rooms)
    with _served(rooms, host) as uri:
        assert _uri_host(uri) == own_address(ipv6=host == "::")
        assert not ipaddress.ip_address(_uri_host(uri)).is_unspecified
        lease = _rent(uri, "101")
        assert str(lease.landlord) == uri
        assert 59 < lease.renew(60) <= 60  # this host's address reaches a server on every interface
        lease.cancel()


def test_announce_false_prints_nothing_and_logs_as_before(
        close_later: list, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    rooms = Rooms()
    close_later.append(rooms)
    with caplog.at_level(logging.INFO, logger="landlord.serving"):
        with _served(rooms, "127.0.0.1", announce=False) as uri:
            pass
    assert capsys.readouterr().out == ""
    assert f"landlord at {uri} (guarded server)" in caplog.messages

def test_announced_it_is_printed_once_and_logged_at_debug_only(
        close_later: list, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    rooms = Rooms()
    close_later.append(rooms)
    with caplog.at_level(logging.DEBUG, logger="landlord.serving"):
        with _served(rooms, "127.0.0.1") as uri:
            pass
    assert capsys.readouterr().out.splitlines().count(f"landlord at {uri} (guarded server)") == 1
    levels = [record.levelno for record in caplog.records if record.getMessage().startswith(f"landlord at {uri}")]
    assert levels == [logging.DEBUG]  # one journal for stdout and stderr sees the event once


def test_a_closed_or_missing_stdout_stops_no_server(close_later: list, monkeypatch: pytest.MonkeyPatch) -> None:
    closed = io.StringIO()
    closed.close()
    for stdout in (closed, None):
        monkeypatch.setattr(sys, "stdout", stdout)
        rooms = Rooms()
        close_later.append(rooms)
        with _served(rooms, "127.0.0.1") as uri:  # announcing, to nowhere
            assert 59 < _rent(uri, "101").renew(60) <= 60


# -- in a child process -------------------------------------------------------------------------

def test_a_landlord_with_a_stable_id_gets_the_same_uri_after_a_restart(spawn: Any) -> None:
    port = free_port()
    first = spawn("served_landlord.py", "--port", str(port), "--landlord-id", "rooms-7")
    uri = first.expect("URI:")
    assert uri == f"PYRO:landlord.rooms-7@127.0.0.1:{port}"
    lease = _rent(uri, "101")
    assert 59 < lease.renew(60) <= 60
    assert first.stop() == 0
    # the lease's connection, and _rent's if the server has not yet read that it was closed (it raced)
    first.wait_for(r"landlord stopped \([12] connection\(s\) closed")
    first.wait_for("^stopped$")

    second = spawn("served_landlord.py", "--port", str(port), "--landlord-id", "rooms-7")
    assert second.expect("URI:") == uri
    # the lease reaches the restarted landlord at its old URI; this one keeps no leases across restarts
    with pytest.raises(Pyro5.errors.CommunicationError):
        lease.renew(60)  # the old connection is gone; the lease drops it...
    with pytest.raises(UnknownLeaseError):
        lease.renew(60)  # ...and the next call connects to the new landlord, which answers
    assert 59 < _rent(uri, "102").renew(60) <= 60
    landlord.transport.proxies.discard(uri)
    assert second.stop() == 0

    third = spawn("served_landlord.py", "--port", str(port))  # no id given: a new one, a new URI
    assert third.expect("URI:") != uri
    assert third.stop() == 0


def test_a_served_landlord_prints_the_advertised_uri_it_serves_once(spawn: Any) -> None:
    server = spawn("served_landlord.py", "--host", "0.0.0.0", "--advertise", ADVERTISED)
    announced = server.wait_for(r"^landlord at (PYRO:\S+) \(guarded server, listening on 0\.0\.0\.0:\d+\)$")
    uri = server.expect("URI:")
    assert announced.group(1) == uri and _uri_host(uri) == ADVERTISED
    assert 59 < _rent(uri, "101").renew(60) <= 60
    landlord.transport.proxies.discard(uri)
    assert server.stop() == 0
    server.wait_for("^stopped$")
    assert sum(line.startswith("landlord at ") for line in server.output) == 1
    assert sum(f"landlord at {uri}" in line for line in server.output) == 1  # printed, not logged at INFO too

    quiet = spawn("served_landlord.py", "--quiet")
    uri = quiet.expect("URI:")
    assert not any(line.startswith("landlord at ") for line in quiet.output)
    assert any(f"INFO landlord.serving: landlord at {uri}" in line for line in quiet.output)
    assert quiet.stop() == 0


# -- many clients -------------------------------------------------------------------------------

def _connect(uri: str, count: int) -> tuple[list[Pyro5.api.Proxy], Exception | None]:
    """Up to ``count`` connected proxies of ``uri`` (each past Pyro5's handshake), and the error that
    stopped the connecting early, if one did."""
    proxies: list[Pyro5.api.Proxy] = []
    for _ in range(count):
        proxy = Pyro5.api.Proxy(uri)
        proxy._pyroTimeout = 10
        try:
            proxy._pyroBind()
        except Pyro5.errors.CommunicationError as exc:
            proxy._pyroRelease()
            return proxies, exc
        proxies.append(proxy)
    return proxies, None


def test_a_renewal_is_answered_promptly_while_1000_idle_clients_are_connected(
        spawn: Any, open_files_for_many_clients: None) -> None:
    started = time.monotonic()
    server = spawn("served_landlord.py")
    uri = server.expect("URI:")
    lease = _rent(uri, "101")
    idle, error = _connect(uri, CLIENTS)
    try:
        assert error is None and len(idle) == CLIENTS
        connected_in = time.monotonic() - started
        sockets = sockets_of(server.process.pid)
        if sockets is not None:  # the server holds them all: its listening socket and 1,000 connections
            assert sockets >= CLIENTS + 1

        asked = time.monotonic()  # a further client (this thread's lease proxy: a new connection)
        assert 59 < lease.renew(60) <= 60
        renewed_in = time.monotonic() - asked
        assert renewed_in < PROMPT
        assert idle[0].renew(lease.cookie, 30) == 30  # and the idle ones are still served
        assert idle[-1].renew(lease.cookie, 30) == 30
    finally:
        for proxy in idle:
            proxy._pyroRelease()
    lease.cancel()
    assert server.expect("freed") == "101"
    landlord.transport.proxies.discard(uri)
    assert server.stop() == 0
    elapsed = time.monotonic() - started
    print(f"{CLIENTS} clients connected in {connected_in:.2f} s; a further renewal answered in "
          f"{renewed_in * 1000:.1f} ms; whole test {elapsed:.2f} s")


def test_1000_connections_that_never_say_a_word_hold_up_no_renewal(
        spawn: Any, open_files_for_many_clients: None) -> None:
    """Raw connections that never send Pyro5's handshake: Pyro5's multiplex server would
    wait for each one's handshake in turn, the full COMM_TIMEOUT each (over an hour for
    1,000); served here, they are greeted only when they speak (landlord.transport.multiplex)."""
    server = spawn("served_landlord.py")
    uri = server.expect("URI:")
    port = int(uri.rsplit(":", 1)[1])
    lease = _rent(uri, "101")
    with contextlib.ExitStack() as sockets:
        for _ in range(CLIENTS):
            sockets.enter_context(socket.create_connection(("127.0.0.1", port)))
        asked = time.monotonic()
        assert 59 < _rent(uri, "102").renew(60) <= 60  # a further client: a new connection, greeted
        waited = time.monotonic() - asked
    assert waited < PROMPT, f"a new client waited {waited:.2f} s"
    assert 59 < lease.renew(60) <= 60
    landlord.transport.proxies.discard(uri)
    assert server.stop() == 0
    print(f"a new client was served in {waited:.2f} s beside {CLIENTS} silent connections")


def test_greet_when_spoken_takes_only_a_multiplex_server() -> None:
    with pytest.raises(TypeError, match="multiplex"):
        greet_when_spoken(object())  # type: ignore[arg-type]


def test_pyro5s_default_daemon_refuses_the_81st_idle_client(
        open_files_for_many_clients: None, close_later: list) -> None:
    """The contrast: the same setup on a plain ``Pyro5.api.Daemon()`` fails (one worker per connection)."""
    assert pyro_config.SERVERTYPE == "thread"  # Pyro5's default
    workers = pyro_config.THREADPOOL_SIZE
    rooms = Rooms()
    close_later.append(rooms)
    daemon = Pyro5.api.Daemon(host="127.0.0.1")
    uri = str(daemon.register(rooms))
    loop = threading.Thread(target=daemon.requestLoop, daemon=True)
    loop.start()
    idle, error = _connect(uri, CLIENTS)
    try:
        assert len(idle) == workers  # then the next one was turned away
        assert "no free workers" in str(error)
        with pytest.raises(Pyro5.errors.CommunicationError, match="no free workers"):
            _rent(uri, "101")  # and so is a renewal, a grant, anything from anyone new
    finally:
        for proxy in idle:  # release first: the workers end with their connections
            proxy._pyroRelease()
        daemon.shutdown()
        loop.join(10)
