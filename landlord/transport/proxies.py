"""One Pyro5 proxy per (thread, URI), shared by everything in that thread that calls that URI.

Pyro5 proxies belong to the thread that made them, and a connection per lease
would not scale, so each thread keeps its own small cache keyed by URI. Leases
reach their landlords through it, and the lookup service its event listeners.
Every proxy gets a call timeout: Pyro5's default is none, and a peer that
hangs must not hang its callers forever. Every proxy speaks landlord's own
serializer (:data:`~landlord.transport.serializers.WIRE_SERIALIZER`, msgpack),
whatever ``Pyro5.config.SERIALIZER`` says. A caller with a deadline of its own
(a renewal that is useless once its lease has run out) bounds its calls
further with :func:`timeout_within`.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
from collections.abc import Iterator
from typing import Any

import Pyro5.api

from .serializers import WIRE_SERIALIZER
from .serializers import install as install_serializers

__all__ = ["wire_proxy", "proxy_for", "discard", "set_call_timeout", "get_call_timeout", "timeout_within",
           "current_timeout"]

log = logging.getLogger("landlord.proxies")  # its name before it moved into transport/


class _ThreadState(threading.local):
    """Per thread: its proxies by URI, and the tightest :func:`timeout_within` bound in force.

    Set when a thread first uses it, so that reading them costs no ``AttributeError`` (a
    ``getattr`` with a default on a name not set costs one: half a microsecond, every call).
    """

    def __init__(self) -> None:
        self.proxies: dict[str, Any] = {}
        self.bound = math.inf


_local = _ThreadState()
_call_timeout: float | None = 30.0


def set_call_timeout(seconds: float | None) -> None:
    """Set the timeout of remote lease calls made from now on (``None``: wait forever).

    Raises:
        ValueError: ``seconds`` is not a positive number or ``None``.
    """
    global _call_timeout
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
                                or not seconds > 0):
        raise ValueError(f"call timeout must be a positive number of seconds or None, got {seconds!r}")
    _call_timeout = seconds


def get_call_timeout() -> float | None:
    """The timeout of remote lease calls, in seconds (``None``: no timeout)."""
    return _call_timeout


@contextlib.contextmanager
def timeout_within(seconds: float) -> Iterator[None]:
    """Calls this thread makes through :func:`proxy_for` in the block time
    out after at most ``seconds`` (or the call timeout, if that is shorter).

    Connecting counts too, so a call into a partition gives up in time and
    the caller can try again on a fresh connection. Blocks nest: the
    tighter bound holds.

    Raises:
        ValueError: ``seconds`` is not a positive number.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise ValueError(f"a timeout bound must be a positive number of seconds, got {seconds!r}")
    outer = _local.bound
    _local.bound = min(outer, float(seconds))
    try:
        yield
    finally:
        _local.bound = outer


def current_timeout() -> float | None:
    """The timeout this thread's next call through :func:`proxy_for` gets: the
    call timeout, within the tightest :func:`timeout_within` bound in force
    (``None``: no timeout). A caller that makes several calls within one
    budget (a lease trying the replicas of its group) reads it once."""
    return _timeout()


def _timeout() -> float | None:
    """The timeout for this thread's next call: the call timeout, within its bound if any."""
    bound = _local.bound
    if bound == math.inf:
        return _call_timeout
    return bound if _call_timeout is None else min(bound, _call_timeout)


def _cache() -> dict[str, Any]:
    return _local.proxies


def wire_proxy(uri: Any) -> Any:
    """A new Pyro5 proxy for ``uri`` (a str or ``Pyro5.core.URI``) that speaks landlord's serializer.

    For a landlord's, a lookup service's or a renewal service's objects, all of
    which take it; a user's own service keeps Pyro5's configured serializer.
    """
    install_serializers()
    proxy = Pyro5.api.Proxy(uri)
    proxy._pyroSerializer = WIRE_SERIALIZER
    return proxy


def proxy_for(uri: str) -> Any:
    """This thread's proxy for the object at ``uri``, made on first use (speaking landlord's serializer)."""
    cache = _local.proxies
    proxy = cache.get(uri)
    if proxy is None:
        proxy = cache[uri] = wire_proxy(uri)
    timeout = _timeout()
    if proxy._pyroTimeout != timeout:  # new, or the timeout or its bound changed since
        proxy._pyroTimeout = timeout
    return proxy


def discard(uri: str) -> None:
    """Forget this thread's proxy for ``uri`` (after a communication error), closing it."""
    proxy = _cache().pop(uri, None)
    if proxy is not None:
        try:
            proxy._pyroRelease()
        except Exception:  # a broken connection may fail to close; it is dropped either way
            log.debug("closing proxy for %s failed", uri, exc_info=True)
