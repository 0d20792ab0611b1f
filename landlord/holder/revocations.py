"""Hearing at once that a landlord revoked a lease: :class:`RevocationReceiver`, the holder's side.

A holder that wants to know before its next renewal serves a small Pyro5
object and gives its URI to each lease's landlord (:meth:`landlord.Landlord.listen`);
the landlord calls it when it revokes the lease (:mod:`landlord.grantor.revocations`).
Give a receiver to a :class:`~landlord.LeaseRenewalManager` (``revocations=``)
and it does this for every lease it keeps: a revoked lease is dropped and its
listener told at once, with a :class:`~landlord.LeaseDeniedError` carrying the reason.

The receiver only acts on notices for leases it watches, by cookie: a
notice from anyone else, or for a lease not watched, is logged and ignored.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import Pyro5.api

from ..transport.addresses import advertised_host
from .landlordlease import LandlordLease

__all__ = ["RevocationReceiver"]

log = logging.getLogger("landlord.revocation")  # its name before it moved

OnRevoked = Callable[[str], None]  # called with the landlord's reason


class _Inbox:
    """The Pyro5 object landlords call."""

    def __init__(self, deliver: Callable[[str, str], None]) -> None:
        self._deliver = deliver

    @Pyro5.api.expose
    def revoked(self, cookie: str, reason: str) -> None:
        if not isinstance(cookie, str) or not isinstance(reason, str):
            raise TypeError("revoked takes a cookie and a reason, both str")
        self._deliver(cookie, reason[:1000])


class RevocationReceiver:
    """Receives revocation notices on a Pyro5 daemon and hands each to the watcher of its lease.

    Thread-safe. Use it as a context manager, or :meth:`close` it.

    Args:
        host: the address to receive on; landlords must be able to reach it
            (default: this host's own address, as a server on every interface advertises).
        daemon: a Pyro5 daemon, already serving, to receive on instead (wins over ``host``).
    """

    def __init__(self, *, host: str | None = None, daemon: Pyro5.api.Daemon | None = None) -> None:
        self._lock = threading.Condition()
        self._watched: dict[str, OnRevoked] = {}  # cookie -> whom to tell
        self._confirmed: set[str] = set()  # cookies whose landlord has said it will tell
        self._inbox = _Inbox(self._deliver)
        self._thread: threading.Thread | None = None
        if daemon is None:
            daemon = Pyro5.api.Daemon(host=advertised_host("0.0.0.0") if host is None else host, port=0)
            self._thread = threading.Thread(target=daemon.requestLoop, name="RevocationReceiver", daemon=True)
        self._daemon = daemon
        self.uri = str(daemon.register(self._inbox))
        if self._thread is not None:
            self._thread.start()

    def watch(self, lease: LandlordLease, on_revoked: OnRevoked) -> None:
        """Ask ``lease``'s landlord to tell this receiver if it revokes the lease, and call
        ``on_revoked(reason)`` when it does (on the receiver's thread). Makes a remote call.

        Raises:
            TypeError: ``lease`` is not a :class:`~landlord.LandlordLease`.
            UnknownLeaseError: the landlord no longer knows the lease (it is not watched).
            Pyro5.errors.CommunicationError: the landlord could not be reached (it is not watched).
        """
        if not isinstance(lease, LandlordLease):
            raise TypeError(f"only a LandlordLease can be watched, got {type(lease).__name__}")
        with self._lock:
            self._watched[lease.cookie] = on_revoked
        try:
            lease.call_landlord("listen", lease.cookie, self.uri)
        except BaseException:
            self.unwatch(lease)
            raise
        with self._lock:
            if lease.cookie in self._watched:
                self._confirmed.add(lease.cookie)
                self._lock.notify_all()

    def watching(self, lease: LandlordLease, *, timeout: float = 0.0) -> bool:
        """Whether ``lease``'s landlord has agreed to tell this receiver, waiting up to ``timeout``
        seconds for it (a renewal manager asks on a thread of its own)."""
        with self._lock:
            return self._lock.wait_for(lambda: lease.cookie in self._confirmed, timeout)

    def unwatch(self, lease: LandlordLease) -> None:
        """Stop handing on notices for ``lease`` (the landlord may still send one; it is ignored)."""
        with self._lock:
            self._watched.pop(lease.cookie, None)
            self._confirmed.discard(lease.cookie)

    def __len__(self) -> int:
        with self._lock:
            return len(self._watched)

    def close(self) -> None:
        """Stop receiving (a caller's daemon goes on serving)."""
        with self._lock:
            self._watched.clear()
            self._confirmed.clear()
        self._daemon.unregister(self._inbox)
        if self._thread is not None:
            self._daemon.shutdown()
            self._thread.join(10)

    def __enter__(self) -> RevocationReceiver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _deliver(self, cookie: str, reason: str) -> None:
        with self._lock:
            on_revoked = self._watched.pop(cookie, None)
            self._confirmed.discard(cookie)
        if on_revoked is None:
            log.info("a revocation notice for a lease not watched here (%s…) was ignored", cookie[:6])
            return
        try:
            on_revoked(reason)
        except Exception:
            log.exception("the callback for revoked lease %s… failed", cookie[:6])
