"""What a landlord keeps for each lease: :class:`LeasedResource`.

Its own module because the policy, the manager and the store all handle it,
and the manager uses the policy: kept in the manager, it would make the
policy import the module that imports it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["LeasedResource"]


# eq=False: a record, equal only to itself (and hashed by identity), as before; slots keep it small, as
# there is one per lease; the generated __init__ is the plain one, so granting costs what it did.
@dataclasses.dataclass(slots=True, eq=False, repr=False)
class LeasedResource:
    """A resource under lease, as its landlord keeps it.

    Args:
        cookie: the lease's secret name.
        expiration: when the lease ends, on the landlord's *monotonic* clock.
        resource: the thing leased.
    """

    cookie: str
    expiration: float
    resource: Any

    def __repr__(self) -> str:  # only a prefix of the cookie: the whole cookie is the capability
        return f"LeasedResource({self.cookie[:6]}…, expiration={self.expiration!r}, {self.resource!r:.60})"
