"""The safety checker for locks: clients in processes of their own contend for a lock while the
checker pauses, kills and partitions them; a fenced resource logs every write (issue 25, item 6).

::

    python -m landlord.testing.lockcheck --clients 4 --rounds 50 --pauses 6 --kills 2
    python -m landlord.testing.lockcheck --clients 3 --rounds 20 --store --restarts 1
    python -m landlord.testing.lockcheck --clients 3 --rounds 20 --replicated --restarts 2
    python -m landlord.testing.lockcheck --clients 3 --rounds 20 --pauses 4 --unfenced

What runs, each a process of its own (``python -m landlord.testing.lockcheck <program>``):

- ``resource``: a Pyro5 object guarding a log with a :class:`~landlord.Fence`. Every write
  carries the writer's fencing token; the resource appends each write, accepted or refused,
  to an append-only log (one JSON line, flushed, in the order the fence decided). With
  ``--unfenced`` it accepts every write and only notes which were stale: what happens
  without fencing.
- ``landlord``: the lock service of the default backend, a served :class:`~landlord.Landlord`
  (with ``--store``, on a :class:`~landlord.LeaseStore`).
- ``client`` (N of them): M rounds of acquire the lock, write a few times through the
  resource sending its token, release. Before each write it checks :attr:`valid`, works a
  little (what a holder does between its check and its write: where a pause hurts), reads
  ``valid`` again and sends the write, which reports both readings.
- ``run`` (the default): starts them all, applies a schedule of faults from this process,
  waits for the clients to finish their rounds, reads the log and prints a :class:`Report`.

The faults, a fixed number of each, in random order at random gaps (``--seed`` repeats a
run's choices), aimed at the lock's holder four times out of five: ``pause`` (SIGSTOP, then
SIGCONT after longer than a term: the lock goes to another meanwhile), ``kill`` (kill -9, and a
replacement client with a new id takes over the rest of its rounds), ``partition`` (a hook
the caller supplies, e.g. a network namespace's link taken down: :class:`LockCheck`'s
``partition``), ``restart`` (kill -9 of the lock service and a restart, for a backend that
can: the default one with ``--store``; a replica group's leader, with ``--replicated``:
:class:`landlord.testing.replicacheck.ReplicaGroupBackend`).

What the log is checked for (:func:`analyse`):

- **safety**: no accepted write carries a token below an earlier accepted one (fenced: must be
  none; unfenced: the *stale writes that landed*, what fencing prevents), and no token was
  written by two clients;
- **belief**: how often two processes believed themselves holders at once. Each holding's
  window runs from its first to its last reading of ``valid`` that said true, each instant
  read from ``time.monotonic()`` *before* reading ``valid`` (so the window is one the lock
  really was believed valid in: a pause between the two readings cannot stretch it); on one
  host every process reads the same ``CLOCK_MONOTONIC``. Windows of different clients that
  overlap are counted;
- **late writes**: writes that arrived after a newer holder had acquired. Fencing refuses them
  once the newer holder has written; before that one lands, ordered before the newer holder's
  writes (what fencing promises: the resource's order follows the tokens');
- **tokens gone back**: holdings whose token is below one acquired before them, in the order
  their clients' ``acquire`` returned (a holding wrote believing itself holder: its lease was
  live when it acquired, so it was granted after every holding that acquired before it). Must be
  none for a lock service whose tokens only go up, through its restarts and failovers.

The backend is pluggable: a :class:`Backend` subclass starts the lock service in the checker
(:meth:`Backend.start`) and opens a lock in each client (:meth:`Backend.open_lock`: anything
with ``acquire(blocking, timeout)`` and ``release()``, and ``token`` and ``valid`` where it has
them; see :class:`LockLike`). Clients import it
by ``module:Class`` (:meth:`Backend.path`), so it must live in an importable module.
:class:`LandlordBackend` is landlord's :class:`~landlord.Lock`; a backend without fencing tokens
(``fencing_tokens = False``) gets tickets from the resource in the order its clients acquired,
enough to count stale writes unfenced.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import dataclasses
import importlib
import json
import logging
import math
import os
import pathlib
import random
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import Pyro5.api
import Pyro5.errors

from ..errors import StaleTokenError
from ..fence import Fence
from . import ChildProcess, Line, free_port

if TYPE_CHECKING:
    from ..grantor.hooks import LeaseHooks
    from ..grantor.landlord import Landlord

__all__ = [
    "LockLike", "Backend", "LandlordBackend", "Write", "read_log", "FencedResource", "Analysis", "analyse",
    "Faults", "Report", "LockCheck", "run_client", "main",
]

log = logging.getLogger("landlord.lockcheck")

PROGRAM = [sys.executable, "-m", "landlord.testing.lockcheck"]
RESOURCE_ID = "resource"
LANDLORD_ID = "locks"
LOCK_NAME = "lockcheck"
RESOURCE_TIMEOUT = 10.0  # seconds a client's write may take (a partitioned client's, say)
ACQUIRE_TIMEOUT = 60.0  # seconds a client waits for the lock before it says so and asks again
RETRY_PAUSE = 0.2  # seconds a client waits after a failed round before its next
HOLDER_BIAS = 0.8  # how often a fault is aimed at a holder rather than at any client
START_TIMEOUT = 30.0  # seconds for a program to start on a busy machine
CLIENT_CHECK = 0.5  # seconds between two looks at whether a client died by itself


# -- the backends ------------------------------------------------------------------------------


class LockLike(Protocol):
    """What a client needs of a lock (landlord's :class:`~landlord.Lock` is one).

    ``token`` is read once ``acquire`` returns (``None``: the lock is no longer held; a backend
    whose locks have no tokens sets :attr:`Backend.fencing_tokens` false and its locks need none).
    ``valid``, whether the client may still act as holder, may be left out: a lock without it
    is believed held until it is released (as an application would, with a lock that cannot tell).
    """

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool: ...

    def release(self) -> None: ...


class Backend:
    """A lock service for the checker: started in the checker's process, a lock opened in each client.

    Subclass it for another service (etcd, ZooKeeper, Redis): override :meth:`start`, :meth:`close`,
    :meth:`open_lock` and, where the service can be killed and restarted, :meth:`restart` (with
    :attr:`restartable` true). The class must be importable by :meth:`path` in the clients.
    """

    name = "backend"
    fencing_tokens = True  # False: its locks have no tokens (the resource hands out tickets instead)
    restartable = False  # :meth:`restart` kills and restarts the service
    takeover_delay = 0.0  # seconds beyond a term before a dead holder's lock can go to another

    def start(self, workdir: pathlib.Path) -> str:
        """Start the service (files under ``workdir``); the configuration a client's :meth:`open_lock` reads."""
        raise NotImplementedError

    def restart(self) -> None:
        """Kill the service with kill -9 and start it again, on what it stored."""
        raise NotImplementedError(f"{self.name} cannot be restarted")

    def close(self) -> None:
        """Stop the service (after the clients)."""

    @classmethod
    def open_lock(cls, config: str, name: str, term: float) -> LockLike:
        """In a client: a lock on ``name`` of the service ``config`` describes, its lease ``term`` seconds."""
        raise NotImplementedError

    @classmethod
    def path(cls) -> str:
        """How a client imports this class: ``module:Class``."""
        return f"{cls.__module__}:{cls.__qualname__}"


def load_backend(path: str) -> type[Backend]:
    """The backend class ``module:Class`` names.

    Raises:
        ValueError: not ``module:Class``, or not a :class:`Backend`.
        ImportError: the module cannot be imported.
    """
    module, _, name = path.partition(":")
    if not module or not name:
        raise ValueError(f"a backend is module:Class, got {path!r}")
    found = getattr(importlib.import_module(module), name, None)
    if not isinstance(found, type) or not issubclass(found, Backend):
        raise ValueError(f"{path} is not a lockcheck Backend")
    return found


class LandlordBackend(Backend):
    """landlord's :class:`~landlord.Lock`, on a landlord this backend serves (``python -m
    landlord.testing.lockcheck landlord``), or on one given.

    Args:
        store: keep the landlord's leases in a :class:`~landlord.LeaseStore` (then it can be restarted).
        lock_delay: the locks' lock-delay, seconds.
        margin: the locks' margin (``None``: the recipe's default).
        target: a landlord already running (a ``PYRO:`` URI, or a replica group's URIs): nothing is started.
        host: the address the landlord serves on.
        verbose: the landlord prints a line per named lease that comes or ends (``leased``, ``expired``, ...).
    """

    def __init__(self, *, store: bool = False, lock_delay: float = 0.0, margin: float | None = None,
                 target: str | Sequence[str] | None = None, host: str = "127.0.0.1", verbose: bool = False) -> None:
        self.store, self.lock_delay, self.margin, self.target, self.host = store, lock_delay, margin, target, host
        self.verbose = verbose
        self.name = "landlord (given)" if target is not None else "landlord with a store" if store else "landlord"
        self.restartable = store and target is None
        self.takeover_delay = lock_delay
        self.server: ChildProcess | None = None
        self._argv: list[str] = []
        self.uri: str | None = None

    def start(self, workdir: pathlib.Path) -> str:
        if self.target is None:
            self._argv = ["landlord", "--host", self.host, "--port", str(free_port(self.host))]
            if self.store:
                store = workdir / "landlord.sqlite"
                for leftover in workdir.glob(f"{store.name}*"):  # an earlier run's store, its journal, its lock file
                    leftover.unlink(missing_ok=True)
                self._argv += ["--store", str(store)]
            if self.verbose:
                self._argv.append("--verbose")
            self._serve()
        return self._config(self.target if self.target is not None else self.uri)

    def _config(self, target: str | Sequence[str] | None) -> str:
        """What :meth:`open_lock` reads in a client: the landlord (a URI, or a group's URIs), the locks' options."""
        return json.dumps({"target": target if isinstance(target, str) else list(target or ()),
                           "lock_delay": self.lock_delay, "margin": self.margin})

    def _serve(self) -> None:
        self.server = ChildProcess(*PROGRAM[1:], *self._argv, name="landlord")
        try:
            self.uri = self.server.read_uri(START_TIMEOUT)
        except BaseException:
            self.server.close()
            raise

    def restart(self) -> None:
        if not self.restartable or self.server is None:
            raise NotImplementedError(f"{self.name} cannot be restarted")
        self.server.kill()
        self.server.close()
        self._serve()

    def close(self) -> None:
        if self.server is not None:
            self.server.close()

    @classmethod
    def open_lock(cls, config: str, name: str, term: float) -> LockLike:
        from ..recipe.lock import Lock

        options = json.loads(config)
        return Lock(options["target"], name, duration=term, lock_delay=options["lock_delay"], margin=options["margin"])


# -- the resource ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Write:
    """One write a client sent, as the resource logged it (times on ``time.monotonic()``).

    ``checked_at``: read just before the client found ``valid`` true, before its work;
    ``believed_at``: read just before it read ``valid`` again, as it sent; ``believed``: that
    second reading; ``acquired_at``: read once its ``acquire`` returned; ``arrived_at``: read
    by the resource when the write arrived; ``stale``: its token was below one accepted before.
    """

    client: str
    token: int
    seq: int
    believed: bool
    checked_at: float
    believed_at: float
    acquired_at: float
    arrived_at: float
    accepted: bool
    stale: bool


def read_log(path: str | os.PathLike[str]) -> list[Write]:
    """The writes a resource logged, in the order it decided them (a torn last line is left out)."""
    writes = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if line.endswith("\n"):
                writes.append(Write(**json.loads(line)))
    return writes


class FencedResource:
    """What the clients write through: a :class:`~landlord.Fence` (unless ``fenced`` is false) over
    an append-only log of every write. Thread-safe (a Pyro5 daemon calls it from many threads).

    Args:
        log_path: the log, appended to (one JSON line per write, flushed).
        fenced: refuse writes whose token is below one accepted before; ``False``: accept them
            all (noting which were stale).
    """

    def __init__(self, log_path: str | os.PathLike[str], *, fenced: bool = True) -> None:
        self.fenced = fenced
        self._fence = Fence()
        self._lock = threading.Lock()
        self._log = open(log_path, "a", encoding="utf-8")  # open as long as it serves
        self._highest: int | None = None
        self._tickets = 0
        self.accepted = self.refused = self.stale = 0

    @Pyro5.api.expose
    def write(self, client: str, token: int, seq: int, believed: bool, checked_at: float, believed_at: float,
              acquired_at: float) -> bool:
        """Write ``seq`` of ``client`` with ``token``; whether it was accepted."""
        with self._lock:
            arrived_at = time.monotonic()
            stale = self._highest is not None and token < self._highest
            accepted = True
            if self.fenced:
                try:
                    self._fence.check(token)
                except StaleTokenError:
                    accepted = False
            if accepted:
                self._highest = token if self._highest is None else max(self._highest, token)
                self.accepted += 1
                self.stale += stale
            else:
                self.refused += 1
            record = Write(client, token, seq, bool(believed), checked_at, believed_at, acquired_at, arrived_at,
                           accepted, stale)
            self._log.write(json.dumps(dataclasses.asdict(record)) + "\n")
            self._log.flush()
            return accepted

    @Pyro5.api.expose
    def ticket(self) -> int:
        """The next number in the order clients asked (tokens for a backend without them)."""
        with self._lock:
            self._tickets += 1
            return self._tickets

    @Pyro5.api.expose
    def stats(self) -> dict[str, int]:
        """Writes accepted and refused so far, and stale writes accepted."""
        with self._lock:
            return {"accepted": self.accepted, "refused": self.refused, "stale": self.stale}

    def close(self) -> None:
        with self._lock:
            self._log.close()


# -- a client ----------------------------------------------------------------------------------


def _say(*words: object) -> None:
    """One line to stdout in one write, flushed: the checker reads it as it comes."""
    sys.stdout.write(" ".join(str(word) for word in words) + "\n")
    sys.stdout.flush()


def run_client(backend: type[Backend], config: str, resource_uri: str, client: str, rounds: int, *,
               writes: int = 3, work: float = 0.01, term: float = 2.0, name: str = LOCK_NAME,
               seed: int | None = None, say: Callable[..., None] = _say) -> int:
    """``rounds`` rounds of acquire, ``writes`` writes through the resource, release; the rounds done.

    Prints, one line each: ``ready``; ``holding <token> <acquired_at>``; ``invalid <token> <when>``
    when a check before a write finds the lock no longer valid (the round's writes stop);
    ``round <n> <token>`` once a round is over (released); ``error <where> <what>`` for a call
    that failed (the round is tried again); ``done <rounds>`` at the end.
    """
    lock = backend.open_lock(config, name, term)
    resource = Pyro5.api.Proxy(resource_uri)
    resource._pyroTimeout = RESOURCE_TIMEOUT
    rng = random.Random(seed)
    pause = threading.Event()  # never set: a client's work is a wait of its own length
    say("ready")
    done = seq = 0
    while done < rounds:
        try:
            if not lock.acquire(timeout=ACQUIRE_TIMEOUT):
                say("timeout", f"{time.monotonic():.6f}")
                continue
        except Exception as exc:
            say("error", "acquire", f"{type(exc).__name__}: {exc}".replace("\n", " ")[:200])
            with contextlib.suppress(Exception):
                lock.release()
            pause.wait(RETRY_PAUSE)
            continue
        acquired_at = time.monotonic()
        token = getattr(lock, "token", None) if backend.fencing_tokens else _ticket(resource)
        if token is None:
            say("invalid", "none", f"{acquired_at:.6f}")
        else:
            say("holding", token, f"{acquired_at:.6f}")
            for _ in range(writes):
                checked_at = time.monotonic()  # read before valid: an instant the lock was believed valid
                if not _believed(lock):
                    say("invalid", token, f"{checked_at:.6f}")
                    break
                pause.wait(work * rng.uniform(0.5, 1.5))
                seq += 1
                believed_at = time.monotonic()
                believed = _believed(lock)
                try:
                    resource.write(client, token, seq, believed, checked_at, believed_at, acquired_at)
                except Pyro5.errors.CommunicationError as exc:
                    say("error", "write", f"{type(exc).__name__}: {exc}".replace("\n", " ")[:200])
                    resource._pyroRelease()
        try:
            lock.release()
        except Exception as exc:
            say("error", "release", f"{type(exc).__name__}: {exc}".replace("\n", " ")[:200])
        done += 1
        say("round", done, token)
    say("done", done)
    return done


def _believed(lock: LockLike) -> bool:
    """Whether the client believes it holds ``lock`` now: its ``valid``, if it has one."""
    return bool(getattr(lock, "valid", True))


def _ticket(resource: Any) -> int | None:
    try:
        ticket: int = resource.ticket()
        return ticket
    except Pyro5.errors.CommunicationError:
        return None


# -- reading the log ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Holding:
    """One grant of the lock as its writes show it: its client, token, and the window in which
    the client certainly believed itself holder (``start`` to ``end``, on ``time.monotonic()``)."""

    client: str
    token: int
    start: float
    end: float
    acquired_at: float


@dataclasses.dataclass(frozen=True, slots=True)
class Analysis:
    """What a resource's log shows (see the module's docstring)."""

    writes: int
    accepted: int
    refused: int
    refused_believed: int  # refused writes whose client still believed itself holder as it sent
    stale_accepted: tuple[Write, ...]  # accepted with a token below one accepted before
    shared_tokens: dict[int, tuple[str, ...]]  # tokens written by more than one client
    holdings: int
    overlaps: tuple[tuple[Holding, Holding], ...]  # belief windows of two clients that overlap
    closest_handover: float | None  # seconds from one holder's last belief to the next's first
    late: int  # writes that arrived after a newer holder had acquired
    late_accepted: int
    # (the highest token acquired before, a holding that acquired after it with a lower token)
    tokens_back: tuple[tuple[Holding, Holding], ...] = ()

    @property
    def safe(self) -> bool:
        """No stale write accepted, no token written by two clients."""
        return not self.stale_accepted and not self.shared_tokens


def analyse(writes: Sequence[Write]) -> Analysis:
    """Check a resource's log (in the order it was written): see the module's docstring."""
    highest: int | None = None
    stale = []
    for write in writes:
        if write.accepted:
            if highest is not None and write.token < highest:
                stale.append(write)
            highest = write.token if highest is None else max(highest, write.token)
    clients: dict[int, set[str]] = {}
    for write in writes:
        clients.setdefault(write.token, set()).add(write.client)
    shared = {token: tuple(sorted(names)) for token, names in clients.items() if len(names) > 1}
    holdings = _holdings(writes)
    late = _late(writes, holdings)
    return Analysis(
        writes=len(writes), accepted=sum(w.accepted for w in writes), refused=sum(not w.accepted for w in writes),
        refused_believed=sum(not w.accepted and w.believed for w in writes), stale_accepted=tuple(stale),
        shared_tokens=shared, holdings=len(holdings), overlaps=_overlaps(holdings),
        closest_handover=_closest_handover(holdings), late=len(late), late_accepted=sum(w.accepted for w in late),
        tokens_back=_tokens_back(holdings))


def _holdings(writes: Sequence[Write]) -> list[Holding]:
    """Each (client, token)'s window of certain belief, by token."""
    seen: dict[tuple[str, int], list[float]] = {}
    acquired: dict[tuple[str, int], float] = {}
    for write in writes:
        key = (write.client, write.token)
        instants = seen.setdefault(key, [])
        instants.append(write.checked_at)  # the write was sent only after this reading said valid
        if write.believed:
            instants.append(write.believed_at)
        acquired[key] = min(acquired.get(key, math.inf), write.acquired_at)
    return sorted((Holding(client, token, min(instants), max(instants), acquired[(client, token)])
                   for (client, token), instants in seen.items()), key=lambda h: (h.token, h.start))


def _overlaps(holdings: Sequence[Holding]) -> tuple[tuple[Holding, Holding], ...]:
    found = []
    by_start = sorted(holdings, key=lambda h: h.start)
    active: list[Holding] = []
    for holding in by_start:
        active = [other for other in active if other.end > holding.start]
        found += [(other, holding) for other in active if other.client != holding.client]
        active.append(holding)
    return tuple(found)


def _closest_handover(holdings: Sequence[Holding]) -> float | None:
    gaps = [later.start - earlier.end for earlier, later in zip(holdings, holdings[1:])
            if earlier.client != later.client]
    return min(gaps) if gaps else None


def _tokens_back(holdings: Sequence[Holding]) -> tuple[tuple[Holding, Holding], ...]:
    """Holdings, in the order their clients acquired, whose token is below one acquired before
    (each with the highest before it). A holding is one that wrote believing itself holder, so its
    lease had not ended when its ``acquire`` returned: a lower token acquired later was granted later,
    by a lock service whose tokens went back (a failover that forgot a grant, say)."""
    back = []
    highest: Holding | None = None
    for holding in sorted(holdings, key=lambda h: h.acquired_at):
        if highest is not None and holding.token < highest.token:
            back.append((highest, holding))
        elif highest is None or holding.token > highest.token:
            highest = holding
    return tuple(back)


def _late(writes: Sequence[Write], holdings: Sequence[Holding]) -> list[Write]:
    """Writes that arrived after a holding of a higher token had acquired."""
    tokens = [h.token for h in holdings]
    earliest_after = [math.inf] * (len(holdings) + 1)  # [i]: the first acquisition among holdings[i:]
    for index in range(len(holdings) - 1, -1, -1):
        earliest_after[index] = min(earliest_after[index + 1], holdings[index].acquired_at)
    return [w for w in writes if earliest_after[bisect.bisect_right(tokens, w.token)] < w.arrived_at]


# -- the run -----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Faults:
    """How many faults of each kind a run applies (see the module's docstring), and their timing."""

    pauses: int = 0
    kills: int = 0
    partitions: int = 0
    restarts: int = 0
    gap: tuple[float, float] = (0.5, 2.0)  # seconds between two faults
    length: tuple[float, float] = (1.3, 2.0)  # a pause's or partition's length, in terms (plus the takeover delay)
    holder_bias: float = HOLDER_BIAS  # how often a pause, kill or partition is aimed at the holder, if there is one

    def plan(self, rng: random.Random) -> list[str]:
        kinds = ["pause"] * self.pauses + ["kill"] * self.kills + ["partition"] * self.partitions + \
            ["restart"] * self.restarts
        rng.shuffle(kinds)
        return kinds


@dataclasses.dataclass
class Report:
    """What a run did and what its log shows; :meth:`format` is what the command line prints."""

    backend: str
    fenced: bool
    clients: int
    rounds: int
    term: float
    seed: int
    faults: dict[str, int]  # applied, by kind
    on_holders: dict[str, int]  # of those, aimed at a client that held the lock then
    rounds_done: int
    invalid: int  # rounds in which a client found its lock no longer valid before a write
    errors: dict[str, int]  # calls that failed in the clients: "<acquire|write|release> <exception>": how many
    finished: bool
    seconds: float
    analysis: Analysis

    @property
    def ok(self) -> bool:
        """Every round done, and (fenced) no stale write accepted and no token shared."""
        return self.finished and (self.analysis.safe or not self.fenced)

    def format(self) -> str:
        a = self.analysis
        faults = ", ".join(f"{count} {kind}" + (f" ({self.on_holders[kind]} of the holder)" if kind in self.on_holders
                                                 else "") for kind, count in self.faults.items()) or "none"
        lines = [
            f"lockcheck: {self.backend}, {'fenced' if self.fenced else 'UNFENCED'} resource, {self.clients} clients "
            f"x {self.rounds} rounds, term {self.term:g} s, seed {self.seed}",
            f"  faults applied:        {faults}",
            f"  rounds done:           {self.rounds_done}{'' if self.finished else ' (NOT FINISHED)'} in "
            f"{self.seconds:.1f} s; {a.holdings} holdings wrote; {self.invalid} rounds found the lock invalid "
            f"before a write; {self._errors()}",
            f"  writes:                {a.writes} sent, {a.accepted} accepted, {a.refused} refused as stale "
            f"({a.refused_believed} of them sent while the client still believed it held the lock)",
        ]
        if self.fenced:
            lines.append(f"  stale writes accepted: {len(a.stale_accepted)} (a token below one accepted before)")
        else:
            lines.append(f"  stale writes landed:   {len(a.stale_accepted)} (a token below one accepted before: "
                         "what a fence would have refused)")
        lines += [
            f"  tokens of two clients: {len(a.shared_tokens)}",
            f"  tokens gone back:      {len(a.tokens_back)} holdings acquired with a token below one acquired "
            "before",
            f"  late writes:           {a.late} arrived after a newer holder acquired; {a.late_accepted} accepted "
            f"({'before the newer holder wrote' if self.fenced else 'unchecked'})",
            f"  two believed holders:  {len(a.overlaps)} overlapping belief windows"
            + (f" (worst {max(min(x.end, y.end) - y.start for x, y in a.overlaps) * 1000:.1f} ms)" if a.overlaps
               else "")
            + ("" if a.closest_handover is None else
               f"; closest hand-over {a.closest_handover * 1000:.1f} ms from one's last belief to the next's first"),
            f"  verdict:               {self._verdict()}",
        ]
        return "\n".join(lines)

    def _errors(self) -> str:
        if not self.errors:
            return "no failed calls"
        return f"{sum(self.errors.values())} failed calls (" + ", ".join(
            f"{kind}: {count}" for kind, count in self.errors.items()) + ")"

    def _verdict(self) -> str:
        if not self.finished:
            return "NOT FINISHED: the clients did not complete their rounds"
        if not self.fenced:
            return f"{len(self.analysis.stale_accepted)} stale writes landed without fencing"
        if not self.analysis.safe:
            return "UNSAFE: stale writes got through the fence"
        if self.analysis.tokens_back:
            return "SAFE through the fence; but the lock service's tokens went back"
        if self.analysis.overlaps:
            return "SAFE through the fence; but two clients believed themselves holders at once"
        return "SAFE"

    def as_dict(self) -> dict[str, Any]:
        a = self.analysis
        return {"backend": self.backend, "fenced": self.fenced, "clients": self.clients, "rounds": self.rounds,
                "term": self.term, "seed": self.seed, "faults": self.faults, "on_holders": self.on_holders,
                "rounds_done": self.rounds_done,
                "invalid": self.invalid, "errors": self.errors, "finished": self.finished, "seconds": self.seconds,
                "writes": a.writes, "accepted": a.accepted, "refused": a.refused,
                "refused_believed": a.refused_believed, "stale_accepted": len(a.stale_accepted),
                "shared_tokens": len(a.shared_tokens), "holdings": a.holdings, "overlaps": len(a.overlaps),
                "closest_handover": a.closest_handover, "late": a.late, "late_accepted": a.late_accepted,
                "tokens_back": len(a.tokens_back),
                "ok": self.ok}


Spawn = Callable[[str, int, Sequence[str], Callable[[Line], None] | None], ChildProcess]
"""``spawn(role, index, args, on_line)``: start the ``"resource"`` (index 0) or client ``index``
(``"client"``) as a :class:`ChildProcess` of this Python with ``args`` and ``on_line``; e.g. in a
network namespace of its own (``command=["ip", "netns", "exec", ..., sys.executable]``)."""

Partition = Callable[[int, ChildProcess], Callable[[], None]]
"""``partition(slot, process)``: cut that client off from the lock service; returns how to heal it."""


class _Slot:
    """One of the N clients: the process playing it now (a replacement after a kill) and its rounds."""

    def __init__(self, index: int) -> None:
        self.index, self.generation = index, 0
        self.process: ChildProcess | None = None
        self.base = self.completed = 0  # rounds done before this process, and in all
        self.holding = self.done = False
        self.invalid = 0

    @property
    def client(self) -> str:
        return f"c{self.index}.{self.generation}"


class LockCheck:
    """One run of the checker (see the module's docstring); :meth:`run` returns its :class:`Report`.

    Args:
        backend: the lock service (default: a :class:`LandlordBackend`).
        clients: N, the clients contending.
        rounds: M, each client's rounds.
        writes: writes per round.
        work: seconds a client works between its check of ``valid`` and its write (on average).
        term: the locks' lease term, seconds.
        faults: the faults to apply.
        fenced: whether the resource checks tokens.
        seed: the random choices' seed (default: a random one, in the report).
        timeout: seconds the clients have to finish (then they are killed, and the report says so).
        spawn: how to start the resource and the clients (default: a :class:`ChildProcess` of this Python).
        partition: how to partition a client (needed for ``faults.partitions``).
        resource_host: the address the resource serves on (the clients must reach it).
        workdir: where the log and the stores go (default: a temporary directory, removed after).

    Each fault is logged as it is applied (logger ``landlord.lockcheck``, INFO).
    """

    def __init__(self, backend: Backend | None = None, *, clients: int = 4, rounds: int = 50, writes: int = 3,
                 work: float = 0.01, term: float = 2.0, faults: Faults = Faults(), fenced: bool = True,
                 seed: int | None = None, timeout: float = 600.0, spawn: Spawn | None = None,
                 partition: Partition | None = None, resource_host: str = "127.0.0.1",
                 workdir: str | os.PathLike[str] | None = None) -> None:
        if clients < 1 or rounds < 1 or writes < 1 or term <= 0 or work < 0:
            raise ValueError("clients, rounds and writes must be at least 1, term positive, work not negative")
        if faults.partitions and partition is None:
            raise ValueError("partitions need a partition hook")
        self.backend = backend if backend is not None else LandlordBackend()
        if faults.restarts and not self.backend.restartable:
            raise ValueError(f"{self.backend.name} cannot be restarted")
        self.clients, self.rounds, self.writes, self.work, self.term = clients, rounds, writes, work, term
        self.faults, self.fenced, self.timeout = faults, fenced, timeout
        self.seed = seed if seed is not None else random.randrange(2**31)
        self.rng = random.Random(self.seed)
        self.spawn = spawn if spawn is not None else _spawn_here
        self.partition, self.resource_host, self.workdir = partition, resource_host, workdir
        self.applied = {"pause": 0, "kill": 0, "partition": 0, "restart": 0}
        self.on_holders = dict.fromkeys(self.applied, 0)  # faults aimed at a client that held the lock then
        self.errors: dict[str, int] = {}  # calls that failed in the clients: "<where> <exception>": how many
        self.slots = [_Slot(index) for index in range(clients)]
        self._changed = threading.Condition()
        self._config = self._resource_uri = ""

    def run(self) -> Report:
        """Start everything, apply the faults, wait for the rounds, read and check the log."""
        started = time.monotonic()
        with self._directory() as workdir:
            log_path = workdir / "writes.log"
            log_path.unlink(missing_ok=True)  # a directory kept from an earlier run: this run's writes alone
            argv = ["resource", "--log", str(log_path), "--host", self.resource_host]
            resource = self.spawn("resource", 0, [*PROGRAM[1:], *argv, *([] if self.fenced else ["--unfenced"])],
                                  None)
            try:
                self._resource_uri = resource.read_uri(START_TIMEOUT)
                self._config = self.backend.start(workdir)
                for slot in self.slots:
                    self._start(slot)
                deadline = started + self.timeout
                self._apply_faults(deadline)
                finished = self._wait_done(deadline)
            finally:
                for slot in self.slots:
                    if slot.process is not None:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(slot.process.pid, signal.SIGCONT)
                        slot.process.close()
                self.backend.close()
                resource.close()
            writes = read_log(log_path)
        return Report(self.backend.name, self.fenced, self.clients, self.rounds, self.term, self.seed,
                      {kind: count for kind, count in self.applied.items() if count},
                      {kind: count for kind, count in self.on_holders.items() if count},
                      sum(s.completed for s in self.slots),
                      sum(s.invalid for s in self.slots), dict(sorted(self.errors.items())), finished,
                      time.monotonic() - started, analyse(writes))

    @contextlib.contextmanager
    def _directory(self) -> Iterator[pathlib.Path]:
        if self.workdir is not None:
            pathlib.Path(self.workdir).mkdir(parents=True, exist_ok=True)
            yield pathlib.Path(self.workdir)
        else:
            with tempfile.TemporaryDirectory(prefix="lockcheck-") as made:
                yield pathlib.Path(made)

    # -- clients

    def _start(self, slot: _Slot) -> None:
        args = [*PROGRAM[1:], "client", "--backend", self.backend.path(), "--config", self._config,
                "--resource", self._resource_uri, "--id", slot.client, "--rounds", str(self.rounds - slot.completed),
                "--writes", str(self.writes), "--work", str(self.work), "--term", str(self.term),
                "--seed", str(self.rng.randrange(2**31))]
        slot.base, slot.holding = slot.completed, False
        generation = slot.generation
        slot.process = self.spawn("client", slot.index, args, lambda line: self._heard(slot, generation, line))

    def _heard(self, slot: _Slot, generation: int, line: Line) -> None:
        words = line.text.split()
        with self._changed:
            if not words or generation != slot.generation:
                return  # a line a killed client printed before it died: its replacement counts from its own start
            if words[0] == "holding":
                slot.holding = True
            elif words[0] == "invalid":
                slot.holding, slot.invalid = False, slot.invalid + 1
            elif words[0] == "round" and len(words) > 1 and words[1].isdigit():
                slot.holding, slot.completed = False, slot.base + int(words[1])
            elif words[0] == "error":
                kind = " ".join(words[1:3]).rstrip(":")
                self.errors[kind] = self.errors.get(kind, 0) + 1
            elif words[0] == "done":
                slot.done = True
            else:
                return
            self._changed.notify_all()

    def _wait_done(self, deadline: float, seconds: float = math.inf) -> bool:
        """Wait until every client is done (``True``), ``deadline`` passes or ``seconds`` have (``False``).

        Raises:
            RuntimeError: a client ended before its rounds were done (its output says why).
        """
        until = min(deadline, time.monotonic() + seconds)
        with self._changed:
            while not all(slot.done for slot in self.slots):
                for slot in self.slots:
                    if slot.process is not None and not slot.done and not slot.process.alive:
                        raise RuntimeError(f"client {slot.client} ended before its rounds were done; "
                                           f"{slot.process.tail()}")
                left = until - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(min(left, CLIENT_CHECK))  # a client that dies says nothing: look again
            return True

    # -- faults

    def _apply_faults(self, deadline: float) -> None:
        for kind in self.faults.plan(self.rng):
            if self._wait_done(deadline, self.rng.uniform(*self.faults.gap)):
                return  # every client is done: the faults left are not applied
            if time.monotonic() >= deadline:
                return
            if kind == "restart":
                log.info("restarting %s", self.backend.name)
                self.backend.restart()
                self.applied[kind] += 1
                continue
            slot = self._target()
            if slot is None or slot.process is None:
                continue
            process = slot.process
            if slot.holding:
                self.on_holders[kind] += 1
            if kind == "kill":
                log.info("kill -9 %s (pid %d)", slot.client, process.pid)
                with self._changed:
                    slot.generation += 1
                    slot.process = None
                process.kill()
                process.close()
                with self._changed:
                    done = slot.completed >= self.rounds
                    slot.done = done
                if not done:
                    self._start(slot)
            else:
                length = self.rng.uniform(*self.faults.length) * self.term + self.backend.takeover_delay
                log.info("%s %s for %.2f s", kind, slot.client, length)
                self._for_a_while(kind, slot.index, process, length)
            self.applied[kind] += 1

    def _for_a_while(self, kind: str, index: int, process: ChildProcess, length: float) -> None:
        if kind == "pause":
            os.kill(process.pid, signal.SIGSTOP)
            try:
                threading.Event().wait(length)
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGCONT)
        else:
            assert self.partition is not None
            heal = self.partition(index, process)
            try:
                threading.Event().wait(length)
            finally:
                heal()

    def _target(self) -> _Slot | None:
        """A client to aim at: the holder (if there is one) as often as the faults say; else any still running."""
        with self._changed:
            running = [slot for slot in self.slots if not slot.done and slot.process is not None]
            holders = [slot for slot in running if slot.holding]
        if holders and self.rng.random() < self.faults.holder_bias:
            return self.rng.choice(holders)
        return self.rng.choice(running) if running else None


def _spawn_here(role: str, index: int, args: Sequence[str], on_line: Callable[[Line], None] | None) -> ChildProcess:
    return ChildProcess(*args, name=role if role == "resource" else f"{role} {index}", on_line=on_line)


# -- the programs ------------------------------------------------------------------------------


def _serve_resource(args: argparse.Namespace) -> None:
    resource = FencedResource(args.log, fenced=not args.unfenced)
    daemon = Pyro5.api.Daemon(host=args.host, port=args.port)
    uri = daemon.register(resource, RESOURCE_ID)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    _say("resource at", uri, "(fenced)" if resource.fenced else "(unfenced)")
    daemon.requestLoop(lambda: not stop.is_set())
    daemon.close()
    resource.close()


def printing_hooks() -> LeaseHooks:
    """Lease hooks that print each named lease as it comes and ends, one line each: ``leased|expired|
    cancelled|revoked <name> <token> <now>`` (``leased <name> None``: a waiter queued; ``<now>`` on
    ``time.monotonic()``): what ``landlord --verbose`` prints, and a replica's with ``--verbose``."""
    from ..grantor.hooks import LeaseHooks

    class Ends(LeaseHooks):
        def granted(self, leased: Any) -> None:
            self._say("leased", leased)

        def expired(self, leased: Sequence[Any]) -> None:
            for each in leased:
                self._say("expired", each)

        def cancelled(self, leased: Any) -> None:
            self._say("cancelled", leased)

        def revoked(self, leased: Any, reason: str) -> None:
            self._say("revoked", leased)

        @staticmethod
        def _say(what: str, leased: Any) -> None:
            claim = leased.resource
            _say(what, getattr(claim, "name", "?"), getattr(claim, "token", None), f"{time.monotonic():.6f}")

    return Ends()


def name_view(landlord: Landlord, name: str) -> dict[str, Any]:
    """Who holds ``name`` on ``landlord`` (tokens), how many wait, until when it is closed
    (``time.monotonic()``): what a lock service's ``name_view`` answers."""
    for view in landlord.names():
        if view.name == name:
            return {"holders": [grant.token for grant in view.holders], "waiters": len(view.waiters),
                    "closed_until": view.closed_until}
    return {"holders": [], "waiters": 0, "closed_until": None}


def _serve_landlord(args: argparse.Namespace) -> None:
    from ..grantor.landlord import Landlord
    from ..grantor.policy import LeaseDurationPolicy
    from ..grantor.store import LeaseStore
    from ..serving import serve_landlord

    class LockLandlord(Landlord):
        @Pyro5.api.expose
        def name_view(self, name: str) -> dict[str, Any]:
            """Who holds ``name`` (tokens), how many wait, until when it is closed (``time.monotonic()``)."""
            return name_view(self, name)

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    store = LeaseStore(args.store) if args.store else None
    landlord = LockLandlord(policy=LeaseDurationPolicy(maximum=600), store=store,
                            hooks=printing_hooks() if args.verbose else None)
    serve_landlord(landlord, args.host, args.port, object_id=LANDLORD_ID)
    landlord.close()


def _client(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    run_client(load_backend(args.backend), args.config, args.resource, args.id, args.rounds, writes=args.writes,
               work=args.work, term=args.term, name=args.name, seed=args.seed)


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(name)s: %(message)s")
    if args.backend is not None:
        backend: Backend = load_backend(args.backend)()
    elif args.replicated:
        from .replicacheck import ReplicaGroupBackend  # the etcd extra's: only here

        backend = ReplicaGroupBackend(args.etcd, lock_delay=args.lock_delay)
    else:
        target = args.target.split(",") if args.target and "," in args.target else args.target
        backend = LandlordBackend(store=args.store, lock_delay=args.lock_delay, target=target)
    faults = Faults(pauses=args.pauses, kills=args.kills, restarts=args.restarts, gap=(args.gap[0], args.gap[1]))
    check = LockCheck(backend, clients=args.clients, rounds=args.rounds, writes=args.writes, work=args.work,
                      term=args.term, faults=faults, fenced=not args.unfenced, seed=args.seed, timeout=args.timeout,
                      workdir=args.keep)
    report = check.run()
    print(json.dumps(report.as_dict()) if args.json else report.format(), flush=True)
    return 0 if report.ok else 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m landlord.testing.lockcheck", description=__doc__.splitlines()[0])
    programs = parser.add_subparsers(dest="program", required=True)

    run = programs.add_parser("run", help="the whole check (the default): prints the report")
    run.add_argument("--clients", type=int, default=4, help="N, the clients contending (default 4)")
    run.add_argument("--rounds", type=int, default=50, help="M, each client's rounds (default 50)")
    run.add_argument("--writes", type=int, default=3, help="writes per round (default 3)")
    run.add_argument("--work", type=float, default=0.01, help="seconds between a check of valid and the write")
    run.add_argument("--term", type=float, default=2.0, help="the locks' lease term, seconds (default 2)")
    run.add_argument("--pauses", type=int, default=4, help="SIGSTOPs longer than a term (default 4)")
    run.add_argument("--kills", type=int, default=2, help="kill -9 of a client, replaced (default 2)")
    run.add_argument("--restarts", type=int, default=0,
                     help="kill -9 and restart of the lock service (--store), of its leader (--replicated)")
    run.add_argument("--gap", type=float, nargs=2, default=(0.5, 2.0), metavar=("MIN", "MAX"),
                     help="seconds between two faults (default 0.5 2)")
    run.add_argument("--store", action="store_true", help="the landlord keeps its leases in SQLite")
    run.add_argument("--lock-delay", type=float, default=0.0, help="the locks' lock-delay, seconds")
    run.add_argument("--replicated", action="store_true",
                     help="three replicas of a replicated landlord over etcd (one of its own, or --etcd's); "
                     "a restart kills the leader with kill -9 and starts it again")
    run.add_argument("--etcd", metavar="ENDPOINTS", help="with --replicated: an etcd cluster's endpoints, by commas")
    run.add_argument("--target", help="a landlord already running: its URI, or its replicas' URIs joined by commas")
    run.add_argument("--backend", help="another lock service: module:Class, a lockcheck Backend")
    run.add_argument("--unfenced", action="store_true", help="the resource checks no token: count stale writes")
    run.add_argument("--seed", type=int, help="repeat a run's random choices")
    run.add_argument("--timeout", type=float, default=600.0, help="seconds the clients have to finish")
    run.add_argument("--keep", metavar="DIR", help="keep the log (and the store) in DIR")
    run.add_argument("--json", action="store_true", help="print the report as one JSON object")
    run.add_argument("-v", "--verbose", action="store_true", help="log each fault on stderr")

    resource = programs.add_parser("resource", help="the fenced resource")
    resource.add_argument("--log", required=True)
    resource.add_argument("--host", default="127.0.0.1")
    resource.add_argument("--port", type=int, default=0)
    resource.add_argument("--unfenced", action="store_true")

    landlord = programs.add_parser("landlord", help="a landlord to lock on")
    landlord.add_argument("--host", default="127.0.0.1")
    landlord.add_argument("--port", type=int, default=0)
    landlord.add_argument("--store", help="an SQLite file")
    landlord.add_argument("--verbose", action="store_true", help="a line per named lease that comes or ends")

    client = programs.add_parser("client", help="one contending client")
    client.add_argument("--backend", default=LandlordBackend.path())
    client.add_argument("--config", required=True)
    client.add_argument("--resource", required=True)
    client.add_argument("--id", required=True)
    client.add_argument("--rounds", type=int, required=True)
    client.add_argument("--writes", type=int, default=3)
    client.add_argument("--work", type=float, default=0.01)
    client.add_argument("--term", type=float, default=2.0)
    client.add_argument("--name", default=LOCK_NAME)
    client.add_argument("--seed", type=int)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module's docstring); its exit status: 0 safe, 1 not, 2 bad usage."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments or arguments[0].startswith("-") and arguments[0] not in ("-h", "--help"):
        arguments.insert(0, "run")
    args = _parser().parse_args(arguments)
    if args.program == "resource":
        _serve_resource(args)
    elif args.program == "landlord":
        _serve_landlord(args)
    elif args.program == "client":
        _client(args)
    else:
        return _run(args)
    return 0


if __name__ == "__main__":
    # run as the module a client imports (its Backend classes are the ones load_backend checks), not as __main__
    from landlord.testing.lockcheck import main as module_main

    sys.exit(module_main())
