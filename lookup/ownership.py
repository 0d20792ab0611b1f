"""Who may register under a service id: the rule, its proof, and its error (:class:`NotOwnerError`).

A service id belongs to the holder of its registration's lease: replacing,
modifying or re-registering it needs proof. Two proofs are accepted:

- **the cookie** of the lease of the id's current registration (live, or in
  its grace): the lease is the capability, as it is for renewing it or
  changing its attributes;
- **the registration secret**: 128 random bits the lookup service makes
  when it assigns an id (``register`` with ``service_id=None``) and hands to
  the registrant alone, in the :class:`~lookup.registration.ServiceRegistration`.
  The id is derived from the secret (:func:`service_id_for`: a hash of it,
  written as a version-8 UUID), so the id is **self-certifying**.

Why a secret the id is derived from, and not a cookie or an HMAC under a key
of the lookup service's: a service must get its id back after its lease has
ended (a partition outlasted it, or the lookup service restarted and forgot
everything), and register the same id with every lookup service it joins,
including ones that never saw it. A cookie dies with its lease; an HMAC key
of one lookup service is lost with it (unless stored) and unknown to the
others. A self-certifying id needs nothing remembered by anyone but its
owner: any lookup service, restarted or not, stored or not, replicated or
not, checks ``service_id_for(secret) == service_id``, and a stranger who
knows only the public id cannot find a secret that hashes to it.

So the rule, for ``register(item, duration, proof)``:

1. no id: a new secret, and its id (the secret goes back to the registrant);
2. an id whose registration's lease still holds it: only its cookie, or its
   secret, may register it again (the old lease then ends);
3. a self-certifying id (a version-8 UUID) that nobody holds: only its secret;
4. any other id that nobody holds (one a service chose, or one assigned before
   ids were self-certifying): first come, first served, as Jini lets a
   service supply its own id. Such an id is protected only while its lease lives.

The secret is a bearer proof, as the cookie is: it travels to each lookup
service the owner registers with (use TLS where the network is not trusted),
and a lookup service that turned hostile could replay it elsewhere.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from landlord import LeaseDeniedError
from landlord.wire import register_exception

__all__ = ["NotOwnerError", "new_registration_secret", "service_id_for", "is_self_certifying",
           "proves_secret", "check_proof", "check_claim", "MIN_SECRET_LENGTH", "MAX_PROOF_LENGTH"]

MIN_SECRET_LENGTH = 16   # characters: a secret shorter than this is too easily guessed
MAX_PROOF_LENGTH = 256   # characters of a proof (a secret or a cookie) a caller may send
_DOMAIN = b"lookup.service_id v1\x00"  # keeps these hashes apart from any other use of the same secret
# a version-8 UUID of the RFC 9562 variant in its canonical text (as uuid.UUID prints it; 8x quicker than parsing)
_SELF_CERTIFYING = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


class NotOwnerError(LeaseDeniedError):
    """The caller did not prove it owns the service id it asked to register under.

    Nothing changed: the id's registration (if any) and its lease are as they were.
    """


register_exception(NotOwnerError)  # here: both the lookup service and its clients import this module


def new_registration_secret() -> str:
    """A new registration secret: 128 random bits, as URL-safe text."""
    return secrets.token_urlsafe(16)


def service_id_for(secret: str) -> str:
    """The self-certifying service id that ``secret`` proves: a SHA-256 of it,
    cut to 122 bits and written as a version-8 UUID.

    Raises:
        TypeError: ``secret`` is not a str.
        ValueError: shorter than ``MIN_SECRET_LENGTH`` or longer than ``MAX_PROOF_LENGTH`` characters.
    """
    if not isinstance(secret, str):
        raise TypeError(f"a registration secret is a str, got {type(secret).__name__}")
    if not MIN_SECRET_LENGTH <= len(secret) <= MAX_PROOF_LENGTH:
        raise ValueError(f"a registration secret has {MIN_SECRET_LENGTH} to {MAX_PROOF_LENGTH} characters, "
                         f"got {len(secret)}")
    raw = bytearray(hashlib.sha256(_DOMAIN + secret.encode("utf-8", "surrogatepass")).digest()[:16])
    raw[6] = (raw[6] & 0x0F) | 0x80  # version 8: a UUID of custom make
    raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 9562 variant
    text = raw.hex()  # written as str(uuid.UUID(bytes=raw)) would, without making one (2 us of a register)
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def is_self_certifying(service_id: str) -> bool:
    """Whether ``service_id`` has the form of an id made by :func:`service_id_for`
    (a version-8 UUID, in its canonical text): only a secret may then register it."""
    return _SELF_CERTIFYING.fullmatch(service_id) is not None


def proves_secret(service_id: str, proof: str) -> bool:
    """Whether ``proof`` is the secret of the self-certifying ``service_id``."""
    if not MIN_SECRET_LENGTH <= len(proof) <= MAX_PROOF_LENGTH:
        return False
    return service_id_for(proof) == service_id


def check_proof(proof: object) -> str | None:
    """``proof`` as ``register`` takes it: ``None``, or a str of 1 to ``MAX_PROOF_LENGTH`` characters.

    Raises:
        TypeError: neither ``None`` nor a str.
        ValueError: an empty or oversized str.
    """
    if proof is None:
        return None
    if not isinstance(proof, str):
        raise TypeError(f"proof must be a registration secret or a lease cookie (a str), got {type(proof).__name__}")
    if not 0 < len(proof) <= MAX_PROOF_LENGTH:
        raise ValueError(f"proof must have 1 to {MAX_PROOF_LENGTH} characters, got {len(proof)}")
    return proof


def check_claim(service_id: str, proof: str | None, holder_cookie: str | None) -> None:
    """Refuse to register ``service_id`` unless ``proof`` entitles the caller to (the rule of the module docstring).

    Args:
        service_id: the id asked for.
        proof: what the caller sent: a registration secret, a lease cookie, or ``None``.
        holder_cookie: the cookie of the lease that holds ``service_id`` now
            (live or in its grace), or ``None`` when no lease does.

    Raises:
        NotOwnerError: the id is held, or self-certifying, and ``proof`` is neither its secret nor its cookie.
    """
    if proof is not None and proves_secret(service_id, proof):
        return
    if holder_cookie is not None:
        if proof is not None and hmac.compare_digest(proof.encode("utf-8", "surrogatepass"),
                                                     holder_cookie.encode("utf-8", "surrogatepass")):
            return
        raise NotOwnerError(f"service id {service_id} is registered by another: registering it again needs "
                            f"its registration secret or its lease's cookie")
    if is_self_certifying(service_id):
        raise NotOwnerError(f"service id {service_id} was assigned with a registration secret: "
                            f"only that secret registers it")
