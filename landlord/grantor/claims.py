"""Named leases on a landlord: :class:`Claims` ties a :class:`~landlord.grantor.names.NameTable`
to the landlord's leases (issue 25).

A named lease is an ordinary lease of the landlord whose resource is a
:class:`NameClaim`: renewed, cancelled, revoked and expired like any other,
stored in the same row. The claim says which name it holds or waits for, with
what limit and lock-delay, the holder's public ``value`` (what an election
shows of its leader), whom to tell, and, once granted, its fencing token.

- **Ends.** The landlord's free callbacks hand each claim back here: a
  cancelled lease releases its place at once, an expired or revoked one
  closes its name for its lock-delay.
- **Pushes, never polls.** A waiter granted later is told through its
  listener (``granted(cookie, token)``, from the landlord's notice thread);
  a waiter whose wait timed out is revoked and told (``revoked(cookie,
  reason)``). A grant that cannot be told is taken back (the lease is
  revoked): a holder that does not know it holds must not keep the name.
- **Tokens survive restarts and failovers.** A grant's token is written in
  its lease's row before anyone is told of it (the grant's own write); the
  store's setting :data:`TOKEN_SETTING` is raised, in blocks of
  :data:`TOKEN_BLOCK`, before the row of a token above it can be deleted. So
  a landlord opened on the store again (or a replica's next term) starts
  above every token it ever told anyone.
- **Time.** One thread, started with the first named lease, sleeps on the
  landlord's clock until the table's next deadline (a wait that times out, a
  lock-delay that ends).
- **Watchers.** After every change of a name's holders, its :attr:`Claims.watcher`
  (the landlord's :class:`~landlord.grantor.watches.NameWatches`), if it watches
  the name, is given the holders, under this module's lock: in the order the changes were made.

Lock order: this module's lock, then the lease manager's; the manager calls
back here only outside its own lock, and this module revokes only outside its own.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from ..clock import Clock
from ..errors import LeaseDeniedError, UnknownLeaseError
from ..holder.claiminbox import Holders, NameListener
from ..transport.clients import IN_PROCESS
from .manager import LeaseManager
from .names import Changes, Grant, NameTable, NameView, Refused, Waiter
from .resource import LeasedResource, LeaseExtra
from .store import Store

__all__ = ["NameClaim", "Claims", "HolderWatcher", "MAX_PER_CLIENT", "check_value", "CLAIM_KEY", "TOKEN_SETTING",
           "TOKEN_BLOCK", "MAX_VALUE"]

log = logging.getLogger("landlord.names")

CLAIM_KEY = "landlord.name/1"  # a stored claim: {CLAIM_KEY: fields}
TOKEN_SETTING = "names.high_water"  # the store's setting: no token above it was ever in a deleted row
TOKEN_BLOCK = 1000  # tokens the setting is raised ahead by: one write per this many grants at most
MAX_VALUE = 256  # characters of a holder's public value
MAX_PER_CLIENT = 1000  # named leases (held or waiting) one remote client may have: none can fill the table alone


@dataclasses.dataclass(slots=True, eq=False)
class NameClaim:
    """The resource of a named lease.

    Args:
        name: the name held or waited for.
        limit: its limit (1: exclusive).
        lock_delay: seconds the name stays closed if this lease expires holding it.
        value: the holder's public value (an election's candidate), or ``None``.
        listener: whom to tell (a ``PYRO:`` URI; in-process, a
            :class:`~landlord.holder.claiminbox.NameListener`), or ``None``.
        queued: the wall-clock time it asked (orders waiters taken back from a store).
        wait_until: the wall-clock time its wait ends (``inf``: with its lease), ``None`` not to wait.
        token: its fencing token once it holds the name; ``None`` while it waits.
        client: who asked (:func:`~landlord.client_of_call`), counted against :data:`MAX_PER_CLIENT`.
    """

    name: str
    limit: int
    lock_delay: float
    value: str | None
    listener: str | NameListener | None
    queued: float
    wait_until: float | None = None
    token: int | None = None
    client: str = IN_PROCESS

    def dump(self) -> dict[str, Any]:
        """The claim as its lease's row keeps it (an in-process listener is not kept)."""
        fields = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        if not isinstance(self.listener, str):
            fields["listener"] = None
        return {CLAIM_KEY: fields}

    @staticmethod
    def is_stored(data: Any) -> bool:
        """Whether ``data`` is what :meth:`dump` made."""
        return isinstance(data, dict) and len(data) == 1 and CLAIM_KEY in data

    @classmethod
    def load(cls, data: dict[str, Any]) -> NameClaim:
        """The claim back from what :meth:`dump` made (after a serpent round trip).

        Raises:
            TypeError, ValueError: not a claim's fields.
        """
        fields = data[CLAIM_KEY]
        if not isinstance(fields, dict) or set(fields) != {f.name for f in dataclasses.fields(cls)}:
            raise ValueError(f"not a stored claim: {fields!r:.80}")
        claim = cls(**fields)
        if claim.listener is not None and not isinstance(claim.listener, str):
            raise TypeError("a stored claim's listener is a URI")
        return claim


def check_value(value: object) -> str | None:
    """``value`` if it is a holder's public value: ``None`` or 1 to :data:`MAX_VALUE` printable characters.

    Raises:
        TypeError: not a str or ``None``.
        ValueError: empty, too long or not printable.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"value must be a str or None, got {type(value).__name__}")
    if not 1 <= len(value) <= MAX_VALUE or not value.isprintable():
        raise ValueError(f"a value is 1 to {MAX_VALUE} printable characters, got {value[:MAX_VALUE]!r}")
    return value


class HolderWatcher(Protocol):
    """Who is told of every change of a name's holders (:attr:`Claims.watcher`). Called under the
    claims' lock: it must not call them back."""

    def watched(self, name: str) -> bool:
        """Whether ``name``'s holders are wanted (read for nobody otherwise)."""

    def changed(self, name: str, holders: Holders) -> None:
        """``name`` is held by ``holders`` now, as :meth:`Claims.holders` gives them."""


class Claims:
    """A landlord's named leases (see the module's docstring); thread-safe.

    Args:
        manager: the landlord's lease manager (claims are its leases).
        clock: the landlord's clock.
        notify: ``notify(listener, method, args, on_failure, lane)``: call ``method(*args)`` on a
            listener soon, off the caller's thread, in order with the others of ``lane`` (the claim's
            client: one client's listener that hangs delays only that client's), and ``on_failure()``
            if that fails.
        revoke: ``revoke(cookie, reason)``: the landlord's revocation (frees the lease, tells its listener).
        store: where the high water of tokens is kept, or ``None``.
    """

    def __init__(self, manager: LeaseManager, clock: Clock,
                 notify: Callable[[Any, str, tuple[Any, ...], Callable[[], None], str], None],
                 revoke: Callable[[str, str], None], store: Store | None) -> None:
        self._manager, self._clock, self._notify, self._revoke, self._store = manager, clock, notify, revoke, store
        self._stored_high = int(store.get_setting(TOKEN_SETTING, 0)) if store is not None else 0
        self._table = NameTable(self._stored_high)
        # reentrant: a lazy reaper ends leases inside the manager's calls made under it, and their
        # ends come back here (intercept) on the same thread
        self._lock = threading.Condition(threading.RLock())
        self._registering: LeasedResource | None = None  # the lease request() is registering
        self._per_client: dict[str, int] = {}  # named leases by remote client, until their leases end
        self.max_per_client = MAX_PER_CLIENT
        self._thread: threading.Thread | None = None
        self._closed = False
        self.watcher: HolderWatcher | None = None  # told of every change of a name's holders

    # -- asking ---------------------------------------------------------------------------------

    def request(self, leased: LeasedResource, *, wait: float | None) -> int | None:
        """Hold or queue for ``leased``'s claim, and register the lease: its token, or ``None`` if queued.

        Args:
            leased: a new lease whose resource is a :class:`NameClaim` (its expiration set by the policy).
            wait: seconds to wait (``inf``: while the lease lasts), ``None`` not to.

        Raises:
            LeaseDeniedError: the name is held (or closed) and ``wait`` is ``None``; too many names or waiters.
            TypeError, ValueError: a bad name, limit or lock-delay, or a limit other than the name's.
            Exception: what the store raised (nothing is granted).
        """
        claim: NameClaim = leased.resource
        now = self._clock.monotonic()
        wait_until = None if wait is None else now + wait
        with self._lock:
            if self._closed:
                raise LeaseDeniedError("this landlord is closing")
            counted = self._per_client.get(claim.client, 0)
            if claim.client != IN_PROCESS and counted >= self.max_per_client:
                raise LeaseDeniedError(f"{claim.client} has {counted} named leases already, the most one "
                                       "client may have")
            outcome = self._table.request(claim.name, leased.cookie, now, limit=claim.limit,
                                          wait_until=wait_until, lock_delay=claim.lock_delay)
            if isinstance(outcome, Refused):
                raise LeaseDeniedError(outcome.reason)
            if isinstance(outcome, Grant):
                claim.token = outcome.token
            else:
                claim.wait_until = math.inf if wait is None or math.isinf(wait) else self._clock.time() + wait
            error: BaseException | None = None
            revocations: list[tuple[str, str]] = []
            self._registering = leased
            try:
                self._manager.register(leased)  # a lazy reaper may end a holder in here, granting this one
            except BaseException as exc:  # the store failed: nothing is leased, and its place goes on
                error = exc
                revocations = self._deliver(self._table.release(leased.cookie, now))
            finally:
                self._registering = None
            if error is None:
                self._count(claim, 1)
            self._kick()
            self._tell_watcher([claim.name])
        if error is not None:
            self._revoke_all(revocations)
            raise error
        return claim.token

    def hand_over(self, cookie: str, successor: str) -> None:
        """The holder ``cookie`` gives its place to the waiter whose value is ``successor``, at
        once; its own lease ends (cancelled).

        Raises:
            UnknownLeaseError: ``cookie`` is not a live named lease.
            ValueError: it does not hold its name, or no waiter of that name has that value.
        """
        revocations: list[tuple[str, str]] = []
        with self._lock:
            claim = self._claim_of(cookie)
            view = self._table.view_of(claim.name)
            waiters = view.waiters if view is not None else ()
            chosen = [w.cookie for w in waiters if self._value_of(w.cookie) == successor]
            if not chosen:
                raise ValueError(f"nobody waits for {claim.name!r} with the value {successor!r:.80}")
            changes = self._table.hand_over(cookie, chosen[0], self._clock.monotonic())
            revocations = self._deliver(changes)
            self._tell_watcher([claim.name])
        self._manager.cancel(cookie)
        self._revoke_all(revocations)

    # -- reading --------------------------------------------------------------------------------

    def token(self, cookie: str) -> int | None:
        """The token the live named lease ``cookie`` holds its name with; ``None`` while it waits.

        Raises:
            UnknownLeaseError: ``cookie`` is not a live named lease.
        """
        with self._lock:
            return self._claim_of(cookie).token

    def holders(self, name: str) -> list[tuple[int, str | None]]:
        """The holders of ``name``: (token, value) each, in the order they were granted."""
        with self._lock:
            return self._holders(name)

    def view(self) -> tuple[NameView, ...]:
        """Every name, its holders, waiters and lock-delay (see :meth:`NameTable.view`)."""
        with self._lock:
            return self._table.view()

    # -- ends -----------------------------------------------------------------------------------

    def ended(self, leased: LeasedResource, *, expired: bool) -> None:
        """The landlord freed ``leased``, a named lease: its place goes (to the next waiter).
        Called through :meth:`intercept`, outside the manager's lock."""
        claim: NameClaim = leased.resource
        with self._lock:
            self._raise_high_water(claim.token)  # first: a holder that handed over is gone from the table
            if self._table.name_of(leased.cookie) is None:
                return  # a waiter that timed out, a holder that handed over, a claim taken back ended
            now = self._clock.monotonic()
            end = self._table.expire if expired else self._table.release
            revocations = self._deliver(end(leased.cookie, now))
            self._tell_watcher([claim.name])
            self._kick()  # a lock-delay may have begun
        self._revoke_all(revocations)

    def intercept(self, ended: list[LeasedResource], cancelled: bool) -> list[LeasedResource]:
        """The landlord's ended leases, before its callbacks see them: each named lease ends here
        (:meth:`ended`); what the callbacks free is returned: the other leases, and the resources
        attached to named ones."""
        others: list[LeasedResource] = []
        for leased in ended:
            if type(leased.resource) is not NameClaim:
                others.append(leased)
                continue
            with self._lock:
                self._count(leased.resource, -1)
            self.ended(leased, expired=not cancelled)
            attached = leased.attached
            if attached:
                others.append(LeasedResource(leased.cookie, leased.expiration, attached[0],
                                             LeaseExtra(attached=attached[1:])))
        return others

    def restore(self, restored: Sequence[LeasedResource]) -> None:
        """Take back the claims among leases a store gave back: holders with their tokens, then
        waiters in the order they asked (those whose place is free now are granted, and told)."""
        claims = [leased for leased in restored if isinstance(leased.resource, NameClaim)]
        now, wall = self._clock.monotonic(), self._clock.time()
        with self._lock:
            for leased in claims:
                self._count(leased.resource, 1)
            for leased in claims:
                claim: NameClaim = leased.resource
                if claim.token is not None:
                    try:
                        self._table.adopt(claim.name, leased.cookie, claim.token, limit=claim.limit,
                                          lock_delay=claim.lock_delay)
                    except ValueError as exc:  # a store that contradicts itself: that lease ends
                        log.error("cannot take back the holder %s… of %r: %s", leased.cookie[:6], claim.name, exc)
            waiters = sorted((leased for leased in claims if leased.resource.token is None
                              and leased.expiration > now), key=lambda leased: leased.resource.queued)
            changes = [self._requeue(leased, now, wall) for leased in waiters]
            revocations = [each for change in changes for each in self._deliver(change)]
            self._kick()
            self._tell_watcher(leased.resource.name for leased in claims)
        self._revoke_all(revocations)

    def close(self) -> None:
        """Stop the timer thread (named leases stay as they are)."""
        with self._lock:
            self._closed = True
            thread = self._thread
            self._lock.notify_all()
        if thread is not None:
            thread.join()

    # -- internals --------------------------------------------------------------------------------

    def _requeue(self, leased: LeasedResource, now: float, wall: float) -> Changes:
        claim: NameClaim = leased.resource
        wait_until = claim.wait_until
        until = math.inf if wait_until is None or math.isinf(wait_until) else now + (wait_until - wall)
        try:
            outcome = self._table.request(claim.name, leased.cookie, now, limit=claim.limit, wait_until=until,
                                          lock_delay=claim.lock_delay)
        except (ValueError, LeaseDeniedError) as exc:
            log.error("cannot take back the waiter %s… of %r: %s", leased.cookie[:6], claim.name, exc)
            return Changes()
        if isinstance(outcome, Grant):
            return Changes(granted=(outcome,))
        if isinstance(outcome, Refused):  # its wait ran out while the landlord was down: revoked
            return Changes(timed_out=(Waiter(claim.name, leased.cookie, until),))
        return Changes()

    def _count(self, claim: NameClaim, change: int) -> None:
        """Count a named lease of ``claim.client`` in (+1) or out (-1), under the lock."""
        count = self._per_client.get(claim.client, 0) + change
        if count > 0:
            self._per_client[claim.client] = count
        else:
            self._per_client.pop(claim.client, None)

    def _deliver(self, changes: Changes) -> list[tuple[str, str]]:
        """Record and tell each grant of ``changes`` (under the lock); return the revocations to
        make once the lock is let go (waits that timed out, grants that could not be written)."""
        revocations = [(waiter.cookie, f"waited for {waiter.name!r} too long") for waiter in changes.timed_out]
        for waiter in changes.timed_out:
            self._tell("name_timed_out", waiter.name)
        for grant in changes.granted:
            registering = self._registering
            if registering is not None and registering.cookie == grant.cookie:
                # granted while its request registers it (a lazy reaper ended the holder in there):
                # the registration writes the token, and the request answers it
                registering.resource.token, registering.resource.wait_until = grant.token, None
                continue
            try:
                leased = self._manager.get(grant.cookie)
                claim: NameClaim = leased.resource
                claim.token, claim.wait_until = grant.token, None
                self._manager.resource_changed(grant.cookie)  # the token is stored before anyone hears of it
            except Exception as exc:  # the waiter's lease ran out meanwhile, or the store failed
                log.warning("granting %r to %s… failed (%s); it goes to the next", grant.name, grant.cookie[:6], exc)
                revocations.extend(self._undo(grant))
                continue
            log.debug("granted %r to %s… (token %d)", grant.name, grant.cookie[:6], grant.token)
            self._tell("name_acquired", grant.name, grant.token, True)
            if claim.listener is not None:
                self._notify(claim.listener, "granted", (grant.cookie, grant.token),
                             functools.partial(self._revoke, grant.cookie, "could not be told it holds its name"),
                             claim.client)
        return revocations

    def _tell(self, hook: str, *args: Any) -> None:
        """Tell the landlord's hooks (:mod:`landlord.grantor.hooks`; one that raises is logged)."""
        hooks = self._manager.hooks
        if hooks is not None:
            getattr(hooks, hook)(*args)

    def _undo(self, grant: Grant) -> list[tuple[str, str]]:
        try:
            changes = self._table.release(grant.cookie, self._clock.monotonic())
        except ValueError:
            return []
        return [(grant.cookie, "its grant could not be recorded"), *self._deliver(changes)]

    def _revoke_all(self, revocations: Iterable[tuple[str, str]]) -> None:
        for cookie, reason in revocations:
            try:
                self._revoke(cookie, reason)
            except UnknownLeaseError:
                pass  # it ended meanwhile
            except Exception:
                log.exception("could not revoke %s… (%s)", cookie[:6], reason)

    def _raise_high_water(self, token: int | None) -> None:
        """Before a row holding ``token`` can be deleted: make the store's setting cover it."""
        if self._store is None or token is None or token <= self._stored_high:
            return
        high = self._table.high_water + TOKEN_BLOCK
        self._store.set_setting(TOKEN_SETTING, high)  # raises: the row stays, and so does its token
        self._stored_high = high

    def _holders(self, name: str) -> Holders:
        view = self._table.view_of(name)
        return [] if view is None else [(grant.token, self._value_of(grant.cookie)) for grant in view.holders]

    def _tell_watcher(self, names: Iterable[str]) -> None:
        """Give the watcher the holders of each of ``names`` it watches (under the lock)."""
        watcher = self.watcher
        if watcher is None:
            return
        for name in dict.fromkeys(names):
            if watcher.watched(name):
                watcher.changed(name, self._holders(name))

    def _claim_of(self, cookie: str) -> NameClaim:
        resource = self._manager.get(cookie).resource
        if not isinstance(resource, NameClaim) or self._table.name_of(cookie) is None:
            raise UnknownLeaseError("not a named lease")
        return resource

    def _value_of(self, cookie: str) -> str | None:
        try:
            resource = self._manager.get(cookie).resource
        except UnknownLeaseError:
            return None
        return resource.value if isinstance(resource, NameClaim) else None

    def _kick(self) -> None:
        """Under the lock, after a change: if the table has a deadline, make sure the thread keeps it
        (started once, woken to sleep to the new earliest deadline)."""
        if self._table.next_deadline() is None:
            return
        if self._thread is None and not self._closed:
            self._thread = threading.Thread(target=self._run, name="Claims", daemon=True)
            self._thread.start()
        self._lock.notify_all()

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._closed:
                    return
                deadline = self._table.next_deadline()
                now = self._clock.monotonic()
                if deadline is None or deadline > now:
                    self._clock.wait(self._lock, math.inf if deadline is None else deadline)
                    continue
                changes = self._table.advance(now)
                revocations = self._deliver(changes)
                self._tell_watcher(grant.name for grant in changes.granted)
            self._revoke_all(revocations)
