"""The kill points (landlord.grantor.killpoints): armed by the environment, dying at the pass they name.

Their use, a server killed at each step of a lease's end, is tests/faults/test_kill_points.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from landlord.grantor import killpoints
from landlord.grantor.killpoints import ENVIRONMENT, KillPoint, armed_from


def test_an_unset_or_empty_variable_arms_nothing_and_so_does_this_test_run() -> None:
    assert armed_from({}) is None and armed_from({ENVIRONMENT: ""}) is None
    assert killpoints.ARMED is None  # what freeing.py tests at each end: nothing, outside a test's child


@pytest.mark.parametrize("value,point,nth", [("after-free:3", "after-free", 3), ("before-free", "before-free", 1),
                                             ("after-forget:1", "after-forget", 1)])
def test_a_point_and_the_pass_that_kills_are_read_from_the_variable(value: str, point: str, nth: int) -> None:
    armed = armed_from({ENVIRONMENT: value})
    assert armed is not None and (armed.point, armed.nth) == (point, nth)


@pytest.mark.parametrize("value,words", [("after-fre:1", "no kill point 'after-fre'"),
                                         ("after-free:x", "a whole number"), ("after-free:0", "counts from 1")])
def test_a_malformed_variable_is_refused_rather_than_arming_nothing(value: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        armed_from({ENVIRONMENT: value})


def test_other_points_pass_freely() -> None:
    point = KillPoint("after-free", 1)
    point.passing("before-free")
    point.passing("after-forget")  # still alive: neither is the armed one


SCRIPT = """
from landlord.grantor.killpoints import ARMED
ARMED.passing("after-free")
print("passed once", flush=True)
ARMED.passing("before-free")
ARMED.passing("after-free")
print("passed twice", flush=True)
"""


def test_a_process_armed_for_the_second_pass_kills_itself_there_and_says_so() -> None:
    child = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=30,
                           env={**os.environ, ENVIRONMENT: "after-free:2"})
    assert child.returncode == -signal.SIGKILL
    assert child.stdout == "passed once\n"
    assert child.stderr == "kill point after-free reached (pass 2)\n"
