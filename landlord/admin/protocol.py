"""What an admin object and its callers agree on: the admin token and the proof of it a call carries
instead (:func:`admin_proof`, :class:`Challenge`), the checks both sides make of a call's arguments
(:func:`check_token`, :func:`check_prefix`, :func:`check_limit`), how much of a lease a row shows,
and the refusal (:class:`AdminRefusedError`, which crosses the wire as itself).

Pure: no Pyro5, no landlord. The server (:mod:`landlord.admin.server`) and the
client (:mod:`landlord.admin.client`) both import it, and neither imports the other.

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

1. on each new connection the client first calls
   :meth:`~landlord.admin.LandlordAdmin.challenge`, which draws a nonce
   (:data:`NONCE_BYTES` random bytes) and keeps it for that connection alone
   (Pyro5's per-connection object, ``current_context.client``; a new challenge
   on the same connection replaces it);
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
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import pathlib
import re
import secrets
from collections.abc import Sequence

from ..holder.landlordlease import MAX_COOKIE_LENGTH
from ..wire import register_exception

__all__ = [
    "AdminRefusedError", "Challenge", "admin_proof", "check_token", "read_token", "check_prefix", "check_limit",
    "check_nonce", "clip", "ADMIN_PREFIX", "MIN_TOKEN_LENGTH", "MAX_TOKEN_LENGTH", "MIN_PREFIX", "PREFIX_SHOWN",
    "DEFAULT_LIMIT", "MAX_LIMIT", "RESOURCE_WIDTH", "NONCE_BYTES", "MAX_SEQUENCE", "COOKIE_CHARACTERS",
]

ADMIN_PREFIX = "landlord-admin."  #: an admin object's id: this and its landlord's id
MIN_TOKEN_LENGTH = 16  #: characters: a shorter token could be guessed
MAX_TOKEN_LENGTH = 4096
MIN_PREFIX = 8  #: characters of a cookie an eviction must name: 48 bits, so a typo hits no other lease
PREFIX_SHOWN = 8  #: characters of a cookie a listing shows: enough to evict, far from the capability
DEFAULT_LIMIT = 1000  #: leases listed unless told otherwise
MAX_LIMIT = 10_000  #: leases one listing may return (~1 MB on the wire)
RESOURCE_WIDTH = 60  #: characters of a resource's repr a listing shows
NONCE_BYTES = 32  #: random bytes of a connection's challenge: never drawn twice
MAX_SEQUENCE = 2**63 - 1  #: the highest sequence number a proof may carry
COOKIE_CHARACTERS = re.compile(r"[A-Za-z0-9_-]+\Z")  # secrets.token_urlsafe's alphabet: every cookie's
_PROOF_CONTEXT = "landlord-admin-proof/1"  # first in every proved message: a proof means nothing elsewhere
_HEX_NONCE = re.compile(r"[0-9a-f]{64}\Z")  # NONCE_BYTES, in hex
_HEX_PROOF = re.compile(r"[0-9a-f]{64}\Z")  # an HMAC-SHA256, in hex


class AdminRefusedError(Exception):
    """An admin call came without the admin token or an admin certificate: nothing was done."""

    # what crosses the wire is its module and name: the package's, as before the package was split
    __module__ = "landlord.admin"


register_exception(AdminRefusedError)  # here: both the server and the client import this module


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
    if not COOKIE_CHARACTERS.match(prefix):
        raise ValueError(f"a cookie prefix has only letters, digits, '_' and '-', got {prefix!r:.40}")
    return prefix


def check_limit(limit: object) -> int:
    """``limit`` checked as how many leases a listing may show: an int of 0 to ``MAX_LIMIT``.

    Raises:
        TypeError: not an int (a bool is not one).
        ValueError: out of range.
    """
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit is an int, got {type(limit).__name__}")
    if not 0 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit is 0 to {MAX_LIMIT}, got {limit}")
    return limit


def clip(text: str, width: int) -> str:
    """``text`` on one line (control characters shown as ``?``), cut to ``width`` with an ellipsis."""
    text = "".join(char if char.isprintable() else "?" for char in text[:width + 1])
    return text if len(text) <= width else text[:width - 1] + "…"


# -- the proof ----------------------------------------------------------------------------------------


def check_nonce(nonce: object) -> str:
    """``nonce`` checked as a challenge's nonce: :data:`NONCE_BYTES` bytes in lowercase hex.

    Raises:
        ValueError: anything else.
    """
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
        nonce: what :meth:`~landlord.admin.LandlordAdmin.challenge` gave on this connection.
        sequence: the call's number on this connection, above every one used on it before.
        object_id: the admin object's id.
        method: ``"list"`` or ``"evict"``.
        arguments: the call's positional arguments, as sent (``[limit]``, ``[cookie_prefix]``).

    Raises:
        TypeError, ValueError: a bad token, nonce or sequence number, or an argument JSON cannot write.
    """
    key = check_token(token).encode("utf-8")
    return _mac(key, _proved_message(object_id, check_nonce(nonce), _check_sequence(sequence), method, arguments))


class Challenge:
    """One connection's challenge (the server's side of the proof): its nonce, and the highest sequence
    number a proof has used on the connection. Holds no clock and no socket.

    Args:
        nonce: the nonce (:data:`NONCE_BYTES` bytes in lowercase hex); ``None`` draws a fresh one.

    Raises:
        ValueError: a malformed ``nonce``.
    """

    def __init__(self, nonce: str | None = None) -> None:
        self.nonce = secrets.token_hex(NONCE_BYTES) if nonce is None else check_nonce(nonce)
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

