"""The client of a landlord's admin object: :class:`AdminClient` (the calls, each with a fresh proof of
the admin token), :func:`find_admin` (which admin object a daemon serves), and what comes back
(:class:`AdminRow`, :class:`AdminListing`, shown by :func:`format_table`; the named leases'
:class:`NameRow`, :class:`NameListing`, shown by :func:`format_names`).

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

__all__ = ["AdminClient", "AdminRow", "AdminListing", "NameRow", "NameHolder", "NameWaiter", "NameListing",
           "listing_objects",
           "find_admin", "format_table", "format_names", "format_remaining", "DEFAULT_TIMEOUT", "NAME_WIDTH"]

DEFAULT_TIMEOUT = 10.0  #: seconds a call waits for the landlord
NAME_WIDTH = 40  # characters of a name the table shows (a name has up to 256)


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


class NameHolder(NamedTuple):
    """A holder of a name, as an admin listing shows it."""

    cookie: str  # the first PREFIX_SHOWN characters of its lease's cookie
    token: int  # its fencing token
    remaining: float  # seconds its lease has left
    value: str | None  # what it shows others (an election's candidate), cut to RESOURCE_WIDTH
    lock_delay: float  # seconds the name stays closed if its lease expires (or is evicted)


class NameWaiter(NamedTuple):
    """A waiter for a name, as an admin listing shows it."""

    cookie: str
    remaining: float  # seconds its lease has left (it waits through its lease)
    wait: float  # seconds its wait has left (inf: as long as its lease lasts)
    value: str | None
    lock_delay: float


class NameRow(NamedTuple):
    """A name held, waited for, or closed by a lock-delay."""

    name: str
    limit: int  # holders at once: 1 for a lock
    closed_for: float | None  # seconds a lock-delay keeps it closed, or None
    holders: list[NameHolder]  # in the order they were granted
    holders_total: int  # how many in all (more than shown when the listing was cut)
    waiters: list[NameWaiter]  # in the order they will be granted
    waiters_total: int


class NameListing(NamedTuple):
    """The names, by name, and how many there are in all."""

    names: list[NameRow]
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

    def names(self, limit: int = DEFAULT_LIMIT) -> NameListing:
        """The names held, waited for or closed, by name, in at most ``limit`` rows (a name, a holder
        and a waiter are a row each), and how many names in all.

        Raises:
            TypeError, ValueError: ``limit`` not an int of 0 to ``MAX_LIMIT`` (checked before anything
                is sent), or a malformed answer.
            AttributeError: the admin object lists no names (a landlord of an earlier release).
            AdminRefusedError: as :meth:`LandlordAdmin.names`.
            Pyro5.errors.CommunicationError: the landlord cannot be reached.
        """
        names, total = self._listing("names", limit, "names listing", "names")
        return NameListing([_name_row(row) for row in names], total)

    def list(self, limit: int = DEFAULT_LIMIT) -> AdminListing:
        """The first ``limit`` leases, earliest expiration first, and the total held.

        Raises:
            TypeError, ValueError: ``limit`` not an int of 0 to ``MAX_LIMIT`` (checked before anything
                is sent), or a malformed answer.
            AdminRefusedError: as :meth:`LandlordAdmin.list`.
            Pyro5.errors.CommunicationError: the landlord cannot be reached.
        """
        leases, total = self._listing("list", limit, "admin listing", "leases")
        return AdminListing([_admin_row(row) for row in leases], total)

    def _listing(self, method: str, limit: int, what: str, rows: str) -> tuple[Sequence[Any], int]:
        """Call the listing ``method`` with ``limit`` (checked first); its ``rows`` and its total."""
        limit = check_limit(limit)
        answer = getattr(self._proxy, method)(limit, **self._credentials(method, [limit]))
        if not isinstance(answer, dict):
            raise TypeError(f"malformed {what}: {type(answer).__name__}")
        listed, total = checked_fields(answer, what, {rows: list, "total": int})
        return listed, total


def _name_row(data: object) -> NameRow:
    if not isinstance(data, dict):
        raise TypeError(f"malformed name row: {type(data).__name__}")
    name, limit, closed_for, holders, holders_total, waiters, waiters_total = checked_fields(
        data, "name row", {"name": str, "limit": int, "closed_for": (int, float, type(None)), "holders": list,
                           "holders_total": int, "waiters": list, "waiters_total": int})
    return NameRow(name, limit, None if closed_for is None else float(closed_for),
                   [NameHolder(*_fields(holder, "holder", {"cookie": str, "token": int, "remaining": (int, float),
                                                          "value": (str, type(None)), "lock_delay": (int, float)}))
                    for holder in holders], holders_total,
                   [NameWaiter(*_fields(waiter, "waiter", {"cookie": str, "remaining": (int, float),
                                                          "wait": (int, float), "value": (str, type(None)),
                                                          "lock_delay": (int, float)}))
                    for waiter in waiters], waiters_total)


def _fields(data: object, what: str, fields: dict[str, type | tuple[type, ...]]) -> list[Any]:
    if not isinstance(data, dict):
        raise TypeError(f"malformed {what}: {type(data).__name__}")
    return [float(value) if isinstance(value, int) and fields[name] == (int, float) else value
            for name, value in zip(fields, checked_fields(data, what, fields))]


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


def _finite(seconds: float | None) -> float | None:
    """Seconds as JSON holds them: ``None`` (null) for none or for ever."""
    return seconds if seconds is not None and math.isfinite(seconds) else None


def listing_objects(leases: AdminListing, names: NameListing | None = None) -> list[dict[str, Any]]:
    """The listing as ``-o json`` writes it, one object per lease then one per name.

    A lease: ``{"kind": "lease", "cookie", "seconds_left", "attached", "resource"}``; a name:
    ``{"kind": "name", "name", "limit", "closed_for", "holders", "holders_total", "waiters",
    "waiters_total"}``, each holder ``{"cookie", "token", "seconds_left", "lock_delay", "value"}`` and
    each waiter ``{"cookie", "seconds_left", "wait_left", "lock_delay", "value"}``. Seconds are numbers;
    null for none, or for a wait as long as the lease (``closed_for``, ``wait_left``)."""
    objects: list[dict[str, Any]] = [
        {"kind": "lease", "cookie": row.cookie, "seconds_left": row.remaining, "attached": row.attached,
         "resource": row.resource} for row in leases.rows]
    for name in names.names if names is not None else ():
        objects.append({
            "kind": "name", "name": name.name, "limit": name.limit, "closed_for": _finite(name.closed_for),
            "holders": [{"cookie": h.cookie, "token": h.token, "seconds_left": h.remaining,
                         "lock_delay": h.lock_delay, "value": h.value} for h in name.holders],
            "holders_total": name.holders_total,
            "waiters": [{"cookie": w.cookie, "seconds_left": w.remaining, "wait_left": _finite(w.wait),
                         "lock_delay": w.lock_delay, "value": w.value} for w in name.waiters],
            "waiters_total": name.waiters_total})
    return objects


def format_names(listing: NameListing) -> str:
    """The names as an aligned text table: a line per holder and per waiter (in order), a line for a
    name closed by a lock-delay, and lines saying what is not shown (if anything). Empty when there
    are no names."""
    if not listing.total:
        return ""
    lines = [("NAME", "LIMIT", "ROLE", "COOKIE", "TOKEN", "LEFT", "WAIT", "LOCK-DELAY", "VALUE")]
    notes = []
    for row in listing.names:
        name, limit = clip(row.name, NAME_WIDTH), str(row.limit)
        entries = [("holder", holder.cookie, str(holder.token), format_remaining(holder.remaining), "-",
                    format_remaining(holder.lock_delay), holder.value) for holder in row.holders]
        entries += [(f"waiter {at}", waiter.cookie, "-", format_remaining(waiter.remaining),
                     format_remaining(waiter.wait), format_remaining(waiter.lock_delay), waiter.value)
                    for at, waiter in enumerate(row.waiters, start=1)]
        if row.closed_for is not None:
            entries.append(("closed", "-", "-", format_remaining(row.closed_for), "-", "-", "(a lock-delay)"))
        for at, (role, cookie, token, left, wait, delay, value) in enumerate(entries or [("-",) * 7]):
            lines.append((name if at == 0 else "", limit if at == 0 else "", role, clip(cookie, PREFIX_SHOWN),
                          token, left, wait, delay, clip(value or "", RESOURCE_WIDTH)))
        if len(row.holders) < row.holders_total or len(row.waiters) < row.waiters_total:
            notes.append(f"({clip(row.name, NAME_WIDTH)}: {len(row.holders)} of {row.holders_total} holders and "
                         f"{len(row.waiters)} of {row.waiters_total} waiters shown; see --limit)\n")
    widths = [max(len(line[column]) for line in lines) for column in range(8)]
    right = (False, True, False, False, True, True, True, True)
    text = "".join("  ".join(cell.rjust(width) if at_right else cell.ljust(width)
                             for cell, width, at_right in zip(line, widths, right)).rstrip()
                   + ("  " + line[8] if line[8] else "") + "\n" for line in lines)
    if listing.total > len(listing.names):
        notes.append(f"({len(listing.names)} of {listing.total} names shown; see --limit)\n")
    return text + "".join(notes)


def format_remaining(remaining: float) -> str:
    """Seconds left, as a listing shows them (``"25.0 s"``; ``"forever"``)."""
    return "forever" if math.isinf(remaining) and remaining > 0 else f"{remaining:.1f} s"
