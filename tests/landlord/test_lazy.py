"""landlord.lazy: a package's names that load on first use (the facades' tests are test_facade.py)."""

from __future__ import annotations

from typing import Any

import pytest

from landlord.lazy import lazy_names


def test_a_lazy_name_loads_its_module_once_and_is_kept() -> None:
    namespace: dict[str, Any] = {}
    getattr_, dir_ = lazy_names("landlord", namespace, {"LeaseStore": "grantor.store"})
    from landlord.grantor.store import LeaseStore

    assert getattr_("LeaseStore") is LeaseStore and namespace["LeaseStore"] is LeaseStore
    assert "LeaseStore" in dir_()


def test_a_submodule_loads_and_a_name_that_is_neither_is_an_attribute_error() -> None:
    getattr_, _ = lazy_names("landlord", {}, {})
    assert getattr_("wire").__name__ == "landlord.wire"
    with pytest.raises(AttributeError, match="module 'landlord' has no attribute 'nothing_here'"):
        getattr_("nothing_here")
