"""Leases crossing real process boundaries, and landlords that really die."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import Pyro5.api
import Pyro5.errors
import pytest
from conftest import Child, free_port

from landlord import Landlord, LeaseDurationPolicy, UnknownLeaseError


def test_a_lease_crosses_into_another_process_and_on_to_a_third(
        daemon: Any, close_later: list, spawn: Callable[..., Child]) -> None:
    freed: list = []
    landlord = Landlord(policy=LeaseDurationPolicy(maximum=600), on_expire=freed.append)
    close_later.append(landlord)
    daemon.register(landlord)
    first, second = spawn("holder.py"), spawn("holder.py")
    first_uri, second_uri = first.expect("URI:"), second.expect("URI:")
    lease = landlord.new_lease("room 9", 30)

    with Pyro5.api.Proxy(first_uri) as holder:
        assert 28 < holder.hold(lease) <= 30
        assert holder.renew(100) == 100
        assert landlord.manager.get(lease.cookie).expiration > landlord.clock.monotonic() + 98
        # renewed from four more threads there: each thread keeps exactly one proxy
        assert holder.renew_from_threads(4, 120) == [1, 1, 1, 1]
        with Pyro5.api.Proxy(second_uri) as third:
            assert 118 < holder.pass_on(second_uri) <= 120
            assert third.renew(200) == 200
            third.cancel()
        assert freed == ["room 9"]
        # the first holder learns the lease is gone: an error that crossed two processes
        with pytest.raises(UnknownLeaseError):
            holder.renew(10)


def test_a_killed_landlord_is_indefinite_then_a_restarted_one_is_definite(spawn: Callable[..., Child]) -> None:
    port = str(free_port())
    server = spawn("room_landlord.py", port)
    uri = server.expect("URI:")
    with Pyro5.api.Proxy(uri) as rooms:
        lease = rooms.rent("12", 60)
    assert lease.renew(60) == 60

    server.kill()
    before = lease.expiration
    with pytest.raises(Pyro5.errors.CommunicationError):
        lease.renew(60)  # not a LeaseError: the landlord may still hold the lease
    assert lease.expiration == before

    restarted = spawn("room_landlord.py", port)
    assert restarted.expect("URI:") == uri
    with pytest.raises(UnknownLeaseError):
        lease.renew(60)  # reconnected; this landlord never heard of the lease


def test_a_holder_that_dies_leaves_nothing_behind(spawn: Callable[..., Child]) -> None:
    port = str(free_port())
    server = spawn("room_landlord.py", port)
    uri = server.expect("URI:")
    holder = spawn("holder.py")
    with Pyro5.api.Proxy(uri) as rooms, Pyro5.api.Proxy(holder.expect("URI:")) as remote_holder:
        remote_holder.hold(rooms.rent("short stay", 1.0))
        assert remote_holder.renew(1.0) == 1.0
    holder.kill()  # no cancel, no goodbye
    assert server.expect("freed", timeout=10) == "short stay"
