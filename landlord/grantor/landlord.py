"""The grantor: :class:`Landlord`, exposed over Pyro5, and :class:`ResourceCodec` (how a
landlord stores its resources). Its batches answer with :class:`~landlord.RenewResults`."""

from __future__ import annotations

import logging
import math
import secrets
import uuid
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, cast

import Pyro5.core
import Pyro5.server

from ..clock import SYSTEM_CLOCK, Clock
from ..duration import ANY, check_duration
from ..errors import LeaseDeniedError
from ..holder.claiminbox import NameListener
from ..holder.landlordlease import MAX_BATCH, MAX_COOKIE_LENGTH, LandlordLease, check_cookie, check_landlords
from ..results import RenewResults
from ..transport.callbacks import MAX_CALLBACK_URI, check_callback_hosts, check_callback_uri
from ..transport.clients import client_of_call
from .claims import Claims, NameClaim, check_value
from .hooks import LeaseHooks
from .manager import ENDED, FreeCallback, HeldLease, LeasedResource, LeaseManager, Standby, StandbySource, unwrap_stored
from .names import NameView, check_name
from .policy import LeaseDurationPolicy, LeasePolicy
from .reapers import Reaper
from .revocations import RevocationNotices
from .store import Store
from .watches import NameWatch, NameWatches

__all__ = ["Landlord", "ResourceCodec", "new_cookie", "served_uri", "COOKIE_BYTES", "MAX_BATCH"]

log = logging.getLogger("landlord.grantor")  # its name before it moved

COOKIE_BYTES = 16  # 128 random bits: holding the cookie is the capability to renew or cancel
MAX_REASON = 1000  # characters of a revocation's reason
MAX_LISTENER_URI = MAX_CALLBACK_URI  # characters of a revocation listener's URI (the older name)
# Characters of one denial's message in a batch answer (a revocation's reason may
# be 1,000, a policy's anything): MAX_BATCH denials so fit in well under 2 MiB.
MAX_DENIAL = 200


def served_uri(obj: object) -> str | None:
    """The URI a Pyro5 daemon serves ``obj`` under (its advertised address), or ``None`` if none does."""
    daemon = getattr(obj, "_pyroDaemon", None)
    return str(daemon.uriFor(obj)) if daemon is not None else None


def new_cookie() -> str:
    """An unguessable lease cookie (``COOKIE_BYTES`` random bytes, URL-safe text)."""
    return secrets.token_urlsafe(COOKIE_BYTES)


class ResourceCodec(Protocol):
    """How a landlord keeps its resources in its :class:`~landlord.grantor.store.LeaseStore` and takes them back.

    Give one to :class:`Landlord` (``codec=``). Without one, a landlord uses
    its own :meth:`Landlord.dump_resource` and :meth:`Landlord.load_resource`
    (the resource itself, by default) and restores nothing more.
    """

    def dump(self, resource: Any) -> Any:
        """What of ``resource`` the store keeps: something serpent can write
        (with Pyro5's converters), or ``None`` to keep that lease in memory
        only. Called under the lease manager's lock at each grant and each
        ``resource_changed``: it must not call the landlord."""

    def load(self, data: Any) -> Any:
        """The resource back from what :meth:`dump` made of it, after a serpent
        round trip (tuples and sets may come back as lists). What it raises
        drops that lease: it is logged and deleted from the store."""

    def restored(self, leased: LeasedResource) -> None:
        """Called once for each lease taken back (its resource as :meth:`load`
        made it, its cookie, its expiration), after every :meth:`load` and
        before any of them can expire: file the resource where the landlord's
        users will find it. What it raises fails the landlord's construction."""


class _OwnMethods:
    """The default codec: a landlord's :meth:`~Landlord.dump_resource` and
    :meth:`~Landlord.load_resource` (which subclasses may override), nothing on restore."""

    __slots__ = ("_landlord",)

    def __init__(self, landlord: Landlord) -> None:
        self._landlord = landlord

    def dump(self, resource: Any) -> Any:
        return self._landlord.dump_resource(resource)

    def load(self, data: Any) -> Any:
        return self._landlord.load_resource(data)

    def restored(self, leased: LeasedResource) -> None:
        pass


class Landlord:
    """Grants leases on resources and answers their holders, in-process or over Pyro5.

    Register it with a Pyro5 daemon to let other processes renew and cancel;
    its leases then carry the URI it was registered under. Used in-process,
    its leases call it directly.

    Remote methods: :meth:`renew`, :meth:`cancel`, :meth:`renew_all`,
    :meth:`cancel_all`; named leases: :meth:`acquire`, :meth:`name_token`, :meth:`name_holders`,
    :meth:`hand_over`, :meth:`watch_name`. Local: :meth:`new_lease`, :meth:`get_resource`, :meth:`close`.

    Args:
        policy: grant and renewal terms (default: ``LeaseDurationPolicy()``).
        reaper: how expired resources are freed (see :class:`~landlord.LeaseManager`).
        clock: decides expiry (monotonic) and stamps leases (wall clock).
        on_expire: called with the resource when its lease expires or is cancelled:
            ``on_expire(resource)``, or ``on_expire(resource, cookie=cookie)`` if it
            has a parameter named ``cookie``. Once; with a store, *at least* once:
            after a crash it may run again for a lease (the same cookie), so
            make a second call harmless (see :class:`~landlord.LeaseManager`).
        on_cancel: if given, called instead of ``on_expire`` when a live lease is cancelled (the same way).
        landlord_id: a stable identity (default: the store's, else a new random one).
        store: keep the leases in this :class:`~landlord.grantor.store.LeaseStore`, and
            take back those it holds: the same landlord id, the same cookies,
            each lease with its remaining time less the time the landlord was
            down (see :mod:`landlord.grantor.store`). :meth:`close` closes it.
        codec: how resources are stored and taken back (see
            :class:`ResourceCodec`); by default as :meth:`dump_resource` makes
            them and :meth:`load_resource` reads them back.
        hooks: observers told of every grant, renewal, denial and end
            (:class:`~landlord.grantor.hooks.LeaseHooks`; one or a list).
        replicas: for one replica of a replicated landlord, the URIs of every
            replica of its group (a list or tuple of ``PYRO:`` URIs, in the
            order holders try them; its own need not come first): every lease
            it makes carries them as :attr:`~landlord.LandlordLease.landlords`,
            so its holders follow the group's leader. Give every replica the
            same ``landlord_id``. ``None``: a plain landlord.
        callback_hosts: the only hosts a listener given to it (:meth:`listen`,
            a subclass's callbacks: :meth:`check_callback`) may name; ``None``:
            any host. Every callback must be a ``PYRO:`` URI with a host and
            port whatever this says (see :mod:`landlord.transport.callbacks`).

    Raises:
        ValueError: the policy already serves another landlord, an unknown
            reaper, a ``landlord_id`` other than the one ``store`` belongs to,
            or ``replicas`` empty, too many (``MAX_LANDLORDS``), repeated, or
            not ``PYRO:`` URIs.
        TypeError: ``replicas`` not a list or tuple of URI strings, ``hooks`` not LeaseHooks,
            or ``callback_hosts`` a str or not a list of str.
    """

    def __init__(self, *, policy: LeasePolicy | None = None, reaper: str | Reaper = "sleeper",
                 clock: Clock = SYSTEM_CLOCK, on_expire: FreeCallback | None = None,
                 on_cancel: FreeCallback | None = None, landlord_id: str | None = None,
                 replicas: Sequence[str] | None = None,
                 store: Store | None = None, codec: ResourceCodec | None = None,
                 hooks: LeaseHooks | Sequence[LeaseHooks] | None = None,
                 callback_hosts: Iterable[str] | None = None) -> None:
        # checked before anything is claimed: a bad option leaves the store as it was
        self._replicas = None if replicas is None else check_landlords(replicas, name="replicas")
        self._callback_hosts = check_callback_hosts(callback_hosts)
        if store is not None:
            stored_id = store.landlord_id()
            if landlord_id is not None and stored_id is not None and landlord_id != stored_id:
                raise ValueError(f"{store!r} belongs to landlord {stored_id}, not {landlord_id}")
            landlord_id = landlord_id or stored_id
        self.landlord_id = landlord_id if landlord_id is not None else uuid.uuid4().hex
        if store is not None:
            store.claim(self.landlord_id)
        self.clock = clock
        self.policy = policy if policy is not None else LeaseDurationPolicy()
        self.policy.bind(clock=clock, lease_factory=self._make_lease, held=self._held_count)
        self._codec: ResourceCodec = codec if codec is not None else _OwnMethods(self)
        self._notices = RevocationNotices()
        self._manager = LeaseManager(self.policy, reaper=reaper, clock=clock, on_expire=on_expire,
                                     on_cancel=on_cancel, store=store, dump=self._dump, hooks=hooks)
        self._claims = Claims(self._manager, clock, self._notify, self.revoke, store)
        self._watches = NameWatches(self._manager, self._manager.revoke)
        self._claims.watcher = self._watches
        if store is not None:
            self._restore(store)

    # -- local ------------------------------------------------------------------

    @property
    def uri(self) -> str | None:
        """The URI this landlord is registered under, or ``None`` if it is in-process only."""
        return served_uri(self)

    @property
    def manager(self) -> LeaseManager:
        return self._manager

    def check_callback(self, uri: object) -> str:
        """``uri`` if this landlord may call it back: a ``PYRO:`` URI with a host
        and port, naming one of its ``callback_hosts`` if it was given them.

        Raises:
            TypeError: ``uri`` is not a str.
            ValueError: any other URI (see :func:`landlord.transport.callbacks.check_callback_uri`).
        """
        return check_callback_uri(uri, allowed_hosts=self._callback_hosts)

    @property
    def replicas(self) -> tuple[str, ...] | None:
        """The URIs of every replica of this landlord's group, which its leases carry
        (``None``: a plain landlord)."""
        return self._replicas

    def new_lease(self, resource: Any, duration: float = ANY) -> LandlordLease:
        """Lease ``resource`` for ``duration`` seconds, as the policy allows.

        Raises:
            ValueError: an invalid duration (nothing is leased).
            LeaseDeniedError: the policy refused.
        """
        duration = check_duration(duration)
        leased = LeasedResource(new_cookie(), 0.0, resource)
        try:
            lease = self.policy.lease_for(leased, duration)
        except LeaseDeniedError as exc:
            if self._manager.hooks is not None:
                self._manager.hooks.denied(None, exc)
            raise
        self._manager.register(leased)
        log.debug("granted %r", lease)
        return lease  # type: ignore[return-value]

    def get_resource(self, cookie: str) -> Any:
        """The resource leased under ``cookie``.

        Raises:
            UnknownLeaseError: no live lease has that cookie.
            TypeError, ValueError: ``cookie`` is not a cookie at all.
        """
        return self._manager.get_resource(check_cookie(cookie))

    def attach(self, cookie: str, resource: Any) -> None:
        """Put ``resource`` under the live lease ``cookie`` as well: when the lease
        expires or is cancelled, it is freed with the lease's own resource (each
        through ``on_expire`` or ``on_cancel``), as etcd frees every key attached to a lease.
        With a store, it is stored with the lease (through the codec's ``dump``).

        Raises:
            UnknownLeaseError: no live lease has that cookie (nothing is attached).
            TypeError, ValueError: ``cookie`` is not a cookie at all.
        """
        self._manager.attach(check_cookie(cookie), resource)

    def detach(self, cookie: str, resource: Any) -> None:
        """Take an attached ``resource`` off the live lease ``cookie`` without freeing it.

        Raises:
            UnknownLeaseError: no live lease has that cookie.
            ValueError: ``resource`` is not attached to it, or ``cookie`` is not a cookie.
            TypeError: ``cookie`` is not a string.
        """
        self._manager.detach(check_cookie(cookie), resource)

    def attached(self, cookie: str) -> list[Any]:
        """The resources attached to the live lease ``cookie`` (not its own).

        Raises:
            UnknownLeaseError: no live lease has that cookie.
            TypeError, ValueError: ``cookie`` is not a cookie at all.
        """
        return self._manager.get(check_cookie(cookie)).attached

    def held(self, *, limit: int | None = None) -> list[HeldLease]:
        """The leases held, earliest expiration first: cookie, seconds left, resource, attached
        (an operator's listing; see ``python -m landlord list``)."""
        return self._manager.held(limit=limit)

    def revoke(self, cookie: str, reason: str) -> None:
        """End the lease ``cookie`` now, before its term, and free its resources (through ``on_expire``).

        A holder that asked to be told (:meth:`listen`) is told at once, from a
        thread of the landlord's (this call does not wait for it); any other
        learns at its next renewal, which is denied with ``reason``.

        Raises:
            UnknownLeaseError: no live lease has that cookie (nothing changes).
            TypeError, ValueError: ``cookie`` is not a cookie, or ``reason`` not a
                str of at most ``MAX_REASON`` characters.
        """
        cookie = check_cookie(cookie)
        if not isinstance(reason, str):
            raise TypeError(f"reason must be a str, got {type(reason).__name__}")
        if len(reason) > MAX_REASON:
            raise ValueError(f"reason must be at most {MAX_REASON} characters, got {len(reason)}")
        leased = self._manager.revoke(cookie, reason)
        log.info("revoked lease %s… (%s)", cookie[:6], reason)
        if isinstance(leased.resource, NameWatch):  # told by the watches' thread, never the claims'
            self._watches.revoked(leased.resource, cookie, reason)
            return
        listener: str | NameListener | None = leased.extra.listener if leased.extra is not None else None
        if listener is None and isinstance(leased.resource, NameClaim):
            listener = leased.resource.listener
        if listener is not None:
            self._notices.send(listener, cookie, reason)

    def close(self) -> None:
        """Stop the reaper and close the store, if any. Leases still held are not freed."""
        self._claims.close()
        self._notices.close()
        self._watches.close()
        self._manager.close()

    @property
    def store(self) -> Store | None:
        """Where the leases are kept, or ``None`` when only in memory."""
        return self._manager.store

    @property
    def codec(self) -> ResourceCodec:
        """How resources are stored and taken back (see :class:`ResourceCodec`)."""
        return self._codec

    # -- what a store holds, for a landlord given no codec: subclasses may override these ----

    def dump_resource(self, resource: Any) -> Any:
        """What of ``resource`` the store keeps (see :meth:`ResourceCodec.dump`).
        By default, the resource itself."""
        return resource

    def load_resource(self, data: Any) -> Any:
        """The resource back from what :meth:`dump_resource` made of it (see
        :meth:`ResourceCodec.load`). By default, the data itself."""
        return data

    def _restore(self, store: Store) -> None:
        """Take back the leases ``store`` holds; those it says had ended (cancelled or revoked, their
        resources maybe not freed before the landlord stopped) come back ended, to be freed again.
        A store that kept them ready (:class:`~landlord.grantor.manager.StandbySource`) hands them
        over whole, if this landlord loads resources as stored (no codec of its own)."""
        if isinstance(store, StandbySource) and self._loads_as_stored():
            standby = store.standby(self.clock.time())
            if standby is not None:
                self._adopt(standby, store)
                return
        now, wall = self.clock.monotonic(), self.clock.time()
        restored: list[LeasedResource] = []
        cancelled: list[str] = []
        for stored in store.leases(wall):
            try:
                data = unwrap_stored(stored.resource)
                expiration = now + stored.remaining if data.ended_by is None else ENDED
                leased = LeasedResource(stored.cookie, expiration, self._load(data.resource))
                if data.attached or not math.isinf(data.deadline):
                    extra = leased.extended()
                    extra.attached = [self._codec.load(each) for each in data.attached]
                    extra.deadline = now + (data.deadline - wall)
            except Exception:
                log.exception("cannot restore a stored lease's resource; the lease is dropped")
                store.delete([stored.cookie])
                continue
            restored.append(leased)
            if data.ended_by == "on_cancel":
                cancelled.append(leased.cookie)
        for leased in restored:  # every one filed before any can expire and be freed
            if not isinstance(leased.resource, NameClaim):
                self._codec.restored(leased)
            for each in leased.attached:
                self._codec.restored(LeasedResource(leased.cookie, leased.expiration, each))
        if any(isinstance(leased.resource, NameClaim) for leased in restored):
            self._manager.intercept_ends(self._intercept)
        self._manager.restore(restored, cancelled=cancelled)
        self._claims.restore(restored)
        live = sum(1 for leased in restored if leased.expiration > now)
        ended = sum(1 for leased in restored if leased.expiration == ENDED)
        log.info("landlord %s took back %d lease(s) from %r (%d ran out while it was down, "
                 "%d had ended before it stopped: freed again)",
                 self.landlord_id, live, store, len(restored) - live - ended, ended)

    def _loads_as_stored(self) -> bool:
        """Whether a resource comes back as it was stored (named claims aside), nothing restored
        besides: what a standby table (built without this landlord) assumes."""
        return isinstance(self._codec, _OwnMethods) and type(self).load_resource is Landlord.load_resource

    def _adopt(self, standby: Standby, store: Store) -> None:
        """Take back a store's leases kept ready (as :meth:`_restore` would have restored them)."""
        if standby.named:
            self._manager.intercept_ends(self._intercept)
        self._manager.adopt(standby)
        self._claims.restore(standby.named)
        log.info("landlord %s took over %d lease(s) kept ready by %r", self.landlord_id, len(standby.table), store)

    def _dump(self, resource: Any) -> Any:
        if isinstance(resource, NameWatch):
            return None  # a watch is kept in memory only: after a restart its watcher watches again
        return resource.dump() if isinstance(resource, NameClaim) else self._codec.dump(resource)

    def _load(self, data: Any) -> Any:
        return NameClaim.load(data) if NameClaim.is_stored(data) else self._codec.load(data)

    def _intercept(self, ended: list[LeasedResource], cancelled: bool) -> list[LeasedResource]:
        """The ended leases, before the callbacks: named leases end in the claims, watches in the watches."""
        return self._watches.intercept(self._claims.intercept(ended, cancelled))

    def _notify(self, listener: Any, method: str, args: tuple[Any, ...], on_failure: Any, lane: str) -> None:
        self._notices.post(listener, method, args, f"{method} {args[0][:6]}…", on_failure, lane=lane)

    def __len__(self) -> int:
        return len(self._manager)

    def _held_count(self) -> int:  # the policy's: it may ask under the manager's lock
        return self._manager.held_count()

    def _make_lease(self, resource: LeasedResource, granted: float) -> LandlordLease:
        return LandlordLease.granted(resource.cookie, self, self.landlord_id, granted, clock=self.clock,
                                     landlords=self._replicas)

    # -- remote -----------------------------------------------------------------

    @Pyro5.server.expose
    def renew(self, cookie: str, duration: float) -> float:
        """Renew a lease; return the seconds granted.

        Raises:
            TypeError, ValueError: not a cookie, or an invalid duration.
            UnknownLeaseError: no live lease has that cookie.
            LeaseDeniedError: the policy refused.
        """
        cookie = check_cookie(cookie)
        duration = check_duration(duration)
        return self._manager.renewed(cookie, duration)

    @Pyro5.server.expose
    def cancel(self, cookie: str) -> None:
        """Cancel a lease, freeing its resource.

        Raises:
            TypeError, ValueError: not a cookie.
            UnknownLeaseError: no live lease has that cookie.
        """
        self._manager.cancel(check_cookie(cookie))

    @Pyro5.server.expose
    def listen(self, cookie: str, listener: str) -> None:
        """Ask to be told at once if the landlord revokes this lease: it calls
        ``revoked(cookie, reason)`` on the Pyro5 object at ``listener``
        (see :class:`~landlord.holder.revocations.RevocationReceiver`). A later call
        replaces the listener. Not kept across a restart of the landlord.

        Raises:
            TypeError, ValueError: not a cookie, or ``listener`` not a callback
                this landlord takes (:meth:`check_callback`).
            UnknownLeaseError: no live lease has that cookie.
        """
        cookie = check_cookie(cookie)
        self._manager.listen(cookie, self.check_callback(listener))

    @Pyro5.server.expose
    def renew_all(self, cookies: Sequence[str], durations: Sequence[float]) -> RenewResults:
        """Renew many leases in one call.

        The whole call is checked first: malformed input renews nothing.
        Unknown or denied leases fail one by one; a denial's message is cut to
        ``MAX_DENIAL`` characters (and its attributes dropped), so the answer
        to ``MAX_BATCH`` leases stays under 2 MiB whatever they were denied for.

        Raises:
            TypeError, ValueError: not two lists of equal length, a non-cookie,
                an invalid duration, or more than ``MAX_BATCH`` leases.
        """
        cookies = _check_batch(cookies, "cookies")
        durations = _check_batch(durations, "durations")
        if len(cookies) != len(durations):
            raise ValueError(f"renew_all got {len(cookies)} cookies but {len(durations)} durations")
        cookies = _check_cookies(cookies)
        durations = _check_durations(durations)
        outcomes = self._manager.renewed_all(cookies, durations)
        if set(map(type, outcomes)) <= _FLOAT:  # every lease granted: the answer is the outcomes themselves
            return RenewResults(cast("list[float]", outcomes), [])
        granted: list[float] = []
        denied: list[Exception] = []
        for outcome in outcomes:
            if isinstance(outcome, Exception):  # unknown, expired or refused: that lease fails alone
                granted.append(-1)
                denied.append(_fitting_denial(outcome))
            else:
                granted.append(outcome)
        return RenewResults(granted, denied)

    @Pyro5.server.expose
    def cancel_all(self, cookies: Sequence[str]) -> dict[str, Exception]:
        """Cancel many leases; return the failures by cookie (empty when all succeeded).

        Raises:
            TypeError, ValueError: not a list of cookies, or more than ``MAX_BATCH``
                (nothing is cancelled).
        """
        return self._manager.cancel_all(_check_cookies(_check_batch(cookies, "cookies")))

    # -- named leases (landlord.grantor.claims) -----------------------------------------------------

    @Pyro5.server.expose
    def acquire(self, name: str, duration: float = ANY, limit: int = 1, wait: float | None = None,
                lock_delay: float = 0.0, value: str | None = None,
                listener: str | NameListener | None = None) -> tuple[LandlordLease, int | None]:
        """Lease ``name`` for ``duration`` seconds, exclusively (``limit`` 1) or as one of at most
        ``limit`` holders: the lease and its fencing token, or the lease and ``None`` when it waits.

        A waiter waits through its lease (renew it; a waiter that stops renewing leaves the
        queue), first come first served; when its turn comes it holds the name with the same
        lease, and its ``listener`` is told ``granted(cookie, token)``. A wait that times out
        ends the lease, and the listener is told ``revoked(cookie, reason)``, as for an eviction.
        Release the name by cancelling the lease: the next waiter holds it at once. A lease that
        expires holding it closes the name for ``lock_delay`` seconds first.

        Args:
            name: 1 to 256 printable characters.
            duration: seconds asked for, as :meth:`new_lease`.
            limit: the most holders at once, 1 to 10,000; the name's own if others hold or wait for it.
            wait: ``None`` to be refused if the name is taken; else the most seconds to wait
                (``FOREVER``: as long as the lease lasts).
            lock_delay: 0 to 60 seconds the name stays closed if this lease expires holding it.
            value: what others see of this holder (:meth:`name_holders`), up to 256 printable characters.
            listener: a ``PYRO:`` URI this landlord may call back (:meth:`check_callback`), or
                in-process a :class:`~landlord.holder.claiminbox.NameListener`; needed to learn of a grant
                after waiting.

        Raises:
            LeaseDeniedError: the name is taken and ``wait`` is ``None``; too many names or waiters;
                the caller's host has ``MAX_PER_CLIENT`` (1,000) named leases already; the policy refused.
            TypeError, ValueError: a bad argument, or a limit other than the name's (nothing is leased).
        """
        if listener is not None and not isinstance(listener, NameListener):
            listener = self.check_callback(listener)
        if wait is not None:
            wait = check_duration(wait, name="wait", allow_any=False)
        claim = NameClaim(name, limit, lock_delay, check_value(value), listener, self.clock.time(),
                          client=client_of_call())
        duration = check_duration(duration)
        self._manager.intercept_ends(self._intercept)  # from the first named lease on
        leased = LeasedResource(new_cookie(), 0.0, claim)
        hooks = self._manager.hooks
        try:
            lease: LandlordLease = self.policy.lease_for(leased, duration)  # type: ignore[assignment]
            token = self._claims.request(leased, wait=wait)
        except LeaseDeniedError as exc:
            if hooks is not None:
                hooks.name_refused(name, exc)
            raise
        if hooks is not None and token is not None:
            hooks.name_acquired(name, token, False)
        elif hooks is not None:
            hooks.name_queued(name)
        log.debug("%s %r: %r", "granted" if token is not None else "queued for", name, lease)
        return lease, token

    @Pyro5.server.expose
    def name_token(self, cookie: str) -> int | None:
        """The fencing token the named lease ``cookie`` holds its name with; ``None`` while it waits.

        Raises:
            UnknownLeaseError: no live named lease has that cookie.
            TypeError, ValueError: not a cookie.
        """
        return self._claims.token(check_cookie(cookie))

    @Pyro5.server.expose
    def name_holders(self, name: str) -> list[tuple[int, str | None]]:
        """Who holds ``name``: each holder's token and value, in the order they were granted.

        Raises:
            TypeError: ``name`` is not a str.
        """
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        return self._claims.holders(name)

    @Pyro5.server.expose
    def hand_over(self, cookie: str, successor: str) -> None:
        """The holder ``cookie`` hands its name to the waiter whose value is ``successor``, with no
        moment when anyone else could take it; the successor is told, and ``cookie``'s lease ends.

        Raises:
            UnknownLeaseError: no live named lease has that cookie.
            ValueError: it does not hold its name, or nobody waits for it with that value.
            TypeError: not a cookie, or ``successor`` not a str.
        """
        self._claims.hand_over(check_cookie(cookie), check_value(successor) or "")

    @Pyro5.server.expose
    def watch_name(self, name: str, duration: float = ANY,
                   listener: str | NameListener | None = None) -> LandlordLease:
        """Watch who holds ``name``, for ``duration`` seconds (renew the lease to watch on):
        ``listener`` is told ``holders_changed(cookie, name, holders)`` (the watch's cookie; holders
        as :meth:`name_holders` gives them) at once, and after every change of the name's holders.
        Changes close together may come as one notice, the latest (see
        :mod:`landlord.grantor.watches`). Cancel the lease to stop; a watch whose listener cannot be
        told is dropped (its lease revoked). Not kept across a restart.

        Args:
            name: 1 to 256 printable characters (held or not, now or ever).
            duration: seconds asked for, as :meth:`new_lease`.
            listener: a ``PYRO:`` URI this landlord may call back (:meth:`check_callback`), or
                in-process a :class:`~landlord.holder.claiminbox.NameListener`.

        Raises:
            LeaseDeniedError: 1,000 watches of ``name``, 1,000 of the caller's host or 10,000 in all
                already; the policy refused.
            TypeError, ValueError: a bad argument (nothing is leased).
        """
        if not isinstance(listener, NameListener):
            listener = self.check_callback(listener)
        leased = LeasedResource(new_cookie(), 0.0, NameWatch(check_name(name), listener, client_of_call()))
        lease: LandlordLease = self.policy.lease_for(leased, check_duration(duration))  # type: ignore[assignment]
        self._manager.intercept_ends(self._intercept)  # from the first watch on
        self._watches.add(leased)
        self._watches.begin(leased.cookie, self._claims.holders(name))
        return lease

    def names(self) -> tuple[NameView, ...]:
        """Every name held, waited for or closed: holders (cookie, token), waiters, lock-delay (for operators)."""
        return self._claims.view()


def _fitting_denial(exc: Exception) -> Exception:
    """``exc`` as a batch answer carries it: itself if its message is at most ``MAX_DENIAL``
    characters and it has no attributes (which Pyro5 would send too); else an exception of
    its class with the message cut, or a :class:`LeaseDeniedError` naming the class where
    that class cannot be made from one message."""
    message = str(exc)
    if len(message) <= MAX_DENIAL and not getattr(exc, "__dict__", None):
        return exc
    cut = message if len(message) <= MAX_DENIAL else message[:MAX_DENIAL - 1] + "…"
    try:
        short = type(exc)(cut)
    except Exception:
        short = None
    if short is None or getattr(short, "__dict__", None) or str(short) != cut:
        short = LeaseDeniedError(f"{type(exc).__name__}: {cut}"[:MAX_DENIAL])
    return short


_STR = frozenset({str})
_FLOAT = frozenset({float})


def _check_cookies(cookies: list[Any]) -> list[str]:
    """``cookies``, each checked as :func:`check_cookie` does: at once when all are plain strings
    of a cookie's length (a batch of 1,000 checked in C, not 1,000 calls), else one by one.

    Raises:
        TypeError, ValueError: the first that is not a cookie (as :func:`check_cookie`).
    """
    if set(map(type, cookies)) <= _STR:
        lengths = set(map(len, cookies))  # cookies are of one length or two: a set of one or two
        if not lengths or (min(lengths) > 0 and max(lengths) <= MAX_COOKIE_LENGTH):
            return cookies
    return [check_cookie(c) for c in cookies]


def _check_durations(durations: list[Any]) -> list[float]:
    """``durations``, each checked as :func:`check_duration` does: at once when all are floats of at
    least 0 (a sum is NaN if one is: no -inf among them), else one by one (``ANY``, ints, errors).

    Raises:
        ValueError: the first that is not a duration (as :func:`check_duration`).
    """
    if set(map(type, durations)) <= _FLOAT and min(durations, default=0.0) >= 0.0 \
            and not math.isnan(sum(durations)):
        return durations
    return [check_duration(d) for d in durations]


def _check_batch(items: object, name: str) -> list[Any]:
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"{name} must be a list, got {type(items).__name__}")
    if len(items) > MAX_BATCH:
        raise ValueError(f"at most {MAX_BATCH} {name} in one call, got {len(items)}")
    return list(items)

