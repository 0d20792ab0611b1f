"""How the guarded server (:mod:`~landlord.transport.frameserver`) refuses: each refusal
counted by rule and logged, the log held to a burst per rule (:class:`Refusals`), and the
client told which rule it broke where it can be (:func:`refusal_message`, :func:`connect_failure`).

Counting and the messages do no I/O: the server sends the bytes, once, and closes.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable

import Pyro5.errors
import Pyro5.protocol
import Pyro5.serializers

from .framing import ACCEPTED_SERIALIZERS, SERPENT, FrameGatherer, FrameRefused

__all__ = ["Refusals", "refusal_message", "connect_failure", "LOG_BURST"]

LOG_BURST = 10  # warnings per rule per second; the rest are counted


class Refusals:
    """Refusals counted by rule, each logged at WARNING, at most ``burst`` lines per rule per second,
    so that an attack floods no log; the count says how many there were.

    Safe to call from any thread (the gathering thread and the workers both count).

    Args:
        log: where the warnings go.
        burst: lines per rule per second (at least 1).
        clock: seconds on a monotonic scale (default: :func:`time.monotonic`).

    Raises:
        ValueError: ``burst`` is not a positive int.
    """

    def __init__(self, log: logging.Logger, *, burst: int = LOG_BURST,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if isinstance(burst, bool) or not isinstance(burst, int) or burst < 1:
            raise ValueError(f"burst must be a positive int, got {burst!r}")
        self.counts: collections.Counter[str] = collections.Counter()  # by rule: what was refused so far
        self._log = log
        self._burst = burst
        self._clock = clock
        self._lock = threading.Lock()
        self._logged: dict[str, tuple[float, int]] = {}  # per rule: when its second began, lines logged in it

    def count(self, reason: str, text: str) -> None:
        """Count a refusal under rule ``reason``, and log ``text`` unless the rule's burst is spent."""
        with self._lock:
            self.counts[reason] += 1
            counted = self.counts[reason]
            now = self._clock()
            since, logged = self._logged.get(reason, (now, 0))
            if now - since >= 1.0:
                since, logged = now, 0
            self._logged[reason] = (since, logged + 1)
        if logged < self._burst:
            self._log.warning("%s (%d refused for %r so far)", text, counted, reason)


def connect_failure(text: str, serializer_id: int = SERPENT, seq: int = 0) -> bytes:
    """A ``CONNECTFAIL`` message saying ``text``: how a client is refused before its handshake.

    Raises:
        KeyError: ``serializer_id`` is not one of Pyro5's.
    """
    data = Pyro5.serializers.serializers_by_id[serializer_id].dumps(text)
    return bytes(Pyro5.protocol.SendingMessage(Pyro5.protocol.MSG_CONNECTFAIL, 0, seq, serializer_id, data).data)


def refusal_message(gatherer: FrameGatherer, refusal: FrameRefused) -> bytes:
    """What tells a Pyro5 client which rule its connection broke: a ``CONNECTFAIL`` before the
    handshake, after it an exception answer to the call (when its header was read), else nothing.
    Written in the client's serializer when it is one the server takes, else in serpent."""
    serializer_id = gatherer.serializer_id
    if serializer_id not in ACCEPTED_SERIALIZERS:
        serializer_id = SERPENT
    assert serializer_id is not None  # by ACCEPTED_SERIALIZERS
    if not gatherer.is_greeted:
        return connect_failure(str(refusal), serializer_id, gatherer.seq or 0)
    if gatherer.seq is None:
        return b""
    data = Pyro5.serializers.serializers_by_id[serializer_id].dumps(Pyro5.errors.ProtocolError(str(refusal)))
    return bytes(Pyro5.protocol.SendingMessage(Pyro5.protocol.MSG_RESULT, Pyro5.protocol.FLAGS_EXCEPTION,
                                               gatherer.seq, serializer_id, data).data)
