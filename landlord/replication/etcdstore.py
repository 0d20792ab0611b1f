"""A replica group's leases in etcd: :class:`EtcdLeaseStore`, the store of a replicated landlord.

It has :class:`~landlord.grantor.store.LeaseStore`'s interface (a
:class:`~landlord.grantor.store.Store`), so ``Landlord(store=EtcdLeaseStore(...))``
and its lease manager use it unchanged; what it keeps is the group's, in
etcd, beside the group's election key ``/<prefix>/<group>/leader``::

    /<prefix>/<group>/landlord_id          the group's landlord id (UTF-8)
    /<prefix>/<group>/settings/<key>       a landlord's setting (serpent)
    /<prefix>/<group>/leases/<cookie>      a lease: its expiration and written time, and its resource
    /<prefix>/<group>/log/<writer>-<seq>   a chunk of the renewal log (see below)

Writes. Every grant, change, end, setting and claim is ONE etcd transaction,
done before the call returns, and guarded by the term the store was made in:
sent only while its election still leads in that term (fencing: an
unconfirmed leader sends nothing), and applied by etcd only while the
election key is still the one created at that term's revision
(:func:`~landlord.replication.election.guarded_transaction`). A refused write raises
:class:`~landlord.replication.election.LeadershipLost` and changes nothing here.

Renewals are not written one by one. :meth:`EtcdLeaseStore.renew` records
each lease's new expiration in memory; a committer thread writes what was
recorded at most ``commit_interval`` (0.1 s) after the first of it, as a
*renewal log*: chunks of at most 256 KiB, each one etcd key holding many
``(cookie, expiration, written)`` entries packed (39 bytes each for a
landlord's 22-character cookies), up to 1 MiB of chunks per transaction
(etcd refuses requests over 1.5 MiB and transactions of more than 128
operations by default). A burst of 100,000 renewals is four transactions.
A failed commit (etcd unreachable, leadership lost) is logged once per
outage and its renewals are kept for the next attempt, an interval later,
while they are still worth writing (their expiration has not passed).

Ends. A delete of up to 127 leases deletes their keys in one transaction. A
larger one (the reaper frees up to 1,000 at a time) writes their cookies as
one *ended* chunk in the log instead: still one transaction, which a delete
op per key could not be. An ended cookie is ended for good: cookies are
never reused, so no later renewal entry brings it back.

Loading (:meth:`EtcdLeaseStore.leases`) reads the leases and the log at one
etcd revision, in pages sized to stay well under gRPC's 4 MiB answer, and
folds them: for each lease, the newest of its own key and the log's entries
for it (newest by etcd's ``mod_revision``, which orders every write of the
group) gives its expiration; leases with an ended entry are left out. A
lease's time left is counted from that wall-clock expiration, never more
than it had when written (as LeaseStore does): a new leader gives each lease
what it had left, less at most the commit interval plus the clocks' skew.

Compaction. The log grows by one entry per renewal. When it holds more than
twice as many entries as there are leases (plus 10,000), the committer
rewrites it: every lease's latest expiration as fresh chunks, then deletes
the keys of ended leases, then the old chunks. Each step leaves a log that
folds to the same leases, so a compaction cut short (leadership lost, etcd
gone) loses nothing; writes are at most doubled and a load reads at most
about three entries per lease.

Malformed data under the group's prefix (a value not of this format, a
resource serpent cannot read, a landlord id that is not text) is logged and
skipped, never raised; it is not deleted either (it may be someone else's).
"""

from __future__ import annotations

import logging
import math
import struct
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

from Pyro5.serializers import SerpentSerializer

from ..clock import SYSTEM_CLOCK, Clock
from ..grantor.manager import Standby
from ..grantor.store import StoredLease
from ..transport.backoff import OutageLog
from .election import (
    LeadershipLost,
    etcd_deadline,
    etcd_errors,
    guarded_transaction,
    pass_over_if_deadline,
    require_pyetcd,
)

if TYPE_CHECKING:
    import pyetcd
    from pyetcd.etcdrpc import RangeResponse, ResponseOp

__all__ = [
    "Leadership", "EtcdLeaseStore", "Record", "Chunk", "Folded", "Warm", "WarmSource", "pack_record",
    "unpack_record", "read_record", "read_group", "group_prefix", "range_end", "pack_renewals", "pack_ended",
    "unpack_chunk", "fold", "etcd_deadline",
]

log = logging.getLogger("landlord.etcdstore")  # its name before it moved into replication/

T = TypeVar("T")

CHUNK_BYTES = 256 * 1024  # one renewal-log key at most
TXN_BYTES = 1024 * 1024  # the values of one transaction at most (etcd's default request limit: 1.5 MiB)
MAX_OPS = 127  # etcd's default --max-txn-ops is 128; the guard's nesting takes one
PAGE_BYTES = 2 * 1024 * 1024  # a read page's aim (gRPC refuses answers over 4 MiB by default)
FIRST_PAGE = 1000  # keys in the first page of a read; later pages are sized by what came
MAX_PAGE = 20_000
COMPACT_RATIO = 2  # compact when the log holds more than this many entries per lease...
COMPACT_FLOOR = 10_000  # ...plus this many
LOAD_ATTEMPTS = 3  # a load whose revision etcd compacted away meanwhile starts over
PAGE_FAILURES = 6  # pages in a row a read asks again for fewer keys (too big, or timed out) before it fails
PAGE_TIMEOUT = 10.0  # seconds one page of a read of many keys may take (a busy etcd: 0.3 s, the client's, is short)
JOIN_TIMEOUT = 10.0  # seconds close() waits for the committer's thread
RETRY_FOR = 2.0  # real seconds a call is sent again when its etcd member fails (etcd electing a leader)
RETRY_PAUSE = 0.05  # seconds between attempts when pyetcd passes over every member for now
MAX_ID = 256  # characters of a landlord id

RECORD_MAGIC = b"LLL1"
RENEWALS_MAGIC = b"LLR1"
ENDED_MAGIC = b"LLD1"
_TIMES = struct.Struct("<dd")
_COOKIE_BYTES = 255  # a cookie's length is one byte in the log


class Leadership(Protocol):
    """What the store needs of its replica's leadership; :class:`~landlord.replication.election.Election` is one.

    ``key`` is the group's election key (``/<prefix>/<group>/leader``): the
    store keeps its keys beside it. ``revision`` is the revision this replica
    created it at while it leads with its term confirmed, else ``None``.
    """

    @property
    def key(self) -> str: ...

    @property
    def revision(self) -> int | None: ...


# -- the format, pure ----------------------------------------------------------------------------


class Record(NamedTuple):
    """A lease's own key as read: its etcd revisions, times and serpent-written resource."""

    revision: int  # mod_revision: when it was last written
    created: int  # create_revision: when it was first written (the load's order)
    expiration: float
    written: float
    resource: bytes


@dataclass(frozen=True)
class Chunk:
    """One key of the renewal log: new expirations, ``cookie -> (expiration, written)``, or ended cookies."""

    renewals: Mapping[str, tuple[float, float]]
    ended: frozenset[str]


class Warm:
    """The group's leases as a new leader takes them in: each live lease's ``(cookie, expiration,
    written, resource data)`` in the order first written (:attr:`leases`), the log's chunk keys with
    how many entries each holds, the ended cookies whose keys are still there, and how to read a
    resource's data (serpent's ``loads`` for what etcd holds; as it is for a warm copy's, read as it
    came). A warm copy's also has them ready for a landlord to take whole (``standby``, with
    ``known``: each lease's expiration and written time, as a load finds them).

    Args:
        leases: the list, or what makes it when first asked (a warm copy's: not made at all when the
            standby is taken).
        chunks, ended, load: as above.
        standby, known: a warm copy's ready table (``None``: none), and what the store's log knows.
    """

    __slots__ = ("_leases", "chunks", "ended", "load", "standby", "known")

    def __init__(self, leases: list[tuple[str, float, float, Any]] | Callable[[], list[tuple[str, float, float, Any]]],
                 chunks: dict[str, int], ended: set[str], load: Callable[[Any], Any], *,
                 standby: Standby | None = None, known: dict[str, tuple[float, float]] | None = None) -> None:
        self._leases = leases
        self.chunks, self.ended, self.load, self.standby, self.known = chunks, ended, load, standby, known

    @property
    def leases(self) -> list[tuple[str, float, float, Any]]:
        """Each live lease's ``(cookie, expiration, written, resource data)``, in the order first written."""
        if callable(self._leases):
            self._leases = self._leases()
        return self._leases


class WarmSource(Protocol):
    """Where a new leader's store may take the group's leases from instead of reading etcd: a
    follower's warm copy (:class:`~landlord.replication.warmcopy.WarmCopy`)."""

    def take(self, revision: int, leading: Callable[[], bool] | None = None) -> Warm | None:
        """The leases as they were when the leader key was created at ``revision`` (every write of
        an earlier term applied), handed over once; ``None``: not to be had, read etcd. Waits no
        longer once ``leading()`` says the term is over."""


@dataclass(frozen=True)
class Folded:
    """What the leases and the log come to: each live lease's ``(cookie, expiration, written, resource)``
    in the order first written, and the ended cookies whose keys are still there."""

    leases: list[tuple[str, float, float, bytes]]
    ended: set[str]


def _check_times(expiration: float, written: float) -> None:
    if math.isnan(expiration) or expiration == -math.inf or not math.isfinite(written):
        raise ValueError(f"not an expiration and a written time: {expiration!r}, {written!r}")


def _cookie_bytes(cookie: str) -> bytes:
    if not isinstance(cookie, str):
        raise TypeError(f"a cookie is a str, not {type(cookie).__name__}")
    data = cookie.encode()
    if not 0 < len(data) <= _COOKIE_BYTES:
        raise ValueError(f"a cookie is 1 to {_COOKIE_BYTES} bytes of UTF-8, not {cookie!r:.80}")
    return data


def pack_record(expiration: float, written: float, resource: bytes) -> bytes:
    """A lease key's value.

    Raises:
        ValueError: ``expiration`` NaN or -inf, or ``written`` not finite.
    """
    _check_times(expiration, written)
    return RECORD_MAGIC + _TIMES.pack(expiration, written) + resource


def unpack_record(data: bytes) -> tuple[float, float, bytes]:
    """``(expiration, written, resource)`` back from :func:`pack_record`'s value.

    Raises:
        ValueError: not such a value.
    """
    if not data.startswith(RECORD_MAGIC) or len(data) < len(RECORD_MAGIC) + _TIMES.size:
        raise ValueError("not a lease record")
    expiration, written = _TIMES.unpack_from(data, len(RECORD_MAGIC))
    _check_times(expiration, written)
    return expiration, written, data[len(RECORD_MAGIC) + _TIMES.size:]


def _pack(magic: bytes, items: Iterable[tuple[bytes, bytes]], limit: int) -> list[tuple[bytes, int]]:
    """Encoded entries (a cookie, and what follows it) in chunks of at most ``limit`` bytes: each
    chunk's value and how many entries it holds, in order."""
    chunks: list[tuple[bytes, int]] = []
    parts, size = [magic], len(magic)
    for cookie, rest in items:
        entry = bytes((len(cookie),)) + cookie + rest
        if size + len(entry) > limit and len(parts) > 1:
            chunks.append((b"".join(parts), len(parts) - 1))
            parts, size = [magic], len(magic)
        parts.append(entry)
        size += len(entry)
    if len(parts) > 1:
        chunks.append((b"".join(parts), len(parts) - 1))
    return chunks


def pack_renewals(entries: Iterable[tuple[str, float, float]], *,
                  limit: int = CHUNK_BYTES) -> list[tuple[bytes, int]]:
    """``(cookie, expiration, written)`` entries as renewal-log chunks of at most ``limit`` bytes:
    each chunk's value and how many entries it holds, entries in order.

    Raises:
        TypeError, ValueError: a cookie not 1 to 255 bytes of text, or times :func:`pack_record` refuses.
    """
    def encoded() -> Iterable[tuple[bytes, bytes]]:
        for cookie, expiration, written in entries:
            _check_times(expiration, written)
            yield _cookie_bytes(cookie), _TIMES.pack(expiration, written)
    return _pack(RENEWALS_MAGIC, encoded(), limit)


def pack_ended(cookies: Iterable[str], *, limit: int = CHUNK_BYTES) -> list[tuple[bytes, int]]:
    """Ended cookies as log chunks of at most ``limit`` bytes (as :func:`pack_renewals`).

    Raises:
        TypeError, ValueError: a cookie not 1 to 255 bytes of text.
    """
    return _pack(ENDED_MAGIC, ((_cookie_bytes(cookie), b"") for cookie in cookies), limit)


def unpack_chunk(data: bytes) -> Chunk:
    """A renewal-log chunk back from its value.

    Raises:
        ValueError: not a chunk (unknown kind, cut short, bad text or times).
    """
    magic = bytes(data[:len(RENEWALS_MAGIC)])
    if magic not in (RENEWALS_MAGIC, ENDED_MAGIC):
        raise ValueError("not a renewal-log chunk")
    renewing = magic == RENEWALS_MAGIC
    tail = _TIMES.size if renewing else 0
    renewals: dict[str, tuple[float, float]] = {}
    ended: set[str] = set()
    view, at, end = memoryview(data), len(magic), len(data)
    try:
        while at < end:
            size = view[at]
            start, at = at + 1, at + 1 + size + tail
            if size == 0 or at > end:
                raise ValueError("a renewal-log chunk cut short")
            cookie = str(view[start:start + size], "utf-8")
            if renewing:
                times = _TIMES.unpack_from(view, start + size)
                _check_times(*times)
                renewals[cookie] = times
            else:
                ended.add(cookie)
    except UnicodeDecodeError as exc:
        raise ValueError(f"a cookie in a renewal-log chunk is not text: {exc}") from None
    return Chunk(renewals, frozenset(ended))


def fold(records: Mapping[str, Record], chunks: Iterable[tuple[int, Chunk]]) -> Folded:
    """The leases that ``records`` (by cookie) and the log's ``chunks`` (each with its etcd
    mod_revision) come to: each lease's expiration is its newest write's, by revision; a lease with
    an ended entry anywhere is gone; a log entry for a cookie with no record is ignored."""
    latest = {cookie: (record.revision, record.expiration, record.written) for cookie, record in records.items()}
    ended: set[str] = set()
    for revision, chunk in chunks:
        if chunk.ended:
            ended.update(cookie for cookie in chunk.ended if cookie in records)
        for cookie, (expiration, written) in chunk.renewals.items():
            now = latest.get(cookie)
            if now is not None and revision > now[0]:
                latest[cookie] = (revision, expiration, written)
    live = sorted((cookie for cookie in records if cookie not in ended), key=lambda c: (records[c].created, c))
    return Folded([(cookie, latest[cookie][1], latest[cookie][2], records[cookie].resource) for cookie in live],
                  ended)


# -- where the group's keys are ----------------------------------------------------------------------


class _Keys:
    """The store's keys, beside the election key ``/<prefix>/<group>/leader``."""

    def __init__(self, election_key: str) -> None:
        if not isinstance(election_key, str) or not election_key.startswith("/") \
                or not election_key.endswith("/leader") or election_key == "/leader":
            raise ValueError(f"not an election key /<prefix>/<group>/leader: {election_key!r}")
        self.root = election_key[:-len("leader")]
        self.landlord_id = f"{self.root}landlord_id"
        self.leases = f"{self.root}leases/"
        self.log = f"{self.root}log/"

    def lease(self, cookie: str) -> str:
        return f"{self.leases}{cookie}"

    def setting(self, key: str) -> str:
        return f"{self.root}settings/{key}"


def _range_end(prefix: str) -> bytes:
    """The end of the key range of everything under ``prefix`` (which ends in '/')."""
    return prefix[:-1].encode() + b"0"  # the byte after '/'


def _status(exc: BaseException) -> str:
    """The gRPC status code's name of a failed call ('' if it carries none)."""
    code = getattr(exc, "code", None)
    value = code() if callable(code) else None
    return str(getattr(value, "name", ""))


def _brief(exc: BaseException) -> str:
    """A failed call's error in one line (a bare gRPC error's text spans several)."""
    details = getattr(exc, "details", None)
    return f"{_status(exc)}: {details()}" if _status(exc) and callable(details) else str(exc)


def _groups(chunks: Sequence[tuple[bytes, int]]) -> list[list[tuple[bytes, int]]]:
    """Chunks in transactions of at most TXN_BYTES of values and MAX_OPS operations."""
    groups: list[list[tuple[bytes, int]]] = []
    size = 0
    for chunk in chunks:
        if not groups or size + len(chunk[0]) > TXN_BYTES or len(groups[-1]) >= MAX_OPS:
            groups.append([])
            size = 0
        groups[-1].append(chunk)
        size += len(chunk[0])
    return groups


def _valid_cookie(cookie: object) -> bool:
    """Whether ``cookie`` could be a stored lease's (a put would take it); cheap for usual cookies."""
    if isinstance(cookie, str) and 0 < len(cookie) <= _COOKIE_BYTES and cookie.isascii():  # a byte each
        return True
    try:
        _cookie_bytes(cookie)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return True


def _landlord_id(value: bytes) -> str:
    """A stored landlord id back from its value.

    Raises:
        ValueError: not 1 to MAX_ID printable characters of UTF-8.
    """
    text = value.decode("utf-8")
    if not 0 < len(text) <= MAX_ID or not text.isprintable():
        raise ValueError(f"a landlord id is 1 to {MAX_ID} printable characters, not {text!r:.80}")
    return text




# -- calls to etcd -------------------------------------------------------------------------------


class _Calls:
    """The store's calls to etcd; its writes guarded by one term of the leadership.

    A write is sent only while ``leadership.revision`` is still ``term`` (the
    term is confirmed: fencing), in a transaction etcd applies only while the
    election key is still the one created at ``term``
    (:func:`~landlord.replication.election.guarded_transaction`): never in a later term,
    whose leader may have changed what this store knew.

    A call that fails because its etcd member did (refused, timed out, or
    answered that its own deadline passed: then the client moves to another
    member) is sent again, for up to RETRY_FOR real seconds: while etcd elects
    a leader of its own every member fails for a moment. A write is retried
    only while its term lasts. Safe for writes too: every write the store
    makes is idempotent (the same values to the same keys), so one applied
    whose answer was lost may be applied again.
    """

    def __init__(self, client: pyetcd.MultiEndpointEtcd3Client, leadership: Leadership, key: str,
                 term: int) -> None:
        import pyetcd
        self.client, self.leadership, self.key, self.term = client, leadership, key, term
        self.tx = client.transactions
        self.errors = etcd_errors()
        self._none_left = pyetcd.exceptions.NoServerAvailableError  # pyetcd passes over every member for now
        self._retry = (pyetcd.exceptions.ConnectionFailedError, pyetcd.exceptions.ConnectionTimeoutError,
                       pyetcd.exceptions.InternalServerError, self._none_left)

    def _call(self, call: Callable[[], T]) -> T:
        deadline = SYSTEM_CLOCK.monotonic() + RETRY_FOR  # real time, as the client's own timeouts
        while True:
            sent_to = self.client.endpoint_in_use  # the client is shared: another thread's failure may move it
            try:
                return call()
            except self.errors as exc:
                if not self._worth_sending_again(exc, sent_to) or SYSTEM_CLOCK.monotonic() >= deadline:
                    raise
                log.debug("an etcd call failed (%s); sending it again", _brief(exc))
                if isinstance(exc, self._none_left):
                    time.sleep(RETRY_PAUSE)

    def _worth_sending_again(self, exc: BaseException, sent_to: Any = None) -> bool:
        """Whether a call that failed with ``exc`` failed for its member's sake (refused, timed out,
        no member to ask for now) rather than for its own; a member whose own deadline answered it
        (``sent_to``, the one it was sent to) is passed over for now, as pyetcd passes over one whose
        deadline it saw first."""
        return isinstance(exc, self._retry) or pass_over_if_deadline(self.client, exc, sent_to)

    def write(self, *, compare: Sequence[Any] = (), success: Sequence[Any] = (),
              failure: Sequence[Any] = ()) -> tuple[bool, list[ResponseOp]]:
        """One transaction guarded by the store's term.

        Raises:
            LeadershipLost: the term is over or unconfirmed (nothing was sent), or etcd refused it.
            pyetcd.Etcd3Exception, grpc.RpcError: no member answered; it may have been applied.
        """
        def attempt() -> tuple[bool, list[ResponseOp]]:
            if self.leadership.revision != self.term:
                raise LeadershipLost(f"the term begun at revision {self.term} of {self.key} is over or "
                                     "unconfirmed: nothing was written")
            return guarded_transaction(self.client, self.key, self.term, compare=compare, success=success,
                                       failure=failure)
        return self._call(attempt)

    def get(self, key: str) -> bytes | None:
        return self._call(lambda: self.client.get(key))[0]

    def range(self, start: bytes, end: bytes, *, limit: int = 0, revision: int = 0,
              count_only: bool = False) -> RangeResponse:
        return self._call(lambda: self.client.get_range_response(start, end, limit=limit, revision=revision,
                                                                 count_only=count_only))

    def page(self, start: bytes, end: bytes, *, limit: int, revision: int) -> RangeResponse:
        """One page of a read of many keys, given PAGE_TIMEOUT rather than the client's timeout (kept
        short for the election's sake: a big page on a busy etcd outlasts it), sent once: a failed
        page is the reader's to ask again (smaller)."""
        from pyetcd import etcdrpc
        request = etcdrpc.RangeRequest(key=start, range_end=end, limit=limit, revision=revision)
        answer: RangeResponse = etcdrpc.KVStub(self.client.channel).Range(request, PAGE_TIMEOUT)
        return answer


# -- the renewal log and its committer ---------------------------------------------------------------


class _RenewalLog:
    """The renewal log's state, and the committer thread that writes it.

    Its fields are guarded by :attr:`changed`: the renewals not yet written
    (:attr:`pending`), every stored lease's latest expiration and written time
    (:attr:`known`: what a compaction rewrites), the log's chunk keys with how
    many entries each holds (:attr:`chunks`), and the ended cookies whose lease
    keys are still there (:attr:`ended`). Commits, compactions and loads hold
    :attr:`io`, one at a time; the store's own writes do not.
    """

    def __init__(self, keys: _Keys, calls: _Calls, clock: Clock, interval: float) -> None:
        self._keys, self._calls, self._clock, self.interval = keys, calls, clock, interval
        self._failures: tuple[type[BaseException], ...] = (LeadershipLost, *calls.errors)  # logged, retried
        self.changed = threading.Condition()
        self.io = threading.Lock()
        self.pending: dict[str, tuple[float, float]] = {}
        self.known: dict[str, tuple[float, float]] = {}
        self.chunks: dict[str, int] = {}
        self.ended: set[str] = set()
        self._due = math.inf  # when (monotonic) the pending renewals are to be written
        self._busy = False  # the committer is writing (what it took is no longer pending)
        self._writer, self._seq = uuid.uuid4().hex[:16], 0  # chunk keys unique to this store
        self._closing = False
        self._outage = OutageLog(log, f"etcd (renewal log {keys.log})")
        self._thread = threading.Thread(target=self._run, name=f"renewal log {keys.log}", daemon=True)
        self._thread.start()

    # -- told by the store (each under the lock, never waiting for etcd)

    def renewed(self, entries: Sequence[tuple[str, float]], now: float) -> None:
        with self.changed:
            if not self.pending and entries:
                self._due = self._clock.monotonic() + self.interval
                self.changed.notify_all()
            for cookie, expiration in entries:
                self.pending[cookie] = self.known[cookie] = (expiration, now)

    def written(self, cookie: str, expiration: float, now: float) -> None:
        """A lease's key was written: it holds the newest expiration, unless a renewal still pending
        is newer (the pending one is written later, and so wins on load)."""
        with self.changed:
            self.known[cookie] = (expiration, now)
            if cookie in self.pending:
                self.pending[cookie] = (expiration, now)

    def removed(self, cookies: Iterable[str]) -> None:
        with self.changed:
            for cookie in cookies:
                self.known.pop(cookie, None)
                self.pending.pop(cookie, None)

    def end(self, cookies: list[str]) -> None:
        """Write ``cookies`` to the log as ended: one transaction per TXN_BYTES of them (one for the
        1,000 a reaper frees at a time). Not under :attr:`io`: the store's own write.

        Raises:
            as :meth:`_Calls.write`.
        """
        done = 0
        for group in _groups(pack_ended(cookies)):
            keys = self.new_keys(len(group))
            self._calls.write(success=[self._calls.tx.put(key, value) for key, (value, _) in zip(keys, group)])
            count = sum(entries for _, entries in group)
            ended = cookies[done:done + count]
            with self.changed:
                self.chunks.update((key, entries) for key, (_, entries) in zip(keys, group))
                self.ended.update(cookie for cookie in ended if cookie in self.known)
            self.removed(ended)
            done += count

    def new_keys(self, count: int) -> list[str]:
        with self.changed:
            first, self._seq = self._seq, self._seq + count
        return [f"{self._keys.log}{self._writer}-{seq:012d}" for seq in range(first, first + count)]

    def replace(self, known: dict[str, tuple[float, float]], chunks: dict[str, int], ended: set[str]) -> None:
        """Take what a load found (the caller holds :attr:`io`)."""
        with self.changed:
            self.known, self.chunks, self.ended = known, chunks, ended

    def wait_flushed(self, timeout: float) -> bool:
        """Block until no renewal is pending or being written, or ``timeout`` real seconds; whether so."""
        with self.changed:
            return self.changed.wait_for(lambda: not self.pending and not self._busy, timeout)

    # -- writing

    def flush(self) -> None:
        """Write the pending renewals now.

        Raises:
            LeadershipLost: the store's term is over; the renewals stay pending.
            pyetcd.Etcd3Exception, grpc.RpcError: etcd could not be reached; the renewals stay pending.
        """
        with self.io:
            try:
                self._commit()
            finally:
                self._idle()

    def _idle(self) -> None:
        with self.changed:
            self._busy = False
            self.changed.notify_all()

    def _commit(self) -> None:
        """Write the pending renewals still worth writing (the caller holds :attr:`io`). Those not
        written when a transaction fails are pending again (unless renewed or ended meanwhile),
        due an interval later."""
        with self.changed:
            batch, self.pending, self._due, self._busy = self.pending, {}, math.inf, True
            wall = self._clock.time()
        entries = [(cookie, expiration, written)
                   for cookie, (expiration, written) in batch.items() if expiration > wall]
        done = [0]
        try:
            self._append(entries, done)
        except BaseException:
            with self.changed:
                for cookie, expiration, written in entries[done[0]:]:
                    if cookie in self.known and cookie not in self.pending:
                        self.pending[cookie] = (expiration, written)
                if self.pending:
                    self._due = min(self._due, self._clock.monotonic() + self.interval)
            raise

    def _append(self, entries: list[tuple[str, float, float]], done: list[int]) -> None:
        """Write ``entries`` to the log, a transaction per TXN_BYTES; ``done[0]`` counts those written."""
        for group in _groups(pack_renewals(entries)):
            keys = self.new_keys(len(group))
            self._calls.write(success=[self._calls.tx.put(key, value) for key, (value, _) in zip(keys, group)])
            with self.changed:
                self.chunks.update((key, count) for key, (_, count) in zip(keys, group))
            done[0] += sum(count for _, count in group)

    def _compact_if_due(self) -> None:
        """Rewrite the log when it holds too many entries (the caller holds :attr:`io`): every lease's
        latest expiration as fresh chunks, then delete the ended leases' keys, then the old chunks.
        Cut short after any transaction, the log still folds to the same leases."""
        with self.changed:
            entries = sum(self.chunks.values())
            if entries <= COMPACT_RATIO * len(self.known) + COMPACT_FLOOR:
                return
            live = [(cookie, expiration, written) for cookie, (expiration, written) in self.known.items()]
            old, ended = list(self.chunks), list(self.ended)
        self._append(live, [0])
        self._delete(ended, self._keys.lease, self._swept)
        self._delete(old, str, self._dropped)
        log.info("compacted the renewal log %s: %d entries in %d keys became %d; %d ended leases' keys deleted",
                 self._keys.log, entries, len(old), len(live), len(ended))

    def _delete(self, items: list[str], key: Callable[[str], str], forget: Callable[[list[str]], None]) -> None:
        """Delete the keys of ``items``, MAX_OPS a transaction, and ``forget`` each part once deleted."""
        for start in range(0, len(items), MAX_OPS):
            part = items[start:start + MAX_OPS]
            self._calls.write(success=[self._calls.tx.delete(key(item)) for item in part])
            with self.changed:
                forget(part)

    def _swept(self, cookies: list[str]) -> None:
        self.ended.difference_update(cookies)

    def _dropped(self, keys: list[str]) -> None:
        for key in keys:
            self.chunks.pop(key, None)

    # -- the thread

    def _run(self) -> None:
        while True:
            with self.changed:
                while not self._closing and self._clock.monotonic() < self._due:
                    self._clock.wait(self.changed, self._due)
                if self._closing:
                    return
            try:
                with self.io:
                    self._commit()
                    self._compact_if_due()
            except self._failures as exc:
                self._outage.failed(exc, "commit renewals to")
                continue  # what was not written is pending again, due an interval later
            except Exception:  # a bug: the committer must not die of it
                log.exception("renewal log %s: unexpected error; carrying on", self._keys.log)
                continue
            finally:
                self._idle()
            self._outage.recovered()

    def close(self) -> None:
        """Stop the thread, then write what is pending (a failure is logged: those renewals are lost,
        each lease keeping the expiration last written)."""
        with self.changed:
            self._closing = True
            self.changed.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join(JOIN_TIMEOUT)
        try:
            self.flush()
        except self._failures as exc:
            with self.changed:
                lost = len(self.pending)
            log.warning("renewal log %s closed with %d renewal(s) not written: %s", self._keys.log, lost, exc)


# -- the store ------------------------------------------------------------------------------------


class EtcdLeaseStore:
    """A replica group's leases in etcd, for the group's leader in one term: a :class:`~landlord.grantor.store.Store`.

    Make one when ``leadership`` leads and give it to the leader's landlord,
    ``Landlord(store=EtcdLeaseStore(client, election))``: the landlord claims
    the group and takes back its leases (:meth:`leases`) before it writes
    anything. Every write but a renewal is one transaction, applied before
    the call returns; renewals are written in batches, at most
    ``commit_interval`` after they are made (see the module docstring). A
    store serves the term it was made in: its writes are guarded by the
    election key's revision then, and refused (:class:`LeadershipLost`) once
    that term is over, even should the same replica be elected again (make a
    new store then: another leader may have written meanwhile). A call to an
    etcd member that fails is sent again, to another, for up to 2 s.

    Args:
        client: the etcd client it reads and writes with
            (:func:`landlord.replication.election.connect`; :meth:`close` does not close it).
        leadership: the replica's :class:`~landlord.replication.election.Election` (or
            any :class:`Leadership`), leading now: its key says where the
            group's keys are, its revision guards the writes.
        commit_interval: seconds from a renewal to the commit that writes it
            (more if a commit fails: it is retried each interval).
        clock: the monotonic clock the committer waits on, and the wall clock
            that says a renewal is no longer worth writing.
        warm: a follower's warm copy of the group's leases, which the first
            :meth:`leases` takes instead of reading etcd, if it has caught up
            with the store's term (see :class:`WarmSource`).

    Raises:
        LeadershipLost: ``leadership`` does not lead now.
        ValueError: ``leadership.key`` not ``/<prefix>/<group>/leader``, or
            ``commit_interval`` not positive and finite.
        ImportError: the etcd client is not installed.
    """

    def __init__(self, client: pyetcd.MultiEndpointEtcd3Client, leadership: Leadership, *,
                 commit_interval: float = 0.1, clock: Clock = SYSTEM_CLOCK, warm: WarmSource | None = None) -> None:
        require_pyetcd()
        if not 0 < commit_interval < math.inf:
            raise ValueError(f"commit_interval must be positive and finite, not {commit_interval!r}")
        self._keys = _Keys(leadership.key)
        term = leadership.revision
        if term is None:
            raise LeadershipLost(f"a store is made by the leader of {leadership.key}, and this replica is not")
        self._calls = _Calls(client, leadership, leadership.key, term)
        self._tx = client.transactions
        self._serializer = SerpentSerializer()
        self._closed = False
        self._log = _RenewalLog(self._keys, self._calls, clock, float(commit_interval))
        self._warm = warm
        self._taken: Warm | None = None  # the warm copy, taken by standby() but left for leases()
        self.source = "nowhere yet"  # where the leases came from: "etcd" or "the warm copy"
        self.ready_taken = False  # whether the landlord took the warm copy's standby table whole

    def __repr__(self) -> str:
        return f"EtcdLeaseStore({self._keys.root!r})"

    @property
    def commit_interval(self) -> float:
        """Seconds from a renewal to the commit that writes it."""
        return self._log.interval

    @property
    def pending(self) -> int:
        """How many leases have a renewal not written yet (nor being written)."""
        with self._log.changed:
            return len(self._log.pending)

    # -- the landlord's identity ---------------------------------------------------

    def landlord_id(self) -> str | None:
        """The id of the landlord these leases belong to; ``None`` for a new group (or a malformed id,
        which is logged).

        Raises:
            pyetcd.Etcd3Exception, grpc.RpcError: etcd could not be read.
        """
        value = self._calls.get(self._keys.landlord_id)
        if value is None:
            return None
        try:
            return _landlord_id(value)
        except ValueError as exc:
            log.warning("%r: the stored landlord id is malformed (%s); taken as none", self, exc)
            return None

    def claim(self, landlord_id: str) -> None:
        """Record ``landlord_id`` as the owner of these leases: one guarded transaction that creates
        its key if absent (and one more that replaces a malformed id, which is logged).

        Raises:
            ValueError: the group belongs to a landlord with another id, or
                ``landlord_id`` is not 1 to 256 printable characters.
            TypeError: ``landlord_id`` is not a str.
            LeadershipLost: the store's term is over (nothing was written).
            pyetcd.Etcd3Exception, grpc.RpcError: etcd could not be reached.
        """
        if not isinstance(landlord_id, str):
            raise TypeError(f"a landlord id is a str, not {type(landlord_id).__name__}")
        _landlord_id(landlord_id.encode())
        owner = _claim(self._calls, self._keys.landlord_id, landlord_id, repr(self))
        if owner != landlord_id:
            raise ValueError(f"{self!r} belongs to landlord {owner}, not {landlord_id}")

    # -- leases ------------------------------------------------------------------------

    def leases(self, now: float) -> list[StoredLease]:
        """Every stored lease, in the order first written, with its time left at wall time ``now``
        (never more than it had when last written); renewals not yet written count.

        Read at one etcd revision, or, the first time, taken from the
        store's warm copy if it has caught up with the store's term (every
        write of an earlier term in it). Call it before writing (as a
        landlord does): it replaces what the store knew. Malformed keys, and
        resources serpent cannot read, are logged and skipped.

        Raises:
            pyetcd.Etcd3Exception, grpc.RpcError: etcd could not be read.
        """
        with self._log.io:  # no commit or compaction while the log is read and taken in
            warm = self._take_warm()
            if warm is None:
                self.source = "etcd"
                warm = self._read_warm()
            with self._log.changed:
                pending = dict(self._log.pending)
            stored, known = _take_in(warm.leases, pending, now, warm.load, repr(self))
            self._log.replace(known, warm.chunks, warm.ended)
        return stored

    def standby(self, now: float) -> Standby | None:
        """The leases as a ready table, if the store's warm copy has caught up with its term and kept
        one (:class:`~landlord.grantor.manager.StandbySource`): a landlord takes it whole instead of
        calling :meth:`leases`. ``None``: call :meth:`leases` (the copy, if taken, is kept for it).
        Call it before writing, as :meth:`leases`."""
        with self._log.io:
            warm = self._take_warm()
            self._taken = warm  # for leases(), if the landlord restores one by one after all
            if warm is None or warm.standby is None or warm.known is None or self._log.pending:
                return None
            self._taken, self.ready_taken = None, True
            self._log.replace(warm.known, warm.chunks, warm.ended)
            return warm.standby

    def _take_warm(self) -> Warm | None:
        """The warm copy once caught up with the store's term (taken once: ``None`` after, or without one)."""
        if self._taken is not None:
            taken, self._taken = self._taken, None
            return taken
        calls = self._calls
        warm = self._warm.take(calls.term, lambda: calls.leadership.revision == calls.term) \
            if self._warm is not None else None
        self._warm = None
        if warm is not None:
            self.source = "the warm copy"
        return warm

    def _read_warm(self) -> Warm:
        """The group's leases and log as read from etcd now, their resources still serpent's."""
        records, chunks, _ = _read(self._calls, self._keys, repr(self))
        folded = fold(records, [(revision, chunk) for revision, _, chunk in chunks])
        return Warm(folded.leases, {key: len(chunk.renewals) + len(chunk.ended) for _, key, chunk in chunks},
                    folded.ended, self._serializer.loads)

    def put(self, cookie: str, expiration: float, resource: Any, now: float) -> None:
        """Write a lease (a new one, or a new resource for one already stored): one guarded transaction.

        Args:
            cookie: the lease's cookie (1 to 255 bytes of UTF-8).
            expiration: when it ends, on the wall clock (``inf`` for FOREVER).
            resource: what to store (serpent-serializable).
            now: the wall-clock time of the write.

        Raises:
            TypeError, ValueError: a cookie not 1 to 255 bytes of text, a NaN
                expiration, or a ``now`` not finite.
            LeadershipLost: the store's term is over (nothing was written).
            pyetcd.Etcd3Exception, grpc.RpcError: etcd could not be reached
                (the write may or may not have been applied).
            RuntimeError: the store is closed.
        """
        self._check_open()
        _cookie_bytes(cookie)
        value = pack_record(expiration, now, self._serializer.dumps(resource))
        self._calls.write(success=[self._tx.put(self._keys.lease(cookie), value)])
        self._log.written(cookie, expiration, now)

    def renew(self, expirations: Iterable[tuple[str, float]], now: float) -> None:
        """Record new expirations (wall clock) of stored leases, for the committer to write within
        :attr:`commit_interval`; never waits for etcd.

        Raises:
            ValueError: a cookie :meth:`put` would refuse, a NaN expiration
                or a ``now`` not finite (nothing is recorded).
            RuntimeError: the store is closed.
        """
        self._check_open()
        entries = list(expirations)
        for cookie, expiration in entries:
            if not _valid_cookie(cookie) or expiration != expiration or expiration == -math.inf:
                raise ValueError(f"not a cookie and an expiration: {cookie!r:.80}, {expiration!r}")
        if not math.isfinite(now):
            raise ValueError(f"now must be finite, not {now!r}")
        self._log.renewed(entries, now)

    def delete(self, cookies: Iterable[str]) -> None:
        """Forget leases that ended, in one guarded transaction (unknown cookies are ignored): up to
        127 by deleting their keys, more by writing them to the log as ended (more than ~45,000 at
        once: a transaction per MiB of cookies).

        Raises:
            LeadershipLost: the store's term is over (nothing was written; of more than ~45,000,
                nothing from the transaction refused on).
            pyetcd.Etcd3Exception, grpc.RpcError: etcd could not be reached
                (the write may or may not have been applied).
            RuntimeError: the store is closed.
        """
        self._check_open()
        unique = [cookie for cookie in dict.fromkeys(cookies) if _valid_cookie(cookie)]
        if len(unique) <= MAX_OPS:
            if unique:
                self._calls.write(success=[self._tx.delete(self._keys.lease(cookie)) for cookie in unique])
                self._log.removed(unique)
            return
        self._log.end(unique)

    def flush(self) -> None:
        """Write the renewals not yet written, now.

        Raises:
            LeadershipLost: the store's term is over; the renewals stay pending.
            pyetcd.Etcd3Exception, grpc.RpcError: etcd could not be reached;
                the renewals stay pending.
        """
        self._log.flush()

    def wait_flushed(self, timeout: float) -> bool:
        """Block until every renewal recorded so far is written (by the committer or :meth:`flush`),
        at most ``timeout`` real seconds; whether it was."""
        return self._log.wait_flushed(timeout)

    def __len__(self) -> int:
        """How many leases are stored.

        Raises:
            pyetcd.Etcd3Exception, grpc.RpcError: etcd could not be read.
        """
        answer = self._calls.range(self._keys.leases.encode(), _range_end(self._keys.leases), count_only=True)
        with self._log.changed:
            ended = len(self._log.ended)  # written as ended, their keys not yet deleted
        return max(0, answer.count - ended)

    # -- a landlord's own settings -----------------------------------------------------

    def get_setting(self, key: str, default: Any = None) -> Any:
        """A value the landlord stored under ``key``, or ``default`` (also for a malformed one, logged).

        Raises:
            pyetcd.Etcd3Exception, grpc.RpcError: etcd could not be read.
        """
        value = self._calls.get(self._keys.setting(key))
        if value is None:
            return default
        try:
            return self._serializer.loads(value)
        except Exception as exc:
            log.warning("%r: the setting %r is malformed (%s); taken as absent", self, key, exc)
            return default

    def set_setting(self, key: str, value: Any) -> None:
        """Store ``value`` (serpent-serializable) under ``key``: one guarded transaction.

        Raises:
            LeadershipLost: the store's term is over (nothing was written).
            pyetcd.Etcd3Exception, grpc.RpcError: etcd could not be reached.
            RuntimeError: the store is closed.
        """
        self._check_open()
        self._calls.write(success=[self._tx.put(self._keys.setting(key), self._serializer.dumps(value))])

    def close(self) -> None:
        """Write the renewals not yet written and stop the committer (idempotent; a failure to write
        is logged). Does not close the client."""
        with self._log.changed:
            closed, self._closed = self._closed, True
        if not closed:
            self._log.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{self!r} is closed")


# -- reading a group's leases and log ------------------------------------------------------------


def _claim(calls: _Calls, key: str, landlord_id: str, name: str) -> str:
    """Create the landlord id's ``key`` holding ``landlord_id`` if it is absent (replacing a malformed
    id, which is logged, in a second transaction); the id it holds now.

    Raises:
        ValueError: the malformed id was changed meanwhile.
        LeadershipLost, pyetcd.Etcd3Exception, grpc.RpcError: as :meth:`_Calls.write`.
    """
    tx = calls.tx
    created, answers = calls.write(compare=[tx.create(key) == 0], success=[tx.put(key, landlord_id)],
                                   failure=[tx.get(key)])
    if created:
        return landlord_id
    kvs = answers[0].response_range.kvs
    stored = kvs[0].value if kvs else b""
    try:
        return _landlord_id(stored)
    except ValueError as exc:
        log.warning("%s: the stored landlord id is malformed (%s); %s claims the group", name, exc, landlord_id)
    replaced, _ = calls.write(compare=[tx.value(key) == stored], success=[tx.put(key, landlord_id)])
    if not replaced:
        raise ValueError(f"{name}: the landlord id was changed while {landlord_id} claimed it")
    return landlord_id


def _take_in(leases: Iterable[tuple[str, float, float, Any]], pending: Mapping[str, tuple[float, float]],
             now: float, load: Callable[[Any], Any],
             name: str) -> tuple[list[StoredLease], dict[str, tuple[float, float]]]:
    """The stored leases that ``leases`` (each ``(cookie, expiration, written, resource data)``) come to
    at wall time ``now`` (a renewal still ``pending`` counting), and each one's expiration and written
    time; each resource is ``load(data)``, and one it cannot read is logged and skipped."""
    stored, known = [], {}
    for cookie, expiration, written, data in leases:
        expiration, written = pending.get(cookie, (expiration, written))
        try:
            resource = load(data)
        except Exception as exc:
            log.warning("%s: skipped lease %s: its resource cannot be read (%s)", name, cookie, exc)
            continue
        known[cookie] = (expiration, written)
        # never more than it had when written: the wall clock may have been set back meanwhile
        remaining = math.inf if math.isinf(expiration) else min(expiration - now, expiration - written)
        stored.append(StoredLease(cookie, remaining, resource))
    return stored, known


def _read(calls: _Calls, keys: _Keys, name: str) -> tuple[dict[str, Record], list[tuple[int, str, Chunk]], int]:
    """The leases (by cookie) and the log's chunks (each with its revision and key), read at one
    revision, and that revision; malformed ones are logged (naming the store ``name``) and left out.

    Raises:
        pyetcd.Etcd3Exception, grpc.RpcError: etcd could not be read.
    """
    for attempt in range(LOAD_ATTEMPTS):
        try:
            leases, revision = _scan(calls, keys.leases, 0)
            chunks, _ = _scan(calls, keys.log, revision)
            break
        except calls.errors as exc:
            if _status(exc) != "OUT_OF_RANGE" or attempt == LOAD_ATTEMPTS - 1:
                raise
            log.info("%s: etcd compacted away the revision it was reading at; reading again", name)
    records: dict[str, Record] = {}
    for kv in leases:
        try:
            cookie, record = read_record(keys.leases, kv)
        except ValueError as exc:
            log.warning("%s: skipped malformed key %r: %s", name, kv.key, exc)
            continue
        records[cookie] = record
    found: list[tuple[int, str, Chunk]] = []
    for kv in chunks:
        try:
            found.append((kv.mod_revision, kv.key.decode(), unpack_chunk(kv.value)))
        except ValueError as exc:
            log.warning("%s: skipped malformed key %r: %s", name, kv.key, exc)
    return records, found, revision


class _Reading:
    """The leadership of a replica that only reads: it never leads, so a write would be refused unsent."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.revision: int | None = None


def read_group(client: pyetcd.MultiEndpointEtcd3Client, election_key: str,
               name: str) -> tuple[dict[str, Record], list[tuple[int, str, Chunk]], int]:
    """Every lease (by cookie) and log chunk (with its revision and key) of the group whose election key
    is ``election_key``, read at one revision, and that revision: what a follower's warm copy starts
    from. Malformed keys are logged (naming ``name``) and left out.

    Raises:
        ValueError: ``election_key`` is not ``/<prefix>/<group>/leader``.
        pyetcd.Etcd3Exception, grpc.RpcError: etcd could not be read.
    """
    keys = _Keys(election_key)
    return _read(_Calls(client, _Reading(election_key), election_key, 0), keys, name)


def group_prefix(election_key: str) -> str:
    """Where every key of the group of ``election_key`` lives, the election key too: ``/<prefix>/<group>/``.

    Raises:
        ValueError: ``election_key`` is not ``/<prefix>/<group>/leader``.
    """
    return _Keys(election_key).root


def range_end(prefix: str) -> bytes:
    """The end of the key range of everything under ``prefix`` (which ends in '/')."""
    return _range_end(prefix)


def read_record(prefix: str, kv: Any) -> tuple[str, Record]:
    """A lease's cookie and record from its etcd key-value (``kv.key`` under ``prefix``, the group's
    ``leases/``).

    Raises:
        ValueError: a key that is not a cookie's, or a value that is not a record.
    """
    try:
        cookie = kv.key[len(prefix):].decode()
    except UnicodeDecodeError as exc:
        raise ValueError(f"a lease's key is not text: {exc}") from None
    _cookie_bytes(cookie)
    expiration, written, resource = unpack_record(kv.value)
    return cookie, Record(kv.mod_revision, kv.create_revision, expiration, written, resource)


def _scan(calls: _Calls, prefix: str, revision: int) -> tuple[list[Any], int]:
    """Every key under ``prefix`` at ``revision`` (0: the latest), in pages sized to stay under
    PAGE_BYTES; and the revision it was read at. A page over gRPC's limit, or that did not come
    within PAGE_TIMEOUT (a busy etcd, a busy reader), is asked again for fewer keys, from
    where the read got to (the revision is fixed: what came before stays true); one that etcd's own
    deadline answered (:func:`etcd_deadline`: its member has no leader) is asked again of another
    member, as big. PAGE_FAILURES times in a row at most."""
    start, end = prefix.encode(), _range_end(prefix)
    limit, found, failures, ceiling = FIRST_PAGE, [], 0, MAX_PAGE
    while True:
        sent_to = calls.client.endpoint_in_use  # noted before: the client is shared
        try:
            answer = calls.page(start, end, limit=limit, revision=revision)
        except calls.errors as exc:
            failures += 1
            if etcd_deadline(exc) and failures <= PAGE_FAILURES:
                pass_over_if_deadline(calls.client, exc, sent_to)  # a member without a leader, not a page too big:
                continue  # the same page, from another member
            status = _status(exc)
            if status not in ("RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED") or limit == 1 \
                    or failures > PAGE_FAILURES:
                raise
            limit = max(1, limit // 4)  # ask for fewer keys, from the same one
            if status == "DEADLINE_EXCEEDED":
                ceiling = limit  # and no more in a page from now on: a bigger one would time out again
            continue
        failures = 0
        revision = revision or answer.header.revision
        kvs = list(answer.kvs)
        found.extend(kvs)
        if not answer.more or not kvs:
            return found, revision
        start = kvs[-1].key + b"\0"
        size = sum(len(kv.key) + len(kv.value) for kv in kvs)
        limit = max(1, min(ceiling, PAGE_BYTES * len(kvs) // max(size, 1)))
