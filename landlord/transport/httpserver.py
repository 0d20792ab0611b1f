"""A small HTTP server that no client can hold: :class:`HttpServer`, what health checks and metrics are served by.

The standard library's ``http.server`` gives each connection a thread that
waits on its client with a timeout restarted at every byte: a client sending
a byte every few seconds keeps its thread as long as it likes, and a
thousand such clients keep a thousand threads. This server waits on every
connection from one thread of its own (an asyncio loop), by rules a client
cannot stretch:

- **A bounded request.** A request is its request line and headers (a body
  is never read), at most :attr:`HttpLimits.head_bytes`; more is answered
  431 and closed.
- **A deadline.** The whole request must arrive within
  :attr:`HttpLimits.deadline` seconds of connecting (however it trickles in),
  and the answer be taken within as many; else the connection is closed.
- **Bounded connections.** At most :attr:`HttpLimits.connections_per_host`
  at once from one client address (an IPv6 peer by its /64, as the guarded
  server counts: :func:`~landlord.transport.clients.client_of_address`), and
  :attr:`HttpLimits.connections` in all. One more pushes out the oldest
  connection still sending its request (a scraper's request takes a
  millisecond: the oldest is a slow client's) of its own client if that
  client is at its limit, else of the client holding the most connections,
  so that slow clients hold up only themselves, not a scraper with one
  connection; if there is none to push out, the new one is answered 503.
- **Pages on their threads.** Quick pages (health checks) are answered on the
  loop's thread; slow ones (a scrape of metrics) on one worker thread, one at
  a time, so that a flood of scrapes takes at most one thread's share of the
  process from the server it watches.
- One request a connection (``Connection: close``); ``GET`` and ``HEAD`` only.

:func:`parse_head` reads a request's head, and raises :class:`BadRequest`;
it does no I/O, so its rules are tested without sockets.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import dataclasses
import http
import logging
import socket
import threading
from collections.abc import Callable, Mapping
from typing import NamedTuple

from .clients import client_of_address

__all__ = ["HttpServer", "HttpLimits", "Request", "Answer", "Page", "BadRequest", "parse_head", "text_answer"]

log = logging.getLogger("landlord.httpserver")

JOIN_TIMEOUT = 5.0  # seconds close() waits for the server's thread
# connections the kernel queues before the loop accepts them: past it, a scraper's connect waits a second
# for its SYN to be sent again, behind a burst of a slow client's connections (the limits close those)
BACKLOG = 1024
_END_OF_HEAD = b"\r\n\r\n"
_METHODS = ("GET", "HEAD")
TEXT = "text/plain; charset=utf-8"


@dataclasses.dataclass(frozen=True)
class HttpLimits:
    """What one client may take of an :class:`HttpServer` (see the module docstring).

    Args:
        head_bytes: the most a request (its line and headers) may be.
        deadline: seconds a request may take to arrive whole from connecting, and its answer to be taken.
        connections: the most connections held at once.
        connections_per_host: the most connections one client address may hold at once.

    Raises:
        ValueError: a limit that is not positive.
    """

    head_bytes: int = 8192
    deadline: float = 5.0
    connections: int = 128
    connections_per_host: int = 16

    def __post_init__(self) -> None:
        for name in ("head_bytes", "connections", "connections_per_host"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r:.40}")
        if isinstance(self.deadline, bool) or not isinstance(self.deadline, (int, float)) or not self.deadline > 0:
            raise ValueError(f"deadline must be a positive number of seconds, got {self.deadline!r:.40}")


@dataclasses.dataclass(frozen=True)
class Request:
    """A request as its head says: ``headers`` by lower-case name (a repeated header: its last value)."""

    method: str
    path: str
    query: str
    headers: Mapping[str, str]


class Answer(NamedTuple):
    """What a page answers: a status, its headers (``Content-Length`` and ``Connection`` are the server's)
    and a body."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


Page = Callable[[Request], Answer]


def text_answer(status: int, text: str) -> Answer:
    """An answer of ``text`` (a line) as plain UTF-8 text."""
    return Answer(status, (("Content-Type", TEXT),), f"{text}\n".encode())


class BadRequest(ValueError):
    """A request head that is not HTTP; ``str()`` says why."""


def parse_head(head: bytes) -> Request:
    """The request ``head`` (its line and headers, up to the blank line) says.

    Raises:
        BadRequest: not a request line of a method, a path (``/...``) and ``HTTP/1.x``, or a header line
            without a name.
    """
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[0].isalpha() or not parts[0].isupper() \
            or not parts[1].startswith("/") or parts[2] not in ("HTTP/1.0", "HTTP/1.1"):
        raise BadRequest(f"not an HTTP/1 request line: {lines[0]!r:.80}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise BadRequest(f"not a header line: {line!r:.80}")
        headers[name.lower()] = value.strip()
    path, _, query = parts[1].partition("?")
    return Request(parts[0], path, query, headers)


class HttpServer:
    """Answer HTTP at ``host:port`` from now until closed, on a thread of its own (see the module docstring).

    Args:
        host: the address to listen on (``0.0.0.0``, ``::`` or ``""``: every interface).
        port: the port (0: any free one; :attr:`port` says which).
        pages: what each path answers, made on the server's thread: quick pages only.
        slow_pages: what more paths answer, made on a worker thread, one at a time.
        limits: what one client may take (default: :class:`HttpLimits`' defaults).
        name: what its threads are called.

    Raises:
        OSError: the address is in use or cannot be bound.
    """

    def __init__(self, host: str, port: int, *, pages: Mapping[str, Page], slow_pages: Mapping[str, Page] = {},
                 limits: HttpLimits | None = None, name: str = "http") -> None:
        self._limits = limits if limits is not None else HttpLimits()
        self._pages, self._slow_pages = dict(pages), dict(slow_pages)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.create_server((host, port), family=family, backlog=BACKLOG)
        self.host: str = str(sock.getsockname()[0])
        self.port: int = int(sock.getsockname()[1])
        self._refused: collections.Counter[str] = collections.Counter()  # written on the loop's thread alone
        # the loop's thread's alone: each connection's client, those still sending (oldest first), per client
        self._open: dict[asyncio.Task[None], str] = {}
        self._reading: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        self._per_host: collections.Counter[str] = collections.Counter()
        self._loop = asyncio.new_event_loop()
        self._stop_asked = self._loop.create_future()
        self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"{name} {self.port} pages")
        self._thread = threading.Thread(target=self._run, args=(sock,), name=f"{name} {self.port}", daemon=True)
        self._closed = False
        self._thread.start()

    def refused(self) -> dict[str, int]:
        """Connections closed or refused so far, by rule: ``deadline``, ``too large``, ``malformed``,
        ``cut off``, ``pushed out``, ``busy``, ``slow reader``."""
        return dict(self._refused)

    def connections(self) -> tuple[int, int]:
        """The connections held now, and how many of them are still sending their request."""
        return len(self._open), len(self._reading)

    def close(self) -> None:
        """Stop answering (connections being answered are closed) and free the port. Idempotent."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(RuntimeError):  # its loop has ended already
            self._loop.call_soon_threadsafe(self._stop_asked.set_result, None)
        self._thread.join(JOIN_TIMEOUT)
        self._worker.shutdown(wait=False, cancel_futures=True)

    # -- the loop's thread ---------------------------------------------------------------------------

    def _run(self, sock: socket.socket) -> None:
        try:
            self._loop.run_until_complete(self._serve(sock))
        except Exception:
            log.exception("the HTTP server at port %d stopped", self.port)
        finally:
            sock.close()
            self._loop.close()

    async def _serve(self, sock: socket.socket) -> None:
        server = await asyncio.start_server(self._connection, sock=sock, limit=self._limits.head_bytes,
                                            backlog=BACKLOG)
        await self._stop_asked
        server.close()
        for task in list(self._open):
            task.cancel()
        await asyncio.gather(*self._open, return_exceptions=True)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None  # a connection's handler runs as a task of its own
        writer.transport.set_write_buffer_limits(high=0)  # drain() waits until the kernel has taken it all
        if not self._admit(task, writer):
            return
        try:
            await self._exchange(reader, writer, task)
        except (ConnectionError, OSError) as exc:
            log.debug("an HTTP client at port %d went: %s", self.port, exc)
        finally:
            self._forget(task)
            writer.transport.abort()  # a no-op once closed; else (cancelled, failed) nothing more is sent

    def _admit(self, task: asyncio.Task[None], writer: asyncio.StreamWriter) -> bool:
        """Hold the connection, pushing out one still sending if there are too many (see the module
        docstring); or refuse it."""
        host = client_of_address(writer.get_extra_info("peername"))
        if self._per_host[host] >= self._limits.connections_per_host:
            room = self._push_out(host)
        elif len(self._open) >= self._limits.connections:
            sending = {self._open[other] for other in self._reading}
            room = bool(sending) and self._push_out(max(sending, key=lambda client: self._per_host[client]))
        else:
            room = True
        if not room:
            self._refuse(writer, "busy", text_answer(503, "busy: too many connections"))
            return False
        self._open[task] = host
        self._per_host[host] += 1
        self._reading[task] = writer
        return True

    def _push_out(self, client: str) -> bool:
        """Close ``client``'s oldest connection still sending; whether there was one."""
        oldest = next((task for task in self._reading if self._open[task] == client), None)
        if oldest is None:
            return False
        its_writer = self._reading[oldest]
        self._forget(oldest)
        self._refused["pushed out"] += 1
        its_writer.transport.abort()
        oldest.cancel()
        return True

    def _forget(self, task: asyncio.Task[None]) -> None:
        """``task``'s connection is no longer held (idempotent)."""
        self._reading.pop(task, None)
        host = self._open.pop(task, None)
        if host is not None:
            self._per_host[host] -= 1
            if not self._per_host[host]:
                del self._per_host[host]
    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                        task: asyncio.Task[None]) -> None:
        """Read the request within the limits, answer it, close."""
        request = await self._request(reader, writer)
        if request is None:
            return
        del self._reading[task]
        answer = await self._answer(request)
        writer.write(_encoded(answer, body=request.method != "HEAD"))
        try:
            await asyncio.wait_for(writer.drain(), self._limits.deadline)
        except asyncio.TimeoutError:
            self._refused["slow reader"] += 1  # closed (by the caller) with the rest unsent
            return
        writer.close()

    async def _request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Request | None:
        """The request, read whole within the limits; ``None`` if it was not (the client told why, if it
        still listens)."""
        try:
            return parse_head(await asyncio.wait_for(reader.readuntil(_END_OF_HEAD), self._limits.deadline))
        except asyncio.TimeoutError:
            self._refuse(writer, "deadline", text_answer(408, "request not sent in time"))
        except asyncio.LimitOverrunError:
            self._refuse(writer, "too large", text_answer(431, "request too large"))
        except asyncio.IncompleteReadError as exc:
            if exc.partial.strip():  # a connection that said nothing and went costs nothing more
                self._refuse(writer, "cut off", text_answer(400, "request cut off"))
        except BadRequest as exc:
            self._refuse(writer, "malformed", text_answer(400, str(exc)))
        return None

    async def _answer(self, request: Request) -> Answer:
        if request.method not in _METHODS:
            return Answer(405, (("Content-Type", TEXT), ("Allow", ", ".join(_METHODS))), b"GET or HEAD only\n")
        page = self._pages.get(request.path)
        if page is not None:
            return _made(page, request)
        slow = self._slow_pages.get(request.path)
        if slow is not None:
            return await asyncio.get_running_loop().run_in_executor(self._worker, _made, slow, request)
        return text_answer(404, "not found")

    def _refuse(self, writer: asyncio.StreamWriter, rule: str, answer: Answer) -> None:
        """Send ``answer`` if the kernel takes it at once (it is small), and close."""
        self._refused[rule] += 1
        log.debug("HTTP server at port %d: closed a connection (%s)", self.port, rule)
        writer.write(_encoded(answer, body=True))
        writer.close()

    def __repr__(self) -> str:
        return f"HttpServer({self.host!r}, {self.port})"


def _made(page: Page, request: Request) -> Answer:
    """``page``'s answer to ``request``; 500 if it failed (logged)."""
    try:
        return page(request)
    except Exception:
        log.exception("cannot answer %s", request.path[:80])
        return text_answer(500, "error")


def _encoded(answer: Answer, *, body: bool) -> bytes:
    """The answer as HTTP/1.1 puts it on the wire (without its body for a ``HEAD``)."""
    reason = http.HTTPStatus(answer.status).phrase
    lines = [f"HTTP/1.1 {answer.status} {reason}", *(f"{name}: {value}" for name, value in answer.headers),
             f"Content-Length: {len(answer.body)}", "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1") + (answer.body if body else b"")
