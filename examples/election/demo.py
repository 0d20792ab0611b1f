"""Run the election example end to end: a landlord, three candidates and a watcher, each a process.

Starts server.py (a plain landlord: 2 s terms) and watcher.py (prints each change of
leader), then the candidates alice, bob and carol (candidate.py), one after another:

1. alice leads (token 1) and works; bob and carol wait in line;
2. alice is killed (kill -9): her lease runs out unrenewed, and bob, first in line,
   leads within the term, with a higher token;
3. bob hands the lead over to carol by name (``hand_over``): no moment when nobody leads;
4. carol resigns, and nobody leads.

The watcher prints each change of leader as the landlord pushes it. Every step waits for
what the processes print, never for time to pass::

    python examples/election/demo.py

Exit status 0 when the story happened: one leader at a time, the takeover within the term
(plus a second), tokens only increasing, the watcher told of each leader in turn; 1 otherwise.
"""

from __future__ import annotations

import pathlib
import sys
import threading
import time

from landlord.testing import ChildProcess, Line, WaitFailed

HERE = pathlib.Path(__file__).resolve().parent
TERM = 2.0  # seconds: the server's longest term, and what the candidates ask for
TAKEOVER_GOAL = TERM + 1.0  # seconds from the kill to the next leader: its term, and time to tell the next
START_TIMEOUT = 20.0  # seconds: a cold interpreter on a busy CI machine
STEP_TIMEOUT = 20.0  # seconds any one step may take

_started = time.monotonic()
_print_lock = threading.Lock()


def say(prefix: str, text: str, at: float | None = None) -> None:
    """Print one line under ``prefix``, stamped with the seconds since the demo started."""
    with _print_lock:
        print(f"{prefix:<7}| {(time.monotonic() if at is None else at) - _started:5.2f} {text}", flush=True)


def start(script: str, prefix: str, *args: str, stdin: bool = False) -> ChildProcess:
    """Run ``script`` of this folder with this interpreter, each line it prints relayed under ``prefix``."""
    def relay(line: Line) -> None:
        say(prefix, line.text, line.time)

    return ChildProcess(str(HERE / script), *args, name=prefix, stdin=stdin, env={"PYTHONUNBUFFERED": "1"},
                        on_line=relay)


def main() -> int:
    failures: list[str] = []
    children: list[ChildProcess] = []
    try:
        story(children, failures)
    except WaitFailed as failed:
        failures.append(str(failed).splitlines()[0])
    finally:  # whatever happened, leave nothing running
        for child in reversed(children):
            child.stop()
            child.close()
    for failure in failures:
        say("demo", f"FAILED: {failure}")
    if failures:
        return 1
    say("demo", "done: one leader at a time, the takeover within the term, tokens only increasing")
    return 0


def story(children: list[ChildProcess], failures: list[str]) -> None:
    say("demo", f"starting the landlord (server.py, {TERM:g} s terms) and the watcher (watcher.py)")
    server = start("server.py", "server", "--term", str(TERM))
    children.append(server)
    uri = server.read_uri(START_TIMEOUT)
    watcher = start("watcher.py", "watcher", uri)
    children.append(watcher)
    watcher.wait_for(r"^nobody leads$", START_TIMEOUT)

    candidates = {}
    for name in ("alice", "bob", "carol"):  # one after another: the order they wait in is known
        candidates[name] = start("candidate.py", name, uri, name, stdin=True)
        children.append(candidates[name])
        server.wait_for(r"granted with token \d+$" if name == "alice" else r"waits in line", START_TIMEOUT)
    alice, bob, carol = candidates.values()
    tokens = {"alice": int(alice.wait_for(r"^leads with token (\d+)$", STEP_TIMEOUT).group(1))}
    watcher.wait_for(r"^the leader is now alice$", STEP_TIMEOUT)
    alice.wait_for(r"^work 2 done", STEP_TIMEOUT)  # she works on while the others wait

    say("demo", "killing alice (kill -9), the leader: she does not resign, her lease runs out")
    alice.kill()
    killed = time.monotonic()
    tokens["bob"] = int(bob.wait_for(r"^leads with token (\d+)$", STEP_TIMEOUT).group(1))
    took = time.monotonic() - killed
    say("demo", f"bob leads {took:.2f} s after alice was killed (the term is {TERM:g} s)")
    if took > TAKEOVER_GOAL:
        failures.append(f"bob took {took:.2f} s to lead, more than {TAKEOVER_GOAL:g} s")
    watcher.wait_for(r"^the leader is now bob$", STEP_TIMEOUT)
    bob.wait_for(r"^work 2 done", STEP_TIMEOUT)

    say("demo", "telling bob to hand the lead over to carol")
    bob.send("hand-over carol")
    tokens["carol"] = int(carol.wait_for(r"^leads with token (\d+)$", STEP_TIMEOUT).group(1))
    bob.wait_for(r"^handed over to carol$", STEP_TIMEOUT)
    watcher.wait_for(r"^the leader is now carol$", STEP_TIMEOUT)
    carol.wait_for(r"^work 2 done", STEP_TIMEOUT)

    say("demo", "telling carol to resign")
    carol.send("resign")
    carol.wait_for(r"^resigned$", STEP_TIMEOUT)
    watcher.wait_for(r"^nobody leads$", STEP_TIMEOUT)
    for name in ("bob", "carol"):
        if candidates[name].process.wait(STEP_TIMEOUT) != 0:
            failures.append(f"{name} exited with a failure")

    say("demo", "tokens: " + ", ".join(f"{name} {token}" for name, token in tokens.items()))
    if not tokens["alice"] < tokens["bob"] < tokens["carol"]:
        failures.append("the tokens did not only increase")
    seen = [line.removeprefix("the leader is now ") for line in watcher.output if line.startswith("the leader")]
    say("demo", f"the watcher saw, in turn: {', '.join(seen)}")
    if seen != ["alice", "bob", "carol"]:
        failures.append("the watcher did not see alice, bob and carol lead, in turn")


if __name__ == "__main__":
    sys.exit(main())
