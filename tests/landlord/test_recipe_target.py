"""Target (landlord/recipe/target.py): the three kinds of landlord a recipe reaches, and a call on a
connection the landlord closed (it restarted) made once more on a new one."""

from __future__ import annotations

from typing import Any

import Pyro5.errors
import pytest
from conftest import PROCESSES

from landlord import Landlord, Lock
from landlord.recipe.target import Target
from landlord.testing import ChildProcess, free_port


def serve(port: int) -> ChildProcess:
    return ChildProcess(str(PROCESSES / "served_landlord.py"), "--host", "127.0.0.1", "--port", str(port),
                        "--landlord-id", "restarted",
                        name="landlord")


def test_a_lock_acquires_at_once_after_its_landlord_restarted(close_later: list) -> None:
    port = free_port("127.0.0.1")
    first = serve(port)
    close_later.append(first)
    uri = first.read_uri()
    lock = Lock(uri, "orders", duration=5)
    close_later.append(lock)
    assert lock.acquire() and lock.token == 1
    lock.release()  # this thread's connection to the landlord stays open, for the next call
    first.kill()
    second = serve(port)  # the same address, a new process: that connection is dead
    close_later.append(second)
    assert second.read_uri() == uri
    assert lock.acquire(blocking=False) and lock.token == 1  # a new landlord counts from 1 (no store)
    assert Target(uri).call("name_holders", "orders") == [(1, None)]
    lock.release()


def test_a_landlord_that_is_not_there_is_not_asked_twice() -> None:
    target = Target(f"PYRO:landlord@127.0.0.1:{free_port('127.0.0.1')}")
    with pytest.raises(Pyro5.errors.CommunicationError):
        target.call("name_holders", "orders")


@pytest.mark.parametrize("landlord, error", [(42, TypeError), ("PYRO:nothing", ValueError), ([], ValueError),
                                             (object(), TypeError)])
def test_what_is_not_a_landlord_is_refused(landlord: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        Target(landlord)


def test_in_process_a_landlord_is_called_directly_on_its_own_clock(close_later: list) -> None:
    from landlord import FakeClock
    clock = FakeClock()
    landlord = Landlord(clock=clock, reaper="lazy")
    close_later.append(landlord)
    target = Target(landlord)
    assert target.in_process and target.clock is clock
    assert target.call("name_holders", "orders") == []
