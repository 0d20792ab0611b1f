"""Named leases: :class:`NameTable`, the clock-free core of exclusive leases and semaphores (issue 25).

A *name* is granted to at most ``limit`` holders at once: 1 makes it
exclusive (a lock), N a semaphore. A name's limit is fixed by the request that
creates it; a request with another limit is refused, so two clients cannot
disagree on what the name means. A request beyond the limit is refused, or
queued first come first served until a deadline when the caller asks to wait.

Every grant carries a **fencing token**, an int that strictly increases: one
counter for the whole table, not one per name, so a name forgotten when it
falls idle (which keeps the table bounded) can never reuse a token when it
comes back, and a restart needs one number to carry on from
(:attr:`NameTable.high_water`, passed back to the constructor).

Holders and waiters are lease cookies: a waiter waits through a lease of its
own, so a waiter that dies leaves the queue when that lease ends. One cookie
is in one place only (a holder or a waiter of one name), so every operation
after :meth:`NameTable.request` needs the cookie alone.

A lease that ends by cancellation frees its place at once (:meth:`NameTable.release`);
one that expires (:meth:`NameTable.expire`) closes its name for the lock-delay
its holder asked for (Consul's lock-delay): the holder may be paused, not
dead, and still acting, so nobody is granted the name until the delay, counted
from the expiry, has passed. A closed name grants nothing at all, though a
semaphore's other holders keep their places: conservative, and one rule for
locks and semaphores.

Not thread-safe, and it never reads a clock: its owner calls it under one lock,
passing the time, and calls :meth:`NameTable.advance` when
:meth:`NameTable.next_deadline` comes (waiters timing out, names reopening).
Every operation returns whom it granted, so the owner can tell them at once.
:mod:`landlord.grantor.claims` wires it to a landlord's leases.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from typing import NamedTuple

from ..errors import LeaseDeniedError

__all__ = ["NameTable", "Grant", "Queued", "Refused", "Waiter", "Changes", "NameView", "check_name",
           "MAX_NAMES", "MAX_WAITERS", "MAX_NAME_LENGTH", "MAX_LIMIT", "MAX_LOCK_DELAY"]

MAX_NAMES = 10_000  # names held, waited for or closed at once: a client cannot grow the table without end
MAX_WAITERS = 1_000  # waiters per name
MAX_NAME_LENGTH = 256  # characters
MAX_LIMIT = 10_000  # holders per name
MAX_LOCK_DELAY = 60.0  # seconds (Consul's cap): a longer one would let a dead holder block its name for long


@dataclasses.dataclass(frozen=True)
class Grant:
    """``cookie`` holds ``name``, with fencing token ``token``."""

    name: str
    cookie: str
    token: int


@dataclasses.dataclass(frozen=True)
class Waiter:
    """``cookie`` waits for ``name`` until ``deadline`` (``math.inf``: until its own lease ends)."""

    name: str
    cookie: str
    deadline: float


@dataclasses.dataclass(frozen=True)
class Queued:
    """A request that waits: ``position`` 1 is granted next."""

    waiter: Waiter
    position: int


@dataclasses.dataclass(frozen=True)
class Refused:
    """A request not granted and not waiting: ``reason`` says why, for the caller's error."""

    name: str
    reason: str


@dataclasses.dataclass(frozen=True)
class Changes:
    """What an operation did besides its own: waiters granted, and waiters whose wait timed out."""

    granted: tuple[Grant, ...] = ()
    timed_out: tuple[Waiter, ...] = ()


@dataclasses.dataclass(frozen=True)
class NameView:
    """A name as an operator sees it: ``closed_until`` is the end of a lock-delay, or ``None``."""

    name: str
    limit: int
    holders: tuple[Grant, ...]
    waiters: tuple[Waiter, ...]
    closed_until: float | None


class _Holding(NamedTuple):
    token: int
    lock_delay: float  # seconds the name stays closed if this holding expires


class _Waiting(NamedTuple):
    deadline: float
    lock_delay: float  # kept for when it is granted


class _Name:
    """One name's limit, holders and waiters (a dict keeps their order: first come first served)."""

    __slots__ = ("limit", "holders", "waiters", "closed_until")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.holders: dict[str, _Holding] = {}
        self.waiters: dict[str, _Waiting] = {}
        self.closed_until: float | None = None

    def is_open(self, now: float) -> bool:
        return self.closed_until is None or self.closed_until <= now

    def is_idle(self) -> bool:
        return not self.holders and not self.waiters and self.closed_until is None


# timers on the heap: a waiter's deadline (keyed by cookie), a name reopening (keyed by name)
_WAIT, _REOPEN = 0, 1
_STALE_SLACK = 64  # timers beyond the live ones that trigger a rebuild of the heap


class NameTable:
    """Named leases with limits, waiters, lock-delays and fencing tokens (see the module's docstring).

    Args:
        high_water: the last token granted before (stored by the caller): the
            next grant's token is one more.
        max_names: the most names at once (holders, waiters or a lock-delay keep a name).
        max_waiters: the most waiters per name.

    Raises:
        TypeError: an argument is not an int (a bool is not).
        ValueError: ``high_water`` below 0, or a maximum below 1.
    """

    def __init__(self, high_water: int = 0, *, max_names: int = MAX_NAMES, max_waiters: int = MAX_WAITERS) -> None:
        _check_int(high_water, "high_water", 0)
        _check_int(max_names, "max_names", 1)
        _check_int(max_waiters, "max_waiters", 1)
        self._high_water = high_water
        self.max_names, self.max_waiters = max_names, max_waiters
        self._names: dict[str, _Name] = {}
        self._where: dict[str, str] = {}  # cookie -> its name, holder or waiter
        self._timers: list[tuple[float, int, str]] = []  # (when, _WAIT or _REOPEN, cookie or name)

    @property
    def high_water(self) -> int:
        """The last token granted (what to store, and give back to the constructor on restart)."""
        return self._high_water

    # -- requests -------------------------------------------------------------------------------

    def request(self, name: str, cookie: str, now: float, *, limit: int = 1, wait_until: float | None = None,
                lock_delay: float = 0.0) -> Grant | Queued | Refused:
        """Ask that lease ``cookie`` hold ``name``: granted, queued, or refused.

        Granted when the name is open, has a free place and nobody waits for it
        (a newcomer never goes before a waiter). Otherwise queued, last, when
        ``wait_until`` is later than ``now``; refused when not.

        Args:
            name: printable, 1 to :data:`MAX_NAME_LENGTH` characters.
            cookie: the lease that will hold or wait; in the table nowhere yet.
            now: the time, on the caller's clock.
            limit: the most holders at once, 1 to :data:`MAX_LIMIT`; must be the name's own if it exists.
            wait_until: ``None`` not to wait; else when to stop waiting (``math.inf``: never).
            lock_delay: seconds, 0 to :data:`MAX_LOCK_DELAY`, the name stays closed if this lease expires holding it.

        Raises:
            TypeError: an argument of the wrong type.
            ValueError: a bad name, cookie, limit, time or delay; a cookie already
                in the table; a limit other than the name's.
            LeaseDeniedError: :attr:`max_names` names or :attr:`max_waiters` waiters already.
        """
        _check_request(name, cookie, now, limit, wait_until, lock_delay)
        if cookie in self._where:
            raise ValueError(f"lease {cookie!r} already holds or waits for {self._where[cookie]!r}")
        entry = self._names.get(name)
        if entry is not None and entry.limit != limit:
            raise ValueError(f"name {name!r} has limit {entry.limit}, not {limit}")
        if entry is None:
            if len(self._names) >= self.max_names:
                raise LeaseDeniedError(f"too many names ({self.max_names}): {name!r} refused")
            entry = self._names[name] = _Name(limit)
        elif _free(entry, now) == 0 or entry.waiters:
            return self._wait(name, entry, cookie, now, wait_until, lock_delay)
        return self._grant(name, entry, cookie, lock_delay)

    def _wait(self, name: str, entry: _Name, cookie: str, now: float, wait_until: float | None,
              lock_delay: float) -> Queued | Refused:
        if wait_until is None or wait_until <= now:
            held = f"held ({len(entry.holders)} of {entry.limit})"
            why = held if entry.is_open(now) else "closed by a lock-delay"
            return Refused(name, f"name {name!r} is {why}" + (", and waited for" if entry.waiters else ""))
        if len(entry.waiters) >= self.max_waiters:
            raise LeaseDeniedError(f"too many waiters for {name!r} ({self.max_waiters})")
        entry.waiters[cookie] = _Waiting(wait_until, lock_delay)
        self._where[cookie] = name
        self._add_timer(wait_until, _WAIT, cookie)
        return Queued(Waiter(name, cookie, wait_until), len(entry.waiters))

    def _grant(self, name: str, entry: _Name, cookie: str, lock_delay: float) -> Grant:
        self._high_water += 1
        entry.holders[cookie] = _Holding(self._high_water, lock_delay)
        self._where[cookie] = name
        return Grant(name, cookie, self._high_water)

    def adopt(self, name: str, cookie: str, token: int, *, limit: int = 1, lock_delay: float = 0.0) -> None:
        """Put back a holder a store kept (a restart, a failover): ``cookie`` holds ``name`` with
        ``token``, and the next token granted is above it.

        Raises:
            TypeError: an argument of the wrong type.
            ValueError: as :meth:`request`; a token below 1; the name already full.
        """
        _check_request(name, cookie, 0.0, limit, None, lock_delay)
        _check_int(token, "token", 1)
        if cookie in self._where:
            raise ValueError(f"lease {cookie!r} already holds or waits for {self._where[cookie]!r}")
        entry = self._names.get(name)
        if entry is not None and entry.limit != limit:
            raise ValueError(f"name {name!r} has limit {entry.limit}, not {limit}")
        if entry is not None and len(entry.holders) >= limit:
            raise ValueError(f"name {name!r} already has {limit} holder(s)")
        if entry is None:
            entry = self._names[name] = _Name(limit)
        entry.holders[cookie] = _Holding(token, lock_delay)
        self._where[cookie] = name
        self._high_water = max(self._high_water, token)

    def hand_over(self, cookie: str, successor: str, now: float) -> Changes:
        """Holder ``cookie`` gives its place to waiter ``successor`` at once, whatever the queue's
        order (an election's chosen successor): nobody else can take the place in between.

        Returns:
            the successor's grant first, then any other waiter granted (a lock-delay that ended).

        Raises:
            TypeError: ``cookie`` or ``successor`` not a str, ``now`` not a number.
            ValueError: ``cookie`` does not hold a name, ``successor`` does not wait for it, or ``now``
                not finite (nothing changes).
        """
        _check_time(now, "now")
        name = self._name_of(cookie)
        entry = self._names[name]
        if cookie not in entry.holders:
            raise ValueError(f"lease {cookie!r} waits for {name!r}, it does not hold it")
        if not isinstance(successor, str):
            raise TypeError(f"successor must be a str, got {type(successor).__name__}")
        waiting = entry.waiters.get(successor)
        if waiting is None:
            raise ValueError(f"lease {successor!r:.20} does not wait for {name!r}")
        del entry.holders[cookie], self._where[cookie]
        del entry.waiters[successor], self._where[successor]
        first = self._grant(name, entry, successor, waiting.lock_delay)
        rest = self._fill(name, entry, now)
        return Changes((first, *rest.granted), rest.timed_out)

    # -- leases that end ------------------------------------------------------------------------

    def release(self, cookie: str, now: float) -> Changes:
        """Lease ``cookie`` was cancelled: a holder frees its place at once, a waiter leaves.

        Raises:
            TypeError: ``cookie`` not a str, ``now`` not a number.
            ValueError: ``cookie`` is in the table nowhere; ``now`` not finite.
        """
        return self._end(cookie, now, expired=False)

    def expire(self, cookie: str, now: float) -> Changes:
        """Lease ``cookie`` expired: a holder frees its place, and its name closes for the
        holder's lock-delay, counted from ``now``; a waiter leaves.

        Raises:
            TypeError: ``cookie`` not a str, ``now`` not a number.
            ValueError: ``cookie`` is in the table nowhere; ``now`` not finite.
        """
        return self._end(cookie, now, expired=True)

    def leave(self, cookie: str) -> Waiter:
        """Waiter ``cookie`` stops waiting (a place it leaves grants nobody: it was waited for).

        Raises:
            TypeError: ``cookie`` not a str.
            ValueError: ``cookie`` is not a waiter (a holder ends by :meth:`release` or :meth:`expire`).
        """
        name = self._name_of(cookie)
        entry = self._names[name]
        if cookie not in entry.waiters:
            raise ValueError(f"lease {cookie!r} holds {name!r}, it does not wait")
        return self._drop_waiter(name, entry, cookie)

    def _end(self, cookie: str, now: float, *, expired: bool) -> Changes:
        _check_time(now, "now")
        name = self._name_of(cookie)
        entry = self._names[name]
        if cookie in entry.waiters:
            self._drop_waiter(name, entry, cookie)
            return Changes()
        holding = entry.holders.pop(cookie)
        del self._where[cookie]
        if expired and holding.lock_delay > 0:
            until = now + holding.lock_delay
            if entry.closed_until is None or until > entry.closed_until:
                entry.closed_until = until
                self._add_timer(until, _REOPEN, name)
        return self._fill(name, entry, now)

    def _drop_waiter(self, name: str, entry: _Name, cookie: str) -> Waiter:
        waiting = entry.waiters.pop(cookie)
        del self._where[cookie]
        self._forget_if_idle(name, entry)
        return Waiter(name, cookie, waiting.deadline)

    # -- time -----------------------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        """When :meth:`advance` has something to do next (a wait that times out, a name that
        reopens), or ``None`` while nothing is due."""
        while self._timers and not self._is_live(self._timers[0]):
            heapq.heappop(self._timers)  # a timer whose waiter left or whose name reopened already
        return self._timers[0][0] if self._timers else None

    def advance(self, now: float) -> Changes:
        """Everything due by ``now``: waiters whose deadline has come leave (timed out), names
        whose lock-delay has passed reopen, and free places go to the waiters, in order.

        All timeouts are taken first: a waiter whose deadline has come is not granted, even if a
        name reopened before it (the caller was late; the waiter has stopped waiting).

        Raises:
            TypeError, ValueError: ``now`` not a finite number.
        """
        _check_time(now, "now")
        timed_out, due = [], set()
        while self._timers and self._timers[0][0] <= now:
            timer = heapq.heappop(self._timers)
            if self._is_live(timer):
                _, kind, key = timer
                if kind == _WAIT:
                    name = self._where[key]
                    timed_out.append(self._drop_waiter(name, self._names[name], key))
                else:
                    name = key
                due.add(name)
        granted = [grant for name in sorted(due) if name in self._names
                   for grant in self._fill(name, self._names[name], now).granted]
        return Changes(tuple(granted), tuple(timed_out))

    def _fill(self, name: str, entry: _Name, now: float) -> Changes:
        """Reopen ``name`` if its lock-delay has passed, and grant its free places in order."""
        if entry.closed_until is not None and entry.closed_until <= now:
            entry.closed_until = None
        granted, timed_out = [], []
        while entry.waiters and _free(entry, now) > 0:
            cookie, waiting = next(iter(entry.waiters.items()))
            if waiting.deadline <= now:  # timed out, though advance has not been called yet
                timed_out.append(self._drop_waiter(name, entry, cookie))
                continue
            del entry.waiters[cookie], self._where[cookie]
            granted.append(self._grant(name, entry, cookie, waiting.lock_delay))
        self._forget_if_idle(name, entry)
        return Changes(tuple(granted), tuple(timed_out))

    def _is_live(self, timer: tuple[float, int, str]) -> bool:
        when, kind, key = timer
        if kind == _WAIT:
            name = self._where.get(key)
            waiting = self._names[name].waiters.get(key) if name is not None else None
            return waiting is not None and waiting.deadline == when
        entry = self._names.get(key)
        return entry is not None and entry.closed_until == when

    def _add_timer(self, when: float, kind: int, key: str) -> None:
        if math.isinf(when):
            return  # never due: a wait without a timeout ends with its lease
        heapq.heappush(self._timers, (when, kind, key))
        if len(self._timers) > 2 * (len(self._where) + len(self._names)) + _STALE_SLACK:
            # waiters that left early leave their timers behind: rebuild from the live ones
            self._timers = [timer for timer in self._timers if self._is_live(timer)]
            heapq.heapify(self._timers)

    # -- reading --------------------------------------------------------------------------------

    def view(self) -> tuple[NameView, ...]:
        """Every name with its limit, holders (with their tokens), waiters in order, and lock-delay; by name."""
        return tuple(view for name in sorted(self._names) if (view := self.view_of(name)) is not None)

    def view_of(self, name: str) -> NameView | None:
        """One name as :meth:`view` shows it, or ``None`` while nobody holds, waits for or closed it."""
        entry = self._names.get(name)
        if entry is None:
            return None
        return NameView(name, entry.limit,
                        tuple(Grant(name, cookie, h.token) for cookie, h in entry.holders.items()),
                        tuple(Waiter(name, cookie, w.deadline) for cookie, w in entry.waiters.items()),
                        entry.closed_until)

    def name_of(self, cookie: str) -> str | None:
        """The name ``cookie`` holds or waits for, or ``None``."""
        return self._where.get(cookie)

    def _name_of(self, cookie: str) -> str:
        if not isinstance(cookie, str):
            raise TypeError(f"cookie must be a str, got {type(cookie).__name__}")
        name = self._where.get(cookie)
        if name is None:
            raise ValueError(f"lease {cookie!r} neither holds nor waits for a name")
        return name

    def _forget_if_idle(self, name: str, entry: _Name) -> None:
        if entry.is_idle():
            # its limit goes with it (the next request sets it again); already gone when a waiter
            # timed out by _fill was the last of it
            self._names.pop(name, None)


def _free(entry: _Name, now: float) -> int:
    """How many more holders ``entry`` may take now (none while a lock-delay lasts)."""
    return entry.limit - len(entry.holders) if entry.is_open(now) else 0


# -- checks ------------------------------------------------------------------------------------

def check_name(name: object) -> str:
    """``name`` if it can be a name: 1 to :data:`MAX_NAME_LENGTH` printable characters.

    Raises:
        TypeError: not a str.
        ValueError: empty, too long or not printable.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if not 1 <= len(name) <= MAX_NAME_LENGTH or not name.isprintable():
        raise ValueError(f"a name is 1 to {MAX_NAME_LENGTH} printable characters, got {name[:MAX_NAME_LENGTH]!r}")
    return name


def _check_request(name: object, cookie: object, now: object, limit: object, wait_until: object,
                   lock_delay: object) -> None:
    check_name(name)
    if not isinstance(cookie, str):
        raise TypeError(f"cookie must be a str, got {type(cookie).__name__}")
    if not cookie:
        raise ValueError("cookie is empty")
    _check_time(now, "now")
    _check_int(limit, "limit", 1, MAX_LIMIT)
    if wait_until is not None and math.isnan(_check_number(wait_until, "wait_until")):
        raise ValueError("wait_until is NaN")  # inf is allowed: a wait that ends with its lease
    if not 0 <= _check_time(lock_delay, "lock_delay") <= MAX_LOCK_DELAY:
        raise ValueError(f"lock_delay must be 0 to {MAX_LOCK_DELAY} seconds, got {lock_delay}")


def _check_int(value: object, what: str, low: int, high: float = math.inf) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{what} must be an int, got {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{what} must be {low} to {high}, got {value}")


def _check_number(value: object, what: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{what} must be a number, got {type(value).__name__}")
    return float(value)


def _check_time(value: object, what: str) -> float:
    number = _check_number(value, what)
    if not math.isfinite(number):
        raise ValueError(f"{what} must be finite, got {value}")
    return number
