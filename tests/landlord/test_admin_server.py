"""The admin object of a landlord (``landlord.admin.server``), called through its client over a real Pyro5
daemon in this process: a listing with a proof of the admin token shows every lease by a prefix of its
cookie (never the whole), a wrong proof, no proof or the token itself is refused (and nothing is listed
or ended), a proof is good on its own connection only, whatever the server type, an eviction revokes
the lease (its holder's next renewal is denied with the reason), bad prefixes change nothing, a
replicated landlord is administered on its leader, and two-way TLS lets in an admin certificate and no
other.
"""

from __future__ import annotations

import math
import queue
import threading
from typing import Any

import Pyro5.api
import pytest
import serpent
from admin_fixtures import (  # noqa: F401  (fixtures)
    NONCE,
    TERM,
    TOKEN,
    WRONG,
    Certs,
    Rooms,
    Served,
    admin_uri_of,
    certs,
    given_cookies,
    proved,
    served,
    tls_served,
)
from etcd_fixtures import ReplicaGroup, cluster, etcd_cluster  # noqa: F401  (fixtures)

import landlord
from landlord import (
    Landlord,
    LeaseDeniedError,
    LeaseDurationPolicy,
    NotLeaderError,
    ReplicatedLandlord,
    UnknownLeaseError,
    tls_settings,
)
from landlord.admin import (
    ADMIN_PREFIX,
    MAX_LIMIT,
    AdminClient,
    AdminListing,
    AdminRefusedError,
    AdminRow,
    LandlordAdmin,
    NameHolder,
    NameListing,
    NameRow,
    NameWaiter,
    admin_object_id,
    admin_proof,
    format_names,
    format_table,
    register_admin,
)
from landlord.testing import NamesHeard, ServingDaemon

# -- listing --------------------------------------------------------------------------------------


def test_a_listing_with_the_token_shows_every_lease_by_a_cookie_prefix(served: Served) -> None:
    first = served.rent("room 101", 30)
    second = served.rent("room 102", 60)
    served.rooms.attach(second.cookie, "key 7")
    served.rooms.attach(second.cookie, "key 8")
    served.clock.advance(5)
    with served.client() as admin:
        listing = admin.list()
    assert listing == AdminListing([AdminRow(first.cookie[:8], 25.0, "'room 101'", 0),
                                    AdminRow(second.cookie[:8], 55.0, "'room 102'", 2)], 2)
    with served.client() as admin:
        assert admin.list(1) == AdminListing(listing.rows[:1], 2)
        assert admin.list(0) == AdminListing([], 2)
    table = format_table(listing)
    assert table.splitlines()[0].split() == ["COOKIE", "LEFT", "ATTACHED", "RESOURCE"]
    assert f"{first.cookie[:8]}  25.0 s         0  'room 101'" in table
    assert format_table(AdminListing(listing.rows[:1], 2)).endswith("(1 of 2 leases shown; see --limit)\n")


def test_a_listing_never_carries_a_whole_cookie(served: Served) -> None:
    leases = [served.rent(f"room {number}") for number in range(5)]
    with served.raw() as proxy:
        answer = proved(proxy, "list", 10)
    sent = serpent.dumps(answer).decode()  # what crossed the wire, as it crossed
    assert len(answer["leases"]) == 5
    for lease in leases:
        assert lease.cookie[:8] in sent and lease.cookie[:9] not in sent


def test_a_long_or_strange_resource_is_shown_short_on_one_line(served: Served) -> None:
    class Loud:
        def __repr__(self) -> str:
            return "line one\nline two " + "x" * 500

    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    for term, resource in enumerate(("y" * 500, Loud(), Broken(), {"deep": [[[[["nest"]]]]]}), start=100):
        served.rooms.new_lease(resource, term)  # listed in this order
    with served.client() as admin:
        shown = [row.resource for row in admin.list().rows]
    assert all(len(text) <= 60 and "\n" not in text for text in shown)
    assert shown[0].startswith("'yyyy") and "..." in shown[0]
    assert shown[1].startswith("line one?line two xxx")
    assert shown[2].startswith("<Broken ")  # its repr failed: reprlib names it
    assert shown[3] == "{'deep': [[[...]]]}"


@pytest.mark.parametrize("limit", [-1, MAX_LIMIT + 1, 10**100])
def test_a_limit_out_of_range_is_refused_and_the_server_goes_on(served: Served, limit: int) -> None:
    served.rent("room 101")
    with served.client() as admin:
        with pytest.raises(ValueError, match=f"limit is 0 to {MAX_LIMIT}"):
            admin.list(limit)
        assert len(admin.list().rows) == 1


@pytest.mark.parametrize("limit", [True, "5", 1.5, None, [1]])
def test_a_limit_of_another_type_is_refused(served: Served, limit: Any) -> None:
    with served.raw() as proxy:
        with pytest.raises(TypeError, match="limit is an int"):
            proved(proxy, "list", limit)  # by the admin object, for a caller proving the token
        assert proved(proxy, "list", 10) == {"total": 0, "leases": []}
    with served.client() as admin, pytest.raises(TypeError, match="limit is an int"):
        admin.list(limit)  # by the client, before it sends anything


# -- refusals ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("token", [None, TOKEN, WRONG, TOKEN[:-1], TOKEN + "x", "", 12345, ["x"], "é" * 30,
                                   "\ud800" * 20])
def test_a_token_sent_itself_lists_and_evicts_nothing(served: Served, token: Any) -> None:
    # over a connection the token itself is refused, the right one too: it crossed the wire in clear
    leases = [served.rent("room 101"), served.rent("room 102")]
    with served.raw() as proxy:
        with pytest.raises(AdminRefusedError, match=r"list refused \(.*\): this needs a proof of the landlord's "
                                                    r"admin token$"):
            proxy.list(10, token=token)
        with pytest.raises(AdminRefusedError, match="evict refused"):
            proxy.evict(leases[0].cookie[:8], token=token)
        with pytest.raises(AdminRefusedError):  # refused before its arguments are looked at
            proxy.evict(None, token=token)
    served.unchanged(leases)


@pytest.mark.parametrize("token", [WRONG, TOKEN[:-1], TOKEN + "x", "é" * 30])
def test_a_proof_of_a_wrong_token_lists_and_evicts_nothing(served: Served, token: str) -> None:
    leases = [served.rent("room 101"), served.rent("room 102")]
    with served.client(token) as admin:
        with pytest.raises(AdminRefusedError, match=r"list refused \(a wrong proof: not made with the admin token"):
            admin.list()
        with pytest.raises(AdminRefusedError, match="evict refused"):
            admin.evict(leases[0].cookie[:8])
    served.unchanged(leases)


def test_a_refusal_crosses_the_wire_as_itself_and_is_logged(served: Served,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    with served.client(WRONG) as admin, pytest.raises(AdminRefusedError) as refused:
        admin.list()
    assert type(refused.value) is AdminRefusedError
    assert TOKEN not in str(refused.value) and WRONG not in str(refused.value)
    assert any("refused an admin call (list) from 127.0.0.1:" in record.getMessage()
               and "a wrong proof" in record.getMessage() for record in caplog.records)


def test_called_in_process_without_the_token_it_is_refused(served: Served) -> None:
    admin = LandlordAdmin(served.rooms, token=TOKEN, admin_names=["ops-admin"])  # no TLS peer here
    served.rooms.new_lease("room 101", 30)
    with pytest.raises(AdminRefusedError, match="or an admin certificate"):
        admin.list()
    assert admin.list(token=TOKEN)["total"] == 1


def test_an_admin_object_checks_its_options() -> None:
    rooms = Rooms()
    try:
        with pytest.raises(ValueError, match="16 to 4096 characters, got 15"):
            LandlordAdmin(rooms, token="x" * 15)
        with pytest.raises(ValueError, match="no whitespace"):
            LandlordAdmin(rooms, token=" " + TOKEN)
        with pytest.raises(TypeError, match="is a str"):
            LandlordAdmin(rooms, token=b"x" * 20)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="a token or admin_names"):
            LandlordAdmin(rooms)
        with pytest.raises(TypeError, match="not one str"):
            LandlordAdmin(rooms, admin_names="ops-admin")
        with pytest.raises(ValueError, match="non-empty strs"):
            LandlordAdmin(rooms, admin_names=["ops-admin", ""])
        with pytest.raises(TypeError, match="expected a Landlord"):
            LandlordAdmin(object(), token=TOKEN)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="16 to 4096 characters, got 5"):
            AdminClient(f"PYRO:{ADMIN_PREFIX}x@127.0.0.1:9", token="short")  # a client too: before it connects
        admin = LandlordAdmin(rooms, token=TOKEN, admin_names=["ops-admin"])
        assert TOKEN not in repr(admin) and "ops-admin" in repr(admin)
        assert admin.object_id == admin_object_id(rooms) == ADMIN_PREFIX + rooms.landlord_id
    finally:
        rooms.close()


# -- challenges over real connections (in this process) ----------------------------------------------


def test_a_proof_is_good_on_its_own_connection_only(served: Served) -> None:
    lease = served.rent("room 101")
    with served.raw() as first, served.raw() as second:
        nonce = first.challenge()
        proof = admin_proof(TOKEN, nonce, 1, served.admin_id, "list", [10])
        with pytest.raises(AdminRefusedError, match=r"a proof without a challenge on this connection"):
            second.list(10, sequence=1, proof=proof)
        assert second.challenge() != nonce
        with pytest.raises(AdminRefusedError, match=r"a wrong proof: .*replayed from another connection"):
            second.list(10, sequence=1, proof=proof)
        assert first.list(10, sequence=1, proof=proof)["total"] == 1
        with pytest.raises(AdminRefusedError, match="a replayed proof: sequence number 1 is used up"):
            first.list(10, sequence=1, proof=proof)
        with pytest.raises(AdminRefusedError, match="a wrong proof"):  # the proof of a listing evicts nothing
            first.evict(lease.cookie[:8], sequence=2, proof=proof)
        first.challenge()  # a new challenge voids the connection's proofs
        with pytest.raises(AdminRefusedError, match="a wrong proof"):
            first.list(10, sequence=2, proof=admin_proof(TOKEN, nonce, 2, served.admin_id, "list", [10]))
    served.unchanged([lease])


@pytest.mark.parametrize("server_type", landlord.serving.SERVER_TYPES)
def test_every_server_type_keeps_a_challenge_per_connection(server_type: str) -> None:
    # the challenge lives on Pyro5's object for the connection, which each server makes its own way
    rooms = Rooms(policy=LeaseDurationPolicy(maximum=600), reaper="lazy")
    admin = LandlordAdmin(rooms, token=TOKEN)
    stop, uris = threading.Event(), queue.SimpleQueue[str]()
    thread = threading.Thread(target=landlord.serve_landlord, args=(rooms, "127.0.0.1", 0), daemon=True,
                              kwargs=dict(server_type=server_type, admin=admin, stop=stop, ready=uris.put,
                                          announce=False))
    thread.start()
    try:
        admin_uri = admin_uri_of(uris.get(timeout=10))
        rooms.new_lease("room 101", 30)
        with Pyro5.api.Proxy(admin_uri) as first, Pyro5.api.Proxy(admin_uri) as second:
            proof = admin_proof(TOKEN, first.challenge(), 1, admin.object_id, "list", [10])
            second.challenge()
            with pytest.raises(AdminRefusedError, match="replayed from another connection"):
                second.list(10, sequence=1, proof=proof)
            assert first.list(10, sequence=1, proof=proof)["total"] == 1
        with AdminClient(admin_uri, token=TOKEN) as client:
            assert client.list().total == client.list().total == 1
    finally:
        stop.set()
        thread.join(15)
        rooms.close()
    assert not thread.is_alive()


def test_the_right_token_sent_itself_is_refused_and_reported_exposed(served: Served,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    with served.raw() as proxy, pytest.raises(AdminRefusedError, match="the admin token was sent itself"):
        proxy.list(10, token=TOKEN)
    assert any("sent the admin token itself" in record.getMessage() and "change the token" in record.getMessage()
               for record in caplog.records)
    assert TOKEN not in caplog.text


def test_an_admin_object_without_a_token_refuses_proofs(daemon: ServingDaemon) -> None:
    rooms = Rooms()
    try:
        uri = register_admin(daemon.daemon, rooms, admin_names=["ops-admin"])
        with Pyro5.api.Proxy(uri) as proxy:
            with pytest.raises(AdminRefusedError, match="this admin object has no admin token"):
                proved(proxy, "list", 10)
    finally:
        rooms.close()


def test_in_this_process_there_is_no_challenge(served: Served) -> None:
    admin = LandlordAdmin(served.rooms, token=TOKEN)
    with pytest.raises(AdminRefusedError, match="a challenge is for callers over a connection"):
        admin.challenge()
    with pytest.raises(AdminRefusedError, match="a proof without a challenge"):
        admin.list(10, sequence=1, proof=admin_proof(TOKEN, NONCE, 1, admin.object_id, "list", [10]))
    assert admin.list(10, token=TOKEN)["total"] == 0


# -- eviction -------------------------------------------------------------------------------------


def test_an_eviction_revokes_the_lease(served: Served) -> None:
    evicted, kept = served.rent("room 101"), served.rent("room 102")
    served.rooms.attach(evicted.cookie, "key 7")
    with served.client() as admin:
        row = admin.evict(evicted.cookie[:10])
        assert row == AdminRow(evicted.cookie[:8], TERM, "'room 101'", 1)
        assert [row.cookie for row in admin.list().rows] == [kept.cookie[:8]]
    assert served.expired.wait_for(2) == ["room 101", "key 7"]  # the lease's resources, freed as an end
    assert served.cancelled.items == []
    with pytest.raises(LeaseDeniedError, match="revoked by the landlord: evicted by an operator"):
        evicted.renew(TERM)  # its holder hears at its next renewal
    assert kept.renew(TERM) == TERM
    with served.client() as admin, pytest.raises(UnknownLeaseError, match="no lease's cookie starts with"):
        admin.evict(evicted.cookie[:8])  # once only


def test_an_ambiguous_short_or_unknown_prefix_changes_nothing(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    given_cookies(monkeypatch, "AAAAAAAA1xxxxxxxxxxxxx", "AAAAAAAA2xxxxxxxxxxxxx", "BBBBBBBB3xxxxxxxxxxxxx")
    leases = [served.rent(f"room {number}") for number in range(3)]
    with served.client() as admin:
        with pytest.raises(ValueError, match="2 leases' cookies start with 'AAAAAAAA': give more of the cookie"):
            admin.evict("AAAAAAAA")
        with pytest.raises(UnknownLeaseError, match="no lease's cookie starts with 'CCCCCCCC'"):
            admin.evict("CCCCCCCC")
        with pytest.raises(ValueError, match="8 to 256 characters, got 7"):
            admin.evict("BBBBBBB")  # the one lease it would name, but too short a prefix to be sure
        with pytest.raises(ValueError, match="8 to 256 characters, got 257"):
            admin.evict("A" * 257)
        for malformed in ("AAAAAAA*", "AAAAAAAA ", "AAAAAAAA\n", "AAAAAAAAé"):
            with pytest.raises(ValueError, match="only letters, digits"):
                admin.evict(malformed)
        for wrong_type in (12345678, None, ["AAAAAAAA"], b"AAAAAAAA"):
            with pytest.raises(TypeError, match="a cookie prefix is a str"):
                admin.evict(wrong_type)  # type: ignore[arg-type]
    served.unchanged(leases)
    with served.client() as admin:
        assert admin.evict("AAAAAAAA2").cookie == "AAAAAAAA"  # more of it names one
    assert served.expired.wait_for(1) == ["room 1"]
    assert len(served.rooms) == 2


# -- named leases ---------------------------------------------------------------------------------


def test_the_names_show_holders_with_their_tokens_and_waiters_in_order(served: Served) -> None:
    rooms = served.rooms
    holder, token = rooms.acquire("orders", 30, value="worker-1", lock_delay=5.0)
    first, _ = rooms.acquire("orders", 40, wait=landlord.FOREVER, value="worker-2")
    second, _ = rooms.acquire("orders", 50, wait=20.0, value="w" * 200)
    places = [rooms.acquire("pool", 60, limit=3)[0] for _ in range(2)]
    served.clock.advance(5)
    with served.client() as admin:
        listing = admin.names()
    assert listing == NameListing([
        NameRow("orders", 1, None, [NameHolder(holder.cookie[:8], token, 25.0, "worker-1", 5.0)], 1,
                [NameWaiter(first.cookie[:8], 35.0, math.inf, "worker-2", 0.0),
                 NameWaiter(second.cookie[:8], 45.0, 15.0, "w" * 59 + "…", 0.0)], 2),
        NameRow("pool", 3, None, [NameHolder(place.cookie[:8], token + at, 55.0, None, 0.0)
                                  for at, place in enumerate(places, start=1)], 2, [], 0)], 2)
    with served.client() as admin:  # a name and each holder and waiter are a row: the limit counts them all
        assert admin.names(3) == NameListing([listing.names[0]._replace(waiters=listing.names[0].waiters[:1])], 2)
        assert admin.names(5).names[1] == listing.names[1]._replace(holders=[])
        assert admin.names(0) == NameListing([], 2)
        rows = {row.cookie: row.resource for row in admin.list().rows}  # and each is a lease, shown by its name
    assert rows[holder.cookie[:8]] == f"name 'orders' (token {token})"
    assert rows[first.cookie[:8]] == "name 'orders' (waiting)"
    table = format_names(listing).splitlines()
    assert table[0].split() == ["NAME", "LIMIT", "ROLE", "COOKIE", "TOKEN", "LEFT", "WAIT", "LOCK-DELAY", "VALUE"]
    assert table[1].split() == ["orders", "1", "holder", holder.cookie[:8], str(token), "25.0", "s", "-", "5.0", "s",
                                "worker-1"]
    assert table[2].split() == ["waiter", "1", first.cookie[:8], "-", "35.0", "s", "forever", "0.0", "s", "worker-2"]
    assert table[4].split()[:3] == ["pool", "3", "holder"]
    assert format_names(NameListing(listing.names[:1], 2)).endswith("(1 of 2 names shown; see --limit)\n")
    assert format_names(NameListing([], 0)) == ""


def test_evicting_a_holder_tells_it_at_once_and_its_name_goes_on_after_its_lock_delay(served: Served) -> None:
    heard = NamesHeard()
    holder, token = served.rooms.acquire("orders", 30, lock_delay=5.0, listener=heard)
    waiter, _ = served.rooms.acquire("orders", 30, wait=landlord.FOREVER, listener=heard)
    with served.client() as admin:
        row = admin.evict(holder.cookie[:8])
        assert row.resource == f"name 'orders' (token {token})"
        [orders] = admin.names().names
    assert heard.told.wait_for(1) == [("revoked", holder.cookie, "evicted by an operator")]  # at once
    assert (orders.holders, [w.cookie for w in orders.waiters], orders.closed_for) == ([], [waiter.cookie[:8]], 5.0)
    assert format_names(NameListing([orders], 1)).splitlines()[-1].split()[:3] == ["closed", "-", "-"]
    served.clock.advance(5)  # the evicted holder may still be acting until its lock-delay has passed
    assert heard.told.wait_for(2)[1] == ("granted", waiter.cookie, token + 1)
    with served.client() as admin:
        [orders] = admin.names().names
    assert [(h.cookie, h.token) for h in orders.holders] == [(waiter.cookie[:8], token + 1)]


def test_the_largest_names_listing_stays_bounded(served: Served) -> None:
    # the longest names and values there are, a holder each: MAX_LIMIT rows is all one listing carries
    for number in range(MAX_LIMIT // 2 + 10):
        served.rooms.acquire(f"{number:05d}" + "n" * 251, 600, value="v" * 256, lock_delay=60.0)
    with served.raw() as proxy:
        answer = proved(proxy, "names", MAX_LIMIT)
    assert answer["total"] == MAX_LIMIT // 2 + 10 and len(answer["names"]) == MAX_LIMIT // 2
    assert len(serpent.dumps(answer)) < 4 * 2**20  # far below the server's 16 MiB cap on a message


def test_the_names_are_refused_without_a_proof_of_the_token(served: Served) -> None:
    served.rooms.acquire("orders", 30)
    with served.raw() as proxy:
        with pytest.raises(AdminRefusedError):
            proxy.names(10)
        with pytest.raises(AdminRefusedError):
            proved(proxy, "names", 10, token=WRONG)
        with pytest.raises(TypeError, match="limit is an int"):
            proved(proxy, "names", "10", sequence=2)
    with served.client() as admin:
        assert admin.names().total == 1


def test_a_replicated_landlord_is_administered_on_its_leader(cluster: Any) -> None:
    group = ReplicaGroup(cluster, lambda client, name, uris: ReplicatedLandlord(
        client, group=name, replicas=uris, policy=LeaseDurationPolicy(maximum=60)), size=2)
    admins = [register_admin(daemon.daemon, replica, token=TOKEN)
              for daemon, replica in zip(group.daemons, group.replicas)]
    assert admins[0].startswith(f"PYRO:{ADMIN_PREFIX}{group.name}@")  # the group's name, on every replica
    group.start()
    try:
        leader = group.leader()
        [follower] = group.followers(leader)
        evicted, kept = leader.new_lease("room 101", 30.0), leader.new_lease("room 102", 30.0)
        leading, following = (admins[group.replicas.index(replica)] for replica in (leader, follower))
        with AdminClient(following, token=TOKEN) as admin:
            with pytest.raises(NotLeaderError) as not_leader:
                admin.list()
            assert not_leader.value.leader == leader.uri
            with pytest.raises(NotLeaderError):
                admin.evict(evicted.cookie[:8])
        with AdminClient(leading, token=TOKEN) as admin:
            assert {row.cookie for row in admin.list().rows} == {evicted.cookie[:8], kept.cookie[:8]}
            assert admin.evict(evicted.cookie[:8]).resource == "'room 101'"
            assert [row.cookie for row in admin.list().rows] == [kept.cookie[:8]]
        with pytest.raises(LeaseDeniedError, match="evicted by an operator"):
            evicted.renew(30.0)
        assert kept.renew(30.0) == 30.0
    finally:
        group.close()


# -- two-way TLS: an admin certificate ---------------------------------------------------------------


def test_an_admin_certificate_lists_and_evicts_without_a_token(tls_served: Served, certs: Certs) -> None:
    with tls_settings(certs.admin):
        lease = tls_served.rent("room 101")
        with tls_served.client(token=None) as admin:
            assert [row.cookie for row in admin.list().rows] == [lease.cookie[:8]]
            assert admin.evict(lease.cookie[:8]).resource == "'room 101'"
    assert tls_served.expired.wait_for(1) == ["room 101"]


def test_another_certificate_of_the_ca_is_refused(tls_served: Served, certs: Certs,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    with tls_settings(certs.client):
        lease = tls_served.rent("room 101")  # the landlord serves it: its leases, not the admin object
        with tls_served.client(token=None) as admin:
            with pytest.raises(AdminRefusedError, match="admin token or an admin certificate"):
                admin.list()
            with pytest.raises(AdminRefusedError):
                admin.evict(lease.cookie[:8])
        assert any("commonName ['client.example'] is no admin's" in record.getMessage()
                   for record in caplog.records)
        with tls_served.client(token=TOKEN) as admin:  # either authorises: the token still does
            assert admin.list().total == 1
        tls_served.unchanged([lease])


def test_serving_refuses_an_admin_object_of_another_landlord() -> None:
    served, other = Landlord(reaper="lazy"), Landlord(reaper="lazy")
    with pytest.raises(ValueError, match="administers another landlord"):
        landlord.serve_landlord(served, "127.0.0.1", 0, admin=LandlordAdmin(other, token=TOKEN))
    with pytest.raises(TypeError, match="LandlordAdmin"):
        landlord.serve_landlord(served, "127.0.0.1", 0, admin="token")  # type: ignore[arg-type]


def test_if_asked_makes_an_admin_object_only_when_given_a_token_or_names(close_later: list) -> None:
    rooms = landlord.Landlord(landlord_id="asked")
    close_later.append(rooms)
    assert LandlordAdmin.if_asked(rooms) is None
    assert LandlordAdmin.if_asked(rooms, token=None, admin_names=[]) is None
    by_token = LandlordAdmin.if_asked(rooms, token=TOKEN)
    by_name = LandlordAdmin.if_asked(rooms, admin_names=iter(["ops"]))  # any iterable, read once
    assert by_token is not None and by_token.object_id == admin_object_id(rooms)
    assert by_name is not None and by_name.admin_names == frozenset({"ops"})
    with pytest.raises(TypeError, match="not one str"):
        LandlordAdmin.if_asked(rooms, admin_names="ops")
    with pytest.raises(ValueError):
        LandlordAdmin.if_asked(rooms, token="short")
