"""Many real holder processes that take leases and are then killed with SIGKILL, made cheaply.

Usage: crash_factory.py LANDLORD_URI COUNT [--leases N] [--duration SECONDS]
                        [--parallel P] [--prefix TEXT]

Imports landlord once, then forks COUNT holders, at most P alive at a time.
Each opens its own Pyro5 connection, rents N leases of DURATION seconds from
the landlord (``rent(resource, duration)``), tells the factory on a pipe and
waits; the factory kills it with SIGKILL, reaps it and checks that SIGKILL is
what ended it. At the end it prints::

    crashed <killed> failed <failed> leases <leases taken> seconds <elapsed>

A holder that cannot rent exits on its own and counts as failed. Holders exit
by themselves if the factory dies, so none outlives a failed test.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import sys
import time
from typing import NoReturn

import Pyro5.api

import landlord  # noqa: F401  (the lease converters, registered once before forking)

# A holder that waits this long for its landlord gives up (and counts as failed).
HOLDER_CALL_TIMEOUT = 10.0
# The factory gives up when no holder has reported for this long.
STALL_TIMEOUT = 30.0


def hold(uri: str, resources: list[str], duration: float, ready_fd: int, life_fd: int) -> NoReturn:
    """A forked holder: rent, report, then wait to be killed."""
    try:
        rooms = Pyro5.api.Proxy(uri)  # made after the fork: a connection of its own
        rooms._pyroTimeout = HOLDER_CALL_TIMEOUT
        for resource in resources:
            rooms.rent(resource, duration)
        os.write(ready_fd, b"+")
        os.read(life_fd, 1)  # blocks until SIGKILL, or EOF if the factory has died
    except BaseException:  # noqa: B036  (whatever it is, this holder failed; nothing must unwind)
        pass
    os._exit(70)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("uri")
    parser.add_argument("count", type=int)
    parser.add_argument("--leases", type=int, default=1)
    parser.add_argument("--duration", type=float, default=1.0)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--prefix", default="crash-")
    args = parser.parse_args(argv)

    life_r, life_w = os.pipe()  # only the factory holds the write end: EOF tells holders it died
    in_flight: dict[int, int] = {}  # ready pipe's read end -> holder pid
    poller = select.poll()  # no kernel-side state for the holders to inherit, unlike epoll
    started = killed = failed = 0
    began = time.monotonic()
    sys.stdout.flush()
    while started < args.count or in_flight:
        while len(in_flight) < args.parallel and started < args.count:
            ready_r, ready_w = os.pipe()
            resources = [f"{args.prefix}{started}-{i}" for i in range(args.leases)]
            pid = os.fork()
            if pid == 0:
                # keep only our own pipe ends: another holder's EOF must not wait for us
                for fd in (ready_r, life_w, *in_flight):
                    os.close(fd)
                hold(args.uri, resources, args.duration, ready_w, life_r)
            os.close(ready_w)
            in_flight[ready_r] = pid
            poller.register(ready_r, select.POLLIN)
            started += 1
        events = poller.poll(STALL_TIMEOUT * 1000)
        if not events:
            for pid in in_flight.values():
                os.kill(pid, signal.SIGKILL)
            print(f"stalled: {len(in_flight)} holders did not report in {STALL_TIMEOUT}s", flush=True)
            sys.exit(1)
        for fd, _ in events:
            reported = os.read(fd, 1) == b"+"
            pid = in_flight.pop(fd)
            poller.unregister(fd)
            os.close(fd)
            if reported:
                os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            if reported and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
                killed += 1
            else:
                failed += 1
    os.close(life_w)
    elapsed = time.monotonic() - began
    print(f"crashed {killed} failed {failed} leases {killed * args.leases} seconds {elapsed:.2f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
