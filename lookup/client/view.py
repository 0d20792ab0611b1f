"""One view of what several lookup services list: :class:`MergedView`, and :class:`Teller` to tell of it.

The view is pure bookkeeping, without threads or locks: its owner
(:class:`~lookup.LookupCache`) guards it, feeds it what each lookup service
reports, and hands the changes it collects to a :class:`Teller`, which tells
the listener from one thread at a time.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager

from landlord import Clock

from ..item import Expiry, ServiceItem

__all__ = ["MergedView", "Teller", "Change"]

log = logging.getLogger("lookup.view")  # its name before it moved; logs and tests know it by it

Change = tuple[str, ServiceItem]
"""``("added" | "changed" | "removed", item)``; for ``"removed"``, the item as it was last shown."""


class MergedView:
    """The items several lookup services list, one per ``service_id``, and what changed.

    An item is shown, once, while at least one lookup service lists it and
    it is not discarded, as the state last reported by any of them (one of
    them dropping it changes nothing while another lists it). Every change
    to what is shown is collected, in order, for :meth:`take_changes`.

    **A lookup service lost** (:meth:`lost`) keeps its listing, as orphans,
    until it is back (a fresh :meth:`replace_listing`), but each item at most
    as long as its registration there can still run: its term, or what it
    was last said to have left if that is later (its
    :class:`~lookup.item.Expiry`, counted on ``clock`` from when it arrived),
    and never longer than ``orphan_timeout``, which alone decides for an item
    whose expiry is not known (a lookup service before expiries). The owner
    calls :meth:`forget_orphans` at :meth:`orphan_deadline`.

    **A service reported gone.** When a lookup service that is not lost
    stops listing an item (an event, or a snapshot without it) and no other
    lookup service that is not lost lists it, the lost ones' copies go too:
    a live lookup service's word beats what a lost one last said. When
    another that is not lost still lists it, the item is *disputed* and
    those lookup services *doubted* (:meth:`doubted`): one may be dead and
    not yet known lost, so its owner asks it whether it is there and, if it
    cannot be reached, calls :meth:`lost` at once, when its copies of
    disputed items go (a reachable one's copies stand: it may have the
    service indeed, or its own word that it is gone may be on its way).

    A discarded item is hidden until a lookup service reports it anew.

    Not thread-safe: the owner guards it.

    Args:
        lookups: the lookup services' URIs (a listing of one not given is an error).
        orphan_timeout: the most seconds to keep a lost lookup service's items.
        clock: what expiries and ``orphan_timeout`` are timed on (its monotonic time).
    """

    def __init__(self, lookups: Iterable[str], *, orphan_timeout: float, clock: Clock) -> None:
        self._listings: dict[str, dict[str, ServiceItem]] = {uri: {} for uri in lookups}  # as last known
        # when each listed item's registration ends at the latest and its term, by lookup service (where known)
        self._expiries: dict[str, dict[str, tuple[float, float]]] = {uri: {} for uri in self._listings}
        self._orphans: dict[str, dict[str, float]] = {}  # lost lookup services: when to forget each item
        self._orphan_timeout = orphan_timeout
        self._clock = clock
        self._items: dict[str, ServiceItem] = {}  # what is shown
        self._discarded: set[str] = set()  # service ids dropped by discard() until reported anew
        self._disputed: set[str] = set()  # said gone by one lookup service not lost, listed by another
        self._doubted: set[str] = set()  # lookup services not lost listing a disputed item: to be asked
        self._changes: list[Change] = []  # not yet taken

    @property
    def orphan_timeout(self) -> float:
        return self._orphan_timeout

    # -- what is shown --------------------------------------------------------------------------

    def items(self) -> list[ServiceItem]:
        return list(self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, service_id: object) -> bool:
        return service_id in self._items

    def take_changes(self) -> list[Change]:
        """The changes to what is shown since the last call, in order."""
        changes, self._changes = self._changes, []
        return changes

    # -- what lookup services report --------------------------------------------------------------

    def report(self, lookup: str, service_id: str, item: ServiceItem, expiry: Expiry | None = None) -> None:
        """``lookup`` lists ``item`` as it now is (an event carrying it, with when its registration
        ends if known): shown, even if it was discarded."""
        self._listings[lookup][service_id] = item
        self._note_expiry(lookup, service_id, expiry, self._clock.monotonic())
        self._discarded.discard(service_id)  # reported anew
        self._disputed.discard(service_id)  # and said to be there
        self._merge(service_id, reported=item)

    def unlist(self, lookup: str, service_id: str) -> None:
        """``lookup`` no longer lists ``service_id`` (it no longer matches)."""
        self._expiries[lookup].pop(service_id, None)
        if self._listings[lookup].pop(service_id, None) is not None:
            self._gone_from(lookup, service_id)
            self._merge(service_id)

    def replace_listing(self, lookup: str, fresh: Mapping[str, ServiceItem],
                        expiries: Mapping[str, Expiry] | None = None) -> None:
        """``lookup`` lists ``fresh`` (by service id; a snapshot, with when their registrations end
        where known): it is back, and reports all of them anew."""
        self._orphans.pop(lookup, None)
        self._discarded.difference_update(fresh)
        self._disputed.difference_update(fresh)
        before, self._listings[lookup] = self._listings[lookup], dict(fresh)
        now = self._clock.monotonic()
        self._expiries[lookup] = {}
        for service_id, expiry in (expiries or {}).items():
            if service_id in fresh:
                self._note_expiry(lookup, service_id, expiry, now)
        for service_id in before:
            if service_id not in fresh:
                self._gone_from(lookup, service_id)
                self._merge(service_id)
        for service_id, item in fresh.items():
            self._merge(service_id, reported=item if before.get(service_id) != item else None)

    def lost(self, lookup: str) -> None:
        """``lookup`` is lost: each of its items is kept until its registration there must have
        ended (see the class docstring), counted from now (from the first loss)."""
        if lookup in self._orphans:
            return
        now = self._clock.monotonic()
        expiries, orphans = self._expiries[lookup], self._orphans.setdefault(lookup, {})
        self._doubted.discard(lookup)
        for service_id in self._listings[lookup]:
            orphans[service_id] = now + self._kept_for(expiries.get(service_id), now)
        for service_id in self._listings[lookup]:
            if service_id in self._disputed and not self._listed_live(service_id):  # said gone, none live lists it
                for lost in self._orphans.values():  # every lost lookup service's copy is due now
                    if service_id in lost:
                        lost[service_id] = now

    def doubted(self, lookup: str) -> bool:
        """Whether ``lookup`` (not lost) lists an item another lookup service said is gone: to be asked
        whether it is still there (then :meth:`settle`, and :meth:`lost` if it cannot be reached)."""
        return lookup in self._doubted

    def settle(self, lookup: str) -> None:
        """``lookup`` is being asked whether it is there: no longer doubted (until another dispute)."""
        self._doubted.discard(lookup)

    def orphan_deadline(self, lookup: str) -> float:
        """When :meth:`forget_orphans` is next due for ``lookup``; ``math.inf`` while it is not lost
        (or has nothing left to forget, or keeps it until it is back)."""
        return min(self._orphans.get(lookup, {}).values(), default=math.inf)

    def add_lookup(self, lookup: str) -> None:
        """Take listings from ``lookup`` too (one known already is left as it is): a lookup
        service discovered."""
        self._listings.setdefault(lookup, {})
        self._expiries.setdefault(lookup, {})

    def remove_lookup(self, lookup: str) -> None:
        """Forget ``lookup`` and what it listed: what only it listed is removed (if known);
        a lookup service discarded."""
        if lookup in self._listings:
            self._orphans.pop(lookup, None)
            self._doubted.discard(lookup)
            before = self._listings.pop(lookup)
            del self._expiries[lookup]
            for service_id in before:
                self._merge(service_id)

    def forget_orphans(self, lookup: str) -> bool:
        """Forget the items of ``lookup`` (lost) whose time is up; return whether there were any.

        What another lookup service lists stays. Until it is back, ``lookup``
        lists only the items whose time is not up.
        """
        now = self._clock.monotonic()
        orphans = self._orphans.get(lookup, {})
        due = [service_id for service_id, deadline in orphans.items() if deadline <= now]
        for service_id in due:
            del orphans[service_id]
            self._forget(lookup, service_id)
        return bool(due)

    def discard(self, service_id: str) -> bool:
        """Hide ``service_id`` until a lookup service reports it anew; return whether it was shown."""
        if service_id not in self._items:
            return False
        self._discarded.add(service_id)
        self._merge(service_id)
        return True

    def _note_expiry(self, lookup: str, service_id: str, expiry: Expiry | None, now: float) -> None:
        """Keep when ``service_id``'s registration at ``lookup`` ends at the latest, if it is known and finite."""
        if expiry is not None and expiry.bounded:
            self._expiries[lookup][service_id] = (now + expiry.remaining, expiry.term)
        else:
            self._expiries[lookup].pop(service_id, None)

    def _kept_for(self, known: tuple[float, float] | None, now: float) -> float:
        """Seconds to keep an item of a lookup service lost ``now``: its registration there may have
        been renewed just before, so up to its term, or to its end as last said if that is later."""
        if known is None:
            return self._orphan_timeout
        ends, term = known
        return min(self._orphan_timeout, max(term, ends - now))

    def _gone_from(self, lookup: str, service_id: str) -> None:
        """``lookup`` stopped listing ``service_id``: if it is not lost and no other lookup service
        that is not lost lists it, the lost ones' copies go (the caller merges); if another that is
        not lost does, ``service_id`` is disputed and those lookup services doubted."""
        if lookup in self._orphans:
            return
        still = [uri for uri, listing in self._listings.items() if uri not in self._orphans and service_id in listing]
        if still:  # disputed: is one of them dead, and not yet known lost?
            self._disputed.add(service_id)
            self._doubted.update(still)
            return
        for uri, orphans in self._orphans.items():
            if orphans.pop(service_id, None) is not None:
                self._listings[uri].pop(service_id, None)
                self._expiries[uri].pop(service_id, None)

    def _listed_live(self, service_id: str) -> bool:
        """Whether a lookup service that is not lost lists ``service_id``."""
        return any(service_id in listing for uri, listing in self._listings.items() if uri not in self._orphans)

    def _forget(self, lookup: str, service_id: str) -> None:
        """Drop ``service_id`` from ``lookup``'s listing, and show what that changes."""
        self._expiries[lookup].pop(service_id, None)
        if self._listings[lookup].pop(service_id, None) is not None:
            self._merge(service_id)

    def _merge(self, service_id: str, reported: ServiceItem | None = None) -> None:
        """Bring what is shown of ``service_id`` in line with the listings (``reported``: its state just reported)."""
        listed = [listing[service_id] for listing in self._listings.values() if service_id in listing]
        old = self._items.get(service_id)
        new: ServiceItem | None
        if not listed:
            self._discarded.discard(service_id)  # gone everywhere: nothing left to hold back
            self._disputed.discard(service_id)
            new = None
        elif service_id in self._discarded:
            new = None
        elif reported is not None:
            new = reported
        elif old is not None:
            # still listed: one lookup service dropping it says nothing about its state, so the latest
            # state reported stays (falling back to another's older copy would flap back and forth)
            new = old
        else:
            new = listed[0]
        if new is None:
            if old is not None:
                del self._items[service_id]
                self._changes.append(("removed", old))
            return
        self._items[service_id] = new
        if old is None:
            self._changes.append(("added", new))
        elif old != new:
            self._changes.append(("changed", new))


class Teller:
    """Tells a listener of a view's changes, in order, from one thread at a time.

    A thread that finds another telling leaves its changes to it: the teller
    empties the view's changes before it stops, and stops only under the
    lock. Nobody waits, so a listener may call back into the view's owner
    (``discard``, even ``close``) without a deadlock.

    Args:
        lock: the view's owner's lock (held to take changes, never while telling).
        take: takes the changes not yet told (called with ``lock`` held).
        listener: called with each change; ``None``: changes are taken and dropped.
        logger: where a listener's exception is logged (the owner's logger).
    """

    def __init__(self, lock: AbstractContextManager[object], take: Callable[[], list[Change]],
                 listener: Callable[[str, ServiceItem], object] | None, *, logger: logging.Logger = log) -> None:
        self._lock = lock
        self._take = take
        self._listener = listener
        self._logger = logger
        self._telling = False  # a thread is telling (it tells all there is before it stops)

    def tell(self) -> None:
        """Tell the listener every change not yet told (or leave them to the thread already telling)."""
        with self._lock:
            if self._telling:
                return
            self._telling = True
        try:
            while True:
                with self._lock:
                    changes = self._take()
                    if not changes:
                        self._telling = False
                        return
                if self._listener is None:
                    continue
                for kind, item in changes:
                    try:
                        self._listener(kind, item)
                    except Exception:
                        self._logger.exception("a LookupCache listener failed on %s %r", kind, item)
        except BaseException:
            with self._lock:
                self._telling = False
            raise

