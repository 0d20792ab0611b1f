"""The client of an admin object (``landlord.admin.client``): it asks each new connection for a challenge
and proves each call on it; its tables show each lease, and each holder and waiter of a name, on one
aligned line, whatever the server sent, and it refuses a malformed names listing.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from admin_fixtures import Served, served  # noqa: F401  (fixtures)

from landlord.admin import (
    AdminClient,
    AdminListing,
    AdminRow,
    NameHolder,
    NameListing,
    NameRow,
    NameWaiter,
    format_names,
    format_table,
)


def test_the_client_asks_a_new_connection_for_a_challenge(served: Served) -> None:
    served.rent("room 101")
    with served.client() as admin:
        assert admin.list().total == 1
        assert admin.list().total == 1  # the same connection, the next sequence number
        admin._proxy._pyroRelease()  # the connection is lost; the next call makes another
        assert admin.list().total == 1


def test_a_table_shows_one_aligned_line_per_lease_and_how_many_are_not_shown() -> None:
    rows = [AdminRow("AAAAAAAA", 25.0, "'room 101'", 0), AdminRow("BBBBBBBB", float("inf"), "'room 102'", 12)]
    table = format_table(AdminListing(rows, 3))
    assert table.splitlines() == ["COOKIE       LEFT  ATTACHED  RESOURCE",
                                  "AAAAAAAA   25.0 s         0  'room 101'",
                                  "BBBBBBBB  forever        12  'room 102'",
                                  "(2 of 3 leases shown; see --limit)"]
    assert format_table(AdminListing([], 0)) == "no leases\n"
    assert format_table(AdminListing([], 5)) == "no leases (5 held)\n"


def test_a_table_shows_what_a_server_sent_on_one_line_and_cut_short() -> None:
    # a server (or whoever answers in its place) may send anything: the operator's terminal sees one line each
    row = AdminRow("AAAAAAAA\x1b[2J-and-more", -1.5, "line one\nline two " + "x" * 500, 1)
    [_, line] = format_table(AdminListing([row], 1)).splitlines()
    assert line.startswith("AAAAAAA…  -1.5 s         1  line one?line two xxx") and line.endswith("…")
    assert "\x1b" not in line and len(line.split("  ")[-1]) == 60


def test_a_names_table_shows_holders_waiters_in_order_a_closed_name_and_what_is_not_shown() -> None:
    orders = NameRow("orders", 1, None, [NameHolder("AAAAAAAA", 7, 25.0, "worker-1", 5.0)], 1,
                     [NameWaiter("BBBBBBBB", 30.0, math.inf, "worker-2", 0.0),
                      NameWaiter("CCCCCCCC", 31.0, 2.5, None, 0.0)], 4)
    jobs = NameRow("jobs", 3, 4.25, [], 0, [], 0)
    assert format_names(NameListing([orders, jobs], 3)).splitlines() == [
        "NAME    LIMIT  ROLE      COOKIE    TOKEN    LEFT     WAIT  LOCK-DELAY  VALUE",
        "orders      1  holder    AAAAAAAA      7  25.0 s        -       5.0 s  worker-1",
        "               waiter 1  BBBBBBBB      -  30.0 s  forever       0.0 s  worker-2",
        "               waiter 2  CCCCCCCC      -  31.0 s    2.5 s       0.0 s",
        "jobs        3  closed    -             -   4.2 s        -           -  (a lock-delay)",
        "(orders: 1 of 1 holders and 2 of 4 waiters shown; see --limit)",
        "(2 of 3 names shown; see --limit)"]
    assert format_names(NameListing([], 0)) == ""


def test_a_names_table_shows_what_a_server_sent_on_one_line_and_cut_short() -> None:
    row = NameRow("n" * 100 + "\x1b[2J", 1, None, [NameHolder("AAAAAAAA\nmore", 1, 1.0, "v\n" * 100, 0.0)], 1, [], 0)
    [_, line] = format_names(NameListing([row], 1)).splitlines()
    assert "\x1b" not in line and "\n" not in line and line.startswith("n" * 39 + "…")
    assert len(line.split("  ")[-1]) == 60


@pytest.mark.parametrize("answer", [
    [], {"total": 1}, {"total": "1", "names": []}, {"total": 1, "names": ["orders"]},
    {"total": 1, "names": [{"name": "orders"}]},
    {"total": 1, "names": [{"name": "orders", "limit": 1, "closed_for": None, "holders": [{"cookie": "A"}],
                            "holders_total": 1, "waiters": [], "waiters_total": 0}]},
    {"total": 1, "names": [{"name": "orders", "limit": True, "closed_for": None, "holders": [],
                            "holders_total": 0, "waiters": [], "waiters_total": 0}]},
])
def test_a_malformed_names_listing_is_refused(answer: Any) -> None:
    class Answering:  # whoever answers in the admin object's place
        def names(self, *args: Any, **kwargs: Any) -> Any:
            return answer

        def _pyroRelease(self) -> None:
            pass

    with AdminClient("PYRO:landlord-admin.x@127.0.0.1:9") as admin:  # no token: no challenge asked
        admin._proxy = Answering()  # type: ignore[assignment]
        with pytest.raises((TypeError, ValueError), match="malformed"):
            admin.names()
