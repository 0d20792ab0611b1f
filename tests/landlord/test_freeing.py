"""landlord.grantor.freeing: Endings frees ended leases' resources first and forgets their rows after
(pure: callbacks recording what they are called with, no manager, no store, no threads)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from landlord.grantor.freeing import Endings
from landlord.grantor.resource import LeasedResource, LeaseExtra


class Calls:
    """What the callbacks and the forgetting were called with, in order."""

    def __init__(self) -> None:
        self.log: list[tuple[str, Any]] = []

    def expire(self, resource: Any) -> None:
        self.log.append(("expire", resource))

    def cancel(self, resource: Any) -> None:
        self.log.append(("cancel", resource))

    def forget(self, ended: list[LeasedResource]) -> None:
        self.log.append(("forget", [leased.cookie for leased in ended]))


def leased(cookie: str, resource: Any, *attached: Any) -> LeasedResource:
    return LeasedResource(cookie, 100.0, resource, LeaseExtra(attached=list(attached)) if attached else None)


def test_every_resource_is_freed_before_the_rows_are_forgotten() -> None:
    calls = Calls()
    endings = Endings(calls.expire, None, calls.forget, store=None)
    endings.end([leased("a", "room-1", "key-1"), leased("b", "room-2")])
    assert calls.log == [("expire", "room-1"), ("expire", "key-1"), ("expire", "room-2"), ("forget", ["a", "b"])]


def test_a_cancelled_lease_is_freed_through_on_cancel_and_without_one_through_on_expire() -> None:
    calls = Calls()
    Endings(calls.expire, calls.cancel, calls.forget, store=None).end([leased("a", "room-1")], cancelled=True)
    Endings(calls.expire, None, calls.forget, store=None).end([leased("b", "room-2")], cancelled=True)
    assert calls.log == [("cancel", "room-1"), ("forget", ["a"]), ("expire", "room-2"), ("forget", ["b"])]


def test_a_callback_with_a_cookie_parameter_is_given_the_cookie() -> None:
    seen: list[tuple[Any, str]] = []

    def expire(resource: Any, *, cookie: str) -> None:
        seen.append((resource, cookie))

    Endings(expire, None, lambda ended: None, store=None).end([leased("c1", "room-1", "key-1")])
    assert seen == [("room-1", "c1"), ("key-1", "c1")]


def test_a_failing_callback_is_logged_and_frees_the_rest_and_the_rows_are_forgotten(
        caplog: pytest.LogCaptureFixture) -> None:
    calls = Calls()

    def expire(resource: Any) -> None:
        if resource == "bad":
            raise RuntimeError("no")
        calls.expire(resource)

    with caplog.at_level(logging.ERROR, logger="landlord.manager"):
        Endings(expire, None, calls.forget, store=None).end([leased("a", "bad"), leased("b", "room-2")])
    assert calls.log == [("expire", "room-2"), ("forget", ["a", "b"])]
    assert [r.getMessage() for r in caplog.records] == ["on_expire failed for LeasedResource(a…, expiration=100.0, "
                                                        "'bad')"]


def test_rows_that_cannot_be_forgotten_are_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    calls = Calls()

    def forget(ended: list[LeasedResource]) -> None:
        raise OSError("disk gone")

    with caplog.at_level(logging.ERROR, logger="landlord.manager"):
        Endings(calls.expire, None, forget, store="the store").end([leased("a", "room-1")])
    assert calls.log == [("expire", "room-1")]
    assert "could not delete 1 ended lease(s) from 'the store'" in caplog.text


def test_a_lease_restored_as_cancelled_is_freed_through_on_cancel_once_however_it_ends() -> None:
    calls = Calls()
    endings = Endings(calls.expire, calls.cancel, calls.forget, store=None)
    endings.restored_cancels.add("a")
    endings.end([leased("a", "room-1"), leased("b", "room-2")])  # found expired after the restart
    assert calls.log == [("cancel", "room-1"), ("expire", "room-2"), ("forget", ["a", "b"])]
    assert endings.restored_cancels == set()
    calls.log.clear()
    endings.end([leased("a", "room-1")])  # a cookie seen again is not a restored cancel any more
    assert calls.log == [("expire", "room-1"), ("forget", ["a"])]
