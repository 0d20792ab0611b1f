"""This host's addresses, and the ones a server may put in its URIs: :func:`advertised_host`, :func:`own_address`.

A server listens on ``host`` and puts ``advertise`` in every URI it hands
out. Listening on every interface (:data:`WILDCARD_HOSTS`) without an
``advertise`` advertises this host's own address (:func:`own_address`), never
the wildcard, which no other host can connect to; :func:`check_advertise`
says what an address to advertise may be, :func:`check_host` what a host to
listen on or connect to may be. Clients use :func:`uri_host` to
write a host into a URI. Split out of :mod:`landlord.serving` so that a
client reads an address without loading the server.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import re
import socket
import struct
from collections.abc import Iterator

try:  # not on Windows: used to list the interfaces' addresses
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = ["WILDCARD_HOSTS", "advertised_host", "check_advertise", "check_host", "is_loopback", "own_address",
           "uri_host"]

# logged as before the split: operators' filters name landlord.serving
log = logging.getLogger("landlord.serving")

# Hosts that mean "listen on every interface": no URI may carry them
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})

# Documentation addresses (RFC 5737, RFC 3849): a UDP connect towards one only
# looks up the route, so the socket's local address is this host's address on
# its default route. No packet is sent.
_ROUTE_PROBES = {socket.AF_INET: "192.0.2.1", socket.AF_INET6: "2001:db8::1"}
_SIOCGIFADDR = 0x8915  # Linux: an interface's IPv4 address
_HOST_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\Z")  # "_": Docker's names have it
_MAX_HOST_NAME = 253


def check_advertise(advertise: str) -> str:
    """``advertise`` checked as an address to put in URIs: a host name or an IP address.

    An IPv6 address may come in brackets (``[fd00::2]``); it is returned bare.
    A name is not resolved here: it must resolve where the URI is used.

    Args:
        advertise: a host name (``h1.example.org``) or an IPv4 or IPv6 address.

    Raises:
        TypeError: ``advertise`` is not a str.
        ValueError: it is empty, has spaces, a port, a scheme, ``@`` or ``/``,
            is the wildcard address (``0.0.0.0``, ``::``), or is no valid host
            name or address; the message says which.
    """
    if not isinstance(advertise, str):
        raise TypeError(f"advertise must be a str (a host name or IP address), got {type(advertise).__name__}")
    reason = _not_an_address(advertise)
    if reason is not None:
        raise ValueError(f"cannot advertise {advertise!r:.80}: {reason}")
    bare = advertise[1:-1] if advertise.startswith("[") else advertise
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        return advertise


def check_host(host: str) -> str:
    """``host`` checked as a host to listen on or connect to: a host name or an IP address,
    the wildcard (``0.0.0.0``, ``::``: every interface) included. An IPv6 address may come in
    brackets; it is returned bare. A name is not resolved here.

    Args:
        host: a host name or an IPv4 or IPv6 address.

    Raises:
        TypeError: ``host`` is not a str.
        ValueError: it is empty, has spaces, a port, a scheme, ``@`` or ``/``, or is no valid
            host name or address; the message says which.
    """
    if not isinstance(host, str):
        raise TypeError(f"a host is a str (a host name or IP address), got {type(host).__name__}")
    reason = _not_an_address(host, wildcard=True)
    if reason is not None:
        raise ValueError(f"not a host: {host!r:.80}: {reason}")
    return host[1:-1] if host.startswith("[") else host


def _not_an_address(text: str, *, wildcard: bool = False) -> str | None:
    """Why ``text`` is not a host name or IP address (nor the wildcard, unless ``wildcard``), or
    ``None`` if it is one."""
    if not text:
        return "it is empty; give a host name or IP address"
    if any(char.isspace() for char in text):
        return "a host name or address has no spaces"
    if "://" in text or text.upper().startswith("PYRO:") or "@" in text or "/" in text:
        return "give just the host name or address, not a URI"
    bracketed = text.startswith("[") and text.endswith("]")
    try:
        address = ipaddress.ip_address(text[1:-1] if bracketed else text)
    except ValueError:
        address = None
    if address is not None:
        if address.is_unspecified and not wildcard:
            return "that is the wildcard address, which no other host can connect to: listen on it, " \
                   "but advertise an address others reach this host by"
        return None
    if re.fullmatch(r".*:\d+", text):
        return "give the address without a port"
    if bracketed:
        return "brackets hold only an IPv6 address, and this is none"
    if ":" in text:
        return "':' belongs only in an IPv6 address, and this is none"
    name = text[:-1] if text.endswith(".") else text  # a fully qualified name may end in a dot
    labels = name.split(".")
    if len(name) > _MAX_HOST_NAME or not all(_HOST_LABEL.match(label) for label in labels):
        return "not a host name (letters, digits and '-', in dot-separated labels of at most 63) " \
               "nor an IP address"
    if text.isdigit():
        return "a number is no host (a port? give the host name or address alone)"
    if labels[-1].isdigit():
        return "not a valid IPv4 address (and a host name does not end in a number)"
    return None


def own_address(*, ipv6: bool = False) -> str:
    """An address of this host that other hosts can connect to: what a
    server listening on all interfaces advertises.

    Tried in turn, the first that is not loopback, link-local or the wildcard
    and that this host can bind (so it is really one of its own): the local
    address of a UDP socket connected towards a routable address (the default
    route's interface; no packet is sent), the addresses this host's name
    resolves to, the addresses of its interfaces (Linux). Loopback only if
    there is nothing else, with a warning.

    Args:
        ipv6: for a server on ``::``: prefer an IPv6 address, then IPv4
            (such a socket takes both, unless made IPv6-only); else IPv4 only.
    """
    families = (socket.AF_INET6, socket.AF_INET) if ipv6 else (socket.AF_INET,)
    for family in families:
        for candidate in _candidate_addresses(family):
            if _is_own_reachable(candidate, family):
                return candidate
    loopback = "::1" if ipv6 else "127.0.0.1"
    log.warning("this host has no address but loopback: advertising %s, which other hosts cannot reach "
                "(give an address to advertise)", loopback)
    return loopback


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine alone: ``localhost`` (any case) or a loopback address, an
    IPv6 one in brackets or not (a wildcard or any other name is not, and names are not resolved)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def uri_host(host: str) -> str:
    """``host`` as it stands in a Pyro5 URI: an IPv6 address in brackets (once), anything else as it is."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def advertised_host(host: str, advertise: str | None = None) -> str:
    """The host to put in the URIs of a server that listens on ``host``.

    ``advertise`` if given (checked); else, for ``host`` on all interfaces
    (:data:`WILDCARD_HOSTS`), this host's own address (:func:`own_address`),
    never the wildcard; else ``host`` itself. IPv6 addresses come bare (no brackets).

    Args:
        host: the address the server listens on.
        advertise: the address others should use, or ``None``.

    Raises:
        TypeError, ValueError: ``advertise`` is not a host name or IP address
            (see :func:`check_advertise`).
    """
    if advertise is not None:
        return check_advertise(advertise)
    if host in WILDCARD_HOSTS:
        return own_address(ipv6=host == "::")
    return host


def _candidate_addresses(family: socket.AddressFamily) -> Iterator[str]:
    """This host's addresses of ``family``, likeliest first (see :func:`own_address`); may repeat or
    include unusable ones (the caller checks)."""
    with contextlib.suppress(OSError):
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect((_ROUTE_PROBES[family], 9))
            yield str(probe.getsockname()[0])
    with contextlib.suppress(OSError):  # socket.gaierror is one
        for *_, sockaddr in socket.getaddrinfo(socket.gethostname(), None, family, socket.SOCK_DGRAM):
            yield str(sockaddr[0])
    yield from _interface_addresses(family)


def _interface_addresses(family: socket.AddressFamily) -> list[str]:
    """The addresses of this host's interfaces, where Linux tells them (a network namespace without a
    default route has no other way to find its own)."""
    found: list[str] = []
    if family == socket.AF_INET6:
        with contextlib.suppress(OSError, ValueError):
            with open("/proc/net/if_inet6", encoding="ascii") as table:
                for line in table:  # address in hex, index, prefix length, scope, flags, name
                    fields = line.split()
                    if len(fields) >= 4 and fields[3] == "00":  # global scope
                        found.append(str(ipaddress.IPv6Address(bytes.fromhex(fields[0]))))
        return found
    if fcntl is None or not hasattr(socket, "if_nameindex"):  # pragma: no cover
        return found
    with contextlib.suppress(OSError):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            for _, name in socket.if_nameindex():
                with contextlib.suppress(OSError):  # no IPv4 address on it, or not Linux
                    answer = fcntl.ioctl(sock.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
                    found.append(socket.inet_ntoa(answer[20:24]))
    return found


def _is_own_reachable(candidate: str, family: socket.AddressFamily) -> bool:
    """Whether ``candidate`` is an address of this host that another host could connect to."""
    try:
        address = ipaddress.ip_address(candidate.split("%", 1)[0])
    except ValueError:
        return False
    if (address.version == 6) != (family == socket.AF_INET6):
        return False
    if address.is_loopback or address.is_unspecified or address.is_link_local or address.is_multicast:
        return False
    try:  # only an address of this host (of this network namespace) can be bound
        with socket.socket(family, socket.SOCK_DGRAM) as sock:
            sock.bind((candidate, 0))
    except OSError:
        return False
    return True
