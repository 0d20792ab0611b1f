"""Hearing about named leases: :class:`ClaimInbox`, where a holder is told its wait is over,
and who holds a name it watches.

A lease on a name (:meth:`landlord.Landlord.acquire`) that has to wait is
granted later, by the landlord, when the name's holder lets go; the landlord
pushes it to the listener given with the request: ``granted(cookie, token)``,
or ``revoked(cookie, reason)`` when the wait timed out or an operator evicted
the lease. A :class:`ClaimInbox` is that listener: given as itself to a
landlord in the same process (a :class:`NameListener`), or served on a Pyro5
daemon (:attr:`ClaimInbox.uri`) for a landlord elsewhere.

A notice can arrive before its holder has the cookie to expect it (a grant
made while the ``acquire`` answer is still on its way): the inbox keeps the
last :data:`KEPT_EARLY` such notices, so :meth:`ClaimInbox.expect` finds one
that came early. Only a holder of the cookie can be affected by a notice,
and the cookie is the lease's secret.

A watch of a name's holders (:meth:`landlord.Landlord.watch_name`) is a lease
too: the landlord tells its listener ``holders_changed(cookie, name,
holders)`` after each change, the cookie being the watch's. :meth:`ClaimInbox.watch`
hands each to a callback, one at a time per watch and in the order they
came (the latest that came before the watch was expected first).
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable

import Pyro5.api

from ..clock import SYSTEM_CLOCK, Clock
from ..transport.addresses import advertised_host

__all__ = ["NameListener", "ClaimInbox", "Expected", "Holders", "KEPT_EARLY", "MAX_HOLDERS"]

log = logging.getLogger("landlord.names")

KEPT_EARLY = 1024  # notices kept for cookies not expected yet (the oldest go first)
MAX_REASON = 1000  # characters of a reason kept
MAX_HOLDERS = 10_000  # holders in one notice (a name's most: landlord.grantor.names.MAX_LIMIT)
MAX_NAME = 256  # characters of a name (landlord.grantor.names.MAX_NAME_LENGTH)

Holders = list[tuple[int, str | None]]  # a name's holders: (token, value) each, in the order granted
OnHolders = Callable[[str, Holders], None]  # called with the name and its holders


class NameListener:
    """What a landlord in the same process tells of named leases (:meth:`landlord.Landlord.acquire`'s
    ``listener``); a remote landlord calls the same two methods on a Pyro5 object."""

    def granted(self, cookie: str, token: int) -> None:
        """Lease ``cookie`` now holds its name, with fencing token ``token``."""

    def revoked(self, cookie: str, reason: str) -> None:
        """Lease ``cookie`` was ended by its landlord: a wait that timed out, an eviction."""

    def holders_changed(self, cookie: str, name: str, holders: Holders) -> None:
        """The watch ``cookie`` hears that ``name`` is held by ``holders`` now ((token, value) each)."""


class Expected:
    """What one lease has heard: its token once granted, the reason once revoked. Thread-safe.

    Args:
        clock: the clock :meth:`wait` counts on.
        on_revoked: called with the reason when a revocation arrives (after :meth:`wait` sees it).
    """

    def __init__(self, clock: Clock = SYSTEM_CLOCK, on_revoked: Callable[[str], None] | None = None) -> None:
        self._clock = clock
        self._changed = threading.Condition()
        self.token: int | None = None
        self.reason: str | None = None
        self.on_revoked = on_revoked
        self._on_heard: Callable[[], None] | None = None

    def wait(self, deadline: float) -> bool:
        """Wait until granted or revoked, or until ``deadline`` on the clock's monotonic time
        (``inf``: no limit); whether anything was heard."""
        with self._changed:
            while self.token is None and self.reason is None:
                if self._clock.monotonic() >= deadline:
                    return False
                self._clock.wait(self._changed, deadline)
            return True

    def heard(self, token: int | None, reason: str | None) -> None:
        """Record a notice (the first grant and the first revocation count) and wake the waiter."""
        with self._changed:
            if token is not None and self.token is None:
                self.token = token
            if reason is not None and self.reason is None:
                self.reason = reason
            self._changed.notify_all()
            on_revoked = self.on_revoked if reason is not None else None
            on_heard, self._on_heard = self._on_heard, None
        if on_heard is not None:
            on_heard()
        if on_revoked is not None:
            on_revoked(reason or "")

    def when_heard(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once, when anything is heard: at once (on this thread) if it was
        already, else on the thread that hears it. What waits without a thread (asyncio) uses it."""
        with self._changed:
            if self.token is None and self.reason is None:
                self._on_heard = callback
                return
        callback()


class _RemoteInbox:
    """The Pyro5 object a remote landlord calls: checks what it is sent, then hands it on."""

    def __init__(self, inbox: ClaimInbox) -> None:
        self._inbox = inbox

    @Pyro5.api.expose
    def granted(self, cookie: str, token: int) -> None:
        if not isinstance(cookie, str) or not isinstance(token, int) or isinstance(token, bool) or token < 1:
            raise TypeError("granted takes a cookie (str) and a token (int, at least 1)")
        self._inbox.granted(cookie, token)

    @Pyro5.api.expose
    def revoked(self, cookie: str, reason: str) -> None:
        if not isinstance(cookie, str) or not isinstance(reason, str):
            raise TypeError("revoked takes a cookie and a reason, both str")
        self._inbox.revoked(cookie, reason)

    @Pyro5.api.expose
    def holders_changed(self, cookie: str, name: str, holders: Holders) -> None:
        if not isinstance(cookie, str) or not isinstance(name, str) or len(name) > MAX_NAME:
            raise TypeError(f"holders_changed takes a cookie and a name (str, at most {MAX_NAME} characters)")
        self._inbox.holders_changed(cookie, name, check_holders(holders))


def check_holders(holders: object) -> Holders:
    """``holders`` as a list of (token, value) tuples, if it is one (serpent may send lists for tuples).

    Raises:
        TypeError: not a list of at most :data:`MAX_HOLDERS` pairs of a token (an int, at least 1)
            and a value (a str or ``None``).
    """
    if not isinstance(holders, (list, tuple)) or len(holders) > MAX_HOLDERS:
        raise TypeError(f"holders are a list of at most {MAX_HOLDERS} (token, value) pairs")
    checked: Holders = []
    for pair in holders:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise TypeError("a holder is a (token, value) pair")
        token, value = pair
        if not isinstance(token, int) or isinstance(token, bool) or token < 1:
            raise TypeError(f"a holder's token is an int of at least 1, got {token!r:.20}")
        if value is not None and not isinstance(value, str):
            raise TypeError(f"a holder's value is a str or None, got {type(value).__name__}")
        checked.append((token, value))
    return checked


class _Watch:
    """One watch's callbacks, and the lock that hands it one notice at a time."""

    __slots__ = ("on_holders", "on_revoked", "lock")

    def __init__(self, on_holders: OnHolders, on_revoked: Callable[[str], None] | None) -> None:
        self.on_holders, self.on_revoked = on_holders, on_revoked
        self.lock = threading.Lock()


class ClaimInbox(NameListener):
    """Receives a process's notices about its named leases, and hands each to the lease's :class:`Expected`.

    Thread-safe. Use it as a context manager, or :meth:`close` it.

    Args:
        serve: serve it on a Pyro5 daemon, for landlords in other processes (``False``: in-process only).
        host: the address to serve on (default: this host's own address); landlords must reach it.
        daemon: a Pyro5 daemon already serving, to serve on instead (wins over ``host``).
        clock: the clock the :class:`Expected` it makes wait on.
    """

    def __init__(self, *, serve: bool = True, host: str | None = None, daemon: Pyro5.api.Daemon | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._expected: dict[str, Expected] = {}
        self._early: collections.OrderedDict[str, tuple[int | None, str | None]] = collections.OrderedDict()
        self._watches: dict[str, _Watch] = {}
        self._early_holders: collections.OrderedDict[str, tuple[str, Holders]] = collections.OrderedDict()
        self._remote = _RemoteInbox(self)
        self._thread: threading.Thread | None = None
        self._daemon = daemon
        self.uri: str | None = None
        if serve:
            if daemon is None:
                daemon = Pyro5.api.Daemon(host=advertised_host("0.0.0.0") if host is None else host, port=0)
                self._thread = threading.Thread(target=daemon.requestLoop, name="ClaimInbox", daemon=True)
            self._daemon = daemon
            self.uri = str(daemon.register(self._remote))
            if self._thread is not None:
                self._thread.start()

    def expect(self, cookie: str, on_revoked: Callable[[str], None] | None = None) -> Expected:
        """Start hearing about lease ``cookie`` (a notice that came before is applied at once)."""
        expected = Expected(self.clock, on_revoked)
        with self._lock:
            self._expected[cookie] = expected
            early = self._early.pop(cookie, None)
        if early is not None:
            expected.heard(*early)
        return expected

    def forget(self, cookie: str) -> None:
        """Stop hearing about lease ``cookie``."""
        with self._lock:
            self._expected.pop(cookie, None)
            self._early.pop(cookie, None)

    def watch(self, cookie: str, on_holders: OnHolders, on_revoked: Callable[[str], None] | None = None) -> None:
        """Start hearing the holders the watch ``cookie`` is told: ``on_holders(name, holders)`` for
        each notice, one at a time, in order (the latest that came before at once, on this thread);
        ``on_revoked(reason)`` if its landlord ends it."""
        watch = _Watch(on_holders, on_revoked)
        with self._lock:
            self._watches[cookie] = watch
            early = self._early_holders.pop(cookie, None)
            watch.lock.acquire()  # before a notice arriving now can: the early one goes first
        try:
            if early is not None:
                self._tell(watch, cookie, *early)
        finally:
            watch.lock.release()

    def unwatch(self, cookie: str) -> None:
        """Stop hearing about the watch ``cookie``."""
        with self._lock:
            self._watches.pop(cookie, None)
            self._early_holders.pop(cookie, None)

    def granted(self, cookie: str, token: int) -> None:
        self._deliver(cookie, token, None)

    def revoked(self, cookie: str, reason: str) -> None:
        with self._lock:
            watch = self._watches.pop(cookie, None)
        if watch is not None:
            if watch.on_revoked is not None:
                self._call(watch.on_revoked, cookie, reason[:MAX_REASON])
            return
        self._deliver(cookie, None, reason[:MAX_REASON])

    def holders_changed(self, cookie: str, name: str, holders: Holders) -> None:
        with self._lock:
            watch = self._watches.get(cookie)
            if watch is None:
                self._early_holders.pop(cookie, None)
                self._early_holders[cookie] = (name, list(holders))
                while len(self._early_holders) > KEPT_EARLY:
                    self._early_holders.popitem(last=False)
                return
        with watch.lock:
            self._tell(watch, cookie, name, list(holders))

    def _tell(self, watch: _Watch, cookie: str, name: str, holders: Holders) -> None:
        with self._lock:
            if self._watches.get(cookie) is not watch:
                return  # unwatched meanwhile
        self._call(watch.on_holders, cookie, name, holders)

    @staticmethod
    def _call(callback: Callable[..., None], cookie: str, *args: object) -> None:
        try:
            callback(*args)
        except Exception:
            log.exception("a callback for the watch %s… failed", cookie[:6])

    def _deliver(self, cookie: str, token: int | None, reason: str | None) -> None:
        with self._lock:
            expected = self._expected.get(cookie)
            if expected is None:
                before = self._early.pop(cookie, (None, None))
                self._early[cookie] = (before[0] if token is None else token, before[1] if reason is None else reason)
                while len(self._early) > KEPT_EARLY:
                    self._early.popitem(last=False)
                return
        try:
            expected.heard(token, reason)
        except Exception:
            log.exception("a callback for named lease %s… failed", cookie[:6])

    def __len__(self) -> int:
        with self._lock:
            return len(self._expected)

    def close(self) -> None:
        """Stop receiving (a caller's daemon goes on serving)."""
        with self._lock:
            self._expected.clear()
            self._early.clear()
            self._watches.clear()
            self._early_holders.clear()
        if self._daemon is not None and self.uri is not None:
            self._daemon.unregister(self._remote)
        if self._thread is not None and self._daemon is not None:
            self._daemon.shutdown()
            self._thread.join(10)

    def __enter__(self) -> ClaimInbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
