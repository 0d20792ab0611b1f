"""landlord.transport.framing: whole messages gathered by rules, on a clock passed in (no sockets, no threads)."""

from __future__ import annotations

import zlib

import Pyro5.protocol
import pytest
import serpent

from landlord.transport.framing import (
    FLAGS_COMPRESSED,
    FLAGS_KEEPSERIALIZED,
    FLAGS_ONEWAY,
    HEADER_SIZE,
    JSON,
    MARSHAL,
    MSG_CONNECT,
    MSG_INVOKE,
    MSG_PING,
    MSGPACK,
    SERPENT,
    FrameGatherer,
    FrameLimits,
    FrameRefused,
    inflate,
)

LIMITS = FrameLimits(deadline=5.0, handshake_bytes=100, serpent_bytes=1000, json_bytes=4000, msgpack_bytes=3000,
                     annotation_bytes=64)


def message(msgtype: int, data: bytes, *, serializer: int = SERPENT, flags: int = 0, seq: int = 7,
            annotations: dict[str, bytes] | None = None) -> bytes:
    """A message as a Pyro5 client writes it (Pyro5's own encoder), its flags set as given."""
    sent = Pyro5.protocol.SendingMessage(msgtype, flags, seq, serializer, data, annotations)
    return bytes(sent.data)


def with_flags(raw: bytes, flags: int) -> bytes:
    """``raw`` with its header's flags set (Pyro5's encoder clears the compressed flag unless it compresses)."""
    return raw[:8] + flags.to_bytes(2, "big") + raw[10:]


def gatherer(*, greeted: bool = False) -> FrameGatherer:
    gathering = FrameGatherer(LIMITS)
    if greeted:
        gathering.greeted()
    return gathering


def refusal(gathering: FrameGatherer, data: bytes, now: float = 0.0) -> FrameRefused:
    with pytest.raises(FrameRefused) as refused:
        gathering.feed(data, now)
    return refused.value


# -- whole messages ------------------------------------------------------------------------------

def test_a_message_fed_byte_by_byte_is_taken_once_whole_and_only_then() -> None:
    sent = message(MSG_CONNECT, b"hello" * 10)
    gathering = gatherer()
    for index, byte in enumerate(sent):
        assert gathering.take() is None
        assert gathering.wanted() >= 1
        gathering.feed(bytes([byte]), now=index * 0.001)
    frame = gathering.take()
    assert frame is not None and frame.raw == sent
    assert (frame.msgtype, frame.serializer_id, frame.seq, frame.data_size) == (MSG_CONNECT, SERPENT, 7, 50)
    assert gathering.take() is None and gathering.buffered == 0 and gathering.started is None


def test_wanted_asks_for_the_header_then_exactly_the_rest() -> None:
    sent = message(MSG_CONNECT, b"x" * 60)
    gathering = gatherer()
    assert gathering.wanted() == HEADER_SIZE
    gathering.feed(sent[:10], 0.0)
    assert gathering.wanted() == HEADER_SIZE - 10
    gathering.feed(sent[10:HEADER_SIZE], 0.0)
    assert gathering.wanted() == 60
    assert gathering.expected() == HEADER_SIZE + 60


def test_bytes_sent_ahead_wait_for_restart_and_are_checked_as_calls_once_greeted() -> None:
    call = message(MSG_INVOKE, b"c" * 200, seq=8)
    gathering = gatherer()
    gathering.feed(message(MSG_CONNECT, b"hi") + call, 0.0)
    assert gathering.take() is not None
    assert gathering.take() is None  # not yet: the handshake is being answered
    gathering.greeted()
    gathering.restart(1.0)
    frame = gathering.take()
    assert frame is not None and frame.raw == call and frame.seq == 8


def test_a_call_sent_ahead_of_a_refused_handshake_is_refused_as_a_call_before_it() -> None:
    gathering = gatherer()
    gathering.feed(message(MSG_CONNECT, b"hi") + message(MSG_INVOKE, b"c"), 0.0)
    assert gathering.take() is not None
    with pytest.raises(FrameRefused, match="before the handshake") as refused:
        gathering.restart(1.0)
    assert refused.value.reason == "order"


# -- the deadline ---------------------------------------------------------------------------------

def test_a_trickle_is_refused_at_the_deadline_from_its_first_byte_however_often_it_sends() -> None:
    sent = message(MSG_CONNECT, b"x" * 90)
    gathering = gatherer()
    for index in range(40):  # a byte every 0.12 s: each read well inside any per-read timeout
        gathering.feed(sent[index:index + 1], now=100.0 + index * 0.12)
    with pytest.raises(FrameRefused, match="within 5 s of its first byte") as refused:
        gathering.feed(sent[40:41], now=105.01)
    assert refused.value.reason == "deadline"


def test_check_refuses_a_stalled_message_only_after_its_deadline() -> None:
    gathering = gatherer()
    gathering.feed(b"PY", now=10.0)
    assert gathering.deadline() == 15.0
    gathering.check(15.0)  # at the deadline: not yet
    with pytest.raises(FrameRefused, match="2 of 40 bytes came"):
        gathering.check(15.001)


def test_the_last_byte_arriving_late_is_still_refused_and_between_messages_there_is_no_deadline() -> None:
    sent = message(MSG_CONNECT, b"x")
    gathering = gatherer()
    assert gathering.deadline() is None
    gathering.check(1e9)  # a silent connection is never timed out
    gathering.feed(sent[:-1], now=0.0)
    assert refusal(gathering, sent[-1:], now=6.0).reason == "deadline"


def test_each_message_has_its_own_deadline() -> None:
    gathering = gatherer()
    gathering.feed(message(MSG_CONNECT, b"x"), now=0.0)
    assert gathering.take() is not None
    gathering.greeted()
    gathering.feed(message(MSG_PING, b"ping")[:5], now=100.0)
    assert gathering.deadline() == 105.0


# -- what the header may say ----------------------------------------------------------------------

@pytest.mark.parametrize("garbage, named", [
    (b"GET / HTTP/1.1\r\n", "must start with PYRO"),
    (b"PYRO\x01\xf5" + bytes(40), "version 501 is not spoken"),
])
def test_garbage_is_refused_by_name_as_soon_as_six_bytes_show_it(garbage: bytes, named: str) -> None:
    refused = refusal(gatherer(), garbage[:6])
    assert named in str(refused) and refused.reason == "not pyro"


def test_a_wrong_magic_number_is_refused() -> None:
    sent = bytearray(message(MSG_CONNECT, b"x"))
    sent[38:40] = b"\0\0"
    assert "magic" in str(refusal(gatherer(), bytes(sent)))


@pytest.mark.parametrize("msgtype", [MSG_INVOKE, MSG_PING, 5, 99])
def test_before_the_handshake_only_a_connect_is_taken(msgtype: int) -> None:
    assert refusal(gatherer(), message(msgtype, b"x")[:HEADER_SIZE]).reason == "order"


@pytest.mark.parametrize("msgtype", [MSG_CONNECT, 5, 2])
def test_after_it_only_calls_and_pings(msgtype: int) -> None:
    assert refusal(gatherer(greeted=True), message(msgtype, b"x")[:HEADER_SIZE]).reason == "order"


def test_a_handshake_over_its_cap_is_refused_from_its_header_before_its_body_comes() -> None:
    refused = refusal(gatherer(), message(MSG_CONNECT, b"x" * 101)[:HEADER_SIZE])
    assert refused.reason == "too large" and "101 bytes" in str(refused)


@pytest.mark.parametrize("claimed", [2**31 - 1, 2**32 - 1])
def test_a_header_claiming_gigabytes_is_refused_at_once(claimed: int) -> None:
    header = bytearray(message(MSG_INVOKE, b"")[:HEADER_SIZE])
    header[12:16] = claimed.to_bytes(4, "big")
    assert refusal(gatherer(greeted=True), bytes(header)).reason == "too large"


@pytest.mark.parametrize("serializer, cap", [(SERPENT, 1000), (JSON, 4000), (MSGPACK, 3000)])
def test_each_serializer_has_its_own_cap(serializer: int, cap: int) -> None:
    gathering = gatherer(greeted=True)
    gathering.feed(message(MSG_INVOKE, b"x" * cap, serializer=serializer), 0.0)
    assert gathering.take() is not None
    refused = refusal(gathering, message(MSG_INVOKE, b"x" * (cap + 1), serializer=serializer)[:HEADER_SIZE])
    assert refused.reason == "too large"


def test_a_marshal_call_is_refused_and_a_marshal_handshake_is_denied_with_an_answer() -> None:
    assert refusal(gatherer(greeted=True), message(MSG_INVOKE, b"x", serializer=MARSHAL)[:HEADER_SIZE]).reason \
        == "serializer"
    gathering = gatherer()
    gathering.feed(message(MSG_CONNECT, b"x", serializer=MARSHAL), 0.0)
    frame = gathering.take()
    assert frame is not None and frame.denial is not None and "marshal is refused" in frame.denial
    gathering.feed(message(MSG_CONNECT, b"x", serializer=JSON), 0.0)
    accepted = gathering.take()
    assert accepted is not None and accepted.denial is None
    gathering.feed(message(MSG_CONNECT, b"x", serializer=MSGPACK), 0.0)
    accepted = gathering.take()
    assert accepted is not None and accepted.denial is None


def test_annotations_are_capped() -> None:
    refused = refusal(gatherer(greeted=True), message(MSG_INVOKE, b"x", annotations={"XXXX": b"a" * 57}))
    assert refused.reason == "too large" and "annotations" in str(refused)


@pytest.mark.parametrize("flag, named", [(FLAGS_ONEWAY, "oneway"), (FLAGS_KEEPSERIALIZED, "KEEPSERIALIZED")])
def test_oneway_and_pass_through_calls_are_refused(flag: int, named: str) -> None:
    refused = refusal(gatherer(greeted=True), message(MSG_INVOKE, b"x", flags=flag)[:HEADER_SIZE])
    assert refused.reason == "flags" and named in str(refused)


def test_compressed_data_is_refused_before_the_handshake() -> None:
    refused = refusal(gatherer(), with_flags(message(MSG_CONNECT, b"x"), FLAGS_COMPRESSED)[:HEADER_SIZE])
    assert refused.reason == "compressed"


def test_the_last_header_read_names_the_answer_to_a_refusal() -> None:
    gathering = gatherer(greeted=True)
    refusal(gathering, message(MSG_INVOKE, b"x" * 5000, serializer=JSON, seq=42)[:HEADER_SIZE])
    assert (gathering.seq, gathering.serializer_id) == (42, JSON)


# -- inflation --------------------------------------------------------------------------------------

def compressed_call(data: bytes, serializer: int = SERPENT) -> bytes:
    return with_flags(message(MSG_INVOKE, zlib.compress(data, 9), serializer=serializer), FLAGS_COMPRESSED)


def taken(raw: bytes) -> object:
    gathering = gatherer(greeted=True)
    gathering.feed(raw, 0.0)
    frame = gathering.take()
    assert frame is not None
    return frame


def test_inflated_data_reads_as_pyro5_would_read_it_uncompressed() -> None:
    data = serpent.dumps(("obj", "renew", ["c" * 22, 10.0], {}))
    frame = inflate(taken(compressed_call(data)), LIMITS)  # type: ignore[arg-type]
    read = Pyro5.protocol.ReceivingMessage(frame.raw[:HEADER_SIZE], frame.raw[HEADER_SIZE:])
    assert bytes(read.data) == data and not read.flags & FLAGS_COMPRESSED and frame.data_size == len(data)


def test_a_decompression_bomb_is_refused_at_the_cap_not_inflated_whole() -> None:
    bomb = compressed_call(bytes(10 * 1024 * 1024))  # 10 MiB of zeros: about 10 KB compressed
    assert len(bomb) < 12_000
    gathering = FrameGatherer(FrameLimits(serpent_bytes=64 * 1024))
    gathering.greeted()
    gathering.feed(bomb, 0.0)
    frame = gathering.take()
    assert frame is not None
    with pytest.raises(FrameRefused, match="inflating beyond 65536 bytes") as refused:
        inflate(frame, gathering.limits)
    assert refused.value.reason == "too large"


def test_data_that_is_not_zlib_is_refused_by_name() -> None:
    sent = with_flags(message(MSG_INVOKE, b"not zlib at all"), FLAGS_COMPRESSED)
    with pytest.raises(FrameRefused, match="does not inflate"):
        inflate(taken(sent), LIMITS)  # type: ignore[arg-type]


def test_an_uncompressed_frame_is_passed_through_as_it_is() -> None:
    frame = taken(message(MSG_INVOKE, b"plain"))
    assert inflate(frame, LIMITS) is frame  # type: ignore[arg-type]


# -- the limits themselves -------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [{"deadline": 0}, {"deadline": float("inf")}, {"deadline": "5"},
                                 {"serpent_bytes": 0}, {"json_bytes": True}, {"msgpack_bytes": -1},
                                 {"handshake_bytes": 1.5}])
def test_bad_limits_are_refused_by_name(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        FrameLimits(**bad)  # type: ignore[arg-type]
