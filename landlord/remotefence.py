"""A fence other processes call: :class:`RemoteFence`, a :class:`~landlord.Fence` served over Pyro5 (issue 25).

:class:`~landlord.Fence` is in-process. Where the resource lives in one
process and its writers in others, serve the resource's fence beside it::

    fence = landlord.RemoteFence(landlord.Fence(highest=stored))   # stored: what the resource kept
    landlord.serving.serve_object(fence, "0.0.0.0", 4180, object_id="fence.orders")   # the guarded server

    # a writer, anywhere (``import landlord`` lets the error cross as itself):
    Pyro5.api.Proxy("PYRO:fence.orders@host:4180").check(lock.token)   # or StaleTokenError

What a remote check guards, and what it does not: it orders *checks*. A
writer checked at 10:00:00 and paused until 10:00:30 still writes, late, to
a resource that does not check again. So the check must be part of the
write: the resource's own process calls :meth:`RemoteFence.check` (or its
fence's :meth:`~landlord.Fence.guard`) inside the operation, under the
lock or in the transaction that writes, as ``examples/fenced_sqlite`` does
in one SQLite transaction; a remote check is then how that resource's
other writers, or its replicas, learn early that their token is stale.

**Hostile callers.** :meth:`RemoteFence.check` takes a token, an int of 0 to
:data:`~landlord.fence.MAX_TOKEN`, and nothing else: a bool, a float, a
string, a huge int or a container is refused with ``TypeError`` or
``ValueError``, counted as ``invalid``, and changes nothing; served on the
guarded server (:func:`landlord.serving.serve_object`), no caller holds up
another's check (``tests/hostile/test_fence_attacks.py``). What no fence can
tell is a token a holder was never granted: a caller that sends a high one
moves the fence as that holder would, and every real holder below it is
refused from then on. A fence is as safe as who may reach it: where
strangers can connect, serve it over two-way TLS (``serve_object(...,
tls=)``), so that only holders of your CA's certificates call it.

Counted (:meth:`RemoteFence.counts`, exposed by
:meth:`landlord.metrics.Metrics.count_fence`): checks accepted, refused as stale,
and calls that carried no token (``invalid``).

It imports the fence, the errors and Pyro5's ``expose``; ``import landlord``
does not load it (``landlord.RemoteFence`` does, on first use).
"""

from __future__ import annotations

import logging
import threading

import Pyro5.server

from .errors import StaleTokenError
from .fence import Fence

__all__ = ["RemoteFence"]

log = logging.getLogger("landlord.fence")


class RemoteFence:
    """A :class:`~landlord.Fence` as other processes call it, over Pyro5 (see the module's docstring). Thread-safe.

    Remote methods: :meth:`check`, :meth:`highest`. Local: :attr:`fence`, :meth:`counts`.

    Args:
        fence: the fence to serve (default: a new one, nothing accepted yet).

    Raises:
        TypeError: ``fence`` is not a :class:`~landlord.Fence`.
    """

    def __init__(self, fence: Fence | None = None) -> None:
        if fence is not None and not isinstance(fence, Fence):
            raise TypeError(f"fence must be a landlord.Fence, got {type(fence).__name__}")
        #: the fence served, for this process (others call :meth:`check` and :meth:`highest`)
        self.fence = fence if fence is not None else Fence()
        self._invalid = 0
        self._lock = threading.Lock()

    @Pyro5.server.expose
    def check(self, token: int) -> int:
        """Accept ``token`` if it is at least the highest the fence accepted, and make it the highest
        (:meth:`landlord.Fence.check`).

        Returns:
            ``token``.

        Raises:
            StaleTokenError: ``token`` is below the highest accepted (it crosses the wire as itself, with
                ``token`` and ``highest``); nothing changes.
            TypeError, ValueError: ``token`` is not an int of 0 to ``MAX_TOKEN``; nothing changes.
        """
        try:
            return self.fence.check(token)
        except StaleTokenError:
            raise
        except (TypeError, ValueError):
            with self._lock:
                self._invalid += 1
            raise

    @Pyro5.server.expose
    def highest(self) -> int | None:
        """The highest token the fence accepted, or ``None``."""
        return self.fence.highest

    def counts(self) -> dict[str, int]:
        """Checks accepted, refused as stale, and calls that carried no token:
        ``{"accepted": n, "refused": m, "invalid": k}``."""
        with self._lock:
            invalid = self._invalid
        return {**self.fence.counts(), "invalid": invalid}

    def __repr__(self) -> str:
        return f"RemoteFence(highest={self.fence.highest})"
