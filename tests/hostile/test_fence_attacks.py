"""Hostile callers against a served fence (landlord.RemoteFence on the guarded server, issue 25, item 2):
nobody's write waits on them, and nothing they send moves the fence further than a token could.

A fence in its own process (``tests/processes/served_fence.py``) has accepted a holder's token; a
canary writer checks that token every 0.05 s throughout. A stranger in another process
(``tests/processes/fence_stranger.py``) floods it from many threads with what is not a token (bools,
floats, strings, bytes, containers, negative ints, ints past ``MAX_TOKEN``) and with older tokens, over
serpent and json; this process adds ints too large to parse, and a connection flood. Then:

- every one of the canary's checks was accepted, the worst within :data:`WORST_CHECK`;
- every call of the stranger's was refused (``StaleTokenError``, ``TypeError``, ``ValueError``, or
  refused as malformed), and the fence's highest token is still the canary's: it counted the
  canary's checks accepted, the stranger's old tokens refused, the rest invalid;
- its memory stayed bounded.

What no fence can refuse, a token above the highest, is shown last: it moves the fence as a holder's
would (serve a fence over two-way TLS where strangers can connect).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

import Pyro5.api
import Pyro5.errors
import pytest
from attacks import Canary, memory_of
from conftest import PROCESSES, ChildProcess

import landlord
from landlord import StaleTokenError
from landlord.fence import MAX_TOKEN

pytestmark = pytest.mark.slow

TOKEN = 1000  # the canary holder's token, accepted before the attacks
WORST_CHECK = 0.25  # seconds: the most one of the canary's checks may take during an attack
FLOOD_SECONDS = 3.0
STRANGER_THREADS = 8
PEAK_MEMORY = 256 * 1024 * 1024  # what the attacks may make the fence's process take at its worst
KEPT_MEMORY = 64 * 1024 * 1024


class Writer:
    """What the canary renews, as a writer: each "renewal" is a check of the holder's token, on a proxy
    of the canary's own thread (made on first use there)."""

    def __init__(self, uri: str, token: int) -> None:
        self.uri, self.token = uri, token
        self._proxy: Pyro5.api.Proxy | None = None

    def renew(self, term: float) -> float:
        if self._proxy is None:
            self._proxy = Pyro5.api.Proxy(self.uri)
        assert self._proxy.check(self.token) == self.token
        return term


@pytest.fixture
def fence() -> Iterator[tuple[ChildProcess, str]]:
    process, uri = landlord.testing.start_server(str(PROCESSES / "served_fence.py"))
    with process:
        with Pyro5.api.Proxy(uri) as proxy:
            assert proxy.check(TOKEN) == TOKEN  # the holder's first write
        yield process, uri


@contextlib.contextmanager
def written_throughout(process: ChildProcess, uri: str) -> Iterator[Canary]:
    """The canary writing throughout the block; checked after it, with the fence's memory."""
    resident, _ = memory_of(process.pid)
    canary = Canary(Writer(uri, TOKEN), every=0.05).start()  # type: ignore[arg-type]  (a writer, not a lease)
    try:
        canary.renew_more(3)
        yield canary
        canary.renew_more(3)  # and it writes on
    finally:
        canary.stop()
    canary.check(WORST_CHECK)
    now, peak = memory_of(process.pid)
    print(f"fence: memory {resident / 2**20:.1f} MiB before, {now / 2**20:.1f} after, peak {peak / 2**20:.1f}")
    assert peak - resident < PEAK_MEMORY and now - resident < KEPT_MEMORY


def _refused(call: Any) -> str:
    """What refused ``call()``: it must be refused, one way or another."""
    try:
        call()
    except StaleTokenError:
        return "stale"
    except (TypeError, ValueError):
        return "invalid"
    except (Pyro5.errors.SerializeError, Pyro5.errors.ProtocolError):
        return "malformed"  # refused by the guarded server before the fence saw it
    raise AssertionError(f"{call} was accepted")


def _counts(process: ChildProcess) -> tuple[int, int, int, int]:
    """The fence's counts and highest token, as it printed them on SIGTERM."""
    process.stop()
    [(_, found)] = process.matches(r"^counts (\d+) (\d+) (\d+) highest (\d+)$")
    accepted, refused, invalid, highest = (int(value) for value in found.groups())
    return accepted, refused, invalid, highest


def test_a_strangers_flood_of_what_is_not_a_token_moves_nothing_and_holds_no_writer_up(
        fence: tuple[ChildProcess, str]) -> None:
    process, uri = fence
    stranger = ChildProcess(str(PROCESSES / "fence_stranger.py"), uri, str(FLOOD_SECONDS), str(STRANGER_THREADS),
                            str(TOKEN), stdin=True, name="stranger")
    with stranger, written_throughout(process, uri) as canary:
        stranger.wait_for(r"^ready$")
        stranger.send("go")
        report = stranger.wait_for(r"^stranger (\d+) calls, (\d+) stale, (\d+) invalid, (\d+) other$",
                                   timeout=FLOOD_SECONDS + 30)
        print(report.group(0))
        calls, stale, invalid, other = (int(value) for value in report.groups())
        assert other == 0, stranger.tail()
        assert calls == stale + invalid and calls > 1000, report.group(0)  # a flood, all of it refused
        with Pyro5.api.Proxy(uri) as proxy:
            assert proxy.highest() == TOKEN
    accepted, refused, counted_invalid, highest = _counts(process)
    assert highest == TOKEN
    assert accepted == len(canary.took) + 1  # the canary's checks, and the holder's first: nothing else
    assert refused == stale and counted_invalid <= invalid  # what json cannot carry never left the stranger


def test_ints_too_large_to_parse_and_a_connection_flood_are_refused_and_hold_no_writer_up(
        fence: tuple[ChildProcess, str]) -> None:
    process, uri = fence
    limit = sys.get_int_max_str_digits()
    with written_throughout(process, uri):
        sys.set_int_max_str_digits(0)  # so that this process can send them; the fence's process parses as usual
        try:
            with Pyro5.api.Proxy(uri) as proxy:
                outcomes = set()
                for huge in (10**5000, -(10**5000), 10**60000, 2**(2**16)):
                    outcomes.add(_refused(lambda huge=huge: proxy.check(huge)))
                    proxy._pyroRelease()  # the server closes a connection that sent a malformed message
                proxy._pyroSerializer = "json"
                outcomes.add(_refused(lambda: proxy.check(10**5000)))
        finally:
            sys.set_int_max_str_digits(limit)
        assert outcomes == {"malformed"}
        with contextlib.ExitStack() as stack:  # 200 connections at once, one refused call each
            proxies = [stack.enter_context(Pyro5.api.Proxy(uri)) for _ in range(200)]
            assert {_refused(lambda proxy=proxy: proxy.check(MAX_TOKEN + 1)) for proxy in proxies} == {"invalid"}
            assert {_refused(lambda proxy=proxy: proxy.check(TOKEN - 1)) for proxy in proxies} == {"stale"}
        with Pyro5.api.Proxy(uri) as proxy:
            assert proxy.highest() == TOKEN and proxy.check(TOKEN) == TOKEN
    assert _counts(process)[1:] == (200, 200, TOKEN)


def test_a_token_above_the_highest_moves_the_fence_as_a_holders_would(fence: tuple[ChildProcess, str]) -> None:
    # what a fence cannot tell: a token nobody was granted. A stranger that can reach it can refuse every
    # real holder from then on; that is why a fence strangers can reach is served over two-way TLS
    process, uri = fence
    with Pyro5.api.Proxy(uri) as proxy:
        assert proxy.check(MAX_TOKEN) == MAX_TOKEN
        with pytest.raises(StaleTokenError):
            proxy.check(TOKEN)
    assert _counts(process)[3] == MAX_TOKEN
