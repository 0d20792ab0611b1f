"""Who holds a name, heard as it changes: :class:`HoldersWatch`, the holder's side of
:meth:`landlord.Landlord.watch_name`.

A watch is a lease, renewed like a claim's. While it lives, the landlord
pushes the name's holders to the watch's inbox (a
:class:`~landlord.holder.claiminbox.ClaimInbox`) at once and after every change
(changes close together may come as one notice, the latest), and the watch
hands each to its callback, in order. No polling.

A watch lost (its landlord restarted or failed over and forgot it, or dropped
it when it could not be told, or a renewal failed) is made again at once, then
after pauses that grow while it keeps failing, until it is made or closed: the
first notice of the new watch says who holds the name then, so what changed
in between is not missed, only the states it went through.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ..duration import FOREVER
from ..errors import LeaseDeniedError, LeaseError, UnknownLeaseError
from ..holder.claiminbox import ClaimInbox, Holders
from ..holder.landlordlease import LandlordLease
from ..holder.renewal import LeaseRenewalEvent, LeaseRenewalManager
from ..lease import sent_now
from ..transport.backoff import Backoff
from .target import Target

__all__ = ["HoldersWatch", "RETRY_FIRST", "RETRY_MOST"]

log = logging.getLogger("landlord.recipe")

RETRY_FIRST = 0.5  # seconds after a first failure to watch again (then growing)
RETRY_MOST = 10.0  # the longest pause between two tries


class HoldersWatch:
    """Calls ``callback(holders)`` with the holders of ``name`` at ``target``, at once and after every
    change, until closed (see the module's docstring). Thread-safe.

    ``holders`` are (token, value) pairs, in the order granted, as
    :meth:`landlord.Landlord.name_holders` gives them. The callback runs on the inbox's
    thread (the landlord's, in-process), one call at a time: keep it short.

    Args:
        target: the landlord.
        name: the name watched.
        callback: called with the holders.
        duration: seconds asked for each term of the watch's lease.
        renewals: the renewal manager that keeps it alive.
        inbox: where the landlord's notices are heard.
        backoff: the pauses between tries to watch again (default: from :data:`RETRY_FIRST` to
            :data:`RETRY_MOST` or ``duration``, jittered; a new one each time the watch is lost).
    """

    def __init__(self, target: Target, name: str, callback: Callable[[Holders], None], *, duration: float,
                 renewals: LeaseRenewalManager, inbox: ClaimInbox, backoff: Backoff | None = None) -> None:
        self._target, self.name, self._callback, self.duration = target, name, callback, duration
        self._renewals, self._inbox, self._backoff = renewals, inbox, backoff
        self.clock = target.clock
        self._state = threading.Condition()
        self._lease: LandlordLease | None = None
        self._closed = False
        self._again: threading.Thread | None = None

    @property
    def lease(self) -> LandlordLease | None:
        """The watch's lease now (``None`` while it is being made again, or once closed)."""
        return self._lease

    def start(self) -> HoldersWatch:
        """Ask the landlord to watch: the holders come to the callback from now on.

        Raises:
            LeaseDeniedError: the landlord refused (too many watches; the policy).
            TypeError, ValueError: a bad name.
            Pyro5.errors.CommunicationError: the landlord could not be reached.
        """
        self._open()
        return self

    def close(self) -> None:
        """Stop watching: the lease is cancelled (a failure is logged: it ends at its term)."""
        with self._state:
            self._closed = True
            lease, self._lease = self._lease, None
            again = self._again
            self._state.notify_all()
        if lease is not None:
            self._let_go(lease)
        if again is not None and again is not threading.current_thread():
            again.join(10)

    def __enter__(self) -> HoldersWatch:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<HoldersWatch of {self.name!r} at {self._target!r}>"

    # -- internals ---------------------------------------------------------------------------------

    def _open(self) -> None:
        listener = self._inbox if self._target.in_process else self._inbox.uri
        sent = sent_now(self.clock)
        lease = self._target.call("watch_name", self.name, self.duration, listener)
        if not isinstance(lease, LandlordLease):
            raise LeaseError(f"the landlord answered watch_name with {lease!r:.80}")
        lease.record_grant(sent, lease.term)
        with self._state:
            if self._closed:
                closed = True
            else:
                closed, self._lease = False, lease  # first: what is heard from now on is this lease's
        if closed:
            self._let_go(lease)
            return
        self._inbox.watch(lease.cookie, lambda name, holders: self._heard(lease, holders),
                          lambda reason: self._lost(lease, reason))
        self._renewals.renew_for(lease, FOREVER, lambda event: self._lost(lease, _why(event)))

    def _heard(self, lease: LandlordLease, holders: Holders) -> None:
        with self._state:
            if self._lease is not lease:
                return  # a lost watch's late notice
        self._callback(holders)

    def _lost(self, lease: LandlordLease, reason: str) -> None:
        """The watch ``lease`` ended (on the inbox's or the renewal manager's thread): watch again, on a
        thread of its own."""
        with self._state:
            if self._lease is not lease or self._closed:
                return
            self._lease = None
            self._again = threading.Thread(target=self._watch_again, args=(lease,), daemon=True,
                                           name=f"HoldersWatch {self.name[:20]}")
            self._again.start()
        log.info("the watch of %r at %r was lost (%s); watching again", self.name, self._target, reason)

    def _watch_again(self, lost: LandlordLease) -> None:
        self._let_go(lost)
        backoff = self._backoff or Backoff(RETRY_FIRST, max(RETRY_FIRST, min(RETRY_MOST, self.duration)))
        while True:
            try:
                self._open()
                backoff.reset()
                return
            except Exception as exc:
                log.warning("could not watch %r at %r again (%s: %s); trying again", self.name, self._target,
                            type(exc).__name__, exc)
            with self._state:
                until = self.clock.monotonic() + backoff.next_delay()
                while not self._closed and self.clock.monotonic() < until:
                    self.clock.wait(self._state, until)
                if self._closed:
                    return

    def _let_go(self, lease: LandlordLease) -> None:
        self._inbox.unwatch(lease.cookie)
        try:
            self._renewals.cancel(lease)
        except (UnknownLeaseError, LeaseDeniedError):
            pass  # it had ended already
        except Exception as exc:
            log.warning("could not cancel the watch of %r (%s: %s); it ends at its term", self.name,
                        type(exc).__name__, exc)


def _why(event: LeaseRenewalEvent) -> str:
    return f"a renewal failed: {type(event.exception).__name__}: {event.exception}"
