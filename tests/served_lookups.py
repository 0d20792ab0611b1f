"""Helpers for tests of JoinManager and LookupCache: lookup services that die and come back, and waiting on logs."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any

import Pyro5.api
import Pyro5.server

from landlord import RenewResults
from lookup import LOOKUP_OBJECT_ID, LookupService


class RenewalSpy(LookupService):
    """A lookup service that tells when it has renewed a lease."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.renewed = threading.Event()

    @Pyro5.server.expose
    def renew(self, cookie: str, duration: float) -> float:
        granted = super().renew(cookie, duration)
        self.renewed.set()
        return granted

    @Pyro5.server.expose
    def renew_all(self, cookies: Sequence[str], durations: Sequence[float]) -> RenewResults:
        results = super().renew_all(cookies, durations)
        self.renewed.set()
        return results


class _Daemon(Pyro5.api.Daemon):
    """A daemon that can cut its clients off: Pyro5's thread server keeps
    serving connections it has accepted after ``shutdown``, which a lookup
    service that died would not."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.connections: list[Any] = []

    def validateHandshake(self, conn: Any, data: Any) -> Any:
        self.connections.append(conn)
        return super().validateHandshake(conn, data)

    def cut_clients(self) -> None:
        for conn in self.connections:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # closed already


class ServedLookup:
    """A LookupService served by a Pyro5 daemon of its own under the well-known
    object id, so that it can be stopped (its daemon shut down: connections
    refused) and started again at the same URI, as itself or as a restarted
    service that has forgotten everything.

    Args:
        service: the lookup service (default: a new one).
        host: the address to serve on.
        port: the port (default: any free one).
    """

    def __init__(self, service: LookupService | None = None, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.service = service if service is not None else LookupService()
        self.host = host
        self.port = port
        self.uri = ""
        self._daemon: _Daemon | None = None
        self._thread: threading.Thread | None = None
        self.start()

    def start(self) -> None:
        """Serve the service again (on the same port once it has one)."""
        daemon = _Daemon(host=self.host, port=self.port)
        self.port = daemon.sock.getsockname()[1]
        uri = str(daemon.register(self.service, LOOKUP_OBJECT_ID))
        assert not self.uri or uri == self.uri
        self.uri = uri
        self._daemon = daemon
        self._thread = threading.Thread(target=daemon.requestLoop, name="served-lookup", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Shut the daemon down and cut its clients off: from now on, connections to it are refused."""
        if self._daemon is None:
            return
        self._daemon.shutdown()
        self._daemon.cut_clients()
        assert self._thread is not None
        self._thread.join(10)
        self._daemon.close()
        self._daemon = None

    def restart(self, *, forget: bool = True) -> None:
        """Stop, then start again: with a new, empty LookupService if ``forget``, else with the same one."""
        self.stop()
        if forget:
            self.service.close()
            self.service = LookupService()
        self.start()

    def close(self) -> None:
        self.stop()
        self.service.close()


class LogWatch(logging.Handler):
    """Collects the records of one logger (at DEBUG and above) and lets a test wait for some to arrive."""

    def __init__(self, name: str) -> None:
        super().__init__(logging.DEBUG)
        self.logger = logging.getLogger(name)
        self.records: list[logging.LogRecord] = []
        self._condition = threading.Condition()
        self._old_level = self.logger.level

    def __enter__(self) -> LogWatch:
        self._old_level = self.logger.level
        self.logger.setLevel(logging.DEBUG)
        self.logger.addHandler(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.logger.removeHandler(self)
        self.logger.setLevel(self._old_level)

    def emit(self, record: logging.LogRecord) -> None:
        with self._condition:
            self.records.append(record)
            self._condition.notify_all()

    def matching(self, level: int, text: str) -> list[str]:
        """The messages logged at ``level`` that contain ``text``."""
        with self._condition:
            return [r.getMessage() for r in self.records if r.levelno == level and text in r.getMessage()]

    def wait_for(self, condition: Callable[[LogWatch], bool], timeout: float = 10.0) -> bool:
        """Block until ``condition(self)`` holds (checked as each record arrives); return whether it did."""
        with self._condition:
            return self._condition.wait_for(lambda: condition(self), timeout)

    def wait_count(self, level: int, text: str, count: int, timeout: float = 10.0) -> bool:
        """Block until ``count`` messages at ``level`` containing ``text`` have been logged."""
        return self.wait_for(lambda watch: len(watch.matching(level, text)) >= count, timeout)
