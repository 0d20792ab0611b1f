"""One replica of a replicated landlord: :class:`ReplicatedLandlord`.

Run one per host, each with the same group and the same list of every
replica's URI; they elect one leader through etcd
(:class:`~landlord.replication.election.Election`). The leader alone grants, renews,
cancels and expires; every write but a renewal reaches etcd before the
caller has its answer, and renewals within ``commit_interval``
(:class:`~landlord.replication.etcdstore.EtcdLeaseStore`). The others answer
:class:`~landlord.NotLeaderError` naming the leader, which a lease of the
group follows on its own (its ``landlords`` name every replica).

A leadership is a *term*: from its election to its end. At the start of
each, the new leader makes a landlord of its own for the term (an ordinary
:class:`~landlord.Landlord` over a store guarded by the term) and loads every
lease into it, on a thread of its own, so that the election's keep-alives go
on meanwhile. A replica that does not lead keeps a warm copy of the group's
leases, following etcd (:class:`~landlord.replication.warmcopy.WarmCopy`): the
new leader takes its leases from that copy once it has caught up with the
term, instead of reading them all from etcd. A lease keeps its cookie and its remaining time
(stored as a wall-clock deadline), less at most the commit interval plus the
clocks' skew; expiry is then decided on the new leader's monotonic clock.

Fencing: a replica answers only while its election confirms its term
(:attr:`~landlord.replication.election.Election.revision`), checked before and after
each call. A leader that cannot confirm it in time, or a term that ended
while a call was being answered, answers nothing: the caller sees its
connection closed (a Pyro5 ``CommunicationError``, which a holder retries),
never a definite denial. A write it still sends is refused by etcd.

A write whose outcome is unknown (etcd did not answer) leaves the term's
landlord possibly out of step with etcd: the term's landlord is then made
again from etcd, in the same term, before anything else is answered.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import Pyro5.errors
import Pyro5.server

from ..clock import SYSTEM_CLOCK, Clock
from ..duration import ANY
from ..errors import LeaseError, NotLeaderError
from ..grantor.landlord import Landlord, ResourceCodec, served_uri
from ..grantor.manager import FreeCallback, LeaseManager
from ..grantor.policy import LeaseDurationPolicy, LeasePolicy
from ..grantor.resource import LeasedResource
from ..holder.landlordlease import LandlordLease, check_landlords, replica_object_id, replica_uris
from ..results import RenewResults
from .election import Election, LeadershipLost, connect_like, etcd_errors, leader_key, require_pyetcd
from .etcdstore import EtcdLeaseStore
from .terms import Term, Terms
from .warmcopy import WarmCopy

if TYPE_CHECKING:
    import pyetcd

__all__ = ["ReplicatedLandlord", "ReplicaTerm", "replica_uris", "replica_object_id"]

log = logging.getLogger("landlord.replicated")  # its name before it moved into replication/

T = TypeVar("T")

READY_WAIT = 1.0  # seconds a call waits for a new leader to load its leases, before it is turned away
JOIN_TIMEOUT = 10.0  # seconds close() waits for the loader thread


class ReplicaTerm:
    """Mixed into the landlord of one term (before :class:`~landlord.Landlord` or a subclass of it):
    its leases are the replica's, naming the replica and every other of its group, so every
    term's landlord binds the replica's one policy to the same lease factory, the replica's.

    Args:
        replica: the replica whose term it serves.
        options: the landlord's own.
    """

    def __init__(self, replica: ReplicatedLandlord, **options: Any) -> None:
        self._make_lease = replica._make_lease
        super().__init__(**options)


class _TermLandlord(ReplicaTerm, Landlord):
    """The landlord of one term of a plain :class:`ReplicatedLandlord`."""


class ReplicatedLandlord:
    """One replica of a landlord replicated through etcd (see the module's docstring).

    Serve it with a Pyro5 daemon under :func:`replica_object_id` (so that its
    URI is one of ``replicas``), then :meth:`start` it. Remote methods are a
    landlord's: :meth:`renew`, :meth:`cancel`, :meth:`renew_all`,
    :meth:`cancel_all`; local ones :meth:`new_lease`, :meth:`get_resource`,
    :meth:`close`. On a replica that does not lead each raises
    :class:`~landlord.NotLeaderError` naming the leader; on one that knows
    no leader, whose term is unconfirmed, still loading after ``ready_wait``,
    or closing, ``Pyro5.errors.ConnectionClosedError`` (served, the caller's
    connection is closed: it hears nothing).

    Args:
        client: an etcd client (:func:`landlord.replication.election.connect`), this
            replica's own, for its leases (the term's store, the warm copy);
            :meth:`close` does not close it.
        election_client: the etcd client of the replica's election, which no
            other user of etcd may share: pyetcd passes over the member a client
            uses whenever any call through it fails, so the store's failed calls
            on a shared client can leave the election's keep-alives no member to
            go to, and the term unconfirmed. ``None``: :meth:`start` makes one
            like ``client`` (:func:`~landlord.replication.election.connect_like`),
            which :meth:`close` closes; one given is not closed.
        group: the group's name: every replica of it gives the same.
        replicas: every replica's URI, the same list on each
            (:func:`replica_uris`); every lease names them all.
        prefix: where the group's keys live in etcd.
        ttl: the election lease's TTL in whole seconds: how long a dead
            leader's successor waits (see :class:`~landlord.replication.election.Election`).
        commit_interval: seconds from a renewal to its commit to etcd.
        ready_wait: seconds a call to a new leader waits for it to load.
        landlord_id: the group's landlord id; ``None``: the one stored in
            etcd, or a new one the first leader stores.
        warm: keep a warm copy of the group's leases while not leading, so
            that a new term takes its leases from it rather than from etcd
            (``False``: every term reads them all from etcd).
        policy, reaper, clock, on_expire, on_cancel, codec: as for
            :class:`~landlord.Landlord`, for the landlord of each term (one
            policy serves them all; ``reaper`` a name, as each term makes its
            own). ``on_expire`` runs on the leader only: at least once per
            ended lease, again on a new leader if the old one failed over before
            deleting its lease (it gets the cookie if it takes one; see
            :class:`~landlord.LeaseManager`).

    Raises:
        ValueError: a bad group or prefix; ``replicas`` that
            :func:`~landlord.holder.landlordlease.check_landlords` refuses;
            ``commit_interval`` or ``ready_wait`` not positive and finite.
        TypeError: ``replicas`` or ``reaper`` of the wrong type.
        ImportError: the etcd client is not installed.
    """

    def __init__(self, client: pyetcd.MultiEndpointEtcd3Client, *, group: str, replicas: Sequence[str],
                 election_client: pyetcd.MultiEndpointEtcd3Client | None = None, prefix: str = "landlord",
                 ttl: int = 2, commit_interval: float = 0.1,
                 ready_wait: float = READY_WAIT, landlord_id: str | None = None, warm: bool = True,
                 policy: LeasePolicy | None = None, reaper: str = "sleeper", clock: Clock = SYSTEM_CLOCK,
                 on_expire: FreeCallback | None = None, on_cancel: FreeCallback | None = None,
                 codec: ResourceCodec | None = None) -> None:
        require_pyetcd()
        self.key = leader_key(group, prefix=prefix)
        self.group, self.prefix, self.ttl = group, prefix, ttl
        self.replicas = check_landlords(replicas, name="replicas")
        for name, value in (("commit_interval", commit_interval), ("ready_wait", ready_wait)):
            if not 0 < value < math.inf:
                raise ValueError(f"{name} must be positive and finite, not {value!r}")
        if not isinstance(reaper, str):
            raise TypeError(f"reaper must be a reaper's name (each term makes its own), not {reaper!r:.80}")
        self.clock, self.commit_interval, self.ready_wait = clock, float(commit_interval), float(ready_wait)
        self._client = client
        self._election_client = _ElectionClient(election_client, like=client)
        self._landlord_id = landlord_id
        self.policy = policy if policy is not None else LeaseDurationPolicy()
        self.reaper = reaper
        self._options: dict[str, Any] = {"on_expire": on_expire, "on_cancel": on_cancel, "codec": codec}
        self._term_begun: list[Callable[[Landlord], None]] = []  # see on_term
        self._terms = Terms()  # the term wanted, the term loaded, closing: shared with the election and the loader
        self._election: Election | None = None
        self._loader: threading.Thread | None = None
        self._warm = WarmCopy(client, self.key, clock=clock) if warm else None
        self._errors = etcd_errors()

    # -- local ----------------------------------------------------------------------------------

    @property
    def uri(self) -> str | None:
        """The URI this replica is registered under, or ``None`` before it is."""
        return served_uri(self)

    @property
    def object_id(self) -> str:
        """The Pyro5 object id it is served under (:func:`replica_object_id`), the same on every replica."""
        return replica_object_id(self.group)

    @property
    def landlord_id(self) -> str | None:
        """The group's landlord id, once given or learnt from a term (``None`` before)."""
        return self._landlord_id

    @property
    def manager(self) -> LeaseManager | None:
        """The lease manager of this replica's term while it leads (its leases, on its clock), else ``None``."""
        term = self._terms.term
        return term.landlord.manager if term is not None else None

    @property
    def warm_copy(self) -> WarmCopy | None:
        """This replica's warm copy of the group's leases (``None``: made with ``warm=False``)."""
        return self._warm

    @property
    def election(self) -> Election | None:
        """This replica's election, once :meth:`start` ed."""
        return self._election

    @property
    def leading(self) -> bool:
        """Whether this replica leads, its term confirmed and its leases loaded: it answers now."""
        return self._terms.answering(self._election) is not None

    def leader(self) -> str | None:
        """The URI of the replica that leads, as this one last learnt (``None``: none known)."""
        return self._election.leader() if self._election is not None else None

    def wait_leading(self, timeout: float) -> bool:
        """Block until this replica answers as leader (:attr:`leading`), at most ``timeout`` real seconds."""
        deadline = time.monotonic() + timeout
        with self._terms.changed:
            while not self.leading:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._terms.changed.wait(min(left, 0.05))  # the election's confirmations do not notify this
            return True

    def on_term(self, callback: Callable[[Landlord], None]) -> None:
        """Call ``callback`` with the landlord of every term this replica begins, once it is made and
        before it answers anything: how metrics count every term (:meth:`landlord.metrics.LeaseMetrics.attach`).
        What it raises fails that term's start, as a failed load does.

        Raises:
            RuntimeError: the replica has started (a term may already answer, uncounted).
        """
        if self._election is not None:
            raise RuntimeError("give on_term its callback before the replica starts: a term may already answer")
        self._term_begun.append(callback)

    def start(self, candidate: str | None = None) -> ReplicatedLandlord:
        """Join the group's election as ``candidate`` (default: :attr:`uri`); this replica.

        Raises:
            ValueError: the candidate is not one of ``replicas`` (callers could not follow it),
                or the election's timing options are refused (see :class:`~landlord.replication.election.Election`).
            RuntimeError: not registered with a daemon and no candidate given, or started before.
            TypeError: no ``election_client`` was given and ``client`` is not a pyetcd client to make one like.
        """
        candidate = candidate if candidate is not None else self.uri
        if candidate is None:
            raise RuntimeError("register the replica with a Pyro5 daemon before starting it, or name its URI")
        if candidate not in self.replicas:
            raise ValueError(f"this replica's URI {candidate} is not one of the group's replicas {self.replicas}")
        with self._terms.changed:
            if self._election is not None or self._terms.closing:
                raise RuntimeError("a ReplicatedLandlord starts once")
            self._election = self._election_client.elect(
                group=self.group, candidate=candidate, prefix=self.prefix, ttl=self.ttl, clock=self.clock,
                on_elected=self._terms.elected, on_deposed=self._terms.deposed)
            self._loader = threading.Thread(target=self._load_terms, name=f"terms {self.key}", daemon=True)
        if self._warm is not None:
            self._warm.start()
        self._loader.start()
        self._election.start()
        return self

    def new_lease(self, resource: Any, duration: float = ANY) -> LandlordLease:
        """Lease ``resource`` (see :meth:`Landlord.new_lease`); written to etcd before it returns.

        Raises:
            NotLeaderError, Pyro5.errors.ConnectionClosedError: as the class says.
            ValueError, LeaseDeniedError: as :meth:`Landlord.new_lease`.
        """
        lease: LandlordLease = self.answer(lambda landlord: landlord.new_lease(resource, duration))
        return lease

    def get_resource(self, cookie: str) -> Any:
        """The resource leased under ``cookie`` (see :meth:`Landlord.get_resource`)."""
        return self.answer(lambda landlord: landlord.get_resource(cookie))

    def __len__(self) -> int:
        """How many leases this replica holds: those of the group while it leads, else 0."""
        term = self._terms.term
        return len(term.landlord) if term is not None else 0

    def close(self) -> None:
        """Stop answering, write the renewals not yet written, resign (another replica is elected at
        once) and close this term's landlord; its leases stay in etcd. Idempotent."""
        with self._terms.changed:
            self._terms.closing = True
            term, election = self._terms.term, self._election
            self._terms.changed.notify_all()
        if term is not None:
            _flush(term, self.key)
        if election is not None:
            election.close()
            self._election_client.close()
        if self._warm is not None:
            self._warm.close()
        if self._loader is not None and self._loader is not threading.current_thread():
            self._loader.join(JOIN_TIMEOUT)
        with self._terms.changed:
            term, self._terms.term = self._terms.term, None
        if term is not None:
            term.landlord.close()

    def __repr__(self) -> str:
        return f"ReplicatedLandlord({self.key!r}, uri={self.uri!r}, leading={self.leading})"

    # -- remote: a landlord's, answered by the leader alone ------------------------------------------

    @Pyro5.server.expose
    def renew(self, cookie: str, duration: float) -> float:
        """As :meth:`Landlord.renew`."""
        granted: float = self.answer(lambda landlord: landlord.renew(cookie, duration))
        return granted

    @Pyro5.server.expose
    def cancel(self, cookie: str) -> None:
        """As :meth:`Landlord.cancel`: written to etcd before it returns."""
        self.answer(lambda landlord: landlord.cancel(cookie))

    @Pyro5.server.expose
    def renew_all(self, cookies: Sequence[str], durations: Sequence[float]) -> RenewResults:
        """As :meth:`Landlord.renew_all`."""
        results: RenewResults = self.answer(lambda landlord: landlord.renew_all(cookies, durations))
        return results

    @Pyro5.server.expose
    def cancel_all(self, cookies: Sequence[str]) -> dict[str, Exception]:
        """As :meth:`Landlord.cancel_all`."""
        failures: dict[str, Exception] = self.answer(lambda landlord: landlord.cancel_all(cookies))
        return failures

    @Pyro5.server.expose
    def listen(self, cookie: str, listener: str) -> None:
        """As :meth:`Landlord.listen`. The listener is the leader's to remember: after a
        failover, the holder learns of a revocation at its next renewal."""
        self.answer(lambda landlord: landlord.listen(cookie, listener))

    @Pyro5.server.expose
    def acquire(self, name: str, duration: float = ANY, limit: int = 1, wait: float | None = None,
                lock_delay: float = 0.0, value: str | None = None,
                listener: str | None = None) -> tuple[LandlordLease, int | None]:
        """As :meth:`Landlord.acquire`: the claim and its token reach etcd before it returns, so a
        failover keeps holders, waiters (in order) and the tokens' high water. The listener is
        kept with the claim: the next term's leader tells a waiter of its grant too."""
        answer: tuple[LandlordLease, int | None] = self.answer(
            lambda landlord: landlord.acquire(name, duration, limit, wait, lock_delay, value, listener))
        return answer

    @Pyro5.server.expose
    def name_token(self, cookie: str) -> int | None:
        """As :meth:`Landlord.name_token`."""
        token: int | None = self.answer(lambda landlord: landlord.name_token(cookie))
        return token

    @Pyro5.server.expose
    def name_holders(self, name: str) -> list[tuple[int, str | None]]:
        """As :meth:`Landlord.name_holders`."""
        holders: list[tuple[int, str | None]] = self.answer(lambda landlord: landlord.name_holders(name))
        return holders

    @Pyro5.server.expose
    def hand_over(self, cookie: str, successor: str) -> None:
        """As :meth:`Landlord.hand_over`."""
        self.answer(lambda landlord: landlord.hand_over(cookie, successor))

    @Pyro5.server.expose
    def watch_name(self, name: str, duration: float = ANY, listener: str | None = None) -> LandlordLease:
        """As :meth:`Landlord.watch_name`. The watch is the leader's alone, in memory: after a
        failover its renewal is refused as unknown, and the watcher watches again."""
        lease: LandlordLease = self.answer(lambda landlord: landlord.watch_name(name, duration, listener))
        return lease

    def attach(self, cookie: str, resource: Any) -> None:
        """As :meth:`Landlord.attach`, on the leader (written to etcd before it returns).

        Raises:
            NotLeaderError, Pyro5.errors.ConnectionClosedError: this replica does not lead now.
            UnknownLeaseError: as :meth:`Landlord.attach`.
        """
        self.answer(lambda landlord: landlord.attach(cookie, resource))

    def detach(self, cookie: str, resource: Any) -> None:
        """As :meth:`Landlord.detach`, on the leader (written to etcd before it returns).

        Raises:
            NotLeaderError, Pyro5.errors.ConnectionClosedError: this replica does not lead now.
            UnknownLeaseError, ValueError: as :meth:`Landlord.detach`.
        """
        self.answer(lambda landlord: landlord.detach(cookie, resource))

    def revoke(self, cookie: str, reason: str) -> None:
        """As :meth:`Landlord.revoke`, on the leader (written to etcd before it returns).

        Raises:
            NotLeaderError, Pyro5.errors.ConnectionClosedError: this replica does not lead now.
            UnknownLeaseError, TypeError, ValueError: as :meth:`Landlord.revoke`.
        """
        self.answer(lambda landlord: landlord.revoke(cookie, reason))

    @Pyro5.server.expose
    def replica_status(self) -> dict[str, Any]:
        """``{"leading": bool, "leader": uri or None, "group": name, "held": leases, "warm": revision or None}``,
        answered by every replica, leading or not: for operators, and for clients that look for the leader.
        ``warm``: the revision up to which a follower's warm copy has applied etcd's events (``None``:
        it holds none now: it leads, is reading the group, or keeps no copy)."""
        warm = self._warm.revision if self._warm is not None else None
        return {"leading": self.leading, "leader": self.leader(), "group": self.group, "held": len(self),
                "warm": warm}

    # -- answering ------------------------------------------------------------------------------

    def answer(self, action: Callable[[Landlord], T]) -> T:
        """``action(landlord)`` on this term's landlord, its result answered only if the term lasted
        through it: how a subclass's own remote methods reach the leases.

        Raises:
            NotLeaderError, Pyro5.errors.ConnectionClosedError: as the class says.
            Exception: what ``action`` raised, if it is a definite answer (a LeaseError, TypeError or
                ValueError); anything else (a write etcd did not confirm) as ConnectionClosedError.
        """
        term = self._serving()
        try:
            result = action(term.landlord)
        except (LeaseError, TypeError, ValueError):
            self._still_serving(term)  # a definite answer, if the term lasted
            raise
        except Exception as exc:
            # the store could not write (etcd silent, the term over): what etcd holds is unknown
            log.warning("%s: a write failed (%s); the leases are loaded again from etcd", self.key, exc)
            self._terms.went_stale(term)
            raise Pyro5.errors.ConnectionClosedError(f"the write did not reach etcd: {exc}") from exc
        self._still_serving(term)
        return result

    def _serving(self) -> Term:
        return self._terms.answering(self._election) or self._wait_for_term()

    def _wait_for_term(self) -> Term:
        deadline = time.monotonic() + self.ready_wait
        terms = self._terms
        with terms.changed:
            while not terms.closing and self._election is not None and self._election.revision is not None:
                term = terms.answering(self._election)
                if term is not None:
                    return term
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Pyro5.errors.ConnectionClosedError(f"{self.key}: the new leader is still loading its "
                                                             "leases; ask again")
                terms.changed.wait(min(left, 0.05))
            closing, election = terms.closing, self._election
        leader = self.leader()
        # fenced (a term held but unconfirmed), going, or no leader known: silence, never a definite
        # answer; a holder tries the group's next replica, which may know the leader
        if closing or leader is None or (election is not None and election.confirmed_until > -math.inf):
            raise Pyro5.errors.ConnectionClosedError(f"{self.key}: this replica does not lead now and knows "
                                                     "no leader; ask again")
        raise NotLeaderError(f"this replica does not lead {self.key}; {leader} does", leader)

    def _still_serving(self, term: Term) -> None:
        election = self._election
        if election is None or election.revision != term.revision or self._terms.closing:
            raise Pyro5.errors.ConnectionClosedError(f"{self.key}: the term ended while answering; ask again")

    def make_landlord(self, *, store: EtcdLeaseStore, landlord_id: str | None) -> Landlord:
        """The landlord of a term that begins: over ``store``, with ``landlord_id`` (``None``: the
        store's). A subclass serving more than a plain landlord (the replicated lookup service)
        returns its own, a :class:`ReplicaTerm` subclass so that its leases are the replica's.

        Raises:
            LeadershipLost: the term ended meanwhile.
            ValueError: ``landlord_id`` is not the group's.
            pyetcd.Etcd3Exception, grpc.RpcError: etcd did not answer.
        """
        return _TermLandlord(self, store=store, landlord_id=landlord_id, policy=self.policy, reaper=self.reaper,
                             clock=self.clock, **self._options)

    def _make_lease(self, resource: LeasedResource, granted: float) -> LandlordLease:
        landlord_id = self._landlord_id
        assert landlord_id is not None, "leases are made in a term, which knows the group's landlord id"
        return LandlordLease(resource.cookie, self, landlord_id, self.clock.time() + granted, clock=self.clock,
                             term=granted, landlords=self.replicas)

    # -- the thread that opens and closes terms, as the election wants them ---------------------------

    def _load_terms(self) -> None:
        while (change := self._terms.next_change()) is not None:
            wanted, old = change
            if old is not None:
                old.landlord.close()  # its store writes what was renewed first (kept, if the term goes on)
            if wanted is None and self._warm is not None:
                self._warm.resume()  # a follower again: the copy reads the group afresh
            if wanted is not None and not self._open(wanted):
                self._terms.pause_unless_changed(wanted)

    def _open(self, revision: int) -> bool:
        """Make the term's landlord and load the group's leases into it; whether it was done (``False``:
        try again after a pause, unless the wanted term changes meanwhile)."""
        election = self._election
        assert election is not None
        started = time.monotonic()
        try:
            landlord = self._new_landlord(election)
        except LeadershipLost as exc:
            # unconfirmed (not yet deposed: the term is still wanted) or over: without a pause the loader
            # would spin on it, starving of the GIL the keep-alives that could confirm it again
            log.info("%s: the term at revision %d ended or is unconfirmed before its leases were loaded (%s)",
                     self.key, revision, exc)
            return False
        except self._errors as exc:
            log.warning("%s: cannot load the group's leases from etcd (%s); trying again", self.key, exc)
            return False
        except ValueError as exc:  # a landlord id other than the group's: the operator must choose
            log.error("%s: %s; this replica resigns and will not lead", self.key, exc)
            election.close()  # so that a rightly configured replica can
            return True
        self._landlord_id = landlord.landlord_id
        if not self._terms.begin(revision, landlord):
            landlord.close()
            return True
        store = landlord.store
        log.info("%s: leading from revision %d with %d lease(s), loaded in %.3f s from %s%s", self.key, revision,
                 len(landlord), time.monotonic() - started, getattr(store, "source", "its store"),
                 " (its standby table, whole)" if getattr(store, "ready_taken", False) else "")
        return True

    def _new_landlord(self, election: Election) -> Landlord:
        """The landlord of the term beginning, over a store of its own (closed again, with its committer
        thread, if the landlord cannot be made).

        Raises:
            as :meth:`make_landlord`.
        """
        store = EtcdLeaseStore(self._client, election, commit_interval=self.commit_interval, clock=self.clock,
                               warm=self._warm)
        try:
            landlord = self.make_landlord(store=store, landlord_id=self._landlord_id)
        except BaseException:
            store.close()
            raise
        try:
            for begun in self._term_begun:
                begun(landlord)
        except BaseException:
            landlord.close()  # and its store
            raise
        return landlord


class _ElectionClient:
    """The etcd client of a replica's election: the one given, or one made like the replica's own
    (:func:`~landlord.replication.election.connect_like`) when the election is, closed with the replica."""

    def __init__(self, given: pyetcd.MultiEndpointEtcd3Client | None, *,
                 like: pyetcd.MultiEndpointEtcd3Client) -> None:
        self._given, self._like = given, like
        self._made: pyetcd.MultiEndpointEtcd3Client | None = None

    def elect(self, **options: Any) -> Election:
        """An election on this client, with ``options`` (see :class:`~landlord.replication.election.Election`).

        Raises:
            TypeError: none was given, and the replica's client is not a pyetcd client to make one like.
            ValueError, ImportError: as :class:`~landlord.replication.election.Election`.
        """
        client = self._given
        if client is None:
            client = self._made = connect_like(self._like)
        try:
            return Election(client, **options)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close the client made (one given is the caller's to close). Idempotent."""
        made, self._made = self._made, None
        if made is not None:
            made.close()


def _flush(term: Term, key: str) -> None:
    """Write the renewals ``term``'s store has not written yet (a failure is logged)."""
    store = term.landlord.store
    if isinstance(store, EtcdLeaseStore):
        try:
            store.flush()
        except Exception as exc:
            log.warning("%s: renewals not written before the term closed: %s", key, exc)
