"""Run the Foo landlord example end to end: a server and a client, as two processes.

Starts server.py on a free port, reads its URI from its output
(``landlord at <uri> (...)``, as serve_landlord prints it), runs
client.py against it, relays what both print (prefixed ``server |`` and
``client |``), then stops the server with SIGTERM. Takes a few seconds::

    python examples/foo_landlord/demo.py      # or: make demo

Exit status 0 when the server started, the client told its whole story and
the server stopped cleanly; 1 otherwise.
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
CLIENT_SCRIPT = HERE / "client.py"

SERVER_START_TIMEOUT = 15.0  # generous: a cold interpreter on a busy CI machine
CLIENT_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0  # after SIGTERM, before a kill

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
        self.client: ChildProcess | None = None
        self.failures: list[str] = []

    def run(self) -> None:
        say("demo", "starting the Foo landlord (server.py --port 0 --max-lease 10)")
        self.server = start(SERVER_SCRIPT, "server", "--host", "127.0.0.1", "--port", "0",
                            "--max-lease", "10")
        try:  # its line 'landlord at <uri> (...)'; given up at once if the server dies first
            uri = self.server.read_uri(SERVER_START_TIMEOUT)
        except WaitFailed:
            status = self.server.process.poll()
            self.failures.append(f"the server printed no URI within {SERVER_START_TIMEOUT:g} s" if status is None
                                 else f"the server exited (status {status}) before printing its URI")
            return

        say("demo", f"server is up at {uri}; running client.py")
        self.client = start(CLIENT_SCRIPT, "client", uri)
        try:
            status = self.client.process.wait(CLIENT_TIMEOUT)
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
            if self.server.alive:
                say("demo", "stopping the server (SIGTERM)")
            status = stop(self.server)
            if status is None:
                self.failures.append("the server ignored SIGTERM and had to be killed")
            elif status != 0 and os.name == "posix":  # elsewhere SIGTERM is a hard kill
                self.failures.append(f"the server exited with status {status}")

    def check_server_story(self) -> None:
        """The server must have freed one Foo by expiry and one by cancellation."""
        lines = self.server.output if self.server is not None else []
        for reason in ("its lease expired", "its lease was cancelled"):
            if not any(line.endswith(f"freed: {reason}") for line in lines):
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
