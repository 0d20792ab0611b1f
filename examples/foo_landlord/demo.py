"""Run the Foo landlord example end to end: a server and a client, as two processes.

Starts server.py on a free port, reads its URI from its output, runs
client.py against it, relays what both print (prefixed ``server |`` and
``client |``), then stops the server with SIGTERM. Takes a few seconds::

    python examples/foo_landlord/demo.py      # or: make demo

Exit status 0 when the server started, the client told its whole story and
the server stopped cleanly; 1 otherwise.
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
CLIENT_SCRIPT = HERE / "client.py"

SERVER_START_TIMEOUT = 15.0  # generous: a cold interpreter on a busy CI machine
CLIENT_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0  # after SIGTERM, before a kill

URI_LINE = re.compile(r"^landlord at (PYRO:\S+) ")  # what serve_landlord prints once serving

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
        self.client: subprocess.Popen[str] | None = None
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
        say("demo", "starting the Foo landlord (server.py --port 0 --max-lease 10)")
        self.server = start(SERVER_SCRIPT, "--host", "127.0.0.1", "--port", "0",
                            "--max-lease", "10")
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

        say("demo", f"server is up at {self.uri}; running client.py")
        self.client = start(CLIENT_SCRIPT, str(self.uri))
        self.relays.append(relay(self.client, "client"))
        try:
            status = self.client.wait(CLIENT_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.failures.append(f"the client did not finish within {CLIENT_TIMEOUT:g} s")
            return
        if status != 0:
            self.failures.append(f"the client exited with status {status}")

    def shut_down(self) -> None:
        """Stop whatever still runs and check that the server stopped cleanly."""
        if self.client is not None and stop(self.client) is None:
            self.failures.append("the client had to be killed")
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
        """The server must have freed one Foo by expiry and one by cancellation."""
        for reason in ("its lease expired", "its lease was cancelled"):
            if not any(line.endswith(f"freed: {reason}") for line in self.server_lines):
                self.failures.append(f"the server never reported a foo freed because {reason}")


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
    say("demo", f"done in {time.monotonic() - started:.1f} s: "
                "one foo freed by expiry, one by cancellation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
