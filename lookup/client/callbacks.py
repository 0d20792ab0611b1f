"""Where a :class:`~lookup.LookupCache` receives its events: :class:`EventReceiver`.

Events are received on the local address of the connection to each lookup
service (read from the connection once it is made), so a lookup service on
another host can deliver them: one Pyro5 daemon per such address, made when
first needed. Per address, not one daemon on all interfaces, because it then
listens only where a lookup service can reach it, and every URI it hands
out is one its daemon made. A ``callback_host`` serves on that address
instead (``"0.0.0.0"`` or ``"::"``: on all interfaces, each lookup service
being given the local address of its own connection); a caller's daemon is
used as it is. A URI naming ``0.0.0.0`` or ``::`` is never handed out.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import Pyro5.api
import Pyro5.core

from landlord.transport.addresses import WILDCARD_HOSTS, uri_host

from ..events import ServiceEvent

__all__ = ["EventReceiver", "local_address"]

log = logging.getLogger("lookup.callbacks")  # its name before it moved; logs and tests know it by it


class _EventSink:
    """The Pyro5 object lookup services send events to (one per daemon)."""

    def __init__(self, deliver: Callable[[ServiceEvent], None]) -> None:
        self._deliver = deliver

    @Pyro5.api.expose
    def notify(self, event: ServiceEvent) -> None:
        self._deliver(event)


class _Serving:
    """A daemon events are received on, the sink registered with it, and (if the receiver made it) its thread."""

    __slots__ = ("daemon", "sink", "thread")

    def __init__(self, daemon: Pyro5.api.Daemon, sink: _EventSink, thread: threading.Thread | None) -> None:
        self.daemon = daemon
        self.sink = sink
        self.thread = thread  # None: the caller's daemon, served by the caller


class EventReceiver:
    """Receives events for one cache on the daemons it needs, and says where to send them.

    Thread-safe.

    Args:
        deliver: called with each event received (on a daemon's thread).
        daemon: a Pyro5 daemon, already serving, to receive events on (wins
            over ``callback_host``; default: daemons of the receiver's own).
        callback_host: the address to receive events on (default: the
            local address of the connection to each lookup service).

    Raises:
        TypeError: ``callback_host`` not a str.
        ValueError: an empty ``callback_host``.
        OSError: ``callback_host`` is not an address of this host.
    """

    def __init__(self, deliver: Callable[[ServiceEvent], None], *, daemon: Pyro5.api.Daemon | None = None,
                 callback_host: str | None = None) -> None:
        if callback_host is not None and not isinstance(callback_host, str):
            raise TypeError(f"callback_host must be a str, got {type(callback_host).__name__}")
        if callback_host is not None and not callback_host.strip("[]"):
            raise ValueError("callback_host must not be empty (give None for the connection's local address)")
        self._deliver = deliver
        self._lock = threading.Lock()
        self._closed = False
        self._by_address: dict[str, _Serving] = {}  # local address -> the daemon serving there
        self._fixed: _Serving | None = None  # the one daemon, when daemon= or callback_host= says which
        if daemon is not None:
            sink = _EventSink(deliver)
            daemon.register(sink)
            self._fixed = _Serving(daemon, sink, None)
        elif callback_host is not None:
            self._fixed = self._serve(callback_host.strip("[]"))

    def sink_uri(self, proxy: Any) -> str:
        """The URI to hand the lookup service behind ``proxy`` (this thread's) for its events.

        Raises:
            RuntimeError: the receiver is closed.
            ValueError: events are received on IPv4's ``0.0.0.0`` only, and
                the lookup service is reached over IPv6.
            OSError: the connection, or a daemon on its local address, failed.
        """
        serving = self._fixed
        if serving is None:
            address = local_address(proxy)
            with self._lock:
                if self._closed:
                    raise RuntimeError("the cache is closed")
                serving = self._by_address.get(address)
                if serving is None:
                    serving = self._by_address[address] = self._serve(address)
        uri = serving.daemon.uriFor(serving.sink)
        if uri.host in WILDCARD_HOSTS or uri.host is None:  # listening on all: name the address it is reached on
            address = local_address(proxy)
            if uri.host == "0.0.0.0" and ":" in address:
                raise ValueError(f"events are received on 0.0.0.0 (IPv4 only), but {proxy._pyroUri} is reached "
                                 f"over IPv6 ({address}): give callback_host='::' to listen on both")
            uri = Pyro5.core.URI(f"PYRO:{uri.object}@{uri_host(address)}:{uri.port}")
        return str(uri)

    def close(self) -> None:
        """Stop receiving: shut the receiver's own daemons down, and leave a caller's daemon serving."""
        with self._lock:
            self._closed = True
            servings = list(self._by_address.values()) + ([self._fixed] if self._fixed is not None else [])
            self._by_address.clear()
            self._fixed = None
        for serving in servings:
            try:
                serving.daemon.unregister(serving.sink)
            except Exception:
                pass  # a caller's daemon closed before the cache
            if serving.thread is not None:  # one of ours
                serving.daemon.shutdown()
                if serving.thread is not threading.current_thread():
                    serving.thread.join(10)

    def _serve(self, host: str) -> _Serving:
        """A daemon of the receiver's own on ``host``, serving a sink, on a thread of its own."""
        daemon = Pyro5.api.Daemon(host=host, port=0)
        sink = _EventSink(self._deliver)
        daemon.register(sink)
        thread = threading.Thread(target=daemon.requestLoop, name=f"LookupCache-events {host}", daemon=True)
        thread.start()
        log.debug("receiving events on %s", daemon.locationStr)
        return _Serving(daemon, sink, thread)


def local_address(proxy: Any) -> str:
    """The local address of ``proxy``'s connection (connecting it first if need be)."""
    if proxy._pyroConnection is None:
        proxy._pyroBind()
    sockname = proxy._pyroConnection.sock.getsockname()
    if not isinstance(sockname, tuple):
        return "127.0.0.1"  # a Unix domain socket: the lookup service is on this host
    host = str(sockname[0])
    if host.startswith("::ffff:") and "." in host:
        host = host[len("::ffff:"):]  # an IPv4 address seen through an IPv6 socket
    return host
