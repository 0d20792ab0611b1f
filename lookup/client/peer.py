"""Keeping at one lookup service on a thread of its own: :class:`PeerThread`.

Both :class:`~lookup.JoinManager` (keeping a registration) and
:class:`~lookup.LookupCache` (keeping a subscription) keep at several lookup
services at once, each on a thread of its own so that one that hangs delays
no other. What they share is written here once: the thread, which asks its
owner what to do next (under the owner's lock) and does it (without);
retrying at delays growing exponentially with jitter (:class:`landlord.Backoff`);
the outage logged once (:class:`landlord.OutageLog`, on the owner's logger);
the last error kept (the owner's :class:`landlord.PeerErrors`); and a fresh
connection after a communication failure.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from typing import Any

import Pyro5.client
import Pyro5.core

from landlord import (
    Backoff,
    Clock,
    NotLeaderError,
    OutageLog,
    PeerErrors,
    check_duration,
    discard_proxy,
    proxy_for,
)
from landlord.transport.verdicts import Verdict, classify

from ..discovery.unicast import LookupGroup
from ..item import uri_of

__all__ = ["PeerThread", "Plan", "check_retry", "locator_key", "lookup_keys", "leader_proxy", "discard_locator"]

GROUP_SEPARATOR = ","  # a replicated lookup service is known by its replicas' URIs, joined by this

# No logger of its own: a peer logs on its owner's (lookup.join, lookup.cache), where users look.

Plan = Callable[[float], Callable[[], object] | float]
"""Asked with the owner's condition held and the clock's current reading:
what to do now (a callable, run without the lock), or else until when to
wait (``math.inf``: until notified)."""


def check_retry(initial: object, maximum: object) -> tuple[float, float]:
    """``retry_initial`` and ``retry_max`` as floats, checked.

    Raises:
        ValueError: either is not a positive number of seconds, ``initial``
            is above ``maximum``, or ``maximum`` is ``FOREVER``.
    """
    first = check_duration(initial, name="retry_initial", allow_any=False)
    cap = check_duration(maximum, name="retry_max", allow_any=False)
    if not 0 < first <= cap < math.inf:
        raise ValueError("need 0 < retry_initial <= retry_max < FOREVER")
    return first, cap


class PeerThread:
    """One lookup service kept at by a thread of its own, and its retry bookkeeping.

    The thread loops until :meth:`stop`: under ``condition`` it asks the
    owner's plan what to do now, waits on the clock until the time the plan
    names (or until notified), and runs what the plan hands it without the
    lock. An exception escaping that is a bug: it is logged, not swallowed
    quietly. :attr:`due` is when the owner wants its next attempt; the
    methods below keep it, the errors and the outage log in step.

    Args:
        uri: the lookup service's URI.
        condition: the owner's condition, guarding :attr:`due`, the
            owner's state and ``errors``; notified on every change here.
        clock: what delays are timed on.
        backoff: the delays between failed attempts (used by this thread only).
        errors: the owner's record of errors, shared by all its peers.
        logger: the owner's logger: outages are logged there.
        name: the owner's name, for the thread's name and the bug report.
    """

    def __init__(self, uri: str, *, condition: threading.Condition, clock: Clock, backoff: Backoff,
                 errors: PeerErrors, logger: logging.Logger, name: str) -> None:
        self.uri = uri
        self.due = clock.monotonic()  # the first attempt: at once
        self._condition = condition
        self._clock = clock
        self._backoff = backoff
        self._errors = errors
        self._logger = logger
        self._name = name
        self._outage = OutageLog(logger, uri)
        self._stopped = False
        self._thread: threading.Thread | None = None

    def start(self, plan: Plan, job: str) -> None:
        """Start the thread, following ``plan``; ``job`` (``"following"``) names it in a bug report."""
        self._thread = threading.Thread(target=self._run, args=(plan, job), name=f"{self._name} {self.uri}",
                                        daemon=True)
        self._thread.start()

    def _run(self, plan: Plan, job: str) -> None:
        try:
            while True:
                with self._condition:
                    while True:
                        if self._stopped:
                            return
                        step = plan(self._clock.monotonic())
                        if callable(step):
                            break
                        self._clock.wait(self._condition, step)
                step()
        except Exception:  # a bug: say so, rather than let the lookup service go quietly unkept
            self._logger.exception("%s stopped %s %s", self._name, job, self.uri)

    # -- with the owner's condition held -----------------------------------------------------------

    @property
    def stopped(self) -> bool:
        return self._stopped

    def stop(self) -> None:
        """Have the thread end (the owner then notifies, and :meth:`join`\\ s it without the lock)."""
        self._stopped = True

    def retry_now(self, error: BaseException | None = None) -> None:
        """What was kept there is gone (``error``, if any, says why): try again at once."""
        if error is not None:
            self._errors.failed(self.uri, error)
        self.due = self._clock.monotonic()  # it may be back already
        self._condition.notify_all()

    def retry_later(self, error: BaseException) -> None:
        """An attempt failed with ``error``: try again after the next delay (on this peer's thread only)."""
        self._errors.failed(self.uri, error)
        self.due = self._clock.monotonic() + self._backoff.next_delay()
        self._condition.notify_all()

    def reached(self) -> None:
        """An attempt succeeded: the peer's error no longer stands."""
        self._errors.reached(self.uri)

    # -- without it ----------------------------------------------------------------------------

    def failed(self, error: BaseException, doing: str) -> None:
        """Log a failed attempt (WARNING once per outage, then DEBUG); ``doing``: ``"subscribe to"``."""
        if classify(error) is Verdict.RETRY:
            discard_locator(self.uri)  # the next attempt goes out on a fresh connection
        self._outage.failed(error, doing)

    def recovered(self) -> bool:
        """After a success (on this peer's thread): delays start over; return whether an outage ended (logged)."""
        self._backoff.reset()
        return self._outage.recovered()

    def lost(self, error: BaseException | None, what: str, again: str) -> None:
        """Log the loss of what was kept there (``what``: ``"the registration with"``), and why.

        Unreachable for a whole lease term is an outage (see :meth:`failed`);
        anything else is said once at INFO, with ``again`` (``"registering"``).
        """
        if error is not None and classify(error) is Verdict.RETRY:
            self._outage.failed(error, f"renew {what}")
        else:
            self._logger.info("lost %s %s (%s); %s again", what, self.uri, error, again)

    def join(self) -> None:
        """Wait for the thread to end (unless called on it: an owner's listener may close its owner)."""
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()


# -- a lookup service, or a replicated one, by one key ----------------------------------------------------


def locator_key(locator: Any) -> str:
    """What a JoinManager or LookupCache knows a lookup service by: its URI, or for a
    :class:`~lookup.discovery.unicast.LookupGroup` (a replicated lookup service) its replicas' URIs joined by commas.

    Raises:
        TypeError, ValueError: not a proxy, URI or LookupGroup (see :func:`lookup.item.uri_of`).
    """
    if isinstance(locator, LookupGroup):
        return GROUP_SEPARATOR.join(locator.uris)
    return uri_of(locator)


def lookup_keys(lookups: Any, *, allow_none: bool = False) -> list[str]:
    """The keys (:func:`locator_key`) of one lookup service or several, in order, each once: what a
    JoinManager's and a LookupCache's ``lookups`` (and their ``add_lookups``, ``remove_lookups``) take.

    Raises:
        TypeError: one that is not a proxy, URI or LookupGroup, or ``lookups`` neither one nor several.
        ValueError: none given, unless ``allow_none``.
    """
    if isinstance(lookups, (str, Pyro5.core.URI, Pyro5.client.Proxy, LookupGroup)):
        given = [lookups]
    else:
        try:
            given = list(lookups)
        except TypeError:
            raise TypeError(f"lookups must be a lookup service's proxy or URI, or a list of them, "
                            f"got {type(lookups).__name__}") from None
    if not given and not allow_none:
        raise ValueError("give at least one lookup service (or discovery groups)")
    keys: dict[str, None] = {}
    for lookup in given:
        try:
            keys[locator_key(lookup)] = None
        except (TypeError, ValueError) as exc:
            raise TypeError(f"a lookup service is a proxy or URI, or a LookupGroup, got {lookup!r:.80}") from exc
    return list(keys)


def leader_proxy(key: str) -> Any:
    """This thread's proxy for the lookup service known by ``key``: for a replicated one, for the
    replica that leads it now (asked of the group), so that calls made one after another on it
    (subscribe, then list) reach the same replica.

    Raises:
        Pyro5.errors.CommunicationError: no replica of the group answered.
        NotLeaderError: the replica that answered knows no leader (an election under way).
    """
    if GROUP_SEPARATOR not in key:
        return proxy_for(key)
    leader = LookupGroup(key.split(GROUP_SEPARATOR), timeout=None).leader()
    if leader is None:
        raise NotLeaderError("the replicated lookup service has no leader now", None)
    return proxy_for(leader)


def discard_locator(key: str) -> None:
    """Drop this thread's proxies for the lookup service known by ``key`` (each replica's, for a group)."""
    for uri in key.split(GROUP_SEPARATOR):
        discard_proxy(uri)
