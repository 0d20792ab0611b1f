"""The lease a :class:`~landlord.Landlord` hands out: a cookie plus a way to reach its landlord."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import Pyro5.core
import Pyro5.errors

from . import proxies
from .clock import SYSTEM_CLOCK, Clock
from .errors import LeaseError
from .lease import AbstractLease, Lease, check_granted, sent_now

__all__ = ["LandlordLease"]

# Cookies are opaque, but a bound keeps forged ones from costing memory.
MAX_COOKIE_LENGTH = 256
# The most leases in one renew_all or cancel_all call: a landlord refuses more.
MAX_BATCH = 100_000
# The most a holder sends in one call; bigger batches are split. A 100,000-lease
# answer in which every renewal failed is 15.4 MiB of serpent, near a served
# landlord's 16 MiB MAX_MESSAGE_SIZE (landlord.serving); 10,000 keeps every
# answer under 2 MiB, and costs nothing measurable in calls per lease.
CALL_BATCH = 10_000


class LandlordLease(AbstractLease):
    """A serializable lease whose renewals and cancellation go to its landlord.

    It can be sent to any process (it travels as its cookie, its landlord's URI
    and the seconds it has left) and renewed there from any thread.

    Args:
        cookie: the landlord's secret name for the lease.
        landlord: the landlord's Pyro5 URI (``str`` or ``Pyro5.core.URI``), or
            for in-process use the landlord object itself.
        landlord_id: identifies the landlord; leases are equal when their
            landlord ids and cookies are.
        expiration: absolute wall-clock time the lease ends.
        clock: the holder's clock.
        term: the seconds last granted (:attr:`~landlord.Lease.term`);
            ``None``: the time left now.

    Raises:
        TypeError: a cookie, landlord id or landlord of the wrong type.
        ValueError: an empty or oversized cookie, a malformed URI, a bad expiration or term.
    """

    __slots__ = ("_cookie", "_landlord", "_landlord_id")

    def __init__(self, cookie: str, landlord: Any, landlord_id: str, expiration: float, *,
                 clock: Clock = SYSTEM_CLOCK, term: float | None = None) -> None:
        super().__init__(expiration, clock=clock, term=term)
        self._cookie = check_cookie(cookie)
        if not isinstance(landlord_id, str) or not landlord_id:
            raise TypeError(f"landlord_id must be a non-empty str, got {landlord_id!r:.50}")
        self._landlord_id = landlord_id
        if isinstance(landlord, Pyro5.core.URI):
            landlord = str(landlord)
        if isinstance(landlord, str):
            try:
                Pyro5.core.URI(landlord)
            except Exception as exc:
                raise ValueError(f"not a Pyro5 URI: {landlord!r:.80}") from exc
        elif not (callable(getattr(landlord, "renew", None)) and callable(getattr(landlord, "cancel", None))):
            raise TypeError(f"landlord must be a Pyro5 URI or a landlord object, got {type(landlord).__name__}")
        self._landlord = landlord

    @property
    def cookie(self) -> str:
        return self._cookie

    @property
    def landlord_id(self) -> str:
        return self._landlord_id

    @property
    def landlord(self) -> Any:
        """The landlord's URI as a ``str``, or the landlord object for an in-process lease."""
        return self._landlord

    @property
    def landlord_uri(self) -> str:
        """The URI other processes reach the landlord at.

        Raises:
            LookupError: the landlord is an in-process object not registered with a daemon.
        """
        if isinstance(self._landlord, str):
            return self._landlord
        uri = getattr(self._landlord, "uri", None)
        if uri is None:
            raise LookupError("this lease's landlord is not registered with a Pyro5 daemon, "
                              "so the lease cannot leave its process")
        return str(uri)

    def call_landlord(self, method: str, *args: Any) -> Any:
        """Call ``method`` of this lease's landlord: in-process directly, else
        through this thread's proxy for it (dropped after a communication error).

        Objects tied to a lease (a lookup registration) use it to reach the
        landlord the same way the lease does.
        """
        return self._call(method, *args)

    def _call(self, method: str, *args: Any) -> Any:
        target = self._landlord
        if not isinstance(target, str):
            return getattr(target, method)(*args)
        try:
            return getattr(proxies.proxy_for(target), method)(*args)
        except Pyro5.errors.CommunicationError:
            proxies.discard(target)  # the next call reconnects
            raise

    def _do_renew(self, duration: float) -> float:
        return self._call("renew", self._cookie, duration)  # type: ignore[no-any-return]

    def cancel(self) -> None:
        self._call("cancel", self._cookie)

    def can_batch(self, other: Lease) -> bool:
        return isinstance(other, LandlordLease) and other._landlord_id == self._landlord_id

    def _batch_key(self) -> Hashable | None:
        return ("landlord", self._landlord_id)

    def _renew_batch(self, leases: Sequence[Lease], durations: Sequence[float]) -> dict[Lease, Exception]:
        if len(leases) > CALL_BATCH:
            failures: dict[Lease, Exception] = {}
            for start in range(0, len(leases), CALL_BATCH):
                failures.update(self._renew_batch(leases[start:start + CALL_BATCH],
                                                  durations[start:start + CALL_BATCH]))
            return failures
        cookies = [lease.cookie for lease in leases]  # type: ignore[attr-defined]
        sent = sent_now(self._clock)
        results = self._call("renew_all", cookies, list(durations))
        granted, denied = getattr(results, "granted", None), getattr(results, "denied", None)
        if not isinstance(granted, list) or len(granted) != len(leases) or not isinstance(denied, list):
            raise LeaseError(f"landlord answered renew_all with {results!r:.80}")
        failures = {}
        denials = iter(denied)
        for lease, grant in zip(leases, granted):
            if grant == -1:
                failures[lease] = next(denials, None) or LeaseError("renewal failed without a reason")
            else:
                lease._set_granted(sent, check_granted(grant))  # type: ignore[attr-defined]
        return failures

    def _cancel_batch(self, leases: Sequence[Lease]) -> dict[Lease, Exception]:
        if len(leases) > CALL_BATCH:
            failures: dict[Lease, Exception] = {}
            for start in range(0, len(leases), CALL_BATCH):
                failures.update(self._cancel_batch(leases[start:start + CALL_BATCH]))
            return failures
        by_cookie = {lease.cookie: lease for lease in leases}  # type: ignore[attr-defined]
        errors = self._call("cancel_all", list(by_cookie))
        return {by_cookie[cookie]: exc for cookie, exc in dict(errors).items() if cookie in by_cookie}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LandlordLease):
            return NotImplemented
        return self._landlord_id == other._landlord_id and self._cookie == other._cookie

    def __hash__(self) -> int:
        return hash((self._landlord_id, self._cookie))

    def __repr__(self) -> str:
        # only a prefix of the cookie: the whole cookie is the capability to cancel
        left = "FOREVER" if math.isinf(self._expiration) else f"{self.remaining:.1f}s"
        return f"<LandlordLease {self._landlord_id[:8]}/{self._cookie[:6]}… {left} left>"


def check_cookie(cookie: object) -> str:
    """A cookie as a holder or landlord may accept it.

    Raises:
        TypeError: not a ``str``.
        ValueError: empty or longer than ``MAX_COOKIE_LENGTH``.
    """
    if not isinstance(cookie, str):
        raise TypeError(f"a lease cookie is a str, got {type(cookie).__name__}")
    if not 0 < len(cookie) <= MAX_COOKIE_LENGTH:
        raise ValueError(f"a lease cookie has 1 to {MAX_COOKIE_LENGTH} characters, got {len(cookie)}")
    return cookie

