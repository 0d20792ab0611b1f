"""The end of leases: :class:`Endings` frees the resources of ended leases, then forgets their rows.

*Free first, forget after* (see :class:`~landlord.grantor.manager.LeaseManager`):
each resource of each ended lease goes to ``on_expire``, or to ``on_cancel`` for a
lease cancelled while live, and only once the callbacks have returned are the
leases' rows deleted from the store, so a crash in between frees them again
after a restart (at least once). A lease restored as cancelled is freed through
``on_cancel`` however it is found ended. A callback with a parameter named
``cookie`` is given the lease's cookie too (:class:`FreeWithCookie`).

A test can have the process kill itself before the callbacks, between them and
the delete, or after it (:mod:`landlord.grantor.killpoints`, armed by an
environment variable; unarmed, each call pays three tests of a global).

Split out of :mod:`landlord.grantor.manager`, which calls it outside its lock;
it logs on ``landlord.manager``, as before.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any, Protocol, TypeAlias

from .killpoints import ARMED as _KILL_POINT
from .resource import LeasedResource

__all__ = ["Endings", "FreeCallback", "FreeWithCookie"]

log = logging.getLogger("landlord.manager")  # where these lines were logged before they moved here


class FreeWithCookie(Protocol):
    """An ``on_expire``/``on_cancel`` that takes the cookie too: ``callback(resource, cookie=...)``."""

    def __call__(self, resource: Any, /, *, cookie: str) -> None: ...


# A callback of the old form, callback(resource), or one with a parameter named cookie
FreeCallback: TypeAlias = Callable[[Any], None] | FreeWithCookie


class Endings:
    """Frees ended leases' resources through the callbacks, then deletes their rows (never under a lock).

    Args:
        on_expire: called for each resource of a lease that ended (see :class:`LeaseManager`).
        on_cancel: called instead for a lease cancelled while live; ``None``: ``on_expire``.
        forget: deletes the stored rows of ended leases (the manager's journal).
        store: where the rows are (named in the log when a delete fails), or ``None``.
    """

    __slots__ = ("_on_expire", "_on_cancel", "_forget", "_store", "restored_cancels", "intercept")

    def __init__(self, on_expire: FreeCallback | None, on_cancel: FreeCallback | None,
                 forget: Callable[[list[LeasedResource]], None], store: object) -> None:
        self._on_expire = _Freeing.of(on_expire, "on_expire")
        self._on_cancel = _Freeing.of(on_cancel, "on_cancel") if on_cancel is not None else self._on_expire
        self._forget = forget
        self._store = store
        self.restored_cancels: set[str] = set()  # restored as cancelled, not yet freed (through on_cancel)
        # Takes the ended leases (and whether they were cancelled) before the callbacks do, and returns
        # what they should free: a landlord's named leases end in its claims. None while it has none,
        # so that a landlord without them pays nothing per lease.
        self.intercept: Callable[[list[LeasedResource], bool], list[LeasedResource]] | None = None

    def end(self, resources: list[LeasedResource], *, cancelled: bool = False) -> None:
        """Free ``resources`` (through ``on_cancel`` if ``cancelled``, else ``on_expire``), then delete
        their rows. A failed delete is logged, not raised: the leases have ended all the same, and a
        restart frees them again (at least once)."""
        if _KILL_POINT is not None:  # a test's crash (landlord.grantor.killpoints); None outside tests
            _KILL_POINT.passing("before-free")
        freed = resources
        if self.restored_cancels and not cancelled:  # only after a restart found cancels not yet freed
            freed = self._free_restored_cancels(resources)
        self._free(freed, cancelled)
        if _KILL_POINT is not None:
            _KILL_POINT.passing("after-free")
        try:
            self._forget(resources)
        except Exception:
            log.exception("could not delete %d ended lease(s) from %r; they are freed again after a restart",
                          len(resources), self._store)
        if _KILL_POINT is not None:
            _KILL_POINT.passing("after-forget")

    def _free_restored_cancels(self, resources: list[LeasedResource]) -> list[LeasedResource]:
        """Free through ``on_cancel`` those of ``resources`` restored as cancelled; return the others."""
        cancels = self.restored_cancels
        others = [leased for leased in resources if leased.cookie not in cancels]
        if len(others) < len(resources):
            restored = [leased for leased in resources if leased.cookie in cancels]
            cancels.difference_update(leased.cookie for leased in restored)
            self._free(restored, True)
        return others

    def _free(self, ended: list[LeasedResource], cancelled: bool) -> None:
        if self.intercept is not None:
            ended = self.intercept(ended, cancelled)
        (self._on_cancel if cancelled else self._on_expire).free(ended)


class _Freeing:
    """An ``on_expire`` or ``on_cancel`` (or none), and how it is called: with the cookie or without,
    decided once (by its signature), not per call."""

    __slots__ = ("_callback", "_with_cookie", "_name")

    def __init__(self, callback: Callable[..., None] | None, with_cookie: bool, name: str) -> None:
        self._callback, self._with_cookie, self._name = callback, with_cookie, name

    @classmethod
    def of(cls, callback: FreeCallback | None, name: str) -> _Freeing:
        return cls(callback, callback is not None and _takes_cookie(callback), name)

    def free(self, ended: list[LeasedResource]) -> None:
        """Call the callback for each resource of each lease in ``ended``, logging what it raises."""
        callback = self._callback
        if callback is None:
            return
        if self._with_cookie:  # two loops: the one-argument form pays no test per resource
            for leased in ended:
                for resource in leased.everything():
                    try:
                        callback(resource, cookie=leased.cookie)
                    except Exception:
                        log.exception("%s failed for %r", self._name, leased)
            return
        for leased in ended:
            for resource in leased.everything():
                try:
                    callback(resource)
                except Exception:
                    log.exception("%s failed for %r", self._name, leased)


def _takes_cookie(callback: Callable[..., Any]) -> bool:
    """Whether ``callback`` has a parameter named ``cookie`` it can be given by keyword."""
    try:
        parameter = inspect.signature(callback).parameters.get("cookie")
    except (TypeError, ValueError):  # no signature to read (some builtins): the old, one-argument form
        return False
    return parameter is not None and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
