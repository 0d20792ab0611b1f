"""Durations: units, the two special values, and the one validation rule.

Every duration in landlord is seconds as a float. ``FOREVER`` is infinity and
``ANY`` (-1.0) lets the grantor choose.
"""

from __future__ import annotations

import math
import numbers

__all__ = ["ANY", "FOREVER", "check_duration"]

FOREVER: float = math.inf  #: a duration without end (``math.inf``)
ANY: float = -1.0  #: asks the grantor to choose the duration


def check_duration(duration: object, *, name: str = "duration", allow_any: bool = True) -> float:
    """Return ``duration`` as a float, or raise before anything changes.

    Args:
        duration: seconds; ``FOREVER`` (``math.inf``) or, if ``allow_any``, ``ANY``.
        name: what to call the value in the error message.
        allow_any: whether ``ANY`` (-1.0) is acceptable.

    An integer too big for a float counts as ``FOREVER`` (positive) or as
    negative, as its float literal would.

    Raises:
        ValueError: for a non-number (including ``bool``), NaN, ``-inf``, or a
            negative number other than ``ANY``.
    """
    if type(duration) is float and duration >= 0.0:  # the common case first: on every grant and renewal (NaN fails)
        return duration
    kind = type(duration)
    if kind is not float and kind is not int:
        if kind is bool or not isinstance(duration, numbers.Real):
            raise ValueError(f"{name} must be a number of seconds, got {kind.__name__} {duration!r:.50}")
    try:
        value = float(duration)  # type: ignore[arg-type]
    except OverflowError:  # an int beyond a float's range: as 1e400 reads, an infinity
        value = math.inf if duration > 0 else -math.inf  # type: ignore[operator]
    if math.isnan(value):
        raise ValueError(f"{name} must be a number of seconds, got NaN")
    if value == ANY and allow_any:
        return ANY
    if value < 0:
        hint = " (ANY is -1.0)" if allow_any else ""
        raise ValueError(f"{name} must not be negative{hint}, got {value!r}")
    return value
