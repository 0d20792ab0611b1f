"""Run the renewal example end to end: a room landlord and a holder, as two processes.

Starts server.py on a free port (2 s leases at most; room green revoked
2.5 s after it is rented), reads its URI from its output, runs holder.py
against it, relays what both print (prefixed ``server |`` and ``holder |``),
then stops the server with SIGTERM. Takes about six seconds::

    python examples/renewal/demo.py

Exit status 0 when the server started, the holder told its whole story
(exit status 0), the server saw the denial and stopped cleanly; 1 otherwise.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from landlord.testing import ChildProcess, WaitFailed

HERE = Path(__file__).resolve().parent
SERVER_SCRIPT = HERE / "server.py"
HOLDER_SCRIPT = HERE / "holder.py"

MAX_LEASE_SECONDS = "2"
REVOKED_ROOM = "green"
REVOKE_AFTER_SECONDS = "2.5"

SERVER_START_TIMEOUT = 15.0  # generous: a cold interpreter on a busy CI machine
HOLDER_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0  # after SIGTERM, before a kill

URI_LINE = r"^URI: (?P<uri>PYRO:\S+)$"  # what server.py prints once serving

_print_lock = threading.Lock()  # the reading threads and the main thread print


def say(prefix: str, line: str) -> None:
    with _print_lock:
        print(f"{prefix:<6} | {line}", flush=True)


def start(script: Path, prefix: str, *args: str) -> ChildProcess:
    """Run ``script`` with this interpreter, stdout and stderr merged, unbuffered, each line
    relayed under ``prefix`` as it comes."""
    return ChildProcess(str(script), *args, name=prefix, env={"PYTHONUNBUFFERED": "1"},
                        on_line=lambda line: say(prefix, line.text))


def stop(child: ChildProcess) -> int | None:
    """Stop ``child`` (SIGTERM, a kill after STOP_TIMEOUT) and reap it; its exit status, or None if it
    had to be killed."""
    status = child.stop(timeout=STOP_TIMEOUT)
    child.close()  # its last lines are relayed before the demo goes on
    return None if child.killed else status


class Demo:
    """The two processes and what went wrong."""

    def __init__(self) -> None:
        self.server: ChildProcess | None = None
        self.holder: ChildProcess | None = None
        self.failures: list[str] = []

    def run(self) -> None:
        say("demo", f"starting the room landlord (server.py --max-lease {MAX_LEASE_SECONDS} "
                    f"--revoke {REVOKED_ROOM} --after {REVOKE_AFTER_SECONDS})")
        self.server = start(SERVER_SCRIPT, "server", "--host", "127.0.0.1", "--port", "0",
                            "--max-lease", MAX_LEASE_SECONDS,
                            "--revoke", REVOKED_ROOM, "--after", REVOKE_AFTER_SECONDS)
        try:  # given up at once if the server dies first
            uri = self.server.read_uri(SERVER_START_TIMEOUT, pattern=URI_LINE)
        except WaitFailed:
            status = self.server.process.poll()
            self.failures.append(f"the server printed no URI within {SERVER_START_TIMEOUT:g} s" if status is None
                                 else f"the server exited (status {status}) before printing its URI")
            return

        say("demo", f"server is up at {uri}; running holder.py")
        self.holder = start(HOLDER_SCRIPT, "holder", uri)
        try:
            status = self.holder.process.wait(HOLDER_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.failures.append(f"the holder did not finish within {HOLDER_TIMEOUT:g} s")
            return
        if status != 0:
            self.failures.append(f"the holder exited with status {status}")

    def shut_down(self) -> None:
        """Stop whatever still runs and check that the server stopped cleanly."""
        if self.holder is not None and stop(self.holder) is None:
            self.failures.append("the holder had to be killed")
        if self.server is not None:
            if self.server.alive:
                say("demo", "stopping the server (SIGTERM)")
            status = stop(self.server)
            if status is None:
                self.failures.append("the server ignored SIGTERM and had to be killed")
            elif status != 0 and os.name == "posix":  # elsewhere SIGTERM is a hard kill
                self.failures.append(f"the server exited with status {status}")

    def check_server_story(self) -> None:
        """The server must have revoked the room and denied exactly one renewal of it."""
        server_lines = self.server.output if self.server is not None else []
        denials = [line for line in server_lines if "DENIED" in line]
        if len(denials) != 1 or not denials[0].endswith(f"DENIED {REVOKED_ROOM}"):
            self.failures.append(f"the server denied {len(denials)} renewal(s); expected one, of {REVOKED_ROOM}")
        if not any(line.endswith(f"{REVOKED_ROOM} freed: its lease expired") for line in server_lines):
            self.failures.append(f"the server never freed {REVOKED_ROOM} by expiry")


def main() -> int:
    started = time.monotonic()
    demo = Demo()
    try:
        demo.run()
    except KeyboardInterrupt:
        demo.failures.append("interrupted")
    finally:  # whatever happened, never leave a server running
        demo.shut_down()
    if not demo.failures:
        demo.check_server_story()
    for failure in demo.failures:
        say("demo", f"FAILED: {failure}")
    if demo.failures:
        return 1
    say("demo", f"done in {time.monotonic() - started:.1f} s: {REVOKED_ROOM} denied once and replaced, "
                "the other rooms kept alive")
    return 0


if __name__ == "__main__":
    sys.exit(main())
