"""A replica's terms of leadership: :class:`Terms`, the state that its election's callbacks, the thread
that loads terms and the calls it answers share, and the rules they follow.

The election says which term is wanted (its revision, while it lasts); the
loading thread makes the loaded term the wanted one (it takes the old one out,
closes its landlord, and loads a new one's from etcd); a call is answered by the
loaded term while the election still confirms it (:meth:`Terms.answering`). A
write whose outcome is unknown marks the term stale: the loading thread makes it
again. One condition guards it all and tells of every change.

No etcd and no thread of its own: :class:`~landlord.replication.replicated.ReplicatedLandlord`
drives it. Split out of :mod:`landlord.replication.replicated`.
"""

from __future__ import annotations

import threading
from typing import Protocol

from ..grantor.landlord import Landlord

__all__ = ["Term", "Terms", "RELOAD_PAUSE"]

RELOAD_PAUSE = 0.2  # seconds between attempts to load the leases when etcd fails to answer


class Confirming(Protocol):
    """What :meth:`Terms.answering` asks of an election: the revision of the term it confirms now."""

    @property
    def revision(self) -> int | None: ...


class Term:
    """A term of leadership: the election's revision it began at, and its landlord."""

    __slots__ = ("revision", "landlord", "stale")

    def __init__(self, revision: int, landlord: Landlord) -> None:
        self.revision, self.landlord = revision, landlord
        self.stale = False  # a write's outcome is unknown: made again from etcd before answering more


class Terms:
    """One replica's terms: the one its election wants, the one loaded, and whether it is closing."""

    __slots__ = ("changed", "wanted", "term", "closing")

    def __init__(self) -> None:
        self.changed = threading.Condition()  # notified of every change below
        self.wanted: int | None = None  # the revision of the term the election gave, while it lasts
        self.term: Term | None = None  # the term loaded, whose landlord answers while it is confirmed
        self.closing = False

    # -- the election's callbacks ---------------------------------------------------------------

    def elected(self, revision: int) -> None:
        with self.changed:
            self.wanted = revision
            self.changed.notify_all()

    def deposed(self, reason: str) -> None:
        with self.changed:
            self.wanted = None
            self.changed.notify_all()

    # -- the calls ----------------------------------------------------------------------------

    def answering(self, election: Confirming | None) -> Term | None:
        """The term that answers now: loaded, not stale, and still confirmed by ``election``."""
        term = self.term
        if term is not None and election is not None and not term.stale and election.revision == term.revision:
            return term  # one lock taken, the election's
        return None

    def went_stale(self, term: Term) -> None:
        """A write of ``term`` failed, its outcome unknown: it answers no more until it is loaded again."""
        with self.changed:
            term.stale = True
            self.changed.notify_all()

    # -- the loading thread ---------------------------------------------------------------------

    def next_change(self) -> tuple[int | None, Term | None] | None:
        """Wait until the loaded term is not the wanted one (or is stale), then take it out: the revision
        now wanted (``None``: none) and the term taken out (``None``: none), its landlord for the caller
        to close; ``None`` once the replica closes."""
        with self.changed:
            self.changed.wait_for(lambda: self.closing or self._needs_change())
            if self.closing:
                return None
            old, self.term = self.term, None
            return self.wanted, old

    def _needs_change(self) -> bool:
        term = self.term
        return (term.revision if term is not None else None) != self.wanted or (term is not None and term.stale)

    def begin(self, revision: int, landlord: Landlord) -> bool:
        """Make ``landlord`` the loaded term's, if its term (``revision``) is still wanted and the replica
        is not closing; whether it was (if not, the caller closes it)."""
        with self.changed:
            if self.closing or self.wanted != revision:
                return False
            self.term = Term(revision, landlord)
            self.changed.notify_all()
            return True

    def pause_unless_changed(self, wanted: int) -> None:
        """Wait RELOAD_PAUSE before loading again, unless the term ends or the replica closes first."""
        with self.changed:
            self.changed.wait_for(lambda: self.closing or self.wanted != wanted, RELOAD_PAUSE)
