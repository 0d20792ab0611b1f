"""Telling holders their leases were revoked: :class:`RevocationNotices`, the landlord's side.

A holder that asked to be told (:meth:`landlord.Landlord.listen`, which a
:class:`~landlord.LeaseRenewalManager` given a
:class:`~landlord.holder.revocations.RevocationReceiver` does for it) names a Pyro5
object; when the landlord revokes that lease, its ``revoked(cookie, reason)``
is called from one of this module's few threads, one listener at a time per
lane (a listener that hangs holds up only its own lane), so the revoking
caller never waits on a holder's network. Delivery is best effort: a holder that cannot be
reached learns at its next renewal, which is denied with the reason.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable
from typing import Any

import Pyro5.api

from ..transport.lanes import Lanes

__all__ = ["Notices", "RevocationNotices", "NOTICE_TIMEOUT", "NOTICE_WORKERS"]

log = logging.getLogger("landlord.notices")  # its name before it moved

NOTICE_TIMEOUT = 5.0  # seconds one delivery may take before the listener is given up on
NOTICE_WORKERS = 4  # deliveries at once: a listener that hangs holds one, and only its own lane

# a notice: the listener (a URI, or an in-process object), the method to call, its arguments, what the
# notice is about (for the log), and what to do if it cannot be delivered
_Notice = tuple[Any, str, tuple[Any, ...], str, Callable[[], None] | None]


class Notices:
    """Calls listeners' remote methods on a few threads of their own (made when the first notice is
    sent), so whoever sends never waits on a listener's network. Notices go in *lanes*: those of
    one lane one at a time, in order; different lanes in parallel, so a listener that hangs holds
    up its own lane (for at most ``timeout`` per notice) and no other. Best effort: a listener that
    cannot be reached is logged at WARNING, with ``consequence``, and skipped.

    Args:
        timeout: the most one delivery may take, in seconds.
        name: the threads' names.
        consequence: what a lost notice means, for the log line.
        workers: the most deliveries at once.
    """

    def __init__(self, *, timeout: float = NOTICE_TIMEOUT, name: str = "Notices", consequence: str = "",
                 workers: int = NOTICE_WORKERS) -> None:
        self._timeout = timeout
        self._name = name
        self._consequence = consequence
        self._workers = workers
        self._lock = threading.Lock()
        self._lanes: Lanes | None = None
        self._closed = False

    def post(self, listener: Any, method: str, args: tuple[Any, ...], about: str,
             on_failure: Callable[[], None] | None = None, *, lane: Hashable | None = None) -> None:
        """Call ``method(*args)`` on the Pyro5 object at ``listener`` (a URI; in-process, the object
        itself), soon, on ``lane`` (default: the listener's own); ``about`` says what for;
        ``on_failure()`` is called (on the same thread) if the call fails."""
        with self._lock:
            if self._closed:
                return
            if self._lanes is None:
                self._lanes = Lanes(workers=self._workers, name=self._name)
            lanes = self._lanes
        notice: _Notice = (listener, method, args, about, on_failure)
        lanes.submit(listener if lane is None else lane, lambda: self._send(notice))

    def close(self) -> None:
        """Send what is queued, for at most ``timeout`` seconds, then stop (what is left is dropped)."""
        with self._lock:
            self._closed = True
            lanes = self._lanes
        if lanes is not None:
            if not lanes.wait_idle(self._timeout):
                log.warning("%s: %d notice(s) not sent before closing%s", self._name, lanes.pending(),
                            self._consequence)
            lanes.close()

    def _send(self, notice: _Notice) -> None:
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
    """Sends revocation notices (``revoked(cookie, reason)``), each listener on a lane of its own.

    Args:
        timeout: the most one delivery may take, in seconds.
    """

    def __init__(self, *, timeout: float = NOTICE_TIMEOUT) -> None:
        super().__init__(timeout=timeout, name="RevocationNotices", consequence="; it learns at its next renewal")

    def send(self, listener: Any, cookie: str, reason: str) -> None:
        """Tell the holder's object at ``listener`` (a URI; in-process, the object) that the lease ``cookie`` was
        revoked, soon."""
        self.post(listener, "revoked", (cookie, reason), f"lease {cookie[:6]}… was revoked")
