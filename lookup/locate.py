"""Finding a lookup service: :func:`locate` and the fixed address it is served at.

A lookup service started by ``python -m lookup serve`` is registered with its
Pyro5 daemon under the fixed object id :data:`LOOKUP_OBJECT_ID`, so knowing
its host and port is enough to reach it: its URI is
``PYRO:lookup.LookupService@host:port``. There is no discovery protocol
(Jini's multicast announcements); the well-known port plays that part.
"""

from __future__ import annotations

import logging

import Pyro5.api
import Pyro5.errors

from landlord.serving import uri_host

__all__ = [
    "locate", "lookup_uri", "LookupServiceNotFoundError",
    "LOOKUP_OBJECT_ID", "DEFAULT_HOST", "DEFAULT_PORT", "DEFAULT_TIMEOUT", "LOOKUP_METHODS",
]

log = logging.getLogger(__name__)

LOOKUP_OBJECT_ID = "lookup.LookupService"  # fixed, so the URI follows from host and port
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 4160       # Jini's lookup port
DEFAULT_TIMEOUT = 10.0    # seconds, to connect and then for every call

# what an object must answer to count as a lookup service
LOOKUP_METHODS = frozenset({"register", "lookup", "lookup_all", "notify", "renew", "cancel"})


class LookupServiceNotFoundError(Pyro5.errors.CommunicationError):
    """Nothing answers at that address, or what answers is not a lookup service.

    A :class:`Pyro5.errors.CommunicationError`, so code that already handles
    an unreachable peer handles this too.
    """


def lookup_uri(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> str:
    """The URI of the lookup service served at ``host:port``.

    Raises:
        TypeError: ``port`` is not an int.
        ValueError: ``port`` is out of range, or ``host`` is empty.
    """
    _check_address(host, port)
    return f"PYRO:{LOOKUP_OBJECT_ID}@{uri_host(host)}:{port}"


def locate(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *,
           timeout: float | None = DEFAULT_TIMEOUT) -> Pyro5.api.Proxy:
    """A bound proxy of the lookup service at ``host:port``.

    The proxy belongs to the calling thread, as every Pyro5 proxy does (hand
    it to another thread with ``_pyroClaimOwnership()``); close it with
    ``_pyroRelease()`` or a ``with`` block.

    Args:
        host: the lookup service's host name or address.
        port: its port.
        timeout: seconds to wait for the connection and, after that, for each
            call made through the proxy; ``None`` waits forever.

    Raises:
        LookupServiceNotFoundError: nothing answers there in time, or what
            answers is not a lookup service.
        TypeError, ValueError: a malformed address or timeout.
    """
    uri = lookup_uri(host, port)
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}")
    proxy = Pyro5.api.Proxy(uri)
    proxy._pyroTimeout = timeout
    try:
        proxy._pyroBind()  # connects and fetches the metadata: the object's exposed methods
    except Pyro5.errors.CommunicationError as exc:
        proxy._pyroRelease()
        raise LookupServiceNotFoundError(f"no lookup service answers at {host}:{port}: {exc}") from exc
    missing = LOOKUP_METHODS - set(proxy._pyroMethods)
    if missing:
        proxy._pyroRelease()
        raise LookupServiceNotFoundError(f"the object at {uri} is not a lookup service "
                                         f"(it lacks {', '.join(sorted(missing))})")
    log.debug("located the lookup service at %s", uri)
    return proxy


def _check_address(host: object, port: object) -> None:
    if not isinstance(host, str) or not host:
        raise ValueError(f"host must be a non-empty str, got {host!r:.80}")
    if isinstance(port, bool) or not isinstance(port, int):
        raise TypeError(f"port must be an int, got {type(port).__name__}")
    if not 0 < port < 65536:
        raise ValueError(f"port must be 1 to 65535, got {port}")
