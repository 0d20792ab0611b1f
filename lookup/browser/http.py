"""The lookup browser's HTTP server: the page, its stream of registration changes, and eviction.

Served by the standard library's :class:`http.server.ThreadingHTTPServer` on
threads of its own: the page is three small files and a stream, which needs no
framework, and no dependency is one less thing for an operator to install and
keep patched. What the standard server lacks against hostile callers is added here:

* one request per connection (HTTP/1.0), read under one deadline for the
  request line, headers and body together (``PageLimits.read_timeout``), and
  at most ``PageLimits.request_bytes`` of it: a slow-loris is cut off at the
  deadline, never holding a thread longer;
* at most ``PageLimits.connections`` connections at once (one more is closed at
  once), and at most :attr:`FeedLimits.clients <lookup.browser.feed.FeedLimits>`
  streams (one more is answered 503);
* a stream's writes time out (``PageLimits.send_timeout``), and its queue is
  bounded by the feed, which drops a slow reader;
* nothing changes state without the admin token: ``POST /evict`` (never GET),
  with the token in the ``X-Admin-Token`` header, compared in constant time,
  from the page's own origin (a foreign ``Origin`` is refused);
* the token is taken only by a page listening on loopback, where it never
  crosses a network in clear: a page on any other address is read-only (no
  leases, no eviction, a request carrying a token refused) and says so at
  start. Plain HTTP cannot do better: a page served in clear from a
  non-loopback origin has no WebCrypto HMAC for a challenge-response, and
  whoever captures the header can replay it (to the Pyro admin too, whose
  token it is);
* a page on loopback answers only a ``Host`` that no stranger's DNS can point
  at it (``localhost`` or an IP literal, any port, or no ``Host``, which no
  browser omits), 421 otherwise: a DNS-rebinding page cannot read it nor use
  a token through it. A page on another address answers any ``Host``: it is
  reachable directly, read-only, and its name is the operator's to choose.

Every refusal is counted by rule (:attr:`BrowserServer.refusals`).

Paths: ``GET /`` (the page), ``GET /page.js``, ``GET /page.css``, ``GET /events``
(the stream: ``text/event-stream``, one ``data:`` line of JSON per message, see
:mod:`lookup.browser.feed`; with a good ``X-Admin-Token``, registrations carry
their lease's prefix), ``POST /evict`` (``{"lease": prefix}``: the lease ends as
``lookup evict`` ends it, through the landlord admin's eviction).
"""

from __future__ import annotations

import hmac
import http.server
import io
import ipaddress
import json
import logging
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import Pyro5.errors

from landlord import NotLeaderError, UnknownLeaseError
from landlord.admin import AdminRefusedError, LandlordAdmin
from landlord.serving import print_line
from landlord.transport.addresses import is_loopback

from ..service.lookupservice import LookupService
from .feed import BrowserFeed, FeedLimits, Subscription
from .page import PAGE_FILES
from .terms import Replica, TermFeed

__all__ = ["BrowserServer", "PageLimits", "PageStarter", "page_at", "read_only_note",
           "DEFAULT_HTTP_HOST", "REFUSAL_RULES", "TOKEN_HEADER"]

log = logging.getLogger("lookup.browser")

DEFAULT_HTTP_HOST = "127.0.0.1"  #: loopback: the page shows every registration; opening it wider is a choice
TOKEN_HEADER = "X-Admin-Token"  #: the header the page sends the admin token in
REFUSAL_RULES = ("connections", "streams", "host", "origin", "token")  #: what BrowserServer.refusals counts
_HEARTBEAT = 10.0  # seconds between comments on an idle stream: a client gone is found out by the write
_SECURITY_HEADERS = {
    # even a bug that put data into markup could run nothing: scripts only from this server's files
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                               "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@dataclass(frozen=True)
class PageLimits:
    """What one caller may make the page's server do.

    Args:
        connections: connections served at once (one more is closed unanswered).
        read_timeout: seconds to read a whole request (line, headers and body).
        request_bytes: bytes of a whole request, at most.
        send_timeout: seconds one write to a stream may block (a client that stops reading).

    Raises:
        ValueError: a limit that is not positive.
    """

    connections: int = 64
    read_timeout: float = 5.0
    request_bytes: int = 16384
    send_timeout: float = 5.0

    def __post_init__(self) -> None:
        for name in ("connections", "read_timeout", "request_bytes", "send_timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")


class _DeadlineReader(io.RawIOBase):
    """A socket's bytes, until a deadline and up to a size: what a request is read from."""

    def __init__(self, connection: socket.socket, deadline: float, size: int) -> None:
        self._connection = connection
        self._deadline = deadline
        self._left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request took too long to arrive")
        if self._left <= 0:
            raise ValueError("the request is too large")
        self._connection.settimeout(left)
        view = memoryview(buffer)[:self._left]
        count = self._connection.recv_into(view)
        self._left -= count
        return count


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], page: BrowserServer) -> None:
        self.page = page
        self._open = threading.BoundedSemaphore(page.limits.connections)
        self.serving = 0  # connections served now
        self._count = threading.Lock()
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._open.acquire(blocking=False):  # full: closed unanswered, costing no thread
            self.page.refused("connections")
            self.shutdown_request(request)
            return
        self._counted(1)
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._ended()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._ended()

    def _counted(self, change: int) -> None:
        with self._count:
            self.serving += change

    def _ended(self) -> None:
        self._open.release()  # first: once the count says a place is free, it is
        self._counted(-1)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("lookup browser: a request from %s failed", client_address, exc_info=True)


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"  # one request per connection: one read deadline covers it all
    server_version = "lookup-browser"

    def version_string(self) -> str:
        return self.server_version  # no Python version for a stranger to look up

    def setup(self) -> None:
        super().setup()
        limits = self.server.page.limits
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, time.monotonic() + limits.read_timeout,
                                                       limits.request_bytes))

    def handle(self) -> None:
        try:
            self.handle_one_request()
        except (TimeoutError, ValueError, OSError):  # slow, too large, or gone: the connection just ends
            self.close_connection = True

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        page = self.server.page
        if page.loopback and not _rebinding_proof(self.headers.get_all("Host") or []):
            page.refused("host")
            self.close_connection = True  # its body, unread, must not be taken for the next request
            self._reply(421, {"error": "this page answers at localhost or an IP address only"})
            return False
        return True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        log.debug("lookup browser: %s %s", self.address_string(), format % args)

    def do_GET(self) -> None:  # noqa: N802 (the base class's name)
        path = self.path.split("?", 1)[0]
        if path == "/events":
            self._stream()
        elif path == "/evict":
            self._reply(405, {"error": "evict is POST, with the admin token"}, allow="POST")
        elif path in PAGE_FILES:
            content_type, body = PAGE_FILES[path]
            self._send(200, content_type, body)
        else:
            self._reply(404, {"error": "no such page"})

    def do_POST(self) -> None:  # noqa: N802
        if self.path != "/evict":
            self._reply(404, {"error": "no such page"})
            return
        self.server.page.evict(self)

    def do_HEAD(self) -> None:  # noqa: N802
        self._reply(405, {"error": "GET or POST only"}, allow="GET, POST")

    def _stream(self) -> None:
        page = self.server.page
        admin = page.admitted(self.headers.get(TOKEN_HEADER))
        if admin is None:
            page.refused("token")
            self._reply(403, {"error": page.token_refusal})
            return
        subscription = page.feed.subscribe(admin)
        if subscription is None:
            page.refused("streams")
            self._reply(503, {"error": "too many page clients; try again later"})
            return
        try:
            self.connection.settimeout(page.limits.send_timeout)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self._security_headers()
            self.end_headers()
            self._pump(subscription)
        finally:
            page.feed.unsubscribe(subscription)

    def _pump(self, subscription: Subscription) -> None:
        while not subscription.dropped:
            message = subscription.next(_HEARTBEAT)
            if message is None:
                if subscription.dropped:
                    return
                self.wfile.write(b": still here\n\n")
            else:
                self.wfile.write(b"data: " + message + b"\n\n")
            self.wfile.flush()

    def read_json(self) -> Any:
        """The request's JSON body (at most 1 KiB), or ``None`` if it has none, or not JSON.

        Raises:
            TimeoutError, ValueError: it came too slowly, or is larger than the request's limit.
        """
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            return None
        if not 0 < length <= 1024 or self.headers.get_content_type() != "application/json":
            return None
        try:
            return json.loads(self.rfile.read(length))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return None

    def _reply(self, status: int, body: dict[str, Any], allow: str | None = None) -> None:
        extra = {"Allow": allow} if allow is not None else {}
        self._send(status, "application/json; charset=utf-8", json.dumps(body).encode(), extra)

    def reply(self, status: int, body: dict[str, Any]) -> None:
        """Answer with ``status`` and ``body`` as JSON."""
        self._reply(status, body)

    def same_origin(self) -> bool:
        """Whether the request has no ``Origin`` (not sent from a page: no browser omits it on a POST)
        or this page's own (``http://`` and its ``Host``)."""
        origin = self.headers.get("Origin")
        host = self.headers.get("Host")
        return origin is None or (host is not None and origin.lower() == f"http://{host}".lower())

    def _send(self, status: int, content_type: str, body: bytes, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self._security_headers()
        self.end_headers()
        self.wfile.write(body)

    def _security_headers(self) -> None:
        for name, value in _SECURITY_HEADERS.items():
            self.send_header(name, value)


class BrowserServer:
    """The lookup browser: the page and its stream over HTTP, on threads of its own.

    Args:
        feed: the registration changes it streams (started here if it was not): a service's, or a
            replica's (:class:`~lookup.browser.terms.TermFeed`).
        host: the address to listen on (default loopback).
        port: the port (0: any free one; see :attr:`address`).
        admin: the landlord admin that evicts; ``None``: no eviction, no leases shown.
        admin_token: the admin token a page must send to see leases and evict (``None``: nobody may);
            taken only if ``host`` is loopback (:attr:`loopback`): elsewhere it would travel in clear,
            so the page is read-only, and says so in the log.
        limits: what one caller may make it do.

    Raises:
        OSError: the address cannot be bound.
        ValueError: an ``admin_token`` without ``admin``.
    """

    def __init__(self, feed: BrowserFeed | TermFeed, *, host: str = DEFAULT_HTTP_HOST, port: int = 0,
                 admin: LandlordAdmin | None = None, admin_token: str | None = None,
                 limits: PageLimits | None = None) -> None:
        if admin_token is not None and admin is None:
            raise ValueError("an admin token needs the admin that evicts")
        self.feed = feed
        self.limits = limits if limits is not None else PageLimits()
        self.loopback = is_loopback(host)  # the only place the token cannot be read off a network
        self.admin_dropped = admin_token is not None and not self.loopback  # read-only for want of loopback
        if self.admin_dropped:
            admin, admin_token = None, None
        self._admin = admin
        self._token = admin_token.encode() if admin_token is not None else None
        self._refusals: Counter[str] = Counter()
        self._counting = threading.Lock()
        self._server = _Server((host, port), self)
        if self.admin_dropped:  # once bound: a page that never listens has nothing to say
            log.warning("lookup browser: %s", read_only_note(host))
        self._thread = threading.Thread(target=self._server.serve_forever, name="lookup-browser", daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        """The host and port it listens on."""
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def connections(self) -> int:
        """How many connections it serves now."""
        return self._server.serving

    @property
    def url(self) -> str:
        """The page's address."""
        host, port = self.address
        return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"

    def start(self) -> BrowserServer:
        """Start the feed (if not yet) and serve (if not yet); return itself."""
        self.feed.start()
        if not self._thread.is_alive():
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, end every stream, and close the listening socket."""
        self._server.shutdown()
        self.feed.close()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> BrowserServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def refusals(self) -> dict[str, int]:
        """Requests and connections refused so far, by rule (:data:`REFUSAL_RULES`)."""
        with self._counting:
            return {rule: self._refusals[rule] for rule in REFUSAL_RULES}

    def refused(self, rule: str) -> None:
        """Count one refusal by ``rule``."""
        with self._counting:
            self._refusals[rule] += 1

    @property
    def token_refusal(self) -> str:
        """What a request with a token it does not take is told."""
        return ("this page is read-only: it takes the admin token on loopback only" if not self.loopback
                else "wrong admin token")

    def admitted(self, token: str | None) -> bool | None:
        """Whether a request with ``token`` (its ``X-Admin-Token``, or ``None``) sees the admin's
        view: ``False`` without a token, ``True`` with the right one, ``None`` with a wrong one."""
        if token is None:
            return False
        if self._token is None or not hmac.compare_digest(token.encode("utf-8", "replace"), self._token):
            return None
        return True

    def evict(self, request: _Handler) -> None:
        """``POST /evict``: end the lease whose cookie starts with the body's ``"lease"``, as ``lookup evict`` does."""
        if not request.same_origin():
            self.refused("origin")
            request.reply(403, {"error": "evicting is for this page's own origin"})
            return
        token = request.headers.get(TOKEN_HEADER)
        if self._admin is None or not self.admitted(token):
            self.refused("token")
            request.reply(403, {"error": "evicting needs the admin token" if self.loopback else self.token_refusal})
            return
        body = request.read_json()
        prefix = body.get("lease") if isinstance(body, dict) else None
        if not isinstance(prefix, str):
            request.reply(400, {"error": 'send {"lease": cookie prefix} as application/json'})
            return
        try:
            row = self._admin.evict(prefix, token=token)
        except AdminRefusedError:
            request.reply(403, {"error": "evicting needs the admin token"})
        except UnknownLeaseError as exc:
            request.reply(404, {"error": str(exc)})
        except (NotLeaderError, Pyro5.errors.ConnectionClosedError):  # a replica's page, the replica not leading
            request.reply(409, {"error": "this replica does not lead now: evict on the leader's page"})
        except (TypeError, ValueError) as exc:
            request.reply(400, {"error": str(exc)})
        else:
            log.info("lookup browser: evicted lease %s… for %s", row.get("cookie"), request.address_string())
            request.reply(200, {"evicted": row.get("cookie")})


def page_at(host: str = DEFAULT_HTTP_HOST, port: int = 0, *, announce: bool = True,
            limits: PageLimits | None = None, feed_limits: FeedLimits | None = None) -> PageStarter:
    """What :func:`lookup.service.server.serve` calls (its ``page=``) to serve the browser page
    beside the service: a :class:`BrowserServer` at ``host:port`` that, once it listens,
    prints ``lookup browser at http://HOST:PORT/`` (flushed) unless ``announce`` is false,
    and after it a note if the page is read-only for want of loopback (:func:`read_only_note`).

    Args:
        host, port: where it listens (port 0: any free one).
        announce: print where it is.
        limits, feed_limits: its bounds.

    Raises:
        ValueError: ``port`` not 0 to 65535.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port must be 0 to 65535, got {port!r}")

    def start(service: LookupService | Replica, admin: LandlordAdmin | None, admin_token: str | None
              ) -> BrowserServer:
        feed = BrowserFeed(service, feed_limits) if isinstance(service, LookupService) else TermFeed(service,
                                                                                                   feed_limits)
        page = BrowserServer(feed, host=host, port=port,
                             admin=admin if admin_token is not None else None, admin_token=admin_token,
                             limits=limits).start()
        if announce:
            print_line(f"lookup browser at {page.url}")
            if page.admin_dropped:
                print_line(f"lookup browser: {read_only_note(host)}")
        log.log(logging.DEBUG if announce else logging.INFO, "lookup browser at %s", page.url)
        return page

    return start


#: ``start(service, admin, admin_token)``: a started page server, closed (as a context manager) with the service;
#: ``service`` a replica (made, not started) serves the page of the terms it leads
PageStarter = Callable[[LookupService | Replica, "LandlordAdmin | None", "str | None"], BrowserServer]


def read_only_note(host: str) -> str:
    """What a page at ``host``, given the admin token but not on loopback, says once at start."""
    return (f"the page at {host} is read-only (no leases, no evict): the admin token would cross the "
            f"network in clear over plain HTTP, so the page takes it on loopback only; the Pyro admin "
            f"(lookup leases/evict) still works")


def _rebinding_proof(hosts: list[str]) -> bool:
    """Whether ``hosts`` (a request's ``Host`` headers) name this machine in a way no DNS answer can
    fake: none (no browser sends none), or one, ``localhost`` or an IP literal, with any port or none."""
    if not hosts:
        return True
    if len(hosts) > 1:
        return False
    name, port = _split_host(hosts[0].strip().lower())
    if port and not port.isdigit():
        return False
    if name == "localhost":
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _split_host(host: str) -> tuple[str, str]:
    """``host[:port]`` or ``[v6][:port]`` as (name, port); a malformed one as a name no rule takes."""
    if host.startswith("["):
        name, bracket, rest = host[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return "", ""
        return name if ":" in name else "", rest[1:]
    name, _, port = host.partition(":")
    return name, port
