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
from typing import Any

import Pyro5.api

__all__ = ["Notices", "RevocationNotices", "NOTICE_TIMEOUT"]

log = logging.getLogger("landlord.notices")  # its name before it moved

NOTICE_TIMEOUT = 5.0  # seconds one delivery may take before the listener is given up on

# a notice: the listener's URI, the method to call, its arguments, and what the notice is about (for the log)
_Notice = tuple[str, str, tuple[Any, ...], str]


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

    def post(self, listener: str, method: str, args: tuple[Any, ...], about: str) -> None:
        """Call ``method(*args)`` on the Pyro5 object at ``listener``, soon; ``about`` says what for."""
        with self._lock:
            if self._closed:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
        self._queue.put((listener, method, args, about))

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
            listener, method, args, about = notice
            try:  # a connection of its own, closed after: listeners are many, notices rare
                with Pyro5.api.Proxy(listener) as proxy:
                    proxy._pyroTimeout = self._timeout
                    getattr(proxy, method)(*args)
            except Exception as exc:
                log.warning("could not tell %s that %s (%s: %s)%s", listener, about, type(exc).__name__, exc,
                            self._consequence)


class RevocationNotices(Notices):
    """Sends revocation notices (``revoked(cookie, reason)``) from one thread.

    Args:
        timeout: the most one delivery may take, in seconds.
    """

    def __init__(self, *, timeout: float = NOTICE_TIMEOUT) -> None:
        super().__init__(timeout=timeout, name="RevocationNotices", consequence="; it learns at its next renewal")

    def send(self, listener: str, cookie: str, reason: str) -> None:
        """Tell the holder's object at ``listener`` that the lease ``cookie`` was revoked, soon."""
        self.post(listener, "revoked", (cookie, reason), f"lease {cookie[:6]}… was revoked")
