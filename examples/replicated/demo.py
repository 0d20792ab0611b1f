"""The replicated room landlord, top to bottom: kill -9 the leader, and no lease is lost.

1. Start a three-member etcd on this machine (``landlord.testing.etcd.EtcdCluster``,
   a helper for tests and demos: in production you run etcd yourself).
2. Start three ``rooms.py`` replicas of one group; they elect a leader through etcd.
3. Rent three rooms through the group (a replica that does not lead names the one
   that does) and hand them to a ``LeaseRenewalManager``, which renews each a third
   into its 6 s term, forever. Rent an "orphan" room for 6 s that nobody renews.
4. Once the manager has renewed every room, kill -9 the leader.
5. Another replica leads within about 2 s (the election's TTL), every lease loaded from etcd.
6. The manager renews every room through it: no lease is lost.
7. The successor frees the orphan at the orphan's own deadline: its time left was
   kept across the failover, not started afresh.
8. Cancel the rooms, stop the replicas (SIGTERM) and etcd.

Run it from the repository root; it takes about 15 seconds::

    python examples/replicated/demo.py

Exit status 0 when every step held (1 when one did not); also 0, saying why, when
etcd cannot be run here (no ``etcd`` program, or no etcd client).
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
from pathlib import Path

import Pyro5.api
import Pyro5.errors

from landlord import FOREVER, LandlordLease, LeaseRenewalEvent, LeaseRenewalManager, NotLeaderError, replica_uris
from landlord.testing import ChildProcess, Line, WaitFailed, free_port
from landlord.testing.etcd import EtcdCluster, EtcdUnavailable, unavailable_reason

HERE = Path(__file__).resolve().parent
GROUP = "rooms"
ROOMS = ["room 101", "room 102", "room 103"]
TERM = 6.0  # seconds each room is rented for, and renewed for each time
FAILOVER_GOAL = 3.0  # seconds from the kill to a successor that leads: the TTL (2 s), and some room
ON_TIME = 1.0  # the orphan is freed within this many seconds after its deadline...
EARLY = 0.5  # ...and not before it by more than this (etcd has its deadline to within the commit interval)
STARTED = time.monotonic()


class StoryFailed(Exception):
    """Something the demo promises did not hold."""


# -- telling the story ------------------------------------------------------------------------------

_output = threading.Lock()  # the relay threads, the manager's thread and the main thread print


def show(who: str, message: str) -> None:
    """One line of the story, stamped with the seconds since the demo started."""
    with _output:
        sys.stdout.write(f"[{time.monotonic() - STARTED:6.2f}s] {who:<8} {message}\n")
        sys.stdout.flush()


def say(message: str) -> None:
    show("demo", message)


class HolderLog(logging.Handler):
    """The holder's log (this process's: the renewal manager's warnings) as lines of the story."""

    def emit(self, record: logging.LogRecord) -> None:
        show("holder", f"{record.name} {record.levelname} {record.getMessage()}")


def promise(holds: bool, message: str) -> None:
    """Stop the story unless what it promised holds."""
    if not holds:
        raise StoryFailed(message)


def start_replica(number: int, etcd: str, port: int, addresses: str) -> ChildProcess:
    """rooms.py as replica ``number`` of the group, its output relayed under ``replica<number>``."""
    name = f"replica{number}"

    def relay(line: Line) -> None:
        show(name, re.sub(r"^\[\+\s*[\d.]+s\]\s+", "", line.text))  # the demo stamps its own time

    return ChildProcess(str(HERE / "rooms.py"), "--etcd", etcd, "--group", GROUP, "--port", str(port),
                        "--replicas", addresses, "--max-lease", str(TERM), name=name,
                        env={"PYTHONUNBUFFERED": "1"}, on_line=relay)


# -- the group, as a client sees it ---------------------------------------------------------------

class Group:
    """The replicas' URIs, and the calls a client makes before it holds a lease of the group."""

    def __init__(self, uris: list[str]) -> None:
        self.uris = uris

    def name(self, uri: str | None) -> str:
        return f"replica{self.uris.index(uri) + 1}" if uri in self.uris else str(uri)

    def proxy(self, index: int) -> Pyro5.api.Proxy:
        proxy = Pyro5.api.Proxy(self.uris[index])
        proxy._pyroTimeout = 2.0  # a dead replica must not hold the story up
        return proxy

    def leader(self, *, excluding: int | None = None, timeout: float) -> int:
        """The index of the replica that answers as leader, asking each in turn until one does."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for index in range(len(self.uris)):
                if index != excluding and self.status(index).get("leading"):
                    return index
            time.sleep(0.05)  # the pace of asking again
        raise StoryFailed(f"no replica led within {timeout:g} s")

    def agree(self, leader: int, *, timeout: float) -> None:
        """Wait until every replica names ``leader`` (a follower learns it by watching etcd)."""
        deadline = time.monotonic() + timeout
        for index in range(len(self.uris)):
            while self.status(index).get("leader") != self.uris[leader]:
                promise(time.monotonic() < deadline, f"{self.name(self.uris[index])} does not name the leader")
                time.sleep(0.05)  # the pace of asking again

    def status(self, index: int) -> dict[str, object]:
        """What replica ``index`` says of itself (empty if it does not answer)."""
        try:
            with self.proxy(index) as replica:
                answer: dict[str, object] = replica.replica_status()
                return answer
        except Pyro5.errors.CommunicationError:
            return {}

    def rent(self, room: str, duration: float, *, ask: int, timeout: float = 10.0) -> LandlordLease:
        """Rent ``room`` from the group, asking replica ``ask`` first. A replica that does not lead
        answers ``NotLeaderError`` naming the one that does: we ask that one. One that cannot answer
        (gone, or knowing no leader yet) closes the connection: we ask the next."""
        deadline = time.monotonic() + timeout
        index = ask
        while time.monotonic() < deadline:
            try:
                with self.proxy(index) as replica:
                    lease: LandlordLease = replica.rent(room, duration)
                    return lease
            except NotLeaderError as exc:
                say(f"asked {self.name(self.uris[index])} for {room}: it does not lead, "
                    f"and names {self.name(exc.leader)}")
                index = self.uris.index(exc.leader) if exc.leader in self.uris else (index + 1) % len(self.uris)
            except Pyro5.errors.CommunicationError as exc:
                say(f"asked {self.name(self.uris[index])} for {room}: no answer ({exc}); asking the next")
                index = (index + 1) % len(self.uris)
                time.sleep(0.05)  # the pace of asking again
        raise StoryFailed(f"no replica rented {room} within {timeout:g} s")


def renewed_after(lease: LandlordLease, moment: float) -> bool:
    """Whether ``lease`` was last renewed by a request sent after ``moment`` (its deadline is sent + term)."""
    return lease.deadline - lease.term > moment


def wait_until_renewed(leases: list[LandlordLease], moment: float, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not all(renewed_after(lease, moment) for lease in leases):
        promise(time.monotonic() < deadline, f"the rooms were not all renewed within {timeout:g} s")
        time.sleep(0.05)  # the manager renews on its own thread; we only look


# -- the story ------------------------------------------------------------------------------------

def story(cluster: EtcdCluster, replicas: list[ChildProcess], manager: LeaseRenewalManager,
          lost: list[LeaseRenewalEvent]) -> str:
    etcd = ",".join(cluster.endpoints)
    say(f"etcd {cluster.version}: three members at {etcd} (started by EtcdCluster, a helper for "
        "tests and demos: in production you run etcd yourself)")

    ports = [free_port() for _ in range(3)]
    addresses = ",".join(f"127.0.0.1:{port}" for port in ports)
    group = Group(replica_uris(addresses, GROUP))
    say(f"starting three replicas of group {GROUP!r}: rooms.py --replicas {addresses} --etcd ...")
    for number, port in enumerate(ports, 1):
        replicas.append(start_replica(number, etcd, port, addresses))
    for replica in replicas:
        replica.read_uri(30, pattern=r"^replica at (?P<uri>PYRO:\S+)")

    leader = group.leader(timeout=15)
    group.agree(leader, timeout=10)
    say(f"{group.name(group.uris[leader])} leads group {GROUP!r}, elected through etcd; the others name it")

    follower = (leader + 1) % 3
    rooms = [group.rent(room, TERM, ask=follower if room == ROOMS[0] else leader) for room in ROOMS]
    rented_at = time.monotonic()
    for room, lease in zip(ROOMS, rooms):
        manager.renew_for(lease, FOREVER, listener=lambda event, room=room: on_lost(room, event, lost))
    say(f"rented {', '.join(ROOMS)} for {TERM:g} s each; the renewal manager keeps them, renewing each "
        f"{TERM / 3:g} s into its term; every lease names all three replicas")
    orphan = group.rent("orphan", TERM, ask=leader)
    say(f"rented the orphan for {TERM:g} s: nobody renews it")

    wait_until_renewed(rooms, rented_at, TERM)
    say(f"the manager renewed every room through {group.name(group.uris[leader])}")

    victim = replicas[leader]
    say(f"kill -9 {group.name(group.uris[leader])} (pid {victim.pid}), the leader")
    killed_at = time.monotonic()
    victim.kill()

    successor = group.leader(excluding=leader, timeout=10)
    took = time.monotonic() - killed_at
    held = group.status(successor).get("held")
    name = group.name(group.uris[successor])
    say(f"{name} leads now, {took:.2f} s after the kill, with {held} leases loaded from etcd")
    promise(took <= FAILOVER_GOAL, f"the successor led {took:.2f} s after the kill, not within {FAILOVER_GOAL:g} s")
    promise(held == len(ROOMS) + 1, f"the successor holds {held} leases, not {len(ROOMS) + 1}")

    wait_until_renewed(rooms, killed_at, 2 * TERM)
    promise(not lost, f"the renewal manager lost {len(lost)} lease(s)")
    say(f"every room renewed by {name} after the kill; the renewal manager lost none "
        "(a renewal that meets a failover is tried again, within the time its lease has left)")

    try:
        freed = replicas[successor].wait_count(r"freed orphan: its lease expired", 1, timeout=2 * TERM)[0][0]
    except WaitFailed as exc:
        raise StoryFailed(f"{name} did not free the orphan") from exc
    late = freed.time - orphan.deadline
    fresh = killed_at + took + TERM - orphan.deadline
    say(f"the orphan was freed by {name} {late:+.2f} s from its own deadline "
        f"(a fresh term from the failover would have been {fresh:.1f} s late)")
    promise(-EARLY <= late <= ON_TIME, f"the orphan was freed {late:+.2f} s from its deadline")

    for lease in rooms:
        manager.cancel(lease)  # through the group, to whichever replica leads
    say(f"cancelled {', '.join(ROOMS)} through the group")
    return (f"a successor led {took:.2f} s after the kill, no lease lost, "
            f"the orphan freed on time ({late:+.2f} s)")


def on_lost(room: str, event: LeaseRenewalEvent, lost: list[LeaseRenewalEvent]) -> None:
    """The renewal manager's listener: it gave up a room's lease. Must not happen here."""
    show("holder", f"LOST {room}: {type(event.exception).__name__}: {event.exception}")
    lost.append(event)


def stop(replicas: list[ChildProcess]) -> list[str]:
    """SIGTERM every replica still running (each resigns), and reap them all; what went wrong."""
    troubles = []
    for number, replica in enumerate(replicas, 1):
        running = replica.alive
        status = replica.stop()
        replica.close()  # its last lines are relayed before we go on
        if running and status != 0:
            troubles.append(f"replica{number} exited with status {status} after SIGTERM")
    return troubles


def main() -> int:
    reason = unavailable_reason()
    if reason is not None:
        say(f"cannot run etcd here, so there is no story to tell: {reason}")
        return 0
    logging.basicConfig(level=logging.WARNING, handlers=[HolderLog()])
    replicas: list[ChildProcess] = []
    lost: list[LeaseRenewalEvent] = []
    failures: list[str] = []
    summary = ""
    # a holder of a replicated landlord retries soon: a failover takes about the election's TTL (2 s)
    manager = LeaseRenewalManager(retry_initial=0.25, retry_max=1.0)
    try:
        with EtcdCluster() as cluster:
            try:
                summary = story(cluster, replicas, manager, lost)
            finally:  # whatever happened, leave nothing running
                manager.close()
                say("stopping the replicas (SIGTERM) and etcd")
                failures += stop(replicas)
    except (StoryFailed, WaitFailed, EtcdUnavailable) as exc:
        failures.insert(0, str(exc))
    except KeyboardInterrupt:
        failures.insert(0, "interrupted")
    except Exception as exc:  # not a broken promise but a broken demo: say what, all the same
        failures.insert(0, f"unexpected {type(exc).__name__}: {exc}")
    for failure in failures:
        say(f"FAILED: {failure}")
    if failures:
        return 1
    say(f"done in {time.monotonic() - STARTED:.1f} s: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
