"""PeerSet: a client's peers, one per lookup service, added, removed, discovered and closed (fake peers, no threads)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from lookup import LookupGroup
from lookup.client.peerset import PeerSet
from lookup.discovery.multicast import DiscoveredLookup

A = "PYRO:lookup.LookupService@127.0.0.1:4001"
B = "PYRO:lookup.LookupService@127.0.0.1:4002"
C = "PYRO:lookup.LookupService@127.0.0.1:4003"


class Journal:
    """What happened, in order, and whether the condition's lock was held then."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # not re-entrant: a PeerSet must not take it twice
        self.condition = threading.Condition(self.lock)
        self.entries: list[tuple[str, str, bool]] = []  # (what, key, lock held)

    def note(self, what: str, key: str) -> None:
        self.entries.append((what, key, self.lock.locked()))

    def of(self, *whats: str) -> list[tuple[str, str, bool]]:
        return [entry for entry in self.entries if entry[0] in whats]


class FakePeer:
    """Notes each call of the PeerSet's on the journal."""

    def __init__(self, uri: str, journal: Journal) -> None:
        self.uri = uri
        self._journal = journal
        self.ended_with: bool | None = None  # end's cancel

    def start(self) -> None:
        self._journal.note("start", self.uri)

    def stop(self) -> None:
        self._journal.note("stop", self.uri)

    def join(self) -> None:
        self._journal.note("join", self.uri)

    def let_go(self) -> None:
        self._journal.note("let_go", self.uri)

    def end(self, *, cancel: bool) -> None:
        self.ended_with = cancel
        self._journal.note("end", self.uri)


class FakeDiscovery:
    """A caller's discovery: it tells its listeners when told to."""

    def __init__(self) -> None:
        self.listeners: list[Any] = []
        self.closed = False

    def add_listener(self, listener: Any) -> None:
        self.listeners.append(listener)

    def remove_listener(self, listener: Any) -> None:
        """As LookupDiscovery's: the very listener added (``is``), not one equal to it."""
        self.listeners = [known for known in self.listeners if known is not listener]

    def tell(self, kind: str, lookup: DiscoveredLookup) -> None:
        for listener in list(self.listeners):
            listener(kind, lookup)

    def close(self) -> None:
        self.closed = True


class Owner:
    """A client over a PeerSet of fake peers."""

    def __init__(self) -> None:
        self.journal = Journal()
        self.made: dict[str, FakePeer] = {}
        self.peers = PeerSet(self._new_peer, condition=self.journal.condition, forget=self._forget)

    def _new_peer(self, key: str) -> FakePeer:
        self.journal.note("new", key)
        peer = self.made[key] = FakePeer(key, self.journal)
        return peer

    def _forget(self, key: str) -> None:
        self.journal.note("forget", key)

    def keys(self) -> list[str]:
        with self.journal.condition:
            return self.peers.keys()


@pytest.fixture
def owner() -> Owner:
    return Owner()


def test_each_lookup_service_gets_one_peer_started_under_the_lock_in_the_order_added(owner: Owner) -> None:
    owner.peers.add([A, B])
    owner.peers.add([B, C, A])
    assert owner.keys() == [A, B, C]
    assert owner.journal.of("new", "start") == [("new", A, True), ("start", A, True), ("new", B, True),
                                                ("start", B, True), ("new", C, True), ("start", C, True)]
    with owner.journal.condition:
        assert list(owner.peers) == [owner.made[A], owner.made[B], owner.made[C]]


def test_removing_stops_and_forgets_under_the_lock_then_lets_go_without_it(owner: Owner) -> None:
    owner.peers.add([A, B, C])
    owner.peers.remove([C, "PYRO:nobody@127.0.0.1:1", A])
    assert owner.keys() == [B]
    assert owner.journal.of("stop", "forget", "let_go") == [
        ("stop", C, True), ("forget", C, True), ("stop", A, True), ("forget", A, True),
        ("let_go", C, False), ("let_go", A, False)]
    assert owner.journal.of("join", "end") == []  # their threads end on their own; closing waits for them


def test_a_lookup_service_removed_may_be_added_again_with_a_new_peer(owner: Owner) -> None:
    owner.peers.add([A])
    first = owner.made[A]
    owner.peers.remove([A])
    owner.peers.add([A])
    assert owner.made[A] is not first and owner.keys() == [A]
    owner.peers.close()
    assert owner.journal.of("join") == [("join", A, False), ("join", A, False)]  # the new one, then the retired
    assert first.ended_with is None and owner.made[A].ended_with is True


def test_removing_clears_only_that_lookup_services_error(owner: Owner) -> None:
    owner.peers.add([A, B])
    a_failed, b_failed = OSError("A down"), OSError("B down")
    with owner.journal.condition:
        owner.peers.errors.failed(A, a_failed)
        owner.peers.errors.failed(B, b_failed)
    owner.peers.remove([B])
    with owner.journal.condition:
        assert owner.peers.errors.by_peer() == {A: a_failed}
        assert owner.peers.errors.latest is a_failed


@pytest.mark.parametrize("cancel", [True, False])
def test_closing_stops_every_peer_under_the_lock_then_joins_all_then_ends_those_kept(owner: Owner,
                                                                                    cancel: bool) -> None:
    owner.peers.add([A, B, C])
    owner.peers.remove([B])
    del owner.journal.entries[:]
    owner.peers.close(cancel=cancel)
    assert owner.journal.entries == [("stop", A, True), ("stop", C, True),
                                     ("join", A, False), ("join", C, False), ("join", B, False),
                                     ("end", A, False), ("end", C, False)]  # no forget: the view stays
    assert owner.made[A].ended_with is cancel and owner.made[B].ended_with is None
    with owner.journal.condition:
        assert owner.peers.closed


@pytest.mark.parametrize("change", ["remove", "close"])
def test_removing_and_closing_wake_whoever_waits_on_the_condition(owner: Owner, change: str) -> None:
    owner.peers.add([A])
    waiting, woken = threading.Event(), threading.Event()

    def wait() -> None:
        with owner.journal.condition:
            waiting.set()  # the change takes the lock only once this thread waits, having let go of it
            if owner.journal.condition.wait(5):  # notified, not timed out
                woken.set()

    waiter = threading.Thread(target=wait)
    waiter.start()
    assert waiting.wait(10)
    if change == "remove":
        owner.peers.remove([A])
    else:
        owner.peers.close()
    waiter.join(10)
    assert woken.is_set()


def test_once_closed_nothing_is_added(owner: Owner) -> None:
    owner.peers.add([A])
    owner.peers.close()
    owner.peers.add([B])
    assert owner.keys() == [A] and B not in owner.made


def test_discovery_adds_what_it_finds_and_removes_what_it_discards_by_locator_key(owner: Owner) -> None:
    discovery = FakeDiscovery()
    owner.peers.follow(None, discovery)  # type: ignore[arg-type]
    replicated = DiscoveredLookup("id-g", (B, C), ("",))
    discovery.tell("discovered", DiscoveredLookup("id-a", (A,), ("",)))
    discovery.tell("discovered", replicated)
    assert owner.keys() == [A, ",".join(LookupGroup([B, C]).uris)]
    discovery.tell("discarded", replicated)
    discovery.tell("changed", DiscoveredLookup("id-a", (A,), ("",)))  # a kind it does not know: ignored
    assert owner.keys() == [A]


def test_closing_leaves_the_callers_discovery_open_and_stops_listening_to_it(owner: Owner) -> None:
    discovery = FakeDiscovery()
    owner.peers.follow(None, discovery)  # type: ignore[arg-type]
    discovery.tell("discovered", DiscoveredLookup("id-a", (A,), ("",)))
    owner.peers.close()
    assert not discovery.closed and discovery.listeners == []
    discovery.tell("discarded", DiscoveredLookup("id-a", (A,), ("",)))  # heard no more: its peer is not let go of
    assert owner.keys() == [A] and owner.journal.of("let_go", "forget") == []


def test_no_discovery_without_groups_or_one_given(owner: Owner) -> None:
    owner.peers.follow(None, None)
    owner.peers.close()
    assert owner.keys() == []


def test_groups_and_a_discovery_both_are_refused(owner: Owner) -> None:
    with pytest.raises(TypeError, match="not both"):
        owner.peers.follow([""], FakeDiscovery())  # type: ignore[arg-type]
