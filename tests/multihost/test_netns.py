"""The harness itself: hosts reach each other, a partition cuts one off and healing joins it
again, and closing the network leaves nothing behind."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

import pytest
from netns import (
    HERE,
    PREFIX,
    REQUIRE_ENV,
    Host,
    HostProcess,
    Network,
    clean_stale,
    network,
    our_namespaces,
    require_multihost,
)

__all__ = ["network"]  # a fixture, imported for pytest

PORT = 7070
CONNECT_TIMEOUT = 1.0  # a round trip between namespaces takes well under a millisecond


def probe(source: Host, target: Host) -> subprocess.CompletedProcess[str]:
    """Try one TCP round trip from ``source`` to ``target``'s listening probe."""
    return source.run(sys.executable, str(HERE / "mh_probe.py"), "connect", target.address, str(PORT),
                      str(CONNECT_TIMEOUT), timeout=30)


def listen(host: Host) -> HostProcess:
    listener = host.python("mh_probe.py", "listen", host.address, str(PORT))
    listener.expect(r"^listening ")
    return listener


def test_hosts_have_their_own_addresses_and_nothing_else(network: Network) -> None:
    """Each host sees lo and its eth0 with its address in the run's /24, and no route out of it."""
    addresses = {host.address for host in network.hosts.values()}
    assert len(addresses) == 3
    for host in network.hosts.values():
        shown = host.run("ip", "-o", "-4", "addr", "show").stdout
        assert f"inet {host.address}/24" in shown and "inet 127.0.0.1/8" in shown, shown
        routes = host.run("ip", "-4", "route", "show").stdout
        assert "default" not in routes, routes  # nothing leaves the namespaces
        assert routes.split()[0] == network.subnet, routes


def test_two_hosts_reach_each_other(network: Network) -> None:
    """A TCP round trip from b to a and from c to a succeeds."""
    listen(network["a"])
    for source in ("b", "c"):
        done = probe(network[source], network["a"])
        assert done.returncode == 0 and done.stdout.strip() == "connected", (source, done.stdout, done.stderr)


def test_a_partition_cuts_a_host_off_until_healed(network: Network) -> None:
    """After partition(b), b cannot reach a, nor a reach b (the connection times out: the link is
    dead, nothing refuses it), while c still reaches a; after heal(b) both ways work again."""
    a, b, c = network["a"], network["b"], network["c"]
    listen(a)
    listen(b)
    assert probe(b, a).returncode == 0 and probe(a, b).returncode == 0

    network.partition(b)
    assert b.partitioned
    for source, target in ((b, a), (a, b)):
        started = time.monotonic()
        cut = probe(source, target)
        took = time.monotonic() - started
        assert cut.returncode == 1 and cut.stdout.startswith("failed"), (source, target, cut.stdout, cut.stderr)
        assert "timed out" in cut.stdout, cut.stdout  # silence, not a refusal
        assert took >= CONNECT_TIMEOUT * 0.9, took
    assert probe(c, a).returncode == 0  # the others are not affected

    network.heal(b)
    assert not b.partitioned
    for source, target in ((b, a), (a, b)):
        healed = probe(source, target)
        assert healed.returncode == 0 and healed.stdout.strip() == "connected", (source, target, healed.stdout)


def test_close_removes_namespaces_and_processes() -> None:
    """Closing a network (also after an error inside its block) kills its processes and leaves none
    of its namespaces; a second close is harmless."""
    require_multihost()
    with pytest.raises(RuntimeError, match="boom"):
        with Network(("a", "b")) as net:
            made = net.namespaces()
            assert len(made) == 3 and all(name in our_namespaces() for name in made)
            listener = listen(net["a"])
            raise RuntimeError("boom")
    assert not listener.alive
    left = [name for name in our_namespaces() if name in made]
    assert left == [], left
    net.close()


def test_stale_namespaces_of_a_dead_run_are_cleaned() -> None:
    """A namespace named for a test process that is gone (a crashed run) is removed by clean_stale,
    with the process left inside it; namespaces of live runs are left alone."""
    require_multihost()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    stale = f"{PREFIX}{gone.pid}-dead01-a"
    subprocess.run(["ip", "netns", "add", stale], check=True, capture_output=True, timeout=30)
    inside = subprocess.Popen(["ip", "netns", "exec", stale, sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        with Network(("a",)) as live:
            removed = clean_stale()
            assert stale in removed
            assert stale not in our_namespaces()
            assert all(name in our_namespaces() for name in live.namespaces())  # our own run is alive
        assert inside.wait(10) == -9
    finally:
        if inside.poll() is None:
            inside.kill()
            inside.wait()
        subprocess.run(["ip", "netns", "delete", stale], capture_output=True, timeout=30)


@pytest.mark.parametrize("required", [False, True])
def test_without_root_the_tests_skip_unless_required(tmp_path: pathlib.Path, required: bool) -> None:
    """Run as if not root (a plugin fakes the uid): a multihost test skips and says why; with
    LANDLORD_REQUIRE_MULTIHOST=1 (as .ci/run sets) the same test fails instead. Needs no root itself."""
    (tmp_path / "fake_uid.py").write_text("import os\nos.geteuid = lambda: 1000\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    env.pop(REQUIRE_ENV, None)
    if required:
        env[REQUIRE_ENV] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "fake_uid", "-p", "no:cacheprovider", "-q", "-rsf",
         f"{HERE / 'test_netns.py'}::test_two_hosts_reach_each_other"],
        capture_output=True, text=True, timeout=120, env=env, cwd=HERE.parent.parent)
    reason = "creating network namespaces needs root (running as uid 1000)"
    if required:
        assert done.returncode == 1 and "1 error" in done.stdout, done.stdout  # failed in its fixture
        assert f"{REQUIRE_ENV}=1, but the multihost tests cannot run: {reason}" in done.stdout, done.stdout
    else:
        assert done.returncode == 0 and "1 skipped" in done.stdout, done.stdout
        assert f"multihost tests need root and `ip netns`: {reason}" in done.stdout, done.stdout
