"""A stranger to a served fence: threads calling ``check`` with everything but a good token, as fast
as they can, for a while.

Usage: fence_stranger.py URI SECONDS THREADS BELOW

Each thread has its own proxy and sends, in turn: bools, floats (inf and NaN among them), strings,
bytes, None, containers, negative ints, ints above MAX_TOKEN, and ints below BELOW (tokens a holder
had once, refused as stale); with serpent and with json. It prints ``ready`` once connected, then
``stranger <calls> calls, <stale> stale, <invalid> invalid, <other> other`` (``other``: anything but
a refusal, which the test fails on, with ``other: <error>`` lines before).
"""

from __future__ import annotations

import itertools
import sys
import threading
import time

import Pyro5.api
import Pyro5.errors

import landlord
from landlord.fence import MAX_TOKEN

GARBAGE: list[object] = [True, False, 0.0, 1.5, float("inf"), float("-inf"), float("nan"), 1e308, "7", "", b"7",
                         None, [7], (7,), {"token": 7}, {7}, [[[[[]]]]], -1, -(2**70), MAX_TOKEN + 1, 2**64,
                         2**4000, "x" * 50_000]


def main() -> None:
    uri, seconds, threads, below = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    tally = {"calls": 0, "stale": 0, "invalid": 0, "other": 0}
    lock = threading.Lock()
    connected = threading.Barrier(threads + 1)
    start = threading.Event()

    def stranger(index: int) -> None:
        proxy = Pyro5.api.Proxy(uri)
        proxy._pyroSerializer = "json" if index % 2 else "serpent"
        proxy._pyroBind()
        connected.wait(30)
        start.wait(30)
        mine = dict.fromkeys(tally, 0)
        sent = itertools.cycle([*GARBAGE, *range(0, below, max(1, below // 7))])
        ends = time.monotonic() + seconds
        while time.monotonic() < ends:
            token = next(sent)
            mine["calls"] += 1
            try:
                proxy.check(token)
                mine["other"] += 1
                print(f"other: {token!r:.40} was accepted", flush=True)
            except landlord.StaleTokenError:
                mine["stale"] += 1
            except (TypeError, ValueError, Pyro5.errors.SerializeError):
                mine["invalid"] += 1  # a SerializeError: what json cannot carry (bytes, a set), refused here
            except Exception as exc:
                mine["other"] += 1
                print(f"other: {token!r:.40}: {type(exc).__name__}: {exc}", flush=True)
                proxy._pyroRelease()
        proxy._pyroRelease()
        with lock:
            for key, value in mine.items():
                tally[key] += value

    workers = [threading.Thread(target=stranger, args=(index,)) for index in range(threads)]
    for worker in workers:
        worker.start()
    connected.wait(30)
    print("ready", flush=True)
    sys.stdin.readline()  # the test's go-ahead, once its canary writes
    start.set()
    for worker in workers:
        worker.join()
    print(f"stranger {tally['calls']} calls, {tally['stale']} stale, {tally['invalid']} invalid, "
          f"{tally['other']} other", flush=True)


if __name__ == "__main__":
    main()
