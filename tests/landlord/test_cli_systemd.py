"""landlord.cli.systemd: sd_notify datagrams to a real AF_UNIX socket (a path or an abstract name),
nothing without $NOTIFY_SOCKET, a broken socket logged once and never raised, and a real process's
notification carrying its own pid (what NotifyAccess=main checks)."""

from __future__ import annotations

import logging
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from landlord.cli import SystemdNotifier
from landlord.cli.systemd import NOTIFY_SOCKET

RECEIVE_DEADLINE = 10.0  # seconds a test waits for a datagram that should come
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def short_dir() -> Iterator[Path]:
    # an AF_UNIX path has at most 107 bytes: pytest's tmp_path can be longer
    with tempfile.TemporaryDirectory(prefix="sd-") as name:
        yield Path(name)


@pytest.fixture
def listener(short_dir: Path) -> Iterator[tuple[socket.socket, str]]:
    """A datagram socket bound where systemd's would be, and its address as $NOTIFY_SOCKET says it."""
    path = str(short_dir / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        sock.settimeout(RECEIVE_DEADLINE)
        yield sock, path


def fields(datagram: bytes) -> dict[str, str]:
    return dict(line.split("=", 1) for line in datagram.decode("utf-8").split("\n"))


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if record.name == "landlord.cli.systemd" and record.levelno == logging.WARNING]


def test_ready_sends_ready_and_status_in_one_datagram(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    assert SystemdNotifier(path).ready("lookup service at PYRO:lookup@h:4160")
    assert fields(sock.recv(4096)) == {"READY": "1", "STATUS": "lookup service at PYRO:lookup@h:4160"}


def test_stopping_and_status_each_send_their_field(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    notifier = SystemdNotifier(path)
    assert notifier.status("loading 1000 leases") and notifier.stopping()
    assert fields(sock.recv(4096)) == {"STATUS": "loading 1000 leases"}
    assert fields(sock.recv(4096)) == {"STOPPING": "1"}


def test_an_abstract_socket_is_named_after_an_at_sign() -> None:
    name = f"landlord-test-{os.getpid()}-{threading.get_ident()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(RECEIVE_DEADLINE)
        assert SystemdNotifier(f"@{name}").ready()
        assert fields(sock.recv(4096)) == {"READY": "1"}


@pytest.mark.parametrize("environ", [{}, {NOTIFY_SOCKET: ""}])
def test_without_the_variable_nothing_is_sent_or_logged(environ: dict[str, str],
                                                        caplog: pytest.LogCaptureFixture) -> None:
    notifier = SystemdNotifier.from_environment(environ)
    with caplog.at_level(logging.DEBUG, logger="landlord.cli.systemd"):
        assert not notifier.enabled
        assert notifier.ready("x") is False and notifier.stopping() is False
        assert notifier.stopping_when_set(threading.Event()) is None
    assert caplog.records == []


def test_from_environment_reads_the_variable(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    notifier = SystemdNotifier.from_environment({NOTIFY_SOCKET: path})
    assert notifier.enabled and notifier.address == path and notifier.ready()
    assert fields(sock.recv(4096)) == {"READY": "1"}


def test_a_missing_socket_is_logged_once_and_never_raised(short_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    notifier = SystemdNotifier(str(short_dir / "gone"))
    with caplog.at_level(logging.DEBUG, logger="landlord.cli.systemd"):
        assert [notifier.ready(), notifier.status("s"), notifier.stopping()] == [False, False, False]
    warned, = warnings_of(caplog)
    assert f"cannot notify systemd at {short_dir / 'gone'}" in warned and "further failures are not logged" in warned


def test_a_full_socket_fails_at_once_instead_of_blocking(listener: tuple[socket.socket, str],
                                                        caplog: pytest.LogCaptureFixture) -> None:
    sock, path = listener  # never read: its queue fills (Linux: net.unix.max_dgram_qlen, 10 by default)
    notifier = SystemdNotifier(path)
    sent = 0
    while notifier.status(f"message {sent}"):
        sent += 1
        assert sent < 100_000, "the queue never filled"
    assert sent >= 1 and len(warnings_of(caplog)) == 1
    assert notifier.ready() is False and len(warnings_of(caplog)) == 1  # still failing, not logged again
    assert fields(sock.recv(4096)) == {"STATUS": "message 0"}  # what was sent arrived, in order


@pytest.mark.parametrize("address", ["relative/notify", "@", "vsock:2:1234"])
def test_a_malformed_address_sends_nothing_and_is_logged_once(address: str,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    notifier = SystemdNotifier(address)
    assert notifier.enabled
    assert notifier.ready() is False and notifier.ready() is False
    warned, = warnings_of(caplog)
    assert repr(address) in warned and "neither an absolute path nor an @name" in warned


@pytest.mark.parametrize(("fields_sent", "error"), [
    ({"STATUS": "two\nlines"}, "is one line"),
    ({"status": "x"}, "capitals"),
    ({"READY=1\nSTATUS": "x"}, "capitals"),
    ({}, "at least one field"),
])
def test_a_bad_field_raises_and_sends_nothing(fields_sent: dict[str, str], error: str,
                                             listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    with pytest.raises(ValueError, match=error):
        SystemdNotifier(path).notify(fields_sent)
    sock.setblocking(False)
    with pytest.raises(BlockingIOError):  # nothing is queued
        sock.recv(4096)


def test_a_status_with_a_line_break_raises_from_ready(listener: tuple[socket.socket, str]) -> None:
    with pytest.raises(ValueError, match="is one line"):
        SystemdNotifier(listener[1]).ready("at\nonce")


def test_stopping_is_sent_once_the_stop_event_is_set(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    stop = threading.Event()
    watcher = SystemdNotifier(path).stopping_when_set(stop)
    assert watcher is not None and watcher.daemon
    sock.setblocking(False)
    with pytest.raises(BlockingIOError):  # not before stop is set
        sock.recv(4096)
    sock.settimeout(RECEIVE_DEADLINE)
    stop.set()
    assert fields(sock.recv(4096)) == {"STOPPING": "1"}
    watcher.join(RECEIVE_DEADLINE)
    assert not watcher.is_alive()


def test_another_process_notifies_with_its_own_pid(listener: tuple[socket.socket, str]) -> None:
    """What systemd checks under NotifyAccess=main: the datagram's sender is the service's main process."""
    sock, path = listener
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    code = ("import sys; from landlord.cli import SystemdNotifier; "
            "sys.exit(0 if SystemdNotifier.from_environment().ready('up') else 3)")
    child = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT,
                             env={**os.environ, NOTIFY_SOCKET: path, "PYTHONPATH": str(ROOT)})
    try:
        datagram, ancillary, _, _ = sock.recvmsg(4096, socket.CMSG_SPACE(struct.calcsize("3i")))
    finally:
        assert child.wait(timeout=60) == 0
    assert fields(datagram) == {"READY": "1", "STATUS": "up"}
    (level, kind, data), = ancillary
    assert (level, kind) == (socket.SOL_SOCKET, socket.SCM_CREDENTIALS)
    pid, _uid, _gid = struct.unpack("3i", data)
    assert pid == child.pid


def test_serving_hooks_say_ready_with_the_uri_and_stopping_once_stop_is_set(
        listener: tuple[socket.socket, str]) -> None:
    from landlord.cli.systemd import serving_hooks

    sock, path = listener
    stop, ready = serving_hooks("lookup service", {"NOTIFY_SOCKET": path})
    ready("PYRO:lookup.LookupService@127.0.0.1:4160")
    assert fields(sock.recv(4096)) == {"READY": "1",
                                       "STATUS": "lookup service at PYRO:lookup.LookupService@127.0.0.1:4160"}
    stop.set()
    sock.settimeout(10)
    assert fields(sock.recv(4096)) == {"STOPPING": "1"}


def test_serving_hooks_without_systemd_do_nothing_but_hold_the_stop_event() -> None:
    from landlord.cli.systemd import serving_hooks

    stop, ready = serving_hooks("renewal service", {})
    ready("PYRO:x@h:1")  # no socket: nothing to send, nothing raised
    assert not stop.is_set()
