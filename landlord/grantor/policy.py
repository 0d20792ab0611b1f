"""Lease policies: how long a landlord grants and renews for."""

from __future__ import annotations

import abc
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..clock import SYSTEM_CLOCK, Clock
from ..duration import ANY, FOREVER, check_duration
from ..errors import LeaseDeniedError

if TYPE_CHECKING:
    from ..lease import Lease
    from .resource import LeasedResource

__all__ = ["LeasePolicy", "LeaseDurationPolicy", "LeaseFactory"]

LeaseFactory = Callable[["LeasedResource", float], "Lease"]
"""Makes the holder's lease for a resource just granted ``granted`` seconds."""


class LeasePolicy(abc.ABC):
    """Decides the terms of grants and renewals for one landlord.

    A landlord binds its policy on construction, giving it the landlord's
    clock and the factory that makes its leases; a policy serves one landlord.
    A policy may refuse by raising :class:`~landlord.LeaseDeniedError`.

    Attributes:
        grace: seconds a lease's resources are held after its term ends, in
            which a renewal revives it (0: freed at once). Read by the lease
            manager when it is made.
    """

    grace: float = 0.0

    def __init__(self) -> None:
        self._clock: Clock = SYSTEM_CLOCK
        self._lease_factory: LeaseFactory | None = None
        self._held: Callable[[], int] = _none_held

    def bind(self, *, clock: Clock, lease_factory: LeaseFactory, held: Callable[[], int] | None = None) -> None:
        """Attach the policy to a landlord.

        Args:
            clock: the landlord's clock.
            lease_factory: makes the holder's lease for a grant.
            held: how many leases the landlord holds now (for a policy that
                adapts its terms to its load; see :meth:`held`).

        Raises:
            ValueError: the policy already serves another landlord.
        """
        if self._lease_factory is not None and self._lease_factory != lease_factory:
            raise ValueError("this policy already serves another landlord; give each landlord its own")
        self._clock = clock
        self._lease_factory = lease_factory
        if held is not None:
            self._held = held

    def held(self) -> int:
        """How many leases the landlord this policy serves holds now (0 before it is bound)."""
        return self._held()

    @property
    def clock(self) -> Clock:
        return self._clock

    @abc.abstractmethod
    def lease_for(self, resource: LeasedResource, requested: float) -> Lease:
        """Grant a new lease on ``resource``: set its expiration and return the holder's lease."""

    @abc.abstractmethod
    def renew(self, resource: LeasedResource, requested: float) -> float:
        """Renew the lease on ``resource``: set its new expiration and return the seconds granted."""

    def ensure_current(self, resource: LeasedResource) -> bool:
        """Whether the lease on ``resource`` is still in force."""
        return resource.expiration > self._clock.monotonic()

    def _make_lease(self, resource: LeasedResource, granted: float) -> Lease:
        if self._lease_factory is None:
            raise RuntimeError("this policy is not bound to a landlord")
        return self._lease_factory(resource, granted)


class LeaseDurationPolicy(LeasePolicy):
    """Grants what was asked, within a maximum.

    * ``ANY`` gets the default; ``FOREVER`` or anything above the maximum gets the maximum.
    * A renewal never shortens a lease unless the holder asked for less than
      it has left: a holder asking for ``ANY`` or more than the maximum keeps
      its current expiration when that is later.
    * With a ``lifetime``, no grant or renewal reaches past that many seconds
      after the lease was granted: it is granted up to the cap, and once the
      lease's term reaches the cap a renewal is refused with a
      :class:`~landlord.LeaseDeniedError` that names it.

    Args:
        maximum: the longest grant, in seconds (``FOREVER`` for no limit).
        default: the grant for ``ANY``; at most ``maximum``.
        grace: seconds a lease's resources are kept after its term ends,
            revivable by a renewal (see :attr:`LeasePolicy.grace`; default 0).
        lifetime: the longest a lease may live in all, renewals included,
            counted from its grant (default ``FOREVER``: no cap).

    Raises:
        ValueError: any of them not a number, ``maximum``, ``default`` or
            ``lifetime`` not positive, ``default > maximum``, or ``grace``
            negative, NaN or infinite.
    """

    def __init__(self, maximum: float = FOREVER, default: float | None = None, *, grace: float = 0.0,
                 lifetime: float = FOREVER) -> None:
        super().__init__()
        maximum = check_duration(maximum, name="maximum", allow_any=False)
        if default is None:
            default = min(60.0, maximum)
        default = check_duration(default, name="default", allow_any=False)
        if not maximum > 0 or not default > 0:
            raise ValueError(f"maximum and default must be positive, got {maximum!r} and {default!r}")
        if default > maximum:
            raise ValueError(f"default ({default!r}) exceeds maximum ({maximum!r})")
        grace = check_duration(grace, name="grace", allow_any=False)
        if math.isinf(grace):
            raise ValueError("grace must be finite: a lease in grace forever would never free its resource")
        lifetime = check_duration(lifetime, name="lifetime", allow_any=False)
        if not lifetime > 0:
            raise ValueError(f"lifetime must be positive, got {lifetime!r}")
        self.maximum = maximum
        self.default = default
        self.grace = grace
        self.lifetime = lifetime

    def grant_for(self, requested: float) -> float:
        """The seconds this policy grants for a request of ``requested``."""
        return self.default if requested == ANY else min(requested, self.maximum)

    def lease_for(self, resource: LeasedResource, requested: float) -> Lease:
        granted = min(self.grant_for(check_duration(requested)), self.lifetime)
        now = self._clock.monotonic()
        if not math.isinf(self.lifetime):
            resource.extended().deadline = now + self.lifetime
        resource.expiration = now + granted
        return self._make_lease(resource, granted)

    def renew(self, resource: LeasedResource, requested: float) -> float:
        requested = check_duration(requested)
        now = self._clock.monotonic()
        granted = self.grant_for(requested)
        left = resource.expiration - now
        if granted < left and (requested == ANY or requested >= left):  # shortened only if asked for less
            granted = left
        extra = resource.extra  # its lifetime cap: most leases have none
        if extra is not None and now + granted > extra.deadline:
            if resource.expiration >= extra.deadline:  # nothing left to give: say so, rather than grant 0 s
                raise LeaseDeniedError(f"this lease has reached the landlord's lifetime cap of "
                                       f"{self.lifetime:g} s since its grant; ask for a new lease")
            granted = extra.deadline - now
        resource.expiration = now + granted
        return granted

    def __repr__(self) -> str:
        options = [f"maximum={_seconds(self.maximum)}", f"default={self.default:g}"]
        if self.grace:
            options.append(f"grace={self.grace:g}")
        if not math.isinf(self.lifetime):
            options.append(f"lifetime={self.lifetime:g}")
        return f"LeaseDurationPolicy({', '.join(options)})"


def _none_held() -> int:
    return 0


def _seconds(value: float) -> str:
    return "FOREVER" if math.isinf(value) else f"{value:g}"
