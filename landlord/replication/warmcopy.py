"""A follower's warm copy of its group's leases: :class:`WarmCopy`, so that a new leader serves at once.

A replica that does not lead keeps what the group's keys in etcd fold to
(:func:`~landlord.replication.etcdstore.fold`) in memory, up to date: it
reads them once, at one revision, then watches every key of the group from
the next revision on and applies each event as it comes (a grant or change,
a renewal-log chunk, a delete), each resource read (serpent) as it comes
(:class:`FoldedLeases`, no etcd). Elected, its new store takes the copy
(:meth:`WarmCopy.take`) instead of reading every lease from etcd again.

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

import logging
import math
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from Pyro5.serializers import SerpentSerializer

from ..clock import SYSTEM_CLOCK
from ..transport.backoff import OutageLog
from .election import etcd_errors
from .etcdstore import Chunk, Record, Warm, group_prefix, range_end, read_group, read_record, unpack_chunk

if TYPE_CHECKING:
    import pyetcd

__all__ = ["FoldedLeases", "WarmCopy", "CATCH_UP"]

log = logging.getLogger("landlord.warmcopy")

CATCH_UP = 2.0  # seconds a new leader waits for its copy to reach its term's revision before reading etcd
RETRY_PAUSE = 0.2  # seconds before a broken watch is opened again, or a failed read tried again
BROKEN_WATCHES = 3  # watches in a row that break with nothing applied before the copy is read afresh
JOIN_TIMEOUT = 10.0  # seconds close() waits for the copy's thread

_UNREADABLE = object()  # a resource serpent cannot read: its lease is kept (for its ended marks), never handed over


def _as_is(resource: Any) -> Any:
    return resource


class FoldedLeases:
    """What a group's keys fold to (as :func:`~landlord.replication.etcdstore.fold` folds them), kept up
    to date one etcd event at a time; no etcd, no lock (:class:`WarmCopy` holds one).

    Each lease is ``(revision, expiration, written, resource)``: the revision of its newest write (its
    key, or a log entry), what that wrote, and its resource as read. Malformed keys are logged (naming
    ``name``) and left out, as a load leaves them out.

    Args:
        root: the group's prefix, ``/<prefix>/<group>/`` (:func:`~landlord.replication.etcdstore.group_prefix`).
        name: how the log names the copy.
    """

    def __init__(self, root: str, *, name: str) -> None:
        self.name = name
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
             *, name: str) -> FoldedLeases:
        """The fold of a load (:func:`~landlord.replication.etcdstore.read_group`) at ``revision``."""
        folded = cls(root, name=name)
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
        first written, the log's chunks and the ended cookies whose keys are still there."""
        ended = self._ended
        live = [(cookie, expiration, written, resource)
                for cookie, (_, expiration, written, resource) in self._leases.items()
                if resource is not _UNREADABLE and cookie not in ended]
        return Warm(live, dict(self._chunks), set(ended), _as_is)

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

    def _drop_lease(self, cookie: str) -> None:
        self._leases.pop(cookie, None)
        self._ended.pop(cookie, None)

    def _put_chunk(self, key: str, chunk: Chunk, revision: int) -> None:
        self._chunks[key] = len(chunk.renewals) + len(chunk.ended)
        leases = self._leases
        for cookie, (expiration, written) in chunk.renewals.items():
            now = leases.get(cookie)
            if now is not None and revision > now[0]:  # the newest write wins, as in fold
                leases[cookie] = (revision, expiration, written, now[3])
        if chunk.ended:
            named = tuple(cookie for cookie in chunk.ended if cookie in leases)
            self._ended_chunks[key] = named
            for cookie in named:
                self._ended[cookie] = self._ended.get(cookie, 0) + 1

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


class WarmCopy:
    """A follower's warm copy of its group's leases, kept by a thread of its own (see the module's docstring).

    Args:
        client: the replica's etcd client (:meth:`close` does not close it).
        key: the group's election key, ``/<prefix>/<group>/leader``.
        catch_up: seconds :meth:`take` waits for the copy to reach the term's revision.

    Raises:
        ValueError: ``key`` is not an election key, or ``catch_up`` not positive and finite.
    """

    def __init__(self, client: pyetcd.MultiEndpointEtcd3Client, key: str, *, catch_up: float = CATCH_UP) -> None:
        if not 0 < catch_up < math.inf:
            raise ValueError(f"catch_up must be positive and finite, not {catch_up!r}")
        self._client, self.key, self.catch_up = client, key, float(catch_up)
        self._root = group_prefix(key)
        self._errors = etcd_errors()
        self._outage = OutageLog(log, f"etcd (warm copy of {self._root})")
        self.changed = threading.Condition()  # guards what follows; notified at each change
        self._folded: FoldedLeases | None = None  # the copy, while it follows
        self._following = True  # False once handed over, until resumed
        self._closing = False
        self._watching: Any = None  # the watch in progress, for take() and close() to cancel
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

    def take(self, revision: int) -> Warm | None:
        """The copy, once it has applied every event up to ``revision`` (the leader key's creation
        by this replica), waiting up to ``catch_up`` seconds; ``None`` if it has not by then, or
        holds none (it is reading the group: the store reads it as soon), or was handed over
        already. Either way the copy stops until :meth:`resume`."""
        deadline = SYSTEM_CLOCK.monotonic() + self.catch_up
        with self.changed:
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
                log.exception("%r: unexpected error reading the group; trying again", self)
                self._pause()
                continue
            self._outage.recovered()
            with self.changed:
                if not self._following or self._closing:
                    continue  # handed over (or closing) while it read
                self._folded = folded
                self.changed.notify_all()
            self._follow(folded)

    def _wait_to_follow(self) -> bool:
        with self.changed:
            self.changed.wait_for(lambda: self._closing or self._following)
            return not self._closing

    def _read(self) -> FoldedLeases:
        records, chunks, revision = read_group(self._client, self.key, repr(self))
        self.loads += 1
        folded = FoldedLeases.read(self._root, records, chunks, revision, name=repr(self))
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
        try:
            self._client.get(self.key)
        except self._errors as exc:
            log.debug("%r: etcd did not answer (%s)", self, exc)

    def _pause(self, folded: FoldedLeases | None = None) -> None:
        """Wait RETRY_PAUSE, or less if the copy closes or ``folded`` (if given) is handed over."""
        with self.changed:
            self.changed.wait_for(lambda: self._closing or not self._following
                                  or (folded is not None and self._folded is not folded), RETRY_PAUSE)

