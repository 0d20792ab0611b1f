"""A TCP probe for the harness's own tests, run inside a host.

Usage::

    python mh_probe.py listen HOST PORT          # prints "listening HOST PORT", then accepts until killed
    python mh_probe.py connect HOST PORT SECONDS # prints "connected" (exit 0) or "failed <why>" (exit 1)

A connection that is accepted is answered with one line, ``hello``, and
closed; ``connect`` waits for that line, so "connected" means a round trip.
"""

from __future__ import annotations

import socket
import sys


def listen(host: str, port: int) -> int:
    """Accept connections forever, greeting each with one line."""
    with socket.create_server((host, port)) as server:
        sys.stdout.write(f"listening {host} {port}\n")
        sys.stdout.flush()
        while True:
            connection, _ = server.accept()
            with connection:
                connection.sendall(b"hello\n")


def connect(host: str, port: int, seconds: float) -> int:
    """Connect and read the greeting within ``seconds``; say how it went."""
    try:
        with socket.create_connection((host, port), timeout=seconds) as connection:
            greeting = connection.makefile("rb").readline()
    except OSError as exc:
        sys.stdout.write(f"failed {type(exc).__name__}: {exc}\n")
        return 1
    if greeting != b"hello\n":
        sys.stdout.write(f"failed greeting {greeting!r}\n")
        return 1
    sys.stdout.write("connected\n")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "listen":
        return listen(argv[1], int(argv[2]))
    if len(argv) == 4 and argv[0] == "connect":
        return connect(argv[1], int(argv[2]), float(argv[3]))
    sys.stderr.write(__doc__ or "")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
