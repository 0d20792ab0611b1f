"""Kill points: where a test may make this process kill itself (SIGKILL) as a lease ends.

Not an API: a test arms one in a child process's environment, and this module
reads it once, when first imported::

    LANDLORD_KILL_POINT=after-free:3

kills the process the 3rd time :meth:`landlord.grantor.freeing.Endings.end`
passes ``after-free`` (one pass per call, however many leases it ends). The
points, in the order a lease's end passes them (see :data:`POINTS`):

* ``before-free``: the lease has ended (a cancel has written its end mark), no
  ``on_expire``/``on_cancel`` has run;
* ``after-free``: the callbacks have returned, the rows are not yet deleted
  from the store (what *free first, forget after* is for: a restart frees
  them again, at least once);
* ``after-forget``: the rows are deleted (the delete asked of the store:
  etcd's is written within the replica's commit interval).

Before dying, the process writes ``kill point <point> reached (pass <n>)`` on
its stderr (one unbuffered write), so that a test can tell this death from any
other. Unarmed (the variable unset or empty), :data:`ARMED` is ``None`` and
each call of ``Endings.end`` (one per batch of ended leases, not per lease)
pays three tests of a global for it: about 10 ns, within the noise of the
call's own 285 ns for one lease (Python 3.11, timeit's best of 7).

It imports nothing of landlord's; only :mod:`landlord.grantor.freeing` imports it.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Mapping

__all__ = ["ENVIRONMENT", "POINTS", "KillPoint", "armed_from", "ARMED"]

ENVIRONMENT = "LANDLORD_KILL_POINT"
POINTS = ("before-free", "after-free", "after-forget")


class KillPoint:
    """Kills this process (SIGKILL, of itself) the ``nth`` time :meth:`passing` is called with ``point``.

    Args:
        point: one of :data:`POINTS`.
        nth: which pass kills, from 1.

    Raises:
        ValueError: ``point`` is not one of :data:`POINTS`, or ``nth`` is less than 1.
    """

    __slots__ = ("point", "nth", "_passes", "_lock")

    def __init__(self, point: str, nth: int) -> None:
        if point not in POINTS:
            raise ValueError(f"{ENVIRONMENT}: no kill point {point!r} (there are {', '.join(POINTS)})")
        if nth < 1:
            raise ValueError(f"{ENVIRONMENT}: the pass that kills counts from 1, not {nth}")
        self.point, self.nth = point, nth
        self._passes = 0
        self._lock = threading.Lock()  # the reaper's thread and the server's may end leases at once

    def passing(self, point: str) -> None:
        """A lease's end passes ``point``: count it if it is this one, and die at the ``nth`` pass."""
        if point != self.point:
            return
        with self._lock:
            self._passes += 1
            passes = self._passes
        if passes == self.nth:
            os.write(2, f"kill point {point} reached (pass {passes})\n".encode())
            os.kill(os.getpid(), signal.SIGKILL)


def armed_from(environment: Mapping[str, str]) -> KillPoint | None:
    """The kill point ``environment`` arms (``POINT:N``, or ``POINT`` for the first pass), or ``None``.

    Raises:
        ValueError: the value names no point, or its count is not a whole number of at least 1.
    """
    value = environment.get(ENVIRONMENT, "")
    if not value:
        return None
    point, _, nth = value.partition(":")
    try:
        count = int(nth) if nth else 1
    except ValueError:
        raise ValueError(f"{ENVIRONMENT}={value!r}: the pass that kills is a whole number (POINT:N)") from None
    return KillPoint(point, count)


ARMED = armed_from(os.environ)  # read once: a test arms a child process before it starts
