"""landlord.transport.verdicts: a failed call is a definite answer, or a reason to try again."""

from __future__ import annotations

import Pyro5.errors
import pytest

from landlord import LeaseDeniedError, LeaseError, LeaseMapError, UnknownLeaseError
from landlord.transport.verdicts import Verdict, classify


@pytest.mark.parametrize("error", [
    Pyro5.errors.CommunicationError("refused"),
    Pyro5.errors.ConnectionClosedError("closed"),
    Pyro5.errors.TimeoutError("no answer"),
    Pyro5.errors.ProtocolError("garbled"),
    Pyro5.errors.SerializeError("cut short"),
], ids=lambda error: type(error).__name__)
def test_no_answer_is_worth_retrying(error: BaseException) -> None:
    assert classify(error) is Verdict.RETRY


@pytest.mark.parametrize("error", [
    LeaseDeniedError("no"),
    UnknownLeaseError("never heard of it"),
    LeaseError("renewal failed without a reason"),
    LeaseMapError({}),
    Pyro5.errors.SecurityError("not allowed"),
    Pyro5.errors.NamingError("no such object"),
    Pyro5.errors.DaemonError("daemon trouble"),
    ValueError("a bug"),
    RuntimeError("something else"),
], ids=lambda error: type(error).__name__)
def test_an_answer_or_anything_else_is_definite(error: BaseException) -> None:
    assert classify(error) is Verdict.DEFINITE
