"""landlord.transport.serializers: msgpack in landlord's dialect, answered in kind; parse errors named."""

from __future__ import annotations

import datetime
import decimal
import enum
import math
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import msgpack
import Pyro5.api
import Pyro5.callcontext
import Pyro5.errors
import Pyro5.serializers
import pytest
import serpent  # type: ignore[import-untyped]

from landlord import LandlordLease, LeaseDeniedError, LeaseMapError, RenewResults, UnknownLeaseError, wire_proxy
from landlord.serving import serve_object
from landlord.testing import ServingDaemon
from landlord.transport import proxies
from landlord.transport.serializers import (
    FROZENSET,
    MAX_NESTING,
    SET,
    TUPLE,
    WIRE_SERIALIZER,
    NamedJson,
    NamedSerpent,
    WireMsgpack,
    install,
)

URI = "PYRO:x@127.0.0.1:4000"


@pytest.fixture
def wire() -> Iterator[WireMsgpack]:
    serializer = Pyro5.serializers.serializers[WIRE_SERIALIZER]
    assert isinstance(serializer, WireMsgpack)
    serializer._local.dialect = False
    yield serializer
    serializer._local.dialect = False


def answer(wire: WireMsgpack, data: Any, *, dialect: bool) -> Any:
    """``data`` written as an answer to a call in the dialect (or not), and read back."""
    wire._local.dialect = dialect
    return wire.loads(wire.dumps(data))


class Color(enum.IntEnum):
    RED = 1


def test_install_puts_the_dialect_under_its_own_name_and_id_4_and_leaves_pyro5s_msgpack_alone() -> None:
    install()
    install()  # idempotent
    assert isinstance(Pyro5.serializers.serializers[WIRE_SERIALIZER], WireMsgpack)
    assert Pyro5.serializers.serializers_by_id[4] is Pyro5.serializers.serializers[WIRE_SERIALIZER]
    assert type(Pyro5.serializers.serializers["msgpack"]) is Pyro5.serializers.MsgpackSerializer
    assert isinstance(Pyro5.serializers.serializers["serpent"], NamedSerpent)
    assert isinstance(Pyro5.serializers.serializers["json"], NamedJson)


def test_the_dialect_keeps_tuples_sets_and_frozensets_nested_as_they_were(wire: WireMsgpack) -> None:
    value = {"t": (1, ("a", {2, 3}), frozenset({4})), "l": [(), [5]], "b": b"\x00\xff", "inf": math.inf}
    assert answer(wire, value, dialect=True) == value
    read = answer(wire, value, dialect=True)
    assert type(read["t"]) is tuple and type(read["t"][1][1]) is set and type(read["t"][2]) is frozenset
    assert type(read["l"]) is list and type(read["l"][0]) is tuple


def test_an_answer_to_a_plain_call_is_plain_pyro5_msgpack(wire: WireMsgpack) -> None:
    stock = Pyro5.serializers.serializers["msgpack"]
    obj, method, vargs, kwargs = wire.loadsCall(stock.dumpsCall("obj", "m", (1, (2, 3)), {"k": (4,)}))
    assert (obj, method, vargs, kwargs) == ("obj", "m", [1, [2, 3]], {"k": [4]})
    written = wire.dumps({"t": (1, 2), "s": {3}})  # in kind: what Pyro5's own msgpack reads
    assert stock.loads(written) == {"t": [1, 2], "s": [3]}


def test_a_call_in_the_dialect_is_answered_in_the_dialect(wire: WireMsgpack) -> None:
    obj, method, vargs, kwargs = wire.loadsCall(wire.dumpsCall("obj", "renew_all", (["a"], [1.0]), {}))
    assert (obj, method, vargs, kwargs) == ("obj", "renew_all", (["a"], [1.0]), {})
    assert msgpack.unpackb(wire.dumps((1,)), ext_hook=lambda code, data: code) == TUPLE


def test_landlord_classes_and_errors_cross_as_themselves(wire: WireMsgpack) -> None:
    lease = LandlordLease("cookie-1", URI, "landlord-1", time.time() + 30, term=30)
    failures = LeaseMapError({lease: UnknownLeaseError("gone")}, "one failed")
    value = [lease, RenewResults([1.5], [LeaseDeniedError("no", "reason")]), failures, Color.RED, 2**70]
    for dialect in (True, False):
        read_lease, results, error, color, big = answer(wire, value, dialect=dialect)
        assert isinstance(read_lease, LandlordLease) and read_lease.cookie == "cookie-1"
        assert read_lease.landlord_uri == URI and read_lease.term == 30
        assert results.granted == [1.5] and isinstance(results.denied[0], LeaseDeniedError)
        assert isinstance(error, LeaseMapError) and isinstance(next(iter(error.failures.values())), UnknownLeaseError)
        assert color == 1 and type(color) is int  # an int subclass as its int, as json sends it
        assert big == 2**70


class Mood(enum.Enum):
    CALM = "calm"


def test_what_msgpack_has_no_form_for_crosses_as_serpent_sends_it(wire: WireMsgpack) -> None:
    value = [Mood.CALM, Color.RED, datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
             datetime.date(2026, 1, 2), datetime.time(1, 2), datetime.timedelta(seconds=90),
             decimal.Decimal("1.5"), uuid.UUID(int=5), complex(1, 2)]
    assert answer(wire, value, dialect=True) == serpent.loads(serpent.dumps(value))


@pytest.mark.parametrize("data, says", [
    (b"\xc1", "FormatError"),                                   # a byte msgpack never uses
    (b"\x93\x01", "max_array_len"),                             # a list claiming more items than bytes
    (b"", "incomplete"),
    (msgpack.packb({1: 2}), "map key"),                         # int keys could be made to collide
    (msgpack.packb(msgpack.ExtType(TUPLE, b"\x01")), "does not hold a list"),
    (msgpack.packb(msgpack.ExtType(SET, b"\xc1")), "FormatError"),
    (msgpack.packb(msgpack.ExtType(FROZENSET, msgpack.packb([[1]]))), "unhashable"),
    (msgpack.packb(msgpack.ExtType(0x32, b"\x00")), "buffer of 8 bytes"),  # Pyro5's datetime, too short
])
def test_what_does_not_parse_is_a_serialize_error_naming_msgpack(wire: WireMsgpack, data: bytes, says: str) -> None:
    with pytest.raises(Pyro5.errors.SerializeError, match="malformed msgpack message") as caught:
        wire.loads(data)
    assert says in str(caught.value)


def nested_tuples(levels: int) -> Any:
    value: Any = ()
    for _ in range(levels - 1):
        value = (value,)
    return value


def test_tuples_nest_no_deeper_than_the_bound(wire: WireMsgpack) -> None:
    deepest = nested_tuples(MAX_NESTING)
    assert answer(wire, deepest, dialect=True) == deepest
    with pytest.raises(Pyro5.errors.SerializeError, match="nested more than"):
        answer(wire, nested_tuples(MAX_NESTING + 1), dialect=True)
    assert getattr(wire._local, "depth", 0) == 0  # the count is unwound after a refusal
    assert answer(wire, deepest, dialect=True) == deepest


def test_what_a_converter_raises_is_raised_as_it_is(wire: WireMsgpack) -> None:
    with pytest.raises(TypeError, match="malformed landlord.LandlordLease: 'cookie' is int"):
        wire.loads(msgpack.packb({"__class__": "landlord.LandlordLease", "cookie": 1, "landlord": URI,
                                  "landlord_id": "x", "remaining": 1.0}))


def test_a_call_that_is_not_four_parts_is_malformed(wire: WireMsgpack) -> None:
    with pytest.raises(Pyro5.errors.SerializeError, match="not \\[object, method, args, kwargs\\]"):
        wire.loadsCall(msgpack.packb(["obj", "m", []]))
    with pytest.raises(Pyro5.errors.SerializeError, match="wrong type"):
        wire.loadsCall(msgpack.packb(["obj", "m", 5, {}]))


# -- over a real daemon ------------------------------------------------------------------------------


class Echo:
    """Says which serializer each call came in, and gives back what it got."""

    @Pyro5.api.expose
    def echo(self, value: Any) -> tuple[int, Any]:
        return Pyro5.callcontext.current_context.serializer_id, value


@pytest.fixture(scope="module", params=["plain daemon", "guarded server"])
def echo_uri(request: pytest.FixtureRequest) -> Iterator[str]:
    """An :class:`Echo` on a plain Pyro5 daemon, or on the guarded server landlord's servers run."""
    if request.param == "plain daemon":
        with ServingDaemon() as daemon:
            yield daemon.register(Echo())
        return
    stop, ready = threading.Event(), threading.Event()
    uris: list[str] = []
    thread = threading.Thread(target=serve_object, args=(Echo(),), daemon=True,
                              kwargs=dict(object_id="echo", stop=stop, announce=False,
                                          ready=lambda uri: (uris.append(uri), ready.set())))
    thread.start()
    try:
        assert ready.wait(10), "the guarded server did not come up"
        yield uris[0]
    finally:
        stop.set()
        thread.join(15)


def test_landlords_proxies_speak_the_dialect_and_get_tuples_back(echo_uri: str) -> None:
    serializer_id, value = proxies.proxy_for(echo_uri).echo((1, {2}))
    assert serializer_id == 4 and value == (4, (1, {2}))[1] and type(value) is tuple
    with wire_proxy(echo_uri) as proxy:
        assert proxy.echo(frozenset({"a"})) == (4, frozenset({"a"}))


@pytest.mark.parametrize("serializer", ["serpent", "json", "msgpack"])
def test_plain_pyro5_clients_on_each_serializer_still_work(echo_uri: str, serializer: str) -> None:
    with Pyro5.api.Proxy(echo_uri) as proxy:
        proxy._pyroSerializer = serializer
        serializer_id, value = proxy.echo([1, "a", {"k": 2.5}])
    assert serializer_id == Pyro5.serializers.serializers[serializer].serializer_id
    assert value == [1, "a", {"k": 2.5}]


def test_each_thread_answers_in_the_form_of_its_own_call(echo_uri: str) -> None:
    """The form of the last call is kept per thread: a dialect call on one thread does not make a
    plain client's answer on another thread unreadable."""
    got: list[Any] = []

    def plain() -> None:
        with Pyro5.api.Proxy(echo_uri) as proxy:
            proxy._pyroSerializer = "msgpack"
            got.extend(proxy.echo((1, 2)) for _ in range(50))

    thread = threading.Thread(target=plain)
    thread.start()
    for _ in range(50):
        assert proxies.proxy_for(echo_uri).echo((1, 2)) == (4, (1, 2))
    thread.join()
    assert got == [[4, [1, 2]]] * 50


class Unsendable:
    """A class whose converter refuses: packing it fails half-way through a message."""


def refuse(obj: Unsendable) -> dict[str, Any]:
    raise ValueError("not this one")


def test_a_message_that_fails_half_way_leaves_the_next_one_whole(wire: WireMsgpack) -> None:
    Pyro5.serializers.SerializerBase.register_class_to_dict(Unsendable, refuse)
    try:
        for _ in range(3):  # the packers of the tuples within, at every level, went through it
            with pytest.raises(ValueError, match="not this one"):
                answer(wire, ("a" * 100, ("b" * 100, [Unsendable()])), dialect=True)
            assert answer(wire, (1, (2, 3)), dialect=True) == (1, (2, 3))
    finally:
        Pyro5.serializers.SerializerBase.unregister_class_to_dict(Unsendable)


def test_messages_of_every_size_and_nesting_pack_the_same_in_turn(wire: WireMsgpack) -> None:
    big = tuple(range(100_000))  # past the buffer a kept packer has
    values = [big, nested_tuples(MAX_NESTING), (1, ("x", {2})), big[:10], nested_tuples(3)]
    for value in values * 2:
        assert answer(wire, value, dialect=True) == value
        assert msgpack.unpackb(wire.dumps(value), ext_hook=lambda code, data: code) == TUPLE


def test_threads_packing_at_once_each_get_their_own_message(wire: WireMsgpack) -> None:
    wrong: list[Any] = []

    def pack(number: int) -> None:
        wire._local.dialect = True
        for round_ in range(300):
            value = (number, (round_, "y" * (number * 50)), [(number,)])
            if wire.loads(wire.dumps(value)) != value:
                wrong.append(value)

    threads = [threading.Thread(target=pack, args=(number,)) for number in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert wrong == []
