"""A follower's warm copy of its group's leases: :class:`WarmCopy`, so that a new leader serves at once.

A replica that does not lead keeps what the group's keys in etcd fold to
(:func:`~landlord.replication.etcdstore.fold`) in memory, up to date: it
reads them once, at one revision, then watches every key of the group from
the next revision on and applies each event as it comes (a grant or change,
a renewal-log chunk, a delete), each resource read (serpent) as it comes
(:class:`FoldedLeases`, no etcd). Elected, its new store takes the copy
(:meth:`WarmCopy.take`) instead of reading every lease from etcd again.
Beside the fold it keeps the leases as the new leader's landlord will hold
them (:class:`ReadyTable`: a lease table on the landlord's clock), which
that landlord takes whole: at takeover no lease is built, loaded or filed.

Safety: the copy answers nothing; only a term's landlord does, fenced as
ever (:mod:`~landlord.replication.replicated`). It is handed over only once it
has applied every event up to the revision at which this replica created the
leader key. The watch covers the whole group, the leader key too, so to have
seen that key created is to have applied every earlier write; and every write
of an earlier term is earlier (guarded by that term's leader key, deleted
before this one could be created). A watch that breaks is opened again from
the revision after the last one applied (etcd sends every event from there,
or says it compacted them away); one whose revision etcd compacted makes the
copy read everything again, as does a watch that keeps breaking without
progress. A copy not caught up within ``catch_up`` seconds is not handed over:
the store reads etcd itself, as a replica without a copy does.

Once handed over the copy stops, until :meth:`WarmCopy.resume` (this
replica's term is over): then it reads the group afresh and follows again.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import math
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from Pyro5.serializers import SerpentSerializer

from ..clock import SYSTEM_CLOCK, Clock
from ..grantor.claims import NameClaim
from ..grantor.leasetable import LeaseTable
from ..grantor.manager import ENDED, Standby, unwrap_stored
from ..grantor.resource import LeasedResource
from ..transport.backoff import OutageLog
from .election import LeadershipLost, etcd_errors, pass_over_if_deadline
from .etcdstore import Chunk, Record, Warm, group_prefix, range_end, read_group, read_record, unpack_chunk

if TYPE_CHECKING:
    import pyetcd

__all__ = ["FoldedLeases", "ReadyTable", "WarmCopy", "CATCH_UP"]

log = logging.getLogger("landlord.warmcopy")

CATCH_UP = 2.0  # seconds a new leader waits for its copy to reach its term's revision before reading etcd
READ_WAIT = 120.0  # seconds a new leader waits at most for its copy's read of the group in progress
LEADING_POLL = 0.1  # seconds between looks at whether the term still lasts, while waiting for that read
RETRY_PAUSE = 0.2  # seconds before a broken watch is opened again, or a failed read tried again
BROKEN_WATCHES = 3  # watches in a row that break with nothing applied before the copy is read afresh
JOIN_TIMEOUT = 10.0  # seconds close() waits for the copy's thread
FREEZE_OVER = 100_000  # leases read at once past which what the read built is frozen out of the collector's scans

_UNREADABLE = object()  # a resource serpent cannot read: its lease is kept (for its ended marks), never handed over


def _as_is(resource: Any) -> Any:
    return resource


class ReadyTable:
    """The leases of a warm copy as a new leader's landlord holds them, kept ready beside the fold: a
    :class:`~landlord.grantor.leasetable.LeaseTable` of :class:`~landlord.grantor.resource.LeasedResource`,
    each resource as stored (a named claim loaded as one), each expiration on ``clock``'s monotonic
    time (what the lease had left when the event was applied, never more than it had when written),
    ``ENDED`` for a lease stored as ended. It frees nothing, writes nothing and answers nothing: a
    landlord that takes it (:meth:`standby`) does all that, as one that restored every lease.
    No lock: :class:`WarmCopy` holds one.

    Args:
        clock: the clock of the landlords that take it over.
        name: how the log names it.
    """

    def __init__(self, clock: Clock, *, name: str) -> None:
        self._clock, self.name = clock, name
        self.table = LeaseTable()
        self.known: dict[str, tuple[float, float]] = {}  # each lease readable, not ended: what the store's log knows
        self._cancelled: set[str] = set()
        self._named: dict[str, LeasedResource] = {}
        self._malformed: set[str] = set()  # cookies whose stored data a landlord could not restore

    def put(self, cookie: str, expiration: float, written: float, resource: Any) -> None:
        """Hold the lease ``cookie`` as now stored (a new one, or one written again)."""
        self.drop(cookie)
        self.known[cookie] = (expiration, written)
        try:
            leased, ended_by = self._leased(cookie, expiration, written, resource)
        except Exception as exc:  # a landlord restoring it would drop it: the handover leaves it to one
            log.warning("%s: lease %s cannot be restored (%s); a new leader restores from the copy", self.name,
                        cookie, exc)
            self._malformed.add(cookie)
            return
        self.table.add(leased)
        if ended_by == "on_cancel":
            self._cancelled.add(cookie)
        if isinstance(leased.resource, NameClaim):
            self._named[cookie] = leased

    def renewed(self, renewals: Iterable[tuple[str, float, float]]) -> None:
        """Take in renewals, ``(cookie, expiration, written)`` each, of leases held (others are ignored)."""
        now, wall = self._clock.monotonic(), self._clock.time()
        known, by_cookie, table = self.known, self.table.by_cookie, self.table
        for cookie, expiration, written in renewals:
            if cookie not in known:
                continue
            known[cookie] = (expiration, written)
            leased = by_cookie.get(cookie)
            if leased is not None and leased.expiration != ENDED:
                old = leased.expiration
                leased.expiration = _monotonic(expiration, written, now, wall)
                table.moved(leased, old)

    def drop(self, cookie: str) -> None:
        """Stop holding the lease ``cookie`` (deleted, or ended), unfreed."""
        if self.known.pop(cookie, None) is not None:
            self.table.remove(cookie)
            self._cancelled.discard(cookie)
            self._named.pop(cookie, None)
            self._malformed.discard(cookie)

    def standby(self, first_written: Iterable[str]) -> Standby | None:
        """The table for a landlord to take whole, its named leases in the order ``first_written``
        (every cookie's: the order a load restores them in); ``None`` if a lease in it could not be
        restored (the landlord restores them one by one, and drops that one as it would)."""
        if self._malformed:
            return None
        named = self._named
        in_order = [named[cookie] for cookie in first_written if cookie in named] if named else []
        return Standby(self.table, frozenset(self._cancelled), in_order)

    def _leased(self, cookie: str, expiration: float, written: float, resource: Any) -> tuple[LeasedResource, Any]:
        """The lease as a landlord restores it (:meth:`landlord.Landlord._restore`), and its end mark.

        Raises:
            ValueError: its stored data is malformed.
        """
        data = unwrap_stored(resource)
        now, wall = self._clock.monotonic(), self._clock.time()
        own = NameClaim.load(data.resource) if NameClaim.is_stored(data.resource) else data.resource
        leased = LeasedResource(cookie, _monotonic(expiration, written, now, wall) if data.ended_by is None
                                else ENDED, own)
        if data.attached or not math.isinf(data.deadline):
            extra = leased.extended()
            extra.attached = list(data.attached)
            extra.deadline = now + (data.deadline - wall)
        return leased, data.ended_by


@contextlib.contextmanager
def _collector_paused() -> Iterator[list[int]]:
    """No cyclic garbage collection while a read builds its objects (the caller appends how many leases
    it read); a read of more than FREEZE_OVER leases then freezes them out of the collector's scans.

    Why: a full collection scans every object; the read of a million leases would trigger a score
    of them, each a pause of a second or more holding the GIL, long enough for the election's
    keep-alives to go unconfirmed (its leader lost its term at every cold start). The leases are
    not cyclic: frozen, they are still freed when dropped. Process-wide (the collector is), so only
    for big reads; what else was alive then is frozen too, and freed as ever unless it ends in a cycle.
    """
    enabled = gc.isenabled()
    gc.disable()
    built: list[int] = []
    try:
        yield built
    finally:
        if enabled:
            gc.enable()
        if sum(built) > FREEZE_OVER:
            gc.freeze()


def _monotonic(expiration: float, written: float, now: float, wall: float) -> float:
    """A stored expiration (wall time) on the monotonic clock, ``now`` and ``wall`` being one moment on
    each: never more left than the lease had when written (the wall clock may have been set back)."""
    return expiration if math.isinf(expiration) else now + min(expiration - wall, expiration - written)


class FoldedLeases:
    """What a group's keys fold to (as :func:`~landlord.replication.etcdstore.fold` folds them), kept up
    to date one etcd event at a time; no etcd, no lock (:class:`WarmCopy` holds one).

    Each lease is ``(revision, expiration, written, resource)``: the revision of its newest write (its
    key, or a log entry), what that wrote, and its resource as read. Malformed keys are logged (naming
    ``name``) and left out, as a load leaves them out.

    With ``clock``, it also keeps the live leases ready for a new leader's landlord to take whole
    (:class:`ReadyTable`, on that clock), so that taking over builds nothing.

    Args:
        root: the group's prefix, ``/<prefix>/<group>/`` (:func:`~landlord.replication.etcdstore.group_prefix`).
        name: how the log names the copy.
        clock: the clock of the landlords that take the ready table over (``None``: keep none).
    """

    def __init__(self, root: str, *, name: str, clock: Clock | None = None) -> None:
        self.name = name
        self._ready = ReadyTable(clock, name=name) if clock is not None else None
        self.revision = 0  # every event up to this revision is applied
        self._leases_at = f"{root}leases/"
        self._leases_prefix, self._log_prefix = self._leases_at.encode(), f"{root}log/".encode()
        self._load = SerpentSerializer().loads
        self._leases: dict[str, tuple[int, float, float, Any]] = {}  # in the order first written
        self._chunks: dict[str, int] = {}  # the log's keys, with how many entries each holds
        self._ended_chunks: dict[str, tuple[str, ...]] = {}  # an ended chunk's cookies that had leases
        self._ended: dict[str, int] = {}  # a lease's cookie, with how many ended chunks name it

    @classmethod
    def read(cls, root: str, records: dict[str, Record], chunks: Sequence[tuple[int, str, Chunk]], revision: int,
             *, name: str, clock: Clock | None = None) -> FoldedLeases:
        """The fold of a load (:func:`~landlord.replication.etcdstore.read_group`) at ``revision``."""
        folded = cls(root, name=name, clock=clock)
        for cookie in sorted(records, key=lambda c: (records[c].created, c)):
            folded._put_lease(cookie, records[cookie])
        for chunk_revision, key, chunk in sorted(chunks, key=lambda found: found[0]):
            folded._put_chunk(key, chunk, chunk_revision)
        folded.revision = revision
        return folded

    def __len__(self) -> int:
        """How many leases are live (not ended), readable or not."""
        return len(self._leases) - len(self._ended)

    def apply(self, kv: Any, *, deleted: bool) -> None:
        """Take in one event: ``kv`` (an etcd ``KeyValue``: key, value, mod_revision, create_revision)
        written, or ``deleted``. Keys of the group that hold no lease or chunk change nothing."""
        key = bytes(kv.key)
        if key.startswith(self._leases_prefix):
            self._lease_event(kv, key, deleted)
        elif key.startswith(self._log_prefix):
            self._chunk_event(kv, key, deleted)
        self.revision = max(self.revision, kv.mod_revision)

    def warm(self) -> Warm:
        """What a new leader's store takes in: the live leases with readable resources, in the order
        first written, the log's chunks and the ended cookies whose keys are still there; and the
        ready table, if it keeps one (the copy must change no more once this is taken)."""
        ended, leases = self._ended, self._leases

        def live() -> list[tuple[str, float, float, Any]]:
            return [(cookie, expiration, written, resource)
                    for cookie, (_, expiration, written, resource) in leases.items()
                    if resource is not _UNREADABLE and cookie not in ended]
        ready = self._ready
        if ready is None:
            return Warm(live(), dict(self._chunks), set(ended), _as_is)
        return Warm(live, dict(self._chunks), set(ended), _as_is, standby=ready.standby(leases), known=ready.known)

    # -- events

    def _lease_event(self, kv: Any, key: bytes, deleted: bool) -> None:
        cookie = key[len(self._leases_prefix):].decode("utf-8", "replace")
        if deleted:
            self._drop_lease(cookie)
            return
        try:
            cookie, record = read_record(self._leases_at, kv)
        except ValueError as exc:
            log.warning("%s: skipped malformed key %r: %s", self.name, key, exc)
            self._drop_lease(cookie)  # as a load would: what it held is no lease now
            return
        self._put_lease(cookie, record)

    def _chunk_event(self, kv: Any, key: bytes, deleted: bool) -> None:
        name = key.decode("utf-8", "replace")
        self._drop_chunk(name)  # a chunk key is never written twice; if it were, the new value replaces it
        if deleted:
            return
        try:
            chunk = unpack_chunk(kv.value)
        except ValueError as exc:
            log.warning("%s: skipped malformed key %r: %s", self.name, key, exc)
            return
        self._put_chunk(name, chunk, kv.mod_revision)

    def _put_lease(self, cookie: str, record: Record) -> None:
        try:
            resource = self._load(record.resource)
        except Exception as exc:
            log.warning("%s: lease %s: its resource cannot be read (%s); it will be skipped", self.name, cookie, exc)
            resource = _UNREADABLE
        self._leases[cookie] = (record.revision, record.expiration, record.written, resource)
        self._ready_again(cookie)

    def _ready_again(self, cookie: str) -> None:
        """Hold ``cookie`` in the ready table as the fold now has it: live and readable, or not at all."""
        ready = self._ready
        if ready is None:
            return
        lease = self._leases.get(cookie)
        if lease is None or lease[3] is _UNREADABLE or cookie in self._ended:
            ready.drop(cookie)
        else:
            ready.put(cookie, lease[1], lease[2], lease[3])

    def _drop_lease(self, cookie: str) -> None:
        self._leases.pop(cookie, None)
        self._ended.pop(cookie, None)
        if self._ready is not None:
            self._ready.drop(cookie)

    def _put_chunk(self, key: str, chunk: Chunk, revision: int) -> None:
        self._chunks[key] = len(chunk.renewals) + len(chunk.ended)
        leases = self._leases
        renewed = []
        for cookie, (expiration, written) in chunk.renewals.items():
            now = leases.get(cookie)
            if now is not None and revision > now[0]:  # the newest write wins, as in fold
                leases[cookie] = (revision, expiration, written, now[3])
                renewed.append((cookie, expiration, written))
        if self._ready is not None and renewed:
            self._ready.renewed(renewed)
        if chunk.ended:
            named = tuple(cookie for cookie in chunk.ended if cookie in leases)
            self._ended_chunks[key] = named
            for cookie in named:
                self._ended[cookie] = self._ended.get(cookie, 0) + 1
                if self._ready is not None:
                    self._ready.drop(cookie)

    def _drop_chunk(self, key: str) -> None:
        """A chunk deleted (by a compaction of the log, which first wrote what it held anew): its
        renewals stay as applied, its ended marks go (their leases' keys went before)."""
        self._chunks.pop(key, None)
        for cookie in self._ended_chunks.pop(key, ()):
            marks = self._ended.get(cookie)
            if marks is not None:
                if marks > 1:
                    self._ended[cookie] = marks - 1
                else:
                    del self._ended[cookie]
                    self._ready_again(cookie)


class WarmCopy:
    """A follower's warm copy of its group's leases, kept by a thread of its own (see the module's docstring).

    Args:
        client: the replica's etcd client (:meth:`close` does not close it).
        key: the group's election key, ``/<prefix>/<group>/leader``.
        catch_up: seconds :meth:`take` waits for the copy to reach the term's revision.
        clock: the clock of the landlords that take the copy over: the copy keeps its leases ready
            for them on it (:class:`ReadyTable`); ``None``: it keeps none (each is restored then).

    Raises:
        ValueError: ``key`` is not an election key, or ``catch_up`` not positive and finite.
    """

    def __init__(self, client: pyetcd.MultiEndpointEtcd3Client, key: str, *, catch_up: float = CATCH_UP,
                 clock: Clock | None = SYSTEM_CLOCK) -> None:
        if not 0 < catch_up < math.inf:
            raise ValueError(f"catch_up must be positive and finite, not {catch_up!r}")
        self._client, self.key, self.catch_up, self._clock = client, key, float(catch_up), clock
        self._root = group_prefix(key)
        self._errors = etcd_errors()
        self._outage = OutageLog(log, f"etcd (warm copy of {self._root})")
        self.changed = threading.Condition()  # guards what follows; notified at each change
        self._folded: FoldedLeases | None = None  # the copy, while it follows
        self._following = True  # False once handed over, until resumed
        self._closing = False
        self._watching: Any = None  # the watch in progress, for take() and close() to cancel
        self._reading = False  # the copy's thread is reading the group (the first time, or afresh), or trying to
        self.loads = 0  # how many times the group was read (the first, and each reload)
        self._thread = threading.Thread(target=self._run, name=f"warm copy {self._root}", daemon=True)

    def __repr__(self) -> str:
        return f"WarmCopy({self._root!r})"

    def start(self) -> WarmCopy:
        """Read the group and follow it, on the copy's thread; this copy."""
        self._thread.start()
        return self

    @property
    def revision(self) -> int | None:
        """The revision up to which the copy has applied every event (``None``: no copy now)."""
        with self.changed:
            return self._folded.revision if self._folded is not None else None

    def __len__(self) -> int:
        """How many live leases the copy holds (0 when it holds none)."""
        with self.changed:
            return len(self._folded) if self._folded is not None else 0

    def take(self, revision: int, leading: Callable[[], bool] | None = None) -> Warm | None:
        """The copy, once it has applied every event up to ``revision`` (the leader key's creation
        by this replica), waiting up to ``catch_up`` seconds; ``None`` if it has not by then, or
        holds none, or was handed over already. Either way the copy stops until :meth:`resume`.
        A read of the group in progress is waited for first (up to READ_WAIT seconds, and while
        ``leading()`` says the term lasts): a store that read etcd meanwhile would read the same,
        twice the work in one process.

        Raises:
            LeadershipLost: the term ended while the copy was still reading: the copy reads on, for
                the next term (stopped, it would read everything again from the start).
        """
        with self.changed:
            self._wait_read(leading)
            if self._reading and leading is not None and not leading():
                raise LeadershipLost(f"{self!r}: the term ended while the copy read the group; it reads on")
            deadline = SYSTEM_CLOCK.monotonic() + self.catch_up
            while self._following and not self._closing and self._folded is not None \
                    and not self._caught_up(revision):
                left = deadline - SYSTEM_CLOCK.monotonic()
                if left <= 0:
                    break
                self.changed.wait(left)
            folded = self._folded if self._following and self._caught_up(revision) else None
            self._following, self._folded, call = False, None, self._watching
            self.changed.notify_all()
        if call is not None:
            call.cancel()
        if folded is None:
            log.info("%r: not caught up with revision %d; the new leader reads etcd", self, revision)
            return None
        return folded.warm()

    def _wait_read(self, leading: Callable[[], bool] | None) -> None:
        """Wait for a read in progress (the caller holds :attr:`changed`), as :meth:`take` says."""
        deadline = SYSTEM_CLOCK.monotonic() + READ_WAIT
        while self._reading and self._following and not self._closing and (leading is None or leading()):
            left = deadline - SYSTEM_CLOCK.monotonic()
            if left <= 0:
                return
            self.changed.wait(min(left, LEADING_POLL))  # the term's end notifies nothing here: look again

    def resume(self) -> None:
        """Follow the group again, from a fresh read (after this replica's term); nothing if it follows."""
        with self.changed:
            if not self._following:
                self._following = True
                self.changed.notify_all()

    def close(self) -> None:
        """Stop following, for good (idempotent)."""
        with self.changed:
            self._closing, self._folded, call = True, None, self._watching
            self.changed.notify_all()
        if call is not None:
            call.cancel()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(JOIN_TIMEOUT)

    def _caught_up(self, revision: int) -> bool:
        return self._folded is not None and self._folded.revision >= revision

    # -- the thread

    def _run(self) -> None:
        while self._wait_to_follow():
            try:
                folded = self._read()
            except self._errors as exc:
                self._outage.failed(exc, "read the group's leases from")
                self._pause()
                continue
            except Exception:  # a bug: the copy must not die of it (a new leader reads etcd meanwhile)
                self._read_over()  # a new leader waits for it no more: its store reads etcd
                log.exception("%r: unexpected error reading the group; trying again", self)
                self._pause()
                continue
            self._outage.recovered()
            with self.changed:
                self._reading = False
                self.changed.notify_all()
                if not self._following or self._closing:
                    continue  # handed over (or closing) while it read
                self._folded = folded
                self.changed.notify_all()
            self._follow(folded)

    def _wait_to_follow(self) -> bool:
        """Wait until the copy is to follow (it reads the group then, trying again while etcd does not
        answer: :attr:`_reading`); whether it is."""
        with self.changed:
            self.changed.wait_for(lambda: self._closing or self._following)
            self._reading = not self._closing
            return not self._closing

    def _read_over(self) -> None:
        """The read failed of a bug: a new leader waits for it no more (its store reads etcd)."""
        with self.changed:
            self._reading = False
            self.changed.notify_all()

    def _read(self) -> FoldedLeases:
        with _collector_paused() as built:
            records, chunks, revision = read_group(self._client, self.key, repr(self))
            self.loads += 1
            folded = FoldedLeases.read(self._root, records, chunks, revision, name=repr(self), clock=self._clock)
            built.append(len(records))
        log.info("%r: %d lease(s) read at revision %d; following", self, len(folded), revision)
        return folded

    def _follow(self, folded: FoldedLeases) -> None:
        """Watch the group from the revision after ``folded``'s, applying what comes, until the copy
        is handed over or closed (done), or must be read again (compacted, or broken too often)."""
        broken = 0
        while broken < BROKEN_WATCHES:
            before = folded.revision
            outcome = self._watch(folded)
            if outcome != "broken":
                if outcome == "compacted":
                    log.info("%r: etcd compacted revision %d away; reading the group again", self, before + 1)
                return
            broken = 0 if folded.revision > before else broken + 1
            self._pause(folded)
            self._nudge()
        log.warning("%r: the watch broke %d times without progress; reading the group again", self, broken)

    def _watch(self, folded: FoldedLeases) -> str:
        """One watch from ``folded.revision + 1``: ``"stopped"`` (handed over or closing),
        ``"compacted"`` or ``"broken"``."""
        from pyetcd import etcdrpc
        request = etcdrpc.WatchRequest(create_request=etcdrpc.WatchCreateRequest(
            key=self._root.encode(), range_end=range_end(self._root), start_revision=folded.revision + 1))
        sent_to = self._client.endpoint_in_use  # noted before: the client is the replica's, shared
        try:
            call = etcdrpc.WatchStub(self._client.channel).Watch(iter([request]))
            with self.changed:
                self._watching = call
                stopped = not self._holds(folded)
            if stopped:
                call.cancel()
            for response in call:
                if response.canceled:
                    return "compacted" if response.compact_revision else "broken"
                if response.events and not self._apply(folded, response.events):
                    return "stopped"
        except self._errors as exc:
            pass_over_if_deadline(self._client, exc, sent_to)  # the nudge then moves to another member
            log.debug("%r: the watch ended: %s", self, exc)
        finally:
            with self.changed:
                self._watching = None
                stopped = not self._holds(folded)
        return "stopped" if stopped else "broken"

    def _apply(self, folded: FoldedLeases, events: Iterable[Any]) -> bool:
        """Apply a watch response's events, unless the copy was handed over meanwhile; whether it was not."""
        with self.changed:
            if not self._holds(folded):
                return False
            for event in events:
                folded.apply(event.kv, deleted=event.type == event.DELETE)
            self.changed.notify_all()
            return True

    def _holds(self, folded: FoldedLeases) -> bool:
        """Whether ``folded`` is still the copy this one follows (not handed over, even if resumed since)."""
        return not self._closing and self._following and self._folded is folded

    def _nudge(self) -> None:
        """A call through the client, which moves it off a failed member before the watch is opened again."""
        sent_to = self._client.endpoint_in_use  # noted before: the client is the replica's, shared
        try:
            self._client.get(self.key)
        except self._errors as exc:
            pass_over_if_deadline(self._client, exc, sent_to)  # etcd's own deadline: pyetcd would stay there
            log.debug("%r: etcd did not answer (%s)", self, exc)

    def _pause(self, folded: FoldedLeases | None = None) -> None:
        """Wait RETRY_PAUSE, or less if the copy closes or ``folded`` (if given) is handed over."""
        with self.changed:
            self.changed.wait_for(lambda: self._closing or not self._following
                                  or (folded is not None and self._folded is not folded), RETRY_PAUSE)

