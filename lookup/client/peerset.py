"""The lookup services a client keeps at, one peer each: :class:`PeerSet`.

:class:`~lookup.JoinManager` and :class:`~lookup.LookupCache` each keep at
several lookup services at once, through one peer per lookup service on a
thread of its own (:class:`~lookup.client.joinpeer.JoinPeer`,
:class:`~lookup.client.cachepeer.CachePeer`). What they share is written here
once, in one vocabulary: the peers by lookup service (by its
:func:`~lookup.client.peer.locator_key`), lookup services added and removed
(by hand, or as discovery finds and discards them), the peers let go of whose
threads are still ending, the errors of the lookup services not reached since
they failed, and closing: every thread stopped and joined, and what each peer
kept at its lookup service ended. What a peer keeps there, and how it lets go,
is the peer's own (:class:`Peer`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Generic, Protocol, TypeVar

from landlord import PeerErrors

from ..discovery.multicast import DiscoveredLookup, LookupDiscovery, follow_discovery
from .peer import locator_key

__all__ = ["Peer", "PeerSet"]


class Peer(Protocol):
    """What a :class:`PeerSet` asks of each of its peers: one lookup service kept at, on a thread of its own."""

    @property
    def uri(self) -> str:
        """The key of its lookup service (see :func:`~lookup.client.peer.locator_key`)."""
        ...

    def start(self) -> None:
        """Start its thread (with the condition held)."""
        ...

    def stop(self) -> None:
        """Have its thread end, holding on to what it kept at its lookup service (with the condition held)."""
        ...

    def join(self) -> None:
        """Wait for its thread to end (without the condition)."""
        ...

    def let_go(self) -> None:
        """After :meth:`stop`, its lookup service removed: what it kept there is no longer renewed,
        and not cancelled (one let go of is usually one that cannot be reached); say so (without the condition)."""
        ...

    def end(self, *, cancel: bool) -> None:
        """After :meth:`stop` and :meth:`join`, on closing: what it kept there is no longer renewed,
        and is cancelled if ``cancel`` (without the condition)."""
        ...


P = TypeVar("P", bound=Peer)


class PeerSet(Generic[P]):
    """The peers of a client, one per lookup service kept at, by its key, in the order added.

    ``add``, ``remove``, ``follow`` and ``close`` are called without the
    condition (they take it); :attr:`closed`, :attr:`errors`, :meth:`keys` and
    iterating, with it held. Adding a lookup service kept already, or removing
    one that is not, does nothing; once closed, nothing is added.

    Args:
        new_peer: makes the peer for a lookup service's key, not yet started
            (called with the condition held; the set starts it).
        condition: the owner's, guarding the set, :attr:`errors` and the
            owner's state; notified on every change here.
        forget: called with the condition held with the key of each lookup
            service removed (not on closing): the cache's listing of it leaves the view.
    """

    def __init__(self, new_peer: Callable[[str], P], *, condition: threading.Condition,
                 forget: Callable[[str], object] = lambda key: None) -> None:
        self._new_peer = new_peer
        self._condition = condition
        self._forget = forget
        self._peers: dict[str, P] = {}
        self._retired: list[P] = []  # let go of (removed, or discarded), their threads ending
        self._closed = False
        self._discovery: LookupDiscovery | None = None
        self._owns_discovery = False
        self._listener = self._discovered  # one bound method: discovery removes the very listener it was given
        self.errors = PeerErrors()
        """The last error of each lookup service not reached since it failed, shared with the peers."""

    # -- with the condition held -----------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has been called."""
        return self._closed

    def __iter__(self) -> Iterator[P]:
        """The peers of the lookup services kept at, in the order added."""
        return iter(self._peers.values())

    def keys(self) -> list[str]:
        """The keys of the lookup services kept at, in the order added."""
        return list(self._peers)

    # -- without it (taking it) -----------------------------------------------------------------

    def add(self, keys: Iterable[str]) -> None:
        """Keep at these lookup services too, each through a new peer on a thread of its own."""
        with self._condition:
            if self._closed:
                return
            for key in keys:
                if key not in self._peers:
                    peer = self._peers[key] = self._new_peer(key)
                    peer.start()

    def remove(self, keys: Iterable[str]) -> None:
        """No longer keep at these lookup services: their peers stop, let go of what they kept there
        (see :meth:`Peer.let_go`), and their errors no longer stand."""
        with self._condition:
            gone = [peer for key in keys if (peer := self._peers.pop(key, None)) is not None]
            for peer in gone:
                peer.stop()
                self._retired.append(peer)
                self.errors.reached(peer.uri)  # its error no longer stands: it is not kept at
                self._forget(peer.uri)
            self._condition.notify_all()
        for peer in gone:
            peer.let_go()

    def follow(self, groups: Iterable[str] | None, discovery: LookupDiscovery | None) -> None:
        """Also keep at every lookup service of ``groups`` found by discovery, or that ``discovery``
        (the caller's, left open on :meth:`close`) finds, from when it is discovered until it is discarded.

        Raises:
            TypeError: both ``groups`` and ``discovery``.
            ValueError: bad groups.
            OSError: ``groups`` given, and discovery cannot send on any interface.
        """
        self._discovery, self._owns_discovery = follow_discovery(groups, discovery)
        if self._discovery is not None:
            self._discovery.add_listener(self._listener)

    def close(self, *, cancel: bool = True) -> None:
        """Stop following discovery, stop every peer and wait for its thread (those let go of too),
        then end what each kept at its lookup service (see :meth:`Peer.end`)."""
        if self._discovery is not None:
            self._discovery.remove_listener(self._listener)
            if self._owns_discovery:
                self._discovery.close()
        with self._condition:
            self._closed = True
            peers = list(self._peers.values())
            for peer in peers:
                peer.stop()
            self._condition.notify_all()
        for peer in peers + self._retired:
            peer.join()
        for peer in peers:
            peer.end(cancel=cancel)

    def _discovered(self, kind: str, lookup: DiscoveredLookup) -> None:
        """Discovery's listener: keep at a lookup service discovered, let go of one discarded."""
        if kind == "discovered":
            self.add([locator_key(lookup.locator())])
        elif kind == "discarded":
            self.remove([locator_key(lookup.locator())])
