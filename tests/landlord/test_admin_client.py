"""The client of an admin object (``landlord.admin.client``): it asks each new connection for a challenge
and proves each call on it; its table shows each lease on one aligned line, whatever the server sent.
"""

from __future__ import annotations

from admin_fixtures import Served, served  # noqa: F401  (fixtures)

from landlord.admin import AdminListing, AdminRow, format_table


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
