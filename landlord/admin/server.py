"""The admin object of a landlord: :class:`LandlordAdmin`, served beside it by :func:`register_admin`
(or ``serve_landlord(admin=...)``) under :func:`admin_object_id`.

It answers only callers it authorises (see :mod:`landlord.admin`): a proof of
the admin token made for this call on this connection (the proof is
:mod:`landlord.admin.protocol`'s; each connection's :class:`~landlord.admin.protocol.Challenge`
is kept here, on Pyro5's object for the connection, and dropped with it), the
token itself from a caller in this process, or an admin certificate whose
subject's one commonName is among ``admin_names``. Anything else is refused
with :class:`~landlord.admin.protocol.AdminRefusedError` before its arguments
are used, and logged with the caller's address; every eviction is logged at
INFO, with who asked. It logs on ``landlord.admin``, as before the package
was split.

An eviction revokes the lease now (:meth:`landlord.Landlord.revoke`, with the
reason :data:`EVICTED`): its resources are freed through ``on_expire``, a
holder that listens for revocations hears at once, any other at its next
renewal, which is denied with the reason. A replicated landlord
(:class:`~landlord.ReplicatedLandlord`) answers on its leader only, as its
holders' calls do.

Named leases (locks, semaphores: :meth:`landlord.Landlord.acquire`) are
leases: :meth:`LandlordAdmin.list` shows each as its name and token, and
evicting one ends its holding as a revocation does: its holder hears at
once (a :class:`~landlord.Lock`'s ``valid`` turns false), and the name goes
to the next waiter once the holder's lock-delay has passed (the holder may
still be acting, as after an expiry). :meth:`LandlordAdmin.names` lists the
names themselves: holders with their tokens and values, waiters in order,
time left, lock-delays (:meth:`landlord.Landlord.names`).

Finding the lease for a prefix reads every lease held (an admin call is
rare; a listing is bounded by ``limit``, at most :data:`~landlord.admin.protocol.MAX_LIMIT`
rows, and every string in it is cut to a width).
"""

from __future__ import annotations

import hmac
import logging
import reprlib
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import Pyro5.api
import Pyro5.callcontext
import Pyro5.server

from ..errors import UnknownLeaseError
from ..grantor.claims import NameClaim
from ..grantor.landlord import Landlord
from ..grantor.manager import HeldLease
from ..replication.replicated import ReplicatedLandlord
from .protocol import (
    ADMIN_PREFIX,
    DEFAULT_LIMIT,
    PREFIX_SHOWN,
    RESOURCE_WIDTH,
    AdminRefusedError,
    Challenge,
    check_limit,
    check_prefix,
    check_token,
    clip,
)

__all__ = ["LandlordAdmin", "admin_object_id", "register_admin", "short_repr", "EVICTED"]

log = logging.getLogger("landlord.admin")  # the package's: its name before it was split

T = TypeVar("T")
AdminTarget = Landlord | ReplicatedLandlord

EVICTED = "evicted by an operator"  # the reason an evicted lease's holder is given

_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = RESOURCE_WIDTH
_REPR.maxlevel = 3


def admin_object_id(landlord: AdminTarget) -> str:
    """The object id an admin object of ``landlord`` is served under: ``"landlord-admin."`` and the
    landlord's id (a replicated landlord's: its group's name, the same on every replica).

    Raises:
        TypeError: ``landlord`` is not a Landlord or ReplicatedLandlord.
    """
    if isinstance(landlord, ReplicatedLandlord):
        return ADMIN_PREFIX + landlord.group
    if not isinstance(landlord, Landlord):
        raise TypeError(f"expected a Landlord or ReplicatedLandlord, got {type(landlord).__name__}")
    return ADMIN_PREFIX + landlord.landlord_id


class LandlordAdmin:
    """The admin object of one landlord (see :mod:`landlord.admin`): :meth:`list` and :meth:`evict`,
    over Pyro5, for callers with a proof of the admin token (after :meth:`challenge`) or an admin
    certificate; in this process, for callers with the token itself.

    Args:
        landlord: whose leases it lists and evicts.
        token: the admin token callers must give (see :func:`check_token`), or ``None``.
        admin_names: the commonNames of admin certificates (two-way TLS), or empty.

    Raises:
        TypeError: ``landlord`` not a Landlord or ReplicatedLandlord, ``token`` not a str,
            ``admin_names`` a str or holding non-strs.
        ValueError: neither a token nor admin names (nobody could call it), a token
            :func:`check_token` refuses, or an empty admin name.
    """

    def __init__(self, landlord: AdminTarget, *, token: str | None = None,
                 admin_names: Iterable[str] = ()) -> None:
        self.object_id = admin_object_id(landlord)  # checks the landlord
        self._landlord = landlord
        self._token = None if token is None else check_token(token).encode("utf-8")
        if isinstance(admin_names, str):  # a bare name would be taken letter by letter
            raise TypeError("admin_names is a collection of names, not one str")
        names = frozenset(admin_names)
        if not all(isinstance(name, str) and name for name in names):
            raise ValueError(f"admin_names must be non-empty strs, got {sorted(map(repr, names))}")
        self.admin_names = names
        if self._token is None and not names:
            raise ValueError("give the admin object a token or admin_names: without one, nobody may call it")
        # per connection (Pyro5's object for it), dropped with it
        self._challenges: weakref.WeakKeyDictionary[Any, Challenge] = weakref.WeakKeyDictionary()
        self._challenges_lock = threading.Lock()

    @classmethod
    def if_asked(cls, landlord: AdminTarget, *, token: str | None = None,
                 admin_names: Iterable[str] = ()) -> LandlordAdmin | None:
        """The admin object a server serves beside ``landlord`` when its operator gave a token or
        admin names; ``None`` when neither (no admin object: nobody could call it).

        Raises:
            TypeError, ValueError: as the constructor, for a bad token or bad names.
        """
        names = tuple(admin_names) if not isinstance(admin_names, str) else admin_names
        if token is None and not names:
            return None
        return cls(landlord, token=token, admin_names=names)

    def __repr__(self) -> str:  # never the token
        how = (["token"] if self._token is not None else []) + ([f"admin_names={sorted(self.admin_names)}"]
                                                               if self.admin_names else [])
        return f"LandlordAdmin({self.object_id!r}, {', '.join(how)})"

    @Pyro5.server.expose
    def challenge(self) -> str:
        """A fresh nonce for this connection (:data:`NONCE_BYTES` bytes, in hex), which the proofs of
        its next calls are made with (see :func:`admin_proof`); it replaces the connection's last one.
        Anyone may ask: a nonce grants nothing.

        Raises:
            AdminRefusedError: called in this process, not over a connection (give the token itself).
        """
        connection = Pyro5.callcontext.current_context.client
        if connection is None:
            raise AdminRefusedError("a challenge is for callers over a connection: in this process, give the token")
        fresh = Challenge()
        with self._challenges_lock:
            self._challenges[connection] = fresh
        return fresh.nonce

    def _authorise(self, call: str, arguments: Sequence[object], token: object, sequence: object,
                   proof: object) -> str:
        """Who the caller is (for the log), if it may make this call: a good proof (or, in this process
        only, the token itself), else an admin certificate.

        Raises:
            AdminRefusedError: none of those; why, in its message (and logged).
        """
        context = Pyro5.callcontext.current_context
        whys = []
        if token is not None:
            if context.client is None and self._token is not None and _same_token(token, self._token):
                return "the admin token, in this process"
            whys.append(self._token_given(token, context))
        if sequence is not None or proof is not None:
            why = self._verify(context.client, call, arguments, sequence, proof)
            if why is None:
                return f"a proof of the admin token (call {sequence} of its connection)"
            whys.append(why)
        names = _common_names(context.client) if self.admin_names else []
        if len(names) == 1 and names[0] in self.admin_names:
            return f"admin certificate {names[0]!r}"
        if names:
            whys.append(f"its certificate's commonName {names!r:.80} is no admin's")
        why = "; ".join(whys) or "no proof of the admin token, and no admin certificate"
        log.warning("refused an admin call (%s) from %s: %s", call, _peer(context.client_sock_addr), why)
        raise AdminRefusedError(f"{call} refused ({why}): this needs a proof of the landlord's admin token"
                                + (" or an admin certificate" if self.admin_names else ""))

    def _token_given(self, token: object, context: Any) -> str:
        """Why a token given as it is does not authorise: a wrong one in this process; over a connection,
        any, for it crossed the wire in clear (a right one is then exposed: the log says so)."""
        if context.client is None:
            return "a wrong admin token"
        if self._token is not None and _same_token(token, self._token):
            log.warning("a caller at %s sent the admin token itself, which anyone on the way could read: "
                        "change the token (clients of this release send a proof of it)",
                        _peer(context.client_sock_addr))
        return "the admin token was sent itself, not a proof of it (a client of this release sends a proof)"

    def _verify(self, connection: Any, call: str, arguments: Sequence[object], sequence: object,
                proof: object) -> str | None:
        """Why a proof does not authorise this call on this connection, or ``None`` when it does."""
        if self._token is None:
            return "a proof, but this admin object has no admin token (only admin certificates)"
        with self._challenges_lock:
            challenge = None if connection is None else self._challenges.get(connection)
            if challenge is None:
                return "a proof without a challenge on this connection (ask challenge() first)"
            return challenge.verify(self._token, self.object_id, call, arguments, sequence, proof)

    def _on_landlord(self, action: Callable[[Landlord], T]) -> T:
        """``action`` on the landlord (a replicated one's leader: on a follower, NotLeaderError)."""
        if isinstance(self._landlord, ReplicatedLandlord):
            return self._landlord.answer(action)
        return action(self._landlord)

    @Pyro5.server.expose
    def evict(self, cookie_prefix: str, *, sequence: int | None = None, proof: str | None = None,
              token: str | None = None) -> dict[str, Any]:
        """Revoke the one lease whose cookie starts with ``cookie_prefix`` now, freeing its resources
        (through ``on_expire``; :meth:`landlord.Landlord.revoke`, with the reason
        :data:`EVICTED`): a holder that listens hears at once, any other at its next
        renewal, which is denied with the reason. Return its row (as :meth:`list`'s).

        Args:
            cookie_prefix: the start of its cookie (see :func:`check_prefix`).
            sequence, proof: the proof of the admin token for this call (see :func:`admin_proof`).
            token: the admin token itself, in this process only (over a connection it is refused).

        Raises:
            AdminRefusedError: no good proof of the admin token, nor an admin certificate (nothing is
                read or ended).
            TypeError, ValueError: not a prefix (see :func:`check_prefix`), or one that several
                leases' cookies start with (nothing is ended).
            UnknownLeaseError: no lease's cookie starts with it (or it ended meanwhile).
        """
        who = self._authorise("evict", [cookie_prefix], token, sequence, proof)
        prefix = check_prefix(cookie_prefix)

        def end(landlord: Landlord) -> HeldLease:
            matches = landlord.manager.cookies_starting(prefix, limit=10)
            if not matches:
                raise UnknownLeaseError(f"no lease's cookie starts with {prefix!r}")
            if len(matches) > 1:
                raise ValueError(f"{len(matches)} leases' cookies start with {prefix!r}: give more of the cookie")
            [cookie] = matches
            leased = landlord.manager.get(cookie)  # what it was, for the row (UnknownLeaseError if it just ended)
            landlord.revoke(cookie, EVICTED)
            return HeldLease(cookie, leased.expiration - landlord.clock.monotonic(), leased.resource, leased.attached)

        ended = self._on_landlord(end)
        row = _row(ended)
        log.info("evicted lease %s… (%s) for %s from %s", row["cookie"], row["resource"], who,
                 _peer(Pyro5.callcontext.current_context.client_sock_addr))
        return row

    @Pyro5.server.expose
    def names(self, limit: int = DEFAULT_LIMIT, *, sequence: int | None = None, proof: str | None = None,
              token: str | None = None) -> dict[str, Any]:
        """The names the landlord's named leases hold, wait for, or keep closed by a lock-delay, by name,
        in at most ``limit`` rows (a name, a holder and a waiter are a row each), and how many names in all:
        ``{"total": int, "names": [{"name", "limit", "closed_for": s or None, "holders": [{"cookie": prefix,
        "token", "remaining": s, "value", "lock_delay": s}], "holders_total", "waiters": [{"cookie", "remaining",
        "wait": s (inf: as long as its lease), "value", "lock_delay"}] (in order), "waiters_total"}]}``.

        Args:
            limit: the most rows (0 to :data:`MAX_LIMIT`).
            sequence, proof, token: as for :meth:`evict`.

        Raises:
            AdminRefusedError: no good proof of the admin token, nor an admin certificate (nothing is listed).
            TypeError, ValueError: ``limit`` not an int of 0 to ``MAX_LIMIT``.
        """
        self._authorise("names", [limit], token, sequence, proof)
        limit = check_limit(limit)
        return self._on_landlord(lambda landlord: _names_listing(landlord, limit))

    @Pyro5.server.expose
    def list(self, limit: int = DEFAULT_LIMIT, *, sequence: int | None = None, proof: str | None = None,
             token: str | None = None) -> dict[str, Any]:
        """The first ``limit`` leases held, earliest expiration first, and how many in all:
        ``{"total": int, "leases": [{"cookie": prefix, "remaining": s, "resource": repr, "attached": n}]}``.

        Args:
            limit: how many leases to list at most (0 to :data:`MAX_LIMIT`).
            sequence, proof, token: as for :meth:`evict`.

        Raises:
            AdminRefusedError: no good proof of the admin token, nor an admin certificate (nothing is listed).
            TypeError, ValueError: ``limit`` not an int of 0 to ``MAX_LIMIT``.
        """
        self._authorise("list", [limit], token, sequence, proof)
        limit = check_limit(limit)
        held, total = self._on_landlord(lambda landlord: (landlord.held(limit=limit), len(landlord)))
        return {"total": total, "leases": [_row(lease) for lease in held]}


def _names_listing(landlord: Landlord, limit: int) -> dict[str, Any]:
    """The names ``landlord`` holds, waits for or keeps closed, by name, in at most ``limit`` rows (a name,
    a holder and a waiter are a row each; a name cut short says how many it has in all)."""
    views = landlord.names()
    now = landlord.clock.monotonic()
    listed: list[dict[str, Any]] = []
    budget = limit
    for view in views:
        if budget < 1:
            break
        budget -= 1
        holders = [_holder_row(landlord, grant.cookie, grant.token, now) for grant in view.holders[:budget]]
        budget -= len(holders)
        waiters = [_waiter_row(landlord, waiter.cookie, waiter.deadline, now) for waiter in view.waiters[:budget]]
        budget -= len(waiters)
        closed = view.closed_until - now if view.closed_until is not None and view.closed_until > now else None
        listed.append({"name": view.name, "limit": view.limit, "closed_for": closed,
                       "holders": holders, "holders_total": len(view.holders),
                       "waiters": waiters, "waiters_total": len(view.waiters)})
    return {"total": len(views), "names": listed}


def _claim_of(landlord: Landlord, cookie: str, now: float) -> tuple[NameClaim | None, float]:
    """The claim of the named lease ``cookie`` and its seconds left; ``(None, 0.0)`` once it has ended."""
    try:
        leased = landlord.manager.get(cookie)
    except UnknownLeaseError:
        return None, 0.0
    claim = leased.resource if isinstance(leased.resource, NameClaim) else None
    return claim, float(leased.expiration - now)


def _holder_row(landlord: Landlord, cookie: str, token: int, now: float) -> dict[str, Any]:
    claim, remaining = _claim_of(landlord, cookie, now)
    return {"cookie": cookie[:PREFIX_SHOWN], "token": token, "remaining": remaining,
            "value": _shown_value(claim), "lock_delay": float(claim.lock_delay) if claim is not None else 0.0}


def _waiter_row(landlord: Landlord, cookie: str, deadline: float, now: float) -> dict[str, Any]:
    claim, remaining = _claim_of(landlord, cookie, now)
    return {"cookie": cookie[:PREFIX_SHOWN], "remaining": remaining, "wait": float(deadline - now),
            "value": _shown_value(claim), "lock_delay": float(claim.lock_delay) if claim is not None else 0.0}


def _shown_value(claim: NameClaim | None) -> str | None:
    return None if claim is None or claim.value is None else clip(claim.value, RESOURCE_WIDTH)


def _same_token(given: object, token: bytes) -> bool:
    """Whether ``given`` is the admin token (compared in constant time)."""
    if not isinstance(given, str):
        return False
    try:
        encoded = given.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return hmac.compare_digest(encoded, token)


def _row(held: HeldLease) -> dict[str, Any]:
    resource = held.resource
    shown = short_repr(resource) if not isinstance(resource, NameClaim) else clip(
        f"name {resource.name!r} " + (f"(token {resource.token})" if resource.token is not None else "(waiting)"),
        RESOURCE_WIDTH)
    return {"cookie": held.cookie[:PREFIX_SHOWN], "remaining": float(held.remaining),
            "resource": shown, "attached": len(held.attached)}


def _common_names(connection: Any) -> list[str]:
    """The commonNames of the subject of the certificate the TLS peer of ``connection`` presented
    (verified against the CA by the handshake); none without TLS."""
    getpeercert = getattr(connection, "getpeercert", None)  # Pyro5's SocketConnection: its socket's
    if getpeercert is None:
        return []
    try:
        certificate = getpeercert()
    except (OSError, ValueError):  # the connection is gone
        return []
    if not isinstance(certificate, dict):
        return []
    return [value for name in certificate.get("subject", ()) for key, value in name if key == "commonName"]


def _peer(address: Any) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    return "this process" if address is None else str(address)


def register_admin(daemon: Pyro5.api.Daemon, landlord: AdminTarget, *, token: str | None = None,
                   admin_names: Iterable[str] = ()) -> str:
    """Serve a :class:`LandlordAdmin` of ``landlord`` on ``daemon`` under :func:`admin_object_id`;
    its URI. Unregister it with ``daemon.unregister(admin_object_id(landlord))``.

    Raises:
        TypeError, ValueError: as :class:`LandlordAdmin`.
        Pyro5.errors.DaemonError: the daemon already serves an object under that id.
    """
    admin = LandlordAdmin(landlord, token=token, admin_names=admin_names)
    uri = str(daemon.register(admin, objectId=admin.object_id))
    log.info("admin object at %s (%r)", uri, admin)
    return uri


def short_repr(resource: Any) -> str:
    """A one-line repr of ``resource`` of at most ``RESOURCE_WIDTH`` characters (never raises)."""
    try:
        text = _REPR.repr(resource)
    except Exception:  # a resource's own __repr__ may fail: the listing must not
        text = f"<{type(resource).__name__}, unprintable>"
    return clip(text, RESOURCE_WIDTH)
