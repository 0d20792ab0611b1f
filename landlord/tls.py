"""Two-way TLS over Pyro5: :class:`TLSConfig`, :func:`apply_tls` and :func:`tls_settings`.

With a :class:`TLSConfig` in force, every connection is TLS and both ends
prove who they are: a daemon accepts only clients whose certificate is signed
by the configured CA, and a proxy accepts only servers whose certificate is
signed by that CA *and* names the host in the URI (``127.0.0.1``, a DNS
name...). Anyone holding a certificate from the CA may connect; the leases'
cookies still decide who may renew what.

Per process
-----------
Pyro5 keeps its SSL settings in its configuration, which is **one per
process** (``Pyro5.config``): a daemon reads them when it is made, a proxy
each time it connects. So TLS is on or off for the whole process:

- once :func:`apply_tls` ran, every daemon made and every proxy that connects
  afterwards uses TLS — a lease renewed from this process, the lookup
  service's event deliveries, a :class:`~lookup.JoinManager`'s calls. A
  process cannot talk TLS to one peer and plain TCP to another.
- connections made before keep what they were made with: apply it at the
  start of the process, before the first daemon or proxy.
- the same certificate serves both sides: it is presented to clients when the
  process serves and to servers when it calls (so it must allow both uses,
  and name the host the process serves at, if it serves).

Why this module builds the SSL contexts itself
----------------------------------------------
Pyro5 (5.17) builds an SSL context from its settings on first use and keeps
it for the life of the process. Left to itself that would

1. keep the first context forever: applying another configuration later (or
   going back to plain TCP and then to TLS again) would silently go on using
   the old certificate and CA;
2. trust the operating system's CAs besides the configured one, on both
   sides: any client with a certificate from a public CA could connect;
3. do a server's TLS handshake inside ``accept()``, on the one thread that
   accepts connections, with no time limit: a client that connects and sends
   nothing stops the multiplex server for everyone, and the thread server
   from accepting anyone, for as long as that client likes (measured: a
   further client still waiting after 8 s, on both server types).

So :func:`apply_tls` makes the two contexts (a server one and a client one)
from the :class:`TLSConfig` alone, trusting only its CA, and puts them where
Pyro5 keeps its own (its module ``Pyro5.socketutil``; checked on every
apply, with a clear error if a Pyro5 release moves them). The server context
bounds each handshake by :attr:`TLSConfig.handshake_timeout`; a connection
that fails or stalls its handshake is closed and logged, and the server goes
on. With the multiplex server a stalled handshake still holds up every other
client for up to that long — the same price as a client that stalls
mid-message (see :mod:`landlord.serving`).

The multiplex server works with TLS otherwise: it waits for data on the TCP
sockets, and TLS could hide data already read into the TLS layer from that
wait; but a Pyro5 client sends one message per write and waits for the
answer, and a server reads whole messages, so no TLS record ever holds the
start of a next message.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import logging
import math
import os
import pathlib
import socket
import ssl
import threading
from collections.abc import Iterator
from typing import Any

import Pyro5.socketutil
from Pyro5 import config as pyro_config

__all__ = ["TLSConfig", "apply_tls", "tls_settings", "server_handshake", "HANDSHAKE_TIMEOUT", "PYRO_SSL_SETTINGS"]

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT = 5.0  #: seconds a client may take over its TLS handshake (as landlord.serving's COMM_TIMEOUT)

# Pyro5's config items for SSL, all set by apply_tls and restored by tls_settings
PYRO_SSL_SETTINGS = (
    "SSL", "SSL_SERVERCERT", "SSL_SERVERKEY", "SSL_SERVERKEYPASSWD", "SSL_REQUIRECLIENTCERT",
    "SSL_CLIENTCERT", "SSL_CLIENTKEY", "SSL_CLIENTKEYPASSWD", "SSL_CACERTS",
)

# where Pyro5.socketutil.get_ssl_context keeps the contexts it made (module globals)
_PYRO_SERVER_CONTEXT = "__ssl_server_context"
_PYRO_CLIENT_CONTEXT = "__ssl_client_context"

_lock = threading.RLock()  # one apply or restore at a time: they change several globals


class _ServerContext(ssl.SSLContext):
    """A server's context: its listening sockets bound each handshake by :attr:`handshake_timeout`."""

    handshake_timeout: float = HANDSHAKE_TIMEOUT


class _BoundedHandshakeSocket(ssl.SSLSocket):
    """A listening TLS socket whose ``accept()`` gives each handshake a time limit.

    Pyro5's servers call ``accept()`` on their one accepting thread, and an
    SSL socket does the whole handshake in there: without a limit, a silent
    client would hold that thread for good.
    """

    def accept(self) -> tuple[ssl.SSLSocket, Any]:
        raw, address = socket.socket.accept(self)
        # set by SSLContext.wrap_socket on every SSLSocket (typeshed does not list it)
        ragged: bool = getattr(self, "suppress_ragged_eofs", True)
        connection = server_handshake(self.context, raw, address, suppress_ragged_eofs=ragged)
        connection.settimeout(socket.getdefaulttimeout())  # as a plain accept() leaves it; Pyro5 sets its own next
        return connection, address


def server_handshake(context: ssl.SSLContext, raw: socket.socket, address: Any, *,
                     suppress_ragged_eofs: bool = True) -> ssl.SSLSocket:
    """The server's side of a TLS handshake on an accepted connection, bounded in time.

    The limit is the context's ``handshake_timeout`` (set by :func:`apply_tls`),
    else :data:`HANDSHAKE_TIMEOUT`. A failed handshake is logged and the
    connection closed.

    Raises:
        ConnectionAbortedError: the handshake failed or timed out.
    """
    raw.settimeout(getattr(context, "handshake_timeout", HANDSHAKE_TIMEOUT))
    try:
        return context.wrap_socket(raw, server_side=True, do_handshake_on_connect=True,
                                   suppress_ragged_eofs=suppress_ragged_eofs)
    except (OSError, ValueError) as exc:  # wrap_socket has closed the connection
        reason = "timed out" if isinstance(exc, socket.timeout) else str(exc)
        log.warning("refused a connection from %s: TLS handshake failed: %s", _peer(address), reason)
        # an OSError with an errno: what both Pyro5 servers log and survive (a timeout would not do:
        # its errno is None, which the multiplex server's log line cannot format)
        raise ConnectionAbortedError(errno.ECONNABORTED,
                                     f"TLS handshake with {_peer(address)} failed: {reason}") from exc


def _peer(address: Any) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    return str(address)


def _check_file(given: Any, what: str) -> pathlib.Path:
    if not isinstance(given, (str, os.PathLike)) or not str(given):
        raise TypeError(f"{what} must be a path, got {given!r:.80}")
    path = pathlib.Path(given)
    if not path.exists():
        raise FileNotFoundError(errno.ENOENT, f"{what} not found", str(path))
    if not path.is_file():
        raise ValueError(f"{what} is not a file: {path}")
    if not os.access(path, os.R_OK):
        raise PermissionError(errno.EACCES, f"{what} is not readable", str(path))
    return path


@dataclasses.dataclass(frozen=True)
class TLSConfig:
    """The certificate, key and CA of one process, for two-way TLS over Pyro5.

    The files are read when the config is made (a renewed certificate takes a
    new :class:`TLSConfig`, applied again). Put it in force with
    :func:`apply_tls` or :func:`tls_settings`, or hand it to
    :func:`~landlord.serving.serve_landlord` (``tls=``).

    Args:
        certfile: this process's certificate (PEM), with its chain up to the
            CA if there are intermediates. When the process serves, it must
            name the host clients connect to, as written in the URIs.
        keyfile: its private key (PEM, unencrypted).
        cafile: the CA certificate(s) (PEM) the peers' certificates must be
            signed by; nothing else is trusted.
        handshake_timeout: seconds a connecting client may take over its TLS
            handshake before a server closes the connection.

    Raises:
        TypeError: a path is not a str or path.
        FileNotFoundError: a file does not exist.
        PermissionError: a file cannot be read.
        ValueError: a path is not a file, the certificate and key do not load
            or do not match, the CA file holds no certificate, or a bad
            ``handshake_timeout``.
    """

    certfile: pathlib.Path
    keyfile: pathlib.Path
    cafile: pathlib.Path
    handshake_timeout: float = dataclasses.field(default=HANDSHAKE_TIMEOUT, kw_only=True)
    _server: ssl.SSLContext = dataclasses.field(init=False, repr=False, compare=False)
    _client: ssl.SSLContext = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # frozen: the checked values are set through object.__setattr__
        object.__setattr__(self, "certfile", _check_file(self.certfile, "certificate file"))
        object.__setattr__(self, "keyfile", _check_file(self.keyfile, "key file"))
        object.__setattr__(self, "cafile", _check_file(self.cafile, "CA file"))
        timeout = self.handshake_timeout
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
                or not (timeout > 0 and math.isfinite(timeout)):
            raise ValueError(f"handshake_timeout must be a positive number of seconds, got {timeout!r}")
        object.__setattr__(self, "_server", self._context(server=True))
        object.__setattr__(self, "_client", self._context(server=False))

    def _context(self, *, server: bool) -> ssl.SSLContext:
        # PROTOCOL_TLS_* verify the peer by default; a client also checks that the server's name is its host
        context = _ServerContext(ssl.PROTOCOL_TLS_SERVER) if server else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.verify_mode = ssl.CERT_REQUIRED  # a server too: no certificate, no connection
        try:
            context.load_cert_chain(str(self.certfile), str(self.keyfile))
        except ssl.SSLError as exc:
            raise ValueError(f"cannot load the certificate {self.certfile} with the key {self.keyfile}: "
                             f"{exc.reason or exc}") from None
        try:
            context.load_verify_locations(cafile=str(self.cafile))  # only this CA: no system CAs
        except ssl.SSLError as exc:
            raise ValueError(f"no CA certificate in {self.cafile}: {exc.reason or exc}") from None
        if isinstance(context, _ServerContext):
            context.sslsocket_class = _BoundedHandshakeSocket
            context.handshake_timeout = float(self.handshake_timeout)
        return context

    def server_context(self) -> ssl.SSLContext:
        """The context a daemon serves with: requires a client certificate signed by the CA."""
        return self._server

    def client_context(self) -> ssl.SSLContext:
        """The context a proxy connects with: presents the certificate, verifies the server against the CA."""
        return self._client


def _pyro_contexts() -> tuple[ssl.SSLContext | None, ssl.SSLContext | None]:
    for name in (_PYRO_SERVER_CONTEXT, _PYRO_CLIENT_CONTEXT):
        if not hasattr(Pyro5.socketutil, name):
            raise RuntimeError(f"this Pyro5 ({Pyro5.__version__}) keeps no {name} in Pyro5.socketutil: "
                               f"landlord.tls cannot put its SSL contexts in force")
    return getattr(Pyro5.socketutil, _PYRO_SERVER_CONTEXT), getattr(Pyro5.socketutil, _PYRO_CLIENT_CONTEXT)


def _set_pyro_contexts(server: ssl.SSLContext | None, client: ssl.SSLContext | None) -> None:
    _pyro_contexts()  # raises if Pyro5 keeps them elsewhere
    setattr(Pyro5.socketutil, _PYRO_SERVER_CONTEXT, server)
    setattr(Pyro5.socketutil, _PYRO_CLIENT_CONTEXT, client)


def apply_tls(tls: TLSConfig | None) -> None:
    """Put ``tls`` in force for this whole process (``None``: plain TCP again).

    Every daemon made and every proxy connected from now on, in any thread,
    uses it; connections already made keep what they had. See the module
    docstring: Pyro5's configuration is one per process.

    Args:
        tls: the certificate, key and CA to use, or ``None`` for no TLS.

    Raises:
        TypeError: ``tls`` is not a :class:`TLSConfig` or ``None``.
        RuntimeError: this Pyro5 release keeps its SSL contexts where this
            module cannot put its own (nothing is changed).
    """
    if tls is not None and not isinstance(tls, TLSConfig):
        raise TypeError(f"tls must be a TLSConfig or None, got {type(tls).__name__}")
    with _lock:
        _pyro_contexts()  # before changing anything
        if tls is None:
            settings: dict[str, Any] = {"SSL": False, "SSL_SERVERCERT": "", "SSL_SERVERKEY": "",
                                        "SSL_REQUIRECLIENTCERT": False, "SSL_CLIENTCERT": "",
                                        "SSL_CLIENTKEY": "", "SSL_CACERTS": ""}
        else:
            # the same values Pyro5 would build its own contexts from, so that its config tells the truth
            settings = {"SSL": True, "SSL_SERVERCERT": str(tls.certfile), "SSL_SERVERKEY": str(tls.keyfile),
                        "SSL_REQUIRECLIENTCERT": True, "SSL_CLIENTCERT": str(tls.certfile),
                        "SSL_CLIENTKEY": str(tls.keyfile), "SSL_CACERTS": str(tls.cafile)}
        settings.update(SSL_SERVERKEYPASSWD="", SSL_CLIENTKEYPASSWD="")
        for name, value in settings.items():
            setattr(pyro_config, name, value)
        if tls is None:
            _set_pyro_contexts(None, None)
        else:
            _set_pyro_contexts(tls.server_context(), tls.client_context())
    log.info("TLS %s for this process", f"in force ({tls.certfile}, CA {tls.cafile})" if tls else "off")


@contextlib.contextmanager
def tls_settings(tls: TLSConfig | None) -> Iterator[None]:
    """Put ``tls`` in force for this whole process during the block (as
    :func:`apply_tls`), then restore the SSL settings that were in force before.

    Every thread of the process sees the change while the block runs.

    Args:
        tls: the certificate, key and CA to use, or ``None`` for no TLS.

    Raises:
        TypeError, RuntimeError: as :func:`apply_tls`.
    """
    with _lock:
        before = {name: getattr(pyro_config, name) for name in PYRO_SSL_SETTINGS}
        contexts = _pyro_contexts()
        apply_tls(tls)
    try:
        yield
    finally:
        with _lock:
            for name, value in before.items():
                setattr(pyro_config, name, value)
            _set_pyro_contexts(*contexts)
