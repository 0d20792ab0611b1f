"""The lock services the lock benchmarks hold landlord's against: etcd, ZooKeeper and Redis, their servers and locks.

Shared by ``bench_locks.py`` (how fast) and ``bench_lock_safety.py`` (what a
paused or killed holder does to a resource), and by anyone running the safety
checker against them by hand::

    PYTHONPATH=benchmarks .venv/bin/python -m landlord.testing.lockcheck --backend lock_backends:ZooKeeperBackend

- :func:`start_server`: the system's server on a free loopback port, in a
  temporary directory (``harness.ExternalServer``: Debian's ``etcd-server``,
  ``zookeeperd``'s jars, ``redis-server``), or :class:`harness.ServerUnavailable`
  saying what to install.
- :class:`LockBackend`: one client of a system and its locks, through its
  usual Python client: etcd-sdk-python's ``client.lock()``, kazoo's ``Lock``,
  redis-py's ``Lock``; one lock held at a time, its fencing token where the
  system has one (etcd: the revision that created the lock key; ZooKeeper:
  the sequence number of the lock's znode; Redis: none).
- :class:`ServiceBackend` (:class:`EtcdBackend`, :class:`ZooKeeperBackend`,
  :class:`RedisBackend`): the same as :class:`landlord.testing.lockcheck.Backend`\\ s,
  each lock's term (etcd's lease TTL, ZooKeeper's session timeout, Redis' key
  expiry) the checker's term. Their locks have no ``valid``: the checker's
  clients believe them held until they release them, as an application
  would with a lock that cannot tell.

The clients' modules (``pyetcd``, ``kazoo``, ``redis``) are imported only
when a lock is opened: this module imports without them.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import pathlib
import re
import shutil
import threading
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import harness
from harness import ExternalServer, ServerUnavailable

from landlord.testing import lockcheck

SYSTEMS = ("etcd", "ZooKeeper", "Redis")
CLIENT_MODULES = {"etcd": "pyetcd", "ZooKeeper": "kazoo", "Redis": "redis"}  # the module each system's client is
PACKAGES = {"etcd": "etcd-server", "ZooKeeper": "zookeeperd", "Redis": "redis-server"}  # Debian's, for the server
SETUP = {"etcd": "benchmarks/setup_etcd.sh", "ZooKeeper": "benchmarks/setup_locks.sh",
         "Redis": "benchmarks/setup_locks.sh"}
TOKENS = {"etcd": "the revision that created the lock key (lock.revision)",
          "ZooKeeper": "the sequence number of the lock's znode (the end of lock.node)", "Redis": "none"}
ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"  # Debian's; its manifest names the jars it needs
CALL_TIMEOUT = 30.0  # seconds any one call to a server may take
REDIS_SLEEP = 0.1    # seconds between a waiting redis-py Lock's tries (redis-py's default)


# -- the servers -------------------------------------------------------------------------------


class ZooKeeperProcess(ExternalServer):
    """A standalone ZooKeeper on 127.0.0.1, run with ``binary`` (java) from Debian's jars.

    ``tick_ms``: its tick, which also sets the shortest session timeout it grants
    (two ticks) and how finely it expires sessions (in buckets of a tick); it grants
    sessions of up to a minute whatever the tick.
    """

    what = "ZooKeeper"

    def __init__(self, binary: str, parent_dir: str | None = None, *, tick_ms: int = 2000) -> None:
        self.tick_ms = tick_ms
        super().__init__(binary, parent_dir)

    def command(self, attempt: int) -> list[str]:
        config = os.path.join(self.workdir, f"zoo{attempt}.cfg")
        with open(config, "w", encoding="utf-8") as out:  # unknown keys become zookeeper.* system properties
            out.write(f"dataDir={self.workdir}/data{attempt}\nclientPort={self.port}\nclientPortAddress=127.0.0.1\n"
                      f"tickTime={self.tick_ms}\nminSessionTimeout={2 * self.tick_ms}\n"
                      f"maxSessionTimeout={max(20 * self.tick_ms, 60_000)}\n"
                      "admin.enableServer=false\n4lw.commands.whitelist=srvr\n")
        return [self.binary, "-cp", ZOOKEEPER_JAR, "org.apache.zookeeper.server.ZooKeeperServerMain", config]

    def healthy(self) -> bool:
        found = re.match(r"Zookeeper version: ([^-,\s]+)", harness.ask(self.port, b"srvr").decode(errors="replace"))
        if found:
            self.version = found.group(1)
        return found is not None


class RedisProcess(ExternalServer):
    """A Redis on 127.0.0.1 that keeps nothing on disk (``--save '' --appendonly no``)."""

    what = "Redis"

    def command(self, attempt: int) -> list[str]:
        return [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", self.workdir]

    def healthy(self) -> bool:
        found = re.search(rb"redis_version:(\S+)", harness.ask(self.port, b"INFO server\r\nQUIT\r\n"))
        if found:
            self.version = found.group(1).decode()
        return found is not None


def start_server(system: str, data_dir: str | None = None, *, etcd: str = "etcd",
                 zookeeper_tick_ms: int = 2000) -> ExternalServer:
    """``system``'s server (etcd, ZooKeeper or Redis) started on a free loopback port, its directory under
    ``data_dir`` (None: the system's temp dir); ``etcd``: the etcd binary.

    Raises:
        ServerUnavailable: its server or its Python client is not here (the message says what to install),
            or it would not start.
    """
    module, setup = CLIENT_MODULES[system], SETUP[system]
    if importlib.util.find_spec(module) is None:
        raise ServerUnavailable(f"no Python client (module {module}); run {setup}")
    program = {"etcd": etcd, "ZooKeeper": "java", "Redis": "redis-server"}[system]
    path = shutil.which(program)
    if path is None or (system == "ZooKeeper" and not os.path.exists(ZOOKEEPER_JAR)):
        raise ServerUnavailable(f"no {program if path is None else ZOOKEEPER_JAR}; apt-get install "
                                f"{PACKAGES[system]}, or run {setup}")
    if system == "etcd":
        return harness.EtcdProcess(path, data_dir)
    if system == "ZooKeeper":
        return ZooKeeperProcess(path, data_dir, tick_ms=zookeeper_tick_ms)
    return RedisProcess(path, data_dir)


def system_names(allowed: Iterable[str]) -> Callable[[str], set[str]]:
    """An argparse type (a ``--without`` option's): comma-separated names of ``allowed`` systems, any case;
    the set of them, lower-cased."""
    known = {name.lower() for name in allowed}

    def parse(text: str) -> set[str]:
        names = {name.strip().lower() for name in text.split(",") if name.strip()}
        if names - known:
            raise argparse.ArgumentTypeError(f"no such system {', '.join(sorted(names - known))} "
                                             f"(one of {', '.join(sorted(known))})")
        return names
    return parse


def start_systems(systems: Iterable[Any], left: set[str], args: argparse.Namespace) -> None:
    """Start every system (its ``start(args)``) but those ``left`` out, whose ``reason`` says so."""
    for system in systems:
        if system.name.lower() in left:
            system.reason = "left out (--without)"
        else:
            system.start(args)


# -- the locks -----------------------------------------------------------------------------------


class LockBackend:
    """One client's locks on one system: acquire a named lock, its token, renew it, release it, close the client.

    One lock is held at a time. A lock object is made once per name and used
    again, as an application would.
    """

    def __init__(self) -> None:
        self.locks: dict[str, Any] = {}
        self.held: Any = None

    def lock(self, name: str) -> Any:
        """The lock object for ``name`` (made by :meth:`make` the first time)."""
        if name not in self.locks:
            self.locks[name] = self.make(name)
        return self.locks[name]

    def make(self, name: str) -> Any:
        raise NotImplementedError

    def acquire(self, name: str, timeout: float | None = None) -> bool:
        """Acquire the lock on ``name``, waiting at most ``timeout`` seconds (None: as long as it takes;
        0: not at all); whether it is held."""
        lock = self.lock(name)
        if not self._acquire(lock, timeout):
            return False
        self.held = lock
        return True

    def _acquire(self, lock: Any, timeout: float | None) -> bool:
        raise NotImplementedError

    def hold(self, name: str) -> int | None:
        """Acquire the lock on ``name``, as long as it takes; its token.

        Raises:
            RuntimeError: the client's acquire said it did not get the lock.
        """
        if not self.acquire(name):
            raise RuntimeError(f"{type(self).__name__}: acquire returned False while blocking")
        return self.token

    @property
    def token(self) -> int | None:
        """The held lock's fencing token; None where the system has none."""
        return None

    def refresh(self) -> None:
        """Start the held lock's term again (a system whose client keeps it alive by itself does nothing).

        Raises:
            Exception: the client's, when the lock is no longer ours.
        """

    def release(self) -> None:
        self.held, held = None, self.held
        held.release()

    def close(self) -> None:
        pass


class EtcdLocks(LockBackend):
    """etcd-sdk-python's ``client.lock(name, ttl)``: a lease, then a transaction that creates the key
    ``/locks/<name>`` if it does not exist; a waiter watches for its deletion. The token: the revision that
    created the key (``lock.revision``, from the transaction's answer). Nothing renews the lease: it ends
    ``ttl`` seconds after the acquire unless :meth:`refresh` is called."""

    def __init__(self, port: int, ttl: int) -> None:
        super().__init__()
        self.ttl = ttl
        self.client = harness.etcd_client(port, CALL_TIMEOUT)

    def make(self, name: str) -> Any:
        return self.client.lock(name, ttl=self.ttl)

    def _acquire(self, lock: Any, timeout: float | None) -> bool:
        return bool(lock.acquire(timeout=timeout))

    @property
    def token(self) -> int | None:
        return None if self.held is None else int(self.held.revision)

    def refresh(self) -> None:
        # an expired lease is answered with a TTL of 0, not an error
        if not any(answer.TTL > 0 for answer in self.held.refresh()):
            raise RuntimeError("etcd's lease of the lock had expired")

    def release(self) -> None:
        self.held, held = None, self.held
        if not held.release():
            raise RuntimeError("etcd's lock.release() found the key not ours")

    def close(self) -> None:
        self.client.close()


class ZooKeeperLocks(LockBackend):
    """kazoo's ``Lock`` on ``/locks/<name>``: an ephemeral sequential znode, held once no lower one is left;
    a waiter watches the one before it. The token: the sequence number in the znode's name. The znode lasts
    as long as the client's session: kazoo's own thread keeps it alive, and the server ends it (deleting the
    znode) ``session_timeout`` seconds after it last heard from the client."""

    def __init__(self, port: int, session_timeout: float) -> None:
        super().__init__()
        from kazoo.client import KazooClient

        self.client = KazooClient(hosts=f"127.0.0.1:{port}", timeout=session_timeout)
        self.client.start(timeout=CALL_TIMEOUT)

    def make(self, name: str) -> Any:
        return self.client.Lock(f"/locks/{name}")

    def _acquire(self, lock: Any, timeout: float | None) -> bool:
        from kazoo.exceptions import LockTimeout

        try:
            return bool(lock.acquire(blocking=timeout != 0, timeout=timeout or None))
        except LockTimeout:
            return False

    @property
    def token(self) -> int | None:
        return None if self.held is None else int(self.held.node[-10:])  # "<uuid>__lock__0000000042"

    def close(self) -> None:
        self.client.stop()
        self.client.close()


class RedisLocks(LockBackend):
    """redis-py's ``Lock``: ``SET name <random> NX PX``, a waiter trying again every ``sleep`` seconds; a Lua
    script deletes the key on release if it is still ours. No token: the random value only tells holders apart.
    Nothing renews the key: it ends ``timeout`` seconds after the acquire unless :meth:`refresh` is called."""

    def __init__(self, port: int, timeout: float, sleep: float = REDIS_SLEEP) -> None:
        super().__init__()
        import redis

        self.timeout, self.sleep = timeout, sleep
        self.client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=CALL_TIMEOUT)

    def make(self, name: str) -> Any:
        # not thread-local: its value must be seen by whichever thread renews it
        return self.client.lock(name, timeout=self.timeout, sleep=self.sleep, thread_local=False)

    def _acquire(self, lock: Any, timeout: float | None) -> bool:
        return bool(lock.acquire(blocking=timeout != 0, blocking_timeout=timeout or None))

    def refresh(self) -> None:
        self.held.reacquire()

    def close(self) -> None:
        self.client.close()


def open_locks(system: str, port: int, term: float, *, redis_sleep: float = REDIS_SLEEP) -> LockBackend:
    """A client of ``system``'s server on ``port``, its locks held ``term`` seconds past the last sign of life
    (etcd's lease TTL, whole seconds; ZooKeeper's session timeout; Redis' key expiry)."""
    if system == "etcd":
        return EtcdLocks(port, whole_seconds(term))
    if system == "ZooKeeper":
        return ZooKeeperLocks(port, term)
    return RedisLocks(port, term, redis_sleep)


def whole_seconds(term: float) -> int:
    """``term`` as etcd's lease TTL: whole seconds, at least 2 (etcd raises a shorter TTL to its minimum,
    one and a half election timeouts rounded up to a second: 2 s at its default settings).

    Raises:
        ValueError: ``term`` is not a whole number of seconds, or below 2.
    """
    if term != math.floor(term) or term < 2:
        raise ValueError(f"etcd's lease TTL is whole seconds, at least 2; got {term:g}")
    return int(term)


# -- the safety checker's backends -----------------------------------------------------------------


class CheckedLock:
    """A :class:`LockBackend`'s lock on one name as :class:`landlord.testing.lockcheck.LockLike`: ``acquire``,
    ``release`` and ``token``, no ``valid``. With ``renew_every``, a thread renews the held lock that often
    (:meth:`LockBackend.refresh`) as an application must that holds longer than the term (landlord's
    recipes renew a third into each term, etcd's Go ``concurrency.Session`` keeps its lease alive the same
    way); a renewal that fails ends the renewals of that holding, silently, as nothing here could tell the
    holder. A paused process pauses this thread too."""

    def __init__(self, locks: LockBackend, name: str, renew_every: float | None = None) -> None:
        self.locks, self.name, self.renew_every = locks, name, renew_every
        self._mutex = threading.Lock()  # a renewal and a release never cross
        self._holding = 0  # the holding being renewed (0: none)
        self._held = False
        self.renewals = self.failed_renewals = 0

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        if not self.locks.acquire(self.name, timeout if blocking else 0):
            return False
        with self._mutex:
            self._held = True
            self._holding += 1
            holding = self._holding
        if self.renew_every is not None:
            threading.Thread(target=self._renew, args=(holding, self.renew_every), daemon=True,
                             name=f"renew {self.name}").start()
        return True

    @property
    def token(self) -> int | None:
        return self.locks.token

    def release(self) -> None:
        with self._mutex:
            self._held = False
            self.locks.release()

    def _renew(self, holding: int, every: float) -> None:
        wait = threading.Event()  # never set: a renewal's wait is a wait of its own length
        while not wait.wait(every):
            with self._mutex:
                if not self._held or self._holding != holding:
                    return
                try:
                    self.locks.refresh()
                    self.renewals += 1
                except Exception:
                    self.failed_renewals += 1
                    return


class ServiceBackend(lockcheck.Backend):
    """One of etcd, ZooKeeper or Redis for the safety checker.

    Args:
        server: a server already started (by :func:`start_server`), used and left running; None: :meth:`start`
            starts one (under ``data_dir``) and :meth:`close` stops it.
        data_dir: where a server started here keeps its directory (None: the system's temp dir).
        redis_sleep: how often a waiting redis-py Lock tries again.

    Each :meth:`start` gives its locks names of their own (a fresh prefix), so that runs on one server do not
    meet what an earlier run's killed clients left held.
    """

    system = ""
    renews = False  # whether the checker's clients renew their locks (the client does not keep them alive)
    zookeeper_tick_ms = 200  # expiries to within a fifth of a second, sessions from 0.4 s

    def __init__(self, server: ExternalServer | None = None, *, data_dir: str | None = None,
                 redis_sleep: float = REDIS_SLEEP) -> None:
        self.server, self.data_dir, self.redis_sleep = server, data_dir, redis_sleep
        self.own = server is None
        self.name = self.system

    def start(self, workdir: pathlib.Path) -> str:
        if self.server is None:
            self.server = start_server(self.system, self.data_dir, zookeeper_tick_ms=self.zookeeper_tick_ms)
        return json.dumps({"port": self.server.port, "prefix": f"{uuid.uuid4().hex[:8]}-",
                           "redis_sleep": self.redis_sleep})

    def close(self) -> None:
        if self.own and self.server is not None:
            server, self.server = self.server, None
            server.stop()

    @classmethod
    def open_lock(cls, config: str, name: str, term: float) -> lockcheck.LockLike:
        options = json.loads(config)
        locks = open_locks(cls.system, options["port"], term, redis_sleep=options["redis_sleep"])
        return CheckedLock(locks, options["prefix"] + name, term / 3 if cls.renews else None)


class EtcdBackend(ServiceBackend):
    """etcd-sdk-python's lock, its lease's TTL the term (whole seconds, at least 2: etcd grants no less), renewed
    a third into each term by the client; its token the revision that created the lock key. etcd's lessor
    looks for expired leases every half second."""

    system = "etcd"
    renews = True
    takeover_delay = 0.5


class ZooKeeperBackend(ServiceBackend):
    """kazoo's Lock, its session timeout the term (kazoo's own thread keeps the session alive); its token the
    znode's sequence number. A session ends within a tick after its timeout (:attr:`zookeeper_tick_ms`)."""

    system = "ZooKeeper"
    takeover_delay = ServiceBackend.zookeeper_tick_ms / 1000


class RedisBackend(ServiceBackend):
    """redis-py's Lock, its key's expiry the term, renewed a third into each term by the client; no token (the
    checker's resource hands out tickets in the order the clients acquired)."""

    system = "Redis"
    renews = True
    fencing_tokens = False
