"""The regular expressions ``ns.list(regex=...)`` and ``ns.remove(regex=...)`` accept: :func:`safe_pattern`.

Python's ``re`` backtracks: ``(a+)+$`` against forty ``a`` and a ``b`` runs
for hours, and a running match cannot be interrupted (it holds the GIL). So a
pattern is refused before it runs when it could backtrack for long:

- a quantifier on a group that holds a quantifier or an alternation
  (``(a+)+``, ``(a|aa)*``): exponential;
- quantifiers whose repeats multiply past :data:`MAX_STEPS`: each counts
  its upper bound (``?`` two, ``{m,n}`` n, ``*``, ``+`` and ``{m,}``
  :data:`MAX_MATCHED_NAME`), so ``.*foo.*`` is taken and ``a*a*a*b`` (a
  polynomial of degree three on a long name) or ``a{0,64}a{0,64}a*a*b`` is not;
- a backreference, a lookaround, or a pattern longer than :data:`MAX_PATTERN_LENGTH`.

What is left matches a name of at most :data:`MAX_MATCHED_NAME` characters
in a few milliseconds (``.*.*b`` against 1,024 ``a``: 12 ms, measured); the
name server face never matches a longer name and bounds the time one
listing may take.
"""

from __future__ import annotations

import re

__all__ = ["safe_pattern", "UnsafePatternError", "MAX_PATTERN_LENGTH", "MAX_STEPS", "MAX_MATCHED_NAME"]

MAX_PATTERN_LENGTH = 256
MAX_MATCHED_NAME = 1024  # a longer name is never matched against a pattern
MAX_STEPS = MAX_MATCHED_NAME ** 2  # the product of the quantifiers' repeats: ".*foo.*" on the longest name

_REPEAT = re.compile(r"\{(\d*)(,?)(\d*)\}")


class UnsafePatternError(ValueError):
    """A pattern refused because matching it could take too long; says why."""


def safe_pattern(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled, if it cannot backtrack for long (see the module docstring).

    Args:
        pattern: a Python regular expression.

    Raises:
        TypeError: ``pattern`` is not a str.
        UnsafePatternError: it could backtrack for long, or is too long.
        re.error: it is no regular expression.
    """
    if not isinstance(pattern, str):
        raise TypeError(f"regex must be a str, got {type(pattern).__name__}")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise UnsafePatternError(f"regex longer than {MAX_PATTERN_LENGTH} characters")
    compiled = re.compile(pattern)  # a pattern that is no regex fails first, as with Pyro5
    _Scan(pattern).check()
    return compiled


class _Scan:
    """One left-to-right pass over a pattern: groups, quantifiers, escapes and classes."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.steps = 1  # the product of the quantifiers' upper bounds
        # per open group: whether it holds a quantifier or an alternation
        self.groups: list[bool] = []
        self.last_group_risky = False  # the group just closed held one (a quantifier after it would nest)

    def check(self) -> None:
        i = 0
        while i < len(self.pattern):
            i = self._step(i)
        if self.steps > MAX_STEPS:
            raise UnsafePatternError(f"regex whose quantifiers could repeat {self.steps:.3g} times on a long name, "
                                     f"more than {MAX_STEPS:.3g}")

    def _step(self, i: int) -> int:
        """Scan from ``i``; the index after what was scanned."""
        char = self.pattern[i]
        if char == "\\":
            if i + 1 < len(self.pattern) and self.pattern[i + 1].isdigit():
                raise UnsafePatternError("regex with a backreference")
            self.last_group_risky = False
            return i + 2
        if char == "[":
            self.last_group_risky = False
            return _class_end(self.pattern, i)
        if char == "(":
            if self.pattern.startswith(("(?=", "(?!", "(?<=", "(?<!", "(?P="), i):
                raise UnsafePatternError("regex with a lookaround or a backreference")
            self.groups.append(False)
            self.last_group_risky = False
            return i + 1
        if char == ")":
            self.last_group_risky = self.groups.pop() if self.groups else False
            if self.last_group_risky:  # what a group holds, the group around it holds too
                self._mark_risky()
            return i + 1
        if char == "|":
            self._mark_risky()
            return i + 1
        return self._quantifier(i)

    def _quantifier(self, i: int) -> int:
        char = self.pattern[i]
        end, repeats = i + 1, {"*": MAX_MATCHED_NAME, "+": MAX_MATCHED_NAME, "?": 2}.get(char, 1)
        if char == "{":
            repeat = _REPEAT.match(self.pattern, i)
            if repeat is None:  # a literal brace
                self.last_group_risky = False
                return i + 1
            low, comma, high = repeat.groups()
            upper = high if comma else low
            repeats = min(int(upper), MAX_MATCHED_NAME) if upper else MAX_MATCHED_NAME
            end = repeat.end()
        elif char not in "*+?" or char == "?" and (i == 0 or self.pattern[i - 1] in "*+?}("):
            self.last_group_risky = False  # a literal; or "?" making a quantifier lazy, or opening "(?"
            return i + 1
        if self.last_group_risky:
            raise UnsafePatternError("regex with a quantified group that holds a quantifier or an alternation")
        self.steps *= max(1, repeats)
        self._mark_risky()
        self.last_group_risky = False
        return end

    def _mark_risky(self) -> None:
        if self.groups:
            self.groups[-1] = True


def _class_end(pattern: str, start: int) -> int:
    """The index after the character class opening at ``start``."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":  # a "]" first is a literal
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i + 1
