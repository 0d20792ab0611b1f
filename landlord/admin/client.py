"""The client of a landlord's admin object: :class:`AdminClient` (the calls, each with a fresh proof of
the admin token), :func:`find_admin` (which admin object a daemon serves), and what comes back
(:class:`AdminRow`, :class:`AdminListing`, shown by :func:`format_table`).

It imports :mod:`landlord.admin.protocol` (the proof, the checks), the wire and the
transport's addresses, never the admin object's module (:mod:`landlord.admin.server`)
nor the grantor (the admin package's import-linter contracts say so).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import Pyro5.api

from ..transport.addresses import uri_host
from ..wire import checked_fields
from .protocol import (
    ADMIN_PREFIX,
    DEFAULT_LIMIT,
    PREFIX_SHOWN,
    RESOURCE_WIDTH,
    admin_proof,
    check_limit,
    check_nonce,
    check_prefix,
    check_token,
    clip,
)

__all__ = ["AdminClient", "AdminRow", "AdminListing", "find_admin", "format_table", "format_remaining",
           "DEFAULT_TIMEOUT"]

DEFAULT_TIMEOUT = 10.0  # seconds a call waits for the landlord


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


def find_admin(host: str, port: int, *, timeout: float = DEFAULT_TIMEOUT) -> str:
    """The object id of the one landlord admin object the daemon at ``host:port`` serves
    (asked of the daemon's own object, which lists what it serves).

    Raises:
        LookupError: it serves none, or several (the message names them).
        Pyro5.errors.CommunicationError: it cannot be reached.
    """
    with Pyro5.api.Proxy(f"PYRO:Pyro.Daemon@{uri_host(host)}:{port}") as daemon:
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
            self._nonce = check_nonce(nonce)
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
        limit = check_limit(limit)
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
    lines += [(clip(row.cookie, PREFIX_SHOWN), format_remaining(row.remaining), str(row.attached),
               clip(row.resource, RESOURCE_WIDTH)) for row in listing.rows]
    widths = [max(len(line[column]) for line in lines) for column in range(3)]
    text = "".join(f"{line[0]:<{widths[0]}}  {line[1]:>{widths[1]}}  {line[2]:>{widths[2]}}  {line[3]}"
                   .rstrip() + "\n" for line in lines)
    if listing.total > len(listing.rows):
        text += f"({len(listing.rows)} of {listing.total} leases shown; see --limit)\n"
    return text


def format_remaining(remaining: float) -> str:
    """Seconds left, as a listing shows them (``"25.0 s"``; ``"forever"``)."""
    return "forever" if math.isinf(remaining) and remaining > 0 else f"{remaining:.1f} s"
