"""landlord.transport.clients: who a remote caller is counted as."""

from __future__ import annotations

from typing import Any

import Pyro5.callcontext
import pytest

from landlord.transport.clients import IN_PROCESS, UNIX_SOCKET, client_host, client_of_address, client_of_call


@pytest.mark.parametrize("peer, client", [
    (("10.0.0.7", 40000), "10.0.0.7"),
    (("::ffff:10.0.0.7", 40000, 0, 0), "10.0.0.7"),  # IPv4 through a dual-stack socket: the same client
    (("2001:db8:1:2:aaaa::1", 40000, 0, 0), "2001:db8:1:2::/64"),  # one host may hold the whole /64
    (("2001:db8:1:2:bbbb::9", 40000, 0, 0), "2001:db8:1:2::/64"),
    (("fe80::1%eth0", 40000, 0, 2), "fe80::/64"),
    (("::1", 40000, 0, 0), "::1"),
    ("", UNIX_SOCKET),  # Pyro5's peer on a Unix socket: no address to tell them apart
    (b"\0abstract", UNIX_SOCKET),
    (None, IN_PROCESS),
])
def test_a_client_is_the_host_its_connection_comes_from(peer: Any, client: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    assert client_of_address(peer) == client
    monkeypatch.setattr(Pyro5.callcontext.current_context, "client_sock_addr", peer, raising=False)
    assert client_of_call() == client


def test_a_host_that_is_no_address_is_counted_by_its_name() -> None:
    assert client_host("h1.example.org") == "h1.example.org"
    assert client_host("127.0.0.1") == "127.0.0.1"
