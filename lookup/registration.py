"""The client's handle on a registration: :class:`ServiceRegistration`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from landlord import LandlordLease

from .entry import Entry

__all__ = ["ServiceRegistration"]


class ServiceRegistration:
    """What ``register`` returns: the service's id, the registration's lease,
    and the means to change the registered attributes.

    Holding the lease is the capability: every change is sent with the
    lease's cookie, so only its holder can make it.

    Args:
        service_id: the id the lookup service gave (or kept for) the service.
        lease: the registration's lease, a lease of the lookup service.

    Raises:
        TypeError: a ``service_id`` that is not a str, or a lease that is not a LandlordLease.
    """

    __slots__ = ("service_id", "lease")

    def __init__(self, service_id: str, lease: LandlordLease) -> None:
        if not isinstance(service_id, str):
            raise TypeError(f"service_id must be a str, got {type(service_id).__name__}")
        if not isinstance(lease, LandlordLease):
            raise TypeError(f"lease must be a LandlordLease, got {type(lease).__name__}")
        self.service_id = service_id
        self.lease = lease

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

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ServiceRegistration):
            return NotImplemented
        return self.service_id == other.service_id and self.lease == other.lease

    def __hash__(self) -> int:
        return hash((self.service_id, self.lease))

    def __repr__(self) -> str:
        return f"ServiceRegistration({self.service_id!r}, {self.lease!r})"
