"""What the admin tests share (``tests/landlord/test_admin_*.py``): a landlord of rooms and its admin
object on a real Pyro5 daemon in this process (:func:`served`), the same over two-way TLS with an admin
certificate (:func:`certs`, :func:`tls_served`), a call with a proof made as the client makes it
(:func:`proved`), and the token they are served with.
"""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Iterator
from typing import Any

import Pyro5.api
import Pyro5.socketutil
import pytest
import trustme
from Pyro5 import config as pyro_config

import landlord
from landlord import FakeClock, Landlord, LeaseDurationPolicy, TLSConfig, tls_settings
from landlord.admin import ADMIN_PREFIX, AdminClient, admin_proof, register_admin
from landlord.grantor import landlord as grantor_module
from landlord.testing import Recorder, ServingDaemon
from landlord.tls import PYRO_SSL_SETTINGS

TOKEN = "admin-token-0123456789-abcdef"
WRONG = "admin-token-0123456789-abcdeX"  # as long as TOKEN, one character off
TERM = 30.0
NONCE = "a1" * 32


class Rooms(Landlord):
    @Pyro5.api.expose
    def rent(self, room: str, duration: float) -> landlord.LandlordLease:
        return self.new_lease(room, duration)


@dataclasses.dataclass
class Served:
    rooms: Rooms
    clock: FakeClock
    expired: Recorder[Any]
    cancelled: Recorder[Any]
    landlord_uri: str
    admin_uri: str

    def rent(self, room: str, duration: float = TERM) -> landlord.LandlordLease:
        """A lease held as a holder in another process would: granted and renewed over Pyro5."""
        with Pyro5.api.Proxy(self.landlord_uri) as proxy:
            lease: landlord.LandlordLease = proxy.rent(room, duration)
        return lease

    def client(self, token: str | None = TOKEN) -> AdminClient:
        return AdminClient(self.admin_uri, token=token)

    @property
    def admin_id(self) -> str:
        """The admin object's id."""
        return str(Pyro5.api.URI(self.admin_uri).object)

    def raw(self) -> Pyro5.api.Proxy:
        """A plain Pyro5 proxy of the admin object: calls carry what the test gives, nothing more."""
        return Pyro5.api.Proxy(self.admin_uri)

    def unchanged(self, leases: list[landlord.LandlordLease]) -> None:
        """Nothing was freed, and every lease is still held and renewable by its holder."""
        assert self.expired.items == [] and self.cancelled.items == []
        assert len(self.rooms) == len(leases)
        for lease in leases:
            assert lease.renew(TERM) == TERM


def proved(proxy: Pyro5.api.Proxy, method: str, *arguments: Any, token: str = TOKEN, sequence: int = 1) -> Any:
    """``method(*arguments)`` on a plain proxy of an admin object, with a proof made as AdminClient makes
    it: a challenge on the proxy's connection, then the proof for this call."""
    nonce = proxy.challenge()
    proof = admin_proof(token, nonce, sequence, proxy._pyroUri.object, method, arguments)
    return getattr(proxy, method)(*arguments, sequence=sequence, proof=proof)


def _serve(daemon: ServingDaemon, **admin: Any) -> Served:
    clock = FakeClock()
    expired: Recorder[Any] = Recorder()
    cancelled: Recorder[Any] = Recorder()
    rooms = Rooms(policy=LeaseDurationPolicy(maximum=600), clock=clock, on_expire=expired, on_cancel=cancelled)
    landlord_uri = daemon.register(rooms, "landlord." + rooms.landlord_id)
    admin_uri = register_admin(daemon.daemon, rooms, **admin)
    return Served(rooms, clock, expired, cancelled, landlord_uri, admin_uri)


@pytest.fixture
def served() -> Iterator[Served]:
    with ServingDaemon() as daemon:
        serving = _serve(daemon, token=TOKEN)
        yield serving
        serving.rooms.close()


def admin_uri_of(landlord_uri: str) -> str:
    """The URI of the admin object served beside the landlord at ``landlord_uri``."""
    location = Pyro5.api.URI(landlord_uri)
    return f"PYRO:{ADMIN_PREFIX}{location.object.removeprefix('landlord.')}@127.0.0.1:{location.port}"


def given_cookies(monkeypatch: pytest.MonkeyPatch, *cookies: str) -> None:
    """The landlord's next leases get these cookies, in order."""
    given = iter(cookies)
    monkeypatch.setattr(grantor_module, "new_cookie", lambda: next(given))


@dataclasses.dataclass(frozen=True)
class Certs:
    server: TLSConfig  # 127.0.0.1, signed by the CA
    admin: TLSConfig  # commonName ops-admin, signed by the CA
    client: TLSConfig  # commonName client.example, signed by the CA
    ca: pathlib.Path

    @staticmethod
    def args(tls: TLSConfig) -> list[str]:
        return ["--cert", str(tls.certfile), "--key", str(tls.keyfile), "--ca", str(tls.cafile)]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    directory = tmp_path_factory.mktemp("certs")
    ca = trustme.CA()
    ca_file = directory / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))

    def issue(name: str, *identities: str, common_name: str | None = None) -> TLSConfig:
        cert = ca.issue_cert(*identities, common_name=common_name)
        certfile, keyfile = directory / f"{name}.crt", directory / f"{name}.key"
        for number, blob in enumerate(cert.cert_chain_pems):
            blob.write_to_path(str(certfile), append=number > 0)
        cert.private_key_pem.write_to_path(str(keyfile))
        return TLSConfig(certfile, keyfile, ca_file)

    return Certs(server=issue("server", "127.0.0.1", "localhost"),
                 admin=issue("admin", "ops.example", common_name="ops-admin"),
                 client=issue("client", "client.example", common_name="client.example"), ca=ca_file)


def _pyro_tls_state() -> tuple[dict[str, Any], Any, Any]:
    return ({name: getattr(pyro_config, name) for name in PYRO_SSL_SETTINGS},
            getattr(Pyro5.socketutil, "__ssl_server_context"), getattr(Pyro5.socketutil, "__ssl_client_context"))


@pytest.fixture
def tls_served(certs: Certs) -> Iterator[Served]:
    """A landlord and its admin object (admin name ops-admin, and the token) on a TLS daemon; the
    process's SSL settings are as they were before (a test sets its client's)."""
    before = _pyro_tls_state()
    with tls_settings(certs.server):  # the daemon's listening socket keeps the server's context
        daemon = ServingDaemon()
    try:
        serving = _serve(daemon, token=TOKEN, admin_names=["ops-admin"])
        yield serving
        serving.rooms.close()
    finally:
        daemon.close()
        assert _pyro_tls_state() == before
