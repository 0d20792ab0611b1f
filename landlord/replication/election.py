"""Leadership of a replica group through etcd: one replica leads, and knows when it no longer may.

Every replica of a group runs an :class:`Election`. A replica that finds no
leader grants itself an etcd lease with a short TTL and creates the group's
key ``/<prefix>/<group>/leader``, holding its id or URI, on that lease, in a
transaction that succeeds only if the key is absent (``create_revision ==
0``): one replica wins, the others learn who did and watch the key. The
leader keeps its lease alive; a leader that dies stops doing so, etcd expires
the lease and deletes the key, and the watchers campaign again.

Fencing. A leader may only act while etcd still holds its key, and it cannot
ask etcd before every answer. A successful keep-alive proves etcd keeps the
lease for its TTL from when etcd applied the keep-alive, which is after the
leader sent it; so the leader counts from the moment it *sent* it, on its
own monotonic clock, and gives up a safety margin: past ``sent + TTL -
margin`` with no newer keep-alive confirmed it considers itself deposed
(:attr:`Election.leading` turns false at that instant) and must stop
answering, before etcd can expire the key and another replica be elected.
:class:`Tenure` is that rule alone, pure, driven by a clock. Should a deposed
leader still write, etcd refuses it: :func:`guarded_transaction` applies a
write only while the leader key is the one the writer created (``mod_revision
== revision``).

etcd itself is optional: ``pip install 'landlord[etcd]'`` installs its client,
etcd-sdk-python (module ``pyetcd``), which this module imports only when it
connects or elects. ``import landlord`` does not import this module.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import math
import re
import threading
import urllib.parse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..clock import SYSTEM_CLOCK, Clock
from ..holder.landlordlease import check_group
from ..transport.backoff import OutageLog

if TYPE_CHECKING:
    import pyetcd
    from pyetcd.etcdrpc import ResponseOp

__all__ = [
    "INSTALL_HINT", "require_pyetcd", "parse_endpoints", "connect", "connect_like", "leader_key", "LeadershipLost",
    "guarded_transaction", "etcd_errors", "etcd_deadline", "pass_over_if_deadline", "Tenure", "Election",
]

log = logging.getLogger("landlord.election")  # its name before it moved into replication/

T = TypeVar("T")

INSTALL_HINT = "pip install 'landlord[etcd]'"
"""What installs landlord's etcd support (the etcd-sdk-python client)."""

_NAME = re.compile(r"[A-Za-z0-9_.-]+")  # a group name, or one segment of a prefix: no slash, nothing to escape
JOIN_TIMEOUT = 10.0  # seconds close() waits for the election's thread


def require_pyetcd() -> None:
    """Import the etcd client, or say how to install it.

    Raises:
        ImportError: etcd-sdk-python (module ``pyetcd``) is not installed, or
            cannot be imported (its generated code needs protobuf >= 5.27.2);
            the message names the extra that installs it.
    """
    try:
        importlib.import_module("pyetcd")
    except Exception as exc:  # a protobuf too old fails with TypeError or VersionError, not ImportError
        raise ImportError(f"landlord's etcd support needs the etcd-sdk-python client (module pyetcd) and "
                          f"protobuf >= 5.27.2: {INSTALL_HINT} (import failed: {exc})") from exc


def etcd_errors() -> tuple[type[BaseException], ...]:
    """What a pyetcd call raises when etcd cannot answer: its own errors, and gRPC's for codes it does not map."""
    import pyetcd
    return pyetcd.Etcd3Exception, importlib.import_module("grpc").RpcError


def etcd_deadline(exc: BaseException) -> bool:
    """Whether ``exc`` is etcd's own answer that a call's deadline passed before the call was done (a
    write or a read sent to a member that has no leader, while etcd elects one). etcd 3.4 sends it
    as gRPC status UNKNOWN, "context deadline exceeded", which pyetcd leaves as a bare gRPC error;
    in about a third of such calls it arrives before the client's own deadline, which pyetcd raises
    as ConnectionTimeoutError (measured on a member without a leader, with the 0.3 s timeout)."""
    code, details = getattr(exc, "code", None), getattr(exc, "details", None)
    status = code() if callable(code) else None
    return getattr(status, "name", "") == "UNKNOWN" and callable(details) and details() == "context deadline exceeded"


def pass_over_if_deadline(client: pyetcd.MultiEndpointEtcd3Client, exc: BaseException,
                          sent_to: Any = None) -> bool:
    """Pass over the member a failed call was sent to, for its retry pause, if ``exc`` is etcd's own
    deadline answer (:func:`etcd_deadline`), as pyetcd does itself when its own deadline passes (it
    leaves etcd's alone, and the next call would go to the same leaderless member); whether it was that.

    Args:
        client: the client the call went through.
        exc: what the call raised.
        sent_to: the member the call was sent to (``client.endpoint_in_use`` noted before the call);
            ``None``: the member in use now, right only on a client no other thread calls through
            (another thread's failure may have moved it since).
    """
    if not etcd_deadline(exc):
        return False
    member = sent_to if sent_to is not None else client.endpoint_in_use
    if member is not None:
        member.fail()
    return True


# -- connecting ------------------------------------------------------------------------------


def parse_endpoints(endpoints: str | Sequence[str]) -> list[tuple[str, int]]:
    """The host and port of each etcd member named in ``endpoints``.

    Args:
        endpoints: client URLs (``http://host:port``, or just ``host:port``),
            as one comma-separated string or a sequence; an IPv6 host in brackets.

    Raises:
        ValueError: none given, or one that is not ``[http://]host:port``
            (another scheme, no port, a path); the message shows which.
    """
    items = endpoints.split(",") if isinstance(endpoints, str) else list(endpoints)
    parsed = []
    for item in (item.strip() for item in items):
        url = urllib.parse.urlsplit(item if "://" in item else f"http://{item}")
        try:
            port = url.port
        except ValueError:
            port = None
        if url.scheme != "http" or not url.hostname or port is None or url.path not in ("", "/") \
                or url.query or url.fragment or url.username:
            raise ValueError(f"not an etcd client URL of the form http://host:port: {item!r}"
                             + (" (https is not supported yet)" if url.scheme == "https" else ""))
        parsed.append((url.hostname, port))
    if not parsed:
        raise ValueError("no etcd endpoint given")
    return parsed


def connect(endpoints: str | Sequence[str], *, timeout: float = 0.3,
            retry_after: float = 0.25) -> pyetcd.MultiEndpointEtcd3Client:
    """A client of an etcd cluster that moves to another member when the one it uses fails.

    Nothing is sent yet: an unreachable cluster shows on the first call.

    Args:
        endpoints: the members' client URLs, as for :func:`parse_endpoints`.
        timeout: seconds any one call may take (pyetcd has one timeout per
            client; an :class:`Election` needs it below its confirmed window).
        retry_after: seconds a member whose call failed is passed over. Keep
            it short: while etcd elects a leader of its own every member
            fails, and none is tried again before this has passed.

    Raises:
        ValueError: a malformed endpoint, or a timeout or ``retry_after`` not
            positive and finite.
        ImportError: the etcd client is not installed (see :func:`require_pyetcd`).
    """
    members = parse_endpoints(endpoints)
    for name, value in (("timeout", timeout), ("retry_after", retry_after)):
        if not 0 < value < math.inf:
            raise ValueError(f"{name} must be positive and finite, not {value!r}")
    require_pyetcd()
    import pyetcd
    return pyetcd.MultiEndpointEtcd3Client(
        endpoints=[pyetcd.Endpoint(f"[{host}]" if ":" in host else host, port, secure=False, time_retry=retry_after)
                   for host, port in members],
        timeout=timeout, failover=True)


def connect_like(client: pyetcd.MultiEndpointEtcd3Client) -> pyetcd.MultiEndpointEtcd3Client:
    """A new client of the members ``client`` knows, with its timeout, failover, retry pause and
    credentials (its authentication token, if it has one), but channels and a failover of its own.

    pyetcd's failover is per client and blames a failure on the member the client uses when the
    error arrives, not on the one the failed call went to: on a client shared by threads, one
    thread's timeouts pass over the members another thread's calls reach. An :class:`Election`
    on a client of its own keeps its lease alive whatever the other users of etcd meet.

    Raises:
        TypeError: ``client`` is not a pyetcd ``MultiEndpointEtcd3Client`` (a test's fake, say).
        ImportError: the etcd client is not installed.
    """
    require_pyetcd()
    import pyetcd
    if not isinstance(client, pyetcd.MultiEndpointEtcd3Client):
        raise TypeError(f"not a pyetcd client to connect like: {client!r:.80}")
    endpoints = [pyetcd.Endpoint(member.host, int(member.netloc.rsplit(":", 1)[1]), secure=member.secure,
                                 creds=member.credentials, time_retry=member.time_retry)
                 for member in client.endpoints.values()]
    twin = pyetcd.MultiEndpointEtcd3Client(endpoints=endpoints, timeout=client.timeout, failover=client.failover)
    twin.metadata, twin.call_credentials = client.metadata, client.call_credentials
    return twin


def leader_key(group: str, *, prefix: str = "landlord") -> str:
    """The key that names the leader of ``group``: ``/<prefix>/<group>/leader``.

    Raises:
        ValueError: ``group`` empty or not of letters, digits, ``_.-``; or
            ``prefix`` not such names separated by ``/``.
    """
    check_group(group)
    if not isinstance(prefix, str) or not all(_NAME.fullmatch(part) for part in prefix.split("/")):
        raise ValueError(f"a prefix is names of letters, digits and _.- separated by '/': {prefix!r}")
    return f"/{prefix}/{group}/leader"


# -- guarded writes -----------------------------------------------------------------------------


class LeadershipLost(Exception):
    """A write was refused because the writer no longer leads: by itself (its confirmed
    time had run out), or by etcd (the leader key is no longer the one it created)."""


def guarded_transaction(client: pyetcd.MultiEndpointEtcd3Client, key: str, revision: int, *,
                        compare: Sequence[Any] = (), success: Sequence[Any] = (),
                        failure: Sequence[Any] = ()) -> tuple[bool, list[ResponseOp]]:
    """Run a transaction that etcd applies only while ``key`` is the one created at ``revision``.

    The caller's transaction runs nested inside one whose only condition is
    ``mod_revision(key) == revision`` (or, without conditions of its own, its
    operations go straight into that one): a leader deposed meanwhile (its key
    expired, and perhaps another replica's key since created) has nothing
    applied, whatever its own view of its leadership.

    Args:
        client: the etcd client to send it with.
        key: the election key (:func:`leader_key`).
        revision: the revision at which the writer created it (:attr:`Election.revision`).
        compare: the caller's conditions (``client.transactions.value(k) == v``, ...).
        success: the operations (``client.transactions.put(...)``, ...) applied if they all hold.
        failure: those applied otherwise.

    Returns:
        Whether the caller's conditions held, and the responses of the
        operations applied (etcd ``ResponseOp`` messages), in order.

    Raises:
        LeadershipLost: etcd refused it: ``key`` is gone or newer.
        pyetcd.Etcd3Exception, grpc.RpcError: etcd could not be reached or
            answer; the write may or may not have been applied.
    """
    tx = client.transactions
    guard = [tx.mod(key) == revision]
    if not compare and not failure:
        # flat, not nested: etcd 3.4 counts no write nested in a transaction against its space
        # quota, so a nested write could outgrow it unseen, until no lease (no election) is granted
        applied, responses = client.transaction(compare=guard, success=list(success), failure=[])
        if not applied:
            raise LeadershipLost(f"etcd refused the write: {key} is no longer the key created at revision {revision}")
        return True, list(responses)
    inner = tx.txn(compare=list(compare), success=list(success), failure=list(failure))
    applied, responses = client.transaction(compare=guard, success=[inner], failure=[])
    if not applied:
        raise LeadershipLost(f"etcd refused the write: {key} is no longer the key created at revision {revision}")
    result = responses[0].response_txn
    return bool(result.succeeded), list(result.responses)


# -- the fencing rule ---------------------------------------------------------------------------


class Tenure:
    """How long a leader may consider itself confirmed: the fencing rule alone, on a clock.

    A term begins when a replica is elected on a lease it asked for at
    ``sent_at`` and etcd granted for ``ttl`` seconds; each keep-alive that
    etcd answers with a TTL confirms it again from when *that* keep-alive was
    sent. The term is confirmed until ``sent + ttl - margin`` (the
    :attr:`deadline`): etcd cannot expire the lease before ``sent + ttl`` on
    its own clock, and the margin covers the clocks' rates and an answer
    already on its way out. No etcd, no threads: times are on ``clock``.

    Args:
        clock: whose ``monotonic()`` the times are on.
        margin: seconds given up before etcd could expire the lease.
        refresh_interval: seconds from one confirmed keep-alive's sending to the next's.
        retry_interval: seconds from a failed keep-alive's sending to the next's
            (never past the deadline).

    Raises:
        ValueError: ``margin`` negative, or an interval not positive and
            finite; any of them not a number.
    """

    def __init__(self, *, clock: Clock, margin: float, refresh_interval: float, retry_interval: float) -> None:
        if not 0 <= margin < math.inf:
            raise ValueError(f"margin must be at least 0 and finite, not {margin!r}")
        for name, value in (("refresh_interval", refresh_interval), ("retry_interval", retry_interval)):
            if not 0 < value < math.inf:
                raise ValueError(f"{name} must be positive and finite, not {value!r}")
        self._clock = clock
        self.margin = float(margin)
        self.refresh_interval = float(refresh_interval)
        self.retry_interval = float(retry_interval)
        self._held = False
        self._sent = -math.inf  # when the keep-alive (or grant) last confirmed was sent
        self._deadline = -math.inf
        self._next = math.inf

    @property
    def held(self) -> bool:
        """Whether a term has begun and not ended (confirmed or not)."""
        return self._held

    @property
    def deadline(self) -> float:
        """The moment (on the clock's ``monotonic()``) the term stops being confirmed; -inf when none is held."""
        return self._deadline if self._held else -math.inf

    def begin(self, sent_at: float, ttl: float) -> None:
        """A term begins: elected on a lease asked for at ``sent_at`` and granted for ``ttl`` seconds."""
        self._held, self._sent = True, -math.inf
        self.confirm(sent_at, ttl)

    def confirm(self, sent_at: float, ttl: float) -> None:
        """The keep-alive sent at ``sent_at`` was answered: etcd keeps the lease ``ttl`` seconds more.

        An answer to a keep-alive sent before the one last confirmed changes
        nothing (answers may be read late, never count from their reading).
        """
        if not self._held or sent_at < self._sent:
            return
        self._sent = sent_at
        self._deadline = sent_at + ttl - self.margin
        self._next = min(sent_at + self.refresh_interval, self._deadline)

    def failed(self, sent_at: float) -> None:
        """The keep-alive sent at ``sent_at`` failed: try again the retry interval after its sending
        (at once, if it took that long to fail: it timed out), though never after the deadline."""
        if self._held:
            self._next = min(sent_at + self.retry_interval, self._deadline)

    def end(self) -> None:
        """The term is over (deposed, or resigned)."""
        self._held, self._sent, self._deadline, self._next = False, -math.inf, -math.inf, math.inf

    def valid(self) -> bool:
        """Whether a term is held and confirmed now: before its deadline."""
        return self._held and self._clock.monotonic() < self._deadline

    def remaining(self) -> float:
        """Seconds until the deadline (0 when past it or when no term is held)."""
        return max(0.0, self.deadline - self._clock.monotonic())

    def next_refresh(self) -> float:
        """When the next keep-alive is due (inf when no term is held)."""
        return self._next if self._held else math.inf


# -- one candidate's calls to etcd ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Outcome:
    """What a campaign came to: won (on lease ``lease_id`` granted for ``ttl`` s, the key created at
    ``revision``), or lost to ``leader`` (None: the key vanished meanwhile)."""

    won: bool
    leader: str | None = None
    lease_id: int = 0
    ttl: int = 0
    revision: int = 0


class _Ballot:
    """One candidate's calls to etcd: each a single attempt that raises the client's errors (:attr:`errors`)."""

    def __init__(self, client: pyetcd.MultiEndpointEtcd3Client, key: str, candidate: str, ttl: int) -> None:
        self.client, self.key, self.candidate, self.ttl = client, key, candidate, ttl
        self.errors = etcd_errors()
        self._deadline_exceeded = importlib.import_module("grpc").StatusCode.DEADLINE_EXCEEDED
        self._lock = threading.Lock()
        self._watching: Any = None  # the watch call in progress, for close() to cancel
        self._closed = False

    def read(self) -> tuple[str | None, int]:
        """The leader key's value (None: absent), and the revision etcd read it at."""
        value, meta = self.client.get(self.key)
        if value is None or meta is None:
            return None, 0
        return value.decode("utf-8", "replace"), meta.response_header.revision

    def campaign(self) -> _Outcome:
        """Grant a lease and create the leader key on it, in a transaction that requires the key absent."""
        tx = self.client.transactions
        lease = self.client.lease(self.ttl)
        try:
            won, responses = self.client.transaction(
                compare=[tx.create(self.key) == 0],
                success=[tx.put(self.key, self.candidate, lease=lease.id), tx.get(self.key)],
                failure=[tx.get(self.key)])
        except self.errors:
            self.revoke(lease.id)  # whether or not the key was created on it, it goes with the lease
            raise
        if won:
            return _Outcome(True, self.candidate, lease.id, lease.ttl, responses[1][0][1].mod_revision)
        self.revoke(lease.id)
        holder = responses[0]  # [(value, metadata)] of the key another replica created, if still there
        return _Outcome(False, holder[0][0].decode("utf-8", "replace") if holder else None)

    def keep_alive(self, lease_id: int) -> int:
        """Refresh the lease; the TTL etcd answers (0: it no longer has the lease)."""
        answers = list(self.client.refresh_lease(lease_id))
        return answers[0].TTL if answers else 0

    def holds(self, revision: int) -> bool:
        """Whether the leader key is still the one created at ``revision``."""
        meta = self.client.get(self.key)[1]
        return meta is not None and meta.mod_revision == revision

    def watch(self, start_revision: int, period: float) -> bool:
        """Watch the leader key from ``start_revision`` until it changes, ``period`` seconds pass or
        :meth:`close`; whether it ended in an error (a failed member, say) rather than one of those."""
        from pyetcd import etcdrpc
        request = etcdrpc.WatchRequest(create_request=etcdrpc.WatchCreateRequest(
            key=self.key.encode(), start_revision=start_revision))
        try:
            call = etcdrpc.WatchStub(self.client.channel).Watch(iter([request]), period)
            with self._lock:
                self._watching = call
                closed = self._closed
            if closed:
                call.cancel()
            for response in call:  # any event on the key, or etcd ending the watch: read it again
                if response.events or response.canceled:
                    return False
        except self.errors as exc:
            return not self._closed and getattr(exc, "code", lambda: None)() != self._deadline_exceeded
        finally:
            with self._lock:
                self._watching = None
        return False

    def close(self) -> None:
        """End the watch in progress, and any later one at once."""
        with self._lock:
            self._closed, call = True, self._watching
        if call is not None:
            call.cancel()

    def revoke(self, lease_id: int) -> None:
        """Revoke the lease (and so delete the key on it), if etcd can be reached and still has it."""
        try:
            self.client.revoke_lease(lease_id)
        except self.errors as exc:  # gone already, or etcd unreachable: it expires on its own
            log.debug("could not revoke lease %x of %s: %s", lease_id, self.key, exc)


def _timing(ttl: int, margin: float | None, refresh_interval: float | None, retry_interval: float | None,
            watch_period: float | None, timeout: float | None) -> tuple[float, float, float, float]:
    """An election's margin, refresh and retry intervals and watch period, defaults filled in and
    checked (see :class:`Election`, whose ValueErrors these are; :class:`Tenure` checks the retry interval)."""
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 1:
        raise ValueError(f"ttl is a whole number of seconds, at least 1 (etcd's unit), not {ttl!r}")
    margin = ttl / 8 if margin is None else margin
    if not 0 <= margin < ttl:
        raise ValueError(f"margin must be at least 0 and below ttl ({ttl}), not {margin!r}")
    window = ttl - margin
    refresh_interval = window / 6 if refresh_interval is None else refresh_interval
    if not 0 < refresh_interval < window:
        raise ValueError(f"refresh_interval must be positive and below ttl - margin ({window:g}), "
                         f"not {refresh_interval!r}")
    watch_period = float(ttl) if watch_period is None else watch_period
    if not 0 < watch_period < math.inf:
        raise ValueError(f"watch_period must be positive and finite, not {watch_period!r}")
    if timeout is None or not 0 < timeout < window:
        raise ValueError(f"the etcd client's timeout must be set and below ttl - margin ({window:g} s), "
                         f"so that no call outlasts a term; it is {timeout!r}")
    return margin, refresh_interval, refresh_interval / 4 if retry_interval is None else retry_interval, watch_period


def _safely(callback: Callable[[T], None] | None, argument: T) -> None:
    """Call an election's callback, if any; what it raises is logged, and the election carries on."""
    if callback is not None:
        try:
            callback(argument)
        except Exception:
            log.exception("election callback %r failed", callback)


# -- an election's state and thread --------------------------------------------------------------


class _Campaign:
    """An election's state and the thread that moves it: following (read the key; campaign when it is
    absent, else watch it until it changes) and leading (keep the lease alive, check the key is still
    this candidate's, depose when the term is unconfirmed). Its fields are guarded by :attr:`changed`,
    notified at each change of state; the callbacks run on its thread."""

    def __init__(self, ballot: _Ballot, tenure: Tenure, clock: Clock, watch_period: float,
                 on_elected: Callable[[int], None] | None, on_deposed: Callable[[str], None] | None,
                 on_leader: Callable[[str | None], None] | None) -> None:
        self.ballot, self.tenure, self.clock, self.watch_period = ballot, tenure, clock, watch_period
        self.on_elected, self.on_deposed, self.on_leader = on_elected, on_deposed, on_leader
        self.outage = OutageLog(log, f"etcd (election {ballot.key})")
        self.changed = threading.Condition()
        self.lease_id: int | None = None
        self.revision: int | None = None
        self.leader: str | None = None  # the leader last read from etcd while this candidate does not lead
        self.reported: str | None = None  # what on_leader was last told (on the thread only)
        self.refresh_now = False  # a guarded write was refused: check the lease and key at once
        self.closing = False
        self.thread: threading.Thread | None = None

    def leader_now(self) -> str | None:
        """The leader as :meth:`Election.leader` tells it (the caller holds :attr:`changed`)."""
        if self.tenure.held:
            return self.ballot.candidate if self.tenure.valid() else None
        return self.leader

    def run(self) -> None:
        try:
            while True:
                with self.changed:
                    if self.closing:
                        return
                    holding = self.tenure.held
                try:
                    self.keep() if holding else self.follow()
                except Exception:  # a bug, or a surprise from the client: the election must not die of it
                    log.exception("election %s: unexpected error; carrying on", self.ballot.key)
                    self.pause()
        finally:
            self.depose("the election was closed")

    def pause(self) -> None:
        """Wait the retry interval (or until closed)."""
        with self.changed:
            deadline = self.clock.monotonic() + self.tenure.retry_interval
            while not self.closing and self.clock.monotonic() < deadline:
                self.clock.wait(self.changed, deadline)

    def report_leader(self, leader: str | None = None, *, learnt: bool = False) -> None:
        """Take in the leader read from etcd (if ``learnt``), and tell on_leader if the leader changed."""
        with self.changed:
            if learnt:
                self.leader = leader
            now = self.leader_now()
            changed, self.reported = now != self.reported, now
            self.changed.notify_all()
        if changed:
            _safely(self.on_leader, now)

    def follow(self) -> None:
        doing = "read the leader from"
        try:
            leader, revision = self.ballot.read()
            self.report_leader(leader, learnt=True)
            if leader is None:
                doing = "campaign in"
                self.campaign()
                return
        except self.ballot.errors as exc:
            pass_over_if_deadline(self.ballot.client, exc)
            self.outage.failed(exc, doing)
            self.pause()
            return
        self.outage.recovered()
        if self.ballot.watch(revision + 1, self.watch_period):
            self.pause()  # the watch failed at once: wait before the read that moves to another member

    def campaign(self) -> None:
        sent = self.clock.monotonic()  # the lease's TTL runs from no earlier than this
        outcome = self.ballot.campaign()
        if not outcome.won:
            self.report_leader(outcome.leader, learnt=True)
            return
        with self.changed:
            self.leader = None
            self.tenure.begin(sent, outcome.ttl)
            self.lease_id, self.revision = outcome.lease_id, outcome.revision
            confirmed = self.tenure.valid()
        if not confirmed:  # answered too late to count on
            self.depose("elected too late: the term had run out before the key was created")
            return
        log.info("%s leads %s (revision %d, lease TTL %d s)", self.ballot.candidate, self.ballot.key,
                 outcome.revision, outcome.ttl)
        _safely(self.on_elected, outcome.revision)
        self.report_leader()

    def keep(self) -> None:
        with self.changed:
            due = self.tenure.next_refresh()
            if not (self.refresh_now or self.closing) and self.clock.monotonic() < due:
                self.clock.wait(self.changed, due)
                return  # on time or woken early: the loop looks again
            self.refresh_now = False
            confirmed, lease_id, revision = self.tenure.valid(), self.lease_id, self.revision
            if self.closing or lease_id is None or revision is None:
                return
        if not confirmed:
            self.depose(f"no keep-alive confirmed for {self.ballot.ttl - self.tenure.margin:g} s")
            return
        sent = self.clock.monotonic()
        try:
            ttl = self.ballot.keep_alive(lease_id)
            ours = ttl > 0 and self.ballot.holds(revision)
        except self.ballot.errors as exc:
            pass_over_if_deadline(self.ballot.client, exc)  # the next keep-alive goes to another member
            with self.changed:
                self.tenure.failed(sent)
            self.outage.failed(exc, "keep the election lease alive in")
            return  # the next round deposes if the deadline has passed
        self.outage.recovered()
        if ttl <= 0:
            self.depose("etcd no longer has its election lease (it expired or was revoked)")
        elif not ours:
            self.depose("its leader key was deleted or replaced in etcd")
        else:
            with self.changed:
                self.tenure.confirm(sent, ttl)
                self.changed.notify_all()

    def depose(self, reason: str) -> None:
        with self.changed:
            if not self.tenure.held:
                return
            lease_id = self.lease_id
            self.tenure.end()
            self.lease_id = self.revision = None
            self.changed.notify_all()
        # a resignation asked for (close) is routine; any other end of a term is worth a warning
        log.log(logging.INFO if self.closing else logging.WARNING, "%s no longer leads %s: %s",
                self.ballot.candidate, self.ballot.key, reason)
        if lease_id is not None:
            self.ballot.revoke(lease_id)  # frees the key at once if etcd still has it
        _safely(self.on_deposed, reason)
        self.report_leader()


# -- an election ----------------------------------------------------------------------------------


class Election:
    """One replica's part in electing the leader of its group through etcd.

    :meth:`start` runs the election on a thread of its own: it campaigns
    when the group has no leader, keeps its lease alive while it leads, and
    watches the leader key while another does. Callbacks run on that thread,
    in order, and should return quickly: ``on_elected(revision)`` when this
    replica becomes leader (``revision`` guards its writes),
    ``on_deposed(reason)`` when it no longer is (it must have stopped
    answering already: :attr:`leading` turned false at its deadline), and
    ``on_leader(leader)`` when :meth:`leader` has changed.

    Args:
        client: the etcd client (:func:`connect`); its call timeout must be
            below ``ttl - margin``, so that no call outlasts a term. The
            election's thread and :meth:`transaction` share it. Give it a
            client of its own (:func:`connect_like`): pyetcd passes over the
            member a client uses whenever any of its calls fails, so another
            thread's failures on a shared client can leave the keep-alives no
            member to go to, and the term unconfirmed.
        group: the replica group's name (see :func:`leader_key`).
        candidate: this replica's id or URI: what :meth:`leader` tells the others.
        prefix: where the group's keys live in etcd.
        ttl: the election lease's TTL in whole seconds, as asked of etcd (which
            may grant more: etcd 3.4 grants at least 1.5 election timeouts,
            2 s with its default timing); a dead leader's successor waits this long.
        margin: seconds of each confirmed term given up (default ``ttl / 8``:
            clocks' rates differ by far less; it covers an answer decided
            just before the deadline and still on its way out).
        refresh_interval: seconds between keep-alives (default a sixth of
            ``ttl - margin``, so that a term survives an outage of etcd, such
            as its own leader election, of most of ``ttl - margin``).
        retry_interval: seconds from a failed etcd call's sending to the next
            (default a quarter of ``refresh_interval``).
        watch_period: seconds a follower watches the key before reading it
            again, so that a silent etcd member is noticed (default ``ttl``).
        clock: the clock the terms are measured on and the thread waits on.
        on_elected, on_deposed, on_leader: the callbacks above.

    Raises:
        ValueError: a bad group, prefix or empty candidate; ``ttl`` not a
            whole number of at least 1; ``margin`` not from 0 to below ``ttl``;
            ``refresh_interval`` not positive and below ``ttl - margin``;
            another interval or period not positive; the client's timeout
            unset or not below ``ttl - margin``.
        ImportError: the etcd client is not installed.
    """

    def __init__(self, client: pyetcd.MultiEndpointEtcd3Client, *, group: str, candidate: str,
                 prefix: str = "landlord", ttl: int = 2, margin: float | None = None,
                 refresh_interval: float | None = None, retry_interval: float | None = None,
                 watch_period: float | None = None, clock: Clock = SYSTEM_CLOCK,
                 on_elected: Callable[[int], None] | None = None, on_deposed: Callable[[str], None] | None = None,
                 on_leader: Callable[[str | None], None] | None = None) -> None:
        require_pyetcd()
        key = leader_key(group, prefix=prefix)
        if not isinstance(candidate, str) or not candidate:
            raise ValueError(f"a candidate is a non-empty id or URI, not {candidate!r}")
        margin, refresh_interval, retry_interval, watch_period = _timing(
            ttl, margin, refresh_interval, retry_interval, watch_period, client.timeout)
        self.key, self.candidate, self.ttl = key, candidate, ttl
        self._client = client
        tenure = Tenure(clock=clock, margin=margin, refresh_interval=refresh_interval, retry_interval=retry_interval)
        self._campaign = _Campaign(_Ballot(client, key, candidate, ttl), tenure, clock, float(watch_period),
                                   on_elected, on_deposed, on_leader)
        self._changed, self._tenure = self._campaign.changed, tenure

    @property
    def leading(self) -> bool:
        """Whether this replica leads and its term is confirmed now (false from its deadline on)."""
        with self._changed:
            return self._tenure.valid()

    @property
    def revision(self) -> int | None:
        """The revision this replica created the leader key at, while :attr:`leading`; else None."""
        with self._changed:
            return self._campaign.revision if self._tenure.valid() else None

    @property
    def confirmed_until(self) -> float:
        """When (on the clock's ``monotonic()``) this replica's term stops being confirmed unless a
        keep-alive sent before then is answered; -inf when it holds none."""
        with self._changed:
            return self._tenure.deadline

    def leader(self) -> str | None:
        """The leader's id or URI as last seen (this replica's own while :attr:`leading`), or None:
        no leader, none known yet, or this replica's own term no longer confirmed."""
        with self._changed:
            return self._campaign.leader_now()

    def wait_until(self, predicate: Callable[[Election], bool], timeout: float) -> bool:
        """Block until ``predicate(self)`` holds, checked now and whenever the election's state changes
        (elected, confirmed, deposed, a leader learnt); whether it did within ``timeout`` real seconds.

        ``election.wait_until(lambda e: e.leader() is not None, 5.0)`` waits for the group to have a leader.
        """
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self), timeout)

    def transaction(self, *, compare: Sequence[Any] = (), success: Sequence[Any] = (),
                    failure: Sequence[Any] = ()) -> tuple[bool, list[ResponseOp]]:
        """Run a transaction guarded by this replica's leadership (see :func:`guarded_transaction`).

        Raises:
            LeadershipLost: this replica is not leading now (nothing is sent),
                or etcd refused the write (then the election checks its lease at once).
            pyetcd.Etcd3Exception, grpc.RpcError: as :func:`guarded_transaction`.
        """
        with self._changed:
            revision = self._campaign.revision
            if not self._tenure.valid() or revision is None:
                raise LeadershipLost(f"{self.candidate} does not lead {self.key} now: nothing was written")
        try:
            return guarded_transaction(self._client, self.key, revision, compare=compare, success=success,
                                       failure=failure)
        except LeadershipLost:
            with self._changed:
                self._campaign.refresh_now = True
                self._changed.notify_all()
            raise

    def start(self) -> Election:
        """Start campaigning, on a thread of its own; this election.

        Raises:
            RuntimeError: it was started before, or closed.
        """
        campaign = self._campaign
        with self._changed:
            if campaign.thread is not None or campaign.closing:
                raise RuntimeError("an Election starts once")
            campaign.thread = threading.Thread(target=campaign.run, name=f"election {self.key}", daemon=True)
        campaign.thread.start()
        return self

    def close(self) -> None:
        """Stop: a leader resigns (revokes its lease, so that another is elected at once) and is told
        ``on_deposed``. Does not close the client. Idempotent."""
        with self._changed:
            self._campaign.closing = True
            thread = self._campaign.thread
            self._changed.notify_all()
        self._campaign.ballot.close()
        if thread is not None and thread is not threading.current_thread():
            thread.join(JOIN_TIMEOUT)

    def __enter__(self) -> Election:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Election({self.key!r}, candidate={self.candidate!r}, leading={self.leading})"
