"""Holders that die with kill -9: their landlord frees what they held, in time, and leaks nothing."""

from __future__ import annotations

import os
import re
import signal
import time
from typing import Any

import Pyro5.api
from faultkit import Spawn, start_landlord

from landlord import UnknownLeaseError

# How late after its expiration a freed resource may be reported: the sleeper
# reaper wakes within milliseconds; the rest is a loaded machine's scheduling
# and the output pipe.
REAPER_SLACK = 0.5


def test_a_killed_holders_lease_is_freed_within_its_term(spawn: Spawn) -> None:
    """A holder process keeps its lease alive FOREVER with a renewal manager's defaults, for
    many terms, then is SIGKILLed: every renewal asked for the lease's own 2 s term, so the
    landlord frees the resource no later than one term (plus the reaper's delay) after the
    kill, and not before it (the lease was alive only through the holder)."""
    term = 2.0
    landlord = start_landlord(spawn, "--verbose")
    holder = spawn("fault_holder.py", landlord.uri, "room-7", str(term))
    holder.expect("holding room-7")
    for _ in range(12):  # kept for four terms: only the holder's renewals explain it
        renewed = landlord.child.wait_for(r"^renewed room-7 (\S+)$", timeout=10)
        assert float(renewed.group(1)) == term  # its own term, not the landlord's maximum

    killed_at = time.monotonic()
    os.kill(holder.process.pid, signal.SIGKILL)
    assert holder.process.wait(10) == -signal.SIGKILL
    with Pyro5.api.Proxy(landlord.direct) as control:
        try:
            expiration: float | None = control.expiration_of("room-7")  # final: no one renews it now
        except UnknownLeaseError:
            expiration = None  # already freed: the assertions below still decide
    freed_at = landlord.freed("room-7", timeout=term + 10)

    print(f"kill -9 to freed: {freed_at - killed_at:.3f}s (term {term}s)")
    assert killed_at < freed_at <= killed_at + term + REAPER_SLACK
    if expiration is not None:
        print(f"reaper delay: {(freed_at - expiration) * 1000:.1f} ms")
        assert expiration <= freed_at <= expiration + REAPER_SLACK  # freed by expiry, promptly
    assert not any(line.startswith("cancelled") for line in landlord.child.output)


def crash_holders(spawn: Spawn, uri: str, count: int, *, leases: int, duration: float,
                  prefix: str) -> dict[str, float]:
    """Run tests/processes/crash_factory.py: ``count`` forked holders, each SIGKILLed after renting."""
    factory = spawn("crash_factory.py", uri, str(count), "--leases", str(leases),
                    "--duration", str(duration), "--parallel", "8", "--prefix", prefix)
    found = factory.wait_for(r"^crashed (\d+) failed (\d+) leases (\d+) seconds (\S+)$", timeout=120)
    assert factory.process.wait(10) == 0, factory.output
    return dict(zip(("killed", "failed", "leases", "seconds"), map(float, found.groups())))


def test_a_thousand_holder_crashes_leak_nothing(spawn: Spawn) -> None:
    """1,000 real holder processes each rent two 1 s leases over a connection of their own
    and are killed with SIGKILL. Afterwards every lease has expired and been freed
    (frees == grants, nothing held), and the landlord's open files and threads are
    what they were after the first 100 crashes: nothing grows with the crashes."""
    landlord = start_landlord(spawn, "--quiet")
    with Pyro5.api.Proxy(landlord.direct) as control:  # one connection, open throughout
        before: dict[str, Any] = control.stats()
        # A first round lets the daemon's thread pool and the like reach their working size.
        warm_up = crash_holders(spawn, landlord.uri, 100, leases=2, duration=1.0, prefix="warm-")
        after_100: dict[str, Any] = control.wait_all_freed(20)
        rest = crash_holders(spawn, landlord.uri, 900, leases=2, duration=1.0, prefix="crash-")
        after_1000: dict[str, Any] = control.wait_all_freed(20)

    print(f"before {before}\nafter 100 {after_100}\nafter 1000 {after_1000}\n"
          f"crash rounds took {warm_up['seconds']:.1f}s and {rest['seconds']:.1f}s")
    assert (warm_up["killed"], warm_up["failed"]) == (100, 0)
    assert (rest["killed"], rest["failed"]) == (900, 0)
    assert after_1000["granted"] == 2000
    assert after_1000["freed"] == after_1000["granted"] and after_1000["cancelled"] == 0
    assert after_1000["held"] == 0
    # The killed holders' 1,000 connections are closed and their threads gone: a
    # leak of even one per crash would show as hundreds here.
    assert after_1000["fds"] <= after_100["fds"] + 2
    assert after_1000["threads"] <= after_100["threads"] + 2
    assert after_1000["fds"] <= before["fds"] + 4 and after_1000["threads"] <= before["threads"] + 4


def test_crash_factory_holders_really_die_by_sigkill(spawn: Spawn) -> None:
    """The factory counts a holder as crashed only if SIGKILL ended it: one that cannot
    rent (its landlord refuses) exits by itself and is counted as failed."""
    landlord = start_landlord(spawn, "--quiet", "--maximum", "600")
    # a negative duration is refused before anything is leased: every holder fails
    factory = spawn("crash_factory.py", landlord.uri, "3", "--duration", "-5")
    found = factory.wait_for(r"^crashed (\d+) failed (\d+)", timeout=30)
    assert found.groups() == ("0", "3")
    assert re.search(r"leases 0 ", factory.output[-1])
