"""What a lease renewal service holds, kept as one record: :class:`SetLedger`.

The service (:mod:`~landlord.renewalservice.service`) decides when a set is made,
a lease added or lost, a set ended; the ledger keeps the books those decisions
change, so that they always agree:

- its renewal sets, by id;
- the set each lease is in (a lease is in one set at most);
- what each client's sets hold, against what a client may hold
  (:class:`~landlord.renewalservice.service.RenewalLimits`): so many sets, so many
  leases in a set, so many leases in all; a client holding nothing is forgotten;
- the set store (:class:`~landlord.renewalservice.sets.SetStore`), when there is
  one, written as each change is made.

No threads, no clock and no remote calls: the service calls it under its lock,
and it is tested without one.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Protocol

from ..errors import UnknownLeaseError
from ..lease import Lease
from .sets import Member, RenewalSet, SetStore

__all__ = ["SetLedger", "ClientLimits"]

_KEYS = itertools.count(1)  # member keys of services without a store


class ClientLimits(Protocol):
    """What one client may hold (:class:`~landlord.renewalservice.service.RenewalLimits` is one)."""

    @property
    def sets_per_client(self) -> int: ...

    @property
    def leases_per_set(self) -> int: ...

    @property
    def leases_per_client(self) -> int: ...


@dataclasses.dataclass(slots=True)
class _Held:
    """What one client's sets hold."""

    sets: int = 0
    leases: int = 0


class SetLedger:
    """A renewal service's sets, whose set each lease is in, and what each client holds (see the module docstring).

    Not thread-safe: its owner's lock guards it.

    Args:
        limits: what one client may hold.
        store: where the sets and their leases are written (``None``: in memory only); the ledger
            writes to it, its owner opens and closes it.
    """

    def __init__(self, limits: ClientLimits, store: SetStore | None = None) -> None:
        self.limits = limits
        self.store = store
        self.sets: dict[str, RenewalSet] = {}
        self._owner: dict[Lease, str] = {}  # each lease is in one set at most
        self._held: dict[str, _Held] = {}  # by client: what its sets hold
        #: calls refused so far by each limit, by its name (read by the metrics when scraped)
        self.refused = dict.fromkeys(("sets_per_client", "leases_per_set", "leases_per_client"), 0)

    def __len__(self) -> int:
        return len(self.sets)

    def held_by(self, client: str) -> tuple[int, int]:
        """How many sets ``client`` holds, and leases in them."""
        held = self._held.get(client)
        return (held.sets, held.leases) if held is not None else (0, 0)

    def leases(self) -> list[Lease]:
        """Every lease in a set."""
        return list(self._owner)

    # -- sets -------------------------------------------------------------------------------

    def open(self, set_id: str, client: str) -> RenewalSet:
        """File a new, empty set of ``client``'s, its lease not yet granted (:meth:`name` it then).

        Raises:
            ValueError: ``client`` holds ``sets_per_client`` sets already.
        """
        held = self._held.setdefault(client, _Held())
        if held.sets >= self.limits.sets_per_client:
            self.refused["sets_per_client"] += 1
            raise ValueError(f"a client may hold at most {self.limits.sets_per_client} renewal sets "
                             f"({client} holds {held.sets}); let one end or cancel its lease first")
        renewal_set = self.sets[set_id] = RenewalSet(set_id, "", client=client)
        held.sets += 1
        return renewal_set

    def unopen(self, set_id: str) -> None:
        """A set opened whose lease was not granted after all: forgotten, if it is still filed."""
        renewal_set = self.sets.pop(set_id, None)
        if renewal_set is not None:
            self._count(renewal_set.client, sets=-1)

    def name(self, renewal_set: RenewalSet, cookie: str) -> None:
        """Give an opened set its lease's cookie; written if the set is still filed (not ended meanwhile)."""
        renewal_set.cookie = cookie
        if self.sets.get(renewal_set.set_id) is renewal_set:
            self.save(renewal_set)

    def save(self, renewal_set: RenewalSet) -> None:
        """Write a set's own fields (its cookie, listeners, client)."""
        if self.store is not None:
            self.store.put_set(renewal_set)

    def end(self, set_id: str) -> tuple[RenewalSet | None, list[Lease]]:
        """The set's lease ended: it is forgotten, and written off. The set (``None`` if it was
        not filed), and the leases it held (no longer in any set)."""
        renewal_set = self.sets.pop(set_id, None)
        leases = list(renewal_set.members) if renewal_set is not None else []
        if renewal_set is not None:
            self._count(renewal_set.client, sets=-1, leases=-len(leases))
        for lease in leases:
            self._owner.pop(lease, None)
        if self.store is not None:
            self.store.delete_set(set_id)
        return renewal_set, leases

    def restore(self, renewal_set: RenewalSet, members: list[tuple[Lease, Member]]) -> None:
        """File a set read back from the store, with its members (already written there)."""
        self.sets[renewal_set.set_id] = renewal_set
        self._count(renewal_set.client, sets=1, leases=len(members))
        for lease, member in members:
            renewal_set.members[lease] = member
            self._owner[lease] = renewal_set.set_id

    # -- leases -----------------------------------------------------------------------------

    def add(self, renewal_set: RenewalSet, lease: Lease, desired: float, renew_duration: float) -> Member:
        """Put ``lease`` in ``renewal_set`` until ``desired`` (wall clock), asking ``renew_duration``
        per renewal; a lease in the set already gets these settings. Its member record, not yet
        written (:meth:`write`).

        Raises:
            UnknownLeaseError: the set ended (after its caller found it, before it took the lock).
            ValueError: the lease is in another set; or, a lease new to the set, the set is full
                (``leases_per_set``) or its client holds ``leases_per_client`` leases.
        """
        self._check_filed(renewal_set)
        owner = self._owner.get(lease)
        if owner is not None and owner != renewal_set.set_id:
            raise ValueError(f"{lease!r} is in another renewal set; remove it there first")
        old = renewal_set.members.get(lease)
        if old is None:
            self._check_room(renewal_set)
        key = old.key if old is not None else self._new_key()
        member = renewal_set.members[lease] = Member(key, desired, renew_duration)
        if old is None:
            self._count(renewal_set.client, leases=1)
        self._owner[lease] = renewal_set.set_id
        return member

    def write(self, renewal_set: RenewalSet, lease: Lease, member: Member) -> None:
        """Write a lease's member record (once it is renewed)."""
        if self.store is not None:
            self.store.put_member(renewal_set.set_id, lease, member)

    def drop(self, renewal_set: RenewalSet, lease: Lease) -> Member | None:
        """Take ``lease`` out of its set; its member record, if it was there.

        Raises:
            UnknownLeaseError: the set ended (its leases were given back then, counted once).
        """
        self._check_filed(renewal_set)
        member = renewal_set.members.pop(lease, None)
        if member is not None:
            self._count(renewal_set.client, leases=-1)
            self._owner.pop(lease, None)
            if self.store is not None:
                self.store.delete_member(renewal_set.set_id, member.key)
        return member

    # -- the books --------------------------------------------------------------------------

    def _check_filed(self, renewal_set: RenewalSet) -> None:
        """Raise unless ``renewal_set`` is still filed: a set found before its lease ended must not
        take a lease (it would be renewed for no one, held against its client for good) nor give one
        back twice.

        Raises:
            UnknownLeaseError: it is not.
        """
        if self.sets.get(renewal_set.set_id) is not renewal_set:
            raise UnknownLeaseError(f"renewal set {renewal_set.set_id} has ended")

    def _new_key(self) -> int:
        return self.store.new_key() if self.store is not None else next(_KEYS)

    def _check_room(self, renewal_set: RenewalSet) -> None:
        """Refuse a lease more in ``renewal_set`` if it, or its client, is full.

        Raises:
            ValueError: it is.
        """
        limits = self.limits
        if len(renewal_set.members) >= limits.leases_per_set:
            self.refused["leases_per_set"] += 1
            raise ValueError(f"a renewal set holds at most {limits.leases_per_set} leases")
        held = self._held.get(renewal_set.client)
        if held is not None and held.leases >= limits.leases_per_client:
            self.refused["leases_per_client"] += 1
            raise ValueError(f"a client's renewal sets hold at most {limits.leases_per_client} leases together "
                             f"({renewal_set.client} holds {held.leases})")

    def _count(self, client: str, *, sets: int = 0, leases: int = 0) -> None:
        """Add to what ``client`` holds; a client holding nothing is forgotten."""
        held = self._held.setdefault(client, _Held())
        held.sets += sets
        held.leases += leases
        if held.sets <= 0 and held.leases <= 0:
            del self._held[client]
