"""Telling systemd how a server is doing: the ``sd_notify`` protocol, spoken here without libsystemd.

A unit of ``Type=notify`` counts its service as started only once the service says ``READY=1``;
``STOPPING=1`` says it is shutting down, ``STATUS=...`` is the line ``systemctl status`` shows. Each
message is one datagram of ``NAME=value`` lines sent to the AF_UNIX socket that systemd names in
``$NOTIFY_SOCKET``: a file path (``/run/systemd/notify``) or, after an ``@``, a name in Linux's
abstract namespace. Without the variable (not started by systemd, or by a unit of another type)
every call does nothing.

A notification never stops a server: a socket that is missing, refuses or is full (the sends do not
block) is logged once, at WARNING, and the call answers ``False``. A bad field name or a value with
a line break is a programming error and raises.

Usage, from a server's ``ready`` callback::

    notifier = SystemdNotifier.from_environment()
    notifier.stopping_when_set(stop)
    serve(..., stop=stop, ready=lambda uri: notifier.ready(f"serving at {uri}"))
"""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
from collections.abc import Callable, Mapping

__all__ = ["SystemdNotifier", "serving_hooks", "NOTIFY_SOCKET"]

NOTIFY_SOCKET = "NOTIFY_SOCKET"  # the variable systemd sets for a Type=notify service
_FIELD_NAME = re.compile(r"[A-Z][A-Z0-9_]*")

log = logging.getLogger(__name__)


class SystemdNotifier:
    """Sends ``sd_notify`` messages to one socket, or nowhere when there is none.

    Args:
        address: the socket, as ``$NOTIFY_SOCKET`` gives it (an absolute path, or ``@name`` for an
            abstract one); ``None`` or ``""``: no socket, every call does nothing. An address of
            another form is logged (once) when a message is sent, and nothing is sent.
    """

    def __init__(self, address: str | None) -> None:
        self.address = address or None
        self._target = _socket_address(self.address)
        self._warned = False
        self._warned_lock = threading.Lock()

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> SystemdNotifier:
        """The notifier of the socket ``$NOTIFY_SOCKET`` names (none if unset or empty).

        Args:
            environ: the environment (default ``os.environ``).
        """
        return cls((os.environ if environ is None else environ).get(NOTIFY_SOCKET))

    @property
    def enabled(self) -> bool:
        """Whether there is a socket to notify (even one that turns out not to answer)."""
        return self.address is not None

    def ready(self, status: str | None = None) -> bool:
        """Say the service is started (``READY=1``), with the line ``systemctl status`` shows.

        Raises:
            ValueError: ``status`` has a line break.
        """
        return self.notify({"READY": "1", **({} if status is None else {"STATUS": status})})

    def stopping(self, status: str | None = None) -> bool:
        """Say the service is shutting down (``STOPPING=1``).

        Raises:
            ValueError: ``status`` has a line break.
        """
        return self.notify({"STOPPING": "1", **({} if status is None else {"STATUS": status})})

    def status(self, text: str) -> bool:
        """Set the line ``systemctl status`` shows (``STATUS=``).

        Raises:
            ValueError: ``text`` has a line break.
        """
        return self.notify({"STATUS": text})

    def notify(self, fields: Mapping[str, str]) -> bool:
        """Send ``fields`` in one datagram; whether it was sent (``False`` with no socket, or if the
        socket failed: logged once).

        Raises:
            ValueError: no field, a name that is not capitals, digits and ``_``, or a value with a
                line break (it would be read as a field of its own).
        """
        message = _message(fields)
        if self._target is None:
            if self.address is not None:
                self._warn_once(f"${NOTIFY_SOCKET} is {self.address!r}: neither an absolute path nor an @name")
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.setblocking(False)  # a full queue is an error here, never a server held up
                sock.sendto(message, self._target)
        except OSError as exc:
            self._warn_once(f"cannot notify systemd at {self.address}: {exc.strerror or exc}")
            return False
        return True

    def stopping_when_set(self, stop: threading.Event) -> threading.Thread | None:
        """Send ``STOPPING=1`` as soon as ``stop`` is set (by SIGTERM's handler, say), from a daemon
        thread of its own; the thread (``None`` with no socket: nothing to wait for)."""
        if not self.enabled:
            return None

        def wait_then_notify() -> None:
            stop.wait()
            self.stopping()

        watcher = threading.Thread(target=wait_then_notify, name="systemd-stopping", daemon=True)
        watcher.start()
        return watcher

    def _warn_once(self, message: str) -> None:
        with self._warned_lock:
            first, self._warned = not self._warned, True
        if first:
            log.warning("%s (further failures are not logged)", message)
        else:
            log.debug("%s", message)


def _socket_address(address: str | None) -> str | None:
    """``address`` as ``socket.sendto`` takes it (an abstract name after a NUL); ``None`` for none or
    a malformed one."""
    if address is None:
        return None
    if address.startswith("@") and len(address) > 1:
        return "\0" + address[1:]
    if address.startswith("/"):
        return address
    return None


def _message(fields: Mapping[str, str]) -> bytes:
    """``fields`` as the protocol's ``NAME=value`` lines.

    Raises:
        ValueError: no field, a bad name or a value with a line break.
    """
    if not fields:
        raise ValueError("a notification has at least one field")
    lines = []
    for name, value in fields.items():
        if not _FIELD_NAME.fullmatch(name):
            raise ValueError(f"a notification's field is named in capitals, digits and '_', not {name!r}")
        if "\n" in value:
            raise ValueError(f"a notification's {name} is one line, not {value!r:.80}")
        lines.append(f"{name}={value}")
    return "\n".join(lines).encode("utf-8")


def serving_hooks(what: str, environ: Mapping[str, str] | None = None
                  ) -> tuple[threading.Event, Callable[[str], None]]:
    """What a server command passes its serve function as ``stop`` and ``ready`` so that systemd
    (``Type=notify``) hears ``READY=1`` (status ``<what> at <uri>``) once it answers and ``STOPPING=1``
    once SIGTERM sets the stop event; with no ``$NOTIFY_SOCKET``, an event and a callback that do
    nothing more.

    Args:
        what: what the status calls the server ("lookup service").
        environ: where ``NOTIFY_SOCKET`` is looked up (default ``os.environ``).
    """
    notifier = SystemdNotifier.from_environment(environ)
    stop = threading.Event()
    notifier.stopping_when_set(stop)

    def ready(uri: str) -> None:
        notifier.ready(f"{what} at {uri}")

    return stop, ready

