"""lookup from asyncio: :class:`AsyncLookup`, :class:`AsyncJoinManager`, :class:`AsyncLookupCache`.

Usable from one event loop without blocking it. Remote calls go out on the
workers of a :class:`landlord.aio.CallPool` (``pool=``; default the loop's
shared one), each with its own proxies. The join manager and the cache are
the thread-based :class:`~lookup.JoinManager` and :class:`~lookup.LookupCache`
underneath (their threads keep registrations and subscriptions alive, as they
do for sync code); what they hear reaches the loop through
``call_soon_threadsafe``, and their blocking waits run on a thread of their
own, in slices, so that a cancelled wait ends within :data:`WAIT_SLICE`.

::

    async with AsyncJoinManager(quoter, attributes=[Name("ACME quotes")], lookups=[uri],
                                lease_duration=3) as join:
        await join.wait_registered()

    async with AsyncLookupCache(uri, ServiceTemplate(types=[Quoter])) as cache:
        async for change in cache.changes():    # added, changed, removed
            if change.kind == "added":
                print(await aio.call(change.item.service_uri, "quote", "ACME"))
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, NamedTuple

import Pyro5.errors

from landlord import ANY, FOREVER, LeaseRenewalManager, check_duration, discard_proxy
from landlord.aio import AsyncLeaseRenewalManager, AsyncListener, CallPool, check_timeout, shared_pool

from .client.cache import LookupCache
from .client.join import JoinManager
from .client.peer import GROUP_SEPARATOR, leader_proxy, locator_key
from .entry import Entry
from .events import ALL_TRANSITIONS, EventRegistration
from .item import MAX_MATCHES, ServiceItem, ServiceMatches, ServiceTemplate, check_cursor, uri_of
from .ownership import check_proof
from .registration import ServiceRegistration

__all__ = ["AsyncLookup", "AsyncJoinManager", "AsyncLookupCache", "CacheChange", "WAIT_SLICE"]

log = logging.getLogger(__name__)

WAIT_SLICE = 0.25
"""Seconds a blocking wait runs on its thread before it checks whether it is still wanted."""


def _calls(pool: CallPool | None) -> CallPool:
    if pool is None:
        return shared_pool()
    if not isinstance(pool, CallPool):
        raise TypeError(f"pool must be a landlord.aio.CallPool or None, got {type(pool).__name__}")
    return pool


def _renewals(options: dict[str, Any]) -> None:
    """An :class:`AsyncLeaseRenewalManager` given as ``renewal_manager``: the thread-based one under it."""
    given = options.get("renewal_manager")
    if isinstance(given, AsyncLeaseRenewalManager):
        options["renewal_manager"] = given.manager
    elif given is not None and not isinstance(given, LeaseRenewalManager):
        raise TypeError(f"renewal_manager must be a (async) lease renewal manager, got {type(given).__name__}")


async def _wait(wait: Callable[[float], bool], timeout: float | None, stopped: Callable[[], bool]) -> bool:
    """``wait(seconds) -> bool`` (a blocking wait) run in slices of :data:`WAIT_SLICE` on a thread,
    until it holds, ``timeout`` has passed, or ``stopped()``; whether it held."""
    if timeout is not None:
        timeout = check_duration(timeout, name="timeout", allow_any=False)
    loop = asyncio.get_running_loop()
    deadline = math.inf if timeout is None else loop.time() + timeout
    while not stopped():
        left = deadline - loop.time()
        if await asyncio.to_thread(wait, max(0.0, min(left, WAIT_SLICE))):
            return True
        if left <= WAIT_SLICE:
            return False
    return False


# -- the client ------------------------------------------------------------------------------------------


class AsyncLookup:
    """A client of one lookup service (or of a replicated one), its calls awaited.

    Args:
        lookup: the lookup service's URI or proxy, or a :class:`~lookup.LookupGroup`.
        pool: the :class:`~landlord.aio.CallPool` its calls go through (default: the loop's shared one).
        timeout: seconds each call may take (``None``: the process's call timeout).

    Raises:
        TypeError: ``lookup`` is not a URI, proxy or LookupGroup; ``pool`` not a CallPool.
        ValueError: a bad ``timeout``.
    """

    def __init__(self, lookup: Any, *, pool: CallPool | None = None, timeout: float | None = None) -> None:
        try:
            self._key = locator_key(lookup)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"a lookup service is a proxy, a URI or a LookupGroup, got {lookup!r:.80}") from exc
        if pool is not None and not isinstance(pool, CallPool):
            raise TypeError(f"pool must be a landlord.aio.CallPool or None, got {type(pool).__name__}")
        self._pool = pool
        self._timeout = check_timeout(timeout)

    @property
    def key(self) -> str:
        """The lookup service's URI (a replicated one's: its replicas' URIs, joined by commas)."""
        return self._key

    async def call(self, method: str, *args: Any) -> Any:
        """Any remote method of the lookup service (``entry_classes``, ``service_types``, ...).

        Raises:
            TypeError: ``method`` is not a public method name.
            Pyro5.errors.CommunicationError: the lookup service could not be reached.
            Exception: what the lookup service raised.
        """
        if not isinstance(method, str) or method.startswith("_"):
            raise TypeError(f"method must be the name of a remote method, got {method!r:.50}")
        return await _calls(self._pool).run(self._call, method, args, timeout=self._timeout)

    def _call(self, method: str, args: tuple[Any, ...]) -> Any:
        try:
            return getattr(leader_proxy(self._key), method)(*args)
        except Pyro5.errors.CommunicationError:
            if GROUP_SEPARATOR not in self._key:
                discard_proxy(self._key)  # the next call reconnects
            raise

    async def register(self, item: ServiceItem, duration: float = ANY, *,
                       renewals: AsyncLeaseRenewalManager | None = None,
                       listener: AsyncListener | None = None, proof: str | None = None) -> ServiceRegistration:
        """Register ``item`` for a lease of ``duration`` seconds; with ``renewals``, the lease is
        kept alive there (in its own term) until removed, and ``listener`` told on the loop if it is lost.
        ``proof``: the id's registration secret or its current lease's cookie (see
        :meth:`lookup.LookupService.register`).

        Raises:
            TypeError: ``item`` is not a ServiceItem, ``renewals`` not an AsyncLeaseRenewalManager,
                or ``proof`` not a str.
            ValueError: an invalid duration or proof.
            NotOwnerError: the id is another's (a :class:`~landlord.LeaseDeniedError`).
            LeaseDeniedError: the lookup service refused.
        """
        if not isinstance(item, ServiceItem):
            raise TypeError(f"register takes a ServiceItem, got {type(item).__name__}")
        if renewals is not None and not isinstance(renewals, AsyncLeaseRenewalManager):
            raise TypeError(f"renewals must be an AsyncLeaseRenewalManager, got {type(renewals).__name__}")
        proof, duration = check_proof(proof), check_duration(duration)
        # no proof, no third argument: a lookup service from before proofs takes this call too
        registration = await self.call("register", item, duration, *(() if proof is None else (proof,)))
        if not isinstance(registration, ServiceRegistration):
            raise TypeError(f"the lookup service answered register with {registration!r:.80}")
        if renewals is not None:
            renewals.renew_for(registration.lease, FOREVER, listener)
        return registration

    async def lookup(self, template: ServiceTemplate) -> str | None:
        """The URI of the service of one item matching ``template``, or ``None``.

        A URI, not the proxy the lookup service sends: that proxy would belong to
        the worker thread that received it. Call the service with
        ``await landlord.aio.call(uri, method, ...)``.

        Raises:
            TypeError: ``template`` is not a ServiceTemplate.
        """
        service = await self.call("lookup", _template(template))
        return None if service is None else uri_of(service)

    async def lookup_all(self, template: ServiceTemplate, max_matches: int = MAX_MATCHES,
                         after: str | None = None) -> ServiceMatches:
        """At most ``max_matches`` items matching ``template``, and how many match in all; a long
        answer comes in parts: ask again with ``after=`` its cursor (see :meth:`lookup.LookupService.lookup_all`).

        Raises:
            TypeError: ``template`` is not a ServiceTemplate, ``max_matches`` not an int, or
                ``after`` not a str.
            ValueError: ``max_matches`` negative or above ``MAX_MATCHES``, or ``after`` not a cursor.
        """
        if isinstance(max_matches, bool) or not isinstance(max_matches, int):
            raise TypeError(f"max_matches must be an int, got {type(max_matches).__name__}")
        if not 0 <= max_matches <= MAX_MATCHES:
            raise ValueError(f"max_matches must be 0 to {MAX_MATCHES}, got {max_matches}")
        arguments = (_template(template), max_matches) if after is None else (
            _template(template), max_matches, check_cursor(after))  # none: what a server before cursors takes
        matches = await self.call("lookup_all", *arguments)
        if not isinstance(matches, ServiceMatches):
            raise TypeError(f"the lookup service answered lookup_all with {matches!r:.80}")
        return matches

    async def notify(self, template: ServiceTemplate, transitions: int, listener: Any, handback: Any = None,
                     duration: float = ANY) -> EventRegistration:
        """Ask for events on ``listener`` (a Pyro5 URI or proxy of an object with ``notify(event)``)
        when items matching ``template`` make one of ``transitions``; see :meth:`~lookup.LookupService.notify`.

        Raises:
            TypeError: a bad template or transitions.
            ValueError: ``transitions`` not in 1..7, or an invalid duration.
            LeaseDeniedError: the lookup service refused.
        """
        if isinstance(transitions, bool) or not isinstance(transitions, int):
            raise TypeError(f"transitions must be an int, got {type(transitions).__name__}")
        if not 1 <= transitions <= ALL_TRANSITIONS:
            raise ValueError(f"transitions must combine TRANSITION_* values (1 to 7), got {transitions}")
        return await self.call("notify", _template(template), transitions, listener, handback,  # type: ignore[no-any-return]
                               check_duration(duration))

    def __repr__(self) -> str:
        return f"<AsyncLookup {self._key}>"


def _template(template: object) -> ServiceTemplate:
    if not isinstance(template, ServiceTemplate):
        raise TypeError(f"expected a ServiceTemplate, got {type(template).__name__}")
    return template


# -- the join manager ------------------------------------------------------------------------------------


class AsyncJoinManager:
    """A :class:`~lookup.JoinManager` for asyncio: registers a service with lookup services and
    keeps it registered (on its own threads), its waits and attribute changes awaited.

    Args:
        service, types, attributes, lookups: as :class:`~lookup.JoinManager`.
        pool: the :class:`~landlord.aio.CallPool` attribute changes go through (default: the loop's shared one).
        options: the :class:`~lookup.JoinManager`'s own (``service_id``, ``secret``, ``lease_duration``,
            ``renewal_manager``: an :class:`~landlord.aio.AsyncLeaseRenewalManager` too, ``retry_initial``, ...).

    Raises:
        TypeError, ValueError: as :class:`~lookup.JoinManager`.
    """

    def __init__(self, service: Any, types: Iterable[str | type] | None = None, attributes: Iterable[Entry] = (),
                 lookups: Iterable[Any] = (), *, pool: CallPool | None = None, **options: Any) -> None:
        _renewals(options)
        if pool is not None and not isinstance(pool, CallPool):
            raise TypeError(f"pool must be a landlord.aio.CallPool or None, got {type(pool).__name__}")
        self._pool = pool
        # no remote call here: the keepers' threads register, so the loop is not held up
        self._join = JoinManager(service, types, attributes, lookups, **options)
        self._closed = False

    @property
    def join_manager(self) -> JoinManager:
        """The thread-based join manager underneath."""
        return self._join

    @property
    def service_id(self) -> str | None:
        return self._join.service_id

    @property
    def secret(self) -> str | None:
        """As :attr:`lookup.JoinManager.secret`: what proves the service's id is its own."""
        return self._join.secret

    @property
    def item(self) -> ServiceItem:
        return self._join.item

    @property
    def times_registered(self) -> int:
        return self._join.times_registered

    @property
    def last_error(self) -> BaseException | None:
        return self._join.last_error

    def errors(self) -> dict[str, BaseException]:
        return self._join.errors()

    def registrations(self) -> dict[str, ServiceRegistration]:
        return self._join.registrations()

    def lookup_services(self) -> list[str]:
        return self._join.lookup_services()

    def add_lookups(self, lookups: Any) -> None:
        """Also register with these lookup services (their threads do it; nothing is awaited)."""
        self._join.add_lookups(lookups)

    def remove_lookups(self, lookups: Any) -> None:
        """Stop keeping these lookup services, as :meth:`lookup.JoinManager.remove_lookups`."""
        self._join.remove_lookups(lookups)

    async def wait_registered(self, count: int = 1, timeout: float | None = None) -> bool:
        """Wait until registered with at least ``count`` lookup services; whether that happened.

        Raises:
            ValueError: a negative or NaN ``timeout``.
        """
        return await _wait(lambda seconds: self._join.wait_registered(count, seconds), timeout,
                           lambda: self._closed)

    async def wait_times_registered(self, total: int, timeout: float | None = None) -> bool:
        """Wait until :attr:`times_registered` reaches ``total``; whether it did."""
        return await _wait(lambda seconds: self._join.wait_times_registered(total, seconds), timeout,
                           lambda: self._closed)

    async def add_attributes(self, entries: Sequence[Entry]) -> None:
        """Add attributes here and at every lookup service."""
        await _calls(self._pool).run(self._join.add_attributes, list(entries))

    async def set_attributes(self, entries: Sequence[Entry]) -> None:
        """Replace the attributes here and at every lookup service."""
        await _calls(self._pool).run(self._join.set_attributes, list(entries))

    async def modify_attributes(self, templates: Sequence[Entry], entries: Sequence[Entry | None]) -> None:
        """Modify attributes here and at every lookup service (see ServiceRegistration.modify_attributes)."""
        await _calls(self._pool).run(self._join.modify_attributes, list(templates), list(entries))

    async def aclose(self, *, cancel: bool = True) -> None:
        """Stop (off the loop), and by default cancel every registration so the service leaves at once."""
        if self._closed:
            return
        self._closed = True
        await asyncio.to_thread(lambda: self._join.close(cancel=cancel))

    async def __aenter__(self) -> AsyncJoinManager:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


# -- the cache -------------------------------------------------------------------------------------------


class CacheChange(NamedTuple):
    """One change of an :class:`AsyncLookupCache`'s view: ``kind`` is ``"added"``, ``"changed"``
    or ``"removed"``; ``item`` the item (for ``"removed"``, as it was last seen)."""

    kind: str
    item: ServiceItem


class AsyncLookupCache:
    """A :class:`~lookup.LookupCache` for asyncio: the services matching ``template``, kept
    current through events, read on the loop; changes read with ``async for``.

    :meth:`items` reads the cache's view as it is now (a moment's lock, no remote call);
    :meth:`changes` yields what the cache tells, in order, on the loop; :meth:`wait_until`
    checks its condition again at each change. Start it with ``async with`` (or
    :meth:`start`): the cache underneath is made off the loop.

    Args:
        lookups, template: as :class:`~lookup.LookupCache`.
        options: the :class:`~lookup.LookupCache`'s own (``lease_duration``, ``callback_host``,
            ``daemon``, ``orphan_timeout``, ``renewal_manager``: an
            :class:`~landlord.aio.AsyncLeaseRenewalManager` too, ``retry_initial``, ...), not ``listener``
            (read :meth:`changes`).

    Raises:
        TypeError: ``template`` not a ServiceTemplate, or a ``listener`` given.
        RuntimeError: no event loop is running in this thread.
    """

    def __init__(self, lookups: Any, template: ServiceTemplate, **options: Any) -> None:
        if "listener" in options:
            raise TypeError("an AsyncLookupCache has no listener: read its changes with 'async for'")
        _template(template)
        _renewals(options)
        self._loop = asyncio.get_running_loop()
        self._lookups, self._template, self._options = lookups, template, options
        self._cache: LookupCache | None = None
        self._queues: set[asyncio.Queue[CacheChange | None]] = set()
        self._waiters: set[asyncio.Future[None]] = set()
        self._closed = False

    async def start(self) -> AsyncLookupCache:
        """Make the cache underneath (off the loop) and start following the lookup services.

        Raises:
            TypeError, ValueError, OSError: as :class:`~lookup.LookupCache`.
            RuntimeError: already started, or closed.
        """
        if self._cache is not None or self._closed:
            raise RuntimeError("this AsyncLookupCache is already started" if not self._closed else "it is closed")
        self._cache = await asyncio.to_thread(LookupCache, self._lookups, self._template, listener=self._heard,
                                              **self._options)
        return self

    @property
    def cache(self) -> LookupCache:
        """The thread-based cache underneath.

        Raises:
            RuntimeError: not started.
        """
        if self._cache is None:
            raise RuntimeError("this AsyncLookupCache is not started: 'async with' it, or await start()")
        return self._cache

    # -- on the cache's threads, then on the loop ---------------------------------------------------------

    def _heard(self, kind: str, item: ServiceItem) -> None:
        """The cache's listener (on its threads, one at a time, in order): to the loop."""
        try:
            self._loop.call_soon_threadsafe(self._apply, CacheChange(kind, item))
        except RuntimeError:  # the loop is closed
            log.debug("event loop closed; %s %s not told", kind, item.service_id)

    def _apply(self, change: CacheChange) -> None:
        """On the loop: every reader of changes told, every waiter woken."""
        for queue in self._queues:
            queue.put_nowait(change)
        self._wake()

    def _wake(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    # -- reading the view (on the loop) -----------------------------------------------------------------

    def items(self, accept: Callable[[ServiceItem], bool] | None = None) -> list[ServiceItem]:
        """The items held now (those ``accept`` accepts, if given); none before :meth:`start`."""
        return [] if self._cache is None else self._cache.items(accept)

    def first(self, accept: Callable[[ServiceItem], bool] | None = None) -> ServiceItem | None:
        """One item held (one ``accept`` accepts), or ``None``: call its service with
        ``await landlord.aio.call(item.service_uri, method, ...)``."""
        return next(iter(self.items(accept)), None)

    def __len__(self) -> int:
        return 0 if self._cache is None else len(self._cache)

    async def changes(self, *, replay: bool = True) -> AsyncIterator[CacheChange]:
        """Every change from now on, in order, until the cache is closed: ``async for change in cache.changes():``.

        Args:
            replay: begin with an ``"added"`` for each item held now, so the
                reader sees the whole view whenever it starts reading.

        Each reader has a queue of its own, unbounded: one that stops reading
        should leave its loop (``break``), which ends its queue. A reader sees
        a consistent story: no ``"added"`` twice for the same item (a change
        still on its way to the loop when the view was replayed), no
        ``"removed"`` of an item it was never shown.
        """
        queue: asyncio.Queue[CacheChange | None] = asyncio.Queue()
        if self._closed:
            return
        shown: dict[str, ServiceItem] = {}
        held = [item for item in self.items() if item.service_id is not None] if replay else []
        self._queues.add(queue)  # before the first yield: nothing told meanwhile is missed
        try:
            for item in held:
                assert item.service_id is not None
                shown[item.service_id] = item
                yield CacheChange("added", item)
            while (change := await queue.get()) is not None:
                service_id = change.item.service_id
                if service_id is None:
                    continue
                if change.kind == "removed":
                    if shown.pop(service_id, None) is None:
                        continue
                elif shown.get(service_id) == change.item:
                    continue  # shown as it is already
                else:
                    kind = "changed" if service_id in shown else "added"
                    shown[service_id] = change.item
                    change = CacheChange(kind, change.item)
                yield change
        finally:
            self._queues.discard(queue)

    async def wait_until(self, condition: Callable[[list[ServiceItem]], bool], timeout: float | None = None) -> bool:
        """Wait until ``condition(items)`` holds; whether it did within ``timeout`` (and before closing).

        Raises:
            ValueError: a negative or NaN ``timeout``.
        """
        if timeout is not None:
            timeout = check_duration(timeout, name="timeout", allow_any=False)
        deadline = math.inf if timeout is None else self._loop.time() + timeout
        while not condition(self.items()):
            left = deadline - self._loop.time()
            if self._closed or left <= 0:
                return False
            waiter = self._loop.create_future()
            self._waiters.add(waiter)
            try:
                await asyncio.wait_for(waiter, None if math.isinf(left) else left)
            except asyncio.TimeoutError:
                return condition(self.items())
        return True

    async def wait_ready(self, timeout: float | None = None, *, count: int = 1) -> bool:
        """Wait until subscribed, with the snapshot in, at ``count`` lookup services; whether that
        happened. When it did not, :attr:`last_error` (or :meth:`errors`) says why.

        Raises:
            ValueError: a negative or NaN ``timeout``.
            RuntimeError: not started.
        """
        cache = self.cache
        return await _wait(lambda seconds: cache.wait_ready(seconds, count=count), timeout, lambda: self._closed)

    def discard(self, item: ServiceItem) -> None:
        """Drop ``item``: the client found the service dead (see :meth:`LookupCache.discard`); readers
        of :meth:`changes` hear it ``"removed"``.

        Raises:
            TypeError: ``item`` is not a ServiceItem.
            RuntimeError: not started.
        """
        self.cache.discard(item)

    def subscribed(self) -> list[str]:
        return self.cache.subscribed()

    def lookup_services(self) -> list[str]:
        return self.cache.lookup_services()

    @property
    def last_error(self) -> BaseException | None:
        return self.cache.last_error

    def errors(self) -> dict[str, BaseException]:
        return self.cache.errors()

    async def aclose(self) -> None:
        """Stop (off the loop: the event registrations are cancelled), then end every reader of
        :meth:`changes` and every wait. Safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        if self._cache is not None:
            await asyncio.to_thread(self._cache.close)
        await asyncio.sleep(0)  # changes the cache told as it closed, queued on the loop, go first
        for queue in self._queues:
            queue.put_nowait(None)
        self._wake()

    async def __aenter__(self) -> AsyncLookupCache:
        return await self.start()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "not started" if self._cache is None else f"{len(self)} items"
        return f"<AsyncLookupCache {state}>"
