"""How a recipe reaches its landlord: :class:`Target`, one of three kinds.

- a :class:`~landlord.Landlord` (or any object with its methods) in this
  process: called directly, on its own clock, and told of grants directly;
- a ``PYRO:`` URI of a served landlord: called through this thread's proxy
  (a proxy belongs to its thread), dropped after a communication error; a
  call whose earlier connection is found closed (the landlord restarted) is
  made once more on a new one;
- a list or tuple of the URIs of a replica group: called on the group's
  leader, following it as a lease of the group does (:func:`~landlord.call_group`).
"""

from __future__ import annotations

from typing import Any

import Pyro5.errors

from ..clock import SYSTEM_CLOCK, Clock
from ..holder.landlordlease import call_group, check_landlords, uri_text
from ..transport import proxies

__all__ = ["Target"]


class Target:
    """A landlord as a recipe calls it (see the module's docstring).

    Args:
        landlord: a landlord object in this process, a ``PYRO:`` URI (str or ``Pyro5.core.URI``),
            or a list or tuple of a replica group's URIs.

    Raises:
        TypeError: none of the three.
        ValueError: a malformed URI, or a group :func:`~landlord.holder.landlordlease.check_landlords` refuses.
    """

    __slots__ = ("_object", "_uri", "_group")

    def __init__(self, landlord: Any) -> None:
        self._object: Any = None
        self._uri: str | None = None
        self._group: tuple[str, ...] | None = None
        landlord = uri_text(landlord)
        if isinstance(landlord, str):
            self._uri = landlord
        elif isinstance(landlord, (list, tuple)):
            self._group = check_landlords(list(landlord), name="landlord")
        elif callable(getattr(landlord, "acquire", None)) and callable(getattr(landlord, "cancel", None)):
            self._object = landlord
        else:
            raise TypeError(f"a landlord, its URI or its replicas' URIs, got {type(landlord).__name__}")

    @property
    def in_process(self) -> bool:
        """Whether the landlord is an object in this process (it is given listeners as objects)."""
        return self._object is not None

    @property
    def clock(self) -> Clock:
        """The clock its leases are timed on here: an in-process landlord's own, else the system's."""
        clock: Clock = getattr(self._object, "clock", SYSTEM_CLOCK) if self._object is not None else SYSTEM_CLOCK
        return clock

    def call(self, method: str, *args: Any) -> Any:
        """``method(*args)`` on the landlord (the group's leader).

        Raises:
            Pyro5.errors.CommunicationError: it could not be reached.
            Exception: what the landlord raised.
        """
        if self._object is not None:
            return getattr(self._object, method)(*args)
        if self._group is not None:
            return call_group(self._group, method, *args)
        assert self._uri is not None
        proxy = proxies.proxy_for(self._uri)
        reused = proxy._pyroConnection is not None
        try:
            return getattr(proxy, method)(*args)
        except Pyro5.errors.CommunicationError as exc:
            proxies.discard(self._uri)  # the next call reconnects
            if not reused or not isinstance(exc, Pyro5.errors.ConnectionClosedError):
                raise
        # A connection made before was found closed: the landlord restarted (or dropped an idle
        # connection), so once more on a new one. Never unsafe: at worst a landlord that died while
        # answering keeps the first request's lease, unrenewed, until its term ends.
        try:
            return getattr(proxies.proxy_for(self._uri), method)(*args)
        except Pyro5.errors.CommunicationError:
            proxies.discard(self._uri)
            raise

    def __repr__(self) -> str:
        where = self._uri or (",".join(self._group) if self._group else repr(self._object))
        return f"Target({where:.80})"
