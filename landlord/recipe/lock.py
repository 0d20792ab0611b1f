"""The recipes people reach for first: :class:`Lock` and :class:`Semaphore`.

Both are a :class:`~landlord.recipe.claim.Claim` on a name, with the limit
fixed: one holder for a lock, ``n`` for a semaphore. They keep their lease
alive with a renewal manager, turn invalid before the landlord could give the
name to another, and carry the fencing token to send with every write::

    lock = Lock(landlord, "orders")
    with lock:
        with_fence_check(lock.token, write)   # the resource refuses an older token

What is promised, and what is not: ``docs/locks.md``.
"""

from __future__ import annotations

from typing import Any

from .claim import DEFAULT_DURATION, Claim

__all__ = ["Lock", "Semaphore"]


class Lock(Claim):
    """A lock on ``name`` at ``landlord``: one holder at a time, first come first served.

    ``with lock:`` acquires (waiting as long as it takes) and releases;
    :meth:`acquire` takes ``blocking`` and ``timeout`` as :class:`threading.Lock`'s does.
    Not reentrant: acquiring a lock this object holds raises ``RuntimeError``.
    Arguments as :class:`~landlord.recipe.claim.Claim`'s, without ``limit``.
    """

    def __init__(self, landlord: Any, name: str, *, duration: float = DEFAULT_DURATION, lock_delay: float = 0.0,
                 margin: float | None = None, value: str | None = None, **more: Any) -> None:
        super().__init__(landlord, name, limit=1, duration=duration, lock_delay=lock_delay, margin=margin,
                         value=value, **more)

    def locked(self) -> bool:
        """Whether this object holds the lock now (:attr:`valid`)."""
        return self.valid


class Semaphore(Claim):
    """A semaphore of ``n`` places on ``name`` at ``landlord``: at most ``n`` holders at once.

    Every semaphore on one name must have the same ``n`` (the landlord refuses another). Each
    object holds at most one place; use one per place wanted. Arguments as
    :class:`~landlord.recipe.claim.Claim`'s, with ``n`` as its ``limit``.
    """

    def __init__(self, landlord: Any, name: str, n: int, *, duration: float = DEFAULT_DURATION,
                 lock_delay: float = 0.0, margin: float | None = None, value: str | None = None,
                 **more: Any) -> None:
        super().__init__(landlord, name, limit=n, duration=duration, lock_delay=lock_delay, margin=margin,
                         value=value, **more)
