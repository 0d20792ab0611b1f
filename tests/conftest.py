"""Shared fixtures: a fake clock, a real Pyro5 daemon serving in a thread, child processes.

The helpers themselves are landlord.testing's (public, for users testing their
own landlords); test modules import them from here or from there.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import time
from collections.abc import Callable, Generator, Iterator

import pytest

from landlord.testing import ChildProcess, FakeClock, ServingDaemon, free_port

__all__ = ["ChildProcess", "Child", "Spawner", "ServingDaemon", "free_port", "sockets_of", "wait_until",
           "skip_unless_required", "run_to_the_end", "lines", "one", "MANY_CLIENTS", "PROCESSES", "REPO_ROOT"]

try:  # not on Windows
    import resource
except ImportError:  # pragma: no cover
    resource = None  # type: ignore[assignment]

PROCESSES = pathlib.Path(__file__).parent / "processes"
REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
MANY_CLIENTS = 1000
FILES_FOR_MANY_CLIENTS = 2200  # this process's sockets (1,000 clients and some) with room to spare


def wait_until(condition: Callable[[], bool], timeout: float, what: str, *, poll: float = 0.05) -> None:
    """Poll ``condition`` (state held by other threads and processes) every ``poll`` seconds until it
    holds; fail the test, saying ``what``, if it does not within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(poll)


def run_to_the_end(script: pathlib.Path, *, timeout: float) -> str:
    """Run ``script`` with this Python from the repository's top; all it printed (stdout, then stderr).

    Fails the test unless it exits with status 0 within ``timeout`` seconds.
    """
    finished = subprocess.run([sys.executable, str(script)], cwd=REPO_ROOT, capture_output=True, text=True,
                              timeout=timeout)
    output = finished.stdout + finished.stderr
    assert finished.returncode == 0, f"{script.name} exited with status {finished.returncode}:\n{output}"
    return output


def lines(pattern: str, text: str) -> list[re.Match[str]]:
    """Every line of ``text`` (a demo's output) that ``pattern`` matches (multiline)."""
    return list(re.finditer(pattern, text, re.MULTILINE))


def one(pattern: str, text: str) -> re.Match[str]:
    """The one line of ``text`` that ``pattern`` matches; fails the test if there are none or more."""
    found = lines(pattern, text)
    assert len(found) == 1, f"{len(found)} lines match {pattern!r} in:\n{text}"
    return found[0]


def skip_unless_required(reason: str | None, *, env: str, tests: str, needs: str) -> None:
    """Skip the calling test because of ``reason`` (``None``: it can run), or fail it where ``env`` is ``"1"``.

    CI sets ``env`` so that tests it must run can never pass by being skipped.
    """
    if reason is None:
        return
    if os.environ.get(env) == "1":
        pytest.fail(f"{env}=1, but the {tests} tests cannot run: {reason}", pytrace=False)
    pytest.skip(f"{tests} tests need {needs}: {reason}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed test's report gains a section from each of its fixtures that can tell what it saw:
    one whose value has a ``failure_report()`` method (the recent output of the processes it runs,
    say), so that a failure in CI shows its cause without running it again."""
    report = yield
    if report.when == "call" and report.failed:
        for name, value in getattr(item, "funcargs", {}).items():
            tell = getattr(value, "failure_report", None)
            if callable(tell):
                report.sections.append((f"what fixture {name} saw", str(tell())))
    return report


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def daemon() -> Iterator[ServingDaemon]:
    """A Pyro5 daemon on loopback serving on a thread (landlord.testing.ServingDaemon)."""
    with ServingDaemon() as serving:
        yield serving


@pytest.fixture
def close_later() -> Iterator[list]:
    """Landlords (anything with close()) to close after the test."""
    closables: list = []
    yield closables
    for item in closables:
        item.close()


class Child(ChildProcess):
    """A Python process running a script of ``tests/processes``."""

    def __init__(self, script: str, *args: str) -> None:
        super().__init__(str(PROCESSES / script), *args)


class Spawner:
    """Starts children; kills and reaps them all at teardown. ``children`` lists them in start order."""

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
        child.close()


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
