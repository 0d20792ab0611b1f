"""lookup.ownership alone: self-certifying service ids, the proofs, and the rule of who may register an id."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from Pyro5.serializers import SerpentSerializer

from landlord import LeaseDeniedError
from lookup.ownership import (
    MAX_PROOF_LENGTH,
    MIN_SECRET_LENGTH,
    NotOwnerError,
    check_claim,
    check_proof,
    is_self_certifying,
    new_registration_secret,
    proves_secret,
    service_id_for,
)

SECRET = "s" * 22
COOKIE = "c" * 22


def test_a_secret_proves_one_version_8_uuid_always_the_same() -> None:
    service_id = service_id_for(SECRET)
    assert service_id == service_id_for(SECRET) != service_id_for(SECRET + "x")
    parsed = uuid.UUID(service_id)
    assert parsed.version == 8 and parsed.variant == uuid.RFC_4122 and str(parsed) == service_id
    assert is_self_certifying(service_id)
    assert proves_secret(service_id, SECRET) and not proves_secret(service_id, SECRET + "x")


def test_new_secrets_are_128_random_bits_and_each_proves_its_own_id() -> None:
    secrets = {new_registration_secret() for _ in range(100)}
    assert len(secrets) == 100 and all(len(secret) >= MIN_SECRET_LENGTH for secret in secrets)
    assert len({service_id_for(secret) for secret in secrets}) == 100


@pytest.mark.parametrize("service_id", [
    str(uuid.uuid4()),                                  # assigned before ids were self-certifying
    service_id_for(SECRET).upper(),                     # not the canonical text
    "{" + service_id_for(SECRET)[:-2] + "}",            # braces, same length
    "my-printer", "", "x" * 36,
])
def test_other_ids_are_not_self_certifying(service_id: str) -> None:
    assert not is_self_certifying(service_id)


@pytest.mark.parametrize("secret, error", [(None, TypeError), (b"s" * 22, TypeError),
                                           ("s" * (MIN_SECRET_LENGTH - 1), ValueError),
                                           ("s" * (MAX_PROOF_LENGTH + 1), ValueError)])
def test_a_bad_secret_makes_no_id(secret: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="secret"):
        service_id_for(secret)


def test_proofs_are_checked_for_type_and_length() -> None:
    assert check_proof(None) is None and check_proof(COOKIE) == COOKIE
    for bad, error in ((5, TypeError), (b"x", TypeError), (["x"], TypeError), ("", ValueError),
                       ("x" * (MAX_PROOF_LENGTH + 1), ValueError)):
        with pytest.raises(error, match="proof"):
            check_proof(bad)


# -- the rule ----------------------------------------------------------------------------------

OWNED = service_id_for(SECRET)


@pytest.mark.parametrize("service_id, proof, holder", [
    (OWNED, SECRET, None),            # the secret takes its id back once nobody holds it...
    (OWNED, SECRET, COOKIE),          # ...or from the lease that holds it
    (OWNED, COOKIE, COOKIE),          # the holder's cookie registers it again
    ("my-printer", COOKIE, COOKIE),   # a chosen id while held: the cookie
    ("my-printer", None, None),       # a chosen id nobody holds: first come
    ("my-printer", "anything at all", None),
])
def test_the_owner_may_register(service_id: str, proof: str | None, holder: str | None) -> None:
    check_claim(service_id, proof, holder)


@pytest.mark.parametrize("service_id, proof, holder", [
    (OWNED, None, COOKIE),                 # a stranger, while the owner holds it
    (OWNED, "x" * 22, COOKIE),             # a guess
    (OWNED, COOKIE[:-1], COOKIE),          # a near miss of the cookie
    (OWNED, None, None),                   # nobody holds it, but only its secret takes it
    (OWNED, COOKIE, None),                 # a dead lease's cookie proves nothing
    (OWNED, "s" * 23, None),               # another secret
    ("my-printer", None, COOKIE),          # a chosen id while held
    ("my-printer", SECRET, COOKIE),        # a secret of another id
    ("my-printer", "ünïcode" * 4, COOKIE),  # any str compares safely
])
def test_anyone_else_is_refused(service_id: str, proof: str | None, holder: str | None) -> None:
    with pytest.raises(NotOwnerError, match=service_id):
        check_claim(service_id, proof, holder)


def test_the_refusal_is_a_lease_denial_that_crosses_the_wire_as_itself() -> None:
    assert issubclass(NotOwnerError, LeaseDeniedError)
    serializer = SerpentSerializer()
    error = serializer.loads(serializer.dumps(NotOwnerError("service id x is registered by another")))
    assert type(error) is NotOwnerError and str(error) == "service id x is registered by another"
