"""Serializer converters for every landlord class that crosses the wire.

Imported by ``landlord/__init__.py``, so importing landlord is enough. A
:class:`~landlord.LandlordLease` travels as::

    {"__class__": "landlord.LandlordLease", "cookie": str, "landlord": str (URI),
     "landlord_id": str, "remaining": float, "term": float,
     "landlords": [str (URI), ...]}

``remaining`` is the time left when it was sent; the receiver adds it to its
own clock, so the clocks of two hosts never need to agree. ``term`` is the
seconds last granted (what a renewal manager asks for again); a lease from a
sender that did not send it takes ``remaining`` as its term. ``landlords``
goes only with a lease of a replicated landlord: every replica's URI (the
``landlord`` field stays the one that granted it, so a receiver that knows
nothing of replicas still reaches the group); a lease without it has its one
landlord.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from Pyro5.serializers import SerializerBase

from .clock import SYSTEM_CLOCK
from .errors import LeaseDeniedError, LeaseError, LeaseMapError, NotLeaderError, StaleTokenError, UnknownLeaseError
from .holder.landlordlease import LandlordLease
from .results import RenewResults
from .transport.serializers import install as install_serializers

__all__ = ["register_exception", "register_converters", "checked_fields", "LEASE_CLASS", "RENEW_RESULTS_CLASS"]

LEASE_CLASS = "landlord.LandlordLease"
RENEW_RESULTS_CLASS = "landlord.RenewResults"


def checked_fields(data: dict[str, Any], classname: str, fields: dict[str, type | tuple[type, ...]]) -> list[Any]:
    """The named fields of a wire dict, type-checked, or a clear error.

    Raises:
        ValueError: a field is missing.
        TypeError: a field is of another type (a ``bool`` is never a number here).
    """
    values = []
    for name, kind in fields.items():
        if name not in data:
            raise ValueError(f"malformed {classname}: no {name!r}")
        value = data[name]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise TypeError(f"malformed {classname}: {name!r} is {type(value).__name__}")
        values.append(value)
    return values


# -- LandlordLease ------------------------------------------------------------

def lease_to_dict(lease: LandlordLease) -> dict[str, Any]:
    data = {
        "__class__": LEASE_CLASS,
        "cookie": lease.cookie,
        "landlord": lease.landlord_uri,
        "landlord_id": lease.landlord_id,
        "remaining": lease.remaining if not math.isinf(lease.expiration) else math.inf,
        "term": lease.term,
    }
    if lease.replicated:  # a plain landlord's lease travels exactly as it did before replicas
        data["landlords"] = list(lease.landlords)
    return data


def lease_from_dict(classname: str, data: dict[str, Any]) -> LandlordLease:
    cookie, landlord, landlord_id, remaining = checked_fields(
        data, classname, {"cookie": str, "landlord": str, "landlord_id": str, "remaining": (int, float)})
    if not remaining >= 0:
        raise ValueError(f"malformed {classname}: remaining is {remaining!r}")
    term = checked_fields(data, classname, {"term": (int, float)})[0] if "term" in data else remaining
    if not term >= 0:
        raise ValueError(f"malformed {classname}: term is {term!r}")
    # the URIs themselves are checked by LandlordLease (check_landlords): a clear TypeError or ValueError
    landlords = checked_fields(data, classname, {"landlords": (list, tuple)})[0] if "landlords" in data else None
    return LandlordLease(cookie, landlord, landlord_id, SYSTEM_CLOCK.time() + remaining, term=term,
                         landlords=landlords)


# -- RenewResults --------------------------------------------------------------

def results_to_dict(results: RenewResults) -> dict[str, Any]:
    return {"__class__": RENEW_RESULTS_CLASS, "granted": list(results.granted), "denied": list(results.denied)}


def results_from_dict(classname: str, data: dict[str, Any]) -> RenewResults:
    granted, denied = checked_fields(data, classname, {"granted": list, "denied": list})
    # nested classes are not yet recreated when the outer converter runs
    denied = [SerializerBase.dict_to_class(d) if isinstance(d, dict) else d for d in denied]
    if not all(isinstance(e, BaseException) for e in denied):
        raise TypeError(f"malformed {classname}: denied holds non-exceptions")
    return RenewResults(granted, denied)


# -- errors ----------------------------------------------------------------------

def _exception_name(cls: type[BaseException]) -> str:
    return f"{cls.__module__}.{cls.__name__}"


def register_exception(cls: type[BaseException]) -> None:
    """Let exceptions of ``cls`` cross the wire as themselves.

    Call it on both sides for your own subclasses of the landlord errors
    (those of landlord itself are registered on import).
    """
    def from_dict(classname: str, data: dict[str, Any]) -> BaseException:
        if not isinstance(data.get("args", ()), (list, tuple)):
            raise TypeError(f"malformed {classname}: args is not a list")
        attributes = data.get("attributes") or {}
        if not isinstance(attributes, dict) or not all(isinstance(name, str) for name in attributes):
            raise TypeError(f"malformed {classname}: attributes is not a dict of names")
        data = dict(data, args=list(data.get("args", ())), attributes=attributes)
        return SerializerBase.make_exception(cls, data)

    SerializerBase.register_dict_to_class(_exception_name(cls), from_dict)


def map_error_to_dict(error: LeaseMapError) -> dict[str, Any]:
    return {"__class__": _exception_name(LeaseMapError), "__exception__": True,
            "message": str(error), "failures": [[lease, exc] for lease, exc in error.failures.items()]}


def map_error_from_dict(classname: str, data: dict[str, Any]) -> LeaseMapError:
    message, failures = checked_fields(data, classname, {"message": str, "failures": list})
    pairs = []
    for pair in failures:
        if not isinstance(pair, list) or len(pair) != 2:
            raise ValueError(f"malformed {classname}: a failure is not a [lease, error] pair")
        pairs.append(tuple(SerializerBase.dict_to_class(p) if isinstance(p, dict) else p for p in pair))
    return LeaseMapError(dict(pairs), message)


def register_converters(cls: type, classname: str, to_dict: Callable[[Any], dict[str, Any]],
              from_dict: Callable[[str, dict[str, Any]], Any]) -> None:
    """Register both converters of ``cls``, which travels tagged ``classname``."""
    SerializerBase.register_class_to_dict(cls, to_dict)
    SerializerBase.register_dict_to_class(classname, from_dict)


def register_all() -> None:
    """Register every landlord converter, and landlord's serializers in Pyro5's tables (idempotent)."""
    install_serializers()
    register_converters(LandlordLease, LEASE_CLASS, lease_to_dict, lease_from_dict)
    register_converters(RenewResults, RENEW_RESULTS_CLASS, results_to_dict, results_from_dict)
    register_converters(LeaseMapError, _exception_name(LeaseMapError), map_error_to_dict, map_error_from_dict)
    for cls in (LeaseError, LeaseDeniedError, UnknownLeaseError, NotLeaderError, StaleTokenError):
        register_exception(cls)


register_all()
