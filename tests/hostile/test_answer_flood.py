"""A stranger filling ``lookup_all``'s answer past the cap of a message, within its quotas.

The audit of issue 23: one client registered 600 items of 30,000 characters (its
default quotas allow 1,000 of 32 KiB); ``lookup_all(ServiceTemplate(), 1000)``
then made an 18 MB answer, the server refused to send it (``message too
large``), the caller's connection closed, and a ``LookupCache`` of every
service never became ready. Now every answer stays within
:data:`lookup.service.quotas.ANSWER_BYTES`, and says where the rest is: here
against ``python -m lookup serve``, with a canary renewing a 2 s lease
throughout and the server's memory checked (tests/hostile/targets.py's ``watched``).
"""

from __future__ import annotations

import time

import pytest
from targets import serving, watched

from lookup import Comment, LookupCache, ServiceItem, ServiceTemplate, locate
from lookup.discovery.unicast import lookup_uri

pytestmark = pytest.mark.slow

ITEMS = 600           # the audit's: within one client's default quotas
CHARACTERS = 30_000


def test_an_answer_too_large_for_a_message_comes_in_parts_and_a_cache_of_everything_holds_it_all(
        request: pytest.FixtureRequest) -> None:
    with serving("lookup", request) as target, watched(target), locate(port=target.port) as lookup:
        with locate(port=target.port) as stranger:
            for number in range(ITEMS):
                stranger.register(ServiceItem(None, f"PYRO:x@127.0.0.1:{number + 1}", ["x.Big"],
                                              [Comment("c" * CHARACTERS)]), 300)
        started = time.monotonic()
        first = lookup.lookup_all(ServiceTemplate(), 1000)  # was: ConnectionClosedError
        took = time.monotonic() - started
        assert first.total == ITEMS + 1 and 0 < len(first.items) < ITEMS and first.cursor is not None
        parts, found = [first], [item.service_id for item in first.items]
        while parts[-1].cursor is not None:
            parts.append(lookup.lookup_all(ServiceTemplate(), 1000, parts[-1].cursor))
            found += [item.service_id for item in parts[-1].items]
        every = time.monotonic() - started
        assert len(found) == len(set(found)) == ITEMS + 1
        started = time.monotonic()
        with LookupCache(lookup_uri("127.0.0.1", target.port), ServiceTemplate()) as cache:
            assert cache.wait_ready(60), "the cache of every service never became ready"
            ready = time.monotonic() - started
            assert len(cache.items()) == ITEMS + 1
        print(f"first part: {len(first.items)} items in {took * 1000:.0f} ms; all {ITEMS + 1} in "
              f"{len(parts)} parts, {every * 1000:.0f} ms; a cache of everything ready in {ready * 1000:.0f} ms")
    assert not [line for line in target.process.output if "message too large" in line]
