"""landlord.testing.etcd: a real three-member etcd cluster on loopback, what a test does to its members,
and its cleaning up however the test ends; and the etcd tests skipping (or failing, when required)
where etcd or its client is missing."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest
from etcd_fixtures import REQUIRE_ENV, cluster, etcd_cluster, new_group, require_etcd  # noqa: F401

from landlord.replication.election import INSTALL_HINT
from landlord.testing.etcd import ETCD_ENV, EtcdCluster, EtcdUnavailable, find_etcd, unavailable_reason

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent  # the repository


def test_three_members_make_one_cluster(cluster: EtcdCluster) -> None:
    """Each member on ports of its own with a data directory of its own, and one cluster: what is
    written through one member is read (linearizably) through another."""
    assert len(cluster.members) == 3 and all(member.running for member in cluster.members)
    with pytest.raises(RuntimeError, match="runs already"):
        cluster.start()
    ports = [int(url.rsplit(":", 1)[1]) for m in cluster.members for url in (m.client_url, m.peer_url)]
    assert len(set(ports)) == 6
    assert cluster.workdir is not None
    for member in cluster.members:
        assert pathlib.Path(member.data_dir).parent == pathlib.Path(cluster.workdir)
        assert (pathlib.Path(member.data_dir) / "member").is_dir()
    key = f"/test/{new_group()}"
    first, last = cluster.client([0]), cluster.client([2])
    try:
        first.put(key, "written through m0")
        assert last.get(key)[0] == b"written through m0"
        assert sorted(member.name for member in last.members) == ["m0", "m1", "m2"]
    finally:
        first.close()
        last.close()


def test_killing_etcds_leader_leaves_a_serving_cluster_and_the_member_restarts_on_its_data(
        cluster: EtcdCluster) -> None:
    key = f"/test/{new_group()}"
    victim = cluster.leader()  # etcd's own leader: the member whose loss costs the most
    others = [i for i in range(3) if i != victim]
    assert cluster.kill_member(victim) == -9
    assert not cluster.members[victim].running
    cluster.wait_healthy(others)  # the other two elect a leader of their own and serve
    assert cluster.leader() in others
    client = cluster.client(others)
    try:
        client.put(key, "written while one member was dead")
    finally:
        client.close()
    cluster.restart_member(victim)
    restarted = cluster.client([victim])
    try:
        assert restarted.get(key)[0] == b"written while one member was dead"  # it caught up
    finally:
        restarted.close()


def test_a_paused_member_answers_nothing_until_resumed(cluster: EtcdCluster) -> None:
    from pyetcd.exceptions import ConnectionTimeoutError

    victim = next(i for i in range(3) if i != cluster.leader())
    cluster.pause_member(victim)
    stalled = cluster.client([victim], timeout=0.5)
    try:
        with pytest.raises(ConnectionTimeoutError):
            stalled.get("/test/anything")
        cluster.wait_healthy([i for i in range(3) if i != victim])
        cluster.resume_member(victim)
        cluster.wait_healthy([victim])
    finally:
        stalled.close()


def test_heal_restarts_a_stopped_member_and_resumes_a_paused_one(cluster: EtcdCluster) -> None:
    leader = cluster.leader()
    stopped, paused = (i for i in range(3) if i != leader)
    cluster.stop_member(stopped)
    cluster.pause_member(paused)
    cluster.heal()
    assert all(member.running for member in cluster.members)
    cluster.wait_healthy(timeout=5.0)


def test_leaving_the_block_kills_reaps_and_removes_everything_however_the_test_ends() -> None:
    require_etcd()
    with pytest.raises(RuntimeError, match="the test failed"):
        with EtcdCluster() as own:
            processes = [member.process for member in own.members]
            workdir = own.workdir
            own.pause_member(1)  # a paused member goes too
            raise RuntimeError("the test failed")
    assert workdir is not None and not os.path.exists(workdir)
    assert all(process is not None and process.process.returncode is not None for process in processes)  # reaped
    assert own.members == [] and own.workdir is None


def test_an_etcd_that_cannot_start_fails_start_with_its_output_and_leaves_nothing(tmp_path: pathlib.Path) -> None:
    require_etcd()
    fake = tmp_path / "etcd"
    fake.write_text("#!/bin/sh\necho 'etcd: listen tcp: address already in use, say' >&2\nexit 3\n")
    fake.chmod(0o755)
    data = tmp_path / "data"
    data.mkdir()
    broken = EtcdCluster(binary=str(fake), data_parent=str(data), start_timeout=10.0)
    with pytest.raises(EtcdUnavailable, match="ended while starting") as failure:
        broken.start()
    assert "address already in use, say" in str(failure.value)
    assert broken.members == [] and list(data.iterdir()) == []


def test_the_etcd_program_is_found_on_path_or_named_by_the_environment(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: pathlib.Path) -> None:
    monkeypatch.setenv(ETCD_ENV, str(tmp_path / "no-such-etcd"))
    with pytest.raises(EtcdUnavailable, match=f"\\${ETCD_ENV} names .*no-such-etcd.*not an executable"):
        find_etcd()
    assert f"${ETCD_ENV} names" in (unavailable_reason() or "")
    monkeypatch.setenv(ETCD_ENV, sys.executable)  # any program will do for finding
    assert find_etcd() == sys.executable
    monkeypatch.delenv(ETCD_ENV)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(EtcdUnavailable, match="no etcd program on PATH"):
        find_etcd()


def test_without_the_client_the_message_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyetcd", None)  # `import pyetcd` raises ImportError
    monkeypatch.setenv(ETCD_ENV, sys.executable)
    with pytest.raises(ImportError, match=r"pip install 'landlord\[etcd\]'"):
        EtcdCluster()
    assert INSTALL_HINT in (unavailable_reason() or "")


@pytest.mark.parametrize("required", [False, True])
def test_without_etcd_the_tests_skip_unless_required(required: bool) -> None:
    """With no etcd program, a test on the cluster skips and says why; with LANDLORD_REQUIRE_ETCD=1
    (as CI sets) the same test fails instead. Needs no etcd itself."""
    env = dict(os.environ, **{ETCD_ENV: "/nonexistent/etcd", "COLUMNS": "400"})
    env.pop(REQUIRE_ENV, None)
    if required:
        env[REQUIRE_ENV] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rsE",
         f"{HERE / 'test_testing_etcd.py'}::test_three_members_make_one_cluster"],
        capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    reason = f"${ETCD_ENV} names '/nonexistent/etcd', which is not an executable program"
    if required:
        assert done.returncode == 1 and "1 error" in done.stdout, done.stdout  # failed in its fixture
        assert f"{REQUIRE_ENV}=1, but the etcd tests cannot run: {reason}" in done.stdout, done.stdout
    else:
        assert done.returncode == 0 and "1 skipped" in done.stdout, done.stdout
        assert f"etcd tests need etcd and its client: {reason}" in done.stdout, done.stdout
