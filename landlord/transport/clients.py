"""Who a remote caller is, for counting what each client holds: :func:`client_of_call`, :func:`client_host`.

A server that bounds what one client may hold (connections, renewal sets,
registrations) must first say who a client is. Here it is the host a
connection comes from, as an attacker cannot easily multiply it: an IPv4
address (also when it comes mapped into IPv6), an IPv6 peer's whole ``/64``
network (one host may hold a /64 of addresses), loopback as itself. Peers on
a Unix socket have no address to tell them apart, so they are one client,
:data:`UNIX_SOCKET`; a call made in the server's own process is
:data:`IN_PROCESS`.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import Pyro5.callcontext

__all__ = ["client_of_call", "client_host", "client_of_address", "IN_PROCESS", "UNIX_SOCKET", "IPV6_CLIENT_PREFIX"]

IN_PROCESS = "in-process"  # the client a call made in the server's own process is counted as
UNIX_SOCKET = "unix-socket"  # the client every peer on a Unix socket is counted as
IPV6_CLIENT_PREFIX = 64  # an IPv6 peer is counted by its network of this prefix (a host may hold a /64)


def client_of_call() -> str:
    """Who makes the Pyro5 call being served on this thread (see the module docstring)."""
    return client_of_address(getattr(Pyro5.callcontext.current_context, "client_sock_addr", None))


def client_of_address(address: Any) -> str:
    """The client a peer at socket address ``address`` is counted as: :func:`client_host` of an IP
    peer's host, :data:`UNIX_SOCKET` for a Unix socket's peer (a str or bytes address), else
    :data:`IN_PROCESS` (no peer)."""
    if isinstance(address, tuple) and address and isinstance(address[0], str) and address[0]:
        return client_host(address[0])
    if isinstance(address, (str, bytes)):
        return UNIX_SOCKET
    return IN_PROCESS


def client_host(host: str) -> str:
    """The client a peer at ``host`` (an IP address, or a name, kept as it is) is counted as."""
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])  # without an IPv6 scope id
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        if not ip.is_loopback:
            return str(ipaddress.ip_network(f"{ip}/{IPV6_CLIENT_PREFIX}", strict=False))
    return str(ip)
