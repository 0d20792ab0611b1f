"""Serving the name server face beside a lookup service: :class:`PyroNs`, :class:`NameServerBridge`.

``python -m lookup serve --pyro-ns [HOST:]PORT`` serves a
:class:`~lookup.service.pyrons.face.NameServerFace` under Pyro5's name
server object id (``Pyro.NameServer``) on a daemon of its own at that
address, with the guarded server the lookup service has
(:func:`landlord.serving.serve_object`: serpent, json and msgpack accepted,
messages capped, no client can hold it), on its own threads: a slow regex
listing or a flood through the name server face never delays the lookup
service's own callers. It stops when the lookup service does.

On a replica of a replicated lookup service it serves a
:class:`~lookup.service.pyrons.replica.ReplicaNameServer` instead, and answers
broadcasts only while the replica leads.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable

import Pyro5.core

from landlord.serving import SERVER_TYPE, FrameLimits, serve_object
from landlord.tls import TLSConfig
from landlord.transport.addresses import check_host

from ..lookupservice import LookupService
from .broadcast import PYRO_NS_BROADCAST_PORT, BroadcastResponder
from .face import NameServerFace
from .liveness import PingTerms
from .replica import ReplicaNameServer

__all__ = ["PyroNs", "NameServerBridge", "PYRO_NS_PORT", "STARTUP_TIMEOUT"]

log = logging.getLogger("lookup.pyrons")

PYRO_NS_PORT = 9090      # Pyro5's NS_PORT: where its clients look by default
STARTUP_TIMEOUT = 30.0   # seconds the face may take to answer once asked to serve


@dataclasses.dataclass(frozen=True)
class PyroNs:
    """Where and how to serve the name server face.

    Args:
        port: its port (0: any free one).
        host: the address it listens on (``None``: the lookup service's).
        terms: how names registered through it are kept alive (see :class:`PingTerms`).
        broadcast_port: the UDP port where it answers Pyro5's broadcast discovery (``locate_ns()``
            with no host; see :mod:`~lookup.service.pyrons.broadcast`), on the interface it
            listens on (every one, for a wildcard host; none for IPv6); ``None``: no answers.

    Raises:
        ValueError: a port out of range, or a host that is no host name or address.
    """

    port: int = PYRO_NS_PORT
    host: str | None = None
    terms: PingTerms = PingTerms()
    broadcast_port: int | None = PYRO_NS_BROADCAST_PORT

    def __post_init__(self) -> None:
        for port in (self.port, 0 if self.broadcast_port is None else self.broadcast_port):
            if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
                raise ValueError(f"the name server's ports must be 0 to 65535, got {port!r}")
        if self.host is not None:  # a host to listen on: the wildcard too (every interface)
            check_host(self.host)
        if not isinstance(self.terms, PingTerms):
            raise ValueError(f"terms must be PingTerms, got {type(self.terms).__name__}")

    @classmethod
    def parse(cls, text: str, terms: PingTerms | None = None,
              broadcast_port: int | None = PYRO_NS_BROADCAST_PORT) -> PyroNs:
        """``[HOST:]PORT`` (an IPv6 host in brackets: ``[::1]:9090``).

        Raises:
            ValueError: not of that form.
        """
        host, sep, port = text.rpartition(":")
        if not port.isdigit():
            raise ValueError(f"expected [HOST:]PORT, got {text!r}")
        if sep and not host:
            raise ValueError(f"expected a host before the ':' of {text!r}")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        return cls(int(port), host or None, terms if terms is not None else PingTerms(), broadcast_port)


class NameServerBridge:
    """A :class:`NameServerFace` of ``service``, served on a thread until :meth:`close`.

    Args:
        service: the lookup service it shows; or a replica's name server, served as it is
            (answering broadcasts only while the replica leads).
        settings: where, and the ping terms.
        host: the address to listen on when ``settings`` names none.
        advertise, tls, server_type, limits: as :func:`landlord.serving.serve_object` takes them.

    Raises:
        OSError: the address cannot be bound.
        TimeoutError: it did not answer within STARTUP_TIMEOUT.
    """

    def __init__(self, service: LookupService | ReplicaNameServer, settings: PyroNs, *, host: str,
                 advertise: str | None = None, tls: TLSConfig | None = None, server_type: str = SERVER_TYPE,
                 limits: FrameLimits | None = None) -> None:
        self.face: NameServerFace | ReplicaNameServer
        self._answers_broadcast: Callable[[], bool] | None = None  # None: always
        if isinstance(service, ReplicaNameServer):
            self.face, self._answers_broadcast = service, service.answers_broadcast
        else:
            self.face = NameServerFace(service, settings.terms)
            adopted = self.face.adopt_stored()
            if adopted:
                log.info("holding again %d name(s) registered through the name server face before a restart",
                         adopted)
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self.uri: str | None = None
        self._broadcast_port = settings.broadcast_port
        #: answers Pyro5's broadcast discovery (``None``: off, or its port could not be bound)
        self.responder: BroadcastResponder | None = None
        self._host, self._port = settings.host or host, settings.port
        self._advertise, self._tls, self._server_type, self._limits = advertise, tls, server_type, limits
        self._thread = threading.Thread(target=self._serve, name="pyro-ns", daemon=True)
        self._thread.start()
        try:
            self._wait_ready()
        except BaseException:
            self.close()
            raise
        self.responder = self._responder()

    def _responder(self) -> BroadcastResponder | None:
        """Answer broadcast discovery where the face listens; a port that cannot be bound is logged, not fatal
        (as the lookup's own discovery port)."""
        if self._broadcast_port is None or ":" in self._host or self.uri is None:  # IPv6 has no broadcast
            return None
        host = "" if self._host in ("0.0.0.0", "") else self._host
        try:
            return BroadcastResponder(self.uri, host, self._broadcast_port, answering=self._answers_broadcast)
        except OSError as exc:
            log.warning("not answering Pyro5's broadcast discovery: UDP %s:%d: %s", host or "*",
                        self._broadcast_port, exc)
            return None

    def _serve(self) -> None:
        try:
            serve_object(self.face, self._host, self._port, object_id=Pyro5.core.NAMESERVER_NAME, stop=self._stop,
                         ready=self._answering, name="Pyro5 name server", advertise=self._advertise, tls=self._tls,
                         server_type=self._server_type, limits=self._limits,
                         details="answered by the lookup service, names kept while their daemon answers "
                                 f"a ping every {self.face.terms.interval:g} s")
        except BaseException as exc:  # handed to the thread that started it
            self._failed = exc
            self._ready.set()

    def _answering(self, uri: str) -> None:
        self.uri = self.face.own_uri = uri
        self._ready.set()

    def _wait_ready(self) -> None:
        if not self._ready.wait(STARTUP_TIMEOUT):
            raise TimeoutError(f"the Pyro5 name server face did not answer within {STARTUP_TIMEOUT:g} s")
        if self._failed is not None:
            raise self._failed

    def close(self) -> None:
        """Stop serving, answering broadcasts and pinging."""
        if self.responder is not None:
            self.responder.close()
        self._stop.set()
        self._thread.join()
        self.face.close()
