"""The admin object of a landlord (``landlord.admin``) and ``python -m landlord list|evict``.

In this process, over a real Pyro5 daemon: a listing with a proof of the admin token shows every lease
by a prefix of its cookie (never the whole), a wrong proof, no proof or the token itself is refused (and
nothing is listed or ended), an eviction revokes the lease (its holder's next renewal is denied with the
reason), bad prefixes change nothing, and two-way TLS lets in an admin certificate and no other. The
proof itself on given nonces, without sockets: good once, on its own challenge and for its own call only.
Then the command line, run as a real process against a landlord served in another
(``tests/processes/admin_landlord.py``), with a canary holder renewing through the hostile calls: bytes
of a legitimate call captured by a relay and replayed on a new connection list and evict nothing, and the
token never crosses the wire.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import hmac
import io
import os
import pathlib
import queue
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import Pyro5.api
import Pyro5.errors
import Pyro5.protocol
import Pyro5.serializers
import Pyro5.socketutil
import pytest
import serpent
import trustme
from conftest import REPO_ROOT, Child, free_port
from etcd_fixtures import ReplicaGroup, cluster, etcd_cluster  # noqa: F401  (fixtures)
from Pyro5 import config as pyro_config

import landlord
from landlord import (
    FakeClock,
    Landlord,
    LeaseDeniedError,
    LeaseDurationPolicy,
    NotLeaderError,
    ReplicatedLandlord,
    TLSConfig,
    UnknownLeaseError,
    tls_settings,
)
from landlord.__main__ import main
from landlord.admin import (
    ADMIN_PREFIX,
    EVICT_OPTIONS,
    MAX_LIMIT,
    TOKEN_ENV,
    AdminClient,
    AdminListing,
    AdminRefusedError,
    AdminRow,
    Challenge,
    LandlordAdmin,
    admin_object_id,
    admin_proof,
    format_table,
    prefix_behind_dashes,
    read_token,
    register_admin,
)
from landlord.grantor import landlord as grantor_module
from landlord.testing import Recorder, ServingDaemon
from landlord.tls import PYRO_SSL_SETTINGS

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "hostile"))
from attacks import Canary, read_message  # noqa: E402 (the hostile suite's canary and reader)

TOKEN = "admin-token-0123456789-abcdef"
WRONG = "admin-token-0123456789-abcdeX"  # as long as TOKEN, one character off
TERM = 30.0
CLI_TIMEOUT = 60.0  # seconds a command-line process may take (a cold interpreter on a busy machine)
CANARY_TERM = 2.0  # seconds: the canary holder's lease, renewed every 0.1 s
HEADER = 40  # bytes of a Pyro5 message's header


class Rooms(Landlord):
    @Pyro5.api.expose
    def rent(self, room: str, duration: float) -> landlord.LandlordLease:
        return self.new_lease(room, duration)


@dataclasses.dataclass
class Served:
    rooms: Rooms
    clock: FakeClock
    expired: Recorder[Any]
    cancelled: Recorder[Any]
    landlord_uri: str
    admin_uri: str

    def rent(self, room: str, duration: float = TERM) -> landlord.LandlordLease:
        """A lease held as a holder in another process would: granted and renewed over Pyro5."""
        with Pyro5.api.Proxy(self.landlord_uri) as proxy:
            lease: landlord.LandlordLease = proxy.rent(room, duration)
        return lease

    def client(self, token: str | None = TOKEN) -> AdminClient:
        return AdminClient(self.admin_uri, token=token)

    @property
    def admin_id(self) -> str:
        """The admin object's id."""
        return str(Pyro5.api.URI(self.admin_uri).object)

    def raw(self) -> Pyro5.api.Proxy:
        """A plain Pyro5 proxy of the admin object: calls carry what the test gives, nothing more."""
        return Pyro5.api.Proxy(self.admin_uri)

    def unchanged(self, leases: list[landlord.LandlordLease]) -> None:
        """Nothing was freed, and every lease is still held and renewable by its holder."""
        assert self.expired.items == [] and self.cancelled.items == []
        assert len(self.rooms) == len(leases)
        for lease in leases:
            assert lease.renew(TERM) == TERM


def proved(proxy: Pyro5.api.Proxy, method: str, *arguments: Any, token: str = TOKEN, sequence: int = 1) -> Any:
    """``method(*arguments)`` on a plain proxy of an admin object, with a proof made as AdminClient makes
    it: a challenge on the proxy's connection, then the proof for this call."""
    nonce = proxy.challenge()
    proof = admin_proof(token, nonce, sequence, proxy._pyroUri.object, method, arguments)
    return getattr(proxy, method)(*arguments, sequence=sequence, proof=proof)


def _serve(daemon: ServingDaemon, **admin: Any) -> Served:
    clock = FakeClock()
    expired: Recorder[Any] = Recorder()
    cancelled: Recorder[Any] = Recorder()
    rooms = Rooms(policy=LeaseDurationPolicy(maximum=600), clock=clock, on_expire=expired, on_cancel=cancelled)
    landlord_uri = daemon.register(rooms, "landlord." + rooms.landlord_id)
    admin_uri = register_admin(daemon.daemon, rooms, **admin)
    return Served(rooms, clock, expired, cancelled, landlord_uri, admin_uri)


@pytest.fixture
def served() -> Iterator[Served]:
    with ServingDaemon() as daemon:
        serving = _serve(daemon, token=TOKEN)
        yield serving
        serving.rooms.close()


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


def test_a_token_file_holds_the_token(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    assert read_token(path) == TOKEN
    path.write_text("short\n")
    with pytest.raises(ValueError, match="token file .*16 to 4096 characters, got 5"):
        read_token(path)
    path.write_bytes(b"\xff" * 20)
    with pytest.raises(ValueError, match="not UTF-8"):
        read_token(path)
    with pytest.raises(FileNotFoundError):
        read_token(tmp_path / "none")


# -- the proof, on given nonces (no sockets) ---------------------------------------------------------

NONCE = "a1" * 32
OTHER_NONCE = "b2" * 32
OBJECT = ADMIN_PREFIX + "rooms"
KEY = TOKEN.encode()


def test_a_proof_is_the_hmac_of_the_call_and_the_challenge_keyed_by_the_token() -> None:
    # the format, written out: a client in another language can make the same
    message = f'["landlord-admin-proof/1","{OBJECT}","{NONCE}",1,"list",[10]]'.encode()
    assert admin_proof(TOKEN, NONCE, 1, OBJECT, "list", [10]) == hmac.new(KEY, message, hashlib.sha256).hexdigest()


def test_a_good_proof_authorises_its_call_once() -> None:
    challenge = Challenge(NONCE)
    first = admin_proof(TOKEN, NONCE, 1, OBJECT, "list", [10])
    assert challenge.verify(KEY, OBJECT, "list", [10], 1, first) is None
    assert challenge.verify(KEY, OBJECT, "list", [10], 1, first) == \
        "a replayed proof: sequence number 1 is used up (the last was 1)"
    assert challenge.verify(KEY, OBJECT, "list", [10], 3, admin_proof(TOKEN, NONCE, 3, OBJECT, "list", [10])) is None
    assert "sequence number 2 is used up (the last was 3)" in \
        challenge.verify(KEY, OBJECT, "list", [10], 2, admin_proof(TOKEN, NONCE, 2, OBJECT, "list", [10]))
    assert challenge.last_sequence == 3


def test_a_proof_is_good_on_its_own_challenge_only() -> None:
    proof = admin_proof(TOKEN, NONCE, 1, OBJECT, "list", [10])
    elsewhere = Challenge(OTHER_NONCE)  # another connection's
    assert elsewhere.verify(KEY, OBJECT, "list", [10], 1, proof) == (
        "a wrong proof: not made with the admin token for this connection's challenge "
        "(a wrong token, or bytes replayed from another connection)")
    assert elsewhere.last_sequence == 0


@pytest.mark.parametrize("call", [
    dict(object_id=ADMIN_PREFIX + "other"), dict(method="evict", arguments=["AAAAAAAA"]),
    dict(arguments=[11]), dict(arguments=["10"]), dict(arguments=[10.0]), dict(arguments=[True]),
    dict(arguments=[]), dict(arguments=[10, 10]), dict(sequence=2), dict(key=WRONG.encode()),
])
def test_a_proof_is_good_for_its_own_call_only(call: dict[str, Any]) -> None:
    challenge = Challenge(NONCE)
    proof = admin_proof(TOKEN, NONCE, 1, OBJECT, "list", [10])
    received: dict[str, Any] = dict(key=KEY, object_id=OBJECT, method="list", arguments=[10], sequence=1) | call
    why = challenge.verify(received["key"], received["object_id"], received["method"], received["arguments"],
                           received["sequence"], proof)
    assert why is not None and why.startswith("a wrong proof: not made with the admin token")
    assert challenge.verify(KEY, OBJECT, "list", [10], 1, proof) is None  # the refusal used nothing up


@pytest.mark.parametrize(("sequence", "proof", "why"), [
    (0, "0" * 64, "sequence number is 1 to"), (-1, "0" * 64, "sequence number is 1 to"),
    (2**63, "0" * 64, "sequence number is 1 to"),
    pytest.param(10**5000, "0" * 64, "got a higher one", id="huge"),  # too long for str(): never shown
    pytest.param(-(10**5000), "0" * 64, "got a lower one", id="-huge"), (True, "0" * 64, "sequence number is an int"),
    ("1", "0" * 64, "sequence number is an int"), (None, "0" * 64, "sequence number is an int"),
    (1, None, "64 lowercase hex digits"), (1, "0" * 63, "64 lowercase hex digits"),
    (1, "A" * 64, "64 lowercase hex digits"), (1, "g" * 64, "64 lowercase hex digits"),
    (1, "0" * 64 + "\n", "64 lowercase hex digits"), (1, b"0" * 64, "64 lowercase hex digits"),
])
def test_a_malformed_proof_is_refused_and_changes_nothing(sequence: Any, proof: Any, why: str) -> None:
    challenge = Challenge(NONCE)
    assert why in (challenge.verify(KEY, OBJECT, "list", [10], sequence, proof) or "")
    assert challenge.last_sequence == 0


def _nested(depth: int) -> list[Any]:
    nested: list[Any] = []
    for _ in range(depth):
        nested = [nested]
    return nested


@pytest.mark.parametrize("argument", [float("nan"), b"AAAAAAAA", object(), _nested(100_000)])
def test_arguments_that_cannot_be_proved_are_refused(argument: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        admin_proof(TOKEN, NONCE, 1, OBJECT, "evict", [argument])
    assert "cannot be proved" in (Challenge(NONCE).verify(KEY, OBJECT, "evict", [argument], 1, "0" * 64) or "")


def test_every_challenge_draws_a_fresh_nonce_and_bad_parts_make_no_proof() -> None:
    nonces = {Challenge().nonce for _ in range(100)}
    assert len(nonces) == 100 and all(re.fullmatch("[0-9a-f]{64}", nonce) for nonce in nonces)
    for bad in ("a1" * 31, "A1" * 32, "", 12345):
        with pytest.raises(ValueError, match="32 bytes in lowercase hex"):
            Challenge(bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="32 bytes in lowercase hex"):
            admin_proof(TOKEN, bad, 1, OBJECT, "list", [10])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="16 to 4096 characters"):
        admin_proof("short", NONCE, 1, OBJECT, "list", [10])
    with pytest.raises(ValueError, match="sequence number is 1 to"):
        admin_proof(TOKEN, NONCE, 0, OBJECT, "list", [10])


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
        admin_uri = _admin_uri(uris.get(timeout=10))
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


def test_the_client_asks_a_new_connection_for_a_challenge(served: Served) -> None:
    served.rent("room 101")
    with served.client() as admin:
        assert admin.list().total == 1
        assert admin.list().total == 1  # the same connection, the next sequence number
        admin._proxy._pyroRelease()  # the connection is lost; the next call makes another
        assert admin.list().total == 1


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


def _cookies(monkeypatch: pytest.MonkeyPatch, *cookies: str) -> None:
    """The landlord's next leases get these cookies, in order."""
    given = iter(cookies)
    monkeypatch.setattr(grantor_module, "new_cookie", lambda: next(given))


def test_an_ambiguous_short_or_unknown_prefix_changes_nothing(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    _cookies(monkeypatch, "AAAAAAAA1xxxxxxxxxxxxx", "AAAAAAAA2xxxxxxxxxxxxx", "BBBBBBBB3xxxxxxxxxxxxx")
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


@dataclasses.dataclass(frozen=True)
class Certs:
    server: TLSConfig  # 127.0.0.1, signed by the CA
    admin: TLSConfig  # commonName ops-admin, signed by the CA
    client: TLSConfig  # commonName client.example, signed by the CA
    ca: pathlib.Path

    @staticmethod
    def args(tls: TLSConfig) -> list[str]:
        return ["--cert", str(tls.certfile), "--key", str(tls.keyfile), "--ca", str(tls.cafile)]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    directory = tmp_path_factory.mktemp("certs")
    ca = trustme.CA()
    ca_file = directory / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))

    def issue(name: str, *identities: str, common_name: str | None = None) -> TLSConfig:
        cert = ca.issue_cert(*identities, common_name=common_name)
        certfile, keyfile = directory / f"{name}.crt", directory / f"{name}.key"
        for number, blob in enumerate(cert.cert_chain_pems):
            blob.write_to_path(str(certfile), append=number > 0)
        cert.private_key_pem.write_to_path(str(keyfile))
        return TLSConfig(certfile, keyfile, ca_file)

    return Certs(server=issue("server", "127.0.0.1", "localhost"),
                 admin=issue("admin", "ops.example", common_name="ops-admin"),
                 client=issue("client", "client.example", common_name="client.example"), ca=ca_file)


def _pyro_tls_state() -> tuple[dict[str, Any], Any, Any]:
    return ({name: getattr(pyro_config, name) for name in PYRO_SSL_SETTINGS},
            getattr(Pyro5.socketutil, "__ssl_server_context"), getattr(Pyro5.socketutil, "__ssl_client_context"))


@pytest.fixture
def tls_served(certs: Certs) -> Iterator[Served]:
    """A landlord and its admin object (admin name ops-admin, and the token) on a TLS daemon; the
    process's SSL settings are as they were before (a test sets its client's)."""
    before = _pyro_tls_state()
    with tls_settings(certs.server):  # the daemon's listening socket keeps the server's context
        daemon = ServingDaemon()
    try:
        serving = _serve(daemon, token=TOKEN, admin_names=["ops-admin"])
        yield serving
        serving.rooms.close()
    finally:
        daemon.close()
        assert _pyro_tls_state() == before


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


# -- the command line, in processes of its own --------------------------------------------------------


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {key: value for key, value in os.environ.items() if key != TOKEN_ENV}
    return subprocess.run([sys.executable, "-m", "landlord", *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=CLI_TIMEOUT, env={**environ, **(env or {})})


def _start(*args: str) -> tuple[Child, str, int]:
    """A landlord with its admin object in a child process; the child, the landlord's URI, its port."""
    child = Child("admin_landlord.py", *args)
    try:
        admin_uri = child.read_uri(pattern=r"^landlord admin at (?P<uri>PYRO:\S+)")
    except BaseException:
        child.close()
        raise
    location = Pyro5.api.URI(admin_uri)
    assert location.port is not None
    return child, f"PYRO:landlord.{location.object[len(ADMIN_PREFIX):]}@127.0.0.1:{location.port}", location.port


def _rent(landlord_uri: str, room: str, duration: float = 300) -> landlord.LandlordLease:
    with Pyro5.api.Proxy(landlord_uri) as proxy:
        lease: landlord.LandlordLease = proxy.rent(room, duration)
    return lease


def _admin_uri(landlord_uri: str) -> str:
    location = Pyro5.api.URI(landlord_uri)
    return f"PYRO:{ADMIN_PREFIX}{location.object.removeprefix('landlord.')}@127.0.0.1:{location.port}"


@contextlib.contextmanager
def _canary(landlord_uri: str) -> Iterator[Canary]:
    """A holder renewing a 2 s lease every 0.1 s throughout the block; checked after it: it never
    missed a renewal, and none took half its term."""
    canary = Canary(_rent(landlord_uri, "canary", CANARY_TERM), term=CANARY_TERM).start()
    try:
        canary.renew_more(2)
        yield canary
        canary.renew_more(3)  # and it is served on
    finally:
        canary.stop()
    canary.check(CANARY_TERM / 2)


def _still_held(child: Child, landlord_uri: str, leases: list[landlord.LandlordLease]) -> None:
    """Nothing of the child's was freed, and its admin object, asked with the token, lists every lease
    (call it while the canary renews: its lease is short)."""
    assert child.matches(r"^(freed|cancelled) ") == []
    with AdminClient(_admin_uri(landlord_uri), token=TOKEN) as admin:
        listed = {row.cookie for row in admin.list().rows}
    assert listed == {lease.cookie[:8] for lease in leases}


@pytest.fixture
def token_file(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "admin-token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    return path


def _one_error_line(finished: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    assert finished.returncode == code, finished
    assert finished.stdout == ""
    lines = finished.stderr.splitlines()
    assert len(lines) == 1 and "error: " in lines[0], finished.stderr
    assert all(word in lines[0] for word in words), lines[0]
    return lines[0]


def test_the_command_lists_and_evicts_the_leases_of_a_landlord_in_another_process(token_file: pathlib.Path) -> None:
    child, landlord_uri, port = _start("--token-file", str(token_file))
    with child:
        evicted, kept = _rent(landlord_uri, "room 101"), _rent(landlord_uri, "room 102")
        listed = _run("list", "--port", str(port), "--token-file", str(token_file))
        assert listed.returncode == 0 and listed.stderr == "", listed
        lines = listed.stdout.splitlines()
        assert lines[0].split() == ["COOKIE", "LEFT", "ATTACHED", "RESOURCE"] and len(lines) == 3
        assert {line.split()[0] for line in lines[1:]} == {evicted.cookie[:8], kept.cookie[:8]}
        assert "'room 101'" in listed.stdout and evicted.cookie not in listed.stdout

        ended = _run("evict", evicted.cookie[:8], "--port", str(port), "--id", evicted.landlord_id,
                     env={TOKEN_ENV: TOKEN})  # the token from the environment
        assert ended.returncode == 0 and ended.stderr == "", ended
        assert ended.stdout.startswith(f"evicted {evicted.cookie[:8]}… 'room 101' (")
        child.wait_for(r"^freed room 101$")
        with pytest.raises(LeaseDeniedError, match="evicted by an operator"):
            evicted.renew(60)
        assert kept.renew(60) == 60


def test_the_command_refused_prints_one_error_line_and_exits_1(token_file: pathlib.Path,
                                                                tmp_path: pathlib.Path) -> None:
    wrong = tmp_path / "wrong-token"
    wrong.write_text(WRONG)
    child, landlord_uri, port = _start("--token-file", str(token_file))
    with child:
        lease = _rent(landlord_uri, "room 101")
        with _canary(landlord_uri) as canary:
            _one_error_line(_run("list", "--port", str(port), "--token-file", str(wrong)), 1, "list refused",
                            "a wrong proof")
            _one_error_line(_run("evict", lease.cookie[:8], "--port", str(port), env={TOKEN_ENV: WRONG}), 1,
                            "evict refused")
            child.wait_for(r"refused an admin call \(evict\) from 127\.0\.0\.1:\d+: a wrong proof")
            with Pyro5.api.Proxy(_admin_uri(landlord_uri)) as proxy:  # no token, or the token itself
                for call in (lambda: proxy.list(10), lambda: proxy.evict(lease.cookie[:8]),
                             lambda: proxy.list(10, token=TOKEN), lambda: proxy.evict(lease.cookie[:8], token=TOKEN)):
                    with pytest.raises(AdminRefusedError, match="refused"):
                        call()
            _still_held(child, landlord_uri, [lease, canary.lease])
        assert lease.renew(60) == 60


def test_a_flood_of_challenges_and_wrong_proofs_holds_no_holder_up(token_file: pathlib.Path) -> None:
    # anyone may ask for a challenge: 10 connections each ask 50 and send a wrong proof after each
    child, landlord_uri, _ = _start("--token-file", str(token_file))
    with child:
        lease = _rent(landlord_uri, "room 101")
        refused: list[int] = []

        def attack() -> None:
            with Pyro5.api.Proxy(_admin_uri(landlord_uri)) as proxy:
                for sequence in range(1, 51):
                    nonce = proxy.challenge()
                    with pytest.raises(AdminRefusedError, match="a wrong proof"):
                        proxy.evict(lease.cookie[:8], sequence=sequence,
                                    proof=admin_proof(WRONG, nonce, sequence, proxy._pyroUri.object, "evict",
                                                      [lease.cookie[:8]]))
                    refused.append(sequence)

        with _canary(landlord_uri) as canary:
            attackers = [threading.Thread(target=attack, daemon=True) for _ in range(10)]
            for attacker in attackers:
                attacker.start()
            for attacker in attackers:
                attacker.join(60)
            assert not any(attacker.is_alive() for attacker in attackers)
            assert len(refused) == 500
            _still_held(child, landlord_uri, [lease, canary.lease])


class RecordingRelay:
    """A TCP relay on loopback to ``target`` that records what passes, as one who captured the traffic
    would have it: per connection, the bytes the client sent and the bytes it was answered."""

    def __init__(self, target: tuple[str, int]) -> None:
        self._target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._recorded: list[tuple[bytearray, bytearray]] = []
        self._pumps: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._accepting = threading.Thread(target=self._accept, name="relay-accept", daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(self._target, timeout=10)
            upstream.settimeout(None)
            sent, answered = bytearray(), bytearray()
            pumps = [threading.Thread(target=_pump, args=(client, upstream, sent), daemon=True),
                     threading.Thread(target=_pump, args=(upstream, client, answered), daemon=True)]
            with self._lock:
                self._recorded.append((sent, answered))
                self._pumps += pumps
                self._sockets += [client, upstream]
            for pump in pumps:
                pump.start()

    def recorded(self, timeout: float = 10.0) -> list[tuple[bytes, bytes]]:
        """Every connection's bytes, sent and answered, once its traffic has ended both ways."""
        with self._lock:
            pumps, recorded = list(self._pumps), list(self._recorded)
        for pump in pumps:
            pump.join(timeout)
            assert not pump.is_alive(), "a relayed connection is still open"
        return [(bytes(sent), bytes(answered)) for sent, answered in recorded]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread: close() alone would not
        self._listener.close()
        self._accepting.join(10)
        assert not self._accepting.is_alive()
        with self._lock:
            for sock in self._sockets:
                sock.close()

    def __enter__(self) -> RecordingRelay:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _pump(source: socket.socket, sink: socket.socket, record: bytearray) -> None:
    try:
        while chunk := source.recv(65536):
            record += chunk
            sink.sendall(chunk)
    except OSError:
        pass  # either side went away
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)  # pass the close on


def _messages(stream: bytes) -> list[bytes]:
    """A recorded stream cut into its Pyro5 messages."""
    messages = []
    while stream:
        header = Pyro5.protocol.ReceivingMessage(stream[:HEADER])
        size = HEADER + header.data_size + header.annotations_size
        messages.append(stream[:size])
        stream = stream[size:]
    return messages


def _replay(port: int, stream: bytes) -> list[Pyro5.protocol.ReceivingMessage]:
    """Send a recorded connection's messages again on a new raw connection, one at a time as its
    client did; the server's answers."""
    answers = []
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        for raw in _messages(stream):
            sock.sendall(raw)
            answer = read_message(sock)
            assert answer is not None, f"the server closed the connection after {len(answers)} answers"
            answers.append(answer)
    return answers


def _decoded(message: Pyro5.protocol.ReceivingMessage) -> Any:
    return Pyro5.serializers.serializers_by_id[message.serializer_id].loads(bytes(message.data))


def test_captured_admin_bytes_replayed_on_a_new_connection_list_and_evict_nothing(token_file: pathlib.Path) -> None:
    child, landlord_uri, port = _start("--token-file", str(token_file))
    with child, RecordingRelay(("127.0.0.1", port)) as relay:
        leases = [_rent(landlord_uri, "room 101"), _rent(landlord_uri, "room 102")]
        with _canary(landlord_uri) as canary:
            listed = _run("list", "--port", str(relay.port), "--id", leases[0].landlord_id,
                          "--token-file", str(token_file))  # a legitimate call, through the relay
            assert listed.returncode == 0 and leases[0].cookie[:8] in listed.stdout, listed
            [(sent, answered)] = relay.recorded()

            answers = _replay(port, sent)
            refusal = _decoded(answers[-1])
            assert answers[-1].flags & Pyro5.protocol.FLAGS_EXCEPTION, f"the replay was answered: {refusal!r:.300}"
            assert isinstance(refusal, AdminRefusedError) and "replayed from another connection" in str(refusal)
            assert not any(lease.cookie[:8].encode() in bytes(answer.data) for answer in answers for lease in leases)
            child.wait_for(r"refused an admin call \(list\) from 127\.0\.0\.1:\d+: a wrong proof")

            # the captured proof, for an eviction: refused on a connection of its own, challenged or not
            invoke = _messages(sent)[-1]
            received = Pyro5.protocol.ReceivingMessage(invoke[:HEADER])
            received.add_payload(invoke[HEADER:])
            _, method, _, captured = Pyro5.serializers.serializers_by_id[received.serializer_id].loadsCall(
                bytes(received.data))
            assert method == "list" and set(captured) == {"sequence", "proof"}
            with Pyro5.api.Proxy(_admin_uri(landlord_uri)) as proxy:
                with pytest.raises(AdminRefusedError, match="a proof without a challenge on this connection"):
                    proxy.evict(leases[0].cookie[:8], **captured)
                proxy.challenge()
                with pytest.raises(AdminRefusedError, match="a wrong proof"):
                    proxy.evict(leases[0].cookie[:8], **captured)

            # and the token itself never crossed, either way
            assert TOKEN.encode() not in sent and TOKEN.encode() not in answered
            _still_held(child, landlord_uri, [*leases, canary.lease])  # while the canary still renews


def test_the_command_over_tls_with_an_admin_certificate(certs: Certs) -> None:
    child, landlord_uri, port = _start("--admin-name", "ops-admin", *Certs.args(certs.server))
    with child:
        with tls_settings(certs.admin):
            lease = _rent(landlord_uri, "room 101")
        listed = _run("list", "--port", str(port), *Certs.args(certs.admin))
        assert listed.returncode == 0 and lease.cookie[:8] in listed.stdout, listed
        _one_error_line(_run("list", "--port", str(port), *Certs.args(certs.client)), 1, "list refused")


def _main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = main(list(args))
    except SystemExit as exit:
        code = int(exit.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_bad_input_is_one_error_line_and_exit_2(capsys: pytest.CaptureFixture[str], token_file: pathlib.Path,
                                                monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    short = tmp_path / "short"
    short.write_text("short")
    for args, words in [
        (["list"], ["required: --port"]),
        (["list", "--port", "0", "--token-file", str(token_file)], ["a port is 1 to 65535"]),
        (["list", "--port", "4160", "--limit", "-1", "--token-file", str(token_file)], ["--limit"]),
        (["evict", "abc", "--port", "4160", "--token-file", str(token_file)], ["8 to 256 characters, got 3"]),
        (["evict", "abcdefg*", "--port", "4160", "--token-file", str(token_file)], ["only letters, digits"]),
        (["list", "--port", "4160"], ["no credentials"]),
        (["list", "--port", "4160", "--token-file", str(short)], ["16 to 4096 characters, got 5"]),
        (["list", "--port", "4160", "--token-file", str(tmp_path / "none")], ["cannot read the token file"]),
        (["list", "--port", "4160", "--cert", str(token_file)], ["--cert, --key and --ca go together"]),
        (["list", "--port", "4160", "--token-file", str(token_file), "--id", "a b"], ["no spaces"]),
        (["list", "--port", "4160", "--token-file", str(token_file), "--id", "x", "--object-id", "y"],
         ["not allowed with"]),
    ]:
        code, out, err = _main(capsys, *args)
        assert (code, out) == (2, ""), (args, err)
        assert len(err.splitlines()) == 1 and "error: " in err and all(word in err for word in words), (args, err)
    monkeypatch.setenv(TOKEN_ENV, "short")
    code, out, err = _main(capsys, "list", "--port", "4160")
    assert code == 2 and f"${TOKEN_ENV}: an admin token has 16" in err


def test_no_landlord_there_is_one_error_line_and_exit_1(capsys: pytest.CaptureFixture[str],
                                                        token_file: pathlib.Path) -> None:
    code, out, err = _main(capsys, "list", "--port", str(free_port()), "--token-file", str(token_file),
                           "--timeout", "5")
    assert (code, out) == (1, "") and len(err.splitlines()) == 1 and "landlord: error: cannot reach" in err


def test_the_command_finds_the_admin_object_or_says_why_not(capsys: pytest.CaptureFixture[str],
                                                            token_file: pathlib.Path) -> None:
    with ServingDaemon() as daemon:
        rooms = Rooms()
        others = Rooms()
        try:
            daemon.register(rooms)
            port = str(daemon.daemon.locationStr.rsplit(":", 1)[1])
            code, out, err = _main(capsys, "list", "--port", port, "--token-file", str(token_file))
            assert (code, out) == (1, "") and "serves no landlord admin object" in err
            register_admin(daemon.daemon, rooms, token=TOKEN)
            rooms.new_lease("room 101", 30)
            code, out, err = _main(capsys, "list", "--port", port, "--token-file", str(token_file))
            assert code == 0 and "'room 101'" in out, err
            register_admin(daemon.daemon, others, token=TOKEN)
            code, out, err = _main(capsys, "list", "--port", port, "--token-file", str(token_file))
            assert (code, out) == (1, "") and "serves 2 landlord admin objects" in err and "--id" in err
            code, out, err = _main(capsys, "list", "--port", port, "--token-file", str(token_file),
                                   "--id", others.landlord_id)
            assert (code, out) == (0, "no leases\n"), err
            code, out, err = _main(capsys, "list", "--port", port, "--token-file", str(token_file),
                                   "--object-id", admin_object_id(rooms))
            assert code == 0 and "'room 101'" in out, err
            code, out, err = _main(capsys, "list", "--port", port, "--token-file", str(token_file), "--id", "nobody")
            assert (code, out) == (1, "") and "unknown object" in err and len(err.splitlines()) == 1
        finally:
            rooms.close()
            others.close()


def test_the_commands_can_be_added_to_another_command_line(served: Served) -> None:
    import argparse

    from landlord.admin import add_admin_commands, run_admin

    parser = argparse.ArgumentParser(prog="lookup")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list")  # a command of its own by that name
    add_admin_commands(commands, list_name="leases", evict_name="evict", default_port=4160, what="lookup service")
    assert parser.parse_args(["leases"]).port == 4160
    served.rent("room 101")
    port = Pyro5.api.URI(served.admin_uri).port
    out, err = io.StringIO(), io.StringIO()
    args = parser.parse_args(["leases", "--port", str(port)])
    assert run_admin(args, out=out, err=err, prog="lookup", environ={TOKEN_ENV: TOKEN}) == 0, err.getvalue()
    assert "'room 101'" in out.getvalue()
    assert run_admin(args, out=out, err=err, prog="lookup", environ={TOKEN_ENV: WRONG}) == 1
    assert err.getvalue().startswith("lookup: error: ") and "list refused" in err.getvalue()


def test_serving_refuses_an_admin_object_of_another_landlord() -> None:
    served, other = Landlord(reaper="lazy"), Landlord(reaper="lazy")
    with pytest.raises(ValueError, match="administers another landlord"):
        landlord.serve_landlord(served, "127.0.0.1", 0, admin=LandlordAdmin(other, token=TOKEN))
    with pytest.raises(TypeError, match="LandlordAdmin"):
        landlord.serve_landlord(served, "127.0.0.1", 0, admin="token")  # type: ignore[arg-type]


def test_a_cookie_prefix_starting_with_a_dash_is_read_as_the_prefix() -> None:
    # one cookie in 64 starts with "-": argparse alone reads "evict -OG9xgi2" as an unknown option
    from landlord.__main__ import build_parser

    parser = build_parser()
    for argv, prefix in [(["evict", "-OG9xgi2", "--port", "4160"], "-OG9xgi2"),
                         (["evict", "--port", "4160", "-OG9xgi2", "--id", "x"], "-OG9xgi2"),
                         (["evict", "--port=4160", "--OG9xgi2"], "--OG9xgi2"),
                         (["evict", "--port", "4160", "--", "-OG9xgi2"], "-OG9xgi2")]:
        args = parser.parse_args(prefix_behind_dashes(argv))
        assert (args.prefix, args.port) == (prefix, 4160), argv
    args = parser.parse_args(prefix_behind_dashes(["evict", "--token-file=-a-file", "-OG9xgi2", "--port", "1"]))
    assert (str(args.token_file), args.prefix) == ("-a-file", "-OG9xgi2")
    assert prefix_behind_dashes(["list", "--port", "1"]) == ["list", "--port", "1"]
    assert prefix_behind_dashes(["evict", "OG9xgi2-", "--port", "1"]) == ["evict", "OG9xgi2-", "--port", "1"]


def test_the_evict_options_known_to_the_prefix_rule_are_the_commands_options() -> None:
    from landlord.__main__ import build_parser
    from lookup.cli import build_parser as build_lookup_parser

    for parser in (build_parser(), build_lookup_parser()):
        commands = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
        evict = commands.choices["evict"]
        assert set(evict._option_string_actions) == EVICT_OPTIONS
        flags = {option for option, action in evict._option_string_actions.items() if action.nargs == 0}
        assert flags == {"-h", "--help"}


def test_a_lease_whose_cookie_starts_with_a_dash_is_evicted_by_the_command(
        served: Served, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _cookies(monkeypatch, "-OG9xgi2xxxxxxxxxxxxxx")
    served.rent("room 101")
    port = str(Pyro5.api.URI(served.admin_uri).port)
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    code, out, err = _main(capsys, "evict", "-OG9xgi2", "--port", port)
    assert (code, err) == (0, "") and out.startswith("evicted -OG9xgi2… 'room 101'"), err
