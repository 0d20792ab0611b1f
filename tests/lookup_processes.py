"""``python -m lookup ...`` in child processes, for the CLI and server tests."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping

import pytest
from conftest import ChildProcess, free_port

READY = "lookup service at "  # the line `serve` logs once it answers


def run_lookup(*args: str, timeout: float = 30, env: Mapping[str, str] | None = None
               ) -> subprocess.CompletedProcess[str]:
    """Run ``python -m lookup ARGS`` to the end (with ``env`` on top of this process's
    environment); its output captured."""
    return subprocess.run([sys.executable, "-m", "lookup", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **env} if env else None)


class LookupProcess(ChildProcess):
    """``python -m lookup ARGS`` running."""

    announced = ""  # the line `serve` printed once it answered (serve_lookup's processes)

    def __init__(self, *args: str, env: Mapping[str, str] | None = None) -> None:
        super().__init__("-m", "lookup", *args, env=env)


@pytest.fixture
def serve_lookup() -> Iterator[Callable[..., tuple[LookupProcess, int]]]:
    """Start ``python -m lookup serve --port <free, or the port given> ARGS``;
    returns (process, port) once it answers."""
    started: list[LookupProcess] = []

    def start(*args: str, port: int | None = None) -> tuple[LookupProcess, int]:
        port = port if port is not None else free_port()
        server = LookupProcess("serve", "--port", str(port), *args)
        started.append(server)
        server.announced = server.wait_for(re.escape(READY)).string
        return server, port

    yield start
    for server in started:
        server.kill()
