"""``lookup serve --pyro-ns`` with unmodified Pyro5 programs in processes of their own: they find,
call and lose each other through it; Pyro5's nsc works against it; a server killed with SIGKILL
vanishes within the ping terms; JoinManager's and ns.register's names are seen both ways; and every
ns call answers over the wire as Pyro5's own name server (``python -m Pyro5.nameserver``) does."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import Pyro5.api
import Pyro5.errors
import pytest
from conftest import ChildProcess, free_port, wait_until
from lookup_processes import LookupProcess, run_lookup, serve_lookup  # noqa: F401  (a fixture)
from pyrons_calls import CALLS, outcome

import lookup
from landlord.testing import free_udp_port
from lookup import JoinManager, Name, PyroMetadata, ServiceTemplate
from lookup.service.pyrons.face import NS_REGISTRATION_TYPE
from lookup.service.pyrons.liveness import PingTerms

pytestmark = pytest.mark.slow

PING = 1.5  # --pyro-ns-ping of these tests: a killed server's names go within TERMS.removal_bound
TERMS = PingTerms.every(PING)

SERVER = '''
import sys
import Pyro5.api

@Pyro5.api.expose
class Echo:
    def echo(self, text):
        return "echo: " + text

host, port, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
daemon = Pyro5.api.Daemon(host="127.0.0.1")
uri = daemon.register(Echo())
ns = Pyro5.api.locate_ns(host, port)
ns.register(name, uri, metadata={"echo", "demo"})
print("registered", name, uri, flush=True)
daemon.requestLoop()
'''

CLIENT = '''
import sys
import Pyro5.api
import Pyro5.errors

host, port, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
try:
    print(Pyro5.api.Proxy(f"PYRONAME:{name}@{host}:{port}").echo("hi"))
    print(Pyro5.api.Proxy(f"PYROMETA:echo,demo@{host}:{port}").echo("meta"))
except Pyro5.errors.NamingError as exc:
    print("NamingError:", exc)
'''


@pytest.fixture
def programs(tmp_path: Path) -> Path:
    (tmp_path / "echo_server.py").write_text(textwrap.dedent(SERVER))
    (tmp_path / "echo_client.py").write_text(textwrap.dedent(CLIENT))
    return tmp_path


@pytest.fixture
def bridged(serve_lookup: Callable[..., tuple[LookupProcess, int]]) -> tuple[LookupProcess, int, int]:
    """A lookup service answering as a Pyro5 name server: (process, lookup port, name server port)."""
    ns_port = free_port()
    server, port = serve_lookup("--no-announce", "--pyro-ns", f"127.0.0.1:{ns_port}", "--pyro-ns-ping", str(PING))
    return server, port, ns_port


def run_client(programs: Path, ns_port: int, name: str) -> str:
    done = subprocess.run([sys.executable, str(programs / "echo_client.py"), "127.0.0.1", str(ns_port), name],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def ns_proxy(port: int) -> Pyro5.api.Proxy:
    return Pyro5.api.locate_ns("127.0.0.1", port)


def test_a_pyro5_server_and_client_find_call_and_lose_each_other(bridged: tuple[LookupProcess, int, int],
                                                                   programs: Path) -> None:
    _, _, ns_port = bridged
    with ChildProcess(str(programs / "echo_server.py"), "127.0.0.1", str(ns_port), "acme.echo") as server:
        server.wait_for("registered acme.echo")
        assert run_client(programs, ns_port, "acme.echo") == "echo: hi\necho: meta\n"
        with ns_proxy(ns_port) as ns:
            assert "acme.echo" in ns.list()
            server.process.kill()  # SIGKILL: no goodbye
            killed = time.monotonic()
            wait_until(lambda: "acme.echo" not in ns.list(), TERMS.removal_bound + 3, "the killed server's name gone")
            gone_after = time.monotonic() - killed
            assert ns.count() == 1  # Pyro.NameServer alone
    assert gone_after <= TERMS.removal_bound + 3
    assert run_client(programs, ns_port, "acme.echo") == "NamingError: unknown name: acme.echo\n"


def test_pyro5s_nsc_lists_looks_up_and_removes(bridged: tuple[LookupProcess, int, int], programs: Path) -> None:
    _, _, ns_port = bridged

    def nsc(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "Pyro5.nsc", "-n", "127.0.0.1", "-p", str(ns_port), *args],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    with ChildProcess(str(programs / "echo_server.py"), "127.0.0.1", str(ns_port), "nsc.echo") as server:
        uri = server.wait_for(r"registered nsc.echo (\S+)").group(1)
        listed = nsc("list")
        assert f"nsc.echo --> {uri}" in listed and "Pyro.NameServer --> PYRO:Pyro.NameServer@" in listed
        assert "nsc.echo" in nsc("yplookup_all", "echo") and uri in nsc("lookup", "nsc.echo")
        assert "nsc.echo" in nsc("listmatching", r"nsc\..*") and nsc("ping")
        assert nsc("remove", "nsc.echo") == "Removed nsc.echo\n"  # as in Pyro5: anyone may remove them
        assert "nsc.echo" not in nsc("list")


def test_join_manager_and_ns_register_names_are_seen_both_ways(bridged: tuple[LookupProcess, int, int],
                                                               programs: Path) -> None:
    _, port, ns_port = bridged
    daemon = Pyro5.api.Daemon(host="127.0.0.1")
    uri = daemon.register(Pyro5.api.expose(type("Quoter", (), {"quote": lambda self: 42}))())
    join = JoinManager(uri, types=["acme.Quoter"], attributes=[Name("acme.quotes"), PyroMetadata("eu")],
                       lookups=[f"PYRO:{lookup.LOOKUP_OBJECT_ID}@127.0.0.1:{port}"], lease_duration=30)
    try:
        assert join.wait_registered(timeout=20)
        with ns_proxy(ns_port) as ns, \
                ChildProcess(str(programs / "echo_server.py"), "127.0.0.1", str(ns_port), "acme.echo") as server:
            echo_uri = server.wait_for(r"registered acme.echo (\S+)").group(1)
            assert str(ns.lookup("acme.quotes")) == str(uri)
            assert ns.yplookup(meta_any=["eu"]) == {"acme.quotes": (str(uri), {"eu"})}
            with pytest.raises(Pyro5.errors.NamingError, match="held by another client"):
                ns.remove("acme.quotes")  # a JoinManager's registration is its holder's
            with lookup.locate("127.0.0.1", port) as registrar:
                [item] = registrar.lookup_all(ServiceTemplate(attributes=[Name("acme.echo")])).items
                assert item.service_uri == echo_uri and item.types == (NS_REGISTRATION_TYPE,)
                assert registrar.lookup(ServiceTemplate(attributes=[PyroMetadata("demo")])) is not None
            assert set(ns.list(prefix="acme.")) == {"acme.quotes", "acme.echo"}
    finally:
        join.close()
        daemon.close()


LOCATE = '''
import Pyro5.api
ns = Pyro5.api.locate_ns()  # no host: localhost at NS_PORT (nothing there), then a broadcast to NS_BCPORT
print("located", ns._pyroUri, ns.lookup("Pyro.NameServer"), flush=True)
'''


def test_locate_ns_with_no_host_finds_it_by_broadcast(serve_lookup: Callable[..., tuple[LookupProcess, int]],
                                                       tmp_path: Path) -> None:
    ns_port, broadcast_port = free_port(), free_udp_port()
    serve_lookup("--no-announce", "--pyro-ns", f"127.0.0.1:{ns_port}", "--pyro-ns-broadcast", str(broadcast_port))
    (tmp_path / "locate.py").write_text(textwrap.dedent(LOCATE))
    done = subprocess.run([sys.executable, str(tmp_path / "locate.py")], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYRO_NS_PORT": str(free_port()), "PYRO_NS_BCPORT": str(broadcast_port)})
    uri = f"PYRO:Pyro.NameServer@127.0.0.1:{ns_port}"
    assert done.stdout == f"located {uri} {uri}\n", done.stderr


@pytest.fixture
def reference_ns() -> Iterator[int]:
    """Pyro5's own name server in a child process (no broadcast); its port."""
    port = free_port()
    with ChildProcess("-m", "Pyro5.nameserver", "-n", "127.0.0.1", "-p", str(port), "-x") as ns:
        ns.wait_for(re.escape(f"NS running on 127.0.0.1:{port}"))
        yield port


def test_every_call_answers_over_the_wire_as_pyro5s_own_name_server(
        serve_lookup: Callable[..., tuple[LookupProcess, int]], reference_ns: int) -> None:
    ns_port = free_port()  # pings every 60 s: the names the calls register (no daemon behind them) stay
    serve_lookup("--no-announce", "--pyro-ns", f"127.0.0.1:{ns_port}", "--pyro-ns-ping", "60")
    differences = []
    with ns_proxy(ns_port) as ours, ns_proxy(reference_ns) as theirs:
        own, their_own = (f"PYRO:Pyro.NameServer@127.0.0.1:{p}" for p in (ns_port, reference_ns))
        for what, call in CALLS:
            got = outcome(lambda: call(ours), own)  # noqa: B023  (called at once)
            expected = outcome(lambda: call(theirs), their_own)  # noqa: B023
            if got != expected:
                differences.append(f"{what}: {got!r} != Pyro5's {expected!r}")
    assert not differences, "\n".join(differences)


@pytest.mark.parametrize("args, says", [
    (["--pyro-ns", "host:port"], "expected [HOST:]PORT"),
    (["--pyro-ns", ":9090"], "expected a host"),
    (["--pyro-ns", "70000"], "0 to 65535"),
    (["--pyro-ns", "9090", "--max-lease", "20"], "longer than --max-lease"),
    (["--pyro-ns", "9090", "--max-lease", "20", "--etcd", "127.0.0.1:1", "--group", "g", "--replicas",
      "127.0.0.1:2,127.0.0.1:3"], "longer than --max-lease"),
])
def test_bad_pyro_ns_options_are_usage_errors(args: list[str], says: str) -> None:
    done = run_lookup("serve", "--port", "0", *args)
    assert done.returncode == 2 and says in done.stderr, done.stderr


@pytest.mark.parametrize("given, host", [("0.0.0.0:9090", "0.0.0.0"), ("[::]:9090", "::"), ("9090", None)])
def test_the_name_server_may_listen_on_every_interface(given: str, host: str | None) -> None:
    from lookup.service.pyrons.bridge import PyroNs

    settings = PyroNs.parse(given)
    assert (settings.host, settings.port) == (host, 9090)
    with pytest.raises(ValueError, match="not a host: 'bad host'"):
        PyroNs.parse("bad host:9090")


def test_served_on_every_interface_it_answers_on_loopback(
        serve_lookup: Callable[..., tuple[LookupProcess, int]]) -> None:
    ns_port = free_port()
    serve_lookup("--no-announce", "--pyro-ns", f"0.0.0.0:{ns_port}", "--pyro-ns-broadcast", "0")
    with ns_proxy(ns_port) as ns:
        assert ns.ping() is None and "Pyro.NameServer" in ns.list()
