"""Pyro5's name server on one replica of a replicated lookup service: :class:`ReplicaNameServer`.

Each replica serves it (``lookup serve --etcd ... --pyro-ns``). While the
replica leads, every call is answered by a
:class:`~lookup.service.pyrons.face.NameServerFace` over the lookup service of
its term, made when the term begins: it takes back the names registered
through the face of an earlier term (they are ordinary registrations, leases
in etcd) and pings their daemons; when the term ends its pings stop, so only
the leader keeps names alive. While the replica does not lead, every call
raises Pyro5's own ``NamingError`` naming the leader's lookup service: an
unmodified Pyro5 client reads it (a ``landlord.NotLeaderError`` would reach
it as a ``SerializeError``), and the Pyro5 name server has no redirection a
client would follow.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import Pyro5.errors
import Pyro5.server
from Pyro5.errors import NamingError

from ..lookupservice import LookupService
from .face import NameServerFace
from .liveness import PingTerms
from .pinger import ping_daemon

__all__ = ["ReplicaNameServer", "Replica"]

log = logging.getLogger("lookup.pyrons")

T = TypeVar("T")


class Replica(Protocol):
    """What :class:`ReplicaNameServer` needs of a replica (a ``ReplicatedLookupService``)."""

    @property
    def leading(self) -> bool: ...  # pragma: no cover

    @property
    def key(self) -> str: ...  # pragma: no cover

    def leader(self) -> str | None: ...  # pragma: no cover

    def on_term(self, callback: Callable[[Any], None]) -> None: ...  # pragma: no cover

    def on_term_end(self, callback: Callable[[Any], None]) -> None: ...  # pragma: no cover


class ReplicaNameServer:
    """Pyro5's ``NameServer`` interface on a replica: the face of the term it leads, else ``NamingError``.

    Make it before the replica starts (it asks to be told of every term).

    Args:
        replica: the replica whose terms it answers from.
        terms: how names registered through it are kept alive.
        ping: how one daemon address is pinged (as :class:`~lookup.service.pyrons.face.NameServerFace`'s).

    Raises:
        RuntimeError: the replica has started.
        TypeError: ``terms`` is not a PingTerms.
    """

    def __init__(self, replica: Replica, terms: PingTerms | None = None,
                 ping: Callable[[str, float], None] = ping_daemon) -> None:
        if terms is not None and not isinstance(terms, PingTerms):
            raise TypeError(f"terms must be a PingTerms or None, got {type(terms).__name__}")
        self._replica = replica
        self.terms = terms if terms is not None else PingTerms()
        self._ping = ping
        self._lock = threading.Lock()
        self._term: tuple[LookupService, NameServerFace] | None = None
        self._own_uri: str | None = None
        replica.on_term(self._begin)
        replica.on_term_end(self._end)

    @property
    def own_uri(self) -> str | None:
        """This face's URI, listed as ``Pyro.NameServer`` by the leader (set once it is served)."""
        return self._own_uri

    @own_uri.setter
    def own_uri(self, uri: str | None) -> None:
        with self._lock:
            self._own_uri = uri
            if self._term is not None:
                self._term[1].own_uri = uri

    def answers_broadcast(self) -> bool:
        """Whether Pyro5's broadcast discovery is answered now: by the leader alone, so that
        ``locate_ns()`` finds it."""
        return self._replica.leading

    def held_names(self) -> int:
        """How many names the face of the term this replica leads holds (0 when it leads none)."""
        with self._lock:
            return self._term[1].held_names() if self._term is not None else 0

    def close(self) -> None:
        """Stop pinging (the names stay in etcd until their leases run out or another term takes them)."""
        with self._lock:
            term, self._term = self._term, None
        if term is not None:
            term[1].close()

    # -- Pyro5's NameServer, answered by the face of this replica's term ----------------------

    @Pyro5.server.expose
    def count(self) -> int:
        """As Pyro5's ``count``. Raises NamingError where this replica does not lead."""
        return self._answer(lambda face: face.count())

    @Pyro5.server.expose
    def ping(self) -> None:
        """As Pyro5's ``ping``: it answers only where this replica leads (else NamingError), so
        ``nsc ping`` tells the name server from a follower."""
        self._answer(lambda face: face.ping())

    @Pyro5.server.expose
    def lookup(self, name: str, return_metadata: bool = False) -> Any:
        """As Pyro5's ``lookup``. Raises NamingError where this replica does not lead, or the name is unknown."""
        return self._answer(lambda face: face.lookup(name, return_metadata))

    @Pyro5.server.expose
    def register(self, name: str, uri: Any, safe: bool = False, metadata: Any = None) -> None:
        """As Pyro5's ``register``, written to etcd. Raises NamingError where this replica does not lead."""
        self._answer(lambda face: face.register(name, uri, safe, metadata))

    @Pyro5.server.expose
    def set_metadata(self, name: str, metadata: Any) -> None:
        """As Pyro5's ``set_metadata``. Raises NamingError where this replica does not lead."""
        self._answer(lambda face: face.set_metadata(name, metadata))

    @Pyro5.server.expose
    def remove(self, name: str | None = None, prefix: str | None = None, regex: str | None = None) -> int:
        """As Pyro5's ``remove``. Raises NamingError where this replica does not lead."""
        return self._answer(lambda face: face.remove(name, prefix, regex))

    @Pyro5.server.expose
    def list(self, prefix: str | None = None, regex: str | None = None, return_metadata: bool = False
             ) -> dict[str, Any]:
        """As Pyro5's ``list``. Raises NamingError where this replica does not lead."""
        return self._answer(lambda face: face.list(prefix, regex, return_metadata))

    @Pyro5.server.expose
    def yplookup(self, meta_all: Any = None, meta_any: Any = None, return_metadata: bool = True) -> dict[str, Any]:
        """As Pyro5's ``yplookup``. Raises NamingError where this replica does not lead."""
        return self._answer(lambda face: face.yplookup(meta_all, meta_any, return_metadata))

    # -- terms --------------------------------------------------------------------------------

    def _answer(self, action: Callable[[NameServerFace], T]) -> T:
        """``action`` on the face of this replica's term, its result answered only if the term lasted
        through it (as the replica's own object answers).

        Raises:
            NamingError: this replica leads no term; the term ended while answering; or the term's
                store failed under the call (etcd did not confirm a write), which an unmodified
                Pyro5 client could not read as the store's own error. Each says to ask again.
            TypeError, ValueError, PyroError: the face's own, as Pyro5's name server raises them.
        """
        face = self._face()
        try:
            result = action(face)
        except (NamingError, TypeError, ValueError, Pyro5.errors.PyroError):
            self._still_answering(face)
            raise
        except Exception as exc:
            log.warning("%s: a name server call failed in its term (%s)", self._replica.key, exc)
            raise NamingError(f"{self._replica.key}: the term ended, or etcd did not confirm the change, "
                              "while answering; ask again") from None
        self._still_answering(face)
        return result

    def _still_answering(self, face: NameServerFace) -> None:
        """Raise NamingError unless ``face``'s term still answers: an answer of a term that ended
        meanwhile may not hold (a write the next leader never loaded)."""
        with self._lock:
            current = self._term is not None and self._term[1] is face
        if not (current and self._replica.leading):
            raise NamingError(f"{self._replica.key}: the term ended while answering; ask again")

    def _face(self) -> NameServerFace:
        """The face of the term this replica leads and answers in now.

        Raises:
            NamingError: it leads none (naming the leader if it knows one).
        """
        if self._replica.leading:
            with self._lock:
                if self._term is not None:
                    return self._term[1]
        leader = self._replica.leader()
        if leader is None:
            raise NamingError(f"this name server does not lead {self._replica.key} and knows no leader now; "
                              "ask again")
        raise NamingError(f"this name server does not lead {self._replica.key}; the leader's lookup service is "
                          f"{leader}: ask its name server")

    def _begin(self, service: LookupService) -> None:
        """A term begins (before it answers): its face takes back the names registered through an earlier one."""
        face = NameServerFace(service, self.terms, self._ping)
        adopted = face.adopt_stored()
        with self._lock:
            face.own_uri = self._own_uri
            old, self._term = self._term, (service, face)
        if old is not None:  # its end was not reported (cannot happen as terms go; kept safe)
            old[1].close()
        log.info("%s: the name server answers from this term, holding %d name(s) registered through it",
                 self._replica.key, adopted)

    def _end(self, service: LookupService) -> None:
        """A term ends: its face stops pinging (the next leader's pings keep the names)."""
        with self._lock:
            if self._term is None or self._term[0] is not service:
                return
            face, self._term = self._term[1], None
        face.close()
