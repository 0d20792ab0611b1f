"""Helpers for testing a landlord, and what holds its leases, without sleeping.

This package is the testing room: its ``__init__`` holds the helpers any test
uses; :mod:`landlord.testing.etcd` starts a real etcd cluster (it needs the
``etcd`` binary, and imports the replication package);
:mod:`landlord.testing.lockcheck` is the safety checker for locks (clients in
processes of their own contending while they are paused, killed and
partitioned, their writes through a fenced resource checked; private: lookup
may not import it), and :mod:`landlord.testing.replicacheck` its backend for
a replica group (replicas over etcd, the leader killed as the checker runs;
private too). It may import anything of landlord's; nothing of landlord's
imports it.

* :class:`FakeClock`: time that moves only when the test says so (hand it to
  a ``Landlord``, ``LeaseManager`` or ``LeaseRenewalManager`` as ``clock=``).
* :class:`Recorder`: a callback (``on_expire``, a renewal listener, ...)
  that keeps what it is called with and lets a test wait for it, woken by
  each call rather than polling.
* :class:`ServingDaemon`: a Pyro5 daemon on loopback serving on a thread of
  its own, for a landlord under test in the test's own process.
* :class:`ChildProcess`: a program in a process of its own (by default this
  Python), its output read line by line as it comes, to wait on; killed and
  reaped when the ``with`` block ends. :meth:`ChildProcess.read_uri` and
  :func:`start_server` read the ``landlord at PYRO:... (...)`` line that
  ``serve_landlord`` and ``python -m lookup serve`` print once serving.
* :func:`free_port`: a TCP port free on loopback now.

What a test waits for and does not get raises :class:`WaitFailed`, an
``AssertionError`` (so the test fails rather than errors) whose message says
what was awaited and shows what came instead.

``import landlord`` does not import this module: ``import landlord.testing``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, Generic, Literal, TypeVar

import Pyro5.api

from ..clock import FakeClock
from ..holder.claiminbox import NameListener

__all__ = [
    "FakeClock", "Recorder", "NamesHeard", "WaitFailed", "ServingDaemon", "ChildProcess", "OutputLines", "Line",
    "URI_LINE", "start_server", "free_port", "free_udp_port",
]

T = TypeVar("T")

URI_LINE = r"^\w[\w ]* at (?P<uri>PYRO:\S+)"
"""The line ``serve_landlord`` and ``python -m lookup serve`` print once serving
(``landlord at <uri> (...)``, ``lookup service at <uri> (...)``); not their log lines."""

DEFAULT_TIMEOUT = 20.0  # seconds: a cold interpreter starting on a busy two-core machine
STOP_TIMEOUT = 10.0  # seconds after a signal before a kill
TAIL = 40  # lines of output a failure message shows
SETTLE_TIMEOUT = 2.0  # seconds a failure waits for the readers of a child whose output ended


class WaitFailed(AssertionError):
    """What a test waited for did not come: not within its timeout, or it no longer can (a child's
    output ended). The message shows what came instead."""


# -- waiting on callbacks --------------------------------------------------------------------


class Recorder(Generic[T]):
    """A callback that keeps every item it is called with, in order, for a test to wait on.

    Use it wherever a landlord or a renewal manager calls back::

        freed: Recorder[str] = Recorder()
        rooms = Rooms(clock=clock, on_expire=freed)
        ...
        assert freed.wait_for(1) == ["101"]

    Waiting blocks on a condition that each call notifies: no sleeping, no polling.
    """

    def __init__(self) -> None:
        self._items: list[T] = []
        self._changed = threading.Condition()

    def __call__(self, item: T) -> None:
        self.record(item)

    def record(self, item: T) -> None:
        """Keep ``item`` and wake whoever waits."""
        with self._changed:
            self._items.append(item)
            self._changed.notify_all()

    @property
    def items(self) -> list[T]:
        """What has been recorded so far (a copy)."""
        with self._changed:
            return list(self._items)

    def __len__(self) -> int:
        with self._changed:
            return len(self._items)

    def wait_until(self, condition: Callable[[list[T]], bool], timeout: float = 10.0, *,
                   what: str = "the condition") -> list[T]:
        """Block until ``condition(items)`` holds (checked now and at each call); the items then.

        Args:
            condition: called with the items so far, under the recorder's
                lock (which is reentrant: it may call :attr:`items`).
            timeout: seconds to wait.
            what: what is awaited, for the failure message.

        Raises:
            WaitFailed: ``condition`` did not hold within ``timeout``.
        """
        with self._changed:
            if not self._changed.wait_for(lambda: condition(self._items), timeout):
                raise WaitFailed(f"not within {timeout:g} s: {what}; recorded: {self._items}")
            return list(self._items)

    def wait_for(self, count: int, timeout: float = 10.0) -> list[T]:
        """Block until ``count`` items have been recorded; all the items then.

        Raises:
            WaitFailed: fewer than ``count`` within ``timeout``.
        """
        return self.wait_until(lambda items: len(items) >= count, timeout, what=f"{count} item(s)")


class NamesHeard(NameListener):
    """An in-process listener of named leases (``Landlord.acquire(..., listener=)``) that records
    what it is told, in order, in :attr:`told`: ``("granted", cookie, token)`` and
    ``("revoked", cookie, reason)``, for a test to wait on."""

    def __init__(self) -> None:
        self.told: Recorder[tuple[str, str, object]] = Recorder()

    def granted(self, cookie: str, token: int) -> None:
        self.told(("granted", cookie, token))

    def revoked(self, cookie: str, reason: str) -> None:
        self.told(("revoked", cookie, reason))


# -- a landlord served in this process ---------------------------------------------------------


class ServingDaemon:
    """A Pyro5 daemon with its request loop on a thread of its own: serve a landlord under test
    in the test's process, and call it through proxies as another process would.

    ::

        with ServingDaemon() as serving:
            uri = serving.register(rooms)
            lease = Pyro5.api.Proxy(uri).rent("101", 30)

    Args:
        host: the address to listen on.
        port: the port (0: any free one).
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.daemon = Pyro5.api.Daemon(host=host, port=port)
        self._thread = threading.Thread(target=self.daemon.requestLoop, name="serving-daemon", daemon=True)
        self._thread.start()
        self._closed = False

    def register(self, obj: object, object_id: str | None = None) -> str:
        """Serve ``obj`` (under ``object_id``, or a generated one); its URI."""
        return str(self.daemon.register(obj, object_id))

    def close(self) -> None:
        """Stop serving and close the daemon (closing the objects served is the caller's). Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.daemon.shutdown()
        self._thread.join(timeout=STOP_TIMEOUT)
        self.daemon.close()

    def __enter__(self) -> ServingDaemon:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# -- a program in a process of its own ---------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Line:
    """One line a child printed: its position in its stream, when it was read
    (``time.monotonic()``), its text (trailing whitespace removed)."""

    index: int
    time: float
    text: str


Stderr = Literal["merge", "separate", "inherit"]


class OutputLines:
    """The lines a program printed, read by threads as they come, and ways to wait for them.

    The half of :class:`ChildProcess` that reads; it is what a test waits on.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        #: every stdout line read so far, in order (a separate stderr's in :attr:`error_lines`)
        self.lines: list[Line] = []
        #: every stderr line read so far, when stderr is kept separate
        self.error_lines: list[Line] = []
        self._changed = threading.Condition()
        self._ended = False  # its stdout reached its end
        self._unread = 0  # the index of the line wait_for reads from next
        self._separate_errors = False

    def _reader(self, stream: IO[str], into: list[Line], on_line: Callable[[Line], None] | None, *,
                ends: bool) -> threading.Thread:
        """Start a thread that reads ``stream`` into ``into``; ``ends``: its end is the end of the output."""
        def read() -> None:
            try:
                for text in stream:
                    line = Line(len(into), time.monotonic(), text.rstrip())
                    if on_line is not None:
                        on_line(line)
                    with self._changed:
                        into.append(line)
                        self._changed.notify_all()
            except (OSError, ValueError):  # the pipe was closed under us by close()
                pass
            finally:
                with self._changed:
                    self._ended = self._ended or ends
                    self._changed.notify_all()

        thread = threading.Thread(target=read, name=f"read-{self.name}", daemon=True)
        thread.start()
        return thread

    @property
    def output(self) -> list[str]:
        """The text of every stdout line read so far."""
        with self._changed:
            return [line.text for line in self.lines]

    # -- waiting for output

    def mark(self) -> int:
        """The index the next line will have: pass it as ``start`` to look only at what comes after now."""
        with self._changed:
            return len(self.lines)

    def matches(self, pattern: str, start: int = 0) -> list[tuple[Line, re.Match[str]]]:
        """Every line from index ``start`` on in which the regular expression ``pattern`` is found."""
        regex = re.compile(pattern)
        with self._changed:
            lines = self.lines[start:]
        return [(line, found) for line in lines if (found := regex.search(line.text))]

    def wait_count(self, pattern: str, count: int, timeout: float = DEFAULT_TIMEOUT, *,
                   start: int = 0) -> list[tuple[Line, re.Match[str]]]:
        """Block until ``count`` lines from index ``start`` on match ``pattern``; the first ``count``.

        Raises:
            WaitFailed: not within ``timeout`` seconds, or its output ended first.
        """
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        found: list[tuple[Line, re.Match[str]]] = []
        scanned = start
        with self._changed:
            while True:
                for line in self.lines[scanned:]:
                    if match := regex.search(line.text):
                        found.append((line, match))
                scanned = max(scanned, len(self.lines))
                if len(found) >= count:
                    return found[:count]
                left = deadline - time.monotonic()
                if left <= 0 or self._ended:
                    break
                self._changed.wait(left)
        if self._ended:
            self._settle()
        why = f"its output ended ({self._status()})" if self._ended else f"not within {timeout:g} s"
        awaited = f"no line matching {pattern!r}" if count == 1 else \
            f"{len(found)} line(s) matching {pattern!r}, not {count}"
        raise WaitFailed(f"{self.name}: {awaited}: {why}; {self.tail()}")

    def wait_for(self, pattern: str, timeout: float = DEFAULT_TIMEOUT) -> re.Match[str]:
        """The match of ``pattern`` in the first line after the last one this returned (reading forward).

        Raises:
            WaitFailed: no such line within ``timeout`` seconds, or its output ended first.
        """
        line, found = self.wait_count(pattern, 1, timeout, start=self._unread)[0]
        self._unread = line.index + 1
        return found

    def expect(self, prefix: str, timeout: float = DEFAULT_TIMEOUT) -> str:
        """The rest, stripped, of the next line that starts with ``prefix`` (reading forward, as :meth:`wait_for`).

        Raises:
            WaitFailed: no such line within ``timeout`` seconds, or its output ended first.
        """
        return self.wait_for(f"^{re.escape(prefix)}(.*)$", timeout).group(1).strip()

    def read_uri(self, timeout: float = DEFAULT_TIMEOUT, *, pattern: str = URI_LINE) -> str:
        """The URI of the next line that announces one (reading forward): by default the
        ``landlord at <uri> (...)`` / ``lookup service at <uri> (...)`` line of ``serve_landlord``
        and ``python -m lookup serve``.

        Args:
            timeout: seconds to wait for it.
            pattern: the line, with the URI as the group named ``uri``.

        Raises:
            ValueError: ``pattern`` has no group named ``uri``.
            WaitFailed: no such line within ``timeout`` seconds, or its output ended first
                (the message shows what it printed: its traceback, say).
        """
        if "uri" not in re.compile(pattern).groupindex:
            raise ValueError(f"the pattern needs a group named uri: {pattern!r}")
        return self.wait_for(pattern, timeout).group("uri")

    def _settle(self) -> None:
        """Once the output ended, before a failure is told: let every reader finish what it has (nothing here)."""

    def tail(self, count: int = TAIL) -> str:
        """Its last ``count`` lines (and of its stderr, if kept separate), each with the time it was read."""
        def show(lines: list[Line]) -> str:
            return "\n".join(f"  [{line.time:.3f}] {line.text}" for line in lines[-count:]) or "  (none)"

        with self._changed:
            text = f"output:\n{show(self.lines)}"
            if self._separate_errors:
                text += f"\nstderr:\n{show(self.error_lines)}"
        return text

    def _status(self) -> str:
        """Why its output may have ended, for failure messages."""
        return "ended"


class ChildProcess(OutputLines):
    """A program running in a process of its own, its output read line by line as it comes.

    ``ChildProcess(*args)`` runs this Python with ``args``; ``command`` runs
    something else, and is a prefix: ``ChildProcess("server.py", command=["ip",
    "netns", "exec", "h1", sys.executable])`` runs ``server.py`` with this
    Python in network namespace ``h1``. A thread reads the child's stdout
    into :attr:`~OutputLines.lines`, each stamped with the moment it was read.

    Two ways to wait for output: :meth:`wait_for` and :meth:`expect` read
    forward, as from a stream (each returns a line after the last one they
    returned); :meth:`wait_count` and :meth:`matches` look at every line
    from an index on (:meth:`mark` gives the index of the next line). Waiting
    fails at once, not at its timeout, when the child's output has ended.

    Use it as a context manager: leaving the block kills the child (if it
    still runs) and reaps it.

    Args:
        args: the arguments (after ``command``).
        command: what to run ``args`` with (default: this Python interpreter).
        name: what to call it in failure messages (default: from ``args``).
        stderr: ``"merge"`` it into stdout's lines, keep it ``"separate"``
            (in :attr:`~OutputLines.error_lines`, shown in failure messages), or let it
            ``"inherit"`` this process's stderr.
        stdin: give it a pipe for :meth:`send` (else it inherits this process's stdin).
        env: variables set on top of this process's environment.
        cwd: the directory to run it in.
        new_session: run it in a session of its own (a Ctrl-C at the
            terminal reaches only this process, which then stops it).
        on_line: called on the reading thread with each stdout line as it
            is read, before waiters see it (to relay the child's output, say).

    Raises:
        ValueError: ``stderr`` is none of the three.
        OSError: the program could not be started.
    """

    def __init__(self, *args: str, command: Sequence[str] | None = None, name: str | None = None,
                 stderr: Stderr = "merge", stdin: bool = False, env: Mapping[str, str] | None = None,
                 cwd: str | os.PathLike[str] | None = None, new_session: bool = False,
                 on_line: Callable[[Line], None] | None = None) -> None:
        if stderr not in ("merge", "separate", "inherit"):
            raise ValueError(f"stderr is 'merge', 'separate' or 'inherit', not {stderr!r}")
        prefix = [sys.executable] if command is None else list(command)
        self.argv = [*prefix, *args]
        super().__init__(name or _name_of(args, prefix))
        #: whether :meth:`stop` or :meth:`kill` had to SIGKILL it
        self.killed = False
        self.process = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE if stdin else None, stdout=subprocess.PIPE,
            stderr={"merge": subprocess.STDOUT, "separate": subprocess.PIPE, "inherit": None}[stderr],
            text=True, errors="replace", bufsize=1, env=None if env is None else {**os.environ, **env},
            cwd=cwd, start_new_session=new_session)
        assert self.process.stdout is not None
        self._readers = [self._reader(self.process.stdout, self.lines, on_line, ends=True)]
        if self.process.stderr is not None:
            self._separate_errors = True
            self._readers.append(self._reader(self.process.stderr, self.error_lines, None, ends=False))

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        """Whether it is still running."""
        return self.process.poll() is None

    def _settle(self) -> None:
        """Its stdout ended: let the stderr reader catch up (it may lag), so that a failure shows all of it."""
        deadline = time.monotonic() + SETTLE_TIMEOUT
        for reader in self._readers:
            reader.join(max(0.0, deadline - time.monotonic()))

    def _status(self) -> str:
        try:
            return f"exit status {self.process.wait(1.0)}"
        except subprocess.TimeoutExpired:
            return "still running"

    # -- talking to it, ending it

    def send(self, line: str) -> None:
        """Write ``line`` and a newline to its stdin.

        Raises:
            RuntimeError: it was started without ``stdin=True``.
            OSError: its stdin is closed (it has ended, say).
        """
        if self.process.stdin is None:
            raise RuntimeError(f"{self.name} was started without stdin=True")
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def stop(self, signum: int = signal.SIGTERM, *, timeout: float = STOP_TIMEOUT) -> int:
        """Send ``signum`` (unless it has ended) and wait for it; its exit code.

        Args:
            signum: the signal to end it with.
            timeout: seconds to wait before killing it (then :attr:`killed` is true).

        Raises:
            subprocess.TimeoutExpired: as :meth:`kill`.
        """
        if self.process.poll() is None:
            self.process.send_signal(signum)
            try:
                return self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                return self.kill()
        return self.process.wait()

    def kill(self) -> int:
        """SIGKILL it if it still runs, and reap it; its exit code.

        Raises:
            subprocess.TimeoutExpired: it had not ended 10 s after the SIGKILL (stuck in the kernel).
        """
        if self.process.poll() is None:
            self.killed = True
            with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                self.process.kill()
        return self.process.wait(STOP_TIMEOUT)

    def close(self) -> None:
        """Kill it if it still runs, reap it, and close the pipes to it. Idempotent."""
        self.kill()
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        for thread, stream in zip(self._readers, (self.process.stdout, self.process.stderr)):
            thread.join(1.0)  # its end of output arrives once the child is gone...
            if not thread.is_alive() and stream is not None:  # ...unless a grandchild holds the pipe
                stream.close()

    def __enter__(self) -> ChildProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ChildProcess({self.name!r}, pid {self.process.pid})"


def _name_of(args: Sequence[str], command: Sequence[str]) -> str:
    """What to call a child: the module of ``-m``, the script, or the program."""
    if args[:1] == ("-m",) and len(args) > 1:
        return args[1]
    if args[:1] == ("-c",):
        return "python -c"
    return pathlib.PurePath(args[0] if args else command[0]).name


def start_server(*args: str, timeout: float = DEFAULT_TIMEOUT, pattern: str = URI_LINE,
                 **options: Any) -> tuple[ChildProcess, str]:
    """Start a child (as :class:`ChildProcess`) and wait for the line announcing its URI.

    ::

        server, uri = start_server("-m", "lookup", "serve", "--port", "0")
        with server:
            ...

    Args:
        args: the child's arguments, as for :class:`ChildProcess`.
        timeout: seconds to wait for the URI line.
        pattern: the URI line, as for :meth:`ChildProcess.read_uri`.
        options: :class:`ChildProcess`'s keyword options.

    Raises:
        WaitFailed: no URI line within ``timeout``, or the child's output ended
            first; the child is killed and reaped, and the message shows its output.
        ValueError: ``pattern`` has no group named ``uri``.
    """
    child = ChildProcess(*args, **options)
    try:
        return child, child.read_uri(timeout, pattern=pattern)
    except BaseException:
        child.close()
        raise


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` now (to start a server on, and later again on the same port)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def free_udp_port(host: str = "127.0.0.1") -> int:
    """A UDP port that is free on ``host`` now (``""``: on every interface), for a datagram server."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port
