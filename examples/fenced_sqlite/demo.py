"""Run the fenced_sqlite example end to end: a lock service, a ledger in SQLite, two workers.

Starts locks.py (a landlord: 2 s terms) and ledger.py (rows in a SQLite file,
written only through a fence checked in the same transaction), then:

1. alice takes the lock (token 1), writes row 1, checks that her lock is valid, and
   is about to write row 2 when she is paused (SIGSTOP);
2. bob, waiting for the lock, gets it once alice's lease has run out (token 2),
   writes row 1 and releases;
3. alice is let go (SIGCONT) and writes row 2 with token 1, late: the ledger refuses
   it (StaleTokenError), and her lock is no longer valid;
4. the ledger is killed (kill -9) and started again on the same file: token 1 is
   still refused, for the highest token accepted is in the database.

Every step waits for what the processes print, never for time to pass::

    python examples/fenced_sqlite/demo.py

Exit status 0 when the story happened: the ledger holds alice's row 1 and bob's
row 1 and nothing else, in token order; 1 otherwise.
"""

from __future__ import annotations

import os
import pathlib
import signal
import sys
import tempfile
import threading
import time

import Pyro5.api

import landlord
from landlord.testing import ChildProcess, WaitFailed

HERE = pathlib.Path(__file__).resolve().parent
START_TIMEOUT = 20.0  # seconds: a cold interpreter on a busy CI machine
STEP_TIMEOUT = 20.0  # seconds any one step may take (alice's lease runs out in 2)

_print_lock = threading.Lock()


def say(prefix: str, line: str) -> None:
    with _print_lock:
        print(f"{prefix:<6} | {line}", flush=True)


def start(script: str, prefix: str, *args: str, stdin: bool = False) -> ChildProcess:
    """Run ``script`` of this folder with this interpreter, each line it prints relayed under ``prefix``."""
    return ChildProcess(str(HERE / script), *args, name=prefix, stdin=stdin, env={"PYTHONUNBUFFERED": "1"},
                        on_line=lambda line: say(prefix, line.text))


def main() -> int:
    started = time.monotonic()
    failures: list[str] = []
    children: list[ChildProcess] = []
    with tempfile.TemporaryDirectory() as folder:
        db = str(pathlib.Path(folder) / "ledger.sqlite")
        try:
            story(db, children, failures)
        except WaitFailed as failed:
            failures.append(str(failed).splitlines()[0])
        finally:  # whatever happened, leave nothing running
            for child in reversed(children):
                if child.alive:
                    os.kill(child.pid, signal.SIGCONT)  # a stopped process takes no SIGTERM
                child.stop()
                child.close()
    for failure in failures:
        say("demo", f"FAILED: {failure}")
    if failures:
        return 1
    say("demo", f"done in {time.monotonic() - started:.1f} s: the late write was refused, before and after "
                f"the ledger's restart")
    return 0


def story(db: str, children: list[ChildProcess], failures: list[str]) -> None:
    say("demo", "starting the lock service (locks.py, 2 s terms) and the ledger (ledger.py)")
    locks = start("locks.py", "locks")
    children.append(locks)
    ledger = start("ledger.py", "ledger", "--db", db)
    children.append(ledger)
    locks_uri, ledger_uri = locks.read_uri(START_TIMEOUT), ledger.read_uri(START_TIMEOUT)

    alice = start("worker.py", "alice", locks_uri, ledger_uri, "alice", "--pause-before-second-write", stdin=True)
    children.append(alice)
    first = int(alice.wait_for(r"holds the lock with token (\d+)$", START_TIMEOUT).group(1))
    bob = start("worker.py", "bob", locks_uri, ledger_uri, "bob")
    children.append(bob)
    bob.wait_for(r"waiting for the lock$", START_TIMEOUT)
    alice.wait_for(r"about to write row 2 with token \d+$", STEP_TIMEOUT)

    say("demo", "pausing alice (SIGSTOP) between her check and her write")
    os.kill(alice.pid, signal.SIGSTOP)
    paused = time.monotonic()
    alice.send("go")  # read once she runs again
    second = int(bob.wait_for(r"holds the lock with token (\d+)$", STEP_TIMEOUT).group(1))
    say("demo", f"bob holds the lock {time.monotonic() - paused:.1f} s after alice was paused: "
                f"her lease ran out, unrenewed")
    bob.wait_for(r"released the lock$", STEP_TIMEOUT)
    if second <= first:
        failures.append(f"bob's token {second} is not above alice's {first}")

    say("demo", "letting alice go (SIGCONT): she writes row 2 with her old token")
    os.kill(alice.pid, signal.SIGCONT)
    alice.wait_for(r"late write refused: StaleTokenError", STEP_TIMEOUT)
    alice.wait_for(r"lock\.valid is False now$", STEP_TIMEOUT)
    if alice.process.wait(STEP_TIMEOUT) != 0 or bob.process.wait(STEP_TIMEOUT) != 0:
        failures.append("a worker exited with a failure")

    say("demo", "killing the ledger (kill -9) and starting it again on the same file")
    ledger.kill()
    ledger.close()
    ledger = start("ledger.py", "ledger", "--db", db)
    children.append(ledger)
    with Pyro5.api.Proxy(ledger.read_uri(START_TIMEOUT)) as restarted:
        try:
            restarted.append(first, "alice", "row 2, again")
            failures.append(f"the restarted ledger accepted token {first}")
        except landlord.StaleTokenError as refused:
            say("demo", f"after the restart, token {first} is still refused: {refused}")
        rows = restarted.rows()
    for row_id, token, worker, text in rows:
        say("demo", f"ledger row {row_id}: token {token}, {worker}, {text}")
    if [(token, worker, text) for _, token, worker, text in rows] != [(first, "alice", "row 1"),
                                                                       (second, "bob", "row 1")]:
        failures.append("the ledger does not hold exactly alice's row 1 and bob's row 1")


if __name__ == "__main__":
    sys.exit(main())
