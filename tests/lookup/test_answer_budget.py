"""What one answer of a lookup service may carry (lookup.service.quotas.ANSWER_BYTES), and the rest
of a long one, asked for after its cursor.

An audit registered 600 items of 30,000 characters (within one client's quotas): ``lookup_all``
made an 18 MB answer, past the 16 MiB cap of a message; the connection closed on the caller, and
no LookupCache of every service could take its snapshot. Here the rule over a service in process,
and the worst characters through every serializer; tests/hostile/test_answer_flood.py runs the
audit's attack on a real server.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import Pyro5.serializers
import pytest

from landlord import FakeClock, LeaseDurationPolicy
from landlord.serving import MAX_MESSAGE_SIZE
from lookup import Comment, Expiry, ServiceItem, ServiceMatches, ServiceTemplate
from lookup.client.cachepeer import whole_snapshot
from lookup.service.lookupservice import LookupService
from lookup.service.quotas import ANSWER_BYTES, NAME_BYTES, answer_bytes, fitting
from lookup.service.server import ServedLookupService
from lookup.wire import PACKED_MATCHES_CLASS, matches_from_dict, matches_to_dict, packed_matches_from_dict

LARGE = 30_000  # characters of one item's comment: the audit's


@pytest.fixture
def service(clock: FakeClock) -> Iterator[LookupService]:
    lookup = ServedLookupService(policy=LeaseDurationPolicy(maximum=100, default=30), clock=clock, reaper="lazy")
    yield lookup
    lookup.close()


def large_item(number: int, text: str = "c") -> ServiceItem:
    return ServiceItem(None, f"PYRO:big@127.0.0.1:{number + 1}", ["x.Big"], [Comment(text * LARGE)])


def register_large(service: LookupService, count: int) -> list[Any]:
    return [service.register(large_item(number), 60) for number in range(count)]


def every_part(service: LookupService, template: ServiceTemplate, between: Any = None) -> list[ServiceMatches]:
    """Every part of ``template``'s answer, calling ``between(parts)`` after each but the last."""
    parts = [service.lookup_all(template, 1000)]
    while parts[-1].cursor is not None:
        if between is not None:
            between(parts)
        parts.append(service.lookup_all(template, 1000, parts[-1].cursor))
    return parts


def test_a_long_answer_comes_in_parts_each_within_the_budget_with_every_match_once(service: LookupService) -> None:
    registered = [registration.service_id for registration in register_large(service, 600)]
    parts = every_part(service, ServiceTemplate())
    assert 600 // len(parts[0].items) <= len(parts) < 600  # in parts, not one item at a time
    for part in parts:
        assert part.total == 600  # how many match in all, in every part
        assert sum(answer_bytes(item) for item in part.items) <= ANSWER_BYTES
        assert part.expiries is not None and len(part.expiries) == len(part.items)
    assert [item.service_id for part in parts for item in part.items] == registered  # in registration order
    assert parts[-1].cursor is None


def test_max_matches_leaves_matches_out_with_a_cursor_too_and_zero_asks_only_the_total(
        service: LookupService) -> None:
    registered = [registration.service_id for registration in register_large(service, 5)]
    first = service.lookup_all(ServiceTemplate(), 2)
    assert [item.service_id for item in first.items] == registered[:2] and first.cursor is not None
    rest = service.lookup_all(ServiceTemplate(), 100, first.cursor)
    assert [item.service_id for item in rest.items] == registered[2:] and rest.cursor is None and rest.total == 5
    counted = service.lookup_all(ServiceTemplate(), 0)
    assert counted.items == [] and counted.total == 5 and counted.cursor is None


def test_what_changes_between_parts_is_never_taken_for_another_and_what_stayed_comes_once(
        service: LookupService) -> None:
    registrations = register_large(service, 100)
    added: list[str] = []

    def change(parts: list[ServiceMatches]) -> None:
        if len(parts) == 1:
            registrations[0].lease.cancel()  # given already
            registrations[-1].lease.cancel()  # not given yet
            added.append(service.register(large_item(1000), 60).service_id)
    parts = every_part(service, ServiceTemplate(), change)
    found = [item.service_id for part in parts for item in part.items]
    assert len(found) == len(set(found))
    expected = [registration.service_id for registration in registrations[:-1]] + added
    assert found == expected  # the first came before its end (the cache's events put that right)


def test_an_id_registered_again_between_parts_comes_again_and_a_cursors_own_item_gone_loses_nothing(
        service: LookupService) -> None:
    registrations = register_large(service, 100)
    again: list[str] = []

    def change(parts: list[ServiceMatches]) -> None:
        if len(parts) == 1:
            last_given = parts[0].items[-1].service_id
            [given] = [registration for registration in registrations if registration.service_id == last_given]
            given.lease.cancel()  # the item the cursor points at goes
            first = registrations[0]
            first.lease.cancel()  # and one given already ends and is registered again, under its id
            again.append(service.register(large_item(0).replace(service_id=first.service_id), 60,
                                          first.secret).service_id)
    parts = every_part(service, ServiceTemplate(), change)
    found = [item.service_id for part in parts for item in part.items]
    assert found == [registration.service_id for registration in registrations] + again
    assert found.count(registrations[0].service_id) == 2  # a pager keeping items by id takes it as a change


def test_a_cursor_empty_or_longer_than_a_cursor_may_be_is_refused_by_its_size(service: LookupService) -> None:
    for sized in ("", "x" * 200_000):
        with pytest.raises(ValueError, match="a cursor has 1 to"):
            service.lookup_all(ServiceTemplate(), 1000, sized)


def test_a_cursor_not_of_this_service_is_refused(service: LookupService, clock: FakeClock) -> None:
    register_large(service, 40)
    cursor = service.lookup_all(ServiceTemplate(), 1000).cursor
    assert cursor is not None
    other = LookupService(clock=clock, reaper="lazy")
    try:
        with pytest.raises(ValueError, match="ask again from the start"):
            other.lookup_all(ServiceTemplate(), 1000, cursor)  # another registry: a restart, another term
    finally:
        other.close()
    for malformed in ("nonsense", cursor.split(".")[0] + ".-1", cursor.split(".")[0] + ".\u0663"):
        with pytest.raises(ValueError, match="ask again from the start"):
            service.lookup_all(ServiceTemplate(), 1000, malformed)
    with pytest.raises(TypeError, match="a cursor is a str"):
        service.lookup_all(ServiceTemplate(), 1000, 7)  # type: ignore[arg-type]


@pytest.mark.parametrize("character", ["c", "\x01", "\U000e0001", "\U0001f600", '"', "\\", "\x85", "\u2028"])
def test_the_largest_answer_of_any_characters_fits_a_message_in_every_serializer_and_form(character: str) -> None:
    """The budget's reason: each character measured is at most 10 bytes on any wire (serpent's
    ``\\U000e0001``), so 1 MiB of items is at most 10 MiB, under the 16 MiB cap."""
    items = [large_item(number, character).replace(service_id=f"{number:08x}-0000-4000-8000-000000000000")
             for number in range(600)]
    count = fitting(answer_bytes(item) for item in items)
    answer = ServiceMatches(items[:count], 600, [Expiry(10.0, 20.0)] * count, "a1b2c3d4.12345")
    for name, serializer in Pyro5.serializers.serializers.items():
        if name == "marshal":  # no classes: never a lookup service's wire
            continue
        for form in (answer, matches_to_dict(answer)):
            size = len(serializer.dumps(form))
            assert size < 0.65 * MAX_MESSAGE_SIZE, f"{name}: {size} bytes of {count} items of {character!r}"


def test_the_cursor_crosses_both_forms_and_a_reader_before_cursors_reads_the_rest_as_before() -> None:
    answer = ServiceMatches([large_item(1).replace(service_id="a" * 8)], 3, None, "a1b2c3d4.9")
    packed = Pyro5.serializers.serializers["serpent"].loads(Pyro5.serializers.serializers["serpent"].dumps(answer))
    assert packed.cursor == "a1b2c3d4.9" and packed.total == 3
    assert matches_from_dict("lookup.ServiceMatches", matches_to_dict(answer)).cursor == "a1b2c3d4.9"
    old = matches_to_dict(ServiceMatches(answer.items, 3))
    assert "cursor" not in old and matches_from_dict("lookup.ServiceMatches", old).cursor is None
    with pytest.raises(TypeError, match="malformed lookup.PackedMatches: a cursor is a str"):
        packed_matches_from_dict(PACKED_MATCHES_CLASS, {"total": 0, "table": "{}", "values": [], "cursor": 5})
    with pytest.raises(ValueError, match="a cursor has 1 to 64 characters"):
        ServiceMatches([], 0, None, "x" * 65)


class PagedLookup:
    """A lookup service's ``lookup_all`` as a fake: ``pages`` in turn, the cursor each asked after recorded."""

    def __init__(self, pages: list[ServiceMatches]) -> None:
        self.pages = pages
        self.asked: list[tuple[int, str | None]] = []

    def lookup_all(self, template: ServiceTemplate, max_matches: int, after: str | None = None) -> ServiceMatches:
        self.asked.append((max_matches, after))
        return self.pages[len(self.asked) - 1]


def test_the_caches_snapshot_asks_for_the_rest_until_nothing_is_left_out() -> None:
    items = [large_item(number).replace(service_id=f"{number:08x}") for number in range(5)]
    expiry = Expiry(5.0, 10.0)
    lookup = PagedLookup([ServiceMatches(items[:2], 5, [expiry, expiry], "e.2"),
                          ServiceMatches(items[2:4], 5, None, "e.4"),  # a part without expiries
                          ServiceMatches(items[4:], 5, [expiry])])
    snapshot = whole_snapshot(lookup, ServiceTemplate(), FakeClock())  # no time passes between the parts
    assert snapshot.items == items and snapshot.total == 5
    assert snapshot.expiries == [expiry, expiry, None, None, expiry]
    assert [after for _, after in lookup.asked] == [None, "e.2", "e.4"]
    assert [asked for asked, _ in lookup.asked] == [100_000, 99_998, 99_996]
    stuck = PagedLookup([ServiceMatches(items[:1], 5, None, "e.1"), ServiceMatches([], 5, None, "e.1")])
    assert whole_snapshot(stuck, ServiceTemplate()).items == items[:1]  # a part of nothing ends it


def test_the_caches_snapshot_counts_each_parts_expiries_from_the_last_parts_arrival(clock: FakeClock) -> None:
    items = [large_item(number).replace(service_id=f"{number:08x}") for number in range(3)]
    pages = [ServiceMatches(items[:1], 3, [Expiry(5.0, 10.0)], "e.1"),
             ServiceMatches(items[1:2], 3, [Expiry(5.0, 10.0)], "e.2"),
             ServiceMatches(items[2:], 3, [Expiry(0.2, 10.0)])]

    class Slow(PagedLookup):
        def lookup_all(self, template: ServiceTemplate, max_matches: int, after: str | None = None) -> ServiceMatches:
            if after is not None:
                clock.advance(0.3)  # each further part takes its time to come
            return super().lookup_all(template, max_matches, after)

    snapshot = whole_snapshot(Slow(pages), ServiceTemplate(), clock)
    assert snapshot.expiries == [Expiry(pytest.approx(4.4), 10.0), Expiry(pytest.approx(4.7), 10.0), Expiry(0.2, 10.0)]


def test_the_lists_of_names_values_and_rows_are_cut_to_the_budget(service: ServedLookupService) -> None:
    long_names = [f"x.n{number:04d}" + "n" * 249 for number in range(4096)]
    for start in range(0, len(long_names), 256):
        service.register(ServiceItem(None, "PYRO:t@127.0.0.1:9", long_names[start:start + 256], []), 60)
    types = service.service_types(ServiceTemplate())
    assert types == long_names[:len(types)] and len(types) < len(long_names)
    assert sum(len(name) + NAME_BYTES for name in types) <= ANSWER_BYTES
    assert service.service_types(ServiceTemplate(), "x.n4095") == ["x.n4095" + "n" * 249]  # a prefix finds the rest
    comments = [f"{number:02d}" + "c" * LARGE for number in range(60)]
    for number, comment in enumerate(comments):
        service.register(ServiceItem(None, f"PYRO:big@127.0.0.1:{number + 1}", ["x.Big"], [Comment(comment)]), 60)
    values = service.field_values(ServiceTemplate(attributes=[Comment()]), 0, "comment")
    assert values == comments[:len(values)] and 0 < len(values) < 60
    rows, total = service.registrations_table()
    assert total == 16 + 60 and len(rows) < total
