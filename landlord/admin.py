"""An operator's view of any landlord: :class:`LandlordAdmin` lists its leases and evicts one,
and ``python -m landlord list|evict`` calls it (:class:`AdminClient`, :func:`add_admin_commands`).

Holding a lease's cookie is the capability to renew or cancel it, so the
admin calls are not methods of the landlord: they go to a separate Pyro5
object, served beside it under :func:`admin_object_id` (``"landlord-admin."``
and the landlord's id; :func:`register_admin`), which shows only the first
:data:`PREFIX_SHOWN` characters of each cookie and answers only callers it
authorises. Every call must carry one of:

* **a proof of the admin token** given at start (``token=``, at least
  :data:`MIN_TOKEN_LENGTH` characters), never the token itself (see *The
  proof*, below). The command line reads the token from a file
  (``--token-file``) or the ``LANDLORD_ADMIN_TOKEN`` variable, never from its
  arguments, which ``ps`` shows to every user of the host;
* **an admin certificate**: the landlord is served over two-way TLS
  (:mod:`landlord.tls`), so the client's certificate is already signed by the
  CA; it is an admin's when its subject has exactly one commonName and that
  name is one of ``admin_names`` (etcd's rule for a client certificate's
  user). Any other certificate of the CA reaches the landlord to renew its
  leases, not this object.

A call with neither is refused with :class:`AdminRefusedError` (it crosses
the wire as itself, saying why) before its arguments are used: nothing is
listed or evicted, and the refusal is logged with the caller's address. Given
both options, either authorises. Every eviction is logged at INFO, with who asked.

The proof
---------
The token used to travel with each call. Without TLS anyone who could read
the traffic had it, and bytes captured from one admin call, sent again on a
new connection, did the call again (a hostile probe listed the leases so).
Requiring TLS for admin calls would close that too, but then a landlord
served on plain TCP, on loopback or inside a private network, would need
certificates for its operators or an opt-out, which is the same hole
again. So the token never leaves the client, and a proof is good for one
call on one connection only:

1. on each new connection the client first calls :meth:`LandlordAdmin.challenge`,
   which draws a nonce (:data:`NONCE_BYTES` random bytes) and keeps it for
   that connection alone (Pyro5's per-connection object, ``current_context.client``;
   a new challenge on the same connection replaces it);
2. each admin call then carries a ``sequence`` number, higher than the
   last one the connection used, and a ``proof``: HMAC-SHA256, keyed by the
   token, over the admin object's id, the nonce, the sequence number, the
   method and its arguments (:func:`admin_proof`);
3. the server computes the same from the connection's nonce and what it
   received, compares them in constant time, and uses the sequence number up
   (:class:`Challenge`).

So captured bytes sent again on another connection are refused (that
connection's nonce is another), sent again on the same one are refused (the
sequence number is used up), and a captured proof is good for no other call
or arguments (not an eviction of another lease). A client that sends the
token itself (``token=`` over Pyro5, as clients before the proof did) is
refused, and the server warns that the token was exposed and should be changed.
Called in its own process (no connection), the admin object takes the token itself.

What the proof does not do: the token can still be guessed offline against
one captured proof, so it must be random (``secrets.token_urlsafe()``: 256
bits); and whoever reads the wire still sees the listing (cookie prefixes,
resources), and whoever sits in the middle can drop a call or forge an
answer. Serve over two-way TLS against those.

An eviction ends the lease now through the landlord's manager, as a holder's
``cancel`` would: its resources are freed through ``on_cancel`` (else
``on_expire``), the hooks hear ``cancelled``, and the holder's next renewal
gets an ``UnknownLeaseError``. A replicated landlord
(:class:`~landlord.ReplicatedLandlord`) answers on its leader only, as its
holders' calls do.

Finding the lease for a prefix reads every lease held (an admin call is
rare; a listing is bounded by ``limit``, at most :data:`MAX_LIMIT`).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import hmac
import json
import logging
import math
import os
import pathlib
import re
import reprlib
import secrets
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, TextIO, TypeVar

import Pyro5.api
import Pyro5.callcontext
import Pyro5.errors
import Pyro5.server

from .errors import LeaseError, NotLeaderError, UnknownLeaseError
from .grantor.landlord import Landlord
from .grantor.manager import HeldLease
from .holder.landlordlease import MAX_COOKIE_LENGTH
from .replication.replicated import ReplicatedLandlord
from .tls import TLSConfig, tls_settings
from .wire import checked_fields, register_exception

__all__ = [
    "LandlordAdmin", "AdminClient", "AdminRefusedError", "AdminRow", "AdminListing", "Challenge",
    "admin_object_id", "register_admin", "find_admin", "read_token", "check_token", "check_prefix", "admin_proof",
    "format_table", "add_admin_commands", "EVICT_OPTIONS", "prefix_behind_dashes", "run_admin",
    "ADMIN_PREFIX", "MIN_TOKEN_LENGTH", "MAX_TOKEN_LENGTH", "MIN_PREFIX", "PREFIX_SHOWN", "DEFAULT_LIMIT",
    "MAX_LIMIT", "RESOURCE_WIDTH", "TOKEN_ENV", "DEFAULT_TIMEOUT", "EXIT_OK", "EXIT_FAILED", "EXIT_USAGE",
    "NONCE_BYTES", "MAX_SEQUENCE", "positive_count_argument", "hosts_argument",
]

log = logging.getLogger(__name__)

T = TypeVar("T")
AdminTarget = Landlord | ReplicatedLandlord

ADMIN_PREFIX = "landlord-admin."  # an admin object's id: this and its landlord's id
MIN_TOKEN_LENGTH = 16  # characters: a shorter token could be guessed
MAX_TOKEN_LENGTH = 4096
MIN_PREFIX = 8  # characters of a cookie an eviction must name: 48 bits, so a typo hits no other lease
PREFIX_SHOWN = 8  # characters of a cookie a listing shows: enough to evict, far from the capability
DEFAULT_LIMIT = 1000  # leases listed unless told otherwise
EVICTED = "evicted by an operator"  # the reason an evicted lease's holder is given
MAX_LIMIT = 10_000  # leases one listing may return (~1 MB on the wire)
RESOURCE_WIDTH = 60  # characters of a resource's repr a listing shows
TOKEN_ENV = "LANDLORD_ADMIN_TOKEN"
DEFAULT_TIMEOUT = 10.0  # seconds the command waits for the landlord
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
NONCE_BYTES = 32  # random bytes of a connection's challenge: never drawn twice
MAX_SEQUENCE = 2**63 - 1  # the highest sequence number a proof may carry
_PROOF_CONTEXT = "landlord-admin-proof/1"  # first in every proved message: a proof means nothing elsewhere
_HEX_NONCE = re.compile(r"[0-9a-f]{64}\Z")  # NONCE_BYTES, in hex
_HEX_PROOF = re.compile(r"[0-9a-f]{64}\Z")  # an HMAC-SHA256, in hex

_COOKIE_CHARACTERS = re.compile(r"[A-Za-z0-9_-]+\Z")  # secrets.token_urlsafe's alphabet: every cookie's
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = RESOURCE_WIDTH
_REPR.maxlevel = 3


class AdminRefusedError(Exception):
    """An admin call came without the admin token or an admin certificate: nothing was done."""


register_exception(AdminRefusedError)  # here: both the server and the client import this module


class AdminRow(NamedTuple):
    """One lease as an admin listing shows it."""

    cookie: str  # the first PREFIX_SHOWN characters of its cookie, never the whole
    remaining: float  # seconds until its term ends (negative: ended, in its grace or not yet freed)
    resource: str  # a short repr of its resource (at most RESOURCE_WIDTH characters)
    attached: int  # how many further resources are attached to it


class AdminListing(NamedTuple):
    """An admin listing: the rows, earliest expiration first, and how many leases are held in all."""

    rows: list[AdminRow]
    total: int


def check_token(token: object) -> str:
    """``token`` checked as an admin token: a str of ``MIN_TOKEN_LENGTH`` to ``MAX_TOKEN_LENGTH``
    characters, no surrounding whitespace, encodable as UTF-8.

    Raises:
        TypeError: not a str.
        ValueError: too short or too long, surrounded by whitespace, or not encodable.
    """
    if not isinstance(token, str):
        raise TypeError(f"an admin token is a str, got {type(token).__name__}")
    if not MIN_TOKEN_LENGTH <= len(token) <= MAX_TOKEN_LENGTH:
        raise ValueError(f"an admin token has {MIN_TOKEN_LENGTH} to {MAX_TOKEN_LENGTH} characters, got "
                         f"{len(token)} (make one: python -c 'import secrets; print(secrets.token_urlsafe())')")
    if token != token.strip():
        raise ValueError("an admin token has no whitespace around it")
    try:
        token.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("an admin token must be encodable as UTF-8") from None
    return token


def read_token(path: str | os.PathLike[str]) -> str:
    """The admin token in the file at ``path`` (its text, whitespace around it dropped).

    Raises:
        OSError: the file cannot be read.
        ValueError: it holds no valid token (see :func:`check_token`), or is not UTF-8.
    """
    try:
        text = pathlib.Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"the token file {path} is not UTF-8 text") from None
    try:
        return check_token(text.strip())
    except ValueError as exc:
        raise ValueError(f"the token file {path}: {exc}") from None


def check_prefix(prefix: object) -> str:
    """``prefix`` checked as the start of a lease's cookie: ``MIN_PREFIX`` to 256 characters of a
    cookie's alphabet (letters, digits, ``_`` and ``-``).

    Raises:
        TypeError: not a str.
        ValueError: too short or too long, or a character no cookie has.
    """
    if not isinstance(prefix, str):
        raise TypeError(f"a cookie prefix is a str, got {type(prefix).__name__}")
    if not MIN_PREFIX <= len(prefix) <= MAX_COOKIE_LENGTH:
        raise ValueError(f"a cookie prefix has {MIN_PREFIX} to {MAX_COOKIE_LENGTH} characters, got {len(prefix)}")
    if not _COOKIE_CHARACTERS.match(prefix):
        raise ValueError(f"a cookie prefix has only letters, digits, '_' and '-', got {prefix!r:.40}")
    return prefix


def _check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit is an int, got {type(limit).__name__}")
    if not 0 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit is 0 to {MAX_LIMIT}, got {limit}")
    return limit


def short_repr(resource: Any) -> str:
    """A one-line repr of ``resource`` of at most ``RESOURCE_WIDTH`` characters (never raises)."""
    try:
        text = _REPR.repr(resource)
    except Exception:  # a resource's own __repr__ may fail: the listing must not
        text = f"<{type(resource).__name__}, unprintable>"
    return _clip(text, RESOURCE_WIDTH)


def _clip(text: str, width: int) -> str:
    """``text`` on one line (control characters shown as ``?``), cut to ``width`` with an ellipsis."""
    text = "".join(char if char.isprintable() else "?" for char in text[:width + 1])
    return text if len(text) <= width else text[:width - 1] + "…"


# -- the proof ----------------------------------------------------------------------------------------


def _check_nonce(nonce: object) -> str:
    if not isinstance(nonce, str) or not _HEX_NONCE.match(nonce):
        raise ValueError(f"a challenge's nonce is {NONCE_BYTES} bytes in lowercase hex, got {nonce!r:.80}")
    return nonce


def _check_sequence(sequence: object) -> int:
    if isinstance(sequence, bool) or not isinstance(sequence, int):
        raise TypeError(f"a proof's sequence number is an int, got {type(sequence).__name__}")
    if not 1 <= sequence <= MAX_SEQUENCE:
        shown = sequence if sequence > -MAX_SEQUENCE else "a lower one"  # a huge int has no str (Python 3.11+)
        raise ValueError(f"a proof's sequence number is 1 to {MAX_SEQUENCE}, "
                         f"got {shown if sequence <= MAX_SEQUENCE else 'a higher one'}")
    return sequence


def _proved_message(object_id: str, nonce: str, sequence: int, method: str, arguments: Sequence[object]) -> bytes:
    """What a proof is the HMAC of: one canonical JSON line naming everything the call does and where.

    Raises:
        TypeError, ValueError: an argument JSON cannot write (a NaN, bytes, lists nested too deep...).
    """
    try:
        return json.dumps([_PROOF_CONTEXT, object_id, nonce, sequence, method, list(arguments)],
                          ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")
    except RecursionError:  # a caller's argument nested past the stack: refused like any other it cannot write
        raise ValueError("an argument is nested too deep to prove") from None


def _mac(key: bytes, message: bytes) -> str:
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def admin_proof(token: str, nonce: str, sequence: int, object_id: str, method: str,
                arguments: Sequence[object]) -> str:
    """The proof a caller of an admin object sends instead of its token (see the module docstring):
    HMAC-SHA256 keyed by ``token`` over the admin object's id, the connection's ``nonce``, the call's
    ``sequence`` number, ``method`` and its positional ``arguments``; 64 hex digits.

    Args:
        token: the admin token (see :func:`check_token`).
        nonce: what :meth:`LandlordAdmin.challenge` gave on this connection.
        sequence: the call's number on this connection, above every one used on it before.
        object_id: the admin object's id.
        method: ``"list"`` or ``"evict"``.
        arguments: the call's positional arguments, as sent (``[limit]``, ``[cookie_prefix]``).

    Raises:
        TypeError, ValueError: a bad token, nonce or sequence number, or an argument JSON cannot write.
    """
    key = check_token(token).encode("utf-8")
    return _mac(key, _proved_message(object_id, _check_nonce(nonce), _check_sequence(sequence), method, arguments))


class Challenge:
    """One connection's challenge (the server's side of the proof): its nonce, and the highest sequence
    number a proof has used on the connection. Holds no clock and no socket.

    Args:
        nonce: the nonce (:data:`NONCE_BYTES` bytes in lowercase hex); ``None`` draws a fresh one.

    Raises:
        ValueError: a malformed ``nonce``.
    """

    def __init__(self, nonce: str | None = None) -> None:
        self.nonce = secrets.token_hex(NONCE_BYTES) if nonce is None else _check_nonce(nonce)
        self.last_sequence = 0

    def verify(self, key: bytes, object_id: str, method: str, arguments: Sequence[object], sequence: object,
               proof: object) -> str | None:
        """Why ``proof`` does not authorise this call of ``method`` with ``arguments`` on ``object_id``,
        or ``None`` when it does: then ``sequence`` is used up, and the same proof is refused next time.
        A refused proof changes nothing.

        Args:
            key: the admin token, UTF-8 encoded.
            object_id, method, arguments: the call, as received.
            sequence, proof: what the call carried.
        """
        try:
            number = _check_sequence(sequence)
        except (TypeError, ValueError) as exc:
            return f"a malformed proof: {exc}"
        if not isinstance(proof, str) or not _HEX_PROOF.match(proof):
            return "a malformed proof: not 64 lowercase hex digits"
        try:
            expected = _mac(key, _proved_message(object_id, self.nonce, number, method, arguments))
        except (TypeError, ValueError):
            return "a wrong proof: its arguments cannot be proved (not JSON)"
        if not hmac.compare_digest(expected, proof):
            return ("a wrong proof: not made with the admin token for this connection's challenge "
                    "(a wrong token, or bytes replayed from another connection)")
        if number <= self.last_sequence:
            return f"a replayed proof: sequence number {number} is used up (the last was {self.last_sequence})"
        self.last_sequence = number
        return None


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
    """The admin object of one landlord (see the module docstring): :meth:`list` and :meth:`evict`,
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
        limit = _check_limit(limit)
        held, total = self._on_landlord(lambda landlord: (landlord.held(limit=limit), len(landlord)))
        return {"total": total, "leases": [_row(lease) for lease in held]}


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
    return {"cookie": held.cookie[:PREFIX_SHOWN], "remaining": float(held.remaining),
            "resource": short_repr(held.resource), "attached": len(held.attached)}


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


# -- the client -------------------------------------------------------------------------------------


def _uri_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def find_admin(host: str, port: int, *, timeout: float = DEFAULT_TIMEOUT) -> str:
    """The object id of the one landlord admin object the daemon at ``host:port`` serves
    (asked of the daemon's own object, which lists what it serves).

    Raises:
        LookupError: it serves none, or several (the message names them).
        Pyro5.errors.CommunicationError: it cannot be reached.
    """
    with Pyro5.api.Proxy(f"PYRO:Pyro.Daemon@{_uri_host(host)}:{port}") as daemon:
        daemon._pyroTimeout = timeout
        ids = sorted(str(name) for name in daemon.registered() if str(name).startswith(ADMIN_PREFIX))
    if not ids:
        raise LookupError(f"{host}:{port} serves no landlord admin object (is it served with an admin "
                          f"token or admin names?)")
    if len(ids) > 1:
        raise LookupError(f"{host}:{port} serves {len(ids)} landlord admin objects ({', '.join(ids)}): "
                          f"say which with --id or --object-id")
    return ids[0]


class AdminClient:
    """Calls a landlord's admin object (see :class:`LandlordAdmin`). With a token it never sends the
    token: it asks each new connection for a challenge and sends a proof with each call (see
    :func:`admin_proof`). TLS, if used, is the process's (:func:`~landlord.tls.tls_settings`) while it calls.

    Args:
        uri: the admin object's URI (``PYRO:landlord-admin.<id>@host:port``).
        token: the admin token to prove, or ``None`` (an admin certificate then).
        timeout: seconds each call may take.

    Raises:
        TypeError, ValueError: a token :func:`check_token` refuses.
        Pyro5.errors.PyroError: a malformed URI.
    """

    def __init__(self, uri: str, *, token: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._token = None if token is None else check_token(token)
        self._proxy = Pyro5.api.Proxy(uri)
        self._proxy._pyroTimeout = timeout
        self._challenged: Any = None  # the proxy's connection the nonce was drawn on
        self._nonce = ""
        self._sequence = 0  # the last call's number on that connection

    def close(self) -> None:
        self._proxy._pyroRelease()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _credentials(self, method: str, arguments: Sequence[object]) -> dict[str, Any]:
        """What a call of ``method`` with ``arguments`` carries to be authorised: a fresh proof (asking
        for a challenge first when the proxy is on a connection without one), or nothing."""
        if self._token is None:
            return {}
        if self._proxy._pyroConnection is None or self._proxy._pyroConnection is not self._challenged:
            nonce = self._proxy.challenge()  # connects, if need be
            self._nonce = _check_nonce(nonce)
            self._challenged, self._sequence = self._proxy._pyroConnection, 0
        self._sequence += 1
        proof = admin_proof(self._token, self._nonce, self._sequence, self._proxy._pyroUri.object, method, arguments)
        return {"sequence": self._sequence, "proof": proof}

    def evict(self, cookie_prefix: str) -> AdminRow:
        """End the lease whose cookie starts with ``cookie_prefix``; what was ended.

        Raises:
            TypeError, ValueError: not a prefix (:func:`check_prefix`; checked before anything is sent),
                or as :meth:`LandlordAdmin.evict`.
            AdminRefusedError, UnknownLeaseError: as :meth:`LandlordAdmin.evict`.
            Pyro5.errors.CommunicationError: the landlord cannot be reached.
        """
        prefix = check_prefix(cookie_prefix)
        return _admin_row(self._proxy.evict(prefix, **self._credentials("evict", [prefix])))

    def list(self, limit: int = DEFAULT_LIMIT) -> AdminListing:
        """The first ``limit`` leases, earliest expiration first, and the total held.

        Raises:
            TypeError, ValueError: ``limit`` not an int of 0 to ``MAX_LIMIT`` (checked before anything
                is sent), or a malformed answer.
            AdminRefusedError: as :meth:`LandlordAdmin.list`.
            Pyro5.errors.CommunicationError: the landlord cannot be reached.
        """
        limit = _check_limit(limit)
        answer = self._proxy.list(limit, **self._credentials("list", [limit]))
        if not isinstance(answer, dict):
            raise TypeError(f"malformed admin listing: {type(answer).__name__}")
        leases, total = checked_fields(answer, "admin listing", {"leases": list, "total": int})
        return AdminListing([_admin_row(row) for row in leases], total)


def _admin_row(data: object) -> AdminRow:
    if not isinstance(data, dict):
        raise TypeError(f"malformed admin row: {type(data).__name__}")
    cookie, remaining, resource, attached = checked_fields(
        data, "admin row", {"cookie": str, "remaining": (int, float), "resource": str, "attached": int})
    return AdminRow(cookie, float(remaining), resource, attached)


def format_table(listing: AdminListing) -> str:
    """The listing as an aligned text table: a header, one line per lease, and a line saying
    how many are not shown (if any)."""
    if not listing.rows:
        return f"no leases ({listing.total} held)\n" if listing.total else "no leases\n"
    lines = [("COOKIE", "LEFT", "ATTACHED", "RESOURCE")]
    lines += [(_clip(row.cookie, PREFIX_SHOWN), _left(row.remaining), str(row.attached),
               _clip(row.resource, RESOURCE_WIDTH)) for row in listing.rows]
    widths = [max(len(line[column]) for line in lines) for column in range(3)]
    text = "".join(f"{line[0]:<{widths[0]}}  {line[1]:>{widths[1]}}  {line[2]:>{widths[2]}}  {line[3]}"
                   .rstrip() + "\n" for line in lines)
    if listing.total > len(listing.rows):
        text += f"({len(listing.rows)} of {listing.total} leases shown; see --limit)\n"
    return text


def _left(remaining: float) -> str:
    return "forever" if math.isinf(remaining) and remaining > 0 else f"{remaining:.1f} s"


# -- the command line ---------------------------------------------------------------------------------


def port_argument(text: str, *, allow_zero: bool = False) -> int:
    """A port from the command line (0, "any free port", only if ``allow_zero``).

    Raises:
        argparse.ArgumentTypeError: not a number, or out of range.
    """
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    lowest = 0 if allow_zero else 1
    if not lowest <= port < 65536:
        raise argparse.ArgumentTypeError(f"a port is {lowest} to 65535, not {port}")
    return port


def seconds_argument(text: str) -> float:
    """A positive, finite number of seconds from the command line.

    Raises:
        argparse.ArgumentTypeError: anything else.
    """
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (seconds > 0 and math.isfinite(seconds)):
        raise argparse.ArgumentTypeError(f"seconds must be positive and finite, not {text}")
    return seconds


def positive_count_argument(text: str) -> int:
    """A whole number of at least 1 from the command line (a limit: connections, sets, leases...).

    Raises:
        argparse.ArgumentTypeError: anything else.
    """
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {count}")
    return count


def hosts_argument(text: str) -> list[str]:
    """A comma-separated list of host names or addresses from the command line (an allow-list).

    Raises:
        argparse.ArgumentTypeError: an empty name in it.
    """
    hosts = [host.strip() for host in text.split(",")]
    if not all(hosts):
        raise argparse.ArgumentTypeError(f"a comma-separated list of host names or addresses, got {text!r}")
    return hosts


def _limit(text: str) -> int:
    try:
        return _check_limit(int(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a number of leases from 0 to {MAX_LIMIT}: {text!r}") from exc


def _prefix(text: str) -> str:
    try:
        return check_prefix(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _name(text: str) -> str:
    if not text or "@" in text or any(char.isspace() for char in text):
        raise argparse.ArgumentTypeError(f"an id has no spaces or '@', and is not empty: {text!r:.80}")
    return text


def add_admin_commands(commands: argparse._SubParsersAction[Any], *,
                       list_name: str = "list", evict_name: str = "evict", default_host: str = "127.0.0.1",
                       default_port: int | None = None, what: str = "landlord") -> None:
    """Add the admin commands (listing the leases, evicting one) to a command line's subcommands;
    run them with :func:`run_admin` (they set ``args.admin_command`` to ``"list"`` or ``"evict"``).

    Each takes ``--host``, ``--port``, the credentials (``--token-file``, or the ``LANDLORD_ADMIN_TOKEN``
    variable, and/or ``--cert --key --ca``), ``--id`` or ``--object-id`` (default: the one
    admin object the daemon serves) and ``--timeout``; ``list`` takes ``--limit``, ``evict`` a
    cookie prefix.

    Args:
        commands: what ``parser.add_subparsers()`` returned.
        list_name, evict_name: the commands' names (``python -m lookup`` has a ``list`` of its own).
        default_host: the host asked unless ``--host`` is given.
        default_port: the port asked unless ``--port`` is given (``None``: ``--port`` is required).
        what: what the help calls the server ("landlord", "lookup service").
    """
    for name, command in ((list_name, "list"), (evict_name, "evict")):
        if command == "list":
            parser = commands.add_parser(
                name, help=f"list the leases a {what} holds (needs its admin token or an admin certificate)",
                description=f"Print the leases the {what} at HOST:PORT holds, earliest expiration first: "
                            f"a prefix of each cookie, the time left, how many resources are attached, "
                            f"and the resource.")
            parser.add_argument("--limit", type=_limit, default=DEFAULT_LIMIT, metavar="N",
                                help=f"show at most N leases (default %(default)s, at most {MAX_LIMIT})")
        else:
            parser = commands.add_parser(
                name, help=f"end one lease of a {what} now (needs its admin token or an admin certificate)",
                description=f"End the lease of the {what} at HOST:PORT whose cookie starts with PREFIX "
                            f"now, freeing its resources as a cancel would; print what was ended.")
            parser.add_argument("prefix", type=_prefix, metavar="PREFIX",
                                help=f"the start of its cookie, as {list_name} shows it ({MIN_PREFIX}+ characters)")
        parser.set_defaults(admin_command=command)
        parser.add_argument("--host", default=default_host, help=f"the {what}'s host (default %(default)s)")
        parser.add_argument("--port", type=port_argument, default=default_port, required=default_port is None,
                            help=f"its port{' (default %(default)s)' if default_port is not None else ''}")
        parser.add_argument("--timeout", type=seconds_argument, default=DEFAULT_TIMEOUT, metavar="S",
                            help="seconds to wait for it (default %(default)g)")
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--id", type=_name, metavar="LANDLORD_ID",
                           help=f"the landlord's id: its admin object is {ADMIN_PREFIX}LANDLORD_ID "
                                f"(default: the one admin object served there)")
        which.add_argument("--object-id", type=_name, metavar="ID", help="the admin object's Pyro5 object id")
        credentials = parser.add_argument_group(
            "credentials", f"the admin token (from --token-file, else ${TOKEN_ENV}), and/or an admin "
                           f"certificate (--cert, --key and --ca, for two-way TLS)")
        credentials.add_argument("--token-file", type=pathlib.Path, metavar="PATH",
                                 help="a file holding the admin token (not the token itself: "
                                      "arguments are visible to every user in ps)")
        credentials.add_argument("--cert", type=pathlib.Path, metavar="PATH",
                                 help="this client's certificate (PEM, with its chain)")
        credentials.add_argument("--key", type=pathlib.Path, metavar="PATH", help="its private key (PEM)")
        credentials.add_argument("--ca", type=pathlib.Path, metavar="PATH",
                                 help="the CA certificate the server's certificate must be signed by (PEM)")


# every option of the evict command, and of them those given alone (the rest take a value)
EVICT_OPTIONS = frozenset({"-h", "--help", "--host", "--port", "--timeout", "--id", "--object-id",
                           "--token-file", "--cert", "--key", "--ca"})
_EVICT_FLAGS = frozenset({"-h", "--help"})


def prefix_behind_dashes(argv: Sequence[str], *, evict_name: str = "evict") -> list[str]:
    """``argv`` with the evict command's cookie prefix moved behind ``--`` if it starts with ``-``.

    A cookie is ``secrets.token_urlsafe``, so one in 64 starts with ``-``; argparse would read
    ``evict -OG9xgi2`` as an unknown option. The prefix is the first argument after the command
    that is not one of its options (:data:`EVICT_OPTIONS`, alone or as ``--option=value``) nor
    the value of the option before it. Anything after an explicit ``--`` is left as it is.

    Args:
        argv: the command line's arguments, without the program.
        evict_name: the evict command's name in this command line.
    """
    arguments = list(argv)
    if evict_name not in arguments:
        return arguments
    start = arguments.index(evict_name) + 1
    takes_value = False
    for at in range(start, len(arguments)):
        argument = arguments[at]
        if argument == "--":
            break
        if takes_value:
            takes_value = False
            continue
        option = argument.split("=", 1)[0]
        if option in EVICT_OPTIONS:
            takes_value = "=" not in argument and option not in _EVICT_FLAGS
            continue
        if argument.startswith("-") and _COOKIE_CHARACTERS.match(argument) and "--" not in arguments[at:]:
            return arguments[:at] + arguments[at + 1:] + ["--", argument]
        if not argument.startswith("-"):
            break  # the prefix as argparse reads it
    return arguments


class _Failed(Exception):
    """A command's one error line, and its exit code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _credentials(args: argparse.Namespace, environ: dict[str, str] | os._Environ[str]) -> tuple[str | None,
                                                                                                  TLSConfig | None]:
    tls_files = [args.cert, args.key, args.ca]
    tls = None
    if any(path is not None for path in tls_files):
        if None in tls_files:
            raise _Failed(EXIT_USAGE, "--cert, --key and --ca go together")
        try:
            tls = TLSConfig(args.cert, args.key, args.ca)
        except (OSError, ValueError) as exc:
            raise _Failed(EXIT_USAGE, f"TLS: {exc}") from None
    token = None
    try:
        if args.token_file is not None:
            token = read_token(args.token_file)
        elif environ.get(TOKEN_ENV):
            token = check_token(environ[TOKEN_ENV].strip())
    except OSError as exc:
        raise _Failed(EXIT_USAGE, f"cannot read the token file: {exc}") from None
    except ValueError as exc:
        raise _Failed(EXIT_USAGE, str(exc) if args.token_file is not None else f"${TOKEN_ENV}: {exc}") from None
    if token is None and tls is None:
        raise _Failed(EXIT_USAGE, f"no credentials: give --token-file PATH (or set ${TOKEN_ENV}), "
                                  f"or an admin certificate (--cert, --key, --ca)")
    return token, tls


def run_admin(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None,
              prog: str = "landlord", environ: dict[str, str] | None = None) -> int:
    """Run an admin command parsed by a parser :func:`add_admin_commands` made; its exit code:
    0 done, 1 refused or unreachable (or a replica that does not lead), 2 bad input (the
    options, or a prefix matching no lease or several). A failure is one line on ``err``:
    ``<prog>: error: <what>``.

    Args:
        args: the parsed arguments.
        out: where the table or the eviction goes (default stdout).
        err: where the error line goes (default stderr).
        prog: the program the error line names.
        environ: where ``LANDLORD_ADMIN_TOKEN`` is looked up (default ``os.environ``).
    """
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        token, tls = _credentials(args, os.environ if environ is None else environ)
        # TLS is the process's: restored after, as main() may run inside a longer-lived process
        with tls_settings(tls) if tls is not None else contextlib.nullcontext():
            out.write(_call(args, token))
    except _Failed as failed:
        print(f"{prog}: error: {failed}", file=err)
        return failed.code
    return EXIT_OK


def _call(args: argparse.Namespace, token: str | None) -> str:
    """What the command prints; its failure as :class:`_Failed`."""
    where = f"{args.host}:{args.port}"
    try:
        if args.object_id is not None:
            object_id = args.object_id
        elif args.id is not None:
            object_id = ADMIN_PREFIX + args.id
        else:
            object_id = find_admin(args.host, args.port, timeout=args.timeout)
        with AdminClient(f"PYRO:{object_id}@{_uri_host(args.host)}:{args.port}", token=token,
                         timeout=args.timeout) as client:
            if args.admin_command == "list":
                return format_table(client.list(args.limit))
            row = client.evict(args.prefix)
            return f"evicted {row.cookie}… {row.resource} ({_left(row.remaining)} left, {row.attached} attached)\n"
    except AdminRefusedError as exc:
        raise _Failed(EXIT_FAILED, f"{where}: {exc}") from None
    except NotLeaderError as exc:
        raise _Failed(EXIT_FAILED, f"{where} does not lead its group"
                                   + (f": ask {exc.leader}" if exc.leader else "")) from None
    except (UnknownLeaseError, TypeError, ValueError) as exc:
        raise _Failed(EXIT_USAGE, str(exc)) from None
    except LeaseError as exc:
        raise _Failed(EXIT_FAILED, str(exc)) from None
    except LookupError as exc:  # find_admin: none, or several
        raise _Failed(EXIT_FAILED, str(exc)) from None
    except Pyro5.errors.CommunicationError as exc:
        raise _Failed(EXIT_FAILED, f"cannot reach {where}: {exc}") from None
    except (Pyro5.errors.PyroError, OSError) as exc:  # no such object there, say
        raise _Failed(EXIT_FAILED, f"{where}: {exc}") from None

