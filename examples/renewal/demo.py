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
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
SERVER_SCRIPT = HERE / "server.py"
HOLDER_SCRIPT = HERE / "holder.py"

MAX_LEASE_SECONDS = "2"
REVOKED_ROOM = "green"
REVOKE_AFTER_SECONDS = "2.5"

SERVER_START_TIMEOUT = 15.0  # generous: a cold interpreter on a busy CI machine
HOLDER_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0  # after SIGTERM, before a kill

URI_LINE = re.compile(r"^URI: (PYRO:\S+)$")

_print_lock = threading.Lock()  # two relay threads and the main thread print


def say(prefix: str, line: str) -> None:
    with _print_lock:
        print(f"{prefix:<6} | {line}", flush=True)


def relay(process: subprocess.Popen[str], prefix: str,
          on_line: Callable[[str], None] = lambda line: None) -> threading.Thread:
    """Start a thread printing each output line of ``process`` under ``prefix`` until it ends."""
    output = process.stdout
    assert output is not None  # start() always pipes it

    def pump() -> None:
        for raw in output:
            line = raw.rstrip("\n")
            say(prefix, line)
            on_line(line)
        output.close()

    thread = threading.Thread(target=pump, name=f"relay-{prefix}", daemon=True)
    thread.start()
    return thread


def start(script: Path, *args: str) -> subprocess.Popen[str]:
    """Run ``script`` with this interpreter, stdout and stderr merged, unbuffered."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)


def stop(process: subprocess.Popen[str]) -> int | None:
    """Stop ``process`` (SIGTERM, then kill); its exit status, or None if it had to be killed."""
    if process.poll() is None:
        process.terminate()
        try:
            return process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            return None
    return process.returncode


class Demo:
    """The two processes, what the server has said, and what went wrong."""

    def __init__(self) -> None:
        self.server: subprocess.Popen[str] | None = None
        self.holder: subprocess.Popen[str] | None = None
        self.relays: list[threading.Thread] = []
        self.server_lines: list[str] = []
        self.uri: str | None = None
        self.uri_seen = threading.Event()
        self.failures: list[str] = []

    def _on_server_line(self, line: str) -> None:
        self.server_lines.append(line)
        match = URI_LINE.match(line)
        if match and self.uri is None:
            self.uri = match.group(1)
            self.uri_seen.set()

    def run(self) -> None:
        say("demo", f"starting the room landlord (server.py --max-lease {MAX_LEASE_SECONDS} "
                    f"--revoke {REVOKED_ROOM} --after {REVOKE_AFTER_SECONDS})")
        self.server = start(SERVER_SCRIPT, "--host", "127.0.0.1", "--port", "0",
                            "--max-lease", MAX_LEASE_SECONDS,
                            "--revoke", REVOKED_ROOM, "--after", REVOKE_AFTER_SECONDS)
        self.relays.append(relay(self.server, "server", self._on_server_line))
        # Wait for the URI line, but give up early if the server dies first.
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while not self.uri_seen.wait(0.05):
            if self.server.poll() is not None:
                self.failures.append("the server exited before printing its URI")
                return
            if time.monotonic() > deadline:
                self.failures.append(f"the server printed no URI within {SERVER_START_TIMEOUT:g} s")
                return

        say("demo", f"server is up at {self.uri}; running holder.py")
        self.holder = start(HOLDER_SCRIPT, str(self.uri))
        self.relays.append(relay(self.holder, "holder"))
        try:
            status = self.holder.wait(HOLDER_TIMEOUT)
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
            if self.server.poll() is None:
                say("demo", "stopping the server (SIGTERM)")
            status = stop(self.server)
            if status is None:
                self.failures.append("the server ignored SIGTERM and had to be killed")
            elif status != 0 and os.name == "posix":  # elsewhere terminate() is a hard kill
                self.failures.append(f"the server exited with status {status}")
        for thread in self.relays:
            thread.join(5.0)  # the pipes are closed now, so the relays finish

    def check_server_story(self) -> None:
        """The server must have revoked the room and denied exactly one renewal of it."""
        denials = [line for line in self.server_lines if "DENIED" in line]
        if len(denials) != 1 or not denials[0].endswith(f"DENIED {REVOKED_ROOM}"):
            self.failures.append(f"the server denied {len(denials)} renewal(s); expected one, of {REVOKED_ROOM}")
        if not any(line.endswith(f"{REVOKED_ROOM} freed: its lease expired") for line in self.server_lines):
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
