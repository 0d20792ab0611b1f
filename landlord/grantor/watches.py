"""Watching who holds a name, pushed: :class:`NameWatches`, a landlord's watches (issue 25).

A watch is an ordinary lease of the landlord (:meth:`landlord.Landlord.watch_name`)
whose resource is a :class:`NameWatch`: the name watched, and whom to tell.
While it lives, its listener is told ``holders_changed(cookie, name,
holders)``, ``holders`` as :meth:`landlord.Landlord.name_holders` gives them,
once when the watch begins and after every change of the name's holders (a
grant, a release, an expiry, a revocation, a hand-over). The cookie is the
watch's: only its holder can be told anything by it, as for a claim's notices.

- **Pushed from a thread of its own**: never the caller's, and never the
  thread that tells waiters of their grants, so a watcher that is slow or gone
  can delay other watchers (by :data:`~landlord.grantor.revocations.NOTICE_TIMEOUT`
  at most each), never a lock.
- **Coalesced**: a watch is owed at most one notice at a time, and the notice
  carries the holders as they are when it is sent; changes made while it
  waits its turn are merged into it. The queue so holds at most one notice per
  watch however fast the holders change, and a watcher always ends knowing
  the holders as they are. Tokens order what it hears (they only grow).
- **Bounded**: :data:`MAX_PER_NAME` watches of one name,
  :data:`MAX_PER_CLIENT` of one remote client (counted by host) and
  :data:`MAX_WATCHES` in all; a watch beyond is refused (``LeaseDeniedError``).
- **A watch that cannot be told is dropped**: its lease is revoked (its
  renewal is refused from then on), and so is every other watch told at the
  same listener's host and port, which would fail the same way, each after
  its timeout.
- **Not stored**: a watch lives in memory only. After a restart or a failover
  its renewal is refused as unknown, and the watcher watches again.

Lock order: the claims' lock (:mod:`landlord.grantor.claims` calls
:meth:`NameWatches.changed` under it), then this module's; the lease manager is
never called under this module's lock.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import logging
import threading
from collections.abc import Callable
from typing import Any

import Pyro5.api
import Pyro5.core

from ..errors import LeaseDeniedError, UnknownLeaseError
from ..holder.claiminbox import Holders, NameListener
from ..transport.clients import IN_PROCESS
from .manager import LeaseManager
from .resource import LeasedResource
from .revocations import NOTICE_TIMEOUT, Notices

__all__ = ["NameWatch", "NameWatches", "MAX_PER_NAME", "MAX_WATCHES", "MAX_PER_CLIENT"]

log = logging.getLogger("landlord.names")

MAX_PER_NAME = 1_000  # watches of one name
MAX_WATCHES = 10_000  # watches in all
MAX_PER_CLIENT = 1_000  # watches one remote client may have: none can take them all alone
KEPT_CONNECTIONS = 32  # listeners the watches' thread keeps a connection to


@dataclasses.dataclass(slots=True, eq=False)
class NameWatch:
    """The resource of a watch's lease: the ``name`` watched, and the ``listener`` told (a ``PYRO:``
    URI; in-process, a :class:`~landlord.holder.claiminbox.NameListener`)."""

    name: str
    listener: str | NameListener
    client: str = IN_PROCESS  # who asked (client_of_call), counted against MAX_PER_CLIENT

    def __repr__(self) -> str:
        return f"NameWatch({self.name!r})"


class NameWatches:
    """A landlord's watches (see the module's docstring); thread-safe.

    Args:
        manager: the landlord's lease manager (watches are its leases).
        revoke: ``revoke(cookie, reason)``: end a watch's lease without telling its listener.
        max_per_name: the most watches of one name.
        max_watches: the most watches in all.
        timeout: the most one notice may take, in seconds.
    """

    def __init__(self, manager: LeaseManager, revoke: Callable[[str, str], Any], *,
                 max_per_name: int = MAX_PER_NAME, max_watches: int = MAX_WATCHES,
                 timeout: float = NOTICE_TIMEOUT) -> None:
        self._manager, self._revoke = manager, revoke
        self.max_per_name, self.max_watches, self.max_per_client = max_per_name, max_watches, MAX_PER_CLIENT
        self._per_client: dict[str, int] = {}  # watches by remote client
        self._notices = _WatchNotices(self._resolve, timeout=timeout)
        self._lock = threading.Lock()
        self._watches: dict[str, NameWatch] = {}  # by cookie
        self._by_name: dict[str, dict[str, None]] = {}  # name -> its watches' cookies
        self._at: dict[str, dict[str, None]] = {}  # a listener's host:port -> its watches' cookies
        self._latest: dict[str, Holders] = {}  # a watched name -> its holders, as last heard
        self._owed: set[str] = set()  # watches with a notice queued
        self._closing = False

    # -- watches begin and end ------------------------------------------------------------------

    def add(self, leased: LeasedResource) -> None:
        """Register ``leased``, a new lease whose resource is a :class:`NameWatch` (its expiration
        set by the policy): its name is watched from now on. Call :meth:`begin` next.

        Raises:
            LeaseDeniedError: :attr:`max_per_name` watches of its name, or :attr:`max_watches` in all.
            Exception: what registering the lease raised (nothing is watched).
        """
        watch: NameWatch = leased.resource
        with self._lock:
            if len(self._watches) >= self.max_watches:
                raise LeaseDeniedError(f"too many watches ({self.max_watches}): {watch.name!r} refused")
            if len(self._by_name.get(watch.name, ())) >= self.max_per_name:
                raise LeaseDeniedError(f"too many watches of {watch.name!r} ({self.max_per_name})")
            counted = self._per_client.get(watch.client, 0)
            if watch.client != IN_PROCESS and counted >= self.max_per_client:
                raise LeaseDeniedError(f"{watch.client} has {counted} watches already, the most one client may have")
            self._per_client[watch.client] = counted + 1
            self._watches[leased.cookie] = watch  # its place taken before the lock is let go
            self._by_name.setdefault(watch.name, {})[leased.cookie] = None
            self._at.setdefault(_location(watch.listener), {})[leased.cookie] = None
        try:  # not under the lock: a lazy reaper may end leases in here, watches among them
            self._manager.register(leased)
        except BaseException:
            self.ended(leased.cookie)
            raise

    def begin(self, cookie: str, holders: Holders) -> None:
        """Tell the watch ``cookie`` the holders of its name, read after :meth:`add` (or newer ones
        heard since)."""
        with self._lock:
            watch = self._watches.get(cookie)
            if watch is None:
                return  # ended already
            self._latest.setdefault(watch.name, holders)  # a change heard since add is newer
            self._owe(cookie, watch)

    def ended(self, cookie: str) -> None:
        """The landlord freed the watch ``cookie`` (expired, cancelled, revoked)."""
        with self._lock:
            watch = self._watches.pop(cookie, None)
            if watch is None:
                return
            self._owed.discard(cookie)
            left = self._per_client.pop(watch.client, 1) - 1
            if left > 0:
                self._per_client[watch.client] = left
            _drop(self._by_name, watch.name, cookie)
            _drop(self._at, _location(watch.listener), cookie)
            if watch.name not in self._by_name:
                self._latest.pop(watch.name, None)

    def intercept(self, ended: list[LeasedResource]) -> list[LeasedResource]:
        """The landlord's ended leases: each watch ends here (:meth:`ended`); the others are returned."""
        others: list[LeasedResource] = []
        for leased in ended:
            if type(leased.resource) is NameWatch:
                self.ended(leased.cookie)
            else:
                others.append(leased)
        return others

    def revoked(self, watch: NameWatch, cookie: str, reason: str) -> None:
        """Tell the listener of ``watch`` (ended by an operator) that its lease ``cookie`` was revoked, soon."""
        self._notices.post(watch.listener, "revoked", (cookie, reason), f"watch {cookie[:6]}… was revoked")

    # -- holders change -------------------------------------------------------------------------

    def watched(self, name: str) -> bool:
        """Whether anyone watches ``name`` (whether :meth:`changed` need be called)."""
        with self._lock:
            return name in self._by_name

    def changed(self, name: str, holders: Holders) -> None:
        """``name`` is held by ``holders`` now: its watches are owed a notice, unless they were told so already."""
        with self._lock:
            cookies = self._by_name.get(name)
            if not cookies or self._latest.get(name) == holders:
                return
            self._latest[name] = holders
            for cookie in cookies:
                self._owe(cookie, self._watches[cookie])

    def __len__(self) -> int:
        with self._lock:
            return len(self._watches)

    def close(self) -> None:
        """Stop the thread: the holders' notices still queued are dropped (one being sent ends
        within its timeout); the watches stay as they are."""
        with self._lock:
            self._closing = True
        self._notices.close()

    # -- internals ------------------------------------------------------------------------------

    def _owe(self, cookie: str, watch: NameWatch) -> None:
        """Queue a notice for ``cookie`` unless one is queued already (under the lock)."""
        if cookie not in self._owed:
            self._owed.add(cookie)
            self._notices.post(watch.listener, "holders_changed", (cookie,), f"{watch.name!r} changed hands",
                               functools.partial(self._failed, cookie))

    def _resolve(self, cookie: str) -> tuple[str, str, Holders] | None:
        """On the notices' thread, as a notice goes: what it says now, or ``None`` if the watch ended."""
        with self._lock:
            self._owed.discard(cookie)
            watch = self._watches.get(cookie)
            if watch is None or self._closing:
                return None
            return cookie, watch.name, list(self._latest.get(watch.name, ()))

    def _failed(self, cookie: str) -> None:
        """A notice to ``cookie`` failed: drop it, and every watch told at the same host and port."""
        with self._lock:
            watch = self._watches.get(cookie)
            if watch is None:
                return
            doomed = list(self._at.get(_location(watch.listener), {cookie: None}))
        for each in doomed:
            try:
                self._revoke(each, "could not be told of its name's holders")
            except UnknownLeaseError:
                pass  # it ended meanwhile
            except Exception:
                log.exception("could not drop the watch %s…", each[:6])
        # said once they are gone: a reader of the log may count on it
        log.warning("dropped %d watch(es) told at %s: could not be told", len(doomed), _location(watch.listener))


class _WatchNotices(Notices):
    """The watches' notices, on threads of their own, a lane per listener (one that hangs holds up
    its own lane only): a ``holders_changed`` notice is posted with the watch's cookie alone, and says,
    when it goes, what its watch's name is held by then. It keeps a connection to each of the last
    :data:`KEPT_CONNECTIONS` listeners it told (many watches share one inbox), closed after a failure."""

    def __init__(self, resolve: Callable[[str], tuple[str, str, Holders] | None], *, timeout: float) -> None:
        super().__init__(timeout=timeout, name="NameWatches", consequence="; the watch is dropped")
        self._resolve = resolve
        self._kept = threading.Lock()
        self._proxies: collections.OrderedDict[str, Pyro5.api.Proxy] = collections.OrderedDict()

    def _deliver(self, listener: Any, method: str, args: tuple[Any, ...]) -> None:
        if method == "holders_changed":
            resolved = self._resolve(args[0])
            if resolved is None:
                return  # the watch ended while its notice waited
            args = resolved
        if not isinstance(listener, str):
            super()._deliver(listener, method, args)
            return
        with self._kept:  # a listener's lane runs one notice at a time: its proxy is this thread's now
            proxy = self._proxies.pop(listener, None)
        if proxy is None:
            proxy = Pyro5.api.Proxy(listener)
            proxy._pyroTimeout = self._timeout
        else:
            proxy._pyroClaimOwnership()
        try:
            getattr(proxy, method)(*args)
        except BaseException:
            proxy._pyroRelease()
            raise
        with self._kept:
            self._proxies[listener] = proxy  # the most recent last
            evicted = self._proxies.popitem(last=False)[1] if len(self._proxies) > KEPT_CONNECTIONS else None
        if evicted is not None:
            _release(evicted)

    def close(self) -> None:
        super().close()
        with self._kept:
            proxies = list(self._proxies.values())
            self._proxies.clear()
        for proxy in proxies:
            _release(proxy)


def _release(proxy: Pyro5.api.Proxy) -> None:
    proxy._pyroClaimOwnership()  # a proxy kept is in use by no thread
    proxy._pyroRelease()


def _location(listener: str | NameListener) -> str:
    """Where a listener is reached (its host and port; in-process, its id): the watches that fail together."""
    if isinstance(listener, str):
        try:
            return str(Pyro5.core.URI(listener).location)
        except Exception:
            return listener
    return f"in-process {id(listener):x}"


def _drop(index: dict[str, dict[str, None]], key: str, cookie: str) -> None:
    cookies = index.get(key)
    if cookies is not None:
        cookies.pop(cookie, None)
        if not cookies:
            del index[key]
