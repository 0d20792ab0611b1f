"""Answering Pyro5's broadcast discovery of a name server: :class:`BroadcastResponder`.

``Pyro5.api.locate_ns()`` with no host broadcasts ``GET_NSURI`` on UDP (port
``NS_BCPORT``, 9091 by default) and takes the first answer, the name server's
URI as text, as where the name server is. This answers that, and nothing else,
from a thread of its own: any other packet is dropped, and answers are
rate-limited per source address and in all
(:class:`~lookup.discovery.ratelimit.ReplyLimiter`), since a request's source
address can be forged and the answer is five times its size.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Callable

from ...discovery.ratelimit import DropLog, ReplyLimiter

__all__ = ["BroadcastResponder", "PYRO_NS_BROADCAST_PORT", "REQUEST"]

log = logging.getLogger("lookup.pyrons")

PYRO_NS_BROADCAST_PORT = 9091  # Pyro5's NS_BCPORT
REQUEST = b"GET_NSURI"
_POLL = 0.5  # seconds a receive waits before it looks whether to stop


class BroadcastResponder:
    """Answers ``GET_NSURI`` on UDP ``host:port`` with ``uri`` until :meth:`close`.

    Args:
        uri: the name server face's URI, as Pyro5 clients are to reach it.
        host: the address to listen on (``""``: every interface).
        port: the UDP port (0: any free one; see :attr:`port`).
        limiter: how many answers go out (default: 1 a second to one address, 4 at once, 50 a second in all).
        answering: whether to answer now (default: always); a replica's name server answers only while
            it leads, so that ``locate_ns()`` finds the leader.

    Raises:
        OSError: the port cannot be bound (not shared: one name server per host answers broadcasts there).
    """

    def __init__(self, uri: str, host: str = "", port: int = PYRO_NS_BROADCAST_PORT, *,
                 limiter: ReplyLimiter | None = None, answering: Callable[[], bool] | None = None) -> None:
        self._answering = answering
        self._answer = uri.encode("iso-8859-1")
        self._limiter = limiter if limiter is not None else ReplyLimiter()
        self._drops = DropLog(log)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
            self._sock.bind((host, port))
            self._sock.settimeout(_POLL)
        except OSError:
            self._sock.close()
            raise
        #: the UDP port it answers on
        self.port: int = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pyro-ns-broadcast", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data, source = self._sock.recvfrom(100)
            except TimeoutError:
                continue
            except OSError:  # closed
                return
            self._handle(data, source)

    def _handle(self, data: bytes, source: tuple[str, int]) -> None:
        if self._answering is not None and not self._answering():
            return  # a follower: silence, as where no name server runs; the leader answers
        if data != REQUEST:
            self._drops.dropped(source[0], "not GET_NSURI")
        elif not self._limiter.allow(source[0]):
            self._drops.dropped(source[0], "over the reply rate")
        else:
            with contextlib.suppress(OSError):  # the requester went away
                self._sock.sendto(self._answer, source)

    def close(self) -> None:
        """Stop answering."""
        self._stop.set()
        self._thread.join()
        self._sock.close()
