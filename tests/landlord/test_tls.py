"""Two-way TLS (``landlord.tls``): the config's checks, putting it in force and back, and real servers
(a landlord served by ``serve_landlord``, the lookup service by ``python -m lookup``) in child
processes that serve clients of their CA and refuse every other client, then keep serving.

Certificates are made once for this module by ``trustme``: a CA, a server certificate for
127.0.0.1, a client certificate, and a client certificate from another CA.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import re
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from typing import Any

import Pyro5.api
import Pyro5.errors
import Pyro5.socketutil
import pytest
import trustme
from lookup_processes import LookupProcess, run_lookup, serve_lookup  # noqa: F401  (a fixture)
from Pyro5 import config as pyro_config

import landlord
from landlord import TLSConfig, apply_tls, tls_settings
from landlord.tls import PYRO_SSL_SETTINGS
from lookup import Name, ServiceItem, ServiceTemplate
from lookup.discovery.unicast import locate

SERVICE_URI = "PYRO:quoter@127.0.0.1:9999"
REFUSED = r"refused a connection from 127\.0\.0\.1:\d+: TLS handshake failed"
CALL_TIMEOUT = 10.0  # seconds a test's proxy waits: a refusal must come as an error, not a hang
Serve = Callable[..., "tuple[LookupProcess, int]"]


@dataclasses.dataclass(frozen=True)
class Certs:
    ca: pathlib.Path
    server: TLSConfig          # 127.0.0.1 and localhost, signed by the CA
    client: TLSConfig          # signed by the CA
    stranger: TLSConfig        # a client certificate from another CA (which trusts our CA's servers)
    distrusting: TLSConfig     # our CA's client certificate, but trusting only the other CA
    other_ca: pathlib.Path

    @staticmethod
    def args(tls: TLSConfig) -> list[str]:
        return ["--cert", str(tls.certfile), "--key", str(tls.keyfile), "--ca", str(tls.cafile)]


def _write(cert: Any, directory: pathlib.Path, name: str) -> tuple[pathlib.Path, pathlib.Path]:
    certfile, keyfile = directory / f"{name}.crt", directory / f"{name}.key"
    for number, blob in enumerate(cert.cert_chain_pems):
        blob.write_to_path(str(certfile), append=number > 0)
    cert.private_key_pem.write_to_path(str(keyfile))
    return certfile, keyfile


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    directory = tmp_path_factory.mktemp("certs")
    ca, other = trustme.CA(), trustme.CA()
    ca_file, other_file = directory / "ca.pem", directory / "other-ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    other.cert_pem.write_to_path(str(other_file))
    server = _write(ca.issue_cert("127.0.0.1", "localhost"), directory, "server")
    client = _write(ca.issue_cert("client.example"), directory, "client")
    stranger = _write(other.issue_cert("stranger.example"), directory, "stranger")
    return Certs(ca=ca_file, other_ca=other_file, server=TLSConfig(*server, ca_file),
                 client=TLSConfig(*client, ca_file), stranger=TLSConfig(*stranger, ca_file),
                 distrusting=TLSConfig(*client, other_file))


def _pyro_tls_state() -> tuple[dict[str, Any], Any, Any]:
    return ({name: getattr(pyro_config, name) for name in PYRO_SSL_SETTINGS},
            getattr(Pyro5.socketutil, "__ssl_server_context"), getattr(Pyro5.socketutil, "__ssl_client_context"))


@pytest.fixture(autouse=True)
def pyro_tls_restored() -> Iterator[None]:
    """Pyro5's SSL settings are global to this process: each test must leave them as it found them."""
    before = _pyro_tls_state()
    yield
    after = _pyro_tls_state()
    if after != before:  # put them back so that other tests run plain, then fail this one
        for name, value in before[0].items():
            setattr(pyro_config, name, value)
        setattr(Pyro5.socketutil, "__ssl_server_context", before[1])
        setattr(Pyro5.socketutil, "__ssl_client_context", before[2])
        pytest.fail(f"the test left Pyro5's SSL settings changed: {after[0]}")


# -- the config ---------------------------------------------------------------------------------

def test_tls_config_checks_its_files(certs: Certs, tmp_path: pathlib.Path) -> None:
    server = certs.server
    with pytest.raises(FileNotFoundError, match="certificate file not found") as missing:
        TLSConfig(tmp_path / "nope.crt", server.keyfile, certs.ca)
    assert "nope.crt" in str(missing.value)
    with pytest.raises(FileNotFoundError, match="CA file not found"):
        TLSConfig(server.certfile, server.keyfile, str(tmp_path / "nope.pem"))
    with pytest.raises(ValueError, match="key file is not a file"):
        TLSConfig(server.certfile, tmp_path, certs.ca)
    with pytest.raises(ValueError, match="cannot load the certificate"):
        TLSConfig(server.certfile, certs.client.keyfile, certs.ca)  # a key that is not the certificate's
    with pytest.raises(ValueError, match="no CA certificate in"):
        TLSConfig(server.certfile, server.keyfile, server.keyfile)
    with pytest.raises(TypeError):
        TLSConfig(None, server.keyfile, certs.ca)  # type: ignore[arg-type]
    for bad in (0, -1, float("inf"), float("nan"), True, "5"):
        with pytest.raises(ValueError, match="handshake_timeout"):
            TLSConfig(server.certfile, server.keyfile, certs.ca, handshake_timeout=bad)  # type: ignore[arg-type]
    if os.geteuid() != 0:  # root reads anything
        unreadable = tmp_path / "unreadable.key"
        unreadable.write_bytes(server.keyfile.read_bytes())
        unreadable.chmod(0)
        with pytest.raises(PermissionError, match="key file is not readable"):
            TLSConfig(server.certfile, unreadable, certs.ca)


def test_tls_config_is_frozen_and_compares_by_its_files(certs: Certs) -> None:
    server = certs.server
    again = TLSConfig(str(server.certfile), str(server.keyfile), str(server.cafile))
    assert again == server and hash(again) == hash(server)
    assert isinstance(again.certfile, pathlib.Path)
    assert again != certs.client
    with pytest.raises(dataclasses.FrozenInstanceError):
        again.certfile = certs.client.certfile  # type: ignore[misc]
    assert "server.key" in repr(again) and "SSLContext" not in repr(again)
    # both sides verify their peer; only the client checks the peer's name
    assert server.server_context().verify_mode == ssl.CERT_REQUIRED
    assert server.client_context().verify_mode == ssl.CERT_REQUIRED
    assert server.client_context().check_hostname and not server.server_context().check_hostname


def test_tls_settings_puts_a_config_in_force_and_restores_what_was_before(certs: Certs) -> None:
    before = _pyro_tls_state()
    with tls_settings(certs.server):
        assert pyro_config.SSL and pyro_config.SSL_REQUIRECLIENTCERT
        assert pyro_config.SSL_CACERTS == str(certs.ca)
        # what Pyro5's daemons and proxies will ask for is this config's contexts, not ones Pyro5 makes
        assert Pyro5.socketutil.get_ssl_context(servercert=pyro_config.SSL_SERVERCERT) \
            is certs.server.server_context()
        assert Pyro5.socketutil.get_ssl_context(clientcert=pyro_config.SSL_CLIENTCERT) \
            is certs.server.client_context()
        with tls_settings(certs.client):  # another config replaces them (Pyro5 alone would keep the first)
            assert Pyro5.socketutil.get_ssl_context(clientcert="x") is certs.client.client_context()
            with tls_settings(None):
                assert not pyro_config.SSL and pyro_config.SSL_CLIENTCERT == ""
            assert pyro_config.SSL and pyro_config.SSL_CLIENTCERT == str(certs.client.certfile)
        assert Pyro5.socketutil.get_ssl_context(clientcert="x") is certs.server.client_context()
    assert _pyro_tls_state() == before
    with pytest.raises(TypeError):
        apply_tls("tls.pem")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        with tls_settings(object()):  # type: ignore[arg-type]
            pass
    assert _pyro_tls_state() == before


# -- a landlord served over TLS in another process ---------------------------------------------

def _rent(uri: str, room: str) -> landlord.LandlordLease:
    with Pyro5.api.Proxy(uri) as rooms:
        rooms._pyroTimeout = CALL_TIMEOUT
        return rooms.rent(room, 30)  # type: ignore[no-any-return]


def _refused(uri: str) -> Exception:
    """The error of connecting to ``uri`` (the test fails if it connects)."""
    proxy = Pyro5.api.Proxy(uri)
    proxy._pyroTimeout = CALL_TIMEOUT
    with pytest.raises(Pyro5.errors.CommunicationError) as refused:
        proxy._pyroBind()
    proxy._pyroRelease()
    return refused.value


@pytest.mark.parametrize("server_type", ["guarded", "multiplex", "thread"])
def test_a_tls_landlord_serves_clients_of_its_ca_and_refuses_every_other_client(
        spawn: Any, certs: Certs, server_type: str) -> None:
    started = time.monotonic()
    server = spawn("served_landlord.py", "--server-type", server_type, *certs.args(certs.server))
    uri = server.expect("URI:")  # printed after the line below
    assert f"landlord at {uri} ({server_type} server, two-way TLS)" in server.output

    with tls_settings(certs.client):
        lease = _rent(uri, "101")
        assert 39 < lease.renew(40) <= 40  # through this thread's cached proxy: a second TLS connection
        lease.cancel()
        assert server.expect("freed") == "101"

    # a client without TLS, one without a certificate, one with another CA's, one distrusting the server
    with tls_settings(None):
        _refused(uri)
    server.wait_for(REFUSED)
    with tls_settings(None):  # Pyro5's own TLS, with no client certificate
        pyro_config.SSL, pyro_config.SSL_CACERTS = True, str(certs.ca)
        _refused(uri)
    server.wait_for(REFUSED)
    with tls_settings(certs.stranger):
        _refused(uri)
    server.wait_for(REFUSED + ".*(unknown ca|certificate verify failed)")
    with tls_settings(certs.distrusting):
        assert "certificate verify failed" in str(_refused(uri))  # the client refuses the server
    server.wait_for(REFUSED)

    with tls_settings(certs.client):  # and it serves on
        kept = _rent(uri, "102")
        assert 39 < kept.renew(40) <= 40
        kept.cancel()
        assert server.expect("freed") == "102"
        landlord.transport.proxies.discard(uri)
    assert server.stop() == 0
    server.wait_for("^stopped$")
    print(f"{server_type}: {time.monotonic() - started:.2f} s")


def test_silent_connections_hold_up_no_one_and_a_stalled_handshake_only_for_its_timeout(
        spawn: Any, certs: Certs) -> None:
    server = spawn("served_landlord.py", "--handshake-timeout", "0.5", *certs.args(certs.server))
    uri = server.expect("URI:")
    port = int(uri.rsplit(":", 1)[1])
    with contextlib.ExitStack() as sockets:
        for _ in range(50):  # connect, never say a word: never greeted, so never waited for
            sockets.enter_context(socket.create_connection(("127.0.0.1", port)))
        stalled = sockets.enter_context(socket.create_connection(("127.0.0.1", port)))
        stalled.sendall(b"\x16\x03\x01")  # the start of a TLS record, then nothing
        with tls_settings(certs.client):
            asked = time.monotonic()
            lease = _rent(uri, "101")  # Pyro5's own TLS would leave this waiting for good
            waited = time.monotonic() - asked
            lease.cancel()
            landlord.transport.proxies.discard(uri)
        server.wait_for(REFUSED + ": timed out")  # the stalled one, after its 0.5 s
    assert waited < 3, f"a client waited {waited:.2f} s behind silent and stalled connections"
    assert server.stop() == 0


# -- the lookup service over TLS, through its command line ---------------------------------------

def test_lookup_serve_and_list_over_tls(serve_lookup: Serve, certs: Certs) -> None:
    server, port = serve_lookup(*certs.args(certs.server))
    assert re.search(r"lookup service at \S+ \(guarded server, two-way TLS, leases up to", server.output[-1])
    listed = run_lookup("list", "--port", str(port), *certs.args(certs.client))
    assert (listed.returncode, listed.stdout, listed.stderr) == (0, "no registrations\n", "")

    with tls_settings(certs.client):
        with locate(port=port) as lookup:
            registration = lookup.register(ServiceItem(None, SERVICE_URI, ["x.Secure"], [Name("s")]), 30)
            listed = run_lookup("list", "--port", str(port), *certs.args(certs.client))
            assert listed.returncode == 0, listed.stderr
            assert registration.service_id in listed.stdout and "Name(name='s')" in listed.stdout

            for args in ([], certs.args(certs.stranger), certs.args(certs.distrusting)):
                refused = run_lookup("list", "--port", str(port), "--timeout", "5", *args)
                assert refused.returncode == 1, refused
                assert f"no lookup service answers at 127.0.0.1:{port}" in refused.stderr
                assert "Traceback" not in refused.stderr
                server.wait_for(REFUSED)

            assert lookup.lookup_all(ServiceTemplate(types=["x.Secure"]), 10).total == 1  # still connected
            registration.lease.cancel()
        landlord.transport.proxies.discard(str(registration.lease.landlord))
    assert server.stop() == 0


@pytest.mark.parametrize("args, message", [
    (["list", "--cert", "c.pem"], "--cert, --key and --ca go together: --key, --ca missing"),
    (["serve", "--key", "k.pem", "--ca", "ca.pem"], "--cert, --key and --ca go together: --cert missing"),
    (["list", "--cert", "nope.pem", "--key", "nope.key", "--ca", "nope-ca.pem"],
     "TLS: [Errno 2] certificate file not found: 'nope.pem'"),
])
def test_tls_options_all_three_or_none_and_readable(args: list[str], message: str) -> None:
    done = run_lookup(*args)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_tls_options_are_in_the_help() -> None:
    for command in ("serve", "list"):
        done = run_lookup(command, "--help")
        assert done.returncode == 0
        assert all(option in done.stdout for option in ("--cert", "--key", "--ca", "two-way TLS"))
