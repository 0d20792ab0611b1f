"""The resource's side of fencing tokens: :class:`Fence` (issue 25, item 2).

A lease cannot stop a holder that was paused (GC, SIGSTOP, a slow disk) from
acting after its lease ended and the name went to another: only the resource
can, by refusing what the old holder sends. Every grant of a name carries a
token that strictly increases (:class:`~landlord.grantor.names.NameTable`); a
fence accepts an operation whose token is at least the highest it has accepted
(the same holder writes many times with one token) and refuses older ones with
:class:`~landlord.StaleTokenError`.

One fence per resource guarded by one name: the tokens of different names
are not comparable for this purpose. :meth:`Fence.guard` holds the fence's lock
around the operation, so an older token cannot pass the check, wait, and write
after a newer one: use it when the write happens in this process.
:meth:`Fence.check` only checks and records, for a resource whose write is
ordered by other means (a database transaction that re-checks the token).

A token is an int of 0 to :data:`MAX_TOKEN` (2**63 - 1, SQLite's and etcd's
largest integer, where the landlord keeps its tokens): what is not one is
refused with ``TypeError`` or ``ValueError`` and changes nothing, so no
argument a caller can send (a bool, a float, a huge int) moves the fence
further than a token could. A fence counts what it accepted and what it
refused as stale (:meth:`Fence.counts`; :meth:`landlord.metrics.Metrics.count_fence`
exposes them). For other processes, serve it: :class:`landlord.RemoteFence`.

Imports the standard library and the errors alone: ``import landlord`` stays light.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from .errors import StaleTokenError

__all__ = ["Fence", "MAX_TOKEN"]

MAX_TOKEN = 2**63 - 1  # the largest fencing token: SQLite's (and etcd's) largest integer


class Fence:
    """Accepts operations whose fencing token is at least the highest it has accepted; thread-safe.

    Args:
        highest: the highest token accepted before (stored by the resource, for
            a restart); ``None`` while none was.

    Raises:
        TypeError, ValueError: ``highest`` is not a token (see :meth:`check`).
    """

    def __init__(self, highest: int | None = None) -> None:
        if highest is not None:
            _check_token(highest)
        self._highest = highest
        self._accepted = self._refused = 0
        # reentrant: a guarded operation may check the same fence again (a nested write)
        self._lock = threading.RLock()

    @property
    def highest(self) -> int | None:
        """The highest token accepted (what to store for a restart), or ``None``."""
        return self._highest

    def counts(self) -> dict[str, int]:
        """How many checks it accepted and refused as stale so far: ``{"accepted": n, "refused": m}``
        (what is not a token is neither: it never reached the fence)."""
        with self._lock:
            return {"accepted": self._accepted, "refused": self._refused}

    def check(self, token: int) -> int:
        """Accept ``token`` if it is at least the highest accepted, and make it the highest.

        Returns:
            ``token``.

        Raises:
            TypeError: ``token`` is not an int (a bool is not).
            ValueError: ``token`` is below 0 or above :data:`MAX_TOKEN`.
            StaleTokenError: ``token`` is below the highest accepted (nothing changes).
        """
        _check_token(token)
        with self._lock:
            if self._highest is not None and token < self._highest:
                self._refused += 1
                raise StaleTokenError(f"fencing token {token} is stale: {self._highest} was accepted",
                                      token, self._highest)
            self._highest = token
            self._accepted += 1
        return token

    @contextmanager
    def guard(self, token: int) -> Iterator[int]:
        """``with fence.guard(token): write()``: the write runs only if ``token`` is accepted,
        under the fence's lock, so no other guarded operation runs meanwhile.

        Raises:
            TypeError, ValueError, StaleTokenError: as :meth:`check`, before the block runs.
        """
        with self._lock:
            yield self.check(token)

    def __repr__(self) -> str:
        return f"Fence(highest={self._highest})"


def _check_token(token: object) -> None:
    if not isinstance(token, int) or isinstance(token, bool):
        raise TypeError(f"a fencing token is an int, got {type(token).__name__}")
    if token < 0:
        raise ValueError("a fencing token is not negative")  # the value not shown: a huge int has no str
    if token > MAX_TOKEN:
        raise ValueError(f"a fencing token is at most {MAX_TOKEN} (2**63 - 1)")
