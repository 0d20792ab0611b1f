"""The resource's side of fencing tokens (issue 25): Fence refuses what is older than it accepted, across threads."""

from __future__ import annotations

import ast
import pickle
import random
import threading
from pathlib import Path

import pytest

import landlord
from landlord import Fence, LeaseError, StaleTokenError
from landlord.fence import MAX_TOKEN


def test_tokens_at_least_the_highest_are_accepted_and_older_ones_refused() -> None:
    fence = Fence()
    assert fence.highest is None
    assert fence.check(3) == 3
    assert fence.check(3) == 3  # one holder writes many times with its token
    assert fence.check(7) == 7
    with pytest.raises(StaleTokenError, match="fencing token 5 is stale: 7 was accepted") as refused:
        fence.check(5)
    assert (refused.value.token, refused.value.highest) == (5, 7)
    assert fence.highest == 7


def test_a_fence_starts_from_a_stored_high_water_mark() -> None:
    fence = Fence(highest=10)
    with pytest.raises(StaleTokenError):
        fence.check(9)
    assert fence.check(10) == 10


def test_a_guarded_write_runs_only_with_an_accepted_token() -> None:
    fence, written = Fence(), []
    with fence.guard(2) as token:
        written.append(token)
    with pytest.raises(StaleTokenError), fence.guard(1):
        written.append(1)
    assert written == [2] and fence.highest == 2


def test_a_guarded_write_holds_the_fence_so_an_older_token_cannot_write_after_a_newer_one() -> None:
    fence, entered = Fence(), threading.Event()
    outcome: list[object] = []

    def newer() -> None:
        entered.wait(5)
        try:
            fence.check(9)
            outcome.append("newer checked")
        except StaleTokenError as error:  # pragma: no cover (what would break the test)
            outcome.append(error)

    thread = threading.Thread(target=newer)
    thread.start()
    with fence.guard(4):
        entered.set()
        thread.join(0.2)  # the newer token waits for the older write to finish
        outcome.append("older wrote")
    thread.join(5)
    assert outcome == ["older wrote", "newer checked"]


def test_a_guarded_write_may_check_the_same_fence_again() -> None:
    fence = Fence()
    with fence.guard(1):
        assert fence.check(1) == 1  # a reentrant lock: no deadlock


@pytest.mark.parametrize(("token", "error"), [(-1, ValueError), (1.0, TypeError), (True, TypeError),
                                              ("3", TypeError), (None, TypeError)])
def test_what_is_not_a_token_is_refused_and_changes_nothing(token: object, error: type[Exception]) -> None:
    fence = Fence(highest=2)
    with pytest.raises(error, match="fencing token"):
        fence.check(token)  # type: ignore[arg-type]
    if token is not None:  # None is a fence's start with nothing accepted
        with pytest.raises(error, match="fencing token"):
            Fence(highest=token)  # type: ignore[arg-type]
    assert fence.highest == 2


@pytest.mark.parametrize("token", [MAX_TOKEN + 1, 2**64, 10**5000, -(10**5000)],
                         ids=["2**63", "2**64", "10**5000", "-10**5000"])
def test_an_int_beyond_what_a_landlord_grants_is_refused_and_moves_nothing(token: int) -> None:
    # a huge int accepted would have refused every real token after it, and one of more than 4,300
    # digits has no str (Python 3.11+): its error would not even have been a StaleTokenError
    fence = Fence(highest=2)
    with pytest.raises(ValueError, match="fencing token is (at most|not negative)"):
        fence.check(token)
    assert fence.highest == 2 and fence.check(MAX_TOKEN) == MAX_TOKEN
    with pytest.raises(StaleTokenError):
        fence.check(2)


def test_a_fence_counts_what_it_accepted_and_what_it_refused_as_stale() -> None:
    fence = Fence()
    assert fence.counts() == {"accepted": 0, "refused": 0}
    fence.check(3)
    with fence.guard(3):
        pass
    for token in (1, 2):
        with pytest.raises(StaleTokenError):
            fence.check(token)
    with pytest.raises(TypeError):
        fence.check("4")  # type: ignore[arg-type]  (not a token: never reached the fence)
    assert fence.counts() == {"accepted": 2, "refused": 2}


def test_threads_with_random_tokens_never_land_a_token_below_one_accepted_before() -> None:
    fence = Fence()
    accepted: list[int] = []  # appended under the fence's lock (inside guard): the order of acceptance
    refused: list[tuple[int, int]] = []
    start = threading.Barrier(8)

    def writer(seed: int) -> None:
        chooser = random.Random(seed)
        start.wait(5)
        for _ in range(500):
            token = chooser.randrange(1_000)
            try:
                with fence.guard(token) as checked:
                    accepted.append(checked)
            except StaleTokenError as error:
                assert error.highest is not None
                refused.append((token, error.highest))

    threads = [threading.Thread(target=writer, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(accepted) + len(refused) == 8 * 500
    assert accepted == sorted(accepted), "a token landed below one accepted before it"
    assert all(token < highest and highest in accepted for token, highest in refused)
    assert refused and fence.highest == accepted[-1]


def test_a_stale_token_error_is_a_lease_error_that_pickles_whole() -> None:
    error = pickle.loads(pickle.dumps(StaleTokenError("stale", 3, 5)))
    assert isinstance(error, LeaseError) and (str(error), error.token, error.highest) == ("stale", 3, 5)


def test_the_facade_exports_the_fence_and_its_error() -> None:
    assert {"Fence", "StaleTokenError"} <= set(landlord.__all__)
    assert landlord.Fence is Fence and landlord.StaleTokenError is StaleTokenError


def test_the_fence_module_imports_the_standard_library_and_the_errors_alone() -> None:
    # import landlord loads it: it must stay as light as it is
    tree = ast.parse(Path(landlord.fence.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert imported == {"__future__", "threading", "collections.abc", "contextlib", "errors"}
