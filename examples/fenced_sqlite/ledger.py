"""The resource of the fenced_sqlite example: a ledger of rows in SQLite, written only through a fence.

Each write carries the writer's fencing token (its ``Lock``'s ``token``). The check
and the write are one SQLite transaction: ``BEGIN IMMEDIATE`` takes the database's
write lock, one ``UPDATE`` raises the highest token accepted (a row of the
database itself) only if the token is at least that high, and the row is
inserted only if it did; else the transaction rolls back and the writer gets
:class:`landlord.StaleTokenError`, which crosses the wire as itself. So no write
with an older token lands after one with a newer, whoever checks and however
long a writer was paused between its own check and its write; and since the
highest token is in the database, the fence survives the ledger's restart
(kill -9 included: a commit is durable).

Run it from the repository root::

    python examples/fenced_sqlite/ledger.py --db /tmp/ledger.sqlite --port 0

``serve_object`` prints ``ledger at PYRO:ledger@... (guarded server)`` once it answers.
Remote methods: ``append(token, worker, text)`` (the row's id, or StaleTokenError),
``rows()``, ``highest()``. Its ``counts()`` (writes accepted, refused as stale) is what
``landlord.metrics.Metrics().count_fence(ledger, "ledger")`` would expose.
"""

from __future__ import annotations

import argparse
import sqlite3
import threading
from typing import Any

import Pyro5.api

import landlord
from landlord.fence import MAX_TOKEN
from landlord.serving import serve_object

SCHEMA = """
CREATE TABLE IF NOT EXISTS fence (name TEXT PRIMARY KEY, highest INTEGER NOT NULL);
INSERT OR IGNORE INTO fence (name, highest) VALUES ('ledger', 0);
CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, token INTEGER NOT NULL, worker TEXT NOT NULL,
                                 text TEXT NOT NULL);
"""


class Ledger:
    """Rows appended under a fencing token checked in the same transaction (see the module's docstring)."""

    def __init__(self, path: str) -> None:
        self.path = path
        with self._connect() as db:
            db.executescript(SCHEMA)
        self._lock = threading.Lock()
        self._accepted = self._refused = 0

    def _connect(self) -> sqlite3.Connection:
        # one connection per call: the server's workers are threads; autocommit, transactions by hand
        return sqlite3.connect(self.path, timeout=10, isolation_level=None)

    @Pyro5.api.expose
    def append(self, token: int, worker: str, text: str) -> int:
        if not isinstance(token, int) or isinstance(token, bool) or not 0 <= token <= MAX_TOKEN:
            raise TypeError("a fencing token is an int of 0 to 2**63 - 1")
        if not isinstance(worker, str) or not isinstance(text, str) or len(worker) + len(text) > 1000:
            raise TypeError("worker and text are short strs")
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")  # the write lock: nobody writes between this check and this write
            raised = db.execute("UPDATE fence SET highest = ? WHERE name = 'ledger' AND highest <= ?",
                                (token, token)).rowcount
            if raised == 0:
                (highest,) = db.execute("SELECT highest FROM fence WHERE name = 'ledger'").fetchone()
                db.execute("ROLLBACK")
                self._count(accepted=False)
                raise landlord.StaleTokenError(f"fencing token {token} is stale: {highest} was accepted",
                                               token, highest)
            row = db.execute("INSERT INTO rows (token, worker, text) VALUES (?, ?, ?)", (token, worker, text))
            db.execute("COMMIT")
            self._count(accepted=True)
            return int(row.lastrowid or 0)
        finally:
            db.close()

    @Pyro5.api.expose
    def rows(self) -> list[list[Any]]:
        db = self._connect()
        try:
            return [list(row) for row in db.execute("SELECT id, token, worker, text FROM rows ORDER BY id")]
        finally:
            db.close()

    @Pyro5.api.expose
    def highest(self) -> int:
        db = self._connect()
        try:
            return int(db.execute("SELECT highest FROM fence WHERE name = 'ledger'").fetchone()[0])
        finally:
            db.close()

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {"accepted": self._accepted, "refused": self._refused}

    def _count(self, *, accepted: bool) -> None:
        with self._lock:
            if accepted:
                self._accepted += 1
            else:
                self._refused += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="the SQLite file (made if missing)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    serve_object(Ledger(args.db), args.host, args.port, object_id="ledger", name="ledger")


if __name__ == "__main__":
    main()
