"""landlord.testing itself: children and their URI lines, failures that show the output, stopping and
reaping, the recorder, the in-thread daemon."""

from __future__ import annotations

import os
import re
import signal
import socket
import sys
import threading
import time

import Pyro5.api
import Pyro5.errors
import pytest

from landlord import Landlord, LandlordLease, LeaseDurationPolicy
from landlord.testing import (
    URI_LINE,
    ChildProcess,
    FakeClock,
    Recorder,
    ServingDaemon,
    WaitFailed,
    free_port,
    free_udp_port,
    start_server,
)

# A child announcing a URI as serve_landlord does, after a log line with the URI in it, then waiting.
ANNOUNCES = """
import sys
print("2024-01-01 00:00:00,000 INFO landlord.serving: landlord at PYRO:log@127.0.0.1:1 (log line)", flush=True)
print("landlord at PYRO:obj@127.0.0.1:4711 (multiplex server)", flush=True)
print("after", flush=True)
sys.stdin.read()  # until told to stop
"""

DIES_EARLY = """
import sys
print("starting up", flush=True)
raise SystemExit("cannot serve: the port is taken")
"""

SILENT = "import time; time.sleep(600)"

IGNORES_SIGTERM = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(600)
"""

ECHOES = """
import sys
for line in sys.stdin:
    print("echo", line.strip(), flush=True)
"""


def reaped(pid: int) -> bool:
    """Whether ``pid`` is no child of this process any more: not running, and no zombie left."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_the_uri_line_is_read_and_log_lines_are_not_taken_for_it() -> None:
    with ChildProcess("-c", ANNOUNCES, stdin=True) as child:
        assert child.read_uri() == "PYRO:obj@127.0.0.1:4711"
        assert child.wait_for("^after$").group(0) == "after"
        assert child.name == "python -c"


def test_start_server_returns_the_child_and_its_uri() -> None:
    server, uri = start_server("-c", ANNOUNCES, stdin=True)
    with server:
        assert uri == "PYRO:obj@127.0.0.1:4711"
        assert server.alive
    assert not server.alive and reaped(server.pid)


def test_a_child_that_dies_early_fails_at_once_showing_its_output_and_stderr() -> None:
    started = time.monotonic()
    with pytest.raises(WaitFailed) as failed:
        start_server("-c", DIES_EARLY, stderr="separate", timeout=60)
    assert time.monotonic() - started < 30  # at its end of output, not at the timeout
    message = str(failed.value)
    assert "no line matching" in message and "its output ended (exit status 1)" in message
    assert "starting up" in message and "cannot serve: the port is taken" in message
    assert message.index("starting up") < message.index("stderr:") < message.index("cannot serve")


def test_a_child_that_says_nothing_fails_at_the_timeout_and_is_reaped() -> None:
    with ChildProcess("-c", SILENT, name="silent") as child:
        started = time.monotonic()
        with pytest.raises(WaitFailed, match=r"(?s)^silent: no line matching 'URI': not within 0\.5 s.*\(none\)"):
            child.wait_for("URI", timeout=0.5)
        assert 0.5 <= time.monotonic() - started < 10
        assert child.alive
    assert reaped(child.pid) and child.killed


def test_wait_for_reads_forward_and_wait_count_looks_back() -> None:
    with ChildProcess("-c", "for n in range(5): print('line', n, flush=True)") as child:
        assert child.expect("line") == "0"
        assert child.expect("line") == "1"
        assert child.wait_for(r"line (\d)").group(1) == "2"
        counted = child.wait_count(r"^line (\d)$", 5)
        assert [found.group(1) for _, found in counted] == ["0", "1", "2", "3", "4"]
        assert [line.index for line, _ in counted] == [0, 1, 2, 3, 4]
        assert all(a.time <= b.time for (a, _), (b, _) in zip(counted, counted[1:]))
        assert [line.text for line, _ in child.matches("line [34]", start=2)] == ["line 3", "line 4"]
        assert child.process.wait(10) == 0
        assert [child.expect("line"), child.expect("line")] == ["3", "4"]  # looking back moved nothing
        with pytest.raises(WaitFailed, match="its output ended"):
            child.expect("line")  # all five have been read
        assert child.output == [f"line {n}" for n in range(5)]


def test_stderr_merges_by_default() -> None:
    with ChildProcess("-c", "import sys; print('to stderr', file=sys.stderr, flush=True)") as child:
        assert child.expect("to ") == "stderr"
        assert child.error_lines == []


def test_stop_returns_the_exit_code_and_reaps() -> None:
    with ChildProcess("-c", ANNOUNCES, stdin=True) as child:
        child.read_uri()
        assert child.stop() == -signal.SIGTERM
        assert not child.killed and reaped(child.pid)
        assert child.stop() == -signal.SIGTERM  # again: it has ended, nothing is sent


def test_stop_kills_a_child_that_ignores_the_signal() -> None:
    with ChildProcess("-c", IGNORES_SIGTERM) as child:
        child.expect("ready")
        assert child.stop(timeout=0.5) == -signal.SIGKILL
        assert child.killed and reaped(child.pid)


def test_kill_kills_and_reaps() -> None:
    with ChildProcess("-c", SILENT) as child:
        assert child.kill() == -signal.SIGKILL
        assert not child.alive and reaped(child.pid)


def test_leaving_the_block_on_an_error_kills_and_reaps() -> None:
    with pytest.raises(KeyError), ChildProcess("-c", SILENT) as child:
        raise KeyError("the test failed")
    assert child.killed and reaped(child.pid)


def test_send_writes_lines_to_its_stdin() -> None:
    with ChildProcess("-c", ECHOES, stdin=True) as child:
        child.send("hello")
        assert child.expect("echo") == "hello"
    with ChildProcess("-c", SILENT) as child, pytest.raises(RuntimeError, match="without stdin=True"):
        child.send("hello")


def test_on_line_sees_each_line_before_waiters_do() -> None:
    seen: list[str] = []
    with ChildProcess("-c", "print('a'); print('b')", on_line=lambda line: seen.append(line.text)) as child:
        child.expect("b")
        assert seen == ["a", "b"]


def test_a_command_prefix_runs_the_arguments() -> None:
    with ChildProcess("-c", "import sys; print(sys.argv[1:])", "x", command=[sys.executable, "-u"]) as child:
        assert child.expect("[") == "'x']"
        assert child.argv[:2] == [sys.executable, "-u"]


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="stderr is"):
        ChildProcess("-c", "pass", stderr="discard")  # type: ignore[arg-type]
    with ChildProcess("-c", ANNOUNCES, stdin=True) as child, pytest.raises(ValueError, match="named uri"):
        child.read_uri(pattern=r"at (PYRO:\S+)")


def test_the_uri_line_pattern_matches_both_servers_announcements() -> None:
    assert re.search(URI_LINE, "lookup service at PYRO:lookup@10.0.0.1:4160 (multiplex server)")
    assert re.search(URI_LINE, "landlord at PYRO:rooms@127.0.0.1:4170 (thread server, two-way TLS)")
    assert not re.search(URI_LINE, "2024-01-01 12:00:00,000 INFO    landlord.serving: lookup service at PYRO:x@h:1")


# -- the recorder --------------------------------------------------------------------------------


def test_the_recorder_wakes_a_waiter_at_each_call() -> None:
    recorder: Recorder[int] = Recorder()
    feeder = threading.Thread(target=lambda: [recorder(n) for n in range(3)])
    feeder.start()
    assert recorder.wait_for(3) == [0, 1, 2]
    feeder.join()
    assert recorder.wait_until(lambda items: sum(items) == 3) == [0, 1, 2]
    assert len(recorder) == 3 and recorder.items == [0, 1, 2]


def test_the_recorder_fails_at_its_timeout_saying_what_it_holds() -> None:
    recorder: Recorder[str] = Recorder()
    recorder("only one")
    with pytest.raises(WaitFailed, match=r"not within 0\.1 s: 2 item\(s\); recorded: \['only one'\]"):
        recorder.wait_for(2, timeout=0.1)


# -- a landlord in a thread, on a fake clock ------------------------------------------------------


class Rooms(Landlord):
    @Pyro5.api.expose
    def rent(self, room: str, seconds: float) -> LandlordLease:
        return self.new_lease(room, seconds)


def test_a_landlord_served_in_a_thread_on_a_fake_clock_frees_an_unrenewed_room() -> None:
    clock, freed = FakeClock(), Recorder[str]()
    rooms = Rooms(policy=LeaseDurationPolicy(maximum=60), clock=clock, on_expire=freed)
    try:
        with ServingDaemon() as serving:
            uri = serving.register(rooms)
            with Pyro5.api.Proxy(uri) as proxy:
                lease = proxy.rent("101", 30)
            assert isinstance(lease, LandlordLease) and lease.renew(30) == 30
            clock.advance(31)
            assert freed.wait_for(1) == ["101"]
    finally:
        rooms.close()
    with pytest.raises(Pyro5.errors.CommunicationError), Pyro5.api.Proxy(uri) as gone:  # closed: nobody serves
        gone._pyroBind()


class Nothing:
    """Something to serve."""


def test_free_port_can_be_listened_on() -> None:
    port = free_port()
    with ServingDaemon(port=port) as serving:
        assert serving.register(Nothing(), "nothing") == f"PYRO:nothing@127.0.0.1:{port}"


def test_names_heard_records_grants_and_revocations_in_order() -> None:
    from landlord import Landlord, LandlordLease
    from landlord.testing import NamesHeard
    heard = NamesHeard()
    landlord = Landlord(reaper="lazy")
    try:
        holder, _ = landlord.acquire("orders", 30)
        waiter, _ = landlord.acquire("orders", 30, wait=30, listener=heard)
        assert isinstance(waiter, LandlordLease)
        holder.cancel()
        landlord.revoke(waiter.cookie, "enough")
        assert heard.told.wait_for(2) == [("granted", waiter.cookie, 2), ("revoked", waiter.cookie, "enough")]
    finally:
        landlord.close()


@pytest.mark.parametrize("host", ["127.0.0.1", ""])
def test_free_udp_port_gives_a_port_a_datagram_server_can_bind(host: str) -> None:
    port = free_udp_port(host)
    assert 0 < port < 65536
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((host, port))
        assert sock.getsockname()[1] == port
