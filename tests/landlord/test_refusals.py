"""landlord.transport.refusals: refusals counted by rule, their log held to a burst, and what tells
the client (on a clock passed in; no sockets)."""

from __future__ import annotations

import logging

import Pyro5.errors
import Pyro5.protocol
import Pyro5.serializers
import pytest

from landlord.transport.framing import (
    JSON,
    MARSHAL,
    MSG_CONNECT,
    MSG_INVOKE,
    SERPENT,
    FrameGatherer,
    FrameLimits,
    FrameRefused,
)
from landlord.transport.refusals import LOG_BURST, Refusals, connect_failure, refusal_message

LOG = logging.getLogger("tests.refusals")
REFUSAL = FrameRefused("too large", "a message of 5000 bytes is over the cap")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == LOG.name]


def test_refusals_are_counted_by_rule_and_each_logged_with_its_count(caplog: pytest.LogCaptureFixture) -> None:
    refusals = Refusals(LOG, clock=Clock())
    with caplog.at_level(logging.WARNING, LOG.name):
        refusals.count("deadline", "dropped a")
        refusals.count("deadline", "dropped b")
        refusals.count("tls", "refused c")
    assert refusals.counts == {"deadline": 2, "tls": 1}
    assert warnings(caplog) == ["dropped a (1 refused for 'deadline' so far)",
                                "dropped b (2 refused for 'deadline' so far)",
                                "refused c (1 refused for 'tls' so far)"]


def test_past_its_burst_a_rule_is_counted_not_logged_until_its_second_is_over(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    refusals = Refusals(LOG, burst=3, clock=clock)
    with caplog.at_level(logging.WARNING, LOG.name):
        for _ in range(5):
            refusals.count("deadline", "dropped")
        refusals.count("tls", "refused")  # another rule has a burst of its own
        clock.now += 0.75
        refusals.count("deadline", "dropped")
        assert len(warnings(caplog)) == 4
        clock.now += 0.25  # a second since the burst began, to the tick
        refusals.count("deadline", "dropped late")
    assert refusals.counts == {"deadline": 7, "tls": 1}
    assert warnings(caplog)[-1] == "dropped late (7 refused for 'deadline' so far)"
    assert len(warnings(caplog)) == 5


def test_the_default_burst_is_ten_lines_a_second(caplog: pytest.LogCaptureFixture) -> None:
    refusals = Refusals(LOG, clock=Clock())
    with caplog.at_level(logging.WARNING, LOG.name):
        for _ in range(LOG_BURST + 5):
            refusals.count("busy", "refused")
    assert LOG_BURST == 10 and len(warnings(caplog)) == 10
    assert refusals.counts["busy"] == 15


@pytest.mark.parametrize("burst", [0, -1, True, 2.0])
def test_a_bad_burst_is_refused(burst: object) -> None:
    with pytest.raises(ValueError, match="positive int"):
        Refusals(LOG, burst=burst)  # type: ignore[arg-type]


def parsed(raw: bytes) -> Pyro5.protocol.ReceivingMessage:
    received = Pyro5.protocol.ReceivingMessage(raw[:40])
    received.add_payload(raw[40:])
    return received


def loaded(received: Pyro5.protocol.ReceivingMessage) -> object:
    return Pyro5.serializers.serializers_by_id[received.serializer_id].loads(bytes(received.data))


def gatherer_with(msgtype: int, serializer: int, seq: int, *, greeted: bool) -> FrameGatherer:
    gatherer = FrameGatherer(FrameLimits())
    if greeted:
        gatherer.greeted()
    header = bytes(Pyro5.protocol.SendingMessage(msgtype, 0, seq, serializer, b"x" * 50).data)[:40]
    gatherer.feed(header, 0.0)  # the header read, its body still coming
    return gatherer


def test_connect_failure_is_a_connectfail_saying_why() -> None:
    received = parsed(connect_failure("go away", JSON, 5))
    assert (received.type, received.seq, received.serializer_id) == (Pyro5.protocol.MSG_CONNECTFAIL, 5, JSON)
    assert loaded(received) == "go away"
    assert parsed(connect_failure("go away")).serializer_id == SERPENT


def test_before_the_handshake_a_refusal_is_a_connectfail_in_the_clients_serializer() -> None:
    received = parsed(refusal_message(gatherer_with(MSG_CONNECT, JSON, 3, greeted=False), REFUSAL))
    assert (received.type, received.seq, received.serializer_id) == (Pyro5.protocol.MSG_CONNECTFAIL, 3, JSON)
    assert loaded(received) == str(REFUSAL)


def test_before_any_header_a_refusal_is_a_serpent_connectfail_numbered_0() -> None:
    received = parsed(refusal_message(FrameGatherer(FrameLimits()), REFUSAL))
    assert (received.type, received.seq, received.serializer_id) == (Pyro5.protocol.MSG_CONNECTFAIL, 0, SERPENT)


def test_a_refused_serializer_is_answered_in_serpent() -> None:
    gatherer = FrameGatherer(FrameLimits())
    gatherer.serializer_id, gatherer.seq = MARSHAL, 9  # as a header asking for marshal leaves them
    received = parsed(refusal_message(gatherer, REFUSAL))
    assert (received.seq, received.serializer_id) == (9, SERPENT)


def test_after_the_handshake_a_refusal_answers_the_call_with_a_protocol_error() -> None:
    received = parsed(refusal_message(gatherer_with(MSG_INVOKE, JSON, 12, greeted=True), REFUSAL))
    assert received.type == Pyro5.protocol.MSG_RESULT
    assert received.flags & Pyro5.protocol.FLAGS_EXCEPTION
    assert (received.seq, received.serializer_id) == (12, JSON)
    error = loaded(received)
    assert isinstance(error, Pyro5.errors.ProtocolError) and str(error) == str(REFUSAL)


def test_after_the_handshake_with_no_header_read_there_is_nothing_to_answer() -> None:
    gatherer = FrameGatherer(FrameLimits())
    gatherer.greeted()
    assert refusal_message(gatherer, REFUSAL) == b""
