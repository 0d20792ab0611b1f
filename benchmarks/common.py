"""What the benchmark scripts share: their server child processes and their argument types.

Each benchmark script starts itself again with a flag (``--serve`` and the
like) to run its server in a process of its own, where the network between
them is the point. The server prints ``URI: <uri>`` once it serves.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
from types import FrameType
from typing import Any

from landlord.testing import ChildProcess, WaitFailed

__all__ = ["ServerProcess", "stop_child", "stop_process", "stop_on_sigterm", "positive_int", "positive_seconds",
           "SERVER_START_TIMEOUT", "SERVER_STOP_TIMEOUT", "UNBUFFERED"]

SERVER_START_TIMEOUT = 20.0  # a cold interpreter on a busy machine
SERVER_STOP_TIMEOUT = 10.0   # after SIGTERM, before a kill
URI_LINE = r"^URI: (?P<uri>\S+)$"  # what serve_forever (and each benchmark's own server) prints once serving
UNBUFFERED = {"PYTHONUNBUFFERED": "1"}  # a child's lines arrive as it prints them


def stop_on_sigterm(signum: int, frame: FrameType | None) -> None:
    """A SIGTERM handler: treat it as Ctrl-C, so that cleanup runs the same way."""
    raise KeyboardInterrupt


def stop_process(process: subprocess.Popen[Any]) -> int | None:
    """End a child process not started with landlord.testing (etcd, writing to a log file): SIGTERM,
    then a kill. Its exit status, or None if it had to be killed."""
    if process.poll() is None:
        process.terminate()
        try:
            return process.wait(SERVER_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            return None
    return process.returncode


class ServerProcess:
    """``script`` started again with ``flag`` as a server; :meth:`uri` waits for it, :meth:`stop` ends it.

    A :class:`landlord.testing.ChildProcess` with its stderr inherited, so
    that a failing server shows its traceback here.

    Args:
        script: the benchmark script (its ``__file__``).
        flag: the option that makes it serve.
        what: what the server is, for error messages.
        new_session: run it in a session of its own, so that Ctrl-C reaches
            only the benchmark, which then stops its children in order.
    """

    def __init__(self, script: str, flag: str, what: str, *, new_session: bool = False) -> None:
        self.what = what
        self.child = ChildProcess(os.path.abspath(script), flag, name=f"the {what}", stderr="inherit",
                                  env=UNBUFFERED, new_session=new_session)

    def uri(self) -> str:
        """The server's URI, once it serves.

        Raises:
            RuntimeError: it exited, or printed no URI within ``SERVER_START_TIMEOUT``.
        """
        try:
            return self.child.read_uri(SERVER_START_TIMEOUT, pattern=URI_LINE)
        except WaitFailed as exc:
            raise RuntimeError(str(exc)) from None

    def stop(self) -> int | None:
        """End the process; its exit status, or None if it had to be killed."""
        return stop_child(self.child)


def stop_child(child: ChildProcess) -> int | None:
    """End a child started with landlord.testing: SIGTERM, then a kill, reaped either way. Its exit
    status, or None if it had to be killed."""
    status = child.stop(timeout=SERVER_STOP_TIMEOUT)
    child.close()
    return None if child.killed else status


def positive_int(text: str) -> int:
    """An argparse type: a positive integer."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


def positive_seconds(text: str) -> float:
    """An argparse type: a positive, finite number (of seconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a positive, finite number, got {text!r}")
    return value


def serve_forever(server: Any) -> int:
    """Serve ``server`` on loopback until SIGTERM or Ctrl-C; the child process's whole life.

    Prints ``URI: <uri>`` once serving (:meth:`ServerProcess.uri` waits for
    that line), and closes ``server`` at the end if it has a ``close``.
    """
    import signal

    import Pyro5.api

    signal.signal(signal.SIGTERM, stop_on_sigterm)
    try:
        with Pyro5.api.Daemon(host="127.0.0.1", port=0) as daemon:
            print(f"URI: {daemon.register(server)}", flush=True)
            try:
                daemon.requestLoop()
            except KeyboardInterrupt:
                pass
    except KeyboardInterrupt:  # stopped before the request loop started
        pass
    finally:
        close = getattr(server, "close", None)
        if callable(close):
            close()
    return 0


def machine_info(*modules: Any) -> dict[str, Any]:
    """What the figures were measured on: platform, Python, cores, and the versions of ``modules``."""
    import platform

    info: dict[str, Any] = {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "cpu_count": os.cpu_count(),
    }
    for module in modules:
        info[module.__name__] = getattr(module, "__version__", "?")
    return info
