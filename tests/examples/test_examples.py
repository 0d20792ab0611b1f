"""Integration test of the runnable examples: real processes, real sockets, real time.

The Foo landlord demo starts server.py and client.py as separate processes;
the test runs it as ``make demo`` does and checks the story in its output:
the URI the server prints, one Foo freed by expiry, one by cancellation, and
the client refused with ``UnknownLeaseError`` when it renewed a lease that had
run out. The Foo landlord served alone: the address its URI advertises, and
its line for a batch of renewals.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import Pyro5.api
import pytest
from conftest import ChildProcess, run_to_the_end

import landlord
from landlord import LeaseMapError, UnknownLeaseError

REPO_ROOT = Path(__file__).resolve().parents[2]
FOO_DEMO = REPO_ROOT / "examples" / "foo_landlord" / "demo.py"
FOO_SERVER = REPO_ROOT / "examples" / "foo_landlord" / "server.py"
ADVERTISED = "127.0.0.2"  # loopback too (all of 127/8 is, on Linux), yet not the address listened on

# The demo takes about 2 s; the limit only keeps a hung process from hanging the run.
DEMO_TIMEOUT_SECONDS = 60


@pytest.fixture(scope="module")
def foo_demo_output() -> str:
    """Everything the Foo landlord demo printed, once it has exited with status 0."""
    return run_to_the_end(FOO_DEMO, timeout=DEMO_TIMEOUT_SECONDS)


def _foo_named(pattern: str, output: str) -> str:
    """The serial of the foo in the first line matching ``pattern`` (which captures it)."""
    match = re.search(pattern, output, re.MULTILINE)
    assert match, f"no line matches {pattern!r} in:\n{output}"
    return match.group(1)


def test_foo_demo_frees_the_unrenewed_foo_by_expiry(foo_demo_output: str) -> None:
    lapsing = _foo_named(r"^client \| .*letting foo #(\d+) run out$", foo_demo_output)
    expired = _foo_named(r"^server \| .*foo #(\d+) freed: its lease expired$",
                         foo_demo_output)
    assert expired == lapsing


def test_foo_demo_frees_the_cancelled_foo_by_cancellation(foo_demo_output: str) -> None:
    kept = _foo_named(r"^client \| .*cancelled the lease on foo #(\d+)", foo_demo_output)
    cancelled = _foo_named(r"^server \| .*foo #(\d+) freed: its lease was cancelled$",
                           foo_demo_output)
    assert cancelled == kept


def test_foo_demo_client_cannot_renew_an_expired_lease(foo_demo_output: str) -> None:
    refused = re.search(r"^client \| .*renewing foo #\d+ after its lease expired failed, "
                        r"as it should: UnknownLeaseError", foo_demo_output, re.MULTILINE)
    assert refused, foo_demo_output
    assert "UNEXPECTED" not in foo_demo_output


def test_foo_demo_server_stops_cleanly(foo_demo_output: str) -> None:
    assert re.search(r"^server \| .*shutting down; 0 foo\(s\) still leased$",
                     foo_demo_output, re.MULTILINE), foo_demo_output
    assert "FAILED" not in foo_demo_output and "Traceback" not in foo_demo_output


def test_foo_demo_server_prints_the_uri_it_serves(foo_demo_output: str) -> None:
    announced = re.search(r"^server \| landlord at (PYRO:foo\.landlord@127\.0\.0\.1:\d+) \(guarded server\)$",
                          foo_demo_output, re.MULTILINE)
    assert announced, foo_demo_output
    assert f"demo   | server is up at {announced.group(1)};" in foo_demo_output


@pytest.fixture
def foo_server() -> Iterator[ChildProcess]:
    """The Foo landlord alone, on every interface, advertising ADVERTISED."""
    server = ChildProcess(str(FOO_SERVER), "--host", "0.0.0.0", "--advertise", ADVERTISED,
                          "--port", "0", "--max-lease", "30")
    try:
        yield server
    finally:
        server.kill()


def test_foo_server_advertises_its_address_and_logs_a_batch_of_renewals(foo_server: ChildProcess) -> None:
    announced = foo_server.wait_for(r"^landlord at (PYRO:\S+) \(guarded server, listening on 0\.0\.0\.0:\d+\)$")
    uri = announced.group(1)
    assert re.fullmatch(rf"PYRO:foo\.landlord@{re.escape(ADVERTISED)}:\d+", uri)
    with Pyro5.api.Proxy(uri) as foos:
        foos._pyroTimeout = 10
        first, second, gone = (foos.take_foo(20) for _ in range(3))
    assert all(str(lease.landlord) == uri for lease in (first, second, gone))  # the leases carry it too
    gone.cancel()
    foo_server.wait_for(r"foo #3 freed: its lease was cancelled$")

    batch = first.create_lease_map(25)
    batch[second] = 25
    batch[gone] = 25
    with pytest.raises(LeaseMapError) as refused:
        batch.renew_all()  # one renew_all call to the landlord
    assert list(refused.value.failures) == [gone]
    assert isinstance(refused.value.failures[gone], UnknownLeaseError)
    line = foo_server.wait_for(r"renewed 2 lease\(s\) in one call: (.*); 1 refused \(UnknownLeaseError\)$")
    assert sorted(line.group(1).split(", ")) == ["foo #1 for 25.0 s", "foo #2 for 25.0 s"]

    for lease in (first, second):
        lease.cancel()
    landlord.transport.proxies.discard(uri)
    assert foo_server.stop() == 0
    assert not any("Traceback" in line for line in foo_server.output)


def test_foo_server_refuses_an_address_to_advertise_that_is_none() -> None:
    done = subprocess.run([sys.executable, str(FOO_SERVER), "--advertise", "h1:7000"], capture_output=True,
                          text=True, timeout=DEMO_TIMEOUT_SECONDS)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].endswith("cannot advertise 'h1:7000': give the address without a port")
