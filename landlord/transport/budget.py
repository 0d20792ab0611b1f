"""The guarded server's budget for large messages (:mod:`~landlord.transport.frameserver`):
bytes of messages over :data:`SMALL_FRAME` being gathered are counted server-wide, and past
:data:`LARGE_BUDGET` another large message is refused, so that many connections each sending
most of a large message cannot bloat the server.

Pure: no I/O, no clock, no lock (the gathering thread alone reserves and releases).
"""

from __future__ import annotations

from .framing import FrameRefused

__all__ = ["LargeMessageBudget", "SMALL_FRAME", "LARGE_BUDGET"]

SMALL_FRAME = 16 * 1024      # messages up to this size (a renewal, a lookup) go to the many workers
LARGE_BUDGET = 64 * 1024 * 1024  # bytes of large messages being gathered at once, server-wide


class LargeMessageBudget:
    """Bytes of large messages being gathered, against a server-wide budget.

    A message is counted once its header says how large it is, and until its
    connection's worker is done with it (or the connection closes).

    Args:
        budget: the most bytes of large messages gathered at once.
        small: the largest message not counted.

    Raises:
        ValueError: ``budget`` or ``small`` is not a non-negative int.
    """

    def __init__(self, budget: int = LARGE_BUDGET, small: int = SMALL_FRAME) -> None:
        for name, value in (("budget", budget), ("small", small)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative int, got {value!r}")
        self.budget = budget
        self.small = small
        self.gathered = 0  # bytes reserved now

    def reserve(self, size: int, held: int) -> int:
        """Count a message of ``size`` bytes, whose connection holds ``held`` bytes of the budget
        already; return what the connection holds now (``held`` again for a small message, or when
        it holds some already: one reservation per message).

        Raises:
            FrameRefused: the budget has no room for it (reason ``"busy"``).
        """
        if size <= self.small or held:
            return held
        if self.gathered + size > self.budget:
            raise FrameRefused("busy", f"the server is gathering {self.gathered} bytes of large messages: "
                                       f"a message of {size} bytes must wait (try again, or send a smaller one)")
        self.gathered += size
        return size

    def release(self, held: int) -> None:
        """A connection gives back the ``held`` bytes it reserved (0: nothing)."""
        self.gathered -= held
