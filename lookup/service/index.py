"""Which registrations a template could match: :class:`ServiceIndex`.

The index only narrows the candidates down; :meth:`ServiceTemplate.matches`
still decides on every one, so a lookup answers exactly what a scan of every
registration would, in the same order. It keeps no items and no leases: the
registry (:mod:`lookup.service.registry`) owns those and files each item here.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable
from typing import Any, TypeVar

from ..item import ServiceItem, ServiceTemplate

__all__ = ["ServiceIndex", "value_key", "SORT_BELOW"]

log = logging.getLogger("lookup.index")  # its name before it moved; logs and tests know it by it

# Candidates under this share of all registrations are sorted into registration
# order; more are picked out by one pass over the registrations in order, which
# is then cheaper than sorting.
SORT_BELOW = 0.25

_BOOL = "lookup.service:bool"  # tags a bool's index key: True must not find 1, nor 1 find True

R = TypeVar("R")


def value_key(value: Any) -> Any:
    """The index key of a field value, or ``None`` for a value the index does not key.

    Only values of exactly ``str``, ``int``, ``float`` or ``bool`` are keyed.
    For them :func:`~lookup.entry.wire_equal` is ``==``, except that a bool
    equals only a bool: hence its tag. Numbers that are ``==`` hash alike
    (``3`` and ``3.0``), so a dict finds every value that could be equal.
    """
    kind = type(value)
    if kind is str or kind is int or kind is float:
        return value
    if kind is bool:
        return (_BOOL, value)
    return None


class ServiceIndex:
    """Which registrations a template could match: it narrows the candidates, it never decides.

    Its owner files every registration it stores (live, or expired but not
    yet freed) with :meth:`put` and unfiles it with :meth:`remove`; the index
    is not thread-safe, so its owner calls it under one lock. For each
    registration it files the service id under

    - each of its type names (a template's types must all be the item's);
    - each entry class name in the lineage of each of its entries (a template
      entry matches entries of its class or a subclass, by lineage name);
    - ``(class name, field, key)`` for each such class name and each field
      whose value has a key (see :func:`value_key`), and under
      ``(class name, field)`` in :attr:`unkeyed` for a field with any other
      non-``None`` value (a list, a dict, an object of another type): those
      are candidates for any wanted value of that field, since only
      :func:`~lookup.entry.wire_equal` can say.

    :meth:`candidates` intersects the sets a template's types and non-``None``
    field values pick out. The index reads an item when it is filed: items are
    treated as immutable once registered (as they are when they arrive over
    the wire); a changed item is filed again.

    Args:
        sort_below: candidates under this share of all registrations are
            sorted into registration order by :meth:`in_order`; more are
            picked out by a pass over the registrations (see :data:`SORT_BELOW`).
    """

    __slots__ = ("by_type", "by_class", "by_value", "unkeyed", "position", "sort_below", "_filed", "_positions")

    def __init__(self, *, sort_below: float = SORT_BELOW) -> None:
        self.by_type: dict[str, set[str]] = {}
        self.by_class: dict[str, set[str]] = {}
        self.by_value: dict[tuple[str, str, Any], set[str]] = {}
        self.unkeyed: dict[tuple[str, str], set[str]] = {}
        self.position: dict[str, int] = {}  # service id -> its place in the order of filing
        self.sort_below = sort_below
        self._filed: dict[str, list[tuple[dict[Any, set[str]], Any]]] = {}  # service id -> where it is filed
        self._positions = itertools.count()

    def __len__(self) -> int:
        return len(self.position)

    def put(self, service_id: str, item: ServiceItem) -> None:
        """File ``item`` under ``service_id``, replacing what was filed there (its place in the order kept)."""
        if service_id in self.position:
            self._unfile(service_id)
        else:
            self.position[service_id] = next(self._positions)
        filed: list[tuple[dict[Any, set[str]], Any]] = []
        for name in item.types:
            filed.append((self.by_type, name))
        for entry in item.attributes:
            fields = [(field, value, value_key(value)) for field, value in entry._entry_fields().items()
                      if value is not None]
            for class_name in entry._entry_lineage:
                filed.append((self.by_class, class_name))
                for field, _value, key in fields:
                    if key is None:
                        filed.append((self.unkeyed, (class_name, field)))
                    else:
                        filed.append((self.by_value, (class_name, field, key)))
        for table, key in filed:
            ids = table.get(key)
            if ids is None:
                table[key] = {service_id}
            else:
                ids.add(service_id)
        self._filed[service_id] = filed

    def remove(self, service_id: str) -> None:
        """Forget ``service_id`` (nothing happens if it is not filed)."""
        if self.position.pop(service_id, None) is not None:
            self._unfile(service_id)

    def _unfile(self, service_id: str) -> None:
        for table, key in self._filed.pop(service_id, ()):
            ids = table.get(key)
            if ids is not None:
                ids.discard(service_id)
                if not ids:
                    del table[key]

    def candidates(self, template: ServiceTemplate) -> set[str] | None:
        """The ids of every registration ``template`` could match (a superset of
        those it does), or ``None`` when the template narrows nothing down
        (no types, no entries): then every registration is a candidate.
        """
        sets: list[set[str]] = []
        for name in template.types:
            ids = self.by_type.get(name)
            if not ids:
                return set()
            sets.append(ids)
        for wanted in template.attributes:
            class_name = wanted._entry_class_name
            ids = self.by_class.get(class_name)
            if not ids:
                return set()
            sets.append(ids)
            for field, value in wanted._entry_fields().items():
                if value is None:
                    continue  # a wildcard
                key = value_key(value)
                if key is None:
                    continue  # not keyed: the class alone narrows, matches() decides
                hits = self.by_value.get((class_name, field, key))
                odd = self.unkeyed.get((class_name, field))
                if odd:
                    sets.append(hits | odd if hits else odd)
                elif hits:
                    sets.append(hits)
                else:
                    return set()
        if not sets:
            return None
        sets.sort(key=len)
        return sets[0].intersection(*sets[1:])

    def decides(self, template: ServiceTemplate) -> bool:
        """Whether every candidate of ``template`` is a match (of its live registrations), so that
        ``template.matches`` need not be asked: when each of its entries wants at most one field,
        with a value the index keys, and no value the index does not key is filed for that field.

        Its types are all an item's when it is filed under each; an entry with no field wanted
        is matched by any entry of its lineage; with one, by one whose value has the same key,
        which for keyed values is :func:`~lookup.entry.wire_equal` (a NaN excepted); and each
        entry of a template needs its own match only. Two fields wanted may be had by two entries.
        """
        for wanted in template.attributes:
            given = [(field, value) for field, value in wanted._entry_fields().items() if value is not None]
            if not given:
                continue
            if len(given) > 1:
                return False
            field, value = given[0]
            if value_key(value) is None or value != value or (wanted._entry_class_name, field) in self.unkeyed:
                return False
        return True

    def in_order(self, template: ServiceTemplate, filed: dict[str, R]) -> Iterable[R]:
        """The values of ``filed`` (by service id, in the order they were
        filed here) whose ids ``template`` could match, in that order.

        ``filed`` holds exactly the ids filed here, in their order of filing
        (a dict keeps its insertion order; an id filed again keeps its place
        in both). Few candidates are sorted into order; many are picked out
        by one pass over ``filed``: the same answer either way.
        """
        ids = self.candidates(template)
        if ids is None:
            return filed.values()
        if len(ids) >= self.sort_below * len(filed):  # many of them: one pass in order beats sorting
            return [value for service_id, value in filed.items() if service_id in ids]
        return [filed[service_id] for service_id in sorted(ids, key=self.position.__getitem__)]
