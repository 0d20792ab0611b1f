"""Finding a lookup service: :func:`locate` and the fixed address it is served at.

A lookup service started by ``python -m lookup serve`` is registered with its
Pyro5 daemon under the fixed object id :data:`LOOKUP_OBJECT_ID`, so knowing
its host and port is enough to reach it: its URI is
``PYRO:lookup.LookupService@host:port``. Without an address, find lookup
services by group with :mod:`lookup.discovery.multicast` (Jini's multicast
announcements and requests, UDP port 4160).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import Pyro5.api
import Pyro5.errors

from landlord import call_group, replica_uris, timeout_within, wire_proxy
from landlord.transport.addresses import uri_host

__all__ = [
    "locate", "lookup_uri", "LookupGroup", "LookupServiceNotFoundError",
    "LOOKUP_OBJECT_ID", "DEFAULT_HOST", "DEFAULT_PORT", "DEFAULT_TIMEOUT", "LOOKUP_METHODS",
]

log = logging.getLogger("lookup.locate")  # its name before it moved; logs and tests know it by it

LOOKUP_OBJECT_ID = "lookup.LookupService"  #: fixed, so the URI follows from host and port
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 4160       # Jini's lookup port
DEFAULT_TIMEOUT = 10.0    # seconds, to connect and then for every call
LEADER_POLL = 0.05        # seconds between asking a replicated lookup service's replicas for a leader

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


def locate(host: str | Sequence[str | tuple[str, int]] = DEFAULT_HOST, port: int = DEFAULT_PORT, *,
           timeout: float | None = DEFAULT_TIMEOUT) -> Any:
    """A bound proxy of the lookup service at ``host:port``; or, given every replica's address of a
    replicated lookup service (``"h1:p1,h2:p2,h3:p3"``, or a list of ``"host:port"`` or ``(host,
    port)``), a :class:`LookupGroup` of them, once one of them names a leader.

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
            answers is not a lookup service (of a group: no replica answers, or none
            names a leader, within ``timeout``).
        TypeError, ValueError: a malformed address or timeout.
    """
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}")
    if not isinstance(host, str) or "," in host:
        return _with_a_leader(LookupGroup(replica_uris(host, object_id=LOOKUP_OBJECT_ID), timeout=timeout))
    uri = lookup_uri(host, port)
    proxy = wire_proxy(uri)
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


class LookupGroup:
    """The replicas of a replicated lookup service, as one: any of the lookup service's methods,
    called on it, goes to the replica that leads (following a ``NotLeaderError`` naming it), or
    to the next replica when one cannot be reached (see :func:`landlord.call_group`).

    Unlike a Pyro5 proxy it may be used from any thread. A ``with`` block is allowed (it closes
    nothing: each thread's connections are kept for its next call).

    Args:
        uris: every replica's URI.
        timeout: seconds each call may take in all, whatever replicas it tries (``None``: the
            process's call timeout, :func:`landlord.set_call_timeout`).
    """

    __slots__ = ("uris", "timeout")

    def __init__(self, uris: Sequence[str], *, timeout: float | None = DEFAULT_TIMEOUT) -> None:
        self.uris = tuple(uris)
        self.timeout = timeout

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method.startswith("_"):  # Pyro5's own attributes, copy's and pickle's probes: not remote calls
            raise AttributeError(method)

        def call(*args: Any) -> Any:
            with timeout_within(self.timeout) if self.timeout is not None else contextlib.nullcontext():
                return call_group(self.uris, method, *args)
        return call

    def leader(self) -> str | None:
        """The URI of the replica that leads, as the replica asked names it (``None``: it names none).

        Raises:
            Pyro5.errors.CommunicationError: no replica answered.
        """
        status = self.replica_status()  # any replica answers this, leading or not
        leader = status.get("leader") if isinstance(status, dict) else None
        return leader if leader in self.uris else None

    def __enter__(self) -> LookupGroup:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass

    def __repr__(self) -> str:
        return f"LookupGroup({', '.join(self.uris)})"


def _with_a_leader(group: LookupGroup) -> LookupGroup:
    """``group`` once a replica names a leader (it has just started, perhaps), within its timeout.

    Raises:
        LookupServiceNotFoundError: no replica answers, or none names a leader in time.
    """
    deadline = time.monotonic() + (group.timeout if group.timeout is not None else DEFAULT_TIMEOUT)
    while True:
        try:
            leader = group.leader()
        except Pyro5.errors.CommunicationError as exc:
            if time.monotonic() >= deadline:
                raise LookupServiceNotFoundError(f"no replica of {', '.join(group.uris)} answers: {exc}") from exc
        else:
            if leader is not None:
                return group
            if time.monotonic() >= deadline:
                raise LookupServiceNotFoundError(f"the replicas {', '.join(group.uris)} answer, but name no leader")
        time.sleep(LEADER_POLL)  # an election under way: ask again shortly


def _check_address(host: object, port: object) -> None:
    if not isinstance(host, str) or not host:
        raise ValueError(f"host must be a non-empty str, got {host!r:.80}")
    if isinstance(port, bool) or not isinstance(port, int):
        raise TypeError(f"port must be an int, got {type(port).__name__}")
    if not 0 < port < 65536:
        raise ValueError(f"port must be 1 to 65535, got {port}")
