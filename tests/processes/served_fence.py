"""A fence served to other processes: a ``landlord.RemoteFence`` on the guarded server
(``landlord.serving.serve_object``), with its metrics (a ``landlord.metrics.Metrics`` counting it).

Usage: served_fence.py [--highest N] [--metrics-port P]

``serve_object`` prints ``fence at <uri> (...)`` once serving (and, with ``--metrics-port``,
``fence metrics at <url> (...)``); on SIGTERM this script prints ``counts <accepted> <refused>
<invalid> highest <n>`` and ``stopped``. Logs to stderr (merged with stdout by the tests' ChildProcess).
"""

from __future__ import annotations

import argparse
import logging
import sys

import landlord
from landlord.metrics import Metrics
from landlord.serving import serve_object


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--highest", type=int, default=None)
    parser.add_argument("--metrics-port", type=int, default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")

    remote = landlord.RemoteFence(landlord.Fence(highest=args.highest))
    metrics = Metrics().count_fence(remote, "hostile") if args.metrics_port is not None else None
    serve_object(remote, "127.0.0.1", 0, object_id="fence.hostile", name="fence", metrics=metrics,
                 metrics_port=args.metrics_port)
    counts = remote.counts()
    print("counts", counts["accepted"], counts["refused"], counts["invalid"], "highest", remote.highest(), flush=True)
    print("stopped", flush=True)


if __name__ == "__main__":
    main()
