"""Lifecycle hooks: what a landlord tells observers as its leases are granted, renewed and end.

Subclass :class:`LeaseHooks`, override what you need, and give it to a
:class:`~landlord.Landlord` (``hooks=``). Metrics (:mod:`landlord.metrics`)
are one such observer; an audit log or a quota is another.

Every hook is called outside the lease manager's lock, on the thread that
made the change (a request thread for grants, renewals and cancels; the
reaper for expiries). A hook must be quick: a renewal waits for its hook.
What a hook raises is logged and does not undo the change or stop the others.
Renewals and expiries come in batches (one call per chunk of up to
``REAP_CHUNK`` leases), so an observer's cost per lease stays small.

Named leases (:meth:`~landlord.Landlord.acquire`) are leases too, told as
above; four more hooks say what became of the names asked for: held at once
or after a wait (``name_acquired``), queued (``name_queued``), refused
(``name_refused``), a wait that timed out (``name_timed_out``). Those told of a
waiter (a grant to it, its timeout) are called under the landlord's lock of
its named leases: quick, and never calling the landlord back.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .resource import LeasedResource

__all__ = ["LeaseHooks", "HookFanout"]

log = logging.getLogger("landlord.hooks")  # its name before it moved


class LeaseHooks:
    """What a landlord tells an observer; every method does nothing unless overridden."""

    def granted(self, leased: LeasedResource) -> None:
        """A new lease was granted (``leased.expiration`` is when its first term ends)."""

    def renewed(self, leased: Sequence[LeasedResource]) -> None:
        """Leases were renewed (revived from grace among them), one call per batch."""

    def denied(self, cookie: str | None, error: Exception) -> None:
        """A grant (``cookie`` ``None``) or a renewal was refused: the policy said no
        (:class:`~landlord.LeaseDeniedError`) or the lease is unknown or ended
        (:class:`~landlord.UnknownLeaseError`)."""

    def cancelled(self, leased: LeasedResource) -> None:
        """A live lease (or one in its grace) was cancelled and its resources freed."""

    def expired(self, leased: Sequence[LeasedResource]) -> None:
        """Leases ran out (and their grace, if any) and their resources were freed."""

    def revoked(self, leased: LeasedResource, reason: str) -> None:
        """The landlord ended a lease before its term (:meth:`~landlord.Landlord.revoke`)."""

    def renewals_served(self, count: int, seconds: float) -> None:
        """A renewal call for ``count`` leases took the landlord ``seconds`` to answer."""

    def name_acquired(self, name: str, token: int, waited: bool) -> None:
        """A named lease holds ``name`` now, with fencing token ``token``: granted at once (``waited``
        false), or handed over to it after it waited (its turn came: a holder released, expired,
        was evicted, or handed the name to it)."""

    def name_queued(self, name: str) -> None:
        """A request for ``name`` waits: the name is held (or closed by a lock-delay)."""

    def name_refused(self, name: str, error: Exception) -> None:
        """A request for ``name`` was refused (``error``, a :class:`~landlord.LeaseDeniedError`): the
        name is held and the caller would not wait, too many names or waiters, or the policy said no."""

    def name_timed_out(self, name: str) -> None:
        """A wait for ``name`` timed out before its turn came (its lease is revoked)."""


class HookFanout(LeaseHooks):
    """Tells several observers in turn; one that raises is logged and the rest are still told.

    Args:
        hooks: the observers, called in this order.

    Raises:
        TypeError: one of them is not a :class:`LeaseHooks`.
    """

    def __init__(self, hooks: Sequence[LeaseHooks]) -> None:
        for hook in hooks:
            if not isinstance(hook, LeaseHooks):
                raise TypeError(f"hooks must be LeaseHooks, got {type(hook).__name__}")
        self.hooks = tuple(hooks)

    def granted(self, leased: LeasedResource) -> None:
        for hook in self.hooks:
            _guarded(hook.granted, leased)

    def renewed(self, leased: Sequence[LeasedResource]) -> None:
        for hook in self.hooks:
            _guarded(hook.renewed, leased)

    def denied(self, cookie: str | None, error: Exception) -> None:
        for hook in self.hooks:
            _guarded(hook.denied, cookie, error)

    def cancelled(self, leased: LeasedResource) -> None:
        for hook in self.hooks:
            _guarded(hook.cancelled, leased)

    def expired(self, leased: Sequence[LeasedResource]) -> None:
        for hook in self.hooks:
            _guarded(hook.expired, leased)

    def revoked(self, leased: LeasedResource, reason: str) -> None:
        for hook in self.hooks:
            _guarded(hook.revoked, leased, reason)

    def renewals_served(self, count: int, seconds: float) -> None:
        for hook in self.hooks:
            _guarded(hook.renewals_served, count, seconds)

    def name_acquired(self, name: str, token: int, waited: bool) -> None:
        for hook in self.hooks:
            _guarded(hook.name_acquired, name, token, waited)

    def name_queued(self, name: str) -> None:
        for hook in self.hooks:
            _guarded(hook.name_queued, name)

    def name_refused(self, name: str, error: Exception) -> None:
        for hook in self.hooks:
            _guarded(hook.name_refused, name, error)

    def name_timed_out(self, name: str) -> None:
        for hook in self.hooks:
            _guarded(hook.name_timed_out, name)


def _guarded(call: object, *args: object) -> None:
    try:
        call(*args)  # type: ignore[operator]
    except Exception:
        log.exception("lease hook %r failed", call)
