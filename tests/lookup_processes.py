"""``python -m lookup ...`` in child processes, for the CLI and server tests."""

from __future__ import annotations

import queue
import re
import signal
import subprocess
import sys
import threading
import time
from typing import Callable, Iterator

import pytest

from conftest import free_port

READY = "lookup service at "  # the line `serve` logs once it answers


def run_lookup(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Run ``python -m lookup ARGS`` to the end; its output captured."""
    return subprocess.run([sys.executable, "-m", "lookup", *args], capture_output=True, text=True,
                          timeout=timeout)


class LookupProcess:
    """``python -m lookup ARGS`` running, its stdout and stderr read line by line."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "lookup", *args], stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, bufsize=1)
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


@pytest.fixture
def serve_lookup() -> Iterator[Callable[..., tuple[LookupProcess, int]]]:
    """Start ``python -m lookup serve --port <free> ARGS``; returns (process, port) once it answers."""
    started: list[LookupProcess] = []

    def start(*args: str) -> tuple[LookupProcess, int]:
        port = free_port()
        server = LookupProcess("serve", "--port", str(port), *args)
        started.append(server)
        server.wait_for(re.escape(READY))
        return server, port

    yield start
    for server in started:
        server.kill()
