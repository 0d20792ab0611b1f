"""The Pyro5 internals landlord relies on, checked against the Pyro5 installed.

landlord.tls swaps the SSL contexts Pyro5 keeps in module globals,
landlord.transport.multiplex subclasses Pyro5's multiplex server and calls the daemon's
handshake, landlord.serving advertises addresses through the daemon's NAT
settings, and landlord.transport.proxies re-bounds a connected proxy's timeout. None of
that is Pyro5's public API: a Pyro5 release that changes it must fail here, by
name, rather than somewhere deep in a TLS or partition test. The stubs in
typings/ (what mypy checks our calls against) are held to the real modules too.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pathlib
import threading

import Pyro5
import Pyro5.api
import Pyro5.server
import Pyro5.socketutil
import Pyro5.svr_multiplex
import pytest
from Pyro5 import config as pyro_config

from landlord import tls
from landlord.serving import pyro_settings
from landlord.transport.multiplex import SpokenFirstMultiplexServer, greet_when_spoken

STUBS = pathlib.Path(__file__).resolve().parents[2] / "typings"


def test_pyro5_is_of_the_major_version_pinned() -> None:
    major = int(Pyro5.__version__.split(".")[0])
    assert major == 5, f"Pyro5 {Pyro5.__version__}: landlord is written against Pyro5 5.x (pyproject pins <6)"


def test_pyro5_keeps_its_ssl_contexts_where_landlord_tls_swaps_them() -> None:
    names = (tls._PYRO_SERVER_CONTEXT, tls._PYRO_CLIENT_CONTEXT)
    missing = [name for name in names if not hasattr(Pyro5.socketutil, name)]
    assert not missing, f"Pyro5.socketutil no longer keeps {missing}: landlord.tls cannot replace its contexts"
    tls._pyro_contexts()  # the accessor itself does not raise


def test_the_multiplex_server_has_what_the_spoken_first_server_overrides_and_uses() -> None:
    server_class = Pyro5.svr_multiplex.SocketServer_Multiplex
    for method in ("events", "close", "init", "loop", "shutdown"):
        assert callable(getattr(server_class, method, None)), f"SocketServer_Multiplex.{method} is gone"
    assert list(inspect.signature(server_class.events).parameters) == ["self", "eventsockets"]
    for name in ("ERRNO_BADF", "ERRNO_ENOTSOCK", "SocketConnection"):
        assert hasattr(Pyro5.socketutil, name), f"Pyro5.socketutil.{name} is gone"
    handshake = getattr(Pyro5.server.Daemon, "_handshake", None)
    assert callable(handshake), "Daemon._handshake is gone: the multiplex server cannot greet connections"
    assert list(inspect.signature(handshake).parameters)[:2] == ["self", "conn"]


def test_a_real_multiplex_daemon_becomes_spoken_first_with_the_attributes_it_reads() -> None:
    with pyro_settings(SERVERTYPE="multiplex"):
        daemon = Pyro5.api.Daemon(host="127.0.0.1", port=0)
    try:
        server = greet_when_spoken(daemon.transportServer)
        assert isinstance(server, SpokenFirstMultiplexServer) and server is daemon.transportServer
        for name in ("sock", "selector", "daemon", "shutting_down"):
            assert hasattr(server, name), f"the multiplex server has no {name!r} any more"
        assert server.daemon is daemon
    finally:
        daemon.close()


class _Probe:
    """Something to register with a daemon (a bare object() takes no attributes)."""


def test_a_daemons_nat_address_with_port_0_advertises_the_bound_port() -> None:
    daemon = Pyro5.api.Daemon(host="127.0.0.1", port=0, nathost="127.0.0.2", natport=0)
    try:
        uri = daemon.register(_Probe(), objectId="probe")
        bound_port = int(daemon.locationStr.rsplit(":", 1)[1])
        assert (uri.host, uri.port) == ("127.0.0.2", bound_port)
    finally:
        daemon.close()


def test_setting_a_connected_proxys_timeout_reaches_its_connection() -> None:
    @Pyro5.api.expose
    class Echo:
        def echo(self, value: int) -> int:
            return value

    daemon = Pyro5.api.Daemon(host="127.0.0.1", port=0)
    uri = daemon.register(Echo())
    loop = threading.Thread(target=daemon.requestLoop, daemon=True)
    loop.start()
    try:
        with Pyro5.api.Proxy(uri) as proxy:
            assert proxy.echo(1) == 1
            connection = proxy._pyroConnection
            assert connection is not None
            proxy._pyroTimeout = 0.25
            assert connection.timeout == 0.25, "a connected proxy's timeout no longer reaches its socket"
    finally:
        daemon.shutdown()
        loop.join(10)
        daemon.close()


def _stub_names(stub: pathlib.Path) -> tuple[list[str], dict[str, list[str]]]:
    """The top-level names a stub declares, and the members of each class it declares."""
    tree = ast.parse(stub.read_text())
    names: list[str] = []
    members: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.startswith("_"):
            continue  # a stub-only helper type (a protobuf message the module does not export by name)
        if isinstance(node, ast.ClassDef) and node.name.endswith("Stub"):
            names.append(node.name)  # a gRPC stub: its methods are set on each instance, not on the class
        elif isinstance(node, ast.ClassDef):
            names.append(node.name)
            members[node.name] = [item.name for item in node.body if isinstance(item, ast.FunctionDef)
                                  and not item.name.startswith("__")]
        elif isinstance(node, ast.FunctionDef) and node.name != "__getattr__":
            names.append(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return names, members


@pytest.mark.parametrize("stub", sorted(STUBS.rglob("*.pyi")), ids=lambda path: str(path.relative_to(STUBS)))
def test_every_name_the_stubs_declare_exists_in_the_real_module(stub: pathlib.Path) -> None:
    module_name = ".".join(stub.relative_to(STUBS).with_suffix("").parts).removesuffix(".__init__")
    module = pyro_config if module_name == "Pyro5.config" else importlib.import_module(module_name)
    names, members = _stub_names(stub)
    missing = [name for name in names if not hasattr(module, name)]
    missing += [f"{cls}.{member}" for cls, found in members.items() if hasattr(module, cls)
                for member in found if not hasattr(getattr(module, cls), member)]
    assert not missing, f"typings/{stub.relative_to(STUBS)} declares what {module_name} lacks: {missing}"
