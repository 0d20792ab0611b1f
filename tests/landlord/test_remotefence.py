"""A fence other processes call (issue 25, item 2): RemoteFence answers, or refuses with StaleTokenError
across the wire; what is not a token is refused, counted, and moves nothing. Its hostile tests (a
stranger's garbage and floods against a canary writer) are tests/hostile/test_fence_attacks.py."""

from __future__ import annotations

import threading

import Pyro5.api
import Pyro5.errors
import pytest
from conftest import ServingDaemon

import landlord
from landlord import Fence, RemoteFence, StaleTokenError
from landlord.fence import MAX_TOKEN

NOT_TOKENS = [True, False, 1.0, float("inf"), float("nan"), "7", b"7", None, [7], {"token": 7}, -1, MAX_TOKEN + 1,
              2**200, -(2**200)]


def test_in_process_it_checks_as_its_fence_does() -> None:
    fence = Fence(highest=4)
    remote = RemoteFence(fence)
    assert remote.fence is fence and remote.highest() == 4
    assert remote.check(4) == 4 and remote.check(9) == 9
    with pytest.raises(StaleTokenError) as refused:
        remote.check(5)
    assert (refused.value.token, refused.value.highest) == (5, 9)
    assert fence.highest == 9 and remote.counts() == {"accepted": 2, "refused": 1, "invalid": 0}
    assert repr(remote) == "RemoteFence(highest=9)"


def test_it_serves_a_new_fence_unless_given_one_and_refuses_anything_else() -> None:
    assert RemoteFence().highest() is None
    with pytest.raises(TypeError, match="landlord.Fence"):
        RemoteFence(object())  # type: ignore[arg-type]


@pytest.mark.parametrize("garbage", NOT_TOKENS, ids=[f"{type(g).__name__}-{i}" for i, g in enumerate(NOT_TOKENS)])
def test_what_is_not_a_token_is_refused_counted_and_moves_nothing(garbage: object) -> None:
    remote = RemoteFence(Fence(highest=3))
    with pytest.raises((TypeError, ValueError), match="fencing token"):
        remote.check(garbage)  # type: ignore[arg-type]
    assert remote.highest() == 3 and remote.counts() == {"accepted": 0, "refused": 0, "invalid": 1}
    assert remote.check(3) == 3  # the holder of the highest token writes on


def test_over_the_wire_a_stale_token_is_refused_as_a_stale_token_error(daemon: ServingDaemon) -> None:
    remote = RemoteFence()
    uri = daemon.register(remote, "fence.orders")
    with Pyro5.api.Proxy(uri) as proxy:
        assert proxy.check(2) == 2 and proxy.check(2) == 2 and proxy.check(3) == 3
        assert proxy.highest() == 3
        with pytest.raises(StaleTokenError, match="fencing token 2 is stale: 3 was accepted") as refused:
            proxy.check(2)
        assert isinstance(refused.value, landlord.LeaseError)  # a definite answer: it crossed as itself
        assert (refused.value.token, refused.value.highest) == (2, 3)
        for garbage in (True, 2.5, "9", None, [9], -4, MAX_TOKEN + 1, 10**300):
            with pytest.raises((TypeError, ValueError)):
                proxy.check(garbage)
        assert proxy.highest() == 3
        with pytest.raises(AttributeError):
            proxy.counts()  # local: not exposed
    assert remote.counts() == {"accepted": 3, "refused": 1, "invalid": 8}


def test_writers_in_many_threads_never_see_a_token_accepted_below_one_accepted_before(
        daemon: ServingDaemon) -> None:
    remote = RemoteFence()
    uri = daemon.register(remote)
    answers: list[tuple[int, int | None]] = []  # (token, None if accepted, else the highest it lost to)
    lock = threading.Lock()

    def writer(start: int) -> None:
        with Pyro5.api.Proxy(uri) as proxy:
            for token in range(start, start + 60, 3):
                try:
                    proxy.check(token)
                    outcome = None
                except StaleTokenError as error:
                    outcome = error.highest
                with lock:
                    answers.append((token, outcome))

    threads = [threading.Thread(target=writer, args=(start,)) for start in (1, 2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(answers) == 60
    refused = [(token, highest) for token, highest in answers if highest is not None]
    assert all(highest is not None and token < highest for token, highest in refused)
    assert remote.highest() == max(token for token, _ in answers)  # 60: the highest is always accepted
    counts = remote.counts()
    assert counts["accepted"] + counts["refused"] == 60 and counts["refused"] == len(refused)
