"""The asyncio Pyro5 transport: awaitable calls to Pyro5 objects, on a bounded :class:`CallPool`.

A call takes one of two paths:

* **asyncio streams** (:class:`StreamCalls`): the renewals and cancels of a
  plain remote landlord's leases (a :class:`~landlord.LandlordLease` naming a
  ``PYRO:`` URI with host and port, no TLS) go out
  from the loop itself, as Pyro5 messages (``Pyro5.protocol``) on stream
  connections: up to ``max_workers`` per landlord, one call at a time on each;
* **worker threads**: everything else (a landlord in this process, a
  replicated landlord's group and leader, TLS, leases of
  other kinds, :func:`call`, a :class:`~landlord.LeaseMap`) runs the sync code
  on a worker of a bounded :class:`CallPool`; each worker keeps its own Pyro5
  proxies, one per URI, as :mod:`landlord.transport.proxies` does for any thread.

Both paths speak landlord's serializer (:mod:`landlord.transport.serializers`).

**Why streams, where they can.** Both ways were measured from one loop
against a landlord in another process (``benchmarks/bench_aio.py``; the
figures are in ``docs/performance.md`` and ``docs/asyncio.md``). Streams
renewed more than the worker threads one at a time (no hop to a thread and
back per call), and far more with 100 renewals at once (8 threads contend
for the GIL to do what one loop does between its reads). The first
prototype pipelined every call on one connection and was the slowest at 100
at once: Pyro5 daemons leave Nagle's algorithm on, so an answer sent while the
one before is unacknowledged waits for the client's delayed ACK; hence one
call per connection. A connection whose call failed, timed out or was
cancelled is closed, never reused, and the error is a Pyro5
``CommunicationError`` (``TimeoutError`` for the time running out) as from a
proxy, so callers classify it the same way. What streams cannot do safely
(TLS, a replica group's leader, an in-process landlord) keeps the thread
path, which reuses the sync code as it is.

**The pool.** :class:`CallPool` holds at most ``max_workers`` threads
(default :data:`DEFAULT_MAX_WORKERS`, 8) and as many stream connections per
landlord: at most that many calls are in flight at once (per landlord on the
streams), the rest wait their turn on the loop. Every function and class of
:mod:`landlord.aio` takes ``pool=``: ``None`` means the running loop's shared pool
(:func:`shared_pool`, made on first use, its threads ended when the loop is
garbage-collected or by :func:`close_shared_pool`); give a pool of your own
(``async with CallPool(max_workers=4) as pool:``) to bound one object's calls
separately and close them with it; ``CallPool(streams=False)`` sends every
call through the threads.

**Cancelling.** A call over a stream that is cancelled (or times out) is
abandoned at once and its connection closed. A call already on its worker
cannot be interrupted: the awaiting task is cancelled at once, and the call
runs on to its end, within its ``timeout=`` (or the process's call timeout,
:func:`landlord.set_call_timeout`). Either way, whether a renewal cancelled
that way happened is unknown, as after a ``CommunicationError``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import importlib
import itertools
import math
import threading
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

import Pyro5.core
import Pyro5.errors
from Pyro5 import config as pyro_config

from ..holder.landlordlease import LandlordLease
from ..lease import Lease
from ..transport import proxies
from ..transport.serializers import WIRE_SERIALIZER

__all__ = ["DEFAULT_MAX_WORKERS", "MAX_WORKERS", "CallPool", "shared_pool", "close_shared_pool", "pool_of",
           "check_timeout", "StreamCalls", "call"]

T = TypeVar("T")

# Pyro5's wire protocol and serializers, which the stubs in typings/ do not describe
protocol: Any = importlib.import_module("Pyro5.protocol")
serializers: Any = importlib.import_module("Pyro5.serializers")
_timeout: Any = getattr(asyncio, "timeout", None)  # Python 3.11 on

DEFAULT_MAX_WORKERS = 8
"""Threads in a :class:`CallPool` unless told otherwise: as many calls in flight at once."""

MAX_WORKERS = 256  #: more threads than this buys nothing but memory: the landlords are the bottleneck


# -- the pool of worker threads ------------------------------------------------------------------------


class CallPool:
    """A bounded pool of worker threads that make blocking (Pyro5) calls for an event loop.

    Each worker keeps its own proxies (:func:`landlord.proxy_for`), so a
    landlord is reached over at most ``max_workers`` connections. With
    ``streams`` (the default), the renewals and cancels of a plain remote
    landlord's leases skip the workers and go over asyncio streams instead
    (:class:`StreamCalls`), at most ``max_workers`` connections per landlord.
    Usable as ``async with`` (closed at the end) or closed with :meth:`aclose`.
    Use it from one event loop.

    Args:
        max_workers: the most calls in flight at once (1 to 256; default
            :data:`DEFAULT_MAX_WORKERS`), on the workers and per landlord on
            the streams; further calls wait their turn.
        name: the prefix of the workers' thread names.
        streams: renew and cancel leases over asyncio streams where they can
            (see the module's docstring); ``False``: every call on the workers.

    Raises:
        TypeError: ``max_workers`` is not an int, or ``name`` not a str.
        ValueError: ``max_workers`` out of range.
    """

    def __init__(self, *, max_workers: int = DEFAULT_MAX_WORKERS, name: str = "landlord-aio",
                 streams: bool = True) -> None:
        if isinstance(max_workers, bool) or not isinstance(max_workers, int):
            raise TypeError(f"max_workers must be an int, got {type(max_workers).__name__}")
        if not 1 <= max_workers <= MAX_WORKERS:
            raise ValueError(f"max_workers must be 1 to {MAX_WORKERS}, got {max_workers}")
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        self._max_workers = max_workers
        if not isinstance(streams, bool):
            raise TypeError(f"streams must be a bool, got {type(streams).__name__}")
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix=name)
        self._streams = StreamCalls(connections=max_workers) if streams else None
        self._closed = False

    @property
    def max_workers(self) -> int:
        """The most calls this pool has in flight at once."""
        return self._max_workers

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def streams(self) -> StreamCalls | None:
        """What renews and cancels over asyncio streams (``None``: ``streams=False``)."""
        return self._streams

    async def run(self, function: Callable[..., T], *args: Any, timeout: float | None = None) -> T:
        """``function(*args)`` on a worker thread; its result (or exception) on the loop.

        Args:
            function: a blocking callable.
            args: its arguments.
            timeout: bound every call it makes through :func:`landlord.proxy_for`
                (leases' calls included) to this many seconds (``None``: the
                process's call timeout).

        Raises:
            RuntimeError: the pool is closed.
            ValueError: ``timeout`` is not a positive number or ``None``.
        """
        check_timeout(timeout)
        if self._closed:
            raise RuntimeError("this CallPool is closed")
        loop = asyncio.get_running_loop()
        job = functools.partial(_bounded, function, args, timeout) if timeout is not None else \
            functools.partial(function, *args)
        return await loop.run_in_executor(self._executor, job)

    def close(self) -> None:
        """Refuse further calls and drop those waiting their turn; calls in flight on the workers
        run on, their workers ending after them, and the streams' idle connections are closed.
        Does not wait: :meth:`aclose` does."""
        self._closed = True
        self._executor.shutdown(wait=False, cancel_futures=True)
        if self._streams is not None:
            self._streams.close()

    async def aclose(self) -> None:
        """Close, and wait (off the loop) until the calls in flight on the workers have ended."""
        self.close()
        await asyncio.to_thread(self._executor.shutdown, wait=True)

    async def __aenter__(self) -> CallPool:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<CallPool {'closed' if self._closed else f'of {self._max_workers} workers'}>"


def _bounded(function: Callable[..., T], args: tuple[Any, ...], timeout: float) -> T:
    """On a worker: ``function(*args)``, its calls through proxies bounded by ``timeout``."""
    with proxies.timeout_within(timeout):
        return function(*args)


_shared: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, CallPool] = weakref.WeakKeyDictionary()
_shared_lock = threading.Lock()  # loops on several threads may each make theirs at once


def shared_pool() -> CallPool:
    """The running loop's shared :class:`CallPool` (``DEFAULT_MAX_WORKERS`` workers), made on first use.

    Its threads end when the loop is garbage-collected, or at
    :func:`close_shared_pool`; a pool closed that way is replaced by a new
    one on next use.

    Raises:
        RuntimeError: no event loop is running in this thread.
    """
    loop = asyncio.get_running_loop()
    with _shared_lock:
        pool = _shared.get(loop)
        if pool is None or pool.closed:
            pool = _shared[loop] = CallPool(name=f"landlord-aio-{next(_numbers)}")
        return pool


_numbers = itertools.count(1)


async def close_shared_pool() -> None:
    """Close the running loop's shared pool, if it has one, waiting for its calls in flight."""
    with _shared_lock:
        pool = _shared.pop(asyncio.get_running_loop(), None)
    if pool is not None:
        await pool.aclose()


def pool_of(pool: CallPool | None) -> CallPool:
    """``pool``, checked, or the running loop's shared pool for ``None`` (:func:`shared_pool`).

    Raises:
        TypeError: not a CallPool or None.
        RuntimeError: ``None``, and no event loop is running in this thread.
    """
    if pool is None:
        return shared_pool()
    if not isinstance(pool, CallPool):
        raise TypeError(f"pool must be a CallPool or None, got {type(pool).__name__}")
    return pool


def check_timeout(timeout: object) -> float | None:
    """A per-call timeout: a positive number of seconds (``FOREVER`` allowed: none), or ``None``.

    Raises:
        ValueError: zero, negative, NaN or not a number.
    """
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r:.50}")
    return None if math.isinf(timeout) else float(timeout)


# -- Pyro5 messages over asyncio streams -------------------------------------------------------------


class _Connection:
    """One stream connection to one Pyro5 object, one call at a time (see :class:`StreamCalls`)."""

    __slots__ = ("_reader", "_writer", "_object", "_sequence", "_serializer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, object_id: str) -> None:
        self._reader, self._writer, self._object = reader, writer, object_id
        self._sequence = 0
        self._serializer = serializers.serializers[WIRE_SERIALIZER]

    @classmethod
    async def open(cls, uri: Pyro5.core.URI) -> _Connection:
        """Connect and greet as a Pyro5 proxy does (the ``hello`` handshake, in landlord's serializer).

        Raises:
            Pyro5.errors.CommunicationError: no connection, or the daemon refused it.
        """
        try:
            reader, writer = await asyncio.open_connection(uri.host, uri.port)
        except OSError as exc:
            raise Pyro5.errors.CommunicationError(f"cannot connect to {uri.host}:{uri.port}: {exc}") from exc
        connection = cls(reader, writer, uri.object)
        try:
            answer = await connection._exchange(protocol.MSG_CONNECT, {"handshake": "hello", "object": uri.object},
                                                (protocol.MSG_CONNECTOK, protocol.MSG_CONNECTFAIL))
            if answer.type != protocol.MSG_CONNECTOK:
                raise Pyro5.errors.CommunicationError(
                    f"connection to {uri.host}:{uri.port} rejected: {connection._load(answer)!r:.200}")
        except BaseException:
            connection.close()
            raise
        return connection

    async def invoke(self, method: str, args: tuple[Any, ...]) -> Any:
        """``method(*args)`` of the object: its result, or what it raised, raised here.

        Raises:
            Pyro5.errors.CommunicationError: the connection failed (its outcome is unknown).
            Exception: what the remote method raised.
        """
        data = self._serializer.dumpsCall(self._object, method, args, {})
        answer = await self._exchange(protocol.MSG_INVOKE, data, (protocol.MSG_RESULT,), raw=True)
        result = self._load(answer)
        if answer.flags & protocol.FLAGS_EXCEPTION:
            raise result
        return result

    async def _exchange(self, kind: int, payload: Any, accepted: tuple[int, ...], *,
                        raw: bool = False) -> protocol.ReceivingMessage:
        """Send one message, read the answer (checked: its kind, sequence number and serializer)."""
        self._sequence = (self._sequence + 1) & 0xFFFF
        data = payload if raw else self._serializer.dumps(payload)
        message = protocol.SendingMessage(kind, 0, self._sequence, self._serializer.serializer_id, data)
        try:
            self._writer.write(message.data)
            header = await self._reader.readexactly(protocol._header_size)
            answer = protocol.ReceivingMessage(header)
            answer.add_payload(await self._reader.readexactly(answer.data_size + answer.annotations_size))
        except (OSError, asyncio.IncompleteReadError) as exc:
            raise Pyro5.errors.ConnectionClosedError(f"connection lost: {exc or type(exc).__name__}") from exc
        if answer.type not in accepted or answer.seq != self._sequence:
            raise Pyro5.errors.ProtocolError(f"unexpected answer: type {answer.type}, sequence {answer.seq}")
        if answer.serializer_id != self._serializer.serializer_id and answer.type == protocol.MSG_RESULT:
            raise Pyro5.errors.SerializeError(f"answer in serializer {answer.serializer_id}, "
                                             f"not {self._serializer.serializer_id}")
        return answer

    def _load(self, answer: protocol.ReceivingMessage) -> Any:
        if not answer.data:
            return None
        return serializers.serializers_by_id[answer.serializer_id].loads(answer.data)

    def close(self) -> None:
        self._writer.close()


class StreamCalls:
    """Calls to landlords over asyncio streams: each landlord's connections (at most
    ``connections`` at once), each carrying one call at a time, reused while they work.

    One call per connection, not pipelined: Pyro5 daemons leave Nagle's
    algorithm on, so a second answer waiting behind an unacknowledged first
    stalls for the peer's delayed acknowledgement (pipelined, 100 renewals went
    3x slower than one after another; ``benchmarks/bench_aio.py``). A connection
    whose call failed, timed out or was cancelled is closed, never reused: an
    answer may still be on its way.

    Args:
        connections: the most connections (so calls in flight) per landlord.
    """

    def __init__(self, *, connections: int = DEFAULT_MAX_WORKERS) -> None:
        self._connections = connections
        self._idle: dict[str, list[_Connection]] = {}
        self._slots: dict[str, asyncio.Semaphore] = {}

    @staticmethod
    def usable(lease: Lease) -> str | None:
        """The URI to reach ``lease``'s landlord at over a stream, or ``None``: its calls go on a worker.

        Streams carry a plain remote landlord's calls over TCP without TLS.
        Others take the sync path, which knows them: a landlord in this process
        (called directly), a replicated one (its group and leader), TLS
        (``Pyro5.config.SSL``), a Unix socket, a lease of another kind.
        """
        if type(lease) is not LandlordLease or lease.replicated or not isinstance(lease.landlord, str):
            return None
        if pyro_config.SSL:
            return None
        return lease.landlord

    async def call(self, uri: str, method: str, *args: Any, timeout: float | None = None) -> Any:
        """``method(*args)`` of the object at ``uri`` (a ``PYRO:`` URI with host and port).

        Args:
            timeout: seconds the call may take, connecting included (``None``: the
                process's call timeout, :func:`landlord.set_call_timeout`; it has none: no limit).

        Raises:
            Pyro5.errors.TimeoutError: the time ran out (the outcome is unknown).
            Pyro5.errors.CommunicationError: no connection, or it failed (the outcome is unknown).
            Exception: what the remote method raised.
        """
        limit = proxies.get_call_timeout() if timeout is None else timeout
        slots = self._slots.get(uri)
        if slots is None:
            slots = self._slots[uri] = asyncio.Semaphore(self._connections)
        async with slots:
            try:
                if limit is None:
                    return await self._call(uri, method, args)
                if _timeout is not None:  # Python 3.11: no task of its own, unlike wait_for (a third faster)
                    async with _timeout(limit):
                        return await self._call(uri, method, args)
                return await asyncio.wait_for(self._call(uri, method, args), limit)
            except asyncio.TimeoutError:
                raise Pyro5.errors.TimeoutError(f"{method} at {uri}: no answer within {limit:g} s") from None

    async def _call(self, uri: str, method: str, args: tuple[Any, ...]) -> Any:
        idle = self._idle.setdefault(uri, [])
        connection = idle.pop() if idle else await _Connection.open(_address(uri))
        try:
            result = await connection.invoke(method, args)
        except Pyro5.errors.CommunicationError:
            connection.close()
            raise
        except Exception:  # the landlord's own answer: the connection is fine
            self._keep(uri, idle, connection)
            raise
        except BaseException:  # cancelled, or timed out: an answer may still be on its way
            connection.close()
            raise
        self._keep(uri, idle, connection)
        return result

    def _keep(self, uri: str, idle: list[_Connection], connection: _Connection) -> None:
        """Keep ``connection`` for ``uri``'s next call, unless ``uri`` was dropped meanwhile."""
        if self._idle.get(uri) is idle:
            idle.append(connection)
        else:
            connection.close()

    def drop(self, uri: str) -> None:
        """Close ``uri``'s idle connections and forget it (nothing will call it again; a call in
        flight closes its connection when it ends)."""
        for connection in self._idle.pop(uri, []):
            connection.close()
        self._slots.pop(uri, None)

    def close(self) -> None:
        """Close the idle connections (those in use close when their calls end, or are collected)."""
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()


def _address(uri: str) -> Pyro5.core.URI:
    """``uri`` parsed, for a stream: it names a host and port.

    Raises:
        Pyro5.errors.CommunicationError: a URI without host and port (a Unix socket).
    """
    parsed = Pyro5.core.URI(uri)
    if parsed.sockname or not parsed.host:
        raise Pyro5.errors.CommunicationError(f"no host and port to connect to in {uri!r:.80}")
    return parsed


# -- one call to a Pyro5 object ---------------------------------------------------------------------


async def call(uri: str, method: str, *args: Any, timeout: float | None = None, pool: CallPool | None = None) -> Any:
    """``method(*args)`` of the Pyro5 object at ``uri``, through the worker's own proxy for it.

    For calling a service found through a lookup (``await aio.call(item.service_uri,
    "quote", "ACME")``): the proxy is the worker thread's, kept for its next
    call, and dropped after a communication error so that the next one reconnects.

    Raises:
        TypeError: ``uri`` or ``method`` is not a str.
        ValueError: a bad ``timeout``.
        Pyro5.errors.CommunicationError: the call could not be made, or its outcome is unknown.
        Exception: whatever the remote method raised.
    """
    if not isinstance(uri, str):
        raise TypeError(f"uri must be a str, got {type(uri).__name__}")
    if not isinstance(method, str) or method.startswith("_"):
        raise TypeError(f"method must be the name of a remote method, got {method!r:.50}")
    return await pool_of(pool).run(_call, uri, method, args, timeout=check_timeout(timeout))


def _call(uri: str, method: str, args: tuple[Any, ...]) -> Any:
    try:
        return getattr(proxies.proxy_for(uri), method)(*args)
    except Pyro5.errors.CommunicationError:
        proxies.discard(uri)  # the next call reconnects
        raise
