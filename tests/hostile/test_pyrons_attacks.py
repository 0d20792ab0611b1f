"""Hostile callers of ``lookup serve --pyro-ns``: garbage, huge names, a stranger's flood of
``ns.register``, regex bombs. The lookup service's canary renews throughout, a Pyro5 server's name
registered through the name server face stays and resolves, and the service holds no more than
the quota lets one client register.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import Pyro5.api
import Pyro5.errors
import pytest
from attacks import SERPENT, Canary, closed_by_server, greeted, message, serpent_bomb
from conftest import ChildProcess, free_port

import landlord
from lookup import ServiceItem, ServiceTemplate, locate

pytestmark = pytest.mark.slow

REGISTRATIONS = 60  # --registrations-per-client: the stranger's flood stops there
DEAD = "PYRO:filler@127.0.0.1:9"  # no daemon there: what is refused before any lease never needs one


@pytest.fixture
def bridged() -> Iterator[tuple[ChildProcess, int, int]]:
    """A lookup service answering as a Pyro5 name server: (process, lookup port, name server port)."""
    port, ns_port = free_port(), free_port()
    process, _ = landlord.testing.start_server(
        "-m", "lookup", "serve", "--port", str(port), "--no-announce", "--pyro-ns", f"127.0.0.1:{ns_port}",
        "--pyro-ns-ping", "2", "--registrations-per-client", str(REGISTRATIONS),
        pattern=r"lookup service at (?P<uri>PYRO:\S+)")
    with process:
        yield process, port, ns_port


class Echo:
    @Pyro5.api.expose
    def echo(self, text: str) -> str:
        return text


@pytest.fixture
def named_daemon(bridged: tuple[ChildProcess, int, int]) -> Iterator[str]:
    """A Pyro5 daemon in this process whose object is registered as ``canary.echo`` through the ns face."""
    daemon = Pyro5.api.Daemon(host="127.0.0.1")
    uri = daemon.register(Echo())
    loop = threading.Thread(target=daemon.requestLoop, daemon=True)
    loop.start()
    with Pyro5.api.locate_ns("127.0.0.1", bridged[2]) as ns:
        ns.register("canary.echo", uri)
    yield str(uri)
    daemon.shutdown()
    loop.join(10)
    daemon.close()


def test_garbage_huge_names_floods_and_regex_bombs_move_nothing_but_the_strangers_own(
        bridged: tuple[ChildProcess, int, int], named_daemon: str) -> None:
    _, port, ns_port = bridged
    with locate(port=port) as registrar:
        canary = Canary(registrar.register(ServiceItem(None, "PYRO:canary@127.0.0.1:9", ["c.Canary"], []),
                                           2.0).lease).start()
        try:
            canary.renew_more(2)
            _garbage(ns_port)
            with Pyro5.api.locate_ns("127.0.0.1", ns_port) as stranger:
                for servers_own in ("close", "adopt_stored", "held_names"):  # close would stop every name's pings
                    with pytest.raises(AttributeError, match="no exposed attribute or method"):
                        getattr(stranger, servers_own)()
                _huge_names(stranger)
                flooded = _flood(stranger, named_daemon.replace("PYRO:obj_", "PYRO:filler_"))
                _regex_bombs(stranger)
                assert str(stranger.lookup("canary.echo")) == named_daemon
                assert Pyro5.api.Proxy(f"PYRONAME:canary.echo@127.0.0.1:{ns_port}").echo("alive") == "alive"
            canary.renew_more(3)
        finally:
            canary.stop()
        canary.check(0.5)
        # the flood is the stranger's quota, less the canary's two (same host, same client), and no more
        assert flooded == REGISTRATIONS - 2
        assert registrar.lookup_all(ServiceTemplate(), 1000).total <= REGISTRATIONS


def _garbage(ns_port: int) -> None:
    """Bytes that are no Pyro5, and a serpent bomb past a good handshake: each connection closed."""
    with socket.create_connection(("127.0.0.1", ns_port), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\n\r\n" + bytes(range(256)) * 4)
        assert closed_by_server(sock, 10)
    with greeted(ns_port, "Pyro.NameServer") as sock:
        sock.sendall(message(Pyro5.protocol.MSG_INVOKE, serpent_bomb(1024 * 1024), serializer=SERPENT))
        assert closed_by_server(sock, 10)


def _huge_names(ns: Pyro5.api.Proxy) -> None:
    with pytest.raises(Pyro5.errors.NamingError, match="longer than"):
        ns.register("n" * 5000, DEAD)
    with pytest.raises((Pyro5.errors.ProtocolError, Pyro5.errors.CommunicationError, ValueError)):
        ns.register("n" * 1_000_000, DEAD)  # past the transport's cap for one message
    ns._pyroReconnect()
    with pytest.raises(ValueError, match="a registration may carry at most"):
        ns.register("big.metadata", DEAD, metadata={f"{i:05}" + "m" * 900 for i in range(40)})


def _flood(ns: Pyro5.api.Proxy, uri: str) -> int:
    """Register names of ``uri`` (on a live daemon, so that they stay) until the quota refuses them by name;
    how many were taken."""
    taken = 0
    with pytest.raises(Pyro5.errors.NamingError, match=f"at most {REGISTRATIONS} registrations"):
        while taken <= REGISTRATIONS:
            ns.register(f"{'a' * 1000}{taken:04}", uri)
            taken += 1
    return taken


def _regex_bombs(ns: Pyro5.api.Proxy) -> None:
    """Patterns that would backtrack for hours on the flood's 1,000-character names: refused at once."""
    for bomb in ["(a+)+$", "(a|aa)*$", "a*a*a*a*b", "(.*a){12}", "a{0,64}a{0,64}a*a*b"]:
        asked = time.monotonic()
        with pytest.raises(Pyro5.errors.NamingError, match="regex refused"):
            ns.list(regex=bomb)
        with pytest.raises(Pyro5.errors.NamingError, match="regex refused"):
            ns.remove(regex=bomb)
        assert time.monotonic() - asked < 1.0
    asked = time.monotonic()
    assert len(ns.list(regex=".*.*b")) == 0  # taken: a square, on the flood's 58 names of 1,004 characters
    assert time.monotonic() - asked < 5.0
