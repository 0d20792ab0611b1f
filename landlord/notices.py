"""Telling holders their leases were revoked: :class:`RevocationNotices`, the landlord's side.

A holder that asked to be told (:meth:`landlord.Landlord.listen`, which a
:class:`~landlord.LeaseRenewalManager` given a
:class:`~landlord.revocation.RevocationReceiver` does for it) names a Pyro5
object; when the landlord revokes that lease, its ``revoked(cookie, reason)``
is called from this module's one thread, so the revoking caller never waits
on a holder's network. Delivery is best effort: a holder that cannot be
reached learns at its next renewal, which is denied with the reason.
"""

from __future__ import annotations

import logging
import queue
import threading

import Pyro5.api

__all__ = ["RevocationNotices", "NOTICE_TIMEOUT"]

log = logging.getLogger(__name__)

NOTICE_TIMEOUT = 5.0  # seconds one delivery may take before the holder is given up on


class RevocationNotices:
    """Sends revocation notices from one thread, made when the first is sent.

    Args:
        timeout: the most one delivery may take, in seconds.
    """

    def __init__(self, *, timeout: float = NOTICE_TIMEOUT) -> None:
        self._timeout = timeout
        self._queue: queue.SimpleQueue[tuple[str, str, str] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    def send(self, listener: str, cookie: str, reason: str) -> None:
        """Tell the holder's object at ``listener`` that the lease ``cookie`` was revoked, soon."""
        with self._lock:
            if self._closed:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="RevocationNotices", daemon=True)
                self._thread.start()
        self._queue.put((listener, cookie, reason))

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
            listener, cookie, reason = notice
            try:  # a connection of its own, closed after: holders are many, notices rare
                with Pyro5.api.Proxy(listener) as holder:
                    holder._pyroTimeout = self._timeout
                    holder.revoked(cookie, reason)
            except Exception as exc:  # the holder learns at its next renewal instead
                log.warning("could not tell %s that lease %s… was revoked (%s: %s); it learns at its next "
                            "renewal", listener, cookie[:6], type(exc).__name__, exc)
