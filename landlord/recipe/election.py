"""Leader election on a name: :class:`Election`, a :class:`~landlord.recipe.claim.Claim` of
limit 1 whose value is the candidate's identity.

Each candidate campaigns for the name; the landlord grants it to one at a
time, the others wait in line (first come, first served), and the leader
leads while its claim is :attr:`~Election.leading` (valid: the lease's
deadline less the margin, on this process's clock). Everything a claim
promises holds: a leader knows it lost before another can win, and its
:attr:`~Election.token` (the fencing token of its term) goes with every write,
for the resource to check. ::

    election = Election(landlord, "orders-writer", "host-a:8080")
    if election.campaign(timeout=30):
        while election.leading:
            write(election.token, ...)
    election.watch(lambda leader: print("the leader is now", leader))
    election.hand_over("host-b:8080")   # to a candidate waiting now: no gap, nobody else in between

Who leads is read (:meth:`~Election.leader`) or heard as it changes
(:meth:`~Election.watch`, pushed: :class:`~landlord.recipe.watch.HoldersWatch`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..holder.claiminbox import Holders
from .claim import DEFAULT_DURATION, Claim
from .watch import HoldersWatch

__all__ = ["Election", "leader_of"]


def leader_of(holders: Holders) -> tuple[int, str | None] | None:
    """The leader among a name's ``holders``, as (token, value), or ``None`` if nobody leads."""
    if not holders:
        return None
    token, value = holders[0]
    return token, value


class Election(Claim):
    """A candidate, ``value``, for leading ``name`` at ``landlord`` (see the module's docstring). Thread-safe.

    :meth:`campaign` waits to lead; :attr:`leading` says whether it leads now;
    :meth:`resign` steps down (the next candidate in line leads at once);
    :meth:`hand_over` passes leadership to a named candidate that is waiting.
    ``with election:`` campaigns as long as it takes, and resigns.

    Args:
        landlord: as :class:`~landlord.recipe.claim.Claim`'s.
        name: the name of what is led.
        value: this candidate's identity (an address, a host name): what :meth:`leader`
            and :meth:`watch` show of it, and what :meth:`hand_over` names; 1 to 256 printable
            characters, one per candidate.
        duration, lock_delay, margin, renewals, inbox: as :class:`~landlord.recipe.claim.Claim`'s.

    Raises:
        TypeError, ValueError: a bad argument (nothing is asked of the landlord).
    """

    def __init__(self, landlord: Any, name: str, value: str, *, duration: float = DEFAULT_DURATION,
                 lock_delay: float = 0.0, margin: float | None = None, **more: Any) -> None:
        if not isinstance(value, str) or not value:
            raise TypeError(f"value must be a non-empty str (the candidate's identity), got {value!r:.50}")
        super().__init__(landlord, name, limit=1, duration=duration, lock_delay=lock_delay, margin=margin,
                         value=value, **more)
        self._watches: list[HoldersWatch] = []
        self._watching = threading.Lock()

    # -- leading -------------------------------------------------------------------------------

    def campaign(self, timeout: float | None = None) -> bool:
        """Wait to lead: ``True`` once leading, ``False`` if not within ``timeout`` seconds
        (``None``: no limit; 0: only if nobody leads or waits now). As :meth:`acquire`."""
        return self.acquire(timeout=timeout)

    @property
    def leading(self) -> bool:
        """Whether this candidate leads now (:attr:`valid`)."""
        return self.valid

    def resign(self) -> None:
        """Stop leading, or waiting to (as :meth:`release`): the next candidate in line leads at once."""
        self.release()

    # -- who leads -----------------------------------------------------------------------------

    def leader(self) -> str | None:
        """The value of the candidate leading now, as the landlord sees it, or ``None``.

        Raises:
            Pyro5.errors.CommunicationError: the landlord could not be reached.
        """
        leader = leader_of(self._target.call("name_holders", self.name))
        return None if leader is None else leader[1]

    def watch(self, callback: Callable[[str | None], None]) -> HoldersWatch:
        """Call ``callback(leader)`` with the leader's value (``None``: nobody leads) at once and
        each time leadership changes (another leader, or a new term of the same one), pushed by the
        landlord. It runs on the inbox's thread, one call at a time. Stop it with the returned
        watch's ``close()``, or with :meth:`close`.

        Raises:
            LeaseDeniedError: the landlord refused the watch (too many watches; the policy).
            Pyro5.errors.CommunicationError: the landlord could not be reached.
        """
        told: list[tuple[int, str | None] | None | object] = [_NOBODY_TOLD]

        def changed(holders: Holders) -> None:
            leader = leader_of(holders)
            if leader != told[0]:
                told[0] = leader
                callback(None if leader is None else leader[1])

        watch = HoldersWatch(self._target, self.name, changed, duration=self.duration,
                             renewals=self._renewals, inbox=self._inbox)
        with self._watching:
            self._watches.append(watch)
        try:
            return watch.start()
        except BaseException:
            with self._watching:
                self._watches.remove(watch)
            raise

    def close(self) -> None:
        """Resign, stop every watch, and close what this election made for itself."""
        with self._watching:
            watches, self._watches = self._watches, []
        try:
            for watch in watches:
                watch.close()
        finally:
            super().close()


_NOBODY_TOLD = object()  # what a watch has told its callback before the first notice
