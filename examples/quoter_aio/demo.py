"""The Quoter story in asyncio, end to end, in real processes.

1. A lookup service starts on localhost (``python -m lookup serve -v``: it logs renewals).
2. An asyncio quoter service registers itself through an AsyncJoinManager, on a 3 s lease
   that an AsyncLeaseRenewalManager keeps alive.
3. An asyncio client finds it by type and attributes through an AsyncLookupCache
   (``async for change in cache.changes()``) and gets quotes (``await landlord.aio.call``).
4. ``python -m lookup list`` shows the registration and its time left.
5. The registration is renewed three times, each for its own 3 s term.
6. The quoter is killed with SIGKILL: no goodbye, no cancel.
7. Its lease runs out within its 3 s term; the lookup service drops it; the client's
   ``async for`` hears ``removed``.

Exits 0 when the whole story happened, 1 otherwise, and leaves no process behind.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from landlord.testing import ChildProcess, Line, free_port

HERE = Path(__file__).resolve().parent
LEASE = 3.0
RENEWALS = 3  # seen at the lookup service before the quoter is killed
STARTED = time.monotonic()

_output = threading.Lock()  # the relay threads and the main thread all print

# what the children put before their own lines: their own time stamps, log time stamps and levels
_CHILD_PREFIX = re.compile(r"^(\[\s*[\d.]+s\]\s+\w+\s+|\d{4}-\d\d-\d\d [\d:,]+ \w+\s+)")


def show(who: str, message: str) -> None:
    """One line of the story, stamped with seconds since the demo started (one write: no interleaving)."""
    with _output:
        sys.stdout.write(f"[{time.monotonic() - STARTED:6.2f}s] {who:<7} {message}\n")
        sys.stdout.flush()


def say(message: str) -> None:
    show("demo", message)


def start(name: str, *args: str) -> ChildProcess:
    """Start ``python ARGS`` in this directory, relaying its output under ``name`` as it comes."""
    def relay(line: Line) -> None:
        if line.text and not re.match(r"(registered|found|vanished|lookup service at) ", line.text):
            text = _CHILD_PREFIX.sub("", line.text)
            show(name, text if len(text) <= 150 else text[:149] + "…")

    return ChildProcess(*args, name=name, env={"PYTHONUNBUFFERED": "1"}, cwd=HERE, on_line=relay)


def main() -> int:
    processes: list[ChildProcess] = []
    try:
        port = free_port()
        say(f"starting a lookup service on 127.0.0.1:{port}")
        lookup = start("lookup", "-m", "lookup", "serve", "--port", str(port), "--verbose")
        processes.append(lookup)
        lookup_uri = lookup.read_uri(20)

        say(f"starting an asyncio quoter service (lease {LEASE:g} s, kept alive by an AsyncLeaseRenewalManager)")
        quoter = start("quoter", "quoter_service.py", lookup_uri, "--lease", str(LEASE))
        processes.append(quoter)
        service_id = quoter.wait_for(r"registered (\S+)", 20).group(1)

        say("starting an asyncio client: an AsyncLookupCache by type (quoter_api.Quoter) and attributes, "
            "read with async for")
        client = start("client", "client.py", lookup_uri)
        processes.append(client)
        found = client.wait_for(r"found (\S+)", 20).group(1)
        if found != service_id:
            raise RuntimeError(f"the client found {found}, not the quoter {service_id}")
        client.wait_for(r"waiting for the quoter", 20)

        say("what the lookup service holds now (python -m lookup list):")
        table = subprocess.run([sys.executable, "-m", "lookup", "list", "--port", str(port)],
                               capture_output=True, text=True, timeout=30, cwd=HERE)
        for line in table.stdout.splitlines():
            show("list", line)

        say(f"the quoter's renewal manager renews its registration a third into each {LEASE:g} s term; "
            "waiting for three renewals")
        for count in range(1, RENEWALS + 1):
            renewed = lookup.wait_for(rf"renewed .*registration {re.escape(service_id)} for ([\d.]+) s", 4 * LEASE)
            if float(renewed.group(1)) > LEASE:
                raise RuntimeError(f"renewal {count} was for {renewed.group(1)} s: the registration grew past "
                                   "its term")
        say(f"renewed {RENEWALS} times, each for {LEASE:g} s")

        say(f"kill -9 the quoter (pid {quoter.pid}): it will never renew again")
        killed = time.monotonic()
        quoter.kill()
        client.wait_for(r"vanished (\S+)", 3 * LEASE + 10)
        say(f"the client's cache lost the quoter {time.monotonic() - killed:.1f} s after the kill "
            f"(lease {LEASE:g} s): nobody had to notice the crash")
        if client.process.wait(10) != 0:
            raise RuntimeError("the client failed")
        say("done: registered, found, used, killed, and gone by itself, all from asyncio")
        return 0
    except Exception as exc:
        say(f"FAILED: {exc}")
        return 1
    finally:
        for process in reversed(processes):  # SIGTERM, a kill after 10 s; reaped either way
            process.stop()
            process.close()


if __name__ == "__main__":
    sys.exit(main())
