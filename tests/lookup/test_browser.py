"""The lookup browser's feed and HTTP server, with real HTTP clients (urllib, raw sockets for the stream),
and hostile callers: a slow-loris, a flood of streams, a reader that stops reading, oversized requests,
state changes without the token; a canary holder keeps renewing through them all."""

from __future__ import annotations

import contextlib
import io
import json
import re
import socket
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import Pyro5.api
import pytest
from conftest import ChildProcess, free_port
from etcd_fixtures import FAILOVER, ReplicaGroup, cluster, etcd_cluster, new_group  # noqa: F401  (fixtures)

from landlord import FakeClock, LeaseDeniedError, UnknownLeaseError
from landlord.admin import LandlordAdmin
from landlord.testing.etcd import EtcdCluster
from lookup import LookupService, Name, ServiceItem
from lookup.browser import TOKEN_HEADER, BrowserFeed, BrowserServer, FeedLimits, PageLimits, page_at
from lookup.browser.feed import LEASE_PREFIX_SHOWN
from lookup.browser.http import read_only_note
from lookup.browser.terms import TermFeed
from lookup.discovery.unicast import LOOKUP_OBJECT_ID
from lookup.service.replicated import ReplicatedLookupService

TOKEN = "the operators' admin token, long enough"
URI = "PYRO:quotes@127.0.0.1:1"
HOSTILE = "<script>window.pwned=1</script><img src=x onerror=window.pwned=2>"


@pytest.fixture
def service() -> Iterator[LookupService]:
    service = LookupService()
    yield service
    service.close()


def page_of(service: LookupService, *, limits: PageLimits | None = None,
            feed_limits: FeedLimits | None = None) -> BrowserServer:
    return BrowserServer(BrowserFeed(service, feed_limits), admin=LandlordAdmin(service, token=TOKEN),
                         admin_token=TOKEN, limits=limits).start()


def item(*types: str, name: str = "quotes") -> ServiceItem:
    return ServiceItem(None, URI, types or ("acme.Quotes",), (Name(name),))


class Stream:
    """``GET /events`` on a raw socket: its messages, parsed as they come."""

    def __init__(self, page: BrowserServer | tuple[str, int], token: str | None = None,
                 receive_buffer: int | None = None) -> None:
        self.socket = socket.socket()
        if receive_buffer is not None:  # before connecting: no autotuning, the window stays this small
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.socket.settimeout(5)
        self.socket.connect(page if isinstance(page, tuple) else page.address)
        headers = f"{TOKEN_HEADER}: {token}\r\n" if token is not None else ""
        self.socket.sendall(f"GET /events HTTP/1.0\r\n{headers}\r\n".encode())
        self.buffer = bytearray()
        head = self._until(b"\r\n\r\n")
        self.status = int(head.split(b" ", 2)[1])

    def _until(self, end: bytes) -> bytes:
        searched = 0
        while (found := self.buffer.find(end, searched)) < 0:
            searched = max(0, len(self.buffer) - len(end))  # only new bytes are searched again
            chunk = self.socket.recv(262144)
            if not chunk:
                raise EOFError("the stream ended")
            self.buffer += chunk
        part = bytes(self.buffer[:found])
        del self.buffer[:found + len(end)]
        return part

    def next(self) -> dict[str, Any]:
        """The next message (comments skipped)."""
        while True:
            event = self._until(b"\n\n")
            if event.startswith(b"data: "):
                message: dict[str, Any] = json.loads(event[len(b"data: "):])
                return message

    def close(self) -> None:
        self.socket.close()


def get(page: BrowserServer, path: str, token: str | None = None, host: str | None = None
        ) -> tuple[int, bytes, Any]:
    headers = {**({TOKEN_HEADER: token} if token else {}), **({"Host": host} if host is not None else {})}
    request = urllib.request.Request(_reachable(page) + path, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, answer.read(), answer.headers
    except urllib.error.HTTPError as error:
        return error.code, error.read(), error.headers


def post_evict(page: BrowserServer, body: object, token: str | None = None,
               content_type: str = "application/json", **extra: str) -> tuple[int, dict[str, Any]]:
    """``POST /evict``; ``extra``: more headers (``Host``, ``Origin``)."""
    headers = {"Content-Type": content_type, **({TOKEN_HEADER: token} if token is not None else {}), **extra}
    request = urllib.request.Request(_reachable(page) + "/evict", data=json.dumps(body).encode(),
                                     headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _reachable(page: BrowserServer) -> str:
    """The page's address as this machine reaches it (a wildcard's page at loopback)."""
    return page.url.rstrip("/").replace("//0.0.0.0:", "//127.0.0.1:")


# -- the stream ----------------------------------------------------------------------------------------------


def test_a_stream_starts_with_a_snapshot_then_tells_each_registration_change_renewal_and_end(
        service: LookupService) -> None:
    before = service.register(item("acme.Before"), 30)
    with page_of(service) as page:
        stream = Stream(page)
        snapshot = stream.next()
        assert snapshot["kind"] == "snapshot" and abs(snapshot["now"] / 1000 - time.time()) < 5
        [shown] = snapshot["registrations"]
        assert shown["id"] == before.service_id and shown["types"] == ["acme.Before"]
        assert shown["attributes"] == [{"class": "lookup.entry.Name", "fields": {"name": "quotes"}}]
        assert shown["address"] == URI and "lease" not in shown  # no token, no leases
        assert 25 < shown["expires"] / 1000 - snapshot["now"] / 1000 <= 30

        registration = service.register(item("acme.Quotes", name=HOSTILE), 10)
        put = stream.next()
        assert put["kind"] == "put" and put["registration"]["id"] == registration.service_id
        assert put["registration"]["attributes"][0]["fields"]["name"] == HOSTILE  # JSON: escaping is the page's

        registration.add_attributes([Name("second")])
        changed = stream.next()
        assert changed["kind"] == "put" and len(changed["registration"]["attributes"]) == 2

        registration.lease.renew(20)
        renewed = stream.next()
        assert renewed == {"kind": "renewed", "id": registration.service_id, "expires": renewed["expires"]}
        assert renewed["expires"] > put["registration"]["expires"] + 5000

        registration.lease.cancel()
        assert stream.next() == {"kind": "gone", "id": registration.service_id}
        stream.close()


def test_a_registration_that_expires_is_told_gone_on_the_service_s_clock() -> None:
    clock = FakeClock()
    service = LookupService(clock=clock, reaper="polling")
    try:
        with page_of(service) as page:
            stream = Stream(page)
            assert stream.next()["registrations"] == []
            registration = service.register(item(), 5)
            put = stream.next()["registration"]
            assert put["expires"] == round((clock.time() + 5) * 1000)  # the wall clock's ms, not monotonic
            clock.advance(6)
            service.manager.reap()
            assert stream.next() == {"kind": "gone", "id": registration.service_id}
    finally:
        service.close()


def test_a_renewal_while_nobody_streams_shows_in_the_next_client_s_snapshot() -> None:
    clock = FakeClock()
    service = LookupService(clock=clock, reaper="polling")
    try:
        with page_of(service) as page:
            registration = service.register(item(), 5)
            clock.advance(3)
            registration.lease.renew(10)  # nobody streams: the feed does not follow renewals
            [shown] = Stream(page).next()["registrations"]
            assert shown["expires"] == round((clock.time() + 10) * 1000)
    finally:
        service.close()


def test_with_the_admin_token_a_stream_shows_lease_prefixes_never_whole_cookies(service: LookupService) -> None:
    registration = service.register(item(), 30)
    with page_of(service) as page:
        admin, public = Stream(page, TOKEN), Stream(page)
        [shown] = admin.next()["registrations"]
        assert shown["lease"] == registration.lease.cookie[:LEASE_PREFIX_SHOWN]
        assert registration.lease.cookie not in json.dumps(shown)
        assert "lease" not in public.next()["registrations"][0]
        wrong = Stream(page, "not the operators' token at all")
        assert wrong.status == 403
        admin.close(), public.close(), wrong.close()


def test_each_client_gets_the_registrations_as_of_its_snapshot_and_every_change_after(
        service: LookupService) -> None:
    with page_of(service) as page:
        early = Stream(page)
        assert early.next()["registrations"] == []
        first = service.register(item(), 30)
        assert early.next()["kind"] == "put"
        late = Stream(page)
        assert [r["id"] for r in late.next()["registrations"]] == [first.service_id]
        second = service.register(item(), 30)
        assert early.next()["registration"]["id"] == late.next()["registration"]["id"] == second.service_id
        early.close(), late.close()


# -- the page and eviction -----------------------------------------------------------------------------------


def test_the_page_is_served_with_a_policy_that_allows_scripts_from_its_own_files_only(
        service: LookupService) -> None:
    with page_of(service) as page:
        status, body, headers = get(page, "/")
        assert status == 200 and b"/page.js" in body and headers["Content-Type"].startswith("text/html")
        assert "script-src 'self'" in headers["Content-Security-Policy"]
        assert get(page, "/page.js")[0] == get(page, "/page.css")[0] == 200
        assert get(page, "/nothing")[0] == 404
        script = get(page, "/page.js")[1].decode()
        assert "innerHTML" not in script and "insertAdjacentHTML" not in script and "textContent" in script


def test_evict_ends_a_lease_only_as_a_post_with_the_admin_token(service: LookupService) -> None:
    registration = service.register(item(), 30)
    prefix = registration.lease.cookie[:LEASE_PREFIX_SHOWN]
    with page_of(service) as page:
        assert get(page, "/evict", TOKEN)[0] == 405  # never GET, token or not
        assert post_evict(page, {"lease": prefix})[0] == 403
        assert post_evict(page, {"lease": prefix}, "a wrong token, long enough to be one")[0] == 403
        assert post_evict(page, {"lease": prefix}, TOKEN, content_type="text/plain")[0] == 400
        assert post_evict(page, {"lease": "x!"}, TOKEN)[0] == 400
        assert post_evict(page, {"lease": "zzzzzzzz"}, TOKEN)[0] == 404
        service.get_resource(registration.lease.cookie)  # still there after all of those
        assert post_evict(page, {"lease": prefix}, TOKEN) == (200, {"evicted": prefix})
        with pytest.raises(UnknownLeaseError):
            service.get_resource(registration.lease.cookie)


def test_a_service_without_an_admin_token_evicts_nothing_and_shows_no_leases(service: LookupService) -> None:
    registration = service.register(item(), 30)
    with BrowserServer(BrowserFeed(service)).start() as page:
        assert post_evict(page, {"lease": registration.lease.cookie[:8]}, TOKEN)[0] == 403
        assert Stream(page, TOKEN).status == 403
        service.get_resource(registration.lease.cookie)


def test_page_at_serves_the_page_for_serve_and_says_where(service: LookupService,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    with page_at("127.0.0.1", 0)(service, LandlordAdmin(service, token=TOKEN), TOKEN) as page:
        assert capsys.readouterr().out == f"lookup browser at {page.url}\n"
        assert get(page, "/")[0] == 200
    with pytest.raises(ValueError):
        page_at("127.0.0.1", 70000)


def test_page_at_with_a_closed_or_missing_stdout_still_serves_the_page(service: LookupService,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    closed = io.StringIO()
    closed.close()
    for stdout in (closed, None):
        monkeypatch.setattr(sys, "stdout", stdout)
        with page_at("127.0.0.1", 0)(service, None, None) as page:  # announcing, to nowhere
            assert get(page, "/")[0] == 200


# -- the admin token on loopback only, and the Host and Origin rules -------------------------------------------


REFUSED_HOSTS = ("rebound.test:{port}", "rebound.test", "localhost.rebound.test:{port}", "127.0.0.1.nip.io:{port}",
                 "localhost.:{port}", "[::1", "[::1]x", "::1", "localhost:port", "[127.0.0.1]:{port}", "")
MISDIRECTED = "this page answers at localhost or an IP address only"
TAKEN_HOSTS = ("localhost:{port}", "LOCALHOST", "127.0.0.1:{port}", "[::1]:{port}", "127.0.0.1:1", "192.0.2.9:80")


def test_a_loopback_page_answers_only_a_host_no_dns_answer_can_point_at_it(service: LookupService) -> None:
    with page_of(service) as page:
        port = page.address[1]
        for host in TAKEN_HOSTS:
            assert get(page, "/", host=host.format(port=port))[0] == 200, host
        for host in REFUSED_HOSTS:
            status, body, _ = get(page, "/", host=host.format(port=port))
            assert (status, json.loads(body)) == (421, {"error": MISDIRECTED}), host
        assert page.refusals["host"] == len(REFUSED_HOSTS)
        assert _raw(page, b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\nHost: rebound.test\r\n\r\n").startswith(
            b"HTTP/1.0 421 ")  # two: refused, whichever a proxy would take
        assert _raw(page, b"GET / HTTP/1.0\r\n\r\n").startswith(b"HTTP/1.0 200 ")  # none: no browser omits it
        smuggled = b"GET /page.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"  # a body the refused request carried
        answer = _raw(page, b"POST /evict HTTP/1.1\r\nHost: rebound.test\r\nContent-Length: %d\r\n\r\n%s"
                      % (len(smuggled), smuggled))
        assert answer.startswith(b"HTTP/1.0 421 ") and answer.count(b"HTTP/1.") == 1  # closed: not read as a request


def _raw(page: BrowserServer, request: bytes) -> bytes:
    with socket.create_connection(page.address, timeout=5) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def test_a_request_under_a_refused_host_changes_nothing_even_with_the_token(service: LookupService) -> None:
    registration = service.register(item(), 30)
    prefix = registration.lease.cookie[:LEASE_PREFIX_SHOWN]
    with page_of(service) as page:
        rebound = f"rebound.test:{page.address[1]}"
        assert post_evict(page, {"lease": prefix}, TOKEN, Host=rebound)[0] == 421
        assert get(page, "/events", TOKEN, host=rebound)[0] == 421
        assert page.feed.clients == 0  # no stream was opened
        assert page.refusals == {"connections": 0, "streams": 0, "host": 2, "origin": 0, "token": 0}
        service.get_resource(registration.lease.cookie)  # still held


def test_evict_is_refused_from_another_origin_even_with_the_token(service: LookupService) -> None:
    registration = service.register(item(), 30)
    prefix = registration.lease.cookie[:LEASE_PREFIX_SHOWN]
    with page_of(service) as page:
        own = f"127.0.0.1:{page.address[1]}"
        for origin in ("http://rebound.test", f"https://{own}", "null", f"http://localhost:{page.address[1]}"):
            assert post_evict(page, {"lease": prefix}, TOKEN, Origin=origin) == (
                403, {"error": "evicting is for this page's own origin"}), origin
        assert page.refusals["origin"] == 4
        service.get_resource(registration.lease.cookie)  # still held
        assert post_evict(page, {"lease": prefix}, TOKEN, Origin=f"http://{own}") == (200, {"evicted": prefix})


def test_a_page_not_on_loopback_is_read_only_answers_any_host_and_says_so(
        service: LookupService, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    registration = service.register(item(), 30)
    prefix = registration.lease.cookie[:LEASE_PREFIX_SHOWN]
    with page_at("0.0.0.0", 0)(service, LandlordAdmin(service, token=TOKEN), TOKEN) as page:
        assert not page.loopback and page.admin_dropped
        assert capsys.readouterr().out == f"lookup browser at {page.url}\nlookup browser: {read_only_note('0.0.0.0')}\n"
        assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
            f"lookup browser: {read_only_note('0.0.0.0')}"]
        assert get(page, "/", host="lookup.example")[0] == 200  # its name is the operator's
        [shown] = Stream(page).next()["registrations"]
        assert "lease" not in shown
        read_only = {"error": "this page is read-only: it takes the admin token on loopback only"}
        status, body, _ = get(page, "/events", TOKEN)
        assert (status, json.loads(body)) == (403, read_only)
        assert post_evict(page, {"lease": prefix}, TOKEN) == (403, read_only)
        assert page.refusals["token"] == 2
        service.get_resource(registration.lease.cookie)  # still held
    with page_at("127.0.0.1", 0)(service, LandlordAdmin(service, token=TOKEN), TOKEN) as page:
        assert page.loopback and not page.admin_dropped
        assert capsys.readouterr().out == f"lookup browser at {page.url}\n"  # no note


# -- hostile callers -----------------------------------------------------------------------------------------


class Canary:
    """A holder renewing its registration every 50 ms, counting renewals, until stopped."""

    def __init__(self, service: LookupService) -> None:
        self.registration = service.register(item("acme.Canary"), 2)
        self.renewals = 0
        self.failure: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.wait(0.05):
                self.registration.lease.renew(2)
                self.renewals += 1
        except BaseException as exc:  # noqa: BLE001 (reported by stop)
            self.failure = exc

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(5)
        assert self.failure is None, self.failure
        return self.renewals


def wait_until(condition: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_slow_loris_is_cut_off_at_the_read_deadline_and_the_canary_renews_throughout(
        service: LookupService) -> None:
    limits = PageLimits(connections=8, read_timeout=0.5)
    with page_of(service, limits=limits) as page:
        canary = Canary(service)
        loris = [socket.create_connection(page.address) for _ in range(8)]
        for sock in loris:
            sock.sendall(b"GET / HTTP/1.0\r\nX-Slow: ")
        started = time.monotonic()
        for sock in loris:  # a byte now and then: never a whole request
            sock.settimeout(3)
            with _ended_by_server(sock):
                while time.monotonic() - started < 3:
                    sock.sendall(b"a")
                    time.sleep(0.05)
        assert time.monotonic() - started < 2.5  # cut at about 0.5 s, not at 3
        assert get(page, "/")[0] == 200  # the threads came back
        assert canary.stop() > 0


class _ended_by_server:  # noqa: N801 (used as a context manager, named for what it checks)
    """Expects the server to end the connection: a send fails or a read sees its end."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> bool:
        if kind is not None:
            return issubclass(kind, OSError)
        assert self.sock.recv(1024) == b"", "the server kept a slow request open"
        return False


def test_connections_beyond_the_cap_are_closed_unanswered(service: LookupService) -> None:
    with page_of(service, limits=PageLimits(connections=4, read_timeout=2)) as page:
        held = [socket.create_connection(page.address) for _ in range(4)]
        assert wait_until(lambda: page.connections == 4, 3)
        extra = socket.create_connection(page.address, timeout=2)
        assert extra.recv(1024) == b""
        extra.close()
        for sock in held:
            sock.close()
        # the server frees their places as their threads see them closed: only then is there room again
        assert wait_until(lambda: page.connections == 0, 3)
        assert get(page, "/")[0] == 200


def test_an_oversized_request_is_refused_without_reading_it_all(service: LookupService) -> None:
    with page_of(service, limits=PageLimits(request_bytes=4096)) as page:
        sock = socket.create_connection(page.address, timeout=3)
        with _ended_by_server(sock):
            sock.sendall(b"GET / HTTP/1.0\r\n" + b"X-Big: " + b"a" * 60000 + b"\r\n\r\n")
        assert get(page, "/")[0] == 200


def test_a_flood_of_streams_is_capped_and_a_reader_that_stops_is_dropped_not_waited_for(
        service: LookupService) -> None:
    feed_limits = FeedLimits(clients=4, client_queue=8)
    with page_of(service, feed_limits=feed_limits, limits=PageLimits(send_timeout=0.5)) as page:
        canary = Canary(service)
        stalled = Stream(page, receive_buffer=4096)  # and never read
        readers = [Reader(Stream(page)) for _ in range(3)]
        assert Stream(page).status == 503  # the fifth
        started = time.monotonic()
        for number in range(FLOOD):  # 9 MB of puts: more than the stalled socket's buffers and its queue
            service.register(item(name=f"{number:05d}" + "x" * 30000), 30)
            if number % 2 == 1:  # the readers keep up (a burst beyond their queues would drop them too)
                assert all(wait_until(lambda r=reader, n=number: r.puts >= n, 5) for reader in readers)
        assert time.monotonic() - started < 20  # the service never waited for the stalled reader
        assert wait_until(lambda: page.feed.clients == 3, 5)  # it was dropped
        for reader in readers:  # the others had every change
            assert reader.wait() == FLOOD
        with pytest.raises((EOFError, ConnectionResetError)):  # ended by the server, not a timeout of ours
            while True:
                stalled.next()
        assert Stream(page).status == 200  # its place is free again
        assert canary.stop() > 0


FLOOD = 300


class Reader:
    """Reads a stream on a thread, counting the registrations put, until FLOOD of them."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self.puts = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while self.puts < FLOOD:
            if self.stream.next()["kind"] == "put":
                self.puts += 1

    def wait(self) -> int:
        self._thread.join(20)
        return self.puts


def test_a_rebinding_page_s_flood_reads_nothing_evicts_nothing_and_the_canary_renews_throughout(
        service: LookupService) -> None:
    victims = [service.register(item(name=f"victim {number}"), 30) for number in range(20)]
    with page_of(service) as page:
        canary = Canary(service)
        port = page.address[1]
        refused = 0
        for _ in range(10):  # what a rebound name and a foreign origin try, and a bloated Host
            for victim in victims:
                prefix = victim.lease.cookie[:LEASE_PREFIX_SHOWN]
                assert post_evict(page, {"lease": prefix}, TOKEN, Host=f"rebound.test:{port}")[0] == 421
                assert post_evict(page, {"lease": prefix}, TOKEN, Origin=f"http://rebound.test:{port}")[0] == 403
                refused += 1
            assert get(page, "/events", TOKEN, host="rebound.test" + ".x" * 4000)[0] == 421
        assert page.refusals == {"connections": 0, "streams": 0, "host": refused + 10, "origin": refused, "token": 0}
        assert page.feed.clients == 0 and wait_until(lambda: page.connections == 0, 3)
        for victim in victims:  # every lease still held, each by its own holder
            victim.lease.renew(30)
        [shown] = [r for r in Stream(page, TOKEN).next()["registrations"] if r["id"] == victims[0].service_id]
        assert shown["lease"] == victims[0].lease.cookie[:LEASE_PREFIX_SHOWN]  # the page itself still works
        assert canary.stop() > 0


def test_the_feed_resyncs_when_its_backlog_overflows(service: LookupService) -> None:
    feed = BrowserFeed(service, FeedLimits(backlog=2))
    for _ in range(5):  # not started: nothing drains the backlog
        feed.push(("put", "x", None, "", 0.0))
    assert feed._overflowed  # noqa: SLF001 (the flag the feed thread resyncs on)
    with BrowserServer(feed).start() as page:
        registration = service.register(item(), 30)
        stream = Stream(page)
        snapshot = stream.next()
        assert [r["id"] for r in snapshot["registrations"]] == [registration.service_id]
        stream.close()


def test_limits_are_checked() -> None:
    for bad in ({"clients": 0}, {"client_queue": True}, {"backlog": 1.5}):
        with pytest.raises(ValueError):
            FeedLimits(**bad)
    with pytest.raises(ValueError):
        PageLimits(read_timeout=0)


# -- the service's watchers, and the command line --------------------------------------------------------------


def test_watch_tells_each_change_in_order_and_a_failing_watcher_stops_nothing(
        service: LookupService, caplog: pytest.LogCaptureFixture) -> None:
    kept = service.register(item(name="kept"), 30)
    told: list[tuple[str, bool]] = []

    def failing(record: Any, ended: bool) -> None:
        raise RuntimeError("a broken watcher")

    assert [record.service_id for record in service.watch(lambda r, e: told.append((r.service_id, e)))] == [
        kept.service_id]
    assert service.watch(failing) == service.watch(failing)  # watched once: told once
    registration = service.register(item(), 30)
    registration.add_attributes([Name("more")])
    registration.lease.cancel()
    assert told == [(registration.service_id, False)] * 2 + [(registration.service_id, True)]
    assert [r.getMessage().startswith("registration watcher") for r in caplog.records] == [True] * 3
    kept.lease.renew(30)  # the service went on


def test_lookup_serve_http_port_serves_the_page_beside_the_service(tmp_path: Any) -> None:
    from lookup_processes import LookupProcess

    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    with LookupProcess("serve", "--port", "0", "--no-announce", "--http-port", "0",
                       "--admin-token-file", str(token_file)) as server:
        url = server.wait_for(r"^lookup browser at (http://127\.0\.0\.1:\d+/)$").group(1)
        with urllib.request.urlopen(url, timeout=5) as answer:
            assert answer.status == 200 and b"Lookup browser" in answer.read()


def test_lookup_serve_with_the_page_off_loopback_serves_it_read_only_and_the_pyro_admin_still_works(
        tmp_path: Any) -> None:
    from lookup_processes import READY, LookupProcess, run_lookup

    from landlord.testing import free_port

    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    port = free_port()
    with LookupProcess("serve", "--port", str(port), "--no-announce", "--http-host", "0.0.0.0", "--http-port", "0",
                       "--admin-token-file", str(token_file)) as server:
        page_port = server.wait_for(r"^lookup browser at http://0\.0\.0\.0:(\d+)/$").group(1)
        server.wait_for("^lookup browser: " + re.escape(read_only_note("0.0.0.0")) + "$")
        server.wait_for(re.escape(READY))
        events = urllib.request.Request(f"http://127.0.0.1:{page_port}/events", headers={TOKEN_HEADER: TOKEN})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(events, timeout=5)
        assert refused.value.code == 403 and b"read-only" in refused.value.read()
        leases = run_lookup("leases", "--port", str(port), "--token-file", str(token_file))
        assert leases.returncode == 0, leases.stderr  # the operator's admin, over Pyro, is unchanged


# -- on a replicated lookup service (lookup serve --etcd ... --http-port) ----------------------------------


def test_a_replicas_page_streams_its_terms_registrations_or_names_the_leader_and_follows_a_failover(
        cluster: EtcdCluster) -> None:
    pages: dict[int, BrowserServer] = {}

    def make(client: Any, name: str, uris: list[str]) -> ReplicatedLookupService:
        replica = ReplicatedLookupService(client, group=name, replicas=uris, max_lease=60)
        pages[id(replica)] = BrowserServer(TermFeed(replica), admin=LandlordAdmin(replica, token=TOKEN),
                                           admin_token=TOKEN).start()  # before the replica starts
        return replica

    group = ReplicaGroup(cluster, make, object_id=LOOKUP_OBJECT_ID).start()
    streams: list[Stream] = []
    try:
        leader = group.leader()
        group.wait_named(leader)
        registration = leader.register(item("acme.Quoter"), 30)
        streams.append(Stream(pages[id(leader)]))
        snapshot = streams[0].next()
        assert snapshot["kind"] == "snapshot" and [r["id"] for r in snapshot["registrations"]] == \
            [registration.service_id]
        for follower in group.followers(leader):
            streams.append(Stream(pages[id(follower)]))
            assert streams[-1].next() == {"kind": "follower", "leader": leader.uri}
        leader.close()
        successor = group.leader(excluding=leader)
        for ended in streams:  # the old term's feed closed; the followers' state changed (one leads, one follows it)
            with pytest.raises(EOFError):
                ended.next()
        with contextlib.closing(Stream(pages[id(successor)])) as stream:
            snapshot = stream.next()
        assert snapshot["kind"] == "snapshot" and [r["id"] for r in snapshot["registrations"]] == \
            [registration.service_id]
        with contextlib.closing(Stream(pages[id(leader)])) as stream:
            assert stream.next()["kind"] == "follower"
        prefix = {"lease": registration.lease.cookie[:LEASE_PREFIX_SHOWN]}
        assert post_evict(pages[id(leader)], prefix, TOKEN) == (409, {
            "error": "this replica does not lead now: evict on the leader's page"})
        assert post_evict(pages[id(successor)], prefix, TOKEN)[0] == 200  # the leader's page evicts
        with pytest.raises(LeaseDeniedError, match="evicted by an operator"):
            registration.lease.renew(30)
    finally:
        for stream in streams:
            stream.close()
        group.close()
        for page in pages.values():
            page.close()


def test_a_flood_of_follower_streams_is_capped_and_the_leaders_canary_and_page_go_on(cluster: EtcdCluster) -> None:
    pages: dict[int, BrowserServer] = {}

    def make(client: Any, name: str, uris: list[str]) -> ReplicatedLookupService:
        replica = ReplicatedLookupService(client, group=name, replicas=uris, max_lease=60)
        pages[id(replica)] = BrowserServer(TermFeed(replica, FeedLimits(clients=3))).start()
        return replica

    group = ReplicaGroup(cluster, make, object_id=LOOKUP_OBJECT_ID).start()
    held: list[Stream] = []
    try:
        leader = group.leader()
        group.wait_named(leader)  # else a follower's stream ends when it learns who leads
        canary = Canary(leader)
        follower = pages[id(group.followers(leader)[0])]
        for _ in range(3):  # never read again: heartbeats only, a few bytes a second
            held.append(Stream(follower, receive_buffer=4096))
            assert held[-1].status == 200 and held[-1].next()["kind"] == "follower"
        assert Stream(follower).status == 503  # the fourth
        assert post_evict(follower, {"lease": "abcdefgh"})[0] == 403  # no token: nothing to evict with
        assert follower.feed.clients == 3
        with contextlib.closing(Stream(pages[id(leader)])) as stream:
            assert [r["id"] for r in stream.next()["registrations"]] == [canary.registration.service_id]
        renewed = canary.renewals
        assert wait_until(lambda: canary.renewals >= renewed + 3, 5)  # still renewing, the streams held
        canary.stop()
    finally:
        for stream in held:
            stream.close()
        group.close()
        for page in pages.values():
            page.close()


def test_lookup_serve_etcd_http_port_serves_the_replicas_page(cluster: EtcdCluster) -> None:
    group, port = new_group(), free_port()
    with ChildProcess("-m", "lookup", "serve", "--etcd", ",".join(cluster.endpoints), "--group", group,
                      "--replicas", f"127.0.0.1:{port}", "--port", str(port), "--no-announce", "--http-port", "0",
                      "--metrics-port", "0", name="replica with a page") as replica:
        url = replica.wait_for(r"^lookup browser at (http://127\.0\.0\.1:\d+/)$").group(1)
        uri = replica.read_uri(20, pattern=r"^lookup service at (?P<uri>\S+) ")
        metrics = replica.wait_for(r"lookup service metrics at (http://\S+/metrics)").group(1)  # printed after
        with Pyro5.api.Proxy(uri) as proxy:
            assert wait_until(lambda: proxy.replica_status()["leading"], FAILOVER)  # the only replica leads
            registration = proxy.register(item("acme.Quoter"), 30)
        address = urllib.parse.urlsplit(url)
        with contextlib.closing(Stream((str(address.hostname), int(address.port or 0)))) as stream:
            snapshot = stream.next()
        assert [r["id"] for r in snapshot["registrations"]] == [registration.service_id]
        with pytest.raises(urllib.error.HTTPError, match="421"):  # a rebound name: refused, and counted
            urllib.request.urlopen(urllib.request.Request(url, headers={"Host": "rebound.example"}), timeout=5)
        with urllib.request.urlopen(metrics, timeout=5) as scraped:
            assert 'lookup_browser_refused_total{rule="host"} 1.0' in scraped.read().decode()
