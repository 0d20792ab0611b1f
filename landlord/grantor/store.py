"""Durable leases: :class:`LeaseStore`, a landlord's leases kept in SQLite.

A landlord given a store writes each grant, renewal, change and end of a lease
in the same step as it makes it (under its lease manager's lock, so the file
sees changes in the order the landlord made them). After a crash, even
``kill -9``, a landlord opened on the same store comes back with

- the same landlord id, so the leases its holders keep still equal its own;
- every lease whose term has not run out, with the same cookie, so a holder's
  next renewal simply succeeds (it never learns there was a restart);
- each lease's remaining time less the downtime: the store keeps expirations
  on the *wall* clock, the only one that goes on through a restart. A lease
  that ran out meanwhile comes back already expired and is freed, with its
  ``on_expire``, like any other;
- every lease that had ended but whose resources may not have been freed:
  a lease's row is deleted only after its ``on_expire``/``on_cancel`` has
  returned, and a cancelled or revoked lease is marked ended in its row
  before either runs, so it comes back ended, never live, and is freed again
  (see :class:`~landlord.LeaseManager`). A callback runs *at least once* per
  ended lease; it gets the cookie if it asks for it, to make a second call harmless.

The wall clock may be stepped while the landlord is down; a lease never comes
back with more time than it had when it was last written, so a clock stepped
backwards cannot make leases outlive their terms.

Durability: SQLite in WAL mode. With ``synchronous="NORMAL"`` (the default) a
committed change survives the process being killed; an operating-system crash
or power loss may lose the last few changes, never corrupt the file. Pass
``synchronous="FULL"`` to survive those too, at the price of an fsync per change.

Resources are written with Pyro5's serpent serializer, so anything that
crosses the wire (with the converters registered) can be stored; a landlord
decides what of a resource is written (see :meth:`landlord.Landlord.dump_resource`).
"""

from __future__ import annotations

import logging
import math
import os
import re
import sqlite3
import threading
from collections.abc import Iterable
from typing import Any, NamedTuple, Protocol

from Pyro5.serializers import SerpentSerializer

try:  # not on Windows: there, keeping one landlord per store is up to the operator
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = ["Store", "LeaseStore", "StoredLease", "StoreInUseError", "SYNCHRONOUS_MODES"]

log = logging.getLogger("landlord.store")  # its name before it moved

SYNCHRONOUS_MODES = ("NORMAL", "FULL")
BUSY_TIMEOUT = 10.0  # seconds to wait for another process's write to the same file
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # a store name is part of its lock file's name


class StoreInUseError(RuntimeError):
    """Another LeaseStore, in this process or another, has the same file and name open.

    Two landlords writing the same leases would each undo the other's
    changes, so a store admits one at a time. The hold ends when that store
    is closed or its process ends, even by ``kill -9``.
    """

_SCHEMA = """
CREATE TABLE IF NOT EXISTS landlords (
    name TEXT PRIMARY KEY,
    landlord_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS leases (
    name TEXT NOT NULL,
    cookie TEXT NOT NULL,
    expiration REAL NOT NULL,  -- wall clock; inf for FOREVER
    written REAL NOT NULL,     -- wall clock when the expiration was written
    resource BLOB NOT NULL,    -- serpent
    UNIQUE (name, cookie)
);
CREATE TABLE IF NOT EXISTS settings (
    name TEXT NOT NULL,
    key TEXT NOT NULL,
    value BLOB NOT NULL,       -- serpent
    PRIMARY KEY (name, key)
);
"""


class StoredLease(NamedTuple):
    """A lease as read back from a store."""

    cookie: str
    remaining: float  # seconds left now (negative: it ran out while the landlord was down)
    resource: Any


class Store(Protocol):
    """What a landlord and its lease manager need of a store: :class:`LeaseStore` (a file of
    SQLite), or :class:`landlord.replication.etcdstore.EtcdLeaseStore` (a replica group's leases in etcd).
    Expirations are wall-clock times; see :class:`LeaseStore` for what each method does."""

    def landlord_id(self) -> str | None: ...

    def claim(self, landlord_id: str) -> None: ...

    def leases(self, now: float) -> list[StoredLease]: ...

    def put(self, cookie: str, expiration: float, resource: Any, now: float) -> None: ...

    def renew(self, expirations: Iterable[tuple[str, float]], now: float) -> None: ...

    def delete(self, cookies: Iterable[str]) -> None: ...

    def __len__(self) -> int: ...

    def get_setting(self, key: str, default: Any = None) -> Any: ...

    def set_setting(self, key: str, value: Any) -> None: ...

    def close(self) -> None: ...


class LeaseStore:
    """The leases of one landlord, in an SQLite file that may be shared with others.

    Several landlords (of one process or several) can keep their leases in
    one file, each under its own ``name``; one name is open in one store at a
    time (an advisory lock on ``<path>.<name>.lock``, released when the
    store is closed or its process dies).

    Args:
        path: the database file (created if missing).
        name: which landlord's leases these are, within the file.
        synchronous: ``"NORMAL"`` (survives a killed process) or ``"FULL"``
            (survives an operating-system crash too); see the module docstring.

    Raises:
        TypeError: ``path`` or ``name`` of the wrong type.
        ValueError: a ``name`` other than 1 to 64 letters, digits, ``_``, ``.``
            or ``-``, or an unknown ``synchronous`` mode.
        sqlite3.Error: the file cannot be opened as a database.
        StoreInUseError: another store has this file and name open.
    """

    def __init__(self, path: str | os.PathLike[str], *, name: str = "landlord",
                 synchronous: str = "NORMAL") -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or path, got {type(path).__name__}")
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        if not _NAME.fullmatch(name):
            raise ValueError(f"name must be 1 to 64 letters, digits, '_', '.' or '-', got {name!r:.80}")
        if synchronous not in SYNCHRONOUS_MODES:
            raise ValueError(f"synchronous must be one of {', '.join(SYNCHRONOUS_MODES)}, got {synchronous!r}")
        self.path = os.fspath(path)
        self.name = name
        self._serializer = SerpentSerializer()
        self._lock = threading.Lock()  # one connection, used from the request and reaper threads
        self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, check_same_thread=False)
        self._hold: int | None = None
        try:
            self._hold = _hold_alone(f"{self.path}.{name}.lock", self)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            with self._db:
                self._db.executescript(_SCHEMA)
        except BaseException:
            self._db.close()
            _let_go(self._hold)
            raise

    def __repr__(self) -> str:
        return f"LeaseStore({self.path!r}, name={self.name!r})"

    # -- the landlord's identity ---------------------------------------------------

    def landlord_id(self) -> str | None:
        """The id of the landlord these leases belong to, or ``None`` for a new store."""
        with self._lock:
            row = self._db.execute("SELECT landlord_id FROM landlords WHERE name = ?", (self.name,)).fetchone()
        return row[0] if row else None

    def claim(self, landlord_id: str) -> None:
        """Record ``landlord_id`` as the owner of these leases.

        Raises:
            ValueError: the store already belongs to a landlord with another id.
        """
        with self._lock, self._db:
            row = self._db.execute("SELECT landlord_id FROM landlords WHERE name = ?", (self.name,)).fetchone()
            if row is None:
                self._db.execute("INSERT INTO landlords (name, landlord_id) VALUES (?, ?)", (self.name, landlord_id))
            elif row[0] != landlord_id:
                raise ValueError(f"store {self.path!r} ({self.name}) belongs to landlord {row[0]}, not {landlord_id}")

    # -- leases ------------------------------------------------------------------------

    def leases(self, now: float) -> list[StoredLease]:
        """Every stored lease, in the order they were first written, with its time left at wall time ``now``.

        A row whose resource cannot be read back (a damaged file) is logged
        and deleted: that lease cannot be served again.
        """
        with self._lock:
            rows = self._db.execute("SELECT cookie, expiration, written, resource FROM leases WHERE name = ? "
                                    "ORDER BY rowid", (self.name,)).fetchall()
        stored, unreadable = [], []
        for cookie, expiration, written, data in rows:
            try:
                resource = self._serializer.loads(data)
            except Exception:
                log.exception("%r: cannot read the resource of a stored lease; it is dropped", self)
                unreadable.append(cookie)
                continue
            if math.isinf(expiration):
                remaining = math.inf
            else:  # never more than it had when written: the wall clock may have been set back meanwhile
                remaining = min(expiration - now, expiration - written)
            stored.append(StoredLease(cookie, remaining, resource))
        if unreadable:
            self.delete(unreadable)
        return stored

    def put(self, cookie: str, expiration: float, resource: Any, now: float) -> None:
        """Write a lease (a new one, or a new resource for one already stored).

        Args:
            cookie: the lease's cookie.
            expiration: when it ends, on the wall clock (``inf`` for FOREVER).
            resource: what to store (serpent-serializable).
            now: the wall-clock time of the write.
        """
        data = self._serializer.dumps(resource)
        with self._lock, self._db:
            self._db.execute("INSERT INTO leases (name, cookie, expiration, written, resource) VALUES (?, ?, ?, ?, ?) "
                             "ON CONFLICT (name, cookie) DO UPDATE SET expiration = excluded.expiration, "
                             "written = excluded.written, resource = excluded.resource",
                             (self.name, cookie, expiration, now, data))

    def renew(self, expirations: Iterable[tuple[str, float]], now: float) -> None:
        """Write new expirations (wall clock) of stored leases, in one transaction."""
        with self._lock, self._db:
            self._db.executemany("UPDATE leases SET expiration = ?, written = ? WHERE name = ? AND cookie = ?",
                                 [(expiration, now, self.name, cookie) for cookie, expiration in expirations])

    def delete(self, cookies: Iterable[str]) -> None:
        """Forget leases that ended, in one transaction (unknown cookies are ignored)."""
        with self._lock, self._db:
            self._db.executemany("DELETE FROM leases WHERE name = ? AND cookie = ?",
                                 [(self.name, cookie) for cookie in cookies])

    def __len__(self) -> int:
        """How many leases are stored (ended ones included until they are deleted)."""
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM leases WHERE name = ?", (self.name,)).fetchone()[0])

    # -- a landlord's own settings -----------------------------------------------------

    def get_setting(self, key: str, default: Any = None) -> Any:
        """A value the landlord stored under ``key``, or ``default``."""
        with self._lock:
            row = self._db.execute("SELECT value FROM settings WHERE name = ? AND key = ?",
                                   (self.name, key)).fetchone()
        return self._serializer.loads(row[0]) if row else default

    def set_setting(self, key: str, value: Any) -> None:
        """Store ``value`` (serpent-serializable) under ``key``."""
        data = self._serializer.dumps(value)
        with self._lock, self._db:
            self._db.execute("INSERT INTO settings (name, key, value) VALUES (?, ?, ?) "
                             "ON CONFLICT (name, key) DO UPDATE SET value = excluded.value", (self.name, key, data))

    def close(self) -> None:
        """Close the file and let another store open it (idempotent); what was written stays."""
        with self._lock:
            self._db.close()
            _let_go(self._hold)
            self._hold = None


def _hold_alone(lock_path: str, store: LeaseStore) -> int | None:
    """Hold ``lock_path`` exclusively; the file descriptor holding it (``None`` where there is no flock).

    Raises:
        StoreInUseError: someone else holds it.
        OSError: the lock file cannot be made.
    """
    if fcntl is None:  # pragma: no cover
        return None
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StoreInUseError(f"{store!r} is open in another store (this process's or another's)") from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _let_go(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)  # closing the descriptor releases the flock
