"""Telling holders their leases were revoked: :class:`RevocationNotices`, the landlord's side.

A holder that asked to be told (:meth:`landlord.Landlord.listen`, which a
:class:`~landlord.LeaseRenewalManager` given a
:class:`~landlord.holder.revocations.RevocationReceiver` does for it) names a Pyro5
object; when the landlord revokes that lease, its ``revoked(cookie, reason)``
is called from this module's one thread, so the revoking caller never waits
on a holder's network. Delivery is best effort: a holder that cannot be
reached learns at its next renewal, which is denied with the reason.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

import Pyro5.api

__all__ = ["Notices", "RevocationNotices", "NOTICE_TIMEOUT"]

log = logging.getLogger("landlord.notices")  # its name before it moved

NOTICE_TIMEOUT = 5.0  # seconds one delivery may take before the listener is given up on

# a notice: the listener (a URI, or an in-process object), the method to call, its arguments, what the
# notice is about (for the log), and what to do if it cannot be delivered
_Notice = tuple[Any, str, tuple[Any, ...], str, Callable[[], None] | None]


class Notices:
    """Calls listeners' remote methods from one thread, made when the first notice is sent,
    so whoever sends never waits on a listener's network. Best effort: a listener that cannot
    be reached is logged at WARNING, with ``consequence``, and skipped.

    Args:
        timeout: the most one delivery may take, in seconds.
        name: the thread's name.
        consequence: what a lost notice means, for the log line.
    """

    def __init__(self, *, timeout: float = NOTICE_TIMEOUT, name: str = "Notices", consequence: str = "") -> None:
        self._timeout = timeout
        self._name = name
        self._consequence = consequence
        self._queue: queue.SimpleQueue[_Notice | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    def post(self, listener: Any, method: str, args: tuple[Any, ...], about: str,
             on_failure: Callable[[], None] | None = None) -> None:
        """Call ``method(*args)`` on the Pyro5 object at ``listener`` (a URI; in-process, the object
        itself), soon; ``about`` says what for; ``on_failure()`` is called (on the same thread) if the
        call fails."""
        with self._lock:
            if self._closed:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
        self._queue.put((listener, method, args, about, on_failure))

    def close(self) -> None:
        """Send what is queued, then stop (at most ``timeout`` per notice still queued)."""
        with self._lock:
            self._closed = True
            thread = self._thread
        if thread is not None:
            self._queue.put(None)
            thread.join()

    def _run(self) -> None:
        while (notice := self._queue.get()) is not None:
            listener, method, args, about, on_failure = notice
            try:
                self._deliver(listener, method, args)
            except Exception as exc:
                log.warning("could not tell %s that %s (%s: %s)%s", listener, about, type(exc).__name__, exc,
                            self._consequence)
                if on_failure is not None:
                    try:
                        on_failure()
                    except Exception:
                        log.exception("after failing to tell %s that %s", listener, about)

    def _deliver(self, listener: Any, method: str, args: tuple[Any, ...]) -> None:
        if not isinstance(listener, str):  # in-process
            getattr(listener, method)(*args)
            return
        with Pyro5.api.Proxy(listener) as proxy:  # a connection of its own, closed after: notices are rare
            proxy._pyroTimeout = self._timeout
            getattr(proxy, method)(*args)


class RevocationNotices(Notices):
    """Sends revocation notices (``revoked(cookie, reason)``) from one thread.

    Args:
        timeout: the most one delivery may take, in seconds.
    """

    def __init__(self, *, timeout: float = NOTICE_TIMEOUT) -> None:
        super().__init__(timeout=timeout, name="RevocationNotices", consequence="; it learns at its next renewal")

    def send(self, listener: Any, cookie: str, reason: str) -> None:
        """Tell the holder's object at ``listener`` (a URI; in-process, the object) that the lease ``cookie`` was
        revoked, soon."""
        self.post(listener, "revoked", (cookie, reason), f"lease {cookie[:6]}… was revoked")
