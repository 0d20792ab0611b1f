"""landlord.replication.election: the fencing rule on a fake clock, and leadership through a real three-member etcd.

The rule (Tenure) is tested alone, without threads or sleeps: a term is confirmed until the last
answered keep-alive's *sending* plus the TTL minus the margin. Against etcd: of several candidates
exactly one leads; a leader that resigns, dies (kill -9), is cut off from etcd or is stopped past
its TTL is succeeded, and never while it still considers itself leader; a deposed leader's guarded
write is refused by etcd; losing one etcd member changes nothing for the leader.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import math
import os
import pathlib
import signal
import sys
import textwrap
import time
import types
from collections.abc import Iterator

import pytest
from etcd_fixtures import cluster, etcd_cluster, new_group, require_etcd  # noqa: F401
from hypothesis import given
from hypothesis import strategies as st

import landlord.replication.election as election_module
from landlord.replication.election import (
    INSTALL_HINT,
    Election,
    LeadershipLost,
    Tenure,
    connect,
    connect_like,
    guarded_transaction,
    leader_key,
    parse_endpoints,
    require_pyetcd,
)
from landlord.testing import ChildProcess, FakeClock, Recorder
from landlord.testing.etcd import EtcdCluster

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent  # the repository
STUBS = ROOT / "typings" / "pyetcd"
CANDIDATE = str(ROOT / "tests" / "processes" / "etcd_candidate.py")

TTL = 2  # the election's default
MARGIN = TTL / 8  # its default margin
WINDOW = TTL - MARGIN  # a term is confirmed this long from its last answered keep-alive's sending
# After a leader stops keeping its lease alive, etcd deletes the key at most TTL after the last
# keep-alive it applied, and looks for expired leases every 0.5 s; the watchers then campaign at once.
# Also the goal for a failover: a new leader within 3 s.
SUCCESSION = TTL + 1.0


def tenure(clock: FakeClock, *, margin: float = 0.5, refresh: float = 0.375, retry: float = 0.1) -> Tenure:
    return Tenure(clock=clock, margin=margin, refresh_interval=refresh, retry_interval=retry)


# -- the fencing rule, on a fake clock --------------------------------------------------------


def test_a_term_is_confirmed_until_its_sending_plus_ttl_minus_margin() -> None:
    clock = FakeClock()
    term = tenure(clock)
    assert not term.held and not term.valid() and term.deadline == -math.inf
    clock.advance(10.0)
    term.begin(sent_at=10.0, ttl=2)  # the grant was asked for at 10
    assert term.held and term.deadline == 11.5
    clock.advance(1.4999)
    assert term.valid() and term.remaining() == pytest.approx(0.0001)
    clock.advance(0.0001)
    assert not term.valid() and term.held and term.remaining() == 0.0  # held but no longer confirmed


def test_a_keep_alive_counts_from_when_it_was_sent_not_when_answered() -> None:
    clock = FakeClock()
    term = tenure(clock)
    term.begin(0.0, 2)
    clock.advance(1.2)  # a keep-alive sent at 0.9 is answered only now
    term.confirm(sent_at=0.9, ttl=2)
    assert term.deadline == pytest.approx(2.4)  # 0.9 + 2 - 0.5: not 1.2 + 2 - 0.5
    clock.advance(1.1999)
    assert term.valid()
    clock.advance(0.0001)
    assert not term.valid()


def test_an_older_keep_alive_answered_late_changes_nothing() -> None:
    clock = FakeClock()
    term = tenure(clock)
    term.begin(0.0, 2)
    clock.advance(2.0)
    term.confirm(sent_at=1.0, ttl=2)
    term.confirm(sent_at=0.5, ttl=5)  # sent before the one confirmed: its answer proves less
    assert term.deadline == 2.5


def test_etcd_granting_more_than_asked_counts_and_a_ttl_within_the_margin_never_confirms() -> None:
    clock = FakeClock()
    term = tenure(clock)
    term.begin(0.0, 3)  # etcd raised a TTL asked below its minimum
    assert term.deadline == 2.5
    short = tenure(clock, margin=2.0)
    short.begin(clock.monotonic(), 2)
    assert not short.valid()


def test_keep_alives_are_due_each_refresh_interval_and_retried_sooner_but_never_past_the_deadline() -> None:
    clock = FakeClock()
    term = tenure(clock, refresh=0.375, retry=0.1)
    assert term.next_refresh() == math.inf
    term.begin(0.0, 2)
    assert term.next_refresh() == 0.375
    clock.advance(0.4)  # the keep-alive sent at 0.375 failed at once... or took until 0.4 to fail
    term.failed(sent_at=0.375)
    assert term.next_refresh() == pytest.approx(0.475)  # the retry interval counts from its sending
    clock.advance(0.5)  # one sent at 0.475 timed out at 0.9: the next is due at once
    term.failed(sent_at=0.475)
    assert term.next_refresh() == pytest.approx(0.575) and term.next_refresh() < clock.monotonic()
    clock.advance(0.5)  # 1.4: failing since
    term.failed(sent_at=1.35)
    assert term.next_refresh() == pytest.approx(1.45)
    clock.advance(0.05)
    term.failed(sent_at=1.45)
    assert term.next_refresh() == 1.5  # the deadline, not 1.55: then the leader deposes itself
    term.confirm(sent_at=1.45, ttl=2)
    assert term.next_refresh() == pytest.approx(1.825) and term.deadline == pytest.approx(2.95)


def test_an_ended_term_stays_ended_until_another_begins() -> None:
    clock = FakeClock()
    term = tenure(clock)
    term.begin(0.0, 2)
    term.end()
    term.confirm(0.1, 2)  # a keep-alive answered after the end: no term to confirm
    term.failed(0.1)
    assert not term.held and not term.valid() and term.deadline == -math.inf and term.next_refresh() == math.inf
    term.begin(0.2, 2)
    assert term.valid() and term.deadline == pytest.approx(1.7)


@pytest.mark.parametrize("options", [
    {"margin": -0.1}, {"margin": math.inf}, {"refresh": 0.0}, {"retry": -1.0}, {"refresh": math.nan}])
def test_a_tenure_refuses_bad_timing(options: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        tenure(FakeClock(), **options)


@given(ttl=st.integers(1, 5), margin_share=st.floats(0.0, 0.9),
       keep_alives=st.lists(st.tuples(st.floats(0.0, 3.0), st.floats(0.0, 3.0), st.floats(0.0, 3.0),
                                      st.booleans()), max_size=12))
def test_whenever_a_leader_is_confirmed_etcd_still_holds_its_lease_beyond_the_margin(
        ttl: int, margin_share: float, keep_alives: list[tuple[float, float, float, bool]]) -> None:
    """Keep-alives sent at increasing times, each applied by etcd some time after its sending and
    answered some time after that (or lost), the answers arriving in any order. At every moment
    the leader considers itself confirmed, etcd's lease (the last applied keep-alive plus the TTL)
    outlasts that moment by more than the margin."""
    margin = ttl * margin_share
    clock = FakeClock()
    term = tenure(clock, margin=margin)
    apply, answer = 0, 1  # at the same moment, etcd applies a keep-alive before it can be answered
    sent, events = 0.0, []
    for gap, to_apply, to_answer, lost in keep_alives:
        sent += gap
        events.append((sent + to_apply, apply, sent))
        if not lost:
            events.append((sent + to_apply + to_answer, answer, sent))
    term.begin(0.0, ttl)  # the grant was sent at 0, and applied at 0 at the earliest
    etcd_expiry = float(ttl)
    for at, what, sent_at in sorted(events):
        latest = min(at, term.deadline) - 1e-9  # the last moment before the next change: the worst
        if latest > clock.monotonic():
            clock.advance(latest - clock.monotonic())
        assert not term.valid() or clock.monotonic() + margin < etcd_expiry
        clock.advance(max(0.0, at - clock.monotonic()))
        if what == apply:
            etcd_expiry = max(etcd_expiry, at + ttl)
        else:
            term.confirm(sent_at, ttl)
        assert not term.valid() or clock.monotonic() + margin < etcd_expiry


# -- names, endpoints and options, without a cluster ---------------------------------------------


def test_leader_keys_and_bad_names() -> None:
    assert leader_key("rooms") == "/landlord/rooms/leader"
    assert leader_key("rooms-1.eu_west", prefix="apps/booking") == "/apps/booking/rooms-1.eu_west/leader"
    for group in ("", "a/b", "a b", "ü", "rooms\n"):
        with pytest.raises(ValueError, match="a group is a name"):
            leader_key(group)
    for prefix in ("", "/apps", "apps/", "a//b"):
        with pytest.raises(ValueError, match="a prefix is names"):
            leader_key("rooms", prefix=prefix)


def test_endpoints_are_parsed_and_malformed_ones_named() -> None:
    assert parse_endpoints("http://h1:2379, h2:2380,[::1]:2381") == [("h1", 2379), ("h2", 2380), ("::1", 2381)]
    assert parse_endpoints(["127.0.0.1:1"]) == [("127.0.0.1", 1)]
    for bad in ("h1", "http://h1", "h1:port", "h1:99999", "ftp://h1:1", "http://h1:1/path", "http://u@h1:1", ""):
        with pytest.raises(ValueError, match="not an etcd client URL|no etcd endpoint"):
            parse_endpoints(bad)
    with pytest.raises(ValueError, match="https is not supported"):
        parse_endpoints("https://h1:2379")
    with pytest.raises(ValueError, match="timeout must be positive"):
        connect("h1:2379", timeout=0)


def test_without_the_client_the_message_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyetcd", None)  # `import pyetcd` raises ImportError
    with pytest.raises(ImportError, match="pip install 'landlord\\[etcd\\]'") as failure:
        require_pyetcd()
    assert INSTALL_HINT in str(failure.value)
    with pytest.raises(ImportError, match="landlord\\[etcd\\]"):
        connect("127.0.0.1:2379")


def test_a_client_made_like_another_reaches_the_same_members_and_fails_over_on_its_own() -> None:
    require_etcd()
    from pyetcd.exceptions import NoServerAvailableError  # here: without the client, require_etcd skips first
    shared = connect("127.0.0.1:2379,[::1]:2380", timeout=0.4, retry_after=60.0)  # nothing is sent
    shared.metadata = (("token", "t"),)  # as pyetcd keeps an authenticated client's token
    own = connect_like(shared)
    try:
        assert list(own.endpoints) == ["127.0.0.1:2379", "[::1]:2380"] == list(shared.endpoints)
        assert own.timeout == 0.4 and own.failover and own.metadata == shared.metadata
        assert [(m.time_retry, m.secure) for m in own.endpoints.values()] == [(60.0, False)] * 2
        for member in shared.endpoints.values():  # every member blamed for the failed calls of one client
            member.fail()
        with pytest.raises(NoServerAvailableError):
            assert shared.channel
        assert own.channel is not None  # the other still has a member to ask
    finally:
        own.close()
        shared.close()
    with pytest.raises(TypeError, match="not a pyetcd client"):
        connect_like(object())  # type: ignore[arg-type]


class Leaderless:
    """A ballot whose calls etcd answers with its own deadline (its member has no leader), on a client
    that counts how often the member in use is passed over."""

    def __init__(self) -> None:
        import grpc  # here: without the client, require_etcd skips first

        class EtcdsDeadline(grpc.RpcError):
            def code(self) -> grpc.StatusCode:
                return grpc.StatusCode.UNKNOWN

            def details(self) -> str:
                return "context deadline exceeded"

        self.answer = EtcdsDeadline
        self.errors = election_module.etcd_errors()
        self.key, self.candidate, self.ttl = "/landlord/rooms/leader", "r1", 2
        self.passed_over = 0
        self.client = types.SimpleNamespace(endpoint_in_use=types.SimpleNamespace(fail=self._pass_over))

    def _pass_over(self) -> None:
        self.passed_over += 1

    def read(self) -> tuple[str | None, int]:
        raise self.answer()

    def keep_alive(self, lease_id: int) -> int:
        raise self.answer()


def test_the_election_passes_over_a_member_that_answers_with_etcds_own_deadline() -> None:
    require_etcd()
    clock, ballot = FakeClock(), Leaderless()
    tenure = Tenure(clock=clock, margin=0.25, refresh_interval=0.3, retry_interval=0.07)
    campaign = election_module._Campaign(ballot, tenure, clock, 2.0, None, None, None)  # type: ignore[arg-type]
    campaign.closing = True  # its pauses return at once
    campaign.follow()  # reading the leader key
    assert ballot.passed_over == 1
    tenure.begin(clock.monotonic(), 2)
    campaign.lease_id, campaign.revision, campaign.closing, campaign.refresh_now = 7, 3, False, True
    campaign.keep()  # a keep-alive, sent again to another member
    assert ballot.passed_over == 2 and tenure.held


@pytest.mark.parametrize(("options", "message"), [
    ({"ttl": 0}, "ttl is a whole number"), ({"ttl": 2.5}, "ttl is a whole number"),
    ({"ttl": True}, "ttl is a whole number"), ({"margin": 2}, "margin must be"),
    ({"margin": -1}, "margin must be"), ({"refresh_interval": 1.75}, "refresh_interval must be"),
    ({"watch_period": 0}, "watch_period must be"), ({"candidate": ""}, "a candidate is"),
    ({"group": "a/b"}, "a group is"), ({"retry_interval": 0}, "retry_interval must be"),
])
def test_an_election_refuses_bad_options(options: dict[str, object], message: str) -> None:
    require_etcd()
    arguments: dict[str, object] = {"group": "rooms", "candidate": "r1", **options}
    with pytest.raises(ValueError, match=message):
        Election(connect("127.0.0.1:2379"), **arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize("timeout", [1.75, 5.0])
def test_an_election_refuses_a_client_whose_calls_could_outlast_a_term(timeout: float) -> None:
    require_etcd()
    with pytest.raises(ValueError, match=r"client's timeout must be set and below ttl - margin \(1.75 s\)"):
        Election(connect("127.0.0.1:2379", timeout=timeout), group="rooms", candidate="r1")


def test_the_stubs_declare_only_what_pyetcd_has() -> None:
    """typings/pyetcd (what mypy checks landlord's calls against) is held to the installed client:
    every module, class, method and attribute it declares exists (names with a leading underscore
    stand for types pyetcd does not export)."""
    require_etcd()
    stubs = sorted(STUBS.rglob("*.pyi"))
    assert stubs
    for stub in stubs:
        parts = stub.relative_to(STUBS.parent).with_suffix("").parts
        module = importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
        for node in ast.parse(stub.read_text()).body:
            if isinstance(node, ast.ImportFrom):  # `from .x import y as y`: a name the module re-exports
                for alias in node.names:
                    if alias.asname == alias.name:
                        assert hasattr(module, alias.name), f"{module.__name__}.{alias.name} ({stub.name}) is gone"
            if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
                continue
            real = getattr(module, node.name, None)
            assert isinstance(real, type), f"{module.__name__}.{node.name} ({stub.name}) is gone"
            for member in node.body:
                if isinstance(member, ast.FunctionDef):
                    name = member.name
                elif isinstance(member, ast.AnnAssign) and isinstance(member.target, ast.Name):
                    name = member.target.id
                else:
                    continue
                if not name.startswith("__"):
                    assert hasattr(real, name) or name in _instance_names(real), \
                        f"{module.__name__}.{node.name}.{name} ({stub.name}) is gone"


def _instance_names(cls: type) -> set[str]:
    """What a class's instances have that the class itself may not: a protobuf message's fields, or
    the attributes a class's methods assign on ``self`` (pyetcd sets its attributes in __init__)."""
    descriptor = getattr(cls, "DESCRIPTOR", None)
    if descriptor is not None:
        return set(descriptor.fields_by_name)
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return set()
    return {node.attr for node in ast.walk(ast.parse(textwrap.dedent(source)))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
            and isinstance(node.ctx, ast.Store)}


# -- against a real cluster ---------------------------------------------------------------------------


class Candidate:
    """An in-process Election with its own client and a record of its callbacks, each with the time it came."""

    def __init__(self, cluster: EtcdCluster, group: str, name: str, members: list[int] | None = None) -> None:
        self.client = cluster.client(members, timeout=0.3)
        self.elected: Recorder[tuple[float, int]] = Recorder()
        self.deposed: Recorder[tuple[float, str]] = Recorder()
        self.others_leading_when_elected: list[bool] = []
        self.rivals: list[Candidate] = []
        self.election = Election(self.client, group=group, candidate=name,
                                 on_elected=self._on_elected,
                                 on_deposed=lambda reason: self.deposed.record((time.monotonic(), reason)))

    def _on_elected(self, revision: int) -> None:
        # Fencing, seen from the successor: no rival may still consider itself leader now.
        self.others_leading_when_elected.extend(rival.election.leading for rival in self.rivals)
        self.elected.record((time.monotonic(), revision))

    def close(self) -> None:
        self.election.close()
        self.client.close()


@pytest.fixture
def candidates(cluster: EtcdCluster) -> Iterator[list[Candidate]]:
    """Collects the test's candidates and closes them when it ends (before the cluster is mended)."""
    made: list[Candidate] = []
    yield made
    for candidate in made:
        candidate.close()


def run(cluster: EtcdCluster, made: list[Candidate], group: str, *names: str,
        members: list[int] | None = None) -> list[Candidate]:
    new = [Candidate(cluster, group, name, members) for name in names]
    made.extend(new)
    for candidate in made:
        candidate.rivals = [other for other in made if other is not candidate]
    for candidate in new:
        candidate.election.start()
    return new


def wait_leading(candidate: Candidate, timeout: float = 5.0) -> None:
    assert candidate.election.wait_until(lambda e: e.leading, timeout), f"{candidate.election} did not lead"


def test_of_three_candidates_exactly_one_leads_and_all_know_it(cluster: EtcdCluster,
                                                                candidates: list[Candidate]) -> None:
    group = new_group()
    run(cluster, candidates, group, "r1", "r2", "r3")
    for candidate in candidates:
        assert candidate.election.wait_until(lambda e: e.leader() is not None, 5.0)
    leading = [c for c in candidates if c.election.leading]
    assert len(leading) == 1
    leader = leading[0].election
    assert all(c.election.wait_until(lambda e: e.leader() == leader.candidate, 5.0) for c in candidates)
    assert sum(len(c.elected) for c in candidates) == 1
    value, meta = candidates[0].client.get(leader.key)
    assert value == leader.candidate.encode() and meta.mod_revision == leader.revision
    assert leader.confirmed_until > time.monotonic()


def test_a_leader_that_resigns_is_succeeded_at_once(cluster: EtcdCluster, candidates: list[Candidate]) -> None:
    group = new_group()
    first, = run(cluster, candidates, group, "r1")
    wait_leading(first)
    second, third = run(cluster, candidates, group, "r2", "r3")
    for candidate in (second, third):
        assert candidate.election.wait_until(lambda e: e.leader() == "r1", 5.0)
    resigned = time.monotonic()
    first.election.close()
    assert [reason for _, reason in first.deposed.wait_for(1)] == ["the election was closed"]
    assert second.election.wait_until(lambda e: e.leader() in ("r2", "r3"), 5.0)
    successor, other = (second, third) if second.election.leader() == "r2" else (third, second)
    (elected_at, _), = successor.elected.wait_for(1)
    assert elected_at - resigned < 1.0  # not a TTL later: the resigning leader revoked its lease
    assert successor.others_leading_when_elected == [False, False] and len(other.elected) == 0


def test_a_leader_cut_off_from_etcd_stops_leading_before_another_is_elected(
        cluster: EtcdCluster, candidates: list[Candidate]) -> None:
    group = new_group()
    member = next(i for i in range(3) if i != cluster.leader())  # pausing etcd's own leader would stall all
    others = [i for i in range(3) if i != member]
    cut_off, = run(cluster, candidates, group, "r1", members=[member])
    wait_leading(cut_off)
    revision = cut_off.election.revision
    assert revision is not None
    rival, = run(cluster, candidates, group, "r2", members=others)
    assert rival.election.wait_until(lambda e: e.leader() == "r1", 5.0)
    paused = time.monotonic()
    cluster.pause_member(member)  # r1's keep-alives go unanswered from now on
    (elected_at, _), = rival.elected.wait_for(1, timeout=TTL + 5.0)
    assert rival.others_leading_when_elected == [False]  # r1's term had run out before r2 was elected
    assert elected_at - paused < SUCCESSION
    # told once its thread has looked (a keep-alive to the paused member may be holding it up)
    (_, reason), = cut_off.deposed.wait_for(1, timeout=1.0)
    assert reason == f"no keep-alive confirmed for {WINDOW:g} s"
    assert not cut_off.election.leading and cut_off.election.leader() is None
    with pytest.raises(LeadershipLost, match="does not lead"):
        cut_off.election.transaction(success=[rival.client.transactions.put(f"/landlord/{group}/x", "r1")])
    with pytest.raises(LeadershipLost, match="etcd refused the write"):  # what r1 would get had it tried
        guarded_transaction(rival.client, cut_off.election.key, revision,
                            success=[rival.client.transactions.put(f"/landlord/{group}/x", "r1")])
    assert rival.client.get(f"/landlord/{group}/x") == (None, None)


def test_a_deposed_leaders_guarded_write_is_refused_by_etcd_and_the_new_leaders_applied(
        cluster: EtcdCluster, candidates: list[Candidate]) -> None:
    group = new_group()
    old, = run(cluster, candidates, group, "r1")
    wait_leading(old)
    new, = run(cluster, candidates, group, "r2")
    old_revision = old.election.revision
    assert old_revision is not None
    tx = new.client.transactions
    written = f"/landlord/{group}/written"
    assert old.election.transaction(success=[tx.put(written, "r1")])[0]  # leading: applied
    lease = new.client.get(old.election.key)[1].lease_id
    new.client.revoke_lease(lease)  # what etcd does when the lease expires: the key goes with it
    wait_leading(new)
    with pytest.raises(LeadershipLost, match="etcd refused the write"):
        guarded_transaction(old.client, old.election.key, old_revision, success=[tx.put(written, "r1 again")])
    (_, reason), = old.deposed.wait_for(1)
    assert reason in ("etcd no longer has its election lease (it expired or was revoked)",
                      "its leader key was deleted or replaced in etcd")  # if revoked between its two checks
    with pytest.raises(LeadershipLost):
        old.election.transaction(success=[tx.put(written, "r1 again")])
    assert new.client.get(written)[0] == b"r1"
    # the new leader's guarded writes apply, and its own conditions decide between its branches
    assert new.election.transaction(success=[tx.put(written, "r2")])[0]
    held, responses = new.election.transaction(compare=[tx.value(written) == "r1"],
                                               success=[tx.put(written, "not this")], failure=[tx.get(written)])
    assert not held and responses[0].response_range.kvs[0].value == b"r2"
    assert new.client.get(written)[0] == b"r2"


@pytest.mark.parametrize("which", ["etcd's leader", "the member the leader's client uses"])
def test_killing_one_etcd_member_changes_nothing_for_the_leader(cluster: EtcdCluster, candidates: list[Candidate],
                                                                which: str) -> None:
    group = new_group()
    first, = run(cluster, candidates, group, "r1")
    wait_leading(first)
    run(cluster, candidates, group, "r2", "r3")
    revision = first.election.revision
    if which == "etcd's leader":
        victim = cluster.leader()
    else:
        victim = cluster.serving(first.client)
    killed = time.monotonic()
    cluster.kill_member(victim)
    # a keep-alive sent after the kill has been answered: the leader carried on through it
    assert first.election.wait_until(lambda e: e.confirmed_until > killed + WINDOW, 5.0), first.election
    assert first.election.leading and first.election.revision == revision
    assert len(first.deposed) == 0 and all(len(c.elected) == 0 for c in candidates[1:])
    for follower in candidates[1:]:
        assert follower.election.wait_until(lambda e: e.leader() == "r1", 5.0)


# -- candidates in processes of their own ----------------------------------------------------------


def candidate_process(cluster: EtcdCluster, group: str, name: str) -> ChildProcess:
    return ChildProcess(CANDIDATE, ",".join(cluster.endpoints), group, name, stdin=True, name=f"candidate {name}")


def test_kill_9_of_the_leaders_process_and_another_leads_within_the_ttl(cluster: EtcdCluster) -> None:
    group = new_group()
    with candidate_process(cluster, group, "r1") as first:
        first.expect("elected")
        with candidate_process(cluster, group, "r2") as second, candidate_process(cluster, group, "r3") as third:
            for follower in (second, third):
                follower.wait_for("^leader r1$")
            marks = {follower: follower.mark() for follower in (second, third)}
            killed = time.monotonic()
            first.kill()
            for follower in (second, third):  # the winner says so after "elected"; the other once it learns
                follower.wait_for("^leader r[23]$", timeout=SUCCESSION + 5.0)
            elected = [line for follower in (second, third)
                       for line, _ in follower.matches("^elected", marks[follower])]
            assert len(elected) == 1, (second.tail(), third.tail())
            assert elected[0].time - killed < SUCCESSION


def test_a_leader_stopped_past_its_ttl_is_fenced_and_rejoins_as_a_follower(cluster: EtcdCluster) -> None:
    group = new_group()
    with candidate_process(cluster, group, "r1") as first:
        revision = int(first.expect("elected"))
        with candidate_process(cluster, group, "r2") as second:
            second.wait_for("^leader r1$")
            first.send("write")
            assert first.expect("write ") == "ok"
            os.kill(first.pid, signal.SIGSTOP)
            stopped = time.monotonic()
            try:
                second.expect("elected", timeout=SUCCESSION + 5.0)
                taken_over = time.monotonic()
            finally:
                os.kill(first.pid, signal.SIGCONT)
            assert taken_over - stopped < SUCCESSION
            resumed = first.mark()
            # At once, whether or not its election thread has looked yet: its own clock says its term ran out.
            first.send("leading")
            first.send("write")
            first.send(f"write-as {revision}")
            assert first.expect("leading ") == "no"
            assert first.expect("write ").startswith("refused r1 does not lead")
            assert first.expect("write-as ").startswith("refused etcd refused the write")
            (_, deposed), = first.wait_count("^deposed (.*)$", 1, start=resumed)
            assert deposed.group(1) in (  # the last, if it was stopped in the midst of a keep-alive
                f"no keep-alive confirmed for {WINDOW:g} s", "its leader key was deleted or replaced in etcd",
                "etcd no longer has its election lease (it expired or was revoked)")
            first.wait_count("^leader r2$", 1, start=resumed)  # a follower now, and it knows who leads
            first.send("leading")
            assert first.expect("leading ") == "no"
            first.send("quit")
            first.expect("bye")
            assert first.process.wait(10) == 0, first.tail(60)


def test_a_candidate_that_quits_resigns(cluster: EtcdCluster) -> None:
    group = new_group()
    with candidate_process(cluster, group, "solo") as solo:
        solo.expect("elected")
        solo.send("leading")
        assert solo.expect("leading ") == "yes"
        solo.send("quit")
        assert solo.expect("deposed ") == "the election was closed"
        solo.expect("bye")
        assert solo.process.wait(10) == 0
