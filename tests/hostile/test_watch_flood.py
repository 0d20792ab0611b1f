"""A stranger flooding a served landlord with watches of names (``Landlord.watch_name``): refused
by name and by client beyond the bounds, its unreachable or hanging listeners dropped; meanwhile a canary renews
its lease and a canary lock passes from holder to waiter, and neither notices.

The landlord is ``tests/processes/served_landlord.py`` in its own process, then a replica of a
replicated landlord over a real three-member etcd (tests/hostile/targets.py: a replica answers
``watch_name`` with its leader's landlord); the stranger is this process, through proxies of its own.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections.abc import Iterator

import Pyro5.api
import pytest
from conftest import wait_until
from etcd_fixtures import etcd_cluster  # noqa: F401 (a fixture)
from targets import Target, serving, watched

import landlord
from landlord.grantor.revocations import NOTICE_TIMEOUT
from landlord.grantor.watches import MAX_PER_CLIENT, MAX_PER_NAME, MAX_WATCHES

pytestmark = pytest.mark.slow

WORST_HAND_OFF = 1.0  # seconds from the canary lock's release to its waiter holding it
CALLS = 20_000  # against the landlord; a replica refuses with its leader's landlord, by the same rules, and
REPLICA_CALLS = MAX_PER_NAME + 200 + 1_000  # is asked enough to reach each bound (a few seconds, not 16)
STRANGERS = 4  # threads, each with its own connection


class LockCanary:
    """Passes a lock from a holder to a waiter again and again on threads of its own, timing each
    hand-off: from the holder's release to the waiter's acquire returning (a grant pushed by the
    landlord's notice thread, which watches must never hold up)."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.took: list[float] = []
        self.failures: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lock canary", daemon=True)

    def start(self) -> LockCanary:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive(), "the lock canary is stuck"

    def _run(self) -> None:
        holder = landlord.Lock(self.uri, "canary lock", duration=2)
        waiter = landlord.Lock(self.uri, "canary lock", duration=2)
        while not self._stop.is_set():
            try:
                assert holder.acquire(timeout=5)
                got: list[float] = []

                def wait(got: list[float] = got) -> None:
                    if waiter.acquire(timeout=10):
                        got.append(time.monotonic())

                waiting = threading.Thread(target=wait)
                waiting.start()
                time.sleep(0.05)  # time for the waiter to queue, so that most hand-offs are pushed grants (one
                # that is not queued yet is granted at once: the figure stays right either way)
                released = time.monotonic()
                holder.release()
                waiting.join(15)
                if not got:
                    raise AssertionError("the waiter was not granted the lock")
                self.took.append(got[0] - released)
                waiter.release()
            except BaseException as exc:  # a miss: what the test reports
                self.failures.append(exc)
                holder.release()
                waiter.release()

    def check(self) -> None:
        report = f"lock canary: {len(self.took)} hand-offs, worst {max(self.took, default=0) * 1000:.0f} ms"
        print(report)
        assert not self.failures, f"{report}: {self.failures[:3]}"
        assert self.took, "the lock canary never passed the lock"
        assert max(self.took) < WORST_HAND_OFF, report


@pytest.fixture(params=["landlord", "replica"])
def served(request: pytest.FixtureRequest) -> Iterator[Target]:
    with serving(request.param, request) as target:
        yield target


@contextlib.contextmanager
def canaries(target: Target) -> Iterator[None]:
    """The canaries at work throughout the block: the hostile suite's (``targets.watched``: a 2 s lease
    renewed every 0.1 s, checked with the server's memory) and the lock canary."""
    lock = LockCanary(target.uri).start()
    try:
        with watched(target):
            yield
    finally:
        lock.stop()
    lock.check()


def flood(uri: str, listener: str, names: list[str],
          duration: float) -> tuple[list[landlord.LandlordLease], list[str]]:
    """``watch_name`` once for each of ``names``, from :data:`STRANGERS` threads: the watches granted, and
    the refusals' messages."""
    granted: list[landlord.LandlordLease] = []
    refused: list[str] = []
    lock = threading.Lock()

    def stranger(part: list[str]) -> None:
        with Pyro5.api.Proxy(uri) as proxy:
            for name in part:
                try:
                    lease = proxy.watch_name(name, duration, listener)
                except landlord.LeaseDeniedError as exc:
                    with lock:
                        refused.append(str(exc))
                else:
                    with lock:
                        granted.append(lease)

    threads = [threading.Thread(target=stranger, args=(names[i::STRANGERS],)) for i in range(STRANGERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    return granted, refused


def test_a_flood_of_watches_is_refused_beyond_the_bounds(served: Target) -> None:
    uri = served.uri
    calls = CALLS if served.name == "landlord" else REPLICA_CALLS
    with landlord.ClaimInbox(host="127.0.0.1") as inbox:  # the stranger's own listener: it answers
        assert inbox.uri is not None
        with canaries(served):
            hot = ["hot"] * (MAX_PER_NAME + 200)
            spread = [f"name {i % 3000}" for i in range(calls - len(hot))]
            started = time.monotonic()
            granted, refused = flood(uri, inbox.uri, hot, 30)
            more, refused_more = flood(uri, inbox.uri, spread, 30)
            print(f"{calls} watch_name calls in {time.monotonic() - started:.1f} s")
            assert len(granted) == MAX_PER_NAME
            assert set(refused) == {f"too many watches of 'hot' ({MAX_PER_NAME})"} and len(refused) == 200
            # one client (this host) may have MAX_PER_CLIENT: all it asks for beyond is refused, so it
            # never reaches MAX_WATCHES, which tests/landlord/test_watches.py checks in-process
            assert MAX_PER_CLIENT == MAX_PER_NAME < MAX_WATCHES and more == []
            assert len(refused_more) == calls - len(granted) - len(refused)
            assert all(m.endswith("the most one client may have") for m in refused_more)
            with Pyro5.api.Proxy(uri) as proxy:  # the stranger goes: its watches end
                proxy.cancel_all([lease.cookie for lease in granted])
                assert proxy.watch_name("hot", 30, inbox.uri)  # room again


def _dropped_at(process: landlord.testing.ChildProcess, where: str) -> int:
    """How many watches told at ``where`` the server has dropped, by its log."""
    pattern = rf"dropped (\d+) watch\(es\) told at {re.escape(where)}"
    return sum(int(found.group(1)) for _, found in process.matches(pattern))


@contextlib.contextmanager
def hanging_listener() -> Iterator[str]:
    """A listener's URI whose host takes the connection and never answers."""
    server = socket.create_server(("127.0.0.1", 0), backlog=64)
    try:
        yield f"PYRO:inbox@127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()


def test_unreachable_and_hanging_listeners_are_dropped(served: Target) -> None:
    process, uri = served.process, served.uri
    with landlord.ClaimInbox(host="127.0.0.1") as inbox, hanging_listener() as hanging:
        assert inbox.uri is not None
        with canaries(served):
            unreachable, refused = flood(uri, "PYRO:inbox@127.0.0.1:9", [f"gone {i}" for i in range(2000)], 60)
            # a watch dropped gives its client's place back, so more than one client's limit are granted; the
            # landlord drops them as fast as they come (none refused); a replica grants faster than its
            # notices fail, and the per-client rule refuses the excess (about 500 of 2000 in our runs)
            assert len(unreachable) + len(refused) == 2000 and len(unreachable) > MAX_PER_CLIENT
            assert all(message.endswith("the most one client may have") for message in refused)
            assert served.name != "landlord" or refused == []
            wait_until(lambda: _dropped_at(process, "127.0.0.1:9") == len(unreachable), 2 * NOTICE_TIMEOUT,
                       "every unreachable watch dropped")
            stuck, _ = flood(uri, hanging, [f"stuck {i % 10}" for i in range(500)], 60)
            assert len(stuck) == 500
            heard: landlord.testing.Recorder[object] = landlord.testing.Recorder()
            with Pyro5.api.Proxy(uri) as proxy:
                good = proxy.watch_name("good", 30, inbox.uri)
                inbox.watch(good.cookie, lambda name, holders: heard.record(holders))
                heard.wait_for(1, timeout=NOTICE_TIMEOUT - 1)  # not behind the hanging one: a lane of its own
                for where in ("127.0.0.1:9", hanging.rpartition("@")[2]):  # the hanging one after its timeout
                    process.wait_for(rf"dropped \d+ watch\(es\) told at {re.escape(where)}",
                                     timeout=2 * NOTICE_TIMEOUT + 5)
                for lease in (unreachable[0], unreachable[-1], stuck[0], stuck[-1]):
                    with pytest.raises(landlord.LeaseDeniedError, match="could not be told"):
                        lease.renew(60)
                good.cancel()
