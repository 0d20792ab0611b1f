"""Shared fixtures: a fake clock, and a real Pyro5 daemon serving in a thread."""

from __future__ import annotations

import threading
from typing import Iterator

import Pyro5.api
import pytest

import landlord


@pytest.fixture
def clock() -> landlord.FakeClock:
    return landlord.FakeClock()


class ServingDaemon:
    """A Pyro5 daemon on loopback with its request loop on a background thread."""

    def __init__(self) -> None:
        self.daemon = Pyro5.api.Daemon(host="127.0.0.1", port=0)
        self._thread = threading.Thread(target=self.daemon.requestLoop, name="test-daemon", daemon=True)
        self._thread.start()

    def register(self, obj: object) -> str:
        return str(self.daemon.register(obj))

    def close(self) -> None:
        self.daemon.shutdown()
        self._thread.join(timeout=10)
        self.daemon.close()


@pytest.fixture
def daemon() -> Iterator[ServingDaemon]:
    serving = ServingDaemon()
    try:
        yield serving
    finally:
        serving.close()


@pytest.fixture
def close_later() -> Iterator[list]:
    """Landlords (anything with close()) to close after the test."""
    closables: list = []
    yield closables
    for item in closables:
        item.close()
