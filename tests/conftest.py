"""Shared fixtures: a fake clock, and a real Pyro5 daemon serving in a thread."""

from __future__ import annotations

import os
import pathlib
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import Pyro5.api
import pytest

import landlord

try:  # not on Windows
    import resource
except ImportError:  # pragma: no cover
    resource = None  # type: ignore[assignment]

PROCESSES = pathlib.Path(__file__).parent / "processes"
MANY_CLIENTS = 1000
FILES_FOR_MANY_CLIENTS = 2200  # this process's sockets (1,000 clients and some) with room to spare


@pytest.fixture
def clock() -> landlord.FakeClock:
    return landlord.FakeClock()


class ServingDaemon:
    """A Pyro5 daemon on loopback with its request loop on a background thread."""

    def __init__(self) -> None:
        self.daemon = Pyro5.api.Daemon(host="127.0.0.1", port=0)
        self._thread = threading.Thread(target=self.daemon.requestLoop, name="test-daemon", daemon=True)
        self._thread.start()

    def register(self, obj: object) -> str:
        return str(self.daemon.register(obj))

    def close(self) -> None:
        self.daemon.shutdown()
        self._thread.join(timeout=10)
        self.daemon.close()


@pytest.fixture
def daemon() -> Iterator[ServingDaemon]:
    serving = ServingDaemon()
    try:
        yield serving
    finally:
        serving.close()


@pytest.fixture
def close_later() -> Iterator[list]:
    """Landlords (anything with close()) to close after the test."""
    closables: list = []
    yield closables
    for item in closables:
        item.close()


class ChildProcess:
    """A child process, its stdout and stderr read line by line as they come."""

    def __init__(self, argv: list[str]) -> None:
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        bufsize=1)
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line.rstrip())
            self.lines.put(line.rstrip())

    def wait_for(self, pattern: str, timeout: float = 20) -> re.Match[str]:
        """The match of the regular expression ``pattern`` in the next output line it is found in."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line matching {pattern!r} within {timeout}s; "
                                     f"output: {self.output}") from None
            found = re.search(pattern, line)
            if found:
                return found

    def expect(self, prefix: str, timeout: float = 20) -> str:
        """The rest of the next output line starting with ``prefix`` (other lines are skipped)."""
        return self.wait_for(f"^{re.escape(prefix)}(.*)$", timeout).group(1).strip()

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 10) -> int:
        """Send ``signum`` and return the exit code (failing if it does not exit in ``timeout``)."""
        self.process.send_signal(signum)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"still running {timeout}s after {signum!r}; output: {self.output}") from None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)


class Child(ChildProcess):
    """A Python process running a script of ``tests/processes``."""

    def __init__(self, script: str, *args: str) -> None:
        super().__init__([sys.executable, str(PROCESSES / script), *args])


class Spawner:
    """Starts children; kills them all at teardown. ``children`` lists them in start order."""

    def __init__(self) -> None:
        self.children: list[Child] = []

    def __call__(self, script: str, *args: str) -> Child:
        child = Child(script, *args)
        self.children.append(child)
        return child


@pytest.fixture
def spawn() -> Iterator[Spawner]:
    spawner = Spawner()
    yield spawner
    for child in spawner.children:
        child.kill()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # type: ignore[no-any-return]


@pytest.fixture
def open_files_for_many_clients() -> Iterator[None]:
    """Room in this process for 1,000+ sockets: the soft limit raised, or the test skipped."""
    if resource is None:
        pytest.skip("no resource module: cannot check the open-files limit")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < FILES_FOR_MANY_CLIENTS:
        pytest.skip(f"the open-files hard limit is {hard}; {MANY_CLIENTS} clients need about {FILES_FOR_MANY_CLIENTS}")
    if soft != resource.RLIM_INFINITY and soft < FILES_FOR_MANY_CLIENTS:
        resource.setrlimit(resource.RLIMIT_NOFILE, (FILES_FOR_MANY_CLIENTS, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def sockets_of(pid: int) -> int | None:
    """How many sockets process ``pid`` has open (Linux), else ``None``."""
    fds = pathlib.Path(f"/proc/{pid}/fd")
    if not fds.is_dir():
        return None
    count = 0
    for fd in fds.iterdir():
        try:
            count += os.readlink(fd).startswith("socket:")
        except OSError:  # closed meanwhile
            pass
    return count
