"""A stranger filling ``lookup_all``'s answer past the cap of a message, within its quotas.

The audit of issue 23: one client registered 600 items of 30,000 characters (its
default quotas allow 1,000 of 32 KiB); ``lookup_all(ServiceTemplate(), 1000)``
then made an 18 MB answer, the server refused to send it (``message too
large``), the caller's connection closed, and a ``LookupCache`` of every
service never became ready. Now every answer stays within
:data:`lookup.service.quotas.ANSWER_BYTES`, and says where the rest is: here
against ``python -m lookup serve``, with a canary renewing a 2 s lease
throughout (its worst renewal under 250 ms, as tests/hostile/test_transport.py's).
"""

from __future__ import annotations

import time

import pytest
from attacks import Canary
from conftest import free_port

import landlord
from lookup import Comment, LookupCache, ServiceItem, ServiceTemplate, locate
from lookup.discovery.unicast import lookup_uri

pytestmark = pytest.mark.slow

WORST_RENEWAL = 0.25  # seconds: the most one of the canary's renewals may take during the attack
ITEMS = 600           # the audit's: within one client's default quotas
CHARACTERS = 30_000


def test_an_answer_too_large_for_a_message_comes_in_parts_and_a_cache_of_everything_holds_it_all() -> None:
    port = free_port()
    process, _ = landlord.testing.start_server("-m", "lookup", "serve", "--port", str(port), "--no-announce")
    with process, locate(port=port) as lookup:
        canary = Canary(lookup.register(ServiceItem(None, "PYRO:canary@127.0.0.1:9", ["quotes.Canary"], []),
                                        2.0).lease).start()
        try:
            canary.renew_more(2)
            with locate(port=port) as stranger:
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
            with LookupCache(lookup_uri("127.0.0.1", port), ServiceTemplate()) as cache:
                assert cache.wait_ready(60), "the cache of every service never became ready"
                ready = time.monotonic() - started
                assert len(cache.items()) == ITEMS + 1
            print(f"first part: {len(first.items)} items in {took * 1000:.0f} ms; all {ITEMS + 1} in "
                  f"{len(parts)} parts, {every * 1000:.0f} ms; a cache of everything ready in {ready * 1000:.0f} ms")
            canary.renew_more(3)
        finally:
            canary.stop()
        canary.check(WORST_RENEWAL)
        assert not [line for line in process.output if "message too large" in line]
