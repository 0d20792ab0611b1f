"""What a landlord keeps for each lease: :class:`LeasedResource`, and :class:`LeaseExtra`
(what only some leases carry: resources attached to them, a lifetime cap).

Its own module because the policy, the manager and the store all handle it,
and the manager uses the policy: kept in the manager, it would make the
policy import the module that imports it.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

__all__ = ["LeasedResource", "LeaseExtra"]


@dataclasses.dataclass(slots=True, eq=False)
class LeaseExtra:
    """What some leases carry beyond their resource; one slot on :class:`LeasedResource`,
    ``None`` for the leases that carry neither, so they cost one pointer more, not a record more.

    Args:
        attached: further resources freed with the lease (:meth:`landlord.Landlord.attach`).
        deadline: the monotonic time past which no renewal extends the lease (a
            policy's lifetime cap; ``inf``: none).
        listener: the URI of the holder's Pyro5 object to tell at once if the
            landlord revokes the lease (:meth:`landlord.Landlord.listen`); not stored.
    """

    attached: list[Any] = dataclasses.field(default_factory=list)
    deadline: float = math.inf
    listener: str | None = None


# eq=False: a record, equal only to itself (and hashed by identity), as before; slots keep it small, as
# there is one per lease; the generated __init__ is the plain one, so granting costs what it did.
@dataclasses.dataclass(slots=True, eq=False, repr=False)
class LeasedResource:
    """A resource under lease, as its landlord keeps it.

    Args:
        cookie: the lease's secret name.
        expiration: when the lease ends, on the landlord's *monotonic* clock.
        resource: the thing leased.
        extra: attached resources and a lifetime cap, for the leases that have them.
    """

    cookie: str
    expiration: float
    resource: Any
    extra: LeaseExtra | None = None

    @property
    def attached(self) -> list[Any]:
        """The further resources attached to this lease (a copy; empty for most)."""
        return [] if self.extra is None else list(self.extra.attached)

    @property
    def deadline(self) -> float:
        """The monotonic time past which no renewal extends this lease (``inf``: no cap)."""
        return math.inf if self.extra is None else self.extra.deadline

    def everything(self) -> list[Any]:
        """The resource and every resource attached to it: what is freed when the lease ends."""
        return [self.resource] if self.extra is None else [self.resource, *self.extra.attached]

    def extended(self) -> LeaseExtra:
        """This lease's :class:`LeaseExtra`, made on first use."""
        if self.extra is None:
            self.extra = LeaseExtra()
        return self.extra

    def __repr__(self) -> str:  # only a prefix of the cookie: the whole cookie is the capability
        return f"LeasedResource({self.cookie[:6]}…, expiration={self.expiration!r}, {self.resource!r:.60})"
