"""One Pyro5 proxy per (thread, URI), shared by everything in that thread that calls that URI.

Pyro5 proxies belong to the thread that made them, and a connection per lease
would not scale, so each thread keeps its own small cache keyed by URI. Leases
reach their landlords through it, and the lookup service its event listeners.
Every proxy gets a call timeout: Pyro5's default is none, and a peer that
hangs must not hang its callers forever.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import Pyro5.api

__all__ = ["proxy_for", "discard", "set_call_timeout", "get_call_timeout"]

log = logging.getLogger(__name__)

_local = threading.local()
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


def _cache() -> dict[str, Any]:
    try:
        return _local.proxies  # type: ignore[no-any-return]
    except AttributeError:
        _local.proxies = {}
        return _local.proxies  # type: ignore[no-any-return]


def proxy_for(uri: str) -> Any:
    """This thread's proxy for the object at ``uri``, made on first use."""
    cache = _cache()
    proxy = cache.get(uri)
    if proxy is None:
        proxy = cache[uri] = Pyro5.api.Proxy(uri)
    if proxy._pyroTimeout != _call_timeout:  # new, or the timeout was changed since
        proxy._pyroTimeout = _call_timeout
    return proxy


def discard(uri: str) -> None:
    """Forget this thread's proxy for ``uri`` (after a communication error), closing it."""
    proxy = _cache().pop(uri, None)
    if proxy is not None:
        try:
            proxy._pyroRelease()
        except Exception:  # a broken connection may fail to close; it is dropped either way
            log.debug("closing proxy for %s failed", uri, exc_info=True)
