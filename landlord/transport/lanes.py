"""Lanes: a small thread pool that keeps order where order matters.

Tasks are submitted to a *lane* (any hashable key). Tasks of one lane run one
at a time, in the order submitted; tasks of different lanes run in parallel
on up to ``workers`` threads. The renewal manager runs one lane per landlord
address, so a landlord that hangs holds up its own renewals and no one else's,
and keeps the calls of landlords not heard from, or failing, on pools of their
own. (The lookup service's event delivery did the same, one lane per listener,
until 300 dead listeners held all its threads: see :mod:`lookup.service.outbox`. Lanes
suit a few peers; a blocked task holds its thread.)
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable, Hashable

__all__ = ["Lanes"]

log = logging.getLogger("landlord.lanes")  # its name before it moved into transport/

Task = Callable[[], object]


class Lanes:
    """Runs tasks in per-lane order on a small pool of threads.

    Args:
        workers: the most tasks running at once (each on its own thread).
        name: prefix of the threads' names.

    Raises:
        ValueError: ``workers`` is not a positive integer.
    """

    def __init__(self, *, workers: int = 8, name: str = "Lanes") -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a positive integer, got {workers!r}")
        self._lock = threading.Lock()
        self._has_work = threading.Condition(self._lock)  # idle workers wait here
        self._idle = threading.Condition(self._lock)      # wait_idle() waits here
        self._queues: dict[Hashable, collections.deque[Task]] = {}
        self._ready: collections.deque[Hashable] = collections.deque()  # lanes with work, none running
        self._running: set[Hashable] = set()
        self._closed = False
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True)
                         for i in range(workers)]
        for thread in self._threads:
            thread.start()

    def submit(self, lane: Hashable, task: Task) -> bool:
        """Queue ``task`` on ``lane``; never blocks. Returns ``False`` (and drops it) once closed."""
        with self._lock:
            if self._closed:
                return False
            queue = self._queues.get(lane)
            if queue is None:
                queue = self._queues[lane] = collections.deque()
                if lane not in self._running:
                    self._ready.append(lane)
                    self._has_work.notify()
            queue.append(task)
            return True

    def discard(self, lane: Hashable) -> int:
        """Drop the tasks of ``lane`` that have not started; return how many."""
        with self._lock:
            queue = self._queues.pop(lane, None)
            self._idle.notify_all()
            return len(queue) if queue else 0

    def pending(self) -> int:
        """Tasks queued or running."""
        with self._lock:
            return sum(len(queue) for queue in self._queues.values()) + len(self._running)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no task is queued or running; return whether that happened in time."""
        with self._lock:
            return self._idle.wait_for(lambda: not self._queues and not self._running, timeout)

    def close(self) -> None:
        """Drop the tasks not started, and wait for the running ones to finish."""
        with self._lock:
            self._closed = True
            self._queues.clear()
            self._ready.clear()
            self._has_work.notify_all()
            self._idle.notify_all()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join()

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._ready and not self._closed:
                    self._has_work.wait()
                if self._closed:
                    return
                lane = self._ready.popleft()
                queue = self._queues.get(lane)
                if not queue:  # discarded meanwhile
                    self._queues.pop(lane, None)
                    continue
                task = queue.popleft()
                if not queue:
                    del self._queues[lane]
                self._running.add(lane)
            try:
                task()
            except Exception:
                log.exception("a task of lane %r failed", lane)
            with self._lock:
                self._running.discard(lane)
                if lane in self._queues:
                    self._ready.append(lane)  # its next task, still in order
                    self._has_work.notify()
                self._idle.notify_all()
