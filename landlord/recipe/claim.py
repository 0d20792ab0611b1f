"""A name held through a lease, from the holder's side: :class:`Claim`, the core of every recipe.

Acquiring asks the landlord for a lease on the name
(:meth:`landlord.Landlord.acquire`): granted at once with a fencing token, or
queued; a queued claim waits for the landlord to push its grant (no
polling), then holds the name with the same lease. While held, a
:class:`~landlord.LeaseRenewalManager` keeps the lease alive and the
process's :class:`~landlord.recipe.watchdog.Watchdog` keeps the time:

**The holder knows it lost before anyone else can win.** The claim is
:attr:`~Claim.valid` until its lease's deadline *minus a margin*, on this
process's monotonic clock. The deadline is counted from when each request
was *sent* (the grant, every renewal), so it comes before the landlord's own
end of the lease, after which alone the landlord gives the name to another.
At that moment, or at once when the landlord revokes the lease or a renewal
is refused, the claim turns invalid and its listeners are told (on a thread
of their own); it then lets the lease go. What the margin does not cover:
a process paused between checking :attr:`~Claim.valid` and acting on it.
That is what fencing tokens are for: send :attr:`~Claim.token` with every
write, and have the resource check it (:class:`~landlord.Fence`).

:meth:`~Claim.acquire` runs in phases, each a method: take the claim
(``_reserve``), ask the landlord (``_request``), wait for the pushed grant,
make sense of what was heard (``_settle``), hold (``_hold``). The asyncio forms
(:mod:`landlord.aio.locks`) run the same phases, the calls on a worker and the
wait on the event loop (:meth:`~landlord.holder.claiminbox.Expected.when_heard`).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from typing import Any

from ..clock import SYSTEM_CLOCK, Clock
from ..duration import FOREVER, check_duration
from ..errors import LeaseDeniedError, LeaseError, UnknownLeaseError
from ..holder.claiminbox import ClaimInbox, Expected
from ..holder.landlordlease import LandlordLease
from ..holder.renewal import LeaseRenewalEvent, LeaseRenewalManager
from ..lease import sent_now
from .target import Target
from .watchdog import watchdog_for

__all__ = ["Claim", "DEFAULT_DURATION", "MARGIN", "shared_inbox", "shared_renewals"]

log = logging.getLogger("landlord.recipe")

DEFAULT_DURATION = 15.0  # seconds asked for each term
MARGIN = 0.2  # of the granted term: a claim stops being valid this long before its lease's deadline

RELEASED = "released by its holder while it waited"  # how a release ends an acquire that waits

OnLost = Callable[[str], None]  # called with why the claim was lost


class Claim:
    """Holds ``name`` at the landlord ``landlord`` while acquired (see the module's docstring). Thread-safe.

    Args:
        landlord: a :class:`~landlord.Landlord` in this process, a served landlord's ``PYRO:``
            URI, or a list of a replica group's URIs.
        name: the name, 1 to 256 printable characters.
        limit: holders at once (1: exclusive); every claim on the name must say the same.
        duration: seconds asked for each term.
        lock_delay: seconds the landlord keeps the name closed if this claim's lease expires
            while held (its holder may be paused, not dead); 0 to 60. A release frees it at once.
        margin: seconds before the lease's deadline the claim stops being valid (default:
            a fifth of the granted term).
        value: what others see of this holder (an election's candidate), or ``None``.
        renewals: the renewal manager that keeps the lease alive (default: one shared by the
            process's claims; a landlord in this process on another clock gets one of its own).
        inbox: where grants and revocations are heard (default: one shared by the process's claims).

    Raises:
        TypeError, ValueError: a bad argument (nothing is asked of the landlord).
    """

    def __init__(self, landlord: Any, name: str, *, limit: int = 1, duration: float = DEFAULT_DURATION,
                 lock_delay: float = 0.0, margin: float | None = None, value: str | None = None,
                 renewals: LeaseRenewalManager | None = None, inbox: ClaimInbox | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"name must be a non-empty str, got {name!r:.50}")
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ValueError(f"limit must be an int of at least 1, got {limit!r}")
        duration = check_duration(duration, allow_any=False)
        if not 0 < duration < math.inf:
            raise ValueError(f"duration must be positive and finite, got {duration!r}")
        if margin is not None and not 0 <= check_duration(margin, name="margin", allow_any=False) < duration:
            raise ValueError(f"margin must be at least 0 and below the duration, got {margin!r}")
        self._target = Target(landlord)
        self.clock: Clock = self._target.clock
        self.name, self.limit, self.duration, self.lock_delay = name, limit, duration, float(lock_delay)
        self.margin, self.value = margin, value
        self._own: list[Any] = []  # what this claim made for itself, closed with it
        self._renewals = renewals if renewals is not None else self._default_renewals()
        self._inbox = inbox if inbox is not None else self._default_inbox()
        self._state = threading.Condition()
        self._lease: LandlordLease | None = None
        self._token: int | None = None
        self._lost: str | None = None
        self._on_lost: list[OnLost] = []
        self._watchdog = watchdog_for(self.clock)
        self._watch_key: int | None = None  # the current holding's, at the watchdog
        self._expected: Expected | None = None  # what the current lease hears

    # -- the holder's view ---------------------------------------------------------------------

    @property
    def token(self) -> int | None:
        """The fencing token of the current holding while it is valid, else ``None``."""
        with self._state:
            return self._token if self._valid() else None

    @property
    def valid(self) -> bool:
        """Whether this claim holds its name now: granted, not lost, and its lease's deadline less
        the margin not reached on this process's monotonic clock."""
        with self._state:
            return self._valid()

    @property
    def lease(self) -> LandlordLease | None:
        """The lease of the current holding (or wait), or ``None``."""
        return self._lease

    def on_lost(self, callback: OnLost) -> None:
        """Call ``callback(reason)`` each time a holding is lost (not released): its deadline came,
        the landlord revoked it, or a renewal was refused. Called on a thread of its own, once
        :attr:`valid` is already false."""
        with self._state:
            self._on_lost.append(callback)

    # -- acquiring and releasing ---------------------------------------------------------------

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Hold the name: ``True`` once held, ``False`` if not held within ``timeout`` seconds
        (``None``: no limit) or, not ``blocking``, if it is taken now.

        Raises:
            RuntimeError: this claim holds or waits already.
            LeaseDeniedError: the landlord refused the request (too many names or waiters, the
                policy), or revoked the lease while it waited.
            LeaseError: the lease was lost while it waited (its renewals failed).
            TypeError, ValueError: a limit other than the name's, or a bad ``timeout``.
            Pyro5.errors.CommunicationError: the landlord could not be reached.
        """
        wait = self._reserve(blocking, timeout)
        try:
            return self._ask(wait)
        except BaseException:
            self._unreserve()
            raise

    def release(self) -> None:
        """Let the name go (cancel the lease), at once; nothing if not held. A lost holding lets go by itself.

        Raises:
            Pyro5.errors.CommunicationError: the landlord could not be reached (the lease is no longer
                renewed, and ends at its term).
        """
        with self._state:
            lease, self._lease, self._token = self._lease, None, None
            waiting = self._expected if self._watch_key is None else None  # an acquire waits for a grant
            if self._watch_key is not None:
                self._watchdog.drop(self._watch_key)
                self._watch_key = None
        if isinstance(lease, LandlordLease):
            self._let_go(lease)
            if waiting is not None:
                waiting.heard(None, RELEASED)  # the acquire that waits returns False

    def close(self) -> None:
        """Release, and close what this claim made for itself (a renewal manager, an inbox)."""
        try:
            self.release()
        finally:
            for each in self._own:
                each.close()
            self._own.clear()

    def hand_over(self, successor: str) -> None:
        """Give the name to the claim waiting for it whose value is ``successor``, with no gap
        (:meth:`landlord.Landlord.hand_over`): this claim stops being valid first, the successor is
        granted the name at once with a new, higher token, whatever its place in the queue, and
        nobody else can be granted it in between. This claim's lease ends there.

        Raises:
            RuntimeError: this claim does not hold its name now (not :attr:`valid`).
            ValueError, TypeError: the landlord refused (nobody waits with that value): nothing
                changed, and this claim holds on, valid as before.
            UnknownLeaseError, Pyro5.errors.CommunicationError: the lease had ended, or the landlord
                could not be reached: whether the name was handed over is unknown, so this claim lets go.
        """
        with self._state:
            lease, token = self._lease, self._token
            if not isinstance(lease, LandlordLease) or token is None or not self._valid():
                raise RuntimeError(f"this claim does not hold {self.name!r}: nothing to hand over")
            self._token = None  # not valid from now: the successor may act as soon as it is told
        try:
            self._target.call("hand_over", lease.cookie, successor)
        except (ValueError, TypeError):  # refused before anything changed: hold on
            with self._state:
                if self._lease is lease and self._lost is None:
                    self._token = token
            raise
        except BaseException:
            self._let_go_of(lease)
            raise
        self._let_go_of(lease)  # ended by the landlord: nothing to cancel, nothing to renew

    def __enter__(self) -> Claim:
        if not self.acquire():
            raise LeaseDeniedError(f"{self.name!r} was not acquired")
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "valid" if self.valid else "not held"
        return f"<{type(self).__name__} {self.name!r} at {self._target!r}: {state}, token {self._token}>"

    # -- internals ---------------------------------------------------------------------------------

    def _reserve(self, blocking: bool, timeout: float | None) -> float | None:
        """Check ``timeout`` and take the claim for one acquire: the wait to ask for.

        Raises:
            RuntimeError: it holds or waits already.
            TypeError, ValueError: a bad ``timeout``.
        """
        if timeout is not None:
            timeout = check_duration(timeout, name="timeout", allow_any=False)
        wait = None if not blocking or timeout == 0 else (FOREVER if timeout is None else timeout)
        with self._state:
            if self._lease is not None:
                raise RuntimeError(f"this claim on {self.name!r} already holds or waits; release it first")
            self._lease, self._token, self._lost = _ASKING, None, None
        return wait

    def _unreserve(self) -> None:
        """An acquire failed before it had a lease: the claim is free again."""
        with self._state:
            if self._lease is _ASKING:
                self._lease = None

    def _ask(self, wait: float | None) -> bool:
        asked = self._request(wait)
        if asked is None:
            return False
        lease, token, expected = asked
        if token is None:
            token = self._wait_for_grant(lease, expected, wait)
            if token is None:
                return False
        return self._hold(lease, token)

    def _request(self, wait: float | None) -> tuple[LandlordLease, int | None, Expected] | None:
        """Ask the landlord for the name: the lease, its token (``None``: it waits) and what it will
        hear; ``None`` if refused and not waiting. The lease is renewed from now on."""
        listener = self._inbox if self._target.in_process else self._inbox.uri
        sent = sent_now(self.clock)
        # the landlord is asked to queue it for as long as its lease lasts: the timeout is kept here, by
        # cancelling the lease (a landlord's own timeout would race with it)
        queue = None if wait is None else FOREVER
        try:
            lease, token = self._target.call("acquire", self.name, self.duration, self.limit, queue, self.lock_delay,
                                             self.value, listener)
        except LeaseDeniedError:
            if wait is None:
                with self._state:
                    self._lease = None
                return None
            raise
        if not isinstance(lease, LandlordLease):
            raise LeaseError(f"the landlord answered acquire with {lease!r:.80}")
        lease.record_grant(sent, lease.term)  # counted from sending: it ends before the landlord's end
        with self._state:
            self._lease = lease  # first: a revocation heard from now on is this lease's
        expected = self._inbox.expect(lease.cookie, lambda reason: self._lose(lease, reason))
        with self._state:
            self._expected = expected
        self._renewals.renew_for(lease, FOREVER, lambda event: expected.heard(None, _why(event)))
        return lease, token, expected

    def _hold(self, lease: LandlordLease, token: int) -> bool:
        """Hold with ``token``, and watch the time: whether the claim still has ``lease``."""
        with self._state:
            if self._lease is not lease:
                return False  # released meanwhile
            lost = self._lost
            if lost is None:
                self._token = token
                self._watch_key = self._watchdog.watch(_Holding(self, lease), lease.deadline - self._margin(lease))
                return True
            self._lease = None
        self._let_go(lease)  # revoked (or its renewal refused) as it was granted
        raise LeaseDeniedError(f"{self.name!r} was lost as it was granted: {lost}")

    def _wait_for_grant(self, lease: LandlordLease, expected: Expected, wait: float | None) -> int | None:
        deadline = math.inf if wait is None or math.isinf(wait) else self.clock.monotonic() + wait
        return self._settle(lease, expected, expected.wait(deadline))

    def _settle(self, lease: LandlordLease, expected: Expected, heard: bool) -> int | None:
        """After waiting: the token if granted; else the lease goes, and ``None`` if the wait timed out
        (nothing ``heard``), or :class:`LeaseDeniedError` if the landlord ended it."""
        if heard and expected.token is not None and expected.reason is None:
            return expected.token
        with self._state:
            mine = self._lease is lease
            if mine:
                self._lease = None
        if mine:
            self._let_go(lease)
        if not heard or expected.reason == RELEASED:
            return None  # timed out, or released meanwhile: the lease went (and the name, if just granted)
        raise LeaseDeniedError(f"{self.name!r} was not granted: {expected.reason}")

    def _valid(self) -> bool:
        lease = self._lease
        if not isinstance(lease, LandlordLease) or self._token is None or self._lost is not None:
            return False
        return self.clock.monotonic() < lease.deadline - self._margin(lease)

    def _margin(self, lease: LandlordLease) -> float:
        return self.margin if self.margin is not None else MARGIN * lease.term

    def _check(self, lease: LandlordLease) -> float | None:
        """On the watchdog's thread, when due: when to look again, or ``None`` once the holding is
        over (released, or lost now: its listeners are told, and its lease let go)."""
        with self._state:
            if self._lease is not lease:
                return None  # released
            if self._lost is None:
                deadline = lease.deadline - self._margin(lease)
                if self.clock.monotonic() < deadline:
                    return deadline  # renewed meanwhile
                self._lost = "its lease's deadline (less the margin) came before a renewal"
            reason, listeners = self._lost, list(self._on_lost)
            self._lease, self._token, self._watch_key = None, None, None
        # told, and let go (a remote call), on a thread of its own: the watchdog keeps every claim's time
        threading.Thread(target=self._lost_now, args=(lease, reason, listeners), name="Claim lost", daemon=True).start()
        return None

    def _lost_now(self, lease: LandlordLease, reason: str, listeners: list[OnLost]) -> None:
        log.warning("%r lost %r: %s", self, self.name, reason)
        for callback in listeners:
            try:
                callback(reason)
            except Exception:
                log.exception("a lost-callback of %r failed", self)
        self._let_go(lease)

    def _lose(self, lease: LandlordLease, reason: str) -> None:
        with self._state:
            if self._lease is lease and self._lost is None:
                self._lost = reason
                if self._watch_key is not None:
                    self._watchdog.wake(self._watch_key)

    def _let_go_of(self, lease: LandlordLease) -> None:
        """Drop ``lease`` if it is still this claim's (after a hand-over): not renewed, nor heard of."""
        with self._state:
            mine = self._lease is lease
            if mine:
                self._lease, self._token = None, None
                if self._watch_key is not None:
                    self._watchdog.drop(self._watch_key)
                    self._watch_key = None
        if mine:
            self._let_go(lease)

    def _let_go(self, lease: LandlordLease) -> None:
        self._inbox.forget(lease.cookie)
        try:
            self._renewals.cancel(lease)
        except (UnknownLeaseError, LeaseDeniedError):
            pass  # it had ended already
        except Exception as exc:
            log.warning("could not cancel the lease of %r (%s: %s); it ends at its term", self,
                        type(exc).__name__, exc)

    def _default_renewals(self) -> LeaseRenewalManager:
        if self.clock is SYSTEM_CLOCK:
            return shared_renewals()
        renewals = LeaseRenewalManager(clock=self.clock, name=f"Claim {self.name[:20]}")
        self._own.append(renewals)
        return renewals

    def _default_inbox(self) -> ClaimInbox:
        if not self._target.in_process and self.clock is SYSTEM_CLOCK:
            return shared_inbox()
        inbox = ClaimInbox(serve=not self._target.in_process, clock=self.clock)
        self._own.append(inbox)
        return inbox


class _Holding:
    """One holding of a claim, as the watchdog checks it."""

    __slots__ = ("_claim", "_lease")

    def __init__(self, claim: Claim, lease: LandlordLease) -> None:
        self._claim, self._lease = claim, lease

    def check(self) -> float | None:
        return self._claim._check(self._lease)


def _why(event: LeaseRenewalEvent) -> str:
    """A lost renewal as a claim's reason (heard like a revocation: the waiter wakes, the holder loses)."""
    return f"a renewal failed: {type(event.exception).__name__}: {event.exception}"


_ASKING: Any = object()  # the lease while acquire's request is on its way: the claim is taken
_shared_lock = threading.Lock()
_shared: dict[str, Any] = {}


def shared_renewals() -> LeaseRenewalManager:
    """The renewal manager this process's claims share by default (made on first use)."""
    with _shared_lock:
        if "renewals" not in _shared:
            _shared["renewals"] = LeaseRenewalManager(name="Claims")
        renewals: LeaseRenewalManager = _shared["renewals"]
        return renewals


def shared_inbox() -> ClaimInbox:
    """The inbox this process's claims on remote landlords share by default (served on first use)."""
    with _shared_lock:
        if "inbox" not in _shared:
            _shared["inbox"] = ClaimInbox()
        inbox: ClaimInbox = _shared["inbox"]
        return inbox
