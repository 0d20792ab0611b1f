"""What a renewal service keeps of its sets on disk: the SetStore."""

from __future__ import annotations

import pathlib
import sqlite3

from landlord.renewalservice.sets import RenewalSet, SetStore

BEFORE_OWNERS = """
CREATE TABLE renewal_sets (
    set_id TEXT PRIMARY KEY,
    cookie TEXT NOT NULL,
    failure_listener TEXT,
    warning_listener TEXT,
    warn_before REAL NOT NULL DEFAULT 0
);
"""


def test_a_set_keeps_its_client(tmp_path: pathlib.Path) -> None:
    store = SetStore(tmp_path / "sets.sqlite")
    store.put_set(RenewalSet("s1", "cookie", client="10.0.0.7", warn_before=3.0))
    store.close()
    [kept] = SetStore(tmp_path / "sets.sqlite").sets()
    assert (kept.set.set_id, kept.set.client, kept.set.warn_before) == ("s1", "10.0.0.7", 3.0)


def test_a_file_written_before_sets_had_clients_is_read_and_its_sets_are_nobodys(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(BEFORE_OWNERS)
        db.execute("INSERT INTO renewal_sets VALUES ('old', 'cookie', NULL, NULL, 0)")
    db.close()
    store = SetStore(path)
    [old] = store.sets()
    assert (old.set.set_id, old.set.client) == ("old", "")
    store.put_set(RenewalSet("new", "cookie 2", client="10.0.0.8"))
    assert sorted((each.set.set_id, each.set.client) for each in store.sets()) == [("new", "10.0.0.8"), ("old", "")]
    store.close()
