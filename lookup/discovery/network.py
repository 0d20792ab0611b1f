"""Where discovery packets travel: the interfaces, multicast or broadcast, and the sockets.

The addresses are Jini's: lookup services announce themselves to
:data:`ANNOUNCE_GROUP` (224.0.1.84), clients send requests to
:data:`REQUEST_GROUP` (224.0.1.85), both at UDP port :data:`DISCOVERY_PORT`
(4160, the same number as the lookup service's TCP port, as in Jini). IPv4 only.

Each packet is sent on every interface chosen (:func:`choose_interfaces`),
from a socket bound to the interface's address, with ``IP_MULTICAST_IF`` set
to it: a host without a route for 224.0.0.0/4 (no default route, as in the
multihost tests' network namespaces) still sends, since the interface is
named. Where an interface cannot multicast (it lacks ``MULTICAST``, or
sending fails with "network unreachable" or "address not available"), or
when ``broadcast`` is asked for, packets go to its broadcast address (else
255.255.255.255) with ``SO_BROADCAST``, as the Pyro5 name server's
broadcast discovery does; the mode each interface uses is logged once.
Listeners are bound to the port on every address, so they hear both.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import ipaddress
import logging
import socket
import struct
import sys
from collections.abc import Callable, Sequence

try:
    import fcntl
except ImportError:  # pragma: no cover (not Unix)
    fcntl = None  # type: ignore[assignment]

from landlord.transport.addresses import is_loopback, own_address

__all__ = [
    "DISCOVERY_PORT", "ANNOUNCE_GROUP", "REQUEST_GROUP", "DEFAULT_TTL", "DiscoveryNetwork", "Interface",
    "interfaces", "choose_interfaces", "Sender", "open_listener", "RECEIVE_SIZE",
]

log = logging.getLogger("lookup.disconet")  # its name before it moved; logs and tests know it by it

DISCOVERY_PORT = 4160            # Jini's discovery port (UDP)
ANNOUNCE_GROUP = "224.0.1.84"    # Jini's multicast announcement address: lookup services announce here
REQUEST_GROUP = "224.0.1.85"     # Jini's multicast request address: clients ask here
DEFAULT_TTL = 15                 # Jini's default multicast time to live (router hops)
RECEIVE_SIZE = 65536             # read whole datagrams, so an oversized one is seen as such and refused
LIMITED_BROADCAST = "255.255.255.255"

_SIOCGIFFLAGS, _SIOCGIFADDR, _SIOCGIFBRDADDR = 0x8913, 0x8915, 0x8919  # Linux ioctls
_IFF_UP, _IFF_BROADCAST, _IFF_LOOPBACK, _IFF_MULTICAST = 0x1, 0x2, 0x8, 0x1000
_IP_MULTICAST_ALL = 49  # Linux: 0 = a socket hears only the groups it joined itself
# a multicast send failing with one of these: no route for multicast there; broadcast instead
_NO_MULTICAST = frozenset({errno.ENETUNREACH, errno.EADDRNOTAVAIL, errno.EHOSTUNREACH, errno.ENODEV})


@dataclasses.dataclass(frozen=True, slots=True)
class DiscoveryNetwork:
    """Where discovery packets go: a port, groups, interfaces, multicast or broadcast.

    Args:
        port: the UDP port of announcements and requests.
        interface: the IPv4 address of the one interface to use (default: see :func:`choose_interfaces`).
        broadcast: broadcast on every interface, never multicast (where multicast is known not to work).
        ttl: the multicast time to live.
        announce_group, request_group: the multicast addresses.

    Raises:
        ValueError: a port, TTL or address out of range.
    """

    port: int = DISCOVERY_PORT
    interface: str | None = None
    broadcast: bool = False
    ttl: int = DEFAULT_TTL
    announce_group: str = ANNOUNCE_GROUP
    request_group: str = REQUEST_GROUP

    def __post_init__(self) -> None:
        if isinstance(self.port, bool) or not isinstance(self.port, int) or not 0 < self.port < 65536:
            raise ValueError(f"port must be 1 to 65535, got {self.port!r}")
        if isinstance(self.ttl, bool) or not isinstance(self.ttl, int) or not 0 <= self.ttl <= 255:
            raise ValueError(f"ttl must be 0 to 255, got {self.ttl!r}")
        for group in (self.announce_group, self.request_group):
            if not _ipv4(group).is_multicast:
                raise ValueError(f"not an IPv4 multicast address: {group!r}")
        if self.interface is not None:
            _ipv4(self.interface)


@dataclasses.dataclass(frozen=True, slots=True)
class Interface:
    """A network interface discovery can use: its name, IPv4 address and broadcast address, and flags."""

    name: str
    address: str
    broadcast: str | None = None
    multicast: bool = True
    loopback: bool = False


def interfaces() -> list[Interface]:
    """The interfaces that are up and have an IPv4 address (Linux; elsewhere, this host's own address)."""
    if fcntl is None or not hasattr(socket, "if_nameindex") or not sys.platform.startswith("linux"):
        return [Interface("?", own_address())]  # pragma: no cover
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            request = struct.pack("256s", name.encode()[:15])
            try:
                flags = struct.unpack_from("H", fcntl.ioctl(probe.fileno(), _SIOCGIFFLAGS, request), 16)[0]
                address = socket.inet_ntoa(fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, request)[20:24])
            except OSError:
                continue  # no IPv4 address on it
            if not flags & _IFF_UP:
                continue
            broadcast = None
            if flags & _IFF_BROADCAST:
                with contextlib.suppress(OSError):
                    broadcast = socket.inet_ntoa(fcntl.ioctl(probe.fileno(), _SIOCGIFBRDADDR, request)[20:24])
            loopback = bool(flags & _IFF_LOOPBACK)
            # loopback has no MULTICAST flag, yet multicast to this host's own listeners works over it
            found.append(Interface(name, address, broadcast if broadcast != "0.0.0.0" else None,
                                   bool(flags & _IFF_MULTICAST) or loopback, loopback))
    return found


def choose_interfaces(address: str | None = None, *, serving: str | None = None) -> list[Interface]:
    """The interfaces to use: the one with ``address`` if given; else, for a lookup service served at
    a loopback address ``serving``, loopback only (no other host could reach it); else every interface
    that is up, loopback included for a client (a lookup service on this host) and left out for a
    lookup service (unless it has no other).

    Raises:
        ValueError: no interface has ``address``.
    """
    found = interfaces()
    if address is not None:
        chosen = [interface for interface in found if interface.address == address]
        if not chosen:
            raise ValueError(f"no interface of this host has the address {address} "
                             f"(it has {', '.join(i.address for i in found) or 'none'})")
        return chosen
    loopbacks = [interface for interface in found if interface.loopback] or [Interface("lo", "127.0.0.1",
                                                                                        loopback=True)]
    if serving is None:
        return found or loopbacks
    if is_loopback(serving):
        return loopbacks[:1]
    return [interface for interface in found if not interface.loopback] or loopbacks[:1]


def open_listener(port: int, group: str, chosen: Sequence[Interface]) -> socket.socket:
    """A socket bound to ``port`` on every address, a member of multicast ``group`` on each interface
    that multicasts; it hears broadcasts to the port too. Several may share the port (``SO_REUSEADDR``).

    Raises:
        OSError: the port cannot be bound.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_IP, _IP_MULTICAST_ALL, 0)
        sock.bind(("", port))
        for interface in chosen:
            if interface.multicast:
                try:
                    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                                    socket.inet_aton(group) + socket.inet_aton(interface.address))
                except OSError as exc:  # it then hears broadcasts only
                    log.debug("cannot join %s on %s (%s): %s", group, interface.name, interface.address, exc)
    except BaseException:
        sock.close()
        raise
    return sock


class Sender:
    """Sends datagrams to a multicast group (or broadcast) on each interface, from a socket bound to it.

    The sockets also receive what is sent back to them: the replies to a client's requests.

    Args:
        chosen: the interfaces.
        network: the port, TTL, and whether to broadcast only.
        logger: where the mode of each interface is logged (once).
        mode_level: the level that is logged at (INFO; a one-off client's: DEBUG).

    Raises:
        OSError: no interface's socket could be made.
    """

    def __init__(self, chosen: Sequence[Interface], network: DiscoveryNetwork, *, logger: logging.Logger = log,
                 mode_level: int = logging.INFO) -> None:
        self._network = network
        self._logger = logger
        self._mode_level = mode_level
        self._sockets: list[tuple[Interface, socket.socket]] = []
        self._broadcasting: set[str] = set()  # addresses of interfaces that broadcast
        errors = []
        for interface in chosen:
            try:
                self._sockets.append((interface, self._open(interface)))
            except OSError as exc:
                errors.append(f"{interface.name} ({interface.address}): {exc}")
        if not self._sockets:
            raise OSError(f"no interface to send discovery packets on: {'; '.join(errors) or 'none chosen'}")
        for interface, _ in self._sockets:
            if network.broadcast or not interface.multicast:
                self._broadcast_on(interface, "asked to" if network.broadcast else "the interface lacks MULTICAST")
            else:
                logger.log(mode_level, "discovery on %s (%s): multicast", interface.name, interface.address)

    def _open(self, interface: Interface) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(interface.address))
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, self._network.ttl)
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)  # for listeners on this host
            # bound to the interface's address: a broadcast needs no route then, and replies come back here
            sock.bind((interface.address, 0))
        except BaseException:
            sock.close()
            raise
        return sock

    def _broadcast_on(self, interface: Interface, why: str) -> None:
        self._broadcasting.add(interface.address)
        self._logger.log(self._mode_level, "discovery on %s (%s): broadcast to %s (%s)", interface.name,
                         interface.address, interface.broadcast or LIMITED_BROADCAST, why)

    @property
    def sockets(self) -> list[socket.socket]:
        """The sockets, one per interface (replies to what they send arrive there)."""
        return [sock for _, sock in self._sockets]

    def modes(self) -> dict[str, str]:
        """``"multicast"`` or ``"broadcast"``, by interface address."""
        return {interface.address: "broadcast" if interface.address in self._broadcasting else "multicast"
                for interface, _ in self._sockets}

    def send(self, data: bytes | Callable[[int], bytes], group: str) -> int:
        """Send ``data`` to ``group`` (or broadcast) on every interface; return on how many it went out.

        ``data`` may be a function of the sending socket's port, for a request naming where to answer.
        """
        sent = 0
        for interface, sock in self._sockets:
            try:
                packet = data(sock.getsockname()[1]) if callable(data) else data
                if interface.address not in self._broadcasting:
                    try:
                        sock.sendto(packet, (group, self._network.port))
                        sent += 1
                        continue
                    except OSError as exc:
                        if exc.errno not in _NO_MULTICAST:
                            raise
                        self._broadcast_on(interface, f"multicast failed: {exc.strerror}")
                sock.sendto(packet, (interface.broadcast or LIMITED_BROADCAST, self._network.port))
                sent += 1
            except OSError as exc:  # the interface went away, say: the next send tries again
                self._logger.debug("could not send a discovery packet on %s: %s", interface.name, exc)
        return sent

    def close(self) -> None:
        for _, sock in self._sockets:
            sock.close()


def _ipv4(text: str) -> ipaddress.IPv4Address:
    try:
        return ipaddress.IPv4Address(text)
    except (ipaddress.AddressValueError, ValueError, TypeError):
        raise ValueError(f"not an IPv4 address: {text!r:.60}") from None


