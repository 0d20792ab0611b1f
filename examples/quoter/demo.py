"""The Quoter story, end to end, in real processes: what ``make demo`` runs.

1. A lookup service starts on localhost (``python -m lookup serve -v``: it logs renewals).
2. A quoter service registers itself through a JoinManager, on a 3 s lease.
3. A client finds it by type and attribute through a LookupCache and gets quotes.
4. ``python -m lookup list`` shows the registration and its time left.
5. The JoinManager renews the registration three times, each for its own 3 s term.
6. The quoter is killed with SIGKILL: no goodbye, no cancel.
7. Its lease runs out within its 3 s term; the lookup service drops it; the client's cache sees it go.

Exits 0 when the whole story happened, 1 otherwise, and leaves no process behind.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import NamedTuple

from landlord.testing import ChildProcess, Line, free_port

HERE = Path(__file__).resolve().parent
LEASE = 3.0
RENEWALS = 3  # seen at the lookup service before the quoter is killed
STARTED = time.monotonic()


_output = threading.Lock()  # the relay threads and the main thread all print


def show(who: str, message: str) -> None:
    """One line of the story, stamped with seconds since the demo started (one write: no interleaving)."""
    with _output:
        sys.stdout.write(f"[{time.monotonic() - STARTED:6.2f}s] {who:<7} {message}\n")
        sys.stdout.flush()


def say(message: str) -> None:
    show("demo", message)


# what the children put before their own lines: their own time stamps, log time stamps and levels
_CHILD_PREFIX = re.compile(r"^(\[\s*[\d.]+s\]\s+\w+\s+|\d{4}-\d\d-\d\d [\d:,]+ \w+\s+)")


def start(name: str, *args: str, cwd: Path = HERE) -> ChildProcess:
    """Start ``python ARGS`` in ``cwd``, relaying its output under ``name`` as it comes."""
    def relay(line: Line) -> None:
        # the demo reads these; "lookup service at" is also logged, with a time stamp
        if line.text and not re.match(r"(registered|found|vanished|lookup service at) ", line.text):
            text = _CHILD_PREFIX.sub("", line.text)
            show(name, text if len(text) <= 150 else text[:149] + "…")

    return ChildProcess(*args, name=name, env={"PYTHONUNBUFFERED": "1"}, cwd=cwd, on_line=relay)


class Story(NamedTuple):
    """What differs between tellings of the story (examples/quoter_aio tells it in asyncio)."""

    service: str  # who registers, and what keeps the registration alive
    client: str  # who looks for the quoter, and how
    renewer: str  # what renews the registration
    done: str  # the last line


SYNC = Story(service="a quoter service (lease {lease:g} s, kept alive by a JoinManager)",
             client="a client that looks for a quoter by type (quoter_api.Quoter) and attributes",
             renewer="JoinManager", done="done: registered, found, used, killed, and gone by itself")


def tell(story: Story, here: Path = HERE) -> int:
    """Run the story with the quoter_service.py and client.py of ``here``; 0 when it all happened."""
    processes: list[ChildProcess] = []
    try:
        port = free_port()
        say(f"starting a lookup service on 127.0.0.1:{port}")
        lookup = start("lookup", "-m", "lookup", "serve", "--port", str(port), "--verbose", cwd=here)
        processes.append(lookup)
        lookup_uri = lookup.read_uri(20)  # its line 'lookup service at <uri> (...)'

        say("starting " + story.service.format(lease=LEASE))
        quoter = start("quoter", "quoter_service.py", lookup_uri, "--lease", str(LEASE), cwd=here)
        processes.append(quoter)
        service_id = quoter.wait_for(r"registered (\S+)", 20).group(1)

        say("starting " + story.client)
        client = start("client", "client.py", lookup_uri, cwd=here)
        processes.append(client)
        found = client.wait_for(r"found (\S+)", 20).group(1)
        if found != service_id:
            raise RuntimeError(f"the client found {found}, not the quoter {service_id}")
        client.wait_for(r"waiting for the quoter", 20)

        say("what the lookup service holds now (python -m lookup list):")
        table = subprocess.run([sys.executable, "-m", "lookup", "list", "--port", str(port)],
                               capture_output=True, text=True, timeout=30, cwd=here)
        for line in table.stdout.splitlines():
            show("list", line)

        say(f"the quoter's {story.renewer} renews its registration a third into each {LEASE:g} s term; "
            "waiting for three renewals")
        for count in range(1, RENEWALS + 1):
            renewed = lookup.wait_for(rf"renewed .*registration {re.escape(service_id)} for ([\d.]+) s", 4 * LEASE)
            granted = float(renewed.group(1))
            if granted > LEASE:
                raise RuntimeError(f"renewal {count} was for {granted:g} s: the registration grew past its term")
        say(f"renewed {RENEWALS} times, each for {LEASE:g} s: however long it runs, it stays a {LEASE:g} s lease")

        say(f"kill -9 the quoter (pid {quoter.pid}): it will never renew again")
        killed = time.monotonic()
        quoter.kill()
        client.wait_for(r"vanished (\S+)", 3 * LEASE + 10)
        gone_after = time.monotonic() - killed
        say(f"the client's cache lost the quoter {gone_after:.1f} s after the kill "
            f"(lease {LEASE:g} s): nobody had to notice the crash")
        if client.process.wait(10) != 0:
            raise RuntimeError("the client failed")
        say(story.done)
        return 0
    except Exception as exc:
        say(f"FAILED: {exc}")
        return 1
    finally:
        for process in reversed(processes):  # SIGTERM, a kill after 10 s; reaped either way
            process.stop()
            process.close()


def main() -> int:
    return tell(SYNC)


if __name__ == "__main__":
    sys.exit(main())
