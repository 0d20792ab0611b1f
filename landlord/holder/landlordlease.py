"""The lease a :class:`~landlord.Landlord` hands out: a cookie plus a way to reach its landlord.

A lease of a replicated landlord also names every replica of its group
(:attr:`LandlordLease.landlords`, the same ``landlord_id`` on each). Its calls
go to the replica this process last learnt leads the group; a replica that
does not lead answers :class:`~landlord.NotLeaderError` naming the one that
does, and the call goes there at once (at most ``MAX_REDIRECTS`` times); a
replica that cannot be reached gives way to the next of the group. All of it
within the one call's timeout (:func:`landlord.transport.proxies.timeout_within`).
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import threading
import time
from collections.abc import Hashable, Sequence
from typing import Any

import Pyro5.core
import Pyro5.errors

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import LeaseError, NotLeaderError
from ..lease import AbstractLease, BatchableLease, Lease, check_granted, record_grants, sent_now
from ..transport import proxies

__all__ = ["LandlordLease", "check_landlords", "known_leader", "call_group", "replica_uris", "replica_object_id",
           "check_group", "record_renewals", "uri_text", "MAX_LANDLORDS", "MAX_REDIRECTS"]

log = logging.getLogger("landlord.landlordlease")  # its name before it moved

# Cookies are opaque, but a bound keeps forged ones from costing memory.
MAX_COOKIE_LENGTH = 256
# The most leases in one renew_all or cancel_all call: a landlord refuses more
# (a ValueError, before anything changes). About what a served landlord's 64 KiB
# serpent message cap lets in (2,000 cookies), and small enough that the worst
# answer (every lease unknown under a 256-character cookie, or denied with a
# reason cut to MAX_DENIAL) stays under 2 MiB in serpent and json, far below
# the 16 MiB message cap: an answer too big to send would drop the connection.
MAX_BATCH = 2_000
# The most a holder sends in one call; bigger batches are split. A 1,000-lease
# renew_all of 22-character cookies is 43.6 KB of serpent and 45.6 KB of json
# with arbitrary durations (29.1 KB and 31.1 KB asking 3.0 each); a cancel_all
# 25.1 KB and 26.1 KB: well under the 64 KiB serpent cap. Its answer, every
# lease unknown, is 162 KB (renew_all) and 184 KB (cancel_all) of serpent.
CALL_BATCH = 1_000
# The most replicas one group may name, and the longest URI of one: a forged
# lease costs no more than this.
MAX_LANDLORDS = 16
MAX_URI_LENGTH = 1024
# How often one call follows a NotLeaderError to the replica it names: replicas
# that name one another in a loop (an election under way) cost a few round trips.
MAX_REDIRECTS = 3


class LandlordLease(AbstractLease, BatchableLease):
    """A serializable lease whose renewals and cancellation go to its landlord.

    It can be sent to any process (it travels as its cookie, its landlord's URI
    and the seconds it has left) and renewed there from any thread. Leases of
    one landlord batch (:class:`~landlord.lease.BatchableLease`): their renewals
    go out as one ``renew_all`` call, their cancels as one ``cancel_all``.

    A lease of a replicated landlord names every replica (``landlords``): its
    calls follow the group's leader (see the module's docstring). A lease of a
    plain landlord calls its one URI, and that is all.

    Args:
        cookie: the landlord's secret name for the lease.
        landlord: the landlord's Pyro5 URI (``str`` or ``Pyro5.core.URI``), or
            for in-process use the landlord object itself.
        landlord_id: identifies the landlord (a replica group shares one);
            leases are equal when their landlord ids and cookies are.
        expiration: absolute wall-clock time the lease ends.
        clock: the holder's clock.
        term: the seconds last granted (:attr:`~landlord.Lease.term`);
            ``None``: the time left now.
        landlords: the URIs of every replica of the landlord's group, in the
            order they are tried (see :func:`check_landlords`); ``None``: a
            plain landlord, ``landlord`` alone.

    Raises:
        TypeError: a cookie, landlord id, landlord or landlords of the wrong type.
        ValueError: an empty or oversized cookie, a malformed URI, a bad
            expiration or term, landlords that :func:`check_landlords` refuses.
    """

    __slots__ = ("_cookie", "_landlord", "_landlord_id", "_landlords")

    def __init__(self, cookie: str, landlord: Any, landlord_id: str, expiration: float, *,
                 clock: Clock = SYSTEM_CLOCK, term: float | None = None,
                 landlords: Sequence[str] | None = None) -> None:
        super().__init__(expiration, clock=clock, term=term)
        self._cookie = check_cookie(cookie)
        if not isinstance(landlord_id, str) or not landlord_id:
            raise TypeError(f"landlord_id must be a non-empty str, got {landlord_id!r:.50}")
        self._landlord_id = landlord_id
        landlord = uri_text(landlord)
        if not isinstance(landlord, str) and not (callable(getattr(landlord, "renew", None))
                                                  and callable(getattr(landlord, "cancel", None))):
            raise TypeError(f"landlord must be a Pyro5 URI or a landlord object, got {type(landlord).__name__}")
        self._landlord = landlord
        group = None if landlords is None else check_landlords(landlords)
        # None for a plain landlord (a group of its one URI is one too): its calls take the plain path
        self._landlords = None if group is not None and group == (landlord,) else group

    @classmethod
    def granted(cls, cookie: str, landlord: Any, landlord_id: str, granted: float, *, clock: Clock,
                landlords: tuple[str, ...] | None) -> LandlordLease:
        """The lease a landlord hands out for a grant of ``granted`` seconds, made now.

        Nothing is checked again: the landlord made the cookie, and its id and
        replica group (``landlords``, as :func:`check_landlords` returned them)
        were checked when it was built. Half the cost of ``__init__``, which
        every lease made anywhere else goes through.
        """
        lease = cls.__new__(cls)
        lease._start_granted(granted, clock)
        lease._cookie = cookie
        lease._landlord = landlord
        lease._landlord_id = landlord_id
        lease._landlords = landlords
        return lease

    def timed_on(self, clock: Clock) -> LandlordLease:
        """This lease timed on ``clock``: the same cookie, landlord (or replica group), term and
        time left. A lease that came over the wire is timed on the system clock; a process on
        another clock (a test's) cannot compare the two."""
        return LandlordLease(self._cookie, self._landlord, self._landlord_id, clock.time() + self.remaining,
                             clock=clock, term=self.term, landlords=self._landlords)

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

    @property
    def landlords(self) -> tuple[str, ...]:
        """Every replica's URI, for a lease of a replicated landlord; else the one landlord's.

        Raises:
            LookupError: a plain landlord that is an in-process object not
                registered with a daemon (as :attr:`landlord_uri`).
        """
        return self._landlords if self._landlords is not None else (self.landlord_uri,)

    @property
    def replicated(self) -> bool:
        """Whether the lease names a group of replicas (it travels with ``landlords``)."""
        return self._landlords is not None

    def call_landlord(self, method: str, *args: Any) -> Any:
        """Call ``method`` of this lease's landlord: in-process directly, else
        through this thread's proxy for it (dropped after a communication error);
        a replicated landlord's through the group, wherever the lease is.

        Objects tied to a lease (a lookup registration) use it to reach the
        landlord the same way the lease does, following a replicated
        landlord's leader as the lease does.
        """
        return self._call(method, *args)

    def _call(self, method: str, *args: Any) -> Any:
        target = self._landlord
        if self._landlords is not None:  # even in the leader's process: the leader may have changed
            return _call_group(self._landlord_id, self.landlord_uri, self._landlords, method, args)
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
        """Whether ``other`` is a lease of the same landlord (id)."""
        return isinstance(other, LandlordLease) and other._landlord_id == self._landlord_id

    def batch_key(self) -> Hashable:
        """The landlord's id and where it is (a group's replicas in any order)."""
        # leases naming one id at another address (forged, say, by a stranger sharing a renewal
        # service) never share a call, so no lease's cookie is sent where another lease says its
        # landlord is
        if self._landlords is not None:
            return ("landlord", self._landlord_id, frozenset(self._landlords))
        if isinstance(self._landlord, str):
            return ("landlord", self._landlord_id, self._landlord)
        return ("landlord", self._landlord_id, id(self._landlord))

    def renew_batch(self, leases: Sequence[LandlordLease], durations: Sequence[float]) -> dict[Lease, Exception]:
        """Renew ``leases`` of this one's batch key, ``CALL_BATCH`` a ``renew_all`` call.

        Raises:
            LeaseError: the landlord's answer is not a batch's results.
            Pyro5.errors.CommunicationError: a call failed as a whole (its leases' outcome is unknown).
        """
        if len(leases) > CALL_BATCH:
            failures: dict[Lease, Exception] = {}
            for start in range(0, len(leases), CALL_BATCH):
                failures.update(self.renew_batch(leases[start:start + CALL_BATCH],
                                                 durations[start:start + CALL_BATCH]))
            return failures
        cookies = [lease._cookie for lease in leases]  # not the property: this runs for every lease
        sent = sent_now(self._clock)
        return record_renewals(leases, sent, self._call("renew_all", cookies, list(durations)))

    def cancel_batch(self, leases: Sequence[LandlordLease]) -> dict[Lease, Exception]:
        """Cancel ``leases`` of this one's batch key, ``CALL_BATCH`` a ``cancel_all`` call.

        Raises:
            Pyro5.errors.CommunicationError: a call failed as a whole.
        """
        if len(leases) > CALL_BATCH:
            failures: dict[Lease, Exception] = {}
            for start in range(0, len(leases), CALL_BATCH):
                failures.update(self.cancel_batch(leases[start:start + CALL_BATCH]))
            return failures
        by_cookie = {lease.cookie: lease for lease in leases}
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


def record_renewals(leases: Sequence[LandlordLease], sent: tuple[float, float],
                    results: object) -> dict[Lease, Exception]:
    """A landlord's answer to ``renew_all`` of ``leases`` (sent at ``sent``: :func:`~landlord.lease.sent_now`),
    recorded on them: each lease granted ends that long after ``sent``
    (:meth:`~landlord.AbstractLease.record_grant`), each refused is returned with its reason.

    Args:
        leases: the leases asked for, in the order their cookies were sent.
        sent: when the call went out.
        results: the answer (:class:`~landlord.RenewResults`: a grant per lease, ``-1`` for one
            refused, and the refusals in order).

    Raises:
        LeaseError: an answer that is not a batch's results for these leases, or a grant that
            is not a number of seconds.
    """
    granted, denied = getattr(results, "granted", None), getattr(results, "denied", None)
    if not isinstance(granted, list) or len(granted) != len(leases) or not isinstance(denied, list):
        raise LeaseError(f"landlord answered renew_all with {results!r:.80}")
    if record_grants(leases, sent, granted):  # every lease granted: the common case, at once
        return {}
    failures: dict[Lease, Exception] = {}
    denials = iter(denied)
    for lease, grant in zip(leases, granted):
        if grant == -1:
            failures[lease] = next(denials, None) or LeaseError("renewal failed without a reason")
        else:  # a float of seconds passes as it is (check_granted would only return it), all else is checked
            lease.record_grant(sent, grant if type(grant) is float and grant >= 0 else check_granted(grant))
    return failures


def uri_text(landlord: Any) -> Any:
    """``landlord`` as the text of a Pyro5 URI if it is one (a str, or a ``Pyro5.core.URI``), checked;
    anything else (a landlord object) as it is.

    Raises:
        ValueError: a str that is not a Pyro5 URI.
    """
    if isinstance(landlord, Pyro5.core.URI):
        return str(landlord)
    if isinstance(landlord, str):
        try:
            Pyro5.core.URI(landlord)
        except Exception as exc:
            raise ValueError(f"not a Pyro5 URI: {landlord!r:.80}") from exc
    return landlord


def check_landlords(landlords: object, *, name: str = "landlords") -> tuple[str, ...]:
    """A replica group's URIs as a lease may carry them (a :class:`~landlord.Landlord`'s ``replicas`` too).

    Args:
        landlords: a list or tuple of ``PYRO:`` URIs (``str`` or ``Pyro5.core.URI``).
        name: what to call them in an error.

    Returns:
        The URIs as a tuple of ``str``, in the order given.

    Raises:
        TypeError: not a list or tuple (a ``str`` is refused), or an element not a URI string.
        ValueError: empty, more than ``MAX_LANDLORDS``, a URI repeated, longer than
            ``MAX_URI_LENGTH``, malformed, or not ``PYRO:`` (a name would need a name server).
    """
    if not isinstance(landlords, (list, tuple)):
        raise TypeError(f"{name} must be a list of Pyro5 URIs, got {type(landlords).__name__}")
    if not 0 < len(landlords) <= MAX_LANDLORDS:
        raise ValueError(f"{name} lists 1 to {MAX_LANDLORDS} replicas, got {len(landlords)}")
    uris = tuple(str(uri) if isinstance(uri, Pyro5.core.URI) else uri for uri in landlords)
    for uri in uris:
        if not isinstance(uri, str):
            raise TypeError(f"{name} must be Pyro5 URIs, got a {type(uri).__name__}")
    known = _CHECKED.get(uris)
    if known is not None:  # a group's leases arrive by the thousand: each list is parsed once
        return known
    for uri in uris:
        _check_uri(uri, name)
    if len(set(uris)) != len(uris):
        raise ValueError(f"{name} names a replica twice: {uris!r:.200}")
    if len(_CHECKED) >= _CHECKED_LIMIT:
        _CHECKED.clear()
    _CHECKED[uris] = uris  # one tuple shared by every lease of the group
    return uris


_CHECKED: dict[tuple[str, ...], tuple[str, ...]] = {}
_CHECKED_LIMIT = 256


def _check_uri(uri: str, what: str) -> str:
    """``uri`` if it is a ``PYRO:`` URI of a sane length.

    Raises:
        ValueError: it is not.
    """
    if len(uri) > MAX_URI_LENGTH:
        raise ValueError(f"{what}: a URI of {len(uri)} characters (at most {MAX_URI_LENGTH})")
    try:
        protocol = Pyro5.core.URI(uri).protocol
    except Exception as exc:
        raise ValueError(f"{what}: not a Pyro5 URI: {uri!r:.80}") from exc
    if protocol != "PYRO":
        raise ValueError(f"{what}: not a PYRO: URI: {uri!r:.80}")
    return uri


class _Leaders:
    """Per process: the replica last known to lead each group, by landlord id.

    Thread-safe: reads are single dict lookups (atomic), writes take the lock.
    Bounded, so leases of many groups (or forged ones) cannot make it grow
    without end: the group learnt longest ago is forgotten first.
    """

    __slots__ = ("_lock", "_by_group", "_limit")

    def __init__(self, limit: int = 4096) -> None:
        self._lock = threading.Lock()
        self._by_group: dict[str, str] = {}
        self._limit = limit

    def get(self, landlord_id: str) -> str | None:
        return self._by_group.get(landlord_id)

    def learn(self, landlord_id: str, uri: str) -> None:
        with self._lock:
            self._by_group.pop(landlord_id, None)  # re-inserted last: the most recently learnt
            if len(self._by_group) >= self._limit:
                del self._by_group[next(iter(self._by_group))]
            self._by_group[landlord_id] = uri

    def moved_on(self, landlord_id: str, failed: str, successor: str) -> None:
        """``failed`` could not be reached: believe ``successor`` leads, unless
        another thread has learnt better meanwhile."""
        with self._lock:
            if self._by_group.get(landlord_id, failed) == failed:
                self._by_group.pop(landlord_id, None)
                if len(self._by_group) >= self._limit:
                    del self._by_group[next(iter(self._by_group))]
                self._by_group[landlord_id] = successor


_LEADERS = _Leaders()
# the clock of a call's time budget: real seconds, as the sockets' timeouts are
_now = time.monotonic


def known_leader(landlord_id: str) -> str | None:
    """The URI of the replica this process last learnt leads group ``landlord_id`` (``None``: none yet)."""
    return _LEADERS.get(landlord_id)


def call_group(replicas: Sequence[str], method: str, *args: Any) -> Any:
    """Call ``method(*args)`` on the replica that leads the group at ``replicas``, from any thread,
    as a lease of the group calls its landlord: the replica this process last learnt leads it
    first, then where a ``NotLeaderError`` points, or the next replica when one cannot be reached,
    all within one call's timeout (:func:`landlord.timeout_within` bounds it).

    For a client that holds no lease of the group yet (its first grant, a lookup).

    Args:
        replicas: the group's ``PYRO:`` URIs (see :func:`check_landlords`).
        method: the remote method's name.
        args: its arguments.

    Raises:
        TypeError, ValueError: ``replicas`` that :func:`check_landlords` refuses (nothing is sent).
        NotLeaderError: the redirects ran out.
        Pyro5.errors.CommunicationError: no replica could be reached, or the time ran out.
        Exception: whatever the leader raised.
    """
    group = check_landlords(replicas, name="replicas")
    # the leader is learnt per group, under a key of its own: its URIs
    return _call_group("group " + ",".join(sorted(group)), group[0], group, method, args)


def _call_group(landlord_id: str, landlord: str, group: tuple[str, ...], method: str, args: tuple[Any, ...]) -> Any:
    """Call ``method`` on the group's leader: the one last learnt (if the lease names it), else
    the lease's ``landlord``; then where a ``NotLeaderError`` points (at most ``MAX_REDIRECTS``
    times), or the group's next replica when one cannot be reached.

    Every attempt after the first is bounded by what is left of the timeout the
    first had (:func:`landlord.transport.proxies.current_timeout`), so the whole call
    takes no longer than one call would.

    Raises:
        NotLeaderError: a replica named no leader, or the redirects ran out.
        Pyro5.errors.CommunicationError: no replica could be reached (the last one's error),
            or the time ran out (the last error, whatever it was).
        Exception: whatever the leader raised.
    """
    timeout = proxies.current_timeout()
    deadline = math.inf if timeout is None else _now() + timeout
    known = _LEADERS.get(landlord_id)
    # a leader learnt through another lease counts only if this one names it too: a
    # forged lease of the same landlord id must not steer other leases' cookies elsewhere
    first = known if known is not None and (known == landlord or known in group) else landlord
    failed: list[str] = []  # could not be reached
    passed: list[str] = []  # failed, or named another leader: not asked again unless named
    redirects = 0
    target = first
    last: Exception | None = None
    while True:
        bound: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
        if last is not None and deadline != math.inf:
            left = deadline - _now()
            if left <= 0:
                raise last
            bound = proxies.timeout_within(left)
        try:
            with bound:
                result = getattr(proxies.proxy_for(target), method)(*args)
        except NotLeaderError as exc:
            leader = _leader_named(exc)
            if leader is None or redirects >= MAX_REDIRECTS:
                raise
            redirects, last = redirects + 1, exc
            log.debug("%s of group %s: %s does not lead, %s does", method, landlord_id, target, leader)
            _LEADERS.learn(landlord_id, leader)
            passed.append(target)
            if leader in failed:  # named (news not yet everywhere), yet unreachable: ask one not yet asked
                target = _next(group, first, passed, exc)
            else:
                target = leader
        except Pyro5.errors.CommunicationError as exc:
            proxies.discard(target)  # the next call reconnects
            failed.append(target)
            passed.append(target)
            last = exc
            successor = _next(group, first, passed, exc)
            log.debug("%s of group %s: %s unreachable (%s), trying %s", method, landlord_id, target, exc, successor)
            _LEADERS.moved_on(landlord_id, target, successor)
            target = successor
        else:
            if _LEADERS.get(landlord_id) != target:
                _LEADERS.learn(landlord_id, target)
            return result


def _next(group: tuple[str, ...], first: str, passed: list[str], error: Exception) -> str:
    """The group's next replica not yet passed over, going round from ``first``.

    Raises:
        error: every replica has been.
    """
    start = group.index(first) + 1 if first in group else 0
    for uri in group[start:] + group[:start]:
        if uri not in passed:
            return uri
    raise error


def _leader_named(error: NotLeaderError) -> str | None:
    """The leader's URI a ``NotLeaderError`` names, if it is a usable one."""
    leader = getattr(error, "leader", None)
    if not isinstance(leader, str):
        return None
    try:
        return _check_uri(leader, "NotLeaderError.leader")
    except ValueError:
        log.warning("a replica named a leader that is not a PYRO: URI: %r", leader[:80])
        return None


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


# -- a replicated landlord's group, as its holders name it ---------------------------------------------

_GROUP_NAME = re.compile(r"[A-Za-z0-9_.-]+")  # no slash, nothing to escape in an etcd key or an object id


def check_group(group: str) -> str:
    """``group`` if it is a replica group's name: letters, digits and ``_.-``.

    Raises:
        ValueError: it is not (or not a str).
    """
    if not isinstance(group, str) or not _GROUP_NAME.fullmatch(group):
        raise ValueError(f"a group is a name of letters, digits and _.- (no slash): {group!r}")
    return group


def replica_object_id(group: str) -> str:
    """The Pyro5 object id a replica of ``group`` is served under: ``"landlord." + group``, the same on
    every host, so that each replica's URI follows from its address.

    Raises:
        ValueError: not a group name (letters, digits, ``_.-``).
    """
    check_group(group)
    return "landlord." + group


def replica_uris(addresses: str | Sequence[str | tuple[str, int]], group: str | None = None, *,
                 object_id: str | None = None) -> list[str]:
    """The URIs of a group's replicas served at ``addresses`` (:func:`replica_object_id` on each).

    Args:
        addresses: ``"h1:p1,h2:p2,h3:p3"``, or a list of ``"host:port"`` or ``(host, port)``.
        group: the group's name (unless ``object_id`` is given).
        object_id: the object id the replicas are served under, if not :func:`replica_object_id`
            (the replicated lookup service keeps the lookup service's).

    Raises:
        ValueError: an address that is not ``host:port`` with a port from 1 to 65535, or a bad group.
        TypeError: ``addresses`` of the wrong type.
    """
    if object_id is None:
        if group is None:
            raise TypeError("replica_uris needs the group's name, or the object id the replicas are served under")
        object_id = replica_object_id(group)
    elif group is not None:
        replica_object_id(group)  # checked all the same
    items = addresses.split(",") if isinstance(addresses, str) else addresses
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"addresses must be 'h1:p1,h2:p2' or a list, got {type(addresses).__name__}")
    uris = []
    for item in items:
        if isinstance(item, str):
            host, _, port_text = item.strip().rpartition(":")
            port: object = int(port_text) if port_text.isdigit() else port_text
        elif isinstance(item, tuple) and len(item) == 2:
            host, port = item
        else:
            raise TypeError(f"an address is 'host:port' or (host, port), not {item!r:.80}")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if not isinstance(host, str) or not host or not isinstance(port, int) or not 0 < port < 65536:
            raise ValueError(f"not an address of the form host:port: {item!r:.80}")
        uris.append(f"PYRO:{object_id}@{f'[{host}]' if ':' in host else host}:{port}")
    return list(check_landlords(uris, name="addresses"))
