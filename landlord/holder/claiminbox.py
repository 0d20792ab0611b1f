"""Hearing about named leases: :class:`ClaimInbox`, where a holder is told its wait is over.

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
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable

import Pyro5.api

from ..clock import SYSTEM_CLOCK, Clock
from ..transport.addresses import advertised_host

__all__ = ["NameListener", "ClaimInbox", "Expected", "KEPT_EARLY"]

log = logging.getLogger("landlord.names")

KEPT_EARLY = 1024  # notices kept for cookies not expected yet (the oldest go first)
MAX_REASON = 1000  # characters of a reason kept


class NameListener:
    """What a landlord in the same process tells of named leases (:meth:`landlord.Landlord.acquire`'s
    ``listener``); a remote landlord calls the same two methods on a Pyro5 object."""

    def granted(self, cookie: str, token: int) -> None:
        """Lease ``cookie`` now holds its name, with fencing token ``token``."""

    def revoked(self, cookie: str, reason: str) -> None:
        """Lease ``cookie`` was ended by its landlord: a wait that timed out, an eviction."""


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
        if on_revoked is not None:
            on_revoked(reason or "")


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

    def granted(self, cookie: str, token: int) -> None:
        self._deliver(cookie, token, None)

    def revoked(self, cookie: str, reason: str) -> None:
        self._deliver(cookie, None, reason[:MAX_REASON])

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
        if self._daemon is not None and self.uri is not None:
            self._daemon.unregister(self._remote)
        if self._thread is not None and self._daemon is not None:
            self._daemon.shutdown()
            self._thread.join(10)

    def __enter__(self) -> ClaimInbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
