"""Several hosts on one machine: Linux network namespaces joined by a bridge.

A :class:`Network` is a handful of *hosts*, each a network namespace with
``lo`` up and one interface, ``eth0``, with an address from a private /24
chosen at random per run (``10.x.y.0/24``; nothing routes out of these
namespaces, so that traffic never leaves the machine). Each ``eth0`` is one end
of a veth pair whose other end is a port of a bridge living in a namespace of
its own, so the root namespace is never touched::

    host a: eth0 10.x.y.11 ──veth── port-a ┐
    host b: eth0 10.x.y.12 ──veth── port-b ├─ br0   (namespace <run>-br)
    host c: eth0 10.x.y.13 ──veth── port-c ┘

``partition(host)`` takes that host's bridge port down: its ``eth0`` loses
its carrier but keeps its address and routes, so packets to and from it are
dropped silently, as in a real partition (a connection attempt times out; it
is not refused). ``heal(host)`` brings the port back up. Every host has a
permanent neighbour entry for every other, so no ARP runs: a partition is
pure packet loss, and healing takes effect at once rather than at the
kernel's next ARP retry.

Programs run in a host with ``ip netns exec`` (:meth:`Host.run`,
:meth:`Host.start`); a started program's output is read line by line as it
comes, each line stamped with the moment it was read (:class:`HostProcess`, a
``landlord.testing.ChildProcess`` under ``ip netns exec``).

Names are unique per run: ``lmh<pid>-<random>-<host>``. :meth:`Network.close`
kills every process in the namespaces and deletes them (deleting the bridge's
namespace deletes the veth pairs with it). The :func:`network` fixture closes
its network whatever the test's outcome, an ``atexit`` hook closes it if the
process ends otherwise, and :func:`clean_stale` removes what a crashed earlier
run (whose process is gone) left behind.

This needs root and ``ip`` (iproute2) with network namespaces. Where they are
missing the tests skip, saying why, unless ``LANDLORD_REQUIRE_MULTIHOST=1``
is set (as ``.ci/run`` does): then the skip is a failure.

Not a ``conftest.py`` on purpose (see tests/faults/faultkit.py): test modules
import the :func:`network` fixture from here.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import pathlib
import random
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence

import pytest
from conftest import skip_unless_required

from landlord.testing import ChildProcess, Line

__all__ = [
    "PREFIX", "REQUIRE_ENV", "HERE", "Network", "Host", "HostProcess", "Line",
    "unavailable_reason", "require_multihost", "clean_stale", "our_namespaces", "network",
]

HERE = pathlib.Path(__file__).resolve().parent
PREFIX = "lmh"  # every namespace of ours: lmh<pid of the test process>-<random hex>-<host or "br">
REQUIRE_ENV = "LANDLORD_REQUIRE_MULTIHOST"  # "1": a missing root or `ip netns` fails instead of skipping
IP_TIMEOUT = 30.0  # seconds for one `ip` command
_NAME = re.compile(rf"^{PREFIX}(\d+)-[0-9a-f]+-\w+$")


# -- can it run here? ------------------------------------------------------------------

def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``ip ARGS``; raise RuntimeError with its message if ``check`` and it fails."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=IP_TIMEOUT)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return done


@functools.cache
def unavailable_reason() -> str | None:
    """Why network namespaces cannot be made here, or ``None`` if they can (tried once per process)."""
    if not sys.platform.startswith("linux"):
        return f"network namespaces are Linux only (this is {sys.platform})"
    if os.geteuid() != 0:
        return f"creating network namespaces needs root (running as uid {os.geteuid()})"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is not installed"
    probe = f"{PREFIX}{os.getpid()}-0-probe"
    try:
        made = _ip("netns", "add", probe, check=False)
        if made.returncode != 0:
            return f"`ip netns add` fails here: {made.stderr.strip() or f'exit {made.returncode}'}"
        ran = subprocess.run(["ip", "netns", "exec", probe, "ip", "link", "set", "lo", "up"],
                             capture_output=True, text=True, timeout=IP_TIMEOUT)
        if ran.returncode != 0:
            return f"`ip netns exec` fails here: {ran.stderr.strip() or f'exit {ran.returncode}'}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`ip netns` cannot be used: {exc}"
    finally:
        _ip("netns", "delete", probe, check=False)
    return None


def require_multihost() -> None:
    """Skip the calling test (or fail it, with ``LANDLORD_REQUIRE_MULTIHOST=1``) where namespaces cannot be made."""
    skip_unless_required(unavailable_reason(), env=REQUIRE_ENV, tests="multihost", needs="root and `ip netns`")


# -- cleaning up --------------------------------------------------------------------------

def our_namespaces() -> list[str]:
    """Every namespace named with our prefix that exists now, whichever run made it."""
    listed = _ip("netns", "list", check=False).stdout
    names = [line.split()[0] for line in listed.splitlines() if line.strip()]
    return [name for name in names if name.startswith(PREFIX)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _delete_namespace(name: str) -> None:
    """Kill every process in namespace ``name``, then delete it (quietly if it is gone already)."""
    pids = _ip("netns", "pids", name, check=False).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)
    _ip("netns", "delete", name, check=False)


def clean_stale() -> list[str]:
    """Delete the namespaces of earlier runs whose test process is gone; return their names."""
    stale = []
    for name in our_namespaces():
        found = _NAME.match(name)
        if found and int(found.group(1)) != os.getpid() and not _alive(int(found.group(1))):
            _delete_namespace(name)
            stale.append(name)
    return stale


# -- processes in a host ---------------------------------------------------------------------

class HostProcess:
    """A program running in a host, its stdout and stderr read line by line as they come.

    A :class:`landlord.testing.ChildProcess` run under ``ip netns exec <host>``
    (a command prefix). Every line is kept (:attr:`lines`), so a test can wait
    for one line and later look back at all of them: here waiting looks from
    an index on (``start``, from :meth:`mark`), never reads forward. ``stdin``
    is a pipe: :meth:`send` writes a command line to it (the child programs of
    this directory read commands there, and end at its end).
    """

    def __init__(self, host: Host, argv: Sequence[str], *, name: str, cwd: pathlib.Path = HERE) -> None:
        self.host = host
        self.name = name
        self.argv = list(argv)
        self.child = ChildProcess(
            *argv, command=["ip", "netns", "exec", host.netns], name=f"{name} on {host.name}", stdin=True,
            env={"PYTHONUNBUFFERED": "1"}, cwd=cwd,
            new_session=True)  # a Ctrl-C at the terminal is the test's to handle, not theirs
        self.lines = self.child.lines

    @property
    def popen(self) -> subprocess.Popen[str]:
        return self.child.process

    @property
    def pid(self) -> int:
        """Its process id (``ip netns exec`` execs the program: the same process)."""
        return self.child.pid

    def mark(self) -> int:
        """The index the next line will have: pass it as ``start`` to look only at what comes after now."""
        return self.child.mark()

    def matches(self, pattern: str, start: int = 0) -> list[tuple[Line, re.Match[str]]]:
        """Every line from index ``start`` on in which ``pattern`` is found, with its match."""
        return self.child.matches(pattern, start)

    def wait_count(self, pattern: str, count: int, timeout: float = 20.0,
                   start: int = 0) -> list[tuple[Line, re.Match[str]]]:
        """Block until ``count`` lines from index ``start`` on match ``pattern``; return the first ``count``.

        Raises:
            AssertionError: not within ``timeout`` seconds, or the process's output ended first.
        """
        return self.child.wait_count(pattern, count, timeout, start=start)

    def wait_for(self, pattern: str, timeout: float = 20.0, start: int = 0) -> tuple[Line, re.Match[str]]:
        """The first line from index ``start`` on that matches ``pattern``, waiting for it if need be."""
        return self.wait_count(pattern, 1, timeout, start)[0]

    def expect(self, pattern: str, timeout: float = 20.0, start: int = 0) -> re.Match[str]:
        """The match of :meth:`wait_for`, without the line."""
        return self.wait_for(pattern, timeout, start)[1]

    def send(self, command: str) -> None:
        """Write ``command`` and a newline to its stdin."""
        self.child.send(command)

    def ask(self, command: str, answer: str, timeout: float = 20.0) -> re.Match[str]:
        """Send ``command`` and return the match of the first line after it that matches ``answer``."""
        start = self.mark()
        self.send(command)
        return self.expect(answer, timeout, start)

    @property
    def alive(self) -> bool:
        return self.child.alive

    def kill(self) -> float:
        """``kill -9`` it and reap it; return when the signal was sent (``time.monotonic()``)."""
        killed = time.monotonic()
        self.child.kill()
        return killed

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM, then SIGKILL if it has not ended within ``timeout``; return its exit code."""
        return self.child.stop(timeout=timeout)

    def close(self) -> None:
        """Kill it if it runs, reap it, close its pipes."""
        self.child.close()

    def tail(self, count: int = 40) -> str:
        """Its last ``count`` lines, each with the time it was read, for failure messages."""
        return self.child.tail(count)

    def __repr__(self) -> str:
        return f"HostProcess({self.name!r} on {self.host.name}, pid {self.pid})"


# -- hosts and the network --------------------------------------------------------------------

class Host:
    """One host of a :class:`Network`: a namespace, its address, and its port on the bridge."""

    def __init__(self, network: Network, name: str, netns: str, address: str, port: str) -> None:
        self.network = network
        self.name = name
        self.netns = netns
        self.address = address
        self.port = port  # its veth end on the bridge, in the bridge's namespace

    @property
    def partitioned(self) -> bool:
        return self.name in self.network.partitioned

    def run(self, *argv: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` in this host to its end; stdout and stderr captured."""
        return subprocess.run(["ip", "netns", "exec", self.netns, *argv], capture_output=True, text=True,
                              timeout=timeout, cwd=HERE, env=dict(os.environ, PYTHONUNBUFFERED="1"))

    def start(self, *argv: str, name: str | None = None) -> HostProcess:
        """Start ``argv`` in this host (cwd: this directory); the network kills it when it closes."""
        process = HostProcess(self, argv, name=name or pathlib.Path(argv[0]).name)
        self.network.processes.append(process)
        return process

    def python(self, *args: str, name: str | None = None) -> HostProcess:
        """Start ``python ARGS`` (this interpreter, so this virtual environment) in this host."""
        label = name or (args[1] if args[:1] == ("-m",) and len(args) > 1 else pathlib.Path(args[0]).stem)
        return self.start(sys.executable, *args, name=label)

    def __repr__(self) -> str:
        return f"Host({self.name!r}, {self.address}, netns {self.netns})"


class Network:
    """Hosts (network namespaces) joined by a bridge; see the module docstring.

    Args:
        hosts: the hosts' names (short words: they end the namespaces' names).

    Raises:
        RuntimeError: an ``ip`` command failed (whatever was made is removed first).
    """

    def __init__(self, hosts: Sequence[str] = ("a", "b", "c")) -> None:
        if not hosts or len(set(hosts)) != len(hosts) or not all(re.fullmatch(r"[a-z][a-z0-9]{0,7}", h)
                                                                  for h in hosts):
            raise ValueError(f"hosts must be distinct short lowercase names, got {hosts!r}")
        if len(hosts) > 200:
            raise ValueError("at most 200 hosts fit in the /24")
        self.run_id = f"{PREFIX}{os.getpid()}-{secrets.token_hex(3)}"
        octets = random.Random(secrets.randbits(64))
        self.prefix = f"10.{octets.randrange(16, 250)}.{octets.randrange(1, 255)}"
        self.subnet = f"{self.prefix}.0/24"
        self.bridge_netns = f"{self.run_id}-br"
        self.hosts: dict[str, Host] = {}
        self.processes: list[HostProcess] = []
        self.partitioned: set[str] = set()
        self._made: list[str] = []  # namespaces made so far, in order
        self._closed = False
        atexit.register(self.close)
        try:
            self._make(hosts)
        except BaseException:
            self.close()
            raise

    def _make(self, hosts: Sequence[str]) -> None:
        bridge = self.bridge_netns
        _ip("netns", "add", bridge)
        self._made.append(bridge)
        _ip("-n", bridge, "link", "set", "lo", "up")
        _ip("-n", bridge, "link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0")
        _ip("-n", bridge, "link", "set", "br0", "up")
        for number, name in enumerate(hosts, start=11):
            netns = f"{self.run_id}-{name}"
            _ip("netns", "add", netns)
            self._made.append(netns)
            # both ends made from inside the bridge's namespace: nothing appears in the root namespace
            port = f"port-{name}"
            _ip("-n", bridge, "link", "add", "name", port, "type", "veth", "peer", "name", "eth0", "netns", netns)
            _ip("-n", bridge, "link", "set", "dev", port, "master", "br0")
            _ip("-n", bridge, "link", "set", "dev", port, "up")
            address = f"{self.prefix}.{number}"
            _ip("-n", netns, "link", "set", "lo", "up")
            _ip("-n", netns, "addr", "add", f"{address}/24", "dev", "eth0")
            _ip("-n", netns, "link", "set", "eth0", "up")
            self.hosts[name] = Host(self, name, netns, address, port)
        # Every host knows every other's link address for good: no ARP, so a partition is pure loss
        # and healing works at once, not after the kernel's next ARP retry (up to a second later).
        macs = {name: json.loads(_ip("-n", host.netns, "-j", "link", "show", "dev", "eth0").stdout)[0]["address"]
                for name, host in self.hosts.items()}
        for host in self.hosts.values():
            for other in self.hosts.values():
                if other is not host:
                    _ip("-n", host.netns, "neigh", "replace", other.address, "lladdr", macs[other.name],
                        "dev", "eth0", "nud", "permanent")

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def _host(self, host: Host | str) -> Host:
        return host if isinstance(host, Host) else self.hosts[host]

    def partition(self, host: Host | str) -> float:
        """Cut ``host`` off (its bridge port down); return when (``time.monotonic()``, after the command)."""
        target = self._host(host)
        _ip("-n", self.bridge_netns, "link", "set", "dev", target.port, "down")
        self.partitioned.add(target.name)
        return time.monotonic()

    def heal(self, host: Host | str) -> float:
        """Join ``host`` again (its bridge port up); return when (``time.monotonic()``, after the command)."""
        target = self._host(host)
        _ip("-n", self.bridge_netns, "link", "set", "dev", target.port, "up")
        self.partitioned.discard(target.name)
        return time.monotonic()

    def namespaces(self) -> list[str]:
        """The namespaces this network made (and has not deleted yet)."""
        return list(self._made)

    def close(self) -> None:
        """Kill every process in its hosts and delete its namespaces (and so its links). Idempotent."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        for process in self.processes:
            with contextlib.suppress(Exception):
                process.close()
        for netns in reversed(self._made):  # hosts first, the bridge last
            _delete_namespace(netns)
        left = [name for name in our_namespaces() if name in self._made]
        self._made = left
        if left:
            raise RuntimeError(f"namespaces left after closing the network: {left}")

    def __enter__(self) -> Network:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Network({self.run_id}, {self.subnet}, hosts {sorted(self.hosts)})"


@pytest.fixture
def network() -> Iterator[Network]:
    """Three hosts, ``a``, ``b`` and ``c``, removed after the test whatever its outcome."""
    require_multihost()
    clean_stale()
    with Network(("a", "b", "c")) as net:
        yield net
