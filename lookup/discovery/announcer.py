"""A lookup service telling the network where it is: :class:`Announcer`.

The announcer multicasts an :class:`~lookup.discovery.packets.Announcement` (the
lookup service's id, its URIs, its groups) to ``224.0.1.84:4160`` every
``interval`` seconds, and listens at ``224.0.1.85:4160`` (and for broadcasts
to port 4160) for :class:`~lookup.discovery.packets.Request`\\ s: one that wants
one of its groups (or any group) and has not already heard of it is
answered with the announcement, by unicast to the requester's address and
the port the request names. See :mod:`lookup.discovery.network` for the addresses and
the broadcast fallback.

Whatever arrives is parsed strictly; a packet that is malformed or hostile
is logged (rate-limited: :class:`~lookup.discovery.ratelimit.DropLog`) and dropped,
and the announcer carries on. Replies are rate-limited per source address
and in all (:class:`~lookup.discovery.ratelimit.ReplyLimiter`), so a forged request
cannot turn a lookup service into an amplifier. :func:`lookup.service.server.serve`
(``python -m lookup serve``) starts one unless told ``--no-announce``.
"""

from __future__ import annotations

import logging
import select
import socket
import threading
import time
from collections.abc import Iterable, Sequence

from .network import RECEIVE_SIZE, DiscoveryNetwork, Sender, choose_interfaces, open_listener
from .packets import MAX_INTERVAL, MIN_INTERVAL, Announcement, Request, check_groups, parse
from .ratelimit import DropLog, ReplyLimiter

__all__ = ["Announcer", "Announcing", "DEFAULT_INTERVAL", "PUBLIC_GROUPS", "start_announcer"]

log = logging.getLogger("lookup.announce")  # its name before it moved; logs and tests know it by it

DEFAULT_INTERVAL = 10.0  # seconds between announcements; a client gives a lookup service up after 3 missed
PUBLIC_GROUPS = ("",)    # Jini's public group: what a lookup service is a member of unless told otherwise


class Announcer:
    """Announces a lookup service and answers discovery requests for it, on a thread of its own.

    Args:
        announcement: what to announce (its sequence number counts up from there); ``None``:
            given to :meth:`start` (the sockets are bound, and the mode logged, before it is known).
        network: the port, addresses, interface choice and mode.
        serving: the host the lookup service is served at (its URI's): a
            loopback address keeps discovery on loopback (see :func:`~lookup.discovery.network.choose_interfaces`).
        limiter: how often replies may go (default: 1 a second per source, 4 at once, 50 a second in all).
        logger: where dropped packets and the mode are logged.

    Raises:
        ValueError: ``network.interface`` is no interface's address.
        OSError: the discovery port cannot be bound, or no socket made to send on.
    """

    def __init__(self, announcement: Announcement | None, *, network: DiscoveryNetwork | None = None,
                 serving: str | None = None, limiter: ReplyLimiter | None = None,
                 logger: logging.Logger = log) -> None:
        network = network if network is not None else DiscoveryNetwork()
        self._announcement = announcement
        self._network = network
        self._logger = logger
        self._limiter = limiter if limiter is not None else ReplyLimiter()
        self._drops = DropLog(logger)
        chosen = choose_interfaces(network.interface, serving=serving)
        self._listener = open_listener(network.port, network.request_group, chosen)
        try:
            self._sender = Sender(chosen, network, logger=logger)
        except BaseException:
            self._listener.close()
            raise
        self._wake_r, self._wake_w = socket.socketpair()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.replies = 0         # requests answered
        self.announcements = 0   # announcements sent
        self.dropped = 0         # packets refused as malformed
        self._thread = threading.Thread(target=self._run, name="lookup announcer", daemon=True)

    @property
    def announcement(self) -> Announcement | None:
        """The announcement last sent (or to be sent first)."""
        with self._lock:
            return self._announcement

    def modes(self) -> dict[str, str]:
        """``"multicast"`` or ``"broadcast"``, by interface address."""
        return self._sender.modes()

    def start(self, announcement: Announcement | None = None) -> Announcer:
        """Start announcing ``announcement`` (default: the one given on making it).

        Raises:
            ValueError: no announcement given, here or on making it.
        """
        with self._lock:
            if announcement is not None:
                self._announcement = announcement
            if self._announcement is None:
                raise ValueError("nothing to announce: give the announcement")
            self._thread.name = f"announcer {self._announcement.lookup_id}"
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop announcing and answering; close the sockets (idempotent)."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._wake_w.send(b"x")
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()
        self._sender.close()

    def __enter__(self) -> Announcer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _run(self) -> None:
        due = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= due:
                self._announce()
                due = now + self._interval()
            try:
                readable, _, _ = select.select([self._listener, self._wake_r], [], [], max(0.0, due - now))
            except (OSError, ValueError):  # closed under us
                return
            if self._listener in readable:
                self._receive()

    def _interval(self) -> float:
        with self._lock:
            assert self._announcement is not None  # start() saw to that
            return self._announcement.interval

    def _announce(self) -> None:
        with self._lock:
            assert self._announcement is not None  # start() saw to that
            self._announcement = self._announcement.next()
            data = self._announcement.encode()
        if self._sender.send(data, self._network.announce_group):
            self.announcements += 1

    def _receive(self) -> None:
        try:
            data, source = self._listener.recvfrom(RECEIVE_SIZE)
        except OSError:
            return
        try:
            packet = parse(data)
        except ValueError as exc:
            self.dropped += 1
            self._drops.dropped(f"{source[0]}:{source[1]}", exc)
            return
        except Exception as exc:  # a bug in parsing must not stop the announcer either
            self.dropped += 1
            self._drops.dropped(f"{source[0]}:{source[1]}", f"{type(exc).__name__}: {exc}")
            return
        if isinstance(packet, Request):
            self._answer(packet, source[0])
        # an announcement (another lookup service's, broadcast to the same port): not ours to answer

    def _answer(self, request: Request, source: str) -> None:
        announcement = self.announcement
        if announcement is None or not request.wants(announcement.groups) or announcement.lookup_id in request.heard:
            return
        if not self._limiter.allow(source):
            self._logger.debug("not answering %s: replies to it are over their rate", source)
            return
        try:
            self._listener.sendto(announcement.encode(), (source, request.port))
            self.replies += 1
        except OSError as exc:
            self._logger.debug("could not answer %s:%d: %s", source, request.port, exc)


def start_announcer(lookup_id: str, uris: Sequence[str], *, groups: Iterable[str], interval: float,
                    network: DiscoveryNetwork | None, serving: str | None,
                    logger: logging.Logger = log) -> Announcer | None:
    """An announcer for a lookup service, started; ``None`` (and a WARNING) if the network will not have
    it (the port cannot be bound, no interface): the lookup service serves on, found only by address.

    Raises:
        ValueError: bad groups or interval, URIs or groups too many for one packet, or
            ``network.interface`` not an address of this host.
    """
    announcement = Announcement(lookup_id, tuple(uris), check_groups(groups), 0, interval)
    network = network if network is not None else DiscoveryNetwork()
    try:
        announcer = Announcer(announcement, network=network, serving=serving, logger=logger)
    except OSError as exc:
        logger.warning("not announcing the lookup service (found only by its address): %s", exc)
        return None
    groups_text = ", ".join(repr(group) for group in announcement.groups) or "none"
    logger.info("announcing %s every %g s to groups %s on port %d", lookup_id, interval, groups_text,
                network.port)
    return announcer.start()


class Announcing:
    """Discovery as a served lookup service has it (:func:`lookup.service.server.serve`, ``serve_replicated``):
    its options checked before anything is bound, its announcer started once the service answers
    (:meth:`start`, from ``ready``), closed once it stops.

    Args:
        enabled: announce at all (``python -m lookup serve --no-announce``: not).
        groups: the groups the lookup service is a member of.
        interval: seconds between announcements.
        network: the port, addresses, interface and mode (default: Jini's, every interface).

    Raises:
        ValueError: bad groups, an interval out of bounds, or ``network.interface`` no address of this host.
    """

    def __init__(self, enabled: bool, *, groups: Iterable[str], interval: float,
                 network: DiscoveryNetwork | None) -> None:
        self.enabled = enabled
        self.groups = check_groups(groups)
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) \
                or not MIN_INTERVAL <= interval <= MAX_INTERVAL:
            raise ValueError(f"the announcement interval must be {MIN_INTERVAL:g} to {MAX_INTERVAL:g} s, "
                             f"got {interval!r}")
        self.interval = float(interval)
        self.network = network if network is not None else DiscoveryNetwork()
        if enabled and self.network.interface is not None:
            choose_interfaces(self.network.interface)  # raises if it is not ours
        self.announcer: Announcer | None = None

    def open(self, serving: str) -> None:
        """Bind the sockets (if enabled) for a lookup service served at host ``serving``, before it
        answers: what is logged of it comes before the line saying where the service is.

        A port that cannot be bound, or no interface to send on, is logged (WARNING): no discovery then.
        """
        if not self.enabled or self.announcer is not None:
            return
        try:
            self.announcer = Announcer(None, network=self.network, serving=serving)
        except OSError as exc:
            log.warning("not announcing the lookup service (found only by its address): %s", exc)
            return
        log.info("announcing to groups %s every %g s on port %d",
                 ", ".join(repr(group) for group in self.groups) or "none", self.interval, self.network.port)

    def start(self, lookup_id: str, uris: Sequence[str]) -> None:
        r"""Start announcing ``uris`` under ``lookup_id`` (once :meth:`open`\ ed).

        Raises:
            ValueError: too many URIs or groups for one packet.
        """
        if self.announcer is not None and self.announcer.announcement is None:
            # nothing logged here: the line saying where the service is comes last, once it answers
            self.announcer.start(Announcement(lookup_id, tuple(uris), self.groups, 0, self.interval))

    def close(self) -> None:
        if self.announcer is not None:
            self.announcer.close()
