"""The client's handle on a registration: :class:`ServiceRegistration`."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from landlord import LandlordLease

from .entry import Entry

__all__ = ["ServiceRegistration", "DEFAULT_LEASE", "DEFAULT_MAX_LEASE"]

# The lookup service's terms, here where its clients can see them too (a client
# module never imports the service's): a LookupCache waits this long for an orphan.
DEFAULT_MAX_LEASE = 300.0  #: seconds: a dead service is gone within five minutes at worst
DEFAULT_LEASE = 60.0       #: seconds, for a registration asking for ANY


@dataclasses.dataclass(frozen=True, slots=True)
class ServiceRegistration:
    """What ``register`` returns: the service's id, the registration's lease,
    and the means to change the registered attributes.

    Holding the lease is the capability: every change is sent with the
    lease's cookie, so only its holder can make it. A value: equal, and
    hashed, by its id and its lease (the lease's landlord and cookie, which
    its renewals never change).

    Args:
        service_id: the id the lookup service gave (or kept for) the service.
        lease: the registration's lease, a lease of the lookup service.
        secret: when the lookup service assigned the id, the registration
            secret it derived the id from: the proof that registers this id
            again, here or with any lookup service, after the lease has ended
            (see :mod:`lookup.ownership`); ``None`` when the registrant gave the
            id. Keep it as you would the lease; it is left out of ``repr``.

    Raises:
        TypeError: a ``service_id`` or ``secret`` that is not a str, or a lease that is not a LandlordLease.
    """

    service_id: str
    lease: LandlordLease
    secret: str | None = dataclasses.field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.service_id, str):
            raise TypeError(f"service_id must be a str, got {type(self.service_id).__name__}")
        if not isinstance(self.lease, LandlordLease):
            raise TypeError(f"lease must be a LandlordLease, got {type(self.lease).__name__}")
        if self.secret is not None and not isinstance(self.secret, str):
            raise TypeError(f"secret must be a str or None, got {type(self.secret).__name__}")

    def add_attributes(self, entries: Iterable[Entry]) -> None:
        """Add ``entries`` to the registered item's attributes.

        Raises:
            UnknownLeaseError: the registration's lease has ended.
            TypeError, ValueError: not a list of entries.
        """
        self.lease.call_landlord("add_attributes", self.lease.cookie, list(entries))

    def modify_attributes(self, templates: Sequence[Entry], entries: Sequence[Entry | None]) -> None:
        """Change the attributes matched by ``templates[i]``: set the fields that
        ``entries[i]`` does not leave ``None``, or delete them where ``entries[i]`` is ``None``.

        Raises:
            UnknownLeaseError: the registration's lease has ended.
            TypeError, ValueError: lists of different lengths, or an entry of
                another class than its template.
        """
        self.lease.call_landlord("modify_attributes", self.lease.cookie, list(templates), list(entries))

    def set_attributes(self, entries: Iterable[Entry]) -> None:
        """Replace all the registered item's attributes with ``entries``.

        Raises:
            UnknownLeaseError: the registration's lease has ended.
            TypeError, ValueError: not a list of entries.
        """
        self.lease.call_landlord("set_attributes", self.lease.cookie, list(entries))
