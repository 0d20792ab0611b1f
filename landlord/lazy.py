"""A package facade whose extras load on first use (PEP 562): :func:`lazy_names`.

``landlord`` and ``lookup`` both keep their core eager and their extras lazy:
a name of an extra, or a submodule not imported yet, is imported the first
time it is looked up on the package, then kept in its namespace so that the
lookup runs once.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, namespace: dict[str, Any],
               lazy: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose names in ``lazy`` load on first use.

    Args:
        package: the package's ``__name__``.
        namespace: its ``globals()``, where a loaded name is kept.
        lazy: each lazy name, and the module (relative to the package) that defines it.
    """

    def __getattr__(name: str) -> Any:
        module = lazy.get(name)
        if module is None:  # a submodule not imported yet (``landlord.serving`` after ``import landlord``), or nothing
            try:
                return importlib.import_module(f".{name}", package)
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise  # the submodule is there, but something it imports is not
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(f".{module}", package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(lazy))

    return __getattr__, __dir__
