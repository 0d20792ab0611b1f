from __future__ import annotations

import threading

import pytest

from landlord import get_call_timeout, proxies, set_call_timeout

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
