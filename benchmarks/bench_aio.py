"""Renewals from asyncio: worker threads against an asyncio transport (issue 14, item 4).

Which way should ``landlord.aio`` reach a landlord? Two contenders, measured
against the sync baseline in the same run, rounds taken in turns:

* **baseline**: plain sync ``lease.renew(TERM)`` from one thread, no event loop;
* **executor**: ``await landlord.aio.renew(lease, TERM)`` from one event loop through a
  ``CallPool(streams=False)``: the call made by the sync proxies on one of its
  ``--workers`` threads, each with its own proxy;
* **streams**: the same through a ``CallPool()`` (``streams=True``, what
  ``landlord.aio`` does by default): a Pyro5 client over asyncio streams
  (``landlord.aio.StreamCalls``), up to ``--workers`` connections to the
  landlord, one call at a time on each;
* **pipelined** (the first prototype, :class:`PipelinedClient` below): all calls on
  one stream connection, replies matched by sequence number.

Two measurements, each ``--rounds`` rounds of ``--seconds`` per side:

1. **one at a time**: renewals of one lease, each awaited before the next;
2. **100 at once**: ``--concurrent`` leases renewed together from one loop
   (``asyncio.gather``), again and again; the baseline renews them one after
   another from its thread, as sync code without threads of its own would.

The landlord runs in another process, served by ``serve_landlord`` (its
default, the guarded server a deployed landlord runs). The pipelined
prototype stays here to show why ``StreamCalls`` makes one call at a time per
connection: on Pyro5's own daemons, which leave Nagle's algorithm on, an
answer sent while the one before is unacknowledged waits for the client's
delayed ACK. The guarded server sets ``TCP_NODELAY``, but does not read a
connection while its last message is being served, so calls pipelined down
one connection are still served one after another.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import harness
import Pyro5
import Pyro5.api
import Pyro5.core
import Pyro5.errors
import serpent
from harness import Report, Row, compare, positive_int, positive_seconds, progress
from Pyro5 import protocol, serializers

import landlord
from landlord import SYSTEM_CLOCK, Landlord, LandlordLease, LeaseDurationPolicy, aio
from landlord.lease import check_granted, sent_now

TERM = 3600.0  # nothing expires during the run

BENCH = harness.Benchmark(
    "bench_aio", "Renewals from one asyncio loop: sync proxies on a bounded thread pool against a minimal "
    "asyncio Pyro5 transport, each against plain sync lease.renew() from a thread, measured in the same run.",
    rounds=5, modules=(landlord, Pyro5, serpent), quick={"seconds": 0.3, "rounds": 2})
BENCH.option("--seconds", positive_seconds, 2.0, "seconds per side per round")
BENCH.option("--concurrent", positive_int, 100, "leases renewed at once from the loop")
BENCH.option("--workers", positive_int, aio.DEFAULT_MAX_WORKERS, "the executor's worker threads")


# -- the landlord process ------------------------------------------------------------------------


class BenchLandlord(Landlord):
    """A landlord that rents in bulk."""

    def __init__(self) -> None:
        super().__init__(policy=LeaseDurationPolicy(maximum=TERM, default=TERM), reaper="lazy")

    @Pyro5.api.expose
    def rent(self, count: int) -> list[LandlordLease]:
        return [self.new_lease(number, TERM) for number in range(count)]


def serve(args: argparse.Namespace) -> int:
    """The landlord process: ``serve_landlord`` (its default guarded server) on loopback until SIGTERM."""
    harness.signal.signal(harness.signal.SIGTERM, harness.stop_on_sigterm)
    try:
        landlord.serve_landlord(BenchLandlord(), "127.0.0.1", 0, announce=False,
                                ready=lambda uri: print(f"URI: {uri}", flush=True))
    except KeyboardInterrupt:
        pass
    return 0


# -- the asyncio transport (prototype) -------------------------------------------------------------


class PipelinedClient:
    """A Pyro5 client over one asyncio stream connection: calls pipelined, replies matched by sequence.

    Only what a renewal needs: no TLS, no timeouts, no reconnecting. A lost
    connection fails every call in flight with a ``CommunicationError``.
    """

    def __init__(self, uri: str) -> None:
        self._uri = Pyro5.core.URI(uri)
        self._serializer = serializers.serializers["serpent"]
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._sequence = itertools.count(1)
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._receiving: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        self._reader, self._writer = await asyncio.open_connection(self._uri.host, self._uri.port)
        hello = self._serializer.dumps({"handshake": "hello", "object": self._uri.object})
        self._writer.write(protocol.SendingMessage(protocol.MSG_CONNECT, 0, 0, self._serializer.serializer_id,
                                                   hello).data)
        answer = await self._receive()
        if answer.type != protocol.MSG_CONNECTOK:
            raise Pyro5.errors.CommunicationError(f"connection refused: {self._load(answer)!r:.200}")
        self._receiving = asyncio.ensure_future(self._receive_all())

    async def _receive(self) -> protocol.ReceivingMessage:
        assert self._reader is not None
        header = await self._reader.readexactly(protocol._header_size)
        message = protocol.ReceivingMessage(header)
        message.add_payload(await self._reader.readexactly(message.data_size + message.annotations_size))
        return message

    def _load(self, message: protocol.ReceivingMessage) -> Any:
        return serializers.serializers_by_id[message.serializer_id].loads(message.data)

    async def _receive_all(self) -> None:
        try:
            while True:
                message = await self._receive()
                waiting = self._pending.pop(message.seq, None)
                if waiting is None or waiting.done():
                    continue
                result = self._load(message)
                if message.flags & protocol.FLAGS_EXCEPTION:
                    waiting.set_exception(result)
                else:
                    waiting.set_result(result)
        except (OSError, EOFError, asyncio.IncompleteReadError, Pyro5.errors.ProtocolError) as exc:
            lost = Pyro5.errors.ConnectionClosedError(f"connection lost: {exc}")
            for waiting in self._pending.values():
                if not waiting.done():
                    waiting.set_exception(lost)
            self._pending.clear()

    async def invoke(self, method: str, *args: Any) -> Any:
        assert self._writer is not None
        sequence = next(self._sequence) & 0xFFFF
        data = self._serializer.dumpsCall(self._uri.object, method, args, {})
        waiting = self._pending[sequence] = asyncio.get_running_loop().create_future()
        self._writer.write(protocol.SendingMessage(protocol.MSG_INVOKE, 0, sequence,
                                                   self._serializer.serializer_id, data).data)
        return await waiting

    async def renew(self, lease: LandlordLease, duration: float) -> float:
        """Renew ``lease`` as ``lease.renew`` does: its new expiration is the sending time plus the grant."""
        sent = sent_now(SYSTEM_CLOCK)
        granted = check_granted(await self.invoke("renew", lease.cookie, duration))
        lease.record_grant(sent, granted)
        return granted

    async def close(self) -> None:
        if self._receiving is not None:
            self._receiving.cancel()
        if self._writer is not None:
            self._writer.close()
            await self._writer.wait_closed()


# -- measuring -----------------------------------------------------------------------------------


def timed(loop: asyncio.AbstractEventLoop, step: Callable[[], Awaitable[object]], seconds: float,
          items: int) -> float:
    """Renewals per second: ``step`` (``items`` renewals) awaited over and over on ``loop`` for ``seconds``."""
    async def run() -> float:
        calls = 0
        start = now = time.perf_counter()
        while now < start + seconds:
            await step()
            calls += 1
            now = time.perf_counter()
        return calls * items / (now - start)
    return loop.run_until_complete(run())


def measure(args: argparse.Namespace) -> Report:
    server = harness.ServerProcess(__file__, "landlord", "landlord")
    loop = asyncio.new_event_loop()
    pool = aio.CallPool(max_workers=args.workers, streams=False)
    streams = aio.CallPool(max_workers=args.workers)
    client = PipelinedClient("PYRO:x@0:0")
    try:
        uri = server.uri()
        with Pyro5.api.Proxy(uri) as proxy:
            one, other = proxy.rent(2)
            many: Sequence[LandlordLease] = proxy.rent(args.concurrent)
            theirs: Sequence[LandlordLease] = proxy.rent(args.concurrent)  # the baseline's own
        client = PipelinedClient(uri)
        loop.run_until_complete(client.connect())

        async def executor_one() -> None:
            await aio.renew(one, TERM, pool=pool)

        async def streams_one() -> None:
            await aio.renew(one, TERM, pool=streams)

        async def pipelined_one() -> None:
            await client.renew(one, TERM)

        async def executor_many() -> None:
            await asyncio.gather(*(aio.renew(lease, TERM, pool=pool) for lease in many))

        async def streams_many() -> None:
            await asyncio.gather(*(aio.renew(lease, TERM, pool=streams) for lease in many))

        async def pipelined_many() -> None:
            await asyncio.gather(*(client.renew(lease, TERM) for lease in many))

        def baseline_many() -> None:
            for lease in theirs:
                lease.renew(TERM)

        seconds = args.seconds
        sides: dict[str, Callable[[], float]] = {
            "baseline one": lambda: harness.rate(lambda: other.renew(TERM), seconds),
            "executor one": lambda: timed(loop, executor_one, seconds, 1),
            "streams one": lambda: timed(loop, streams_one, seconds, 1),
            "pipelined one": lambda: timed(loop, pipelined_one, seconds, 1),
        }
        for side in sides.values():  # warm up: connections made, workers started
            side()
        one_at_a_time = harness.alternate(sides, args.rounds, what="one at a time")
        sides = {
            "baseline many": lambda: harness.rate(baseline_many, seconds, len(theirs)),
            "executor many": lambda: timed(loop, executor_many, seconds, len(many)),
            "streams many": lambda: timed(loop, streams_many, seconds, len(many)),
            "pipelined many": lambda: timed(loop, pipelined_many, seconds, len(many)),
        }
        at_once = harness.alternate(sides, args.rounds, what=f"{args.concurrent} at once")
    finally:
        loop.run_until_complete(client.close())
        loop.run_until_complete(pool.aclose())
        loop.run_until_complete(streams.aclose())
        loop.close()
        server.stop()

    unit = "renewals/s"
    rows: list[Row] = []
    for label, key, results in (("one at a time", "one", one_at_a_time),
                                (f"{args.concurrent} at once", "many", at_once)):
        baseline = results[f"baseline {key}"]
        rows += [compare(f"{label}: executor ({args.workers} workers)", unit, results[f"executor {key}"], baseline),
                 compare(f"{label}: streams ({args.workers} connections)", unit, results[f"streams {key}"],
                         baseline),
                 compare(f"{label}: pipelined (1 connection)", unit, results[f"pipelined {key}"], baseline)]
    head_to_head = [
        compare("streams / executor, one at a time", unit, one_at_a_time["streams one"],
                one_at_a_time["executor one"]),
        compare(f"streams / executor, {args.concurrent} at once", unit, at_once["streams many"],
                at_once["executor many"]),
    ]
    notes = [f"baseline: sync lease.renew() from one thread (no loop); {args.rounds} rounds of {seconds:g} s "
             "per side, taken in turns; the landlord in another process (serve_landlord, guarded server).",
             "head to head (the streams' rate over the executor's, same rounds):"]
    notes += [f"  {row.metric:<42} {row.ratio or float('nan'):.2f}x  (rounds: "
              f"{row.spread.get('ratio_min', float('nan')):.2f}–{row.spread.get('ratio_max', float('nan')):.2f}x)"
              for row in head_to_head]
    progress("done")
    return Report(rows, title="Renewals from asyncio: worker threads against asyncio streams", notes=notes)


if __name__ == "__main__":
    raise SystemExit(BENCH.main(measure, children={"landlord": serve}))
