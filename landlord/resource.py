"""What a landlord keeps for each lease: :class:`LeasedResource`.

Its own module because the policy, the manager and the store all handle it,
and the manager uses the policy: kept in the manager, it would make the
policy import the module that imports it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LeasedResource"]


class LeasedResource:
    """A resource under lease, as its landlord keeps it.

    Args:
        cookie: the lease's secret name.
        expiration: when the lease ends, on the landlord's *monotonic* clock.
        resource: the thing leased.
    """

    __slots__ = ("cookie", "expiration", "resource")

    def __init__(self, cookie: str, expiration: float, resource: Any) -> None:
        self.cookie = cookie
        self.expiration = expiration
        self.resource = resource

    def __repr__(self) -> str:
        return f"LeasedResource({self.cookie[:6]}…, expiration={self.expiration!r}, {self.resource!r:.60})"
