"""Discovery packets: round trips, and every malformed or hostile datagram refused with a ValueError
that says what is wrong."""

from __future__ import annotations

import json

import pytest

from lookup.discovery.packets import MAX_GROUPS, MAX_HEARD, MAX_PACKET, Announcement, Request, check_groups, parse

URI = "PYRO:lookup.LookupService@10.0.0.5:4160"
GOOD_ANNOUNCE = {"v": 1, "kind": "announce", "id": "7f0c", "uris": [URI], "groups": ["", "demo"], "seq": 3,
                 "interval": 5.0}
GOOD_REQUEST = {"v": 1, "kind": "request", "groups": ["demo"], "port": 40123, "heard": ["7f0c"]}


def packet(base: dict[str, object], **changes: object) -> bytes:
    return json.dumps({**base, **changes}).encode()


def test_an_announcement_round_trips() -> None:
    sent = Announcement("7f0c", (URI, "PYRO:lookup.LookupService@[::1]:4161"), ("", "demo"), 3, 5.0)
    assert parse(sent.encode()) == sent
    assert sent.next().sequence == 4
    assert sent.member_of(None) and sent.member_of(["demo", "x"]) and not sent.member_of(["x"])
    assert not sent.member_of([])


def test_a_request_round_trips_and_wants_its_groups_or_any() -> None:
    sent = Request(("demo",), 40123, ("a", "b"))
    assert parse(sent.encode()) == sent
    assert sent.wants(["demo", "x"]) and not sent.wants(["x"])
    assert Request((), 1).wants(["x"])  # no groups named: any lookup service


def test_a_request_naming_too_many_heard_names_fewer_and_fits() -> None:
    heard = tuple(f"{n:064d}" for n in range(MAX_HEARD + 5))
    request = Request(("demo",), 9, heard)
    assert 0 < len(request.heard) < MAX_HEARD and len(request.encode()) <= MAX_PACKET
    assert request.heard == heard[:len(request.heard)]


def test_groups_are_kept_once_in_order() -> None:
    assert check_groups(["b", "a", "b", ""]) == ("b", "a", "")
    with pytest.raises(ValueError, match="list of names"):
        check_groups("demo")


HOSTILE = [
    (b"\xff\xfe garbage", "not UTF-8"),
    (b"not json at all", "not JSON"),
    (b"[" * 1200 + b"]" * 1200, "more than 1400|not JSON"),
    (b"[" * 700 + b"]" * 700, "not JSON|JSON object"),
    (b"x" * (MAX_PACKET + 1), f"more than {MAX_PACKET}"),
    (b"[1, 2]", "JSON object"),
    (b"null", "JSON object"),
    (packet(GOOD_ANNOUNCE, v=2), "version 2"),
    (packet(GOOD_ANNOUNCE, v=True), "version True"),
    (packet(GOOD_ANNOUNCE, v="1"), "version '1'"),
    (packet(GOOD_ANNOUNCE, kind="shout"), "unknown kind"),
    (packet(GOOD_ANNOUNCE, extra=1), "unknown \\['extra'\\]"),
    (json.dumps({k: v for k, v in GOOD_ANNOUNCE.items() if k != "uris"}).encode(), "missing \\['uris'\\]"),
    (packet(GOOD_ANNOUNCE, id=""), "lookup id"),
    (packet(GOOD_ANNOUNCE, id="a b"), "lookup id"),
    (packet(GOOD_ANNOUNCE, id=7), "must be a str"),
    (packet(GOOD_ANNOUNCE, uris=[]), "at least one URI"),
    (packet(GOOD_ANNOUNCE, uris=URI), "must be a list"),
    (packet(GOOD_ANNOUNCE, uris=[7]), "a URI is a str"),
    (packet(GOOD_ANNOUNCE, uris=["http://evil.example/"]), "not a Pyro5 URI"),
    (packet(GOOD_ANNOUNCE, uris=["PYRO:other.Object@10.0.0.5:4160"]), "not a lookup service's URI"),
    (packet(GOOD_ANNOUNCE, uris=["PYRO:lookup.LookupService@./u:/tmp/sock"]), "not a lookup service's URI"),
    (packet(GOOD_ANNOUNCE, uris=["PYRONAME:lookup.LookupService"]), "not a lookup service's URI"),
    (packet(GOOD_ANNOUNCE, uris=[URI] * 9), "more than 8"),
    (packet(GOOD_ANNOUNCE, groups=[str(n) for n in range(MAX_GROUPS + 1)]), f"more than {MAX_GROUPS}"),
    (packet(GOOD_ANNOUNCE, groups=["x" * 65]), "printable"),
    (packet(GOOD_ANNOUNCE, groups=["bell\x07"]), "printable"),
    (packet(GOOD_ANNOUNCE, groups=[None]), "a group's name is a str"),
    (packet(GOOD_ANNOUNCE, groups={"a": 1}), "must be a list"),
    (packet(GOOD_ANNOUNCE, seq=-1), "seq must be an int"),
    (packet(GOOD_ANNOUNCE, seq=2**64), "seq must be an int"),
    (packet(GOOD_ANNOUNCE, seq=1.5), "seq must be an int"),
    (packet(GOOD_ANNOUNCE, seq="1"), "seq must be an int"),
    (packet(GOOD_ANNOUNCE, interval=0), "interval"),
    (packet(GOOD_ANNOUNCE, interval=-5), "interval"),
    (packet(GOOD_ANNOUNCE, interval=1e300), "interval"),
    (packet(GOOD_ANNOUNCE, interval=True), "interval"),
    (packet(GOOD_ANNOUNCE, interval="5"), "interval"),
    (packet(GOOD_ANNOUNCE).replace(b"5.0", b"NaN"), "not JSON: NaN"),
    (packet(GOOD_ANNOUNCE).replace(b"5.0", b"Infinity"), "not JSON: Infinity"),
    (packet(GOOD_ANNOUNCE).replace(b"5.0", b"1e999"), "interval"),
    (packet(GOOD_REQUEST, port=0), "port must be an int"),
    (packet(GOOD_REQUEST, port=65536), "port must be an int"),
    (packet(GOOD_REQUEST, port=-1), "port must be an int"),
    (packet(GOOD_REQUEST, port=None), "port must be an int"),
    (packet(GOOD_REQUEST, heard=[1]), "lookup id"),
    (packet(GOOD_REQUEST, heard=[str(n) for n in range(MAX_HEARD + 1)]), f"more than {MAX_HEARD}"),
    (packet(GOOD_REQUEST, groups="demo"), "must be a list"),
]


@pytest.mark.parametrize(("data", "why"), HOSTILE, ids=[f"{n}-{why[:20]}" for n, (_, why) in enumerate(HOSTILE)])
def test_a_malformed_or_hostile_packet_is_refused_saying_why(data: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse(data)


def test_what_cannot_fit_one_packet_is_refused_when_made() -> None:
    with pytest.raises(ValueError, match="more than 1400"):
        Announcement("x", tuple(f"PYRO:lookup.LookupService@host-{n}-{'a' * 150}:4160" for n in range(8)), ("",))
    with pytest.raises(ValueError, match="interval"):
        Announcement("x", (URI,), ("",), 0, 0.0)
