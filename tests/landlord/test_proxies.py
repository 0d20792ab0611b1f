from __future__ import annotations

import threading

import pytest

from landlord import get_call_timeout, set_call_timeout
from landlord.transport import proxies

URI = "PYRO:obj@127.0.0.1:1"


def test_one_proxy_per_thread_and_uri() -> None:
    here = proxies.proxy_for(URI)
    assert proxies.proxy_for(URI) is here
    assert proxies.proxy_for("PYRO:other@127.0.0.1:1") is not here
    elsewhere: list = []
    thread = threading.Thread(target=lambda: elsewhere.append(proxies.proxy_for(URI)))
    thread.start()
    thread.join()
    assert elsewhere[0] is not here


def test_discard_forgets_the_proxy() -> None:
    first = proxies.proxy_for(URI)
    proxies.discard(URI)
    assert proxies.proxy_for(URI) is not first
    proxies.discard("PYRO:never@127.0.0.1:1")  # nothing to forget: no error


def test_call_timeout_applies_to_existing_proxies() -> None:
    original = get_call_timeout()
    assert original == 30.0  # never Pyro5's default of no timeout
    proxy = proxies.proxy_for(URI)
    try:
        set_call_timeout(2.5)
        assert proxies.proxy_for(URI)._pyroTimeout == 2.5 and get_call_timeout() == 2.5
        set_call_timeout(None)
        assert proxies.proxy_for(URI) is proxy and proxy._pyroTimeout is None
    finally:
        set_call_timeout(original)


@pytest.mark.parametrize("bad", [0, -1, "5", True, float("nan")])
def test_bad_timeouts(bad: object) -> None:
    with pytest.raises(ValueError):
        set_call_timeout(bad)  # type: ignore[arg-type]
    assert get_call_timeout() == 30.0


def test_timeout_within_bounds_this_threads_calls_and_nests() -> None:
    original = get_call_timeout()
    proxy = proxies.proxy_for(URI)
    with proxies.timeout_within(4.0):
        assert proxies.proxy_for(URI) is proxy and proxy._pyroTimeout == 4.0
        with proxies.timeout_within(9.0):  # looser inside: the tighter bound holds
            assert proxies.proxy_for(URI)._pyroTimeout == 4.0
        with proxies.timeout_within(0.5):
            assert proxies.proxy_for(URI)._pyroTimeout == 0.5
        other: list = []
        thread = threading.Thread(target=lambda: other.append(proxies.proxy_for(URI)._pyroTimeout))
        thread.start()
        thread.join()
        assert other == [original]  # another thread's calls are not bounded
        with proxies.timeout_within(60.0):
            assert proxies.proxy_for(URI)._pyroTimeout == 4.0
    assert proxies.proxy_for(URI)._pyroTimeout == original  # the bound ends with the block
    try:
        set_call_timeout(None)
        with proxies.timeout_within(3.0):
            assert proxies.proxy_for(URI)._pyroTimeout == 3.0
        set_call_timeout(1.0)
        with proxies.timeout_within(3.0):  # the call timeout is tighter
            assert proxies.proxy_for(URI)._pyroTimeout == 1.0
    finally:
        set_call_timeout(original)


@pytest.mark.parametrize("bad", [0, -1, "5", True, float("nan")])
def test_bad_timeout_bounds(bad: object) -> None:
    with pytest.raises(ValueError):
        with proxies.timeout_within(bad):  # type: ignore[arg-type]
            pass
    assert proxies.proxy_for(URI)._pyroTimeout == get_call_timeout()
