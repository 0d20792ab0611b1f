"""What the admin object and its callers agree on (``landlord.admin.protocol``), without sockets: a token
file holds the token; the proof, on given nonces, is the HMAC of the call and the challenge keyed by
the token, good once, on its own challenge and for its own call only; malformed proofs and arguments
that cannot be proved are refused and change nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import pathlib
import re
from typing import Any

import pytest
from admin_fixtures import NONCE, TOKEN, WRONG

from landlord.admin import ADMIN_PREFIX, Challenge, admin_proof, read_token

OTHER_NONCE = "b2" * 32
OBJECT = ADMIN_PREFIX + "rooms"
KEY = TOKEN.encode()


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
