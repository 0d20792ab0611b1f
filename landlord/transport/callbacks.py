"""One rule for the URIs a server is asked to call back: :func:`check_callback_uri`.

A landlord calls a holder's revocation listener (:meth:`landlord.Landlord.listen`),
a renewal service its clients' listeners, a lookup service its event
listeners (``notify``). Each is a URI a stranger hands the server, which the
server then connects to, so each is held to the same rule: a ``PYRO:`` URI
naming a host and a port, nothing else. ``PYRONAME:`` would make the server
ask a name server (which one it finds is the server's business, not the
caller's), ``PYROMETA:`` likewise, and a Unix socket path would make it
connect to a socket of its own host. A server may also be given the hosts
callbacks may name (``allowed_hosts``): then a URI naming any other host is
refused, so that callers cannot point the server at third parties.
"""

from __future__ import annotations

from collections.abc import Iterable

import Pyro5.core

__all__ = ["check_callback_uri", "check_callback_hosts", "check_hosts", "parse_pyro_uri", "host_key",
           "MAX_CALLBACK_URI"]

MAX_CALLBACK_URI = 512  # characters


def check_callback_uri(uri: object, *, allowed_hosts: frozenset[str] | None = None) -> str:
    """``uri`` if a server may call it back: a ``PYRO:`` URI with a host and a port.

    Args:
        uri: what a caller gave (a str, as it crossed the wire).
        allowed_hosts: the hosts a callback may name (as :func:`check_callback_hosts`
            makes them: lower case, no brackets); ``None``: any host.

    Raises:
        TypeError: ``uri`` is not a str.
        ValueError: longer than ``MAX_CALLBACK_URI``, not a Pyro5 URI, not ``PYRO:``,
            without a host and port (a Unix socket), or naming a host not allowed.
    """
    if not isinstance(uri, str):
        raise TypeError(f"a callback must be a PYRO: URI str, got {type(uri).__name__}")
    parsed = parse_pyro_uri(uri, "a callback", max_length=MAX_CALLBACK_URI)
    if not parsed.host or not parsed.port:
        raise ValueError(f"a callback URI must name a host and a port, got {uri!r:.80}")
    if allowed_hosts is not None and host_key(parsed.host) not in allowed_hosts:
        raise ValueError(f"callbacks to {parsed.host!r:.80} are not allowed here")
    return uri


def parse_pyro_uri(uri: str, what: str, *, max_length: int) -> Pyro5.core.URI:
    """``uri`` parsed, if it is a ``PYRO:`` URI of at most ``max_length`` characters: the part of the rule
    every URI a server is handed to call is held to (a callback's, a renewal service's landlord's).

    Args:
        uri: the URI, a str.
        what: what it is, as an error names it (``"a callback"``).
        max_length: the most characters it may have.

    Raises:
        ValueError: too long, malformed, or not ``PYRO:`` (``PYRONAME:``, ``PYROMETA:``).
    """
    if len(uri) > max_length:
        raise ValueError(f"{what} URI must be at most {max_length} characters, got {len(uri)}")
    try:
        parsed = Pyro5.core.URI(uri)
    except Exception:  # Pyro5 raises PyroError, TypeError, ValueError...
        raise ValueError(f"{what} must be a PYRO: URI, got {uri!r:.80}") from None
    if parsed.protocol != "PYRO":
        raise ValueError(f"{what} must be a PYRO: URI (no name server lookups), got {uri!r:.80}")
    return parsed


def check_callback_hosts(hosts: Iterable[str] | None) -> frozenset[str] | None:
    """The allow-list ``check_callback_uri`` takes, from host names or addresses (``None``: any host).

    Raises:
        TypeError: ``hosts`` is a str (give a list) or holds something else than str.
        ValueError: an empty host name.
    """
    return check_hosts(hosts, "callback")


def check_hosts(hosts: Iterable[str] | None, what: str) -> frozenset[str] | None:
    """An allow-list of hosts, as a URI's host is compared with them (:func:`host_key`); ``None``: any host.

    Args:
        hosts: host names or addresses.
        what: whose hosts they are, as an error names them (``"callback"``, ``"landlord"``).

    Raises:
        TypeError: ``hosts`` is a str (give a list) or holds something else than str.
        ValueError: an empty host name.
    """
    if hosts is None:
        return None
    if isinstance(hosts, str):
        raise TypeError(f"{what} hosts must be a list of host names or addresses, not one str")
    allowed = set()
    for host in hosts:
        if not isinstance(host, str):
            raise TypeError(f"a {what} host must be a str, got {type(host).__name__}")
        if not host_key(host):
            raise ValueError(f"a {what} host must not be empty")
        allowed.add(host_key(host))
    return frozenset(allowed)


def host_key(host: str) -> str:
    """A host as compared: lower case (DNS names are), IPv6 brackets off."""
    return host.strip().strip("[]").lower()
