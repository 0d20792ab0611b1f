"""Finding lookup services with no address configured: :func:`discover` and :class:`LookupDiscovery`.

A client asks the lookup services of the groups it wants to announce
themselves (a :class:`~lookup.discovery.packets.Request` multicast to
``224.0.1.85:4160``, or broadcast; see :mod:`lookup.discovery.network`) and listens,
at ``224.0.1.84:4160``, for the announcements they multicast every few
seconds anyway. :func:`discover` does that once, for a while, and returns
what it found. :class:`LookupDiscovery` (Jini's name) keeps doing it and
tells its listeners of each lookup service as it appears (its first
announcement heard) and disappears (none heard for ``missed`` of its
announcement intervals, or :meth:`LookupDiscovery.discard`\\ ed by the user
after a call to it failed): what ``JoinManager(groups=...)`` and
``LookupCache(groups=...)`` follow.

Groups are names; ``""`` is the public group, the one a lookup service is a
member of unless told otherwise. ``groups=None`` means every group.
Anything heard that is not a well-formed announcement is logged
(rate-limited) and dropped.
"""

from __future__ import annotations

import dataclasses
import logging
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator

from landlord import SYSTEM_CLOCK, Clock

from .network import DISCOVERY_PORT, RECEIVE_SIZE, DiscoveryNetwork, Sender, choose_interfaces, open_listener
from .packets import Announcement, Request, check_groups, parse
from .ratelimit import DropLog
from .unicast import LookupGroup

__all__ = ["discover", "DiscoveredLookup", "LookupDiscovery", "DiscoveryListener", "DiscoveryTable", "follow_discovery",
           "REQUEST_SPACING", "MISSED_ANNOUNCEMENTS"]

log = logging.getLogger("lookup.discovery")  # its name before it moved; logs and tests know it by it

REQUEST_SPACING = 1.0       # seconds between a client's requests
REQUEST_ROUNDS = 3          # requests a LookupDiscovery sends on starting (then it listens for announcements)
MISSED_ANNOUNCEMENTS = 3    # announcement intervals without one heard, and a lookup service is discarded

DiscoveryListener = Callable[[str, "DiscoveredLookup"], object]
"""Called with ``"discovered"`` or ``"discarded"`` and the lookup service."""


@dataclasses.dataclass(frozen=True, slots=True)
class DiscoveredLookup:
    """A lookup service found by discovery: its id, its URIs (one per replica, if replicated), its groups."""

    lookup_id: str
    uris: tuple[str, ...]
    groups: tuple[str, ...]

    @classmethod
    def of(cls, announcement: Announcement) -> DiscoveredLookup:
        return cls(announcement.lookup_id, announcement.uris, announcement.groups)

    @property
    def uri(self) -> str:
        """Its (first) URI."""
        return self.uris[0]

    def locator(self) -> str | LookupGroup:
        """What ``JoinManager``, ``LookupCache`` and ``locate`` take: its URI, or a replicated one's group."""
        return self.uris[0] if len(self.uris) == 1 else LookupGroup(self.uris)


class _Ears:
    """A client's sockets: one per interface (requests go out there, replies come back) and the
    announcements' listener (left out, with a WARNING, if the port cannot be bound: replies still come)."""

    def __init__(self, network: DiscoveryNetwork, *, logger: logging.Logger = log,
                 mode_level: int = logging.INFO) -> None:
        chosen = choose_interfaces(network.interface)
        self.network = network
        self.sender = Sender(chosen, network, logger=logger, mode_level=mode_level)
        self.drops = DropLog(logger)
        self.sockets = self.sender.sockets
        try:
            self.sockets = [*self.sockets, open_listener(network.port, network.announce_group, chosen)]
        except OSError as exc:
            logger.warning("cannot listen for announcements at port %d (%s): only replies to requests are heard",
                           network.port, exc)

    def request(self, groups: tuple[str, ...] | None, heard: Iterable[str]) -> None:
        """Ask the lookup services of ``groups`` (``None``: any) not in ``heard`` to answer."""
        if groups == ():
            return  # no group wanted: nothing to ask
        known = tuple(heard)
        self.sender.send(lambda port: Request(groups or (), port, known).encode(), self.network.request_group)

    def receive(self, timeout: float | None, also: socket.socket | None = None) -> Iterator[Announcement]:
        """The announcements that arrive within ``timeout`` seconds (``None``: until one does; stops early
        when ``also`` is readable)."""
        watched = self.sockets if also is None else [*self.sockets, also]
        try:
            readable, _, _ = select.select(watched, [], [], None if timeout is None else max(0.0, timeout))
        except (OSError, ValueError):  # closed under us
            return
        for sock in readable:
            if sock is also:
                continue
            try:
                data, source = sock.recvfrom(RECEIVE_SIZE)
            except OSError:
                continue
            try:
                packet = parse(data)
            except Exception as exc:  # malformed or hostile: said (rate-limited), dropped
                self.drops.dropped(f"{source[0]}:{source[1]}", exc)
                continue
            if isinstance(packet, Announcement):
                yield packet

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()


def discover(timeout: float = 3.0, *, groups: Iterable[str] | None = None, count: int | None = None,
             port: int = DISCOVERY_PORT, interface: str | None = None,
             broadcast: bool = False) -> list[DiscoveredLookup]:
    """The lookup services of ``groups`` that answer or announce themselves within ``timeout`` seconds.

    Requests go out at once and every :data:`REQUEST_SPACING` seconds (naming those already heard,
    which need not answer again); announcements are heard too.

    Args:
        timeout: seconds to listen.
        groups: the groups wanted (``""``: the public group); ``None``: every group.
        count: return as soon as this many are found (default: after ``timeout``).
        port: the discovery port (default 4160).
        interface: the IPv4 address of the one interface to use (default: every interface that is up).
        broadcast: broadcast requests, never multicast.

    Raises:
        ValueError: a bad group, port or interface.
    """
    wanted = None if groups is None else check_groups(groups)
    network = DiscoveryNetwork(port=port, interface=interface, broadcast=broadcast)
    found: dict[str, DiscoveredLookup] = {}
    ears = _Ears(network, mode_level=logging.DEBUG)
    try:
        deadline = time.monotonic() + timeout
        next_request = time.monotonic()
        while (now := time.monotonic()) < deadline and (count is None or len(found) < count):
            if now >= next_request:
                ears.request(wanted, found)
                next_request = now + REQUEST_SPACING
            for announcement in ears.receive(min(deadline, next_request) - now):
                if announcement.member_of(wanted):
                    found[announcement.lookup_id] = DiscoveredLookup.of(announcement)
    finally:
        ears.close()
    return list(found.values())


def follow_discovery(groups: Iterable[str] | None,
               discovery: LookupDiscovery | None) -> tuple[LookupDiscovery | None, bool]:
    """The discovery to follow, and whether it is one's own (made for ``groups``) to close.

    Raises:
        TypeError: both given.
    """
    if groups is None:
        return discovery, False
    if discovery is not None:
        raise TypeError("give groups or a discovery, not both")
    return LookupDiscovery(groups), True


class DiscoveryTable:
    """Which lookup services are known, and until when each counts as present (pure: given the time).

    Args:
        groups: the groups wanted (``None``: every group).
        missed: announcement intervals without one heard before a lookup service is discarded.
    """

    def __init__(self, groups: tuple[str, ...] | None, *, missed: int = MISSED_ANNOUNCEMENTS) -> None:
        self.groups = groups
        self.missed = missed
        self._known: dict[str, tuple[DiscoveredLookup, float]] = {}  # id -> (lookup, discard when)

    def heard(self, announcement: Announcement, now: float) -> list[tuple[str, DiscoveredLookup]]:
        """An announcement (or a reply) heard at ``now``: the events it makes."""
        lookup = DiscoveredLookup.of(announcement)
        known = self._known.get(lookup.lookup_id)
        if not announcement.member_of(self.groups):  # not of our groups (any longer)
            return self.discard(lookup.lookup_id)
        self._known[lookup.lookup_id] = (lookup, now + self.missed * announcement.interval)
        if known is None:
            return [("discovered", lookup)]
        if known[0] != lookup:  # moved, or its groups changed: the old one goes, the new one comes
            return [("discarded", known[0]), ("discovered", lookup)]
        return []

    def discard(self, lookup_id: str) -> list[tuple[str, DiscoveredLookup]]:
        known = self._known.pop(lookup_id, None)
        return [] if known is None else [("discarded", known[0])]

    def expire(self, now: float) -> list[tuple[str, DiscoveredLookup]]:
        """Those not heard of in time, discarded."""
        gone = [lookup_id for lookup_id, (_, until) in self._known.items() if until <= now]
        return [event for lookup_id in gone for event in self.discard(lookup_id)]

    def next_expiry(self) -> float:
        return min((until for _, until in self._known.values()), default=float("inf"))

    def lookups(self) -> list[DiscoveredLookup]:
        return [lookup for lookup, _ in self._known.values()]

    def ids(self) -> list[str]:
        return list(self._known)


class LookupDiscovery:
    """Follows the lookup services of ``groups`` as they appear and disappear, telling its listeners.

    On starting it sends ``request_rounds`` requests, ``request_spacing``
    seconds apart (each naming those already heard), then listens for the
    announcements every lookup service multicasts. A lookup service is
    *discovered* when first heard of, and *discarded* when none of its
    announcements has been heard for ``missed`` of its announcement intervals
    (it stopped, or a partition cut it off), when it announces that it left
    the groups wanted, or when :meth:`discard` is called (a call to it
    failed). One discarded is discovered again at its next announcement heard.

    Listeners are called with ``"discovered"`` or ``"discarded"`` and a
    :class:`DiscoveredLookup`, in order, one call at a time, on one of the
    discovery's threads: a listener must not block for long. One added
    later is first told of every lookup service known.

    Args:
        groups: the groups wanted (``""``: the public group); ``None``: every group.
        listener: a first listener (see :meth:`add_listener`).
        port, interface, broadcast: as for :func:`discover`.
        clock: what the announcement intervals and requests are timed on.
        missed: announcement intervals without one heard before a lookup service is discarded.
        request_rounds, request_spacing: the requests sent on starting.

    Raises:
        ValueError: a bad group, port, interface, or count.
        OSError: no socket could be made to send requests on.
    """

    def __init__(self, groups: Iterable[str] | None = None, *, listener: DiscoveryListener | None = None,
                 port: int = DISCOVERY_PORT, interface: str | None = None, broadcast: bool = False,
                 clock: Clock = SYSTEM_CLOCK, missed: int = MISSED_ANNOUNCEMENTS,
                 request_rounds: int = REQUEST_ROUNDS, request_spacing: float = REQUEST_SPACING) -> None:
        if isinstance(missed, bool) or not isinstance(missed, int) or missed < 1:
            raise ValueError(f"missed must be a positive int, got {missed!r}")
        if isinstance(request_rounds, bool) or not isinstance(request_rounds, int) or request_rounds < 0:
            raise ValueError(f"request_rounds must be an int >= 0, got {request_rounds!r}")
        if not request_spacing > 0:
            raise ValueError(f"request_spacing must be positive, got {request_spacing!r}")
        self.groups = None if groups is None else check_groups(groups)
        network = DiscoveryNetwork(port=port, interface=interface, broadcast=broadcast)
        self._table = DiscoveryTable(self.groups, missed=missed)
        self._clock = clock
        self._condition = threading.Condition()
        self._events: list[tuple[int, str, DiscoveredLookup]] = []  # queued for the listeners, numbered
        self._sequence = 0  # the next event's number
        self._listeners: list[tuple[DiscoveryListener, int]] = []  # and the first event number each hears
        self._tell_lock = threading.Lock()  # one delivery at a time, in order
        self._requests_left, self._request_spacing = request_rounds, request_spacing
        self._next_request = clock.monotonic()
        self._closed = False
        self._ears = _Ears(network)
        self._wake_r, self._wake_w = socket.socketpair()
        if listener is not None:
            self._listeners.append((listener, 0))
        self._threads = [threading.Thread(target=self._receive_loop, name="LookupDiscovery receiver", daemon=True),
                         threading.Thread(target=self._timer_loop, name="LookupDiscovery timer", daemon=True)]
        for thread in self._threads:
            thread.start()

    # -- what the user sees --------------------------------------------------------------------------

    def discovered(self) -> list[DiscoveredLookup]:
        """The lookup services known now."""
        with self._condition:
            return self._table.lookups()

    def wait_discovered(self, count: int = 1, timeout: float | None = None) -> bool:
        """Block until ``count`` lookup services are known; return whether they were within ``timeout``."""
        with self._condition:
            return self._condition.wait_for(lambda: self._closed or len(self._table.ids()) >= count, timeout) \
                and len(self._table.ids()) >= count

    def add_listener(self, listener: DiscoveryListener) -> None:
        """Tell ``listener`` of every lookup service known now (``"discovered"``), and from now on of each change."""
        with self._tell_lock:
            with self._condition:
                self._listeners.append((listener, self._sequence))  # the events queued before are in `known`
                known = self._table.lookups()
            for lookup in known:
                self._call(listener, "discovered", lookup)

    def remove_listener(self, listener: DiscoveryListener) -> None:
        """Tell ``listener`` nothing more (one not added is ignored)."""
        with self._condition:
            self._listeners = [(known, since) for known, since in self._listeners if known is not listener]

    def discard(self, lookup: DiscoveredLookup | str) -> None:
        """Forget ``lookup`` (or the one of this id), telling the listeners; it comes back when heard again."""
        lookup_id = lookup.lookup_id if isinstance(lookup, DiscoveredLookup) else lookup
        with self._condition:
            self._queue(self._table.discard(lookup_id))
        self._tell()

    def close(self) -> None:
        """Stop listening and telling (idempotent)."""
        with self._condition:
            if self._closed:
                return
            self._closed = True
            self._condition.notify_all()
        self._wake_w.send(b"x")
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join()
        self._ears.close()
        self._wake_r.close()
        self._wake_w.close()

    def __enter__(self) -> LookupDiscovery:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- its threads ------------------------------------------------------------------------------

    def _receive_loop(self) -> None:
        while True:
            with self._condition:
                if self._closed:
                    return
            for announcement in self._ears.receive(None, also=self._wake_r):
                with self._condition:
                    self._queue(self._table.heard(announcement, self._clock.monotonic()))
                    self._condition.notify_all()  # the timer's next deadline may have changed
                self._tell()

    def _timer_loop(self) -> None:
        while True:
            with self._condition:
                while True:
                    if self._closed:
                        return
                    now = self._clock.monotonic()
                    expired = self._table.expire(now)
                    send = self._requests_left > 0 and now >= self._next_request
                    if expired or send:
                        break
                    due = self._next_request if self._requests_left > 0 else float("inf")
                    self._clock.wait(self._condition, min(due, self._table.next_expiry()))
                self._queue(expired)
                heard = self._table.ids()
                if send:
                    self._requests_left -= 1
                    self._next_request = now + self._request_spacing
            if send:
                self._ears.request(self.groups, heard)
            if expired:
                log.info("discarded %s: not heard from for %d announcement intervals",
                         ", ".join(lookup.lookup_id for _, lookup in expired), self._table.missed)
            self._tell()

    def _queue(self, events: list[tuple[str, DiscoveredLookup]]) -> None:
        """Queue ``events`` for the listeners (with the condition held)."""
        for kind, lookup in events:
            self._events.append((self._sequence, kind, lookup))
            self._sequence += 1

    def _tell(self) -> None:
        """Deliver the queued events, in order, one at a time (without the condition held)."""
        with self._tell_lock:
            while True:
                with self._condition:
                    if not self._events:
                        return
                    number, kind, lookup = self._events.pop(0)
                    listeners = [listener for listener, since in self._listeners if number >= since]
                for listener in listeners:
                    self._call(listener, kind, lookup)

    @staticmethod
    def _call(listener: DiscoveryListener, kind: str, lookup: DiscoveredLookup) -> None:
        try:
            listener(kind, lookup)
        except Exception:  # a listener's bug must not stop discovery
            log.exception("a discovery listener failed on %s %s", kind, lookup.lookup_id)
