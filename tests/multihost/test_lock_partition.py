"""A lock's holder cut off by a partition across hosts (issue 25, item 6): the landlord and the fenced
resource on host a, the holder on b, a waiter on c (tests/processes/lock_holder.py on each); and
the safety checker (landlord.testing.lockcheck) with its clients on hosts of their own, partitioned.

Taking b's link down partitions the holder from the landlord: its renewals get no answer. Its lock
turns invalid at its lease's deadline less the margin, on b's own clock, before the landlord lets
the lease expire and grants the lock to c; once the link is back, the write b sends with its old
token is refused by the fence, which has seen c's.
"""

from __future__ import annotations

import pathlib
import re
import sys
from collections.abc import Callable, Iterator, Sequence

import pytest
from netns import Network, clean_stale, network, require_multihost

from landlord.testing import URI_LINE, ChildProcess, Line
from landlord.testing.lockcheck import Faults, LandlordBackend, LockCheck

__all__ = ["network"]  # a fixture, imported for pytest

HOLDER = str(pathlib.Path(__file__).resolve().parent.parent / "processes" / "lock_holder.py")
LANDLORD_PORT, RESOURCE_PORT = 7100, 7101
TERM = 2.0
START_TIMEOUT = 30.0  # seconds for a program to start on a loaded two-core machine


def test_a_partitioned_holder_knows_it_lost_before_the_other_side_holds_and_its_late_write_is_refused(
        network: Network, tmp_path: pathlib.Path) -> None:
    a, b, c = network["a"], network["b"], network["c"]
    landlord = a.python("-m", "landlord.testing.lockcheck", "landlord", "--host", a.address, "--port",
                        str(LANDLORD_PORT), "--verbose", name="landlord")
    uri = landlord.expect(URI_LINE, START_TIMEOUT).group("uri")
    resource = a.python("-m", "landlord.testing.lockcheck", "resource", "--host", a.address, "--port",
                        str(RESOURCE_PORT), "--log", str(tmp_path / "writes.log"), name="resource")
    resource_uri = resource.expect(URI_LINE, START_TIMEOUT).group("uri")
    holders = {host.name: host.python(HOLDER, uri, "x", "--id", host.name, "--term", str(TERM), "--host",
                                      host.address, "--resource", resource_uri, name="holder") for host in (b, c)}
    for holder in holders.values():
        holder.expect(r"^ready$", START_TIMEOUT)
    holder_b, holder_c = holders["b"], holders["c"]

    token_b = int(holder_b.ask("acquire", r"^holding (\d+) ").group(1))
    assert holder_b.ask("write", r"^wrote (\S+) ").group(1) == "accepted"
    queued = landlord.mark()
    holder_c.send("acquire")
    landlord.expect(r"^leased x None ", start=queued)
    holder_b.wait_count(r"^deadline ", 2)  # renewed at least once: the partition falls in a renewed term
    assert holder_b.ask("check", r"^checked (\S+) ").group(1) == "True"

    start = {name: holder.mark() for name, holder in holders.items()}
    landlord_start = landlord.mark()
    cut_at = network.partition(b)
    try:
        valid_until = max(float(m.group(1)) for _, m in holder_b.matches(r"^deadline (\S+) "))
        lost_at = float(holder_b.expect(r"^lost (\S+) ", TERM + 5, start["b"]).group(1))
        expired_at = float(landlord.expect(rf"^expired x {token_b} (\S+)$", TERM + 5, landlord_start).group(1))
        found = holder_c.expect(r"^holding (\d+) (\S+)$", TERM + 5, start["c"])
        token_c, held_at = int(found.group(1)), float(found.group(2))
        assert holder_c.ask("write", r"^wrote (\S+) ").group(1) == "accepted"
    finally:
        healed_at = network.heal(b)

    print(f"cut at {cut_at:.3f}: b valid until +{valid_until - cut_at:.3f} s, told it lost +{lost_at - cut_at:.3f} s; "
          f"the landlord let the lease go +{expired_at - cut_at:.3f} s; c holds +{held_at - cut_at:.3f} s; "
          f"healed +{healed_at - cut_at:.3f} s")
    assert token_c > token_b
    assert valid_until <= lost_at < held_at, "b still believed itself holder when c held the lock"
    assert lost_at < expired_at, "b learnt it lost only after the landlord had let its lease go"
    assert holder_b.ask("status", r"^status (\S+) (\S+) ").groups() == ("False", "None")
    late = holder_b.ask("write", r"^wrote (\S+) (\S+) ", timeout=15)
    assert late.groups() == ("refused", "False"), f"b's late write with token {token_b}: {late.group(0)}"
    assert not re.search(r"^cancelled x ", "\n".join(line.text for line in landlord.lines), re.M)


@pytest.fixture
def four_hosts() -> Iterator[Network]:
    """Hosts a, b, c and d; removed after the test."""
    require_multihost()
    clean_stale()
    with Network(("a", "b", "c", "d")) as net:
        yield net


@pytest.mark.slow
def test_the_safety_checker_with_partitions_across_hosts_accepts_no_stale_write(four_hosts: Network) -> None:
    """landlord.testing.lockcheck with its clients on hosts b, c and d, the landlord and the resource
    on a, and the partition hook taking a client's link down: partitions of holders, a pause and a
    kill, and no stale write gets through the fence."""
    network = four_hosts
    a = network["a"]
    landlord = a.python("-m", "landlord.testing.lockcheck", "landlord", "--host", a.address, "--port",
                        str(LANDLORD_PORT), name="landlord")
    uri = landlord.expect(URI_LINE, START_TIMEOUT).group("uri")
    client_hosts = [network[name] for name in ("b", "c", "d")]

    def spawn(role: str, index: int, args: Sequence[str], on_line: Callable[[Line], None] | None) -> ChildProcess:
        host = a if role == "resource" else client_hosts[index]
        return ChildProcess(*args, command=["ip", "netns", "exec", host.netns, sys.executable],
                            name=f"{role} {index} on {host.name}", on_line=on_line, new_session=True)

    def partition(index: int, process: ChildProcess) -> Callable[[], None]:
        network.partition(client_hosts[index])
        return lambda: network.heal(client_hosts[index]) and None

    check = LockCheck(LandlordBackend(target=uri), clients=3, rounds=40, term=1.0, work=0.02,
                      faults=Faults(partitions=2, pauses=1, kills=1, gap=(0.3, 0.8), holder_bias=1.0),
                      spawn=spawn, partition=partition, resource_host=a.address, timeout=120.0)
    report = check.run()
    print(report.format())
    assert report.finished, report.format()
    assert report.faults == {"partition": 2, "pause": 1, "kill": 1}
    assert report.analysis.safe and report.ok and report.analysis.overlaps == ()
