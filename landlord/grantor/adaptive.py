"""Load-adaptive lease terms: :class:`AdaptivePolicy` holds a landlord's renewal load under a cap.

Why terms grow with load, not shrink: a holder renews about ``k`` times per
term (a :class:`~landlord.LeaseRenewalManager` three times: a third into each
term), so ``n`` leases of term ``T`` cost the landlord ``n * k / T`` renewals
a second. Shorter terms under more leases would multiply the load; the term
that holds it at ``R`` renewals a second is ``T = n * k / R``. That is
Jini's Reggie rule (its maximum lease grows with the registrations it holds,
``count * minRenewalInterval``), with ``k`` measured instead of assumed to be 1.
"""

from __future__ import annotations

import logging
import math
import numbers
from typing import TYPE_CHECKING

from ..duration import FOREVER
from .policy import LeaseDurationPolicy

if TYPE_CHECKING:
    from ..lease import Lease
    from .resource import LeasedResource

__all__ = ["AdaptivePolicy", "AIM", "SLOTS"]

log = logging.getLogger("landlord.adaptive")  # its name before it moved

AIM = 0.8  # of the cap: the margin takes a window's noise and the leases added between two looks at the count
SLOTS = 10  # the sliding window's slots: it moves on by a tenth of itself


class AdaptivePolicy(LeaseDurationPolicy):
    """Grants terms that keep the landlord's renewal load under ``renewal_cap``:
    longer as leases grow or renew more often, back to ``min_term`` when idle.

    The term ``T`` is ``n * k / (AIM * renewal_cap)``, within ``[min_term, max_term]``:

    * ``n``, the leases held (:meth:`~landlord.LeasePolicy.held`), read at each
      grant and each time the window moves on: terms grow as soon as leases do,
      before their renewals arrive.
    * ``k``, the renewals per lease per term, measured over a sliding
      ``window`` on the landlord's clock: ``1 + L / m``, where ``L`` is the
      seconds of term holders handed back per second (the sum of each renewal's
      time left, over the window) and ``m`` the leases held on average over it.
      A holder renewing a share ``f`` into its term hands back ``(1 - f) / f``
      terms per term whatever the term is, so ``k`` stays right while terms
      change; a lease nobody renews counts once per term, as in Reggie, and so
      does one expired but not yet freed (a lazy reaper's), until it is. Leases
      just granted count in ``m`` before their first renewal: after a jump in
      leases ``k`` reads low for a renewal interval, which ``AIM`` leaves room for.

    In steady state the landlord serves ``AIM * renewal_cap`` renewals a
    second, or fewer where ``min_term`` binds: few leases, or holders gone
    quiet, get short terms, so a dead holder's lease ends soon. Where
    ``max_term`` binds the load exceeds the cap: raise ``max_term`` or the cap.

    Otherwise it is a :class:`~landlord.LeaseDurationPolicy` whose ``maximum``
    and ``default`` are the current term: ``ANY``, ``FOREVER`` and anything
    longer get it, a shorter request is granted as asked (a holder asking less
    than the term renews as often as it likes: only terms the policy chooses
    hold the cap, so give a :class:`~landlord.LeaseRenewalManager`
    ``renew_duration=ANY``; by default it asks for the lease's first term
    forever). A renewal never shortens a lease its holder did not ask to
    shorten, and ``grace`` and ``lifetime`` work as there (so a renewal near
    the lifetime cap may get less than ``min_term``).

    Why not shorter terms under load as well (a capacity at which terms
    shorten, so stale holdings free sooner)? ``load * term = n * k``: for a
    given count the cap fixes the shortest term, and this policy grants just
    that (or ``min_term``). A shorter term under more leases could only break
    the cap; to bound the resources held, deny grants past a count instead.

    Cost: a renewal adds a compare and two additions (a few per cent of an
    in-process ``renew_all``); once per slot (a tenth of ``window``) the
    window moves on, under the lease manager's lock (``SLOTS`` sums and one
    :meth:`~landlord.LeasePolicy.held`). A grant reads ``held()`` and sets the
    term outside the lock: a float written whole, and either writer's term is
    a current one. ``benchmarks/bench_adaptive.py`` measures the load held
    against the cap while the leases grow tenfold; the figures are in
    ``docs/performance.md``.

    Args:
        renewal_cap: renewals per second the landlord wants to serve at most.
        min_term: the shortest term it grants, in seconds (default 10): the
            term of an idle landlord.
        max_term: the longest, in seconds (default 600); finite, at least ``min_term``.
        window: seconds over which renewals are measured (default 60). Make it
            at least a renewal interval (about a third of the longest term you
            expect) so a holder that renews in batches shows in every window.
        grace: as :class:`~landlord.LeaseDurationPolicy` (default 0).
        lifetime: as :class:`~landlord.LeaseDurationPolicy` (default ``FOREVER``: no cap).

    Raises:
        TypeError: ``renewal_cap``, ``min_term``, ``max_term`` or ``window`` not a number.
        ValueError: one of them not positive, NaN or infinite; ``max_term < min_term``;
            ``grace`` or ``lifetime`` refused by :class:`~landlord.LeaseDurationPolicy`.
    """

    def __init__(self, *, renewal_cap: float, min_term: float = 10.0, max_term: float = 600.0,
                 window: float = 60.0, grace: float = 0.0, lifetime: float = FOREVER) -> None:
        renewal_cap = _positive(renewal_cap, "renewal_cap")
        min_term = _positive(min_term, "min_term")
        max_term = _positive(max_term, "max_term")
        window = _positive(window, "window")
        if max_term < min_term:
            raise ValueError(f"max_term ({max_term:g}) is shorter than min_term ({min_term:g})")
        super().__init__(max_term, min_term, grace=grace, lifetime=lifetime)
        self.renewal_cap = renewal_cap
        self.min_term = min_term
        self.max_term = max_term
        self.window = window
        self.maximum = self.default = min_term  # the term now: the parent grants by these two
        self._term_per_renewal = 1.0 / (AIM * renewal_cap)  # seconds of term per renewal a term
        self._width = window / SLOTS
        self._slot_end = -math.inf  # the window starts at the first renewal
        self._slot = 0
        self._filled = 0  # slots closed so far, up to SLOTS
        self._left = 0.0  # the open slot's seconds handed back, and its renewals
        self._renewals = 0
        self._slots_left = [0.0] * SLOTS  # the closed slots'; and the leases held as each closed
        self._slots_renewals = [0] * SLOTS
        self._slots_held = [0] * SLOTS
        self._per_lease = 1.0  # k: renewals per lease per term, as last measured
        self._rate = 0.0  # renewals per second over the last window

    @property
    def term(self) -> float:
        """The term granted now to ``ANY`` or a longer request, in seconds."""
        return self.maximum

    @property
    def renewal_rate(self) -> float:
        """Renewals per second over the window, as of the last slot closed (0 after a window with none)."""
        return 0.0 if self._quiet() else self._rate

    @property
    def renewals_per_term(self) -> float:
        """``k``: how many times a lease is renewed per term, as last measured (1 when none are)."""
        return 1.0 if self._quiet() else self._per_lease

    def lease_for(self, resource: LeasedResource, requested: float) -> Lease:
        # Not under the manager's lock: reads the count and the last measure, writes only the term.
        # The window moves only with renewals; when none came for a whole window, none are counted.
        self.maximum = self.default = self._term_for(self.held(), self.renewals_per_term)
        return super().lease_for(resource, requested)

    def renew(self, resource: LeasedResource, requested: float) -> float:
        # Under the manager's lock, for every lease renewed. The base class is named, not found
        # through super(), and its clock reading is taken back from the expiration it set: with
        # super() and a clock read of its own this cost 12-13% of an in-process renew_all, now 3-7%
        # (0.11 us a lease). At a slot's end the window moves on after this grant: the next one has the new term.
        old = resource.expiration
        granted = LeaseDurationPolicy.renew(self, resource, requested)  # a refusal raises: not a renewal served
        now = resource.expiration - granted  # NaN for a lease granted FOREVER before: not measured
        if now >= self._slot_end:
            self._roll(now)
        if old > now:  # a lease revived from its grace hands nothing back
            self._left += old - now
        self._renewals += 1
        return granted

    def _roll(self, now: float) -> None:
        """Close the open slot (and any the clock passed with no renewal), measure, set the term."""
        width = self._width
        if self._slot_end == -math.inf:
            self._slot_end = now + width
            return
        passed = int((now - self._slot_end) // width) + 1
        held = self.held()
        for _ in range(min(passed, SLOTS)):  # past a window of silence, every slot is empty
            slot = self._slot
            self._slots_left[slot] = self._left
            self._slots_renewals[slot] = self._renewals
            self._slots_held[slot] = held
            self._left = 0.0
            self._renewals = 0
            self._slot = (slot + 1) % SLOTS
        self._slot_end += passed * width
        self._filled = min(SLOTS, self._filled + passed)
        span = self._filled * width
        mean_held = sum(self._slots_held) / self._filled  # slots never closed hold 0
        handed_back = sum(self._slots_left) / span
        self._per_lease = 1.0 + (handed_back / mean_held if mean_held > 0 else 0.0)
        self._rate = sum(self._slots_renewals) / span
        term = self._term_for(held, self._per_lease)
        if term != self.maximum:
            log.debug("term %.3g s for %d leases (%.3g renewals a term, %.4g/s measured)",
                      term, held, self._per_lease, self._rate)
        self.maximum = self.default = term

    def _term_for(self, held: int, per_lease: float) -> float:
        return min(max(held * per_lease * self._term_per_renewal, self.min_term), self.max_term)

    def _quiet(self) -> bool:
        """No renewal for a whole window: what was last measured is out of it."""
        return self._clock.monotonic() >= self._slot_end + self.window

    def __repr__(self) -> str:
        options = [f"renewal_cap={self.renewal_cap:g}", f"min_term={self.min_term:g}",
                   f"max_term={self.max_term:g}", f"window={self.window:g}"]
        if self.grace:
            options.append(f"grace={self.grace:g}")
        if not math.isinf(self.lifetime):
            options.append(f"lifetime={self.lifetime:g}")
        return f"AdaptivePolicy({', '.join(options)}; term now {self.term:g})"


def _positive(value: object, name: str) -> float:
    """``value`` as a positive, finite float.

    Raises:
        TypeError: not a real number (a bool is not one).
        ValueError: not positive, NaN or infinite.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r:.50}")
    try:
        number = float(value)
    except OverflowError:  # an int past a float's range
        number = math.inf
    if not 0 < number < math.inf:
        raise ValueError(f"{name} must be positive and finite, got {value!r}")
    return number
