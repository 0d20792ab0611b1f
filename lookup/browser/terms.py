"""The browser's feed on a replica of a replicated lookup service: :class:`TermFeed`.

While the replica leads, a page streams the :class:`~lookup.browser.feed.BrowserFeed`
of its term's lookup service, made when the term begins; when the term ends
that feed closes, which ends every stream, and the page reconnects (a second
later) to whatever this replica is then. While it does not lead, a stream
gets one message, ``{"kind": "follower", "leader": uri or null}``, then
heartbeats, and ends once this replica leads or names another leader, so
the page shows the replica's state within about a second.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from ..service.lookupservice import LookupService
from .feed import BrowserFeed, FeedLimits, Subscription

__all__ = ["TermFeed", "Replica", "FOLLOWER_CHECK"]

log = logging.getLogger("lookup.browser")

FOLLOWER_CHECK = 1.0  # seconds between a follower stream's looks at whether this replica's state changed


class Replica(Protocol):
    """What :class:`TermFeed` needs of a replica (a ``ReplicatedLookupService``)."""

    @property
    def leading(self) -> bool: ...  # pragma: no cover

    def leader(self) -> str | None: ...  # pragma: no cover

    def on_term(self, callback: Callable[[Any], None]) -> None: ...  # pragma: no cover

    def on_term_end(self, callback: Callable[[Any], None]) -> None: ...  # pragma: no cover


class _FollowerSubscription(Subscription):
    """A stream of a replica that does not lead: its state, then heartbeats until that state changes."""

    def __init__(self, replica: Replica, admin: bool) -> None:
        super().__init__(admin, 1)
        self._replica = replica
        self._named = replica.leader()
        self.offer(json.dumps({"kind": "follower", "leader": self._named}, separators=(",", ":")).encode())

    def next(self, timeout: float) -> bytes | None:
        """As :meth:`Subscription.next`, waiting at most :data:`FOLLOWER_CHECK`; dropped once the replica
        leads or names another leader (the page then reconnects to what it is now)."""
        message = super().next(min(timeout, FOLLOWER_CHECK))
        if message is None and not self.dropped and (self._replica.leading or self._replica.leader() != self._named):
            self.drop()
        return message


class TermFeed:
    """The feed a replica's page streams (see the module's docstring): the same calls as a
    :class:`~lookup.browser.feed.BrowserFeed`'s, which :class:`~lookup.browser.http.BrowserServer` makes.

    Make it before the replica starts (it asks to be told of every term).

    Args:
        replica: the replica whose terms it shows.
        limits: each term's feed's bounds, and the follower streams' (``clients``).

    Raises:
        RuntimeError: the replica has started.
        TypeError: ``limits`` is not a FeedLimits.
    """

    def __init__(self, replica: Replica, limits: FeedLimits | None = None) -> None:
        if limits is not None and not isinstance(limits, FeedLimits):
            raise TypeError(f"limits must be a FeedLimits, got {type(limits).__name__}")
        self.limits = limits if limits is not None else FeedLimits()
        self._replica = replica
        self._lock = threading.Lock()
        self._term: tuple[LookupService, BrowserFeed] | None = None
        self._followers: list[Subscription] = []
        self._closed = False
        replica.on_term(self._begin)
        replica.on_term_end(self._end)

    @property
    def clients(self) -> int:
        """How many clients stream now (of the term's feed, and followers)."""
        with self._lock:
            term, followers = self._term, len(self._followers)
        return followers + (term[1].clients if term is not None else 0)

    def start(self) -> None:
        """Nothing: each term's feed starts with its term."""

    def close(self) -> None:
        """End every stream, and the term's feed."""
        with self._lock:
            self._closed = True
            term, self._term = self._term, None
            followers, self._followers = self._followers, []
        for subscription in followers:
            subscription.drop()
        if term is not None:
            term[1].close()

    def subscribe(self, admin: bool) -> Subscription | None:
        """A stream of the term's feed while this replica leads, else of its state as a follower;
        ``None`` past ``limits.clients`` (or closed)."""
        with self._lock:
            if self._closed:
                return None
            term = self._term if self._replica.leading else None
            if term is None:
                if len(self._followers) >= self.limits.clients:
                    return None
                subscription: Subscription = _FollowerSubscription(self._replica, admin)
                self._followers.append(subscription)
                return subscription
        return term[1].subscribe(admin)

    def unsubscribe(self, subscription: Subscription) -> None:
        """Stop sending to ``subscription`` (its client went away)."""
        with self._lock:
            if subscription in self._followers:
                self._followers.remove(subscription)
                return
            term = self._term
        if term is not None:
            term[1].unsubscribe(subscription)

    def _begin(self, service: LookupService) -> None:
        """A term begins (before it answers): its own feed, started; the follower streams end, to reconnect to it."""
        feed = BrowserFeed(service, self.limits)
        feed.start()
        with self._lock:
            old, self._term = self._term, (service, feed)
            followers, self._followers = self._followers, []
        for subscription in followers:
            subscription.drop()
        if old is not None:  # its end was not reported (cannot happen as terms go; kept safe)
            old[1].close()

    def _end(self, service: LookupService) -> None:
        """A term ends: its feed closes, ending its streams (the pages reconnect to what this replica is then)."""
        with self._lock:
            if self._term is None or self._term[0] is not service:
                return
            feed, self._term = self._term[1], None
        feed.close()
