"""What a lease renewal service keeps of its renewal sets: :class:`RenewalSet` in memory and
:class:`SetStore` on disk.

A set's own lease is kept by the service's landlord (its :class:`~landlord.grantor.store.LeaseStore`);
this module keeps the rest: each set's listeners and the leases it renews, each with
its desired expiration (wall clock) and the most one renewal asks for. The store is
a pair of tables in the same SQLite file as the landlord's leases, written as each
change is made, so a service restarted on the file renews what it renewed before.

A member lease is stored as Pyro5's serpent makes it: any lease that crosses the
wire (a :class:`~landlord.LandlordLease`, or a class of the user's with converters
registered) can be stored and comes back as itself.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sqlite3
import threading
from typing import Any

from Pyro5.serializers import SerpentSerializer

from ..grantor.store import BUSY_TIMEOUT
from ..lease import Lease

__all__ = ["RenewalSet", "Member", "SetStore", "StoredSet"]

log = logging.getLogger("landlord.renewalsets")  # its name before it moved into renewalservice/

_SCHEMA = """
CREATE TABLE IF NOT EXISTS renewal_sets (
    set_id TEXT PRIMARY KEY,
    cookie TEXT NOT NULL,
    failure_listener TEXT,
    warning_listener TEXT,
    warn_before REAL NOT NULL DEFAULT 0,
    client TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS renewal_members (
    set_id TEXT NOT NULL,
    member INTEGER NOT NULL,
    lease BLOB NOT NULL,
    desired REAL NOT NULL,
    renew_duration REAL NOT NULL,
    PRIMARY KEY (set_id, member)
);
"""


@dataclasses.dataclass(slots=True)
class Member:
    """One lease a set renews: its key in the store, desired expiration (wall clock) and renewal ask."""

    key: int
    desired: float
    renew_duration: float


@dataclasses.dataclass(slots=True)
class RenewalSet:
    """A renewal set as the service keeps it.

    Attributes:
        set_id: its public name, given to listeners (the cookie of its lease is not: it is the capability).
        cookie: the cookie of the set's own lease.
        members: the leases it renews.
        failure_listener: the ``PYRO:`` URI told ``renewal_failed(set_id, lease, reason)``, if any.
        warning_listener: the ``PYRO:`` URI told ``expiration_warning(set_id, expiration)``, if any...
        warn_before: ...this many seconds before the set's lease ends.
        warned_for: the set lease's expiration last warned about (one warning per term).
        client: who made it (the host its ``create_set`` came from): its leases count against
            that client's limits (:class:`~landlord.renewalservice.service.RenewalLimits`).
    """

    set_id: str
    cookie: str
    members: dict[Lease, Member] = dataclasses.field(default_factory=dict)
    failure_listener: str | None = None
    warning_listener: str | None = None
    warn_before: float = 0.0
    warned_for: float | None = None
    client: str = ""


@dataclasses.dataclass(slots=True)
class StoredSet:
    """A set as :meth:`SetStore.sets` reads it back."""

    set: RenewalSet
    leases: list[tuple[Lease, Member]]


class SetStore:
    """Renewal sets in an SQLite file (the one the service's :class:`~landlord.grantor.store.LeaseStore` uses).

    Args:
        path: the database file.

    Raises:
        sqlite3.Error: the file cannot be opened as a database.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._serializer = SerpentSerializer()
        self._lock = threading.Lock()  # one connection, used from request and renewal threads
        self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, check_same_thread=False)
        self._next_key = 1
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            with self._db:
                self._db.executescript(_SCHEMA)
                self._add_client_column()
            row = self._db.execute("SELECT MAX(member) FROM renewal_members").fetchone()
            self._next_key = (row[0] or 0) + 1
        except BaseException:
            self._db.close()
            raise

    def __repr__(self) -> str:
        return f"<SetStore {self.path!r}>"

    def _add_client_column(self) -> None:
        """A file written before sets had owners gets the column; its sets are nobody's ('')."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(renewal_sets)")}
        if "client" not in columns:
            self._db.execute("ALTER TABLE renewal_sets ADD COLUMN client TEXT NOT NULL DEFAULT ''")

    def new_key(self) -> int:
        """A member key no stored member has."""
        with self._lock:
            key, self._next_key = self._next_key, self._next_key + 1
        return key

    def put_set(self, renewal_set: RenewalSet) -> None:
        """Write a set's own fields (not its members)."""
        with self._lock, self._db:
            self._db.execute("INSERT OR REPLACE INTO renewal_sets "
                             "(set_id, cookie, failure_listener, warning_listener, warn_before, client) "
                             "VALUES (?, ?, ?, ?, ?, ?)",
                             (renewal_set.set_id, renewal_set.cookie, renewal_set.failure_listener,
                              renewal_set.warning_listener, renewal_set.warn_before, renewal_set.client))

    def put_member(self, set_id: str, lease: Lease, member: Member) -> None:
        blob = self._serializer.dumps(lease)
        with self._lock, self._db:
            self._db.execute("INSERT OR REPLACE INTO renewal_members VALUES (?, ?, ?, ?, ?)",
                             (set_id, member.key, blob, member.desired, member.renew_duration))

    def delete_member(self, set_id: str, key: int) -> None:
        with self._lock, self._db:
            self._db.execute("DELETE FROM renewal_members WHERE set_id = ? AND member = ?", (set_id, key))

    def delete_set(self, set_id: str) -> None:
        """Forget a set and its members."""
        with self._lock, self._db:
            self._db.execute("DELETE FROM renewal_members WHERE set_id = ?", (set_id,))
            self._db.execute("DELETE FROM renewal_sets WHERE set_id = ?", (set_id,))

    def sets(self) -> list[StoredSet]:
        """Every stored set with its members. A member that cannot be read back (its class is
        unknown here, say) is logged and deleted; the rest of its set is kept."""
        with self._lock:
            rows = self._db.execute("SELECT set_id, cookie, failure_listener, warning_listener, warn_before, "
                                    "client FROM renewal_sets").fetchall()
            members = self._db.execute("SELECT set_id, member, lease, desired, renew_duration "
                                       "FROM renewal_members").fetchall()
        stored = {row[0]: StoredSet(RenewalSet(row[0], row[1], failure_listener=row[2], warning_listener=row[3],
                                               warn_before=row[4], client=row[5]), []) for row in rows}
        for set_id, key, blob, desired, renew_duration in members:
            lease = self._load(blob)
            if set_id not in stored or not isinstance(lease, Lease):
                log.warning("dropping stored member %d of renewal set %s: %s", key, set_id,
                            "its set is gone" if set_id not in stored else f"not a lease ({type(lease).__name__})")
                self.delete_member(set_id, key)
                continue
            stored[set_id].leases.append((lease, Member(key, desired, renew_duration)))
        return list(stored.values())

    def _load(self, blob: bytes) -> Any:
        try:
            return self._serializer.loads(blob)
        except Exception as exc:
            return exc

    def close(self) -> None:
        with self._lock:
            self._db.close()
