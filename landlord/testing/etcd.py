"""A real etcd cluster for tests: three members on loopback, started and cleaned up by the test.

::

    from landlord.testing.etcd import EtcdCluster

    with EtcdCluster() as cluster:          # three members, healthy when this returns
        client = cluster.client()           # fails over between the members
        ...
        cluster.kill_member(cluster.leader())   # kill -9 etcd's own leader
        cluster.restart_member(0)                # the same member again, on its data

Each member is an ``etcd`` process (a :class:`landlord.testing.ChildProcess`)
on ports of its own on 127.0.0.1, with a data directory of its own under a
temporary directory (on tmpfs when there is one: fsyncs cost nothing there),
bootstrapped statically with ``--initial-cluster``. Leaving the ``with``
block (or :meth:`EtcdCluster.close`, or the end of the Python process)
kills and reaps every member and removes the directories, however the test
ended.

Needs the ``etcd`` program (3.4 or later; ``$LANDLORD_ETCD``, else ``etcd``
on ``PATH``; Debian's ``etcd-server`` package installs it) and the
etcd-sdk-python client (``pip install 'landlord[etcd]'``).
:func:`unavailable_reason` says which is missing, for a test to skip on.

``import landlord`` does not import this module: ``import landlord.testing.etcd``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import Pyro5.api
import Pyro5.errors

from ..replication.election import connect, require_pyetcd
from . import ChildProcess, WaitFailed, free_port

if TYPE_CHECKING:
    import pyetcd

__all__ = ["ETCD_ENV", "EtcdUnavailable", "find_etcd", "unavailable_reason", "EtcdMember", "EtcdCluster",
           "replica_status", "leading_replica"]

ETCD_ENV = "LANDLORD_ETCD"
"""The environment variable that names the etcd program to run (default: ``etcd`` on ``PATH``)."""

START_TIMEOUT = 30.0  # seconds for a cluster (or a restarted member) to become healthy on a busy machine
START_ATTEMPTS = 3  # a port free when chosen may be taken before etcd binds it: then start again on others
PROBE_TIMEOUT = 1.0  # seconds one health probe may take
PROBE_INTERVAL = 0.05  # seconds between probes that failed at once (a member not listening yet)


class EtcdUnavailable(RuntimeError):
    """etcd cannot be run here, or a cluster would not start; the message says why."""


def find_etcd() -> str:
    """The etcd program to run: ``$LANDLORD_ETCD``, else ``etcd`` on ``PATH``.

    Raises:
        EtcdUnavailable: neither is there.
    """
    named = os.environ.get(ETCD_ENV)
    if named:
        found = shutil.which(named)
        if found is None:
            raise EtcdUnavailable(f"${ETCD_ENV} names {named!r}, which is not an executable program")
        return found
    found = shutil.which("etcd")
    if found is None:
        raise EtcdUnavailable("no etcd program on PATH (Debian: apt-get install etcd-server; "
                              f"or set ${ETCD_ENV} to one)")
    return found


def unavailable_reason() -> str | None:
    """Why an :class:`EtcdCluster` cannot be started here (no etcd program, or no client), or None."""
    try:
        find_etcd()
        require_pyetcd()
    except (EtcdUnavailable, ImportError) as exc:
        return str(exc)
    return None


def _version(binary: str) -> str:
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    first = done.stdout.splitlines()[:1]
    return first[0].split(":", 1)[-1].strip() if first else "unknown"


class EtcdMember:
    """One member of an :class:`EtcdCluster`: its name, URLs, data directory and process (while it runs)."""

    def __init__(self, name: str, client_port: int, peer_port: int, data_dir: str) -> None:
        self.name = name
        self.client_url = f"http://127.0.0.1:{client_port}"
        self.peer_url = f"http://127.0.0.1:{peer_port}"
        self.data_dir = data_dir
        self.process: ChildProcess | None = None

    @property
    def running(self) -> bool:
        """Whether its process runs (a paused one runs)."""
        return self.process is not None and self.process.alive

    @property
    def pid(self) -> int:
        """Its process id.

        Raises:
            RuntimeError: it has not been started.
        """
        if self.process is None:
            raise RuntimeError(f"etcd member {self.name} has not been started")
        return self.process.pid

    def __repr__(self) -> str:
        return f"EtcdMember({self.name!r}, {self.client_url}, {'running' if self.running else 'stopped'})"


class EtcdCluster:
    """A real etcd cluster on loopback, for tests: :meth:`start` it (or enter it) and it is healthy.

    Args:
        size: how many members (3: a majority survives the loss of one).
        binary: the etcd program (default: :func:`find_etcd`).
        data_parent: where the temporary directory goes (default: ``/dev/shm``
            when writable, else the system's temporary directory).
        heartbeat_ms: etcd's ``--heartbeat-interval``.
        election_timeout_ms: etcd's ``--election-timeout``. The defaults
            (50 and 500, etcd's own being 100 and 1000) let etcd elect a new
            leader of its own within about half a second of losing one, so
            that an :class:`landlord.replication.election.Election` with a 2 s TTL keeps
            its leader through it; they also make etcd grant leases of 1 s.
        start_timeout: seconds to wait for the cluster, or a restarted member, to be healthy.

    Raises:
        ValueError: ``size`` below 1.
        EtcdUnavailable: no etcd program (from the constructor); the cluster
            would not start or become healthy (from :meth:`start`, with the
            members' last output).
        ImportError: the etcd client is not installed.
    """

    def __init__(self, size: int = 3, *, binary: str | None = None, data_parent: str | None = None,
                 heartbeat_ms: int = 50, election_timeout_ms: int = 500,
                 start_timeout: float = START_TIMEOUT) -> None:
        if size < 1:
            raise ValueError(f"a cluster has at least one member, not {size}")
        require_pyetcd()
        self.binary = binary or find_etcd()
        self.version = _version(self.binary)
        self.size = size
        self._data_parent = data_parent if data_parent is not None else _default_parent()
        self._timing = ["--heartbeat-interval", str(heartbeat_ms), "--election-timeout", str(election_timeout_ms),
                        # as in production: without compaction etcd keeps every revision (a replica's
                        # renewals add some 50 bytes each) until its space quota stops new elections
                        "--auto-compaction-mode", "periodic", "--auto-compaction-retention", "5m"]
        self._start_timeout = start_timeout
        self._lock = threading.Lock()
        self.workdir: str | None = None
        self.members: list[EtcdMember] = []

    @property
    def endpoints(self) -> list[str]:
        """Every member's client URL."""
        return [member.client_url for member in self.members]

    def client(self, members: Sequence[int] | None = None, *, timeout: float = 1.0) -> pyetcd.MultiEndpointEtcd3Client:
        """A client of these members (default: all), failing over between them
        (:func:`landlord.replication.election.connect`), each call taking at most ``timeout`` seconds
        (short enough for an :class:`~landlord.replication.election.Election` with its default TTL)."""
        chosen = range(len(self.members)) if members is None else members
        return connect([self.members[i].client_url for i in chosen], timeout=timeout)

    # -- starting

    def start(self) -> EtcdCluster:
        """Start every member and wait until each answers a linearizable read; this cluster.

        Raises:
            EtcdUnavailable: it would not start or become healthy (the message shows the members' output).
            RuntimeError: it runs already.
        """
        if self.members:
            raise RuntimeError(f"{self!r} runs already")
        failure = ""
        for _ in range(START_ATTEMPTS):
            atexit.register(self.close)  # however this process ends; close() unregisters it
            try:
                self._make_members()
                for member in self.members:
                    self._launch(member, state="new")
                self.wait_healthy()
                return self
            except EtcdUnavailable as exc:
                exited = any(not member.running for member in self.members)
                failure = str(exc)
                self.close()
                if not exited:  # running but never healthy: not a port taken meanwhile, so no use retrying
                    break
            except BaseException:
                self.close()
                raise
        raise EtcdUnavailable(failure)

    def _make_members(self) -> None:
        self.workdir = tempfile.mkdtemp(prefix=f"landlord-etcd-{os.getpid()}-", dir=self._data_parent)
        ports: set[int] = set()
        while len(ports) < 2 * self.size:
            ports.add(free_port())
        chosen = sorted(ports)
        self.members = [EtcdMember(f"m{i}", chosen[2 * i], chosen[2 * i + 1], os.path.join(self.workdir, f"m{i}"))
                        for i in range(self.size)]

    def _launch(self, member: EtcdMember, *, state: str) -> None:
        if member.process is not None:
            member.process.close()  # its earlier process: killed if need be, reaped, its pipes closed
        initial = ",".join(f"{m.name}={m.peer_url}" for m in self.members)
        member.process = ChildProcess(
            "--name", member.name, "--data-dir", member.data_dir,
            "--listen-client-urls", member.client_url, "--advertise-client-urls", member.client_url,
            "--listen-peer-urls", member.peer_url, "--initial-advertise-peer-urls", member.peer_url,
            "--initial-cluster", initial, "--initial-cluster-state", state,
            "--initial-cluster-token", os.path.basename(self.workdir or "landlord"),
            *self._timing, "--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn",
            command=[self.binary], name=f"etcd {member.name}")

    def wait_healthy(self, members: Sequence[int] | None = None, *, timeout: float | None = None) -> None:
        """Block until each of ``members`` (default: all) answers a linearizable read, which needs an
        etcd leader and a quorum behind it.

        Raises:
            EtcdUnavailable: not within ``timeout`` (default: the cluster's
                start timeout) seconds, or a member's process ended.
        """
        from pyetcd import Etcd3Exception
        timeout = self._start_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        for index in range(len(self.members)) if members is None else members:
            member = self.members[index]
            client = connect([member.client_url], timeout=PROBE_TIMEOUT, retry_after=PROBE_INTERVAL / 2)
            try:
                while True:
                    if not member.running:
                        raise EtcdUnavailable(f"etcd member {member.name} ended while starting; {self._tails()}")
                    try:
                        client.get("/landlord-testing-etcd/health")
                        break
                    except Exception as exc:  # pyetcd's errors or gRPC's: not serving yet
                        if time.monotonic() >= deadline:
                            raise EtcdUnavailable(f"etcd member {member.name} not healthy within {timeout:g} s "
                                                  f"({exc or type(exc).__name__}); {self._tails()}") from exc
                        if not isinstance(exc, Etcd3Exception) or "timeout" not in str(exc):
                            time.sleep(PROBE_INTERVAL)  # failed at once (not listening yet): a poll's pace
            finally:
                client.close()

    def _tails(self) -> str:
        return "\n".join(f"{m.name}: {m.process.tail(15) if m.process else '(not started)'}" for m in self.members)

    # -- what a test does to its members

    def leader(self) -> int:
        """The index of the member that is etcd's own (raft) leader now, as a running member reports it.

        Raises:
            EtcdUnavailable: no running member answers, or none names a member of this cluster.
        """
        from pyetcd import etcdrpc
        for member in self.members:
            if not member.running:
                continue
            client = connect([member.client_url], timeout=PROBE_TIMEOUT)
            try:
                status = etcdrpc.MaintenanceStub(client.channel).Status(etcdrpc.StatusRequest(), PROBE_TIMEOUT)
                if status.leader == status.header.member_id:
                    return self.members.index(member)
            except Exception:  # this one cannot say: ask another
                continue
            finally:
                client.close()
        raise EtcdUnavailable("no running member reports being etcd's leader")

    def serving(self, client: pyetcd.MultiEndpointEtcd3Client) -> int:
        """The index of the member ``client`` is talking to now.

        Raises:
            EtcdUnavailable: ``client`` is connected to no member of this cluster.
        """
        in_use = client.endpoint_in_use
        for index, member in enumerate(self.members):
            if in_use is not None and member.client_url.endswith(in_use.netloc):
                return index
        raise EtcdUnavailable(f"the client talks to no member of this cluster ({in_use})")

    def stop_member(self, index: int, signum: int = signal.SIGTERM) -> int:
        """End member ``index`` with ``signum`` (killing it if it lingers) and reap it; its exit status."""
        process = self.members[index].process
        return process.stop(signum) if process is not None else 0

    def kill_member(self, index: int) -> int:
        """kill -9 member ``index`` and reap it; its exit status."""
        process = self.members[index].process
        return process.kill() if process is not None else 0

    def pause_member(self, index: int) -> None:
        """SIGSTOP member ``index``: it holds its connections and answers nothing (a hung member)."""
        os.kill(self.members[index].pid, signal.SIGSTOP)

    def resume_member(self, index: int) -> None:
        """SIGCONT member ``index``."""
        os.kill(self.members[index].pid, signal.SIGCONT)

    def restart_member(self, index: int) -> None:
        """Start member ``index`` again (stopping it first if it runs) on its ports and data, and wait
        until it is healthy.

        Raises:
            EtcdUnavailable: it did not become healthy in time.
        """
        member = self.members[index]
        if member.running:  # not reaped: the pid is still its own
            os.kill(member.pid, signal.SIGCONT)  # a paused member would not end on SIGTERM
            self.stop_member(index)
        self._launch(member, state="existing")
        self.wait_healthy([index])

    def heal(self) -> None:
        """Resume every paused member, start again every stopped one, and wait until all are healthy:
        what a test that broke the cluster leaves behind, mended for the next.

        Raises:
            EtcdUnavailable: a member did not become healthy in time.
        """
        for member in self.members:
            if member.running:
                os.kill(member.pid, signal.SIGCONT)  # harmless on one that runs
            else:
                self._launch(member, state="existing")
        self.wait_healthy()

    # -- ending

    def close(self) -> None:
        """Kill and reap every member, and remove the data directories. Idempotent."""
        with self._lock:
            members, self.members = self.members, []
            workdir, self.workdir = self.workdir, None
        for member in members:
            if member.process is not None:
                with contextlib.suppress(OSError, subprocess.TimeoutExpired, WaitFailed):
                    member.process.close()
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
        atexit.unregister(self.close)

    def __enter__(self) -> EtcdCluster:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"EtcdCluster({self.endpoints}, etcd {self.version})"


def replica_status(uri: str, *, timeout: float = 1.0) -> dict[str, Any] | None:
    """What the replica at ``uri`` says of itself (:meth:`landlord.ReplicatedLandlord.replica_status`:
    ``leading``, ``leader``, ``group``, ``held``), or ``None`` if it does not answer within ``timeout`` seconds."""
    try:
        with Pyro5.api.Proxy(uri) as proxy:
            proxy._pyroTimeout = timeout
            answer: dict[str, Any] = proxy.replica_status()
            return answer
    except Pyro5.errors.CommunicationError:
        return None


def leading_replica(uris: Sequence[str], *, excluding: int | None = None, timeout: float = 10.0,
                    poll: float = 0.05) -> int:
    """The index in ``uris`` of the replica that answers as leader, the others (all but
    ``excluding``) asked in turn until one does: polled, as replicas in other processes tell
    nothing unasked.

    Raises:
        WaitFailed: none does within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for index, uri in enumerate(uris):
            status = replica_status(uri) if index != excluding else None
            if status is not None and status["leading"]:
                return index
        threading.Event().wait(poll)  # a poll's period, not a synchronisation
    raise WaitFailed(f"no replica of {', '.join(uris)} leads after {timeout:g} s")


def _default_parent() -> str | None:
    """tmpfs if there is one to write to, else the system's temporary directory (None)."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
