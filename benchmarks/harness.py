"""The one harness every benchmark runs on: options, rounds, rows, the table, the JSON, the child processes.

A benchmark script holds its set-up, its measured operations and a
``measure(args) -> Report``; :class:`Benchmark` does the rest the same way for
all: the common options (``--rounds``, ``--sizes``, ``--json PATH``,
``--quick`` for a small run that checks the script works) and the hidden
``--child ROLE`` by which a script starts itself again as its server or client
(:class:`ServerProcess`, a :class:`landlord.testing.ChildProcess`); then the
report's title, one :func:`table` (``run_all.py`` prints the same), its notes,
the machine and the wall time, and the JSON ``{"name", "rows": [{"metric",
"landlord", "baseline", "unit", "ratio", "goal", "met", ...}], "machine",
"wall_seconds", ...}``. Exit status: 1 if the report lists a problem (a lease
lost), 130 on Ctrl-C or SIGTERM (children stopped either way), else 0: a goal
missed is a measurement, not a failure.

Rounds: :func:`alternate` runs landlord's side and its baseline in turns,
round after round, the order rotated each round (:func:`interleave` does it
in blocks of calls, for quick calls), and :func:`compare` reports the round
with the median ratio, with the min and max of each side and of the ratio.
"ratio" is always how many times better landlord does (> 1: better):
landlord / baseline for rates (a unit ending in ``/s``), baseline / landlord
for costs and delays.

Two baselines: a row may also carry a second baseline measured in the same
rounds (raw Pyro5 on Pyro5's default serializer, and on the serializer
landlord's own calls speak), with its own goal: JSON keys ``baseline2``,
``ratio2``, ``goal2``, ``met2`` (that goal alone; ``met`` is every goal of the
row), ``landlord2`` (landlord's figure in the second ratio's median round),
``baseline2_min``/``max``, ``ratio2_min``/``max`` and the names
``baseline_name``, ``baseline2_name``. The table and the plots show such a row
as two lines, one per baseline (:func:`lines_of`).

Why not pyperf: every figure is a pair, landlord and its baseline measured in
turns in one process on one population (a million leases, servers in child
processes), judged on their ratio. pyperf times one function at a time in
worker processes spawned from the script's own command line: each would
rebuild that state, and the two sides would run minutes apart.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import FrameType, ModuleType
from typing import Any, NoReturn, TypeVar

import Pyro5.api

from landlord.testing import ChildProcess, WaitFailed, free_port

T = TypeVar("T")

SERVER_START_TIMEOUT = 20.0  # a cold interpreter on a busy machine
SERVER_STOP_TIMEOUT = 10.0   # after SIGTERM, before a kill
URI_LINE = r"^URI: (?P<uri>\S+)$"  # what serve_forever (and each benchmark's own server) prints once serving
UNBUFFERED = {"PYTHONUNBUFFERED": "1"}  # a child's lines arrive as it prints them


def progress(message: str) -> None:
    """A progress line, on stderr: the report alone goes to stdout."""
    print(message, file=sys.stderr, flush=True)


# -- argument types ---------------------------------------------------------------------------


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``minimum``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {'positive' if minimum == 1 else f'at least {minimum}'}, "
                                             f"got {value}")
        return value
    return parse


def positive_int(text: str) -> int:
    """An argparse type: a positive integer."""
    return at_least(1)(text)


def at_most(limit: int) -> Callable[[str], int]:
    """An argparse type: a positive integer up to ``limit``."""
    def parse(text: str) -> int:
        value = positive_int(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"at most {limit:,}, got {value:,}")
        return value
    return parse


def positive_seconds(text: str) -> float:
    """An argparse type: a positive, finite number (of seconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a positive, finite number, got {text!r}")
    return value


def size_list(limit: int | None = None) -> Callable[[str], list[int]]:
    """An argparse type: comma-separated positive sizes (each at most ``limit``), sorted; '' gives none."""
    one = at_most(limit) if limit is not None else positive_int
    return lambda text: sorted({one(part.strip()) for part in text.split(",") if part.strip()})


# -- rounds -----------------------------------------------------------------------------------


def rate(op: Callable[[], object], seconds: float, items: int = 1) -> float:
    """Items per second: ``op`` (which does ``items`` items a call) called over and over for about ``seconds``."""
    calls = 0
    start = now = time.perf_counter()
    deadline = start + seconds
    while now < deadline:
        op()
        calls += 1
        now = time.perf_counter()
    return calls * items / (now - start)


def alternate(sides: Mapping[str, Callable[[], T]], rounds: int, *, what: str = "") -> dict[str, list[T]]:
    """What each side returned in each of ``rounds`` rounds; every round runs every side once, the order
    rotated each round. ``what``, if given, names the measurement in a progress line per round."""
    names = list(sides)
    results: dict[str, list[T]] = {name: [] for name in names}
    for number in range(rounds):
        if what:
            progress(f"{what}: round {number + 1} of {rounds}...")
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            results[name].append(sides[name]())
    return results


def interleave(contenders: Mapping[str, Callable[[], object]], seconds: float, block: int) -> dict[str, float]:
    """Calls per second of each contender, run in blocks of ``block`` calls, taking turns (the order rotated
    after every pass) until each has had ``seconds``: one round, for calls too quick to take turns by the round."""
    names = list(contenders)
    spent = dict.fromkeys(names, 0.0)
    calls = dict.fromkeys(names, 0)
    clock = time.perf_counter
    turn = 0
    while min(spent.values()) < seconds:
        shift = turn % len(names)
        turn += 1
        for name in names[shift:] + names[:shift]:
            call = contenders[name]
            started = clock()
            for _ in range(block):
                call()
            spent[name] += clock() - started
            calls[name] += block
    return {name: calls[name] / spent[name] for name in names}


# -- rows -------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """The CPU time (user + system, all threads) process ``pid`` has used, from /proc; NaN where unreadable."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return math.nan


def finite(value: Any) -> bool:
    """A real number, not NaN or infinite (nor a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def higher_is_better(unit: Any) -> bool:
    """Rates (a unit ending in ``/s``) are better high; costs, delays and counts low."""
    return str(unit or "").endswith("/s")


def ratio_of(landlord: Any, baseline: Any, unit: Any) -> float | None:
    """How many times better landlord does than the baseline (> 1: better), whatever the unit."""
    if not (finite(landlord) and finite(baseline) and landlord > 0 and baseline > 0):
        return None
    return float(landlord / baseline if higher_is_better(unit) else baseline / landlord)


def all_met(verdicts: Sequence[bool | None]) -> bool | None:
    """False if one verdict is a miss, True if there are some and all are met, else None (nothing to judge)."""
    if False in verdicts:
        return False
    return True if verdicts and None not in verdicts else None


def verdict(ratio: Any, goal: Any, landlord: Any = None, limit: Any = None, unit: Any = "") -> bool | None:
    """True if ``ratio`` reaches ``goal`` and ``landlord`` keeps within ``limit`` (at least that much of a rate,
    at most that much of anything else), False if either misses, None if there is neither (or no figure)."""
    verdicts: list[bool | None] = []
    if goal is not None:
        verdicts.append(ratio >= goal if finite(ratio) else None)
    if limit is not None and finite(landlord):
        verdicts.append(landlord >= limit if higher_is_better(unit) else landlord <= limit)
    return all_met(verdicts)


@dataclass
class Row:
    """One line of the table and of the JSON: landlord's figure against the baseline's, and the verdict.

    ``goal`` is on the ratio; ``limit`` on landlord's own figure (at least that
    much of a rate, at most that much of anything else). ``spread`` holds the
    min and max over the rounds (from :func:`compare`); ``extra`` more keys
    for the JSON row.

    A row may have a second baseline measured in the same rounds
    (``baseline2``, its own ``goal2``): its ratio is judged on its own median
    round, whose landlord figure is ``landlord2`` (None: ``landlord``).
    ``baseline_name`` and ``baseline2_name`` say which is which in the table
    and the plots, where such a row is two lines (:func:`lines_of`).
    """

    metric: str
    landlord: float | None
    baseline: float | None = None
    unit: str = ""
    goal: float | None = None
    limit: float | None = None
    spread: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    baseline2: float | None = None
    goal2: float | None = None
    landlord2: float | None = None
    baseline_name: str = ""
    baseline2_name: str = ""

    @property
    def ratio(self) -> float | None:
        return ratio_of(self.landlord, self.baseline, self.unit)

    @property
    def ratio2(self) -> float | None:
        """How many times better landlord does than the second baseline, in that baseline's median round."""
        return ratio_of(self.landlord if self.landlord2 is None else self.landlord2, self.baseline2, self.unit)

    @property
    def met2(self) -> bool | None:
        """The verdict on ``goal2`` alone."""
        return verdict(self.ratio2, self.goal2)

    @property
    def met(self) -> bool | None:
        """True if every goal is met, False if one is missed, None if there is none (or no figure to judge)."""
        verdicts = []
        if self.goal is not None or self.limit is not None:
            verdicts.append(verdict(self.ratio, self.goal, self.landlord, self.limit, self.unit))
        if self.goal2 is not None:
            verdicts.append(self.met2)
        return all_met(verdicts)

    @property
    def two_baselines(self) -> bool:
        return self.baseline2 is not None or self.goal2 is not None or bool(self.baseline2_name)

    def as_json(self) -> dict[str, Any]:
        row = {"metric": self.metric, "landlord": self.landlord, "baseline": self.baseline, "unit": self.unit,
               "ratio": self.ratio, "goal": self.goal, "met": self.met, **self.spread, **self.extra}
        if self.limit is not None:
            row["limit"] = self.limit
        if self.two_baselines:
            row.update(baseline_name=self.baseline_name, baseline2_name=self.baseline2_name,
                       landlord2=self.landlord if self.landlord2 is None else self.landlord2,
                       baseline2=self.baseline2, ratio2=self.ratio2, goal2=self.goal2, met2=self.met2)
        return {key: value if finite(value) or not isinstance(value, float) else None for key, value in row.items()}


def median_round(landlord: Sequence[float], baseline: Sequence[float] | None,
                 unit: str) -> tuple[float, float, list[float]] | None:
    """Of the rounds with both figures, the one with the median ratio (of an even count, the less favourable
    middle one): landlord's figure, the baseline's, and every round's ratio in order. None: no such round."""
    pairs = [(a, b) for a, b in zip(landlord, baseline or []) if ratio_of(a, b, unit) is not None]
    if not pairs:
        return None
    pairs.sort(key=lambda pair: ratio_of(*pair, unit) or 0.0)
    ours, theirs = pairs[(len(pairs) - 1) // 2]
    return ours, theirs, [ratio_of(a, b, unit) or 0.0 for a, b in pairs]


def compare(metric: str, unit: str, landlord: Sequence[float], baseline: Sequence[float] | None = None,
            baseline2: Sequence[float] | None = None, **row: Any) -> Row:
    """One row from per-round figures (``landlord[i]``, ``baseline[i]`` and ``baseline2[i]`` measured in the
    same round).

    The figures are those of the round with the median ratio (:func:`median_round`),
    so a noisy neighbour slows both sides and one lucky round decides nothing;
    ``spread`` has the min and max of each side and of the ratio over the
    rounds. The second baseline's ratio is the median of its own (its round's
    landlord figure is ``landlord2``). Without a baseline: landlord's median.
    Rounds with no figure (NaN) are left out. ``row``: more :class:`Row` fields.
    """
    ours = [x for x in landlord if finite(x)]
    spread: dict[str, float] = {"rounds": len(landlord)}
    if ours:
        spread.update(landlord_min=min(ours), landlord_max=max(ours))
    middle: float | None = statistics.median_low(ours) if ours else None
    middles: dict[str, tuple[float, float] | None] = {"": None, "2": None}
    for suffix, theirs in (("", baseline), ("2", baseline2)):
        found = median_round(landlord, theirs, unit)
        if found is None:
            continue
        mine, theirs_mid, ratios = found
        measured = [x for x in theirs or [] if finite(x)]
        spread.update({f"baseline{suffix}_min": min(measured), f"baseline{suffix}_max": max(measured),
                       f"ratio{suffix}_min": ratios[0], f"ratio{suffix}_max": ratios[-1]})
        middles[suffix] = (mine, theirs_mid)
    first, second = middles[""], middles["2"]
    if first is not None:
        middle = first[0]
    if second is not None:
        row.update(landlord2=second[0], baseline2=second[1])
    return Row(metric, middle, first[1] if first else None, unit, spread=spread, **row)


def lines_of(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A JSON row as the lines of a table or the bars of a plot, each with one baseline, one ratio and its
    verdict: the row itself, or two lines for a row with a second baseline (each named after its baseline)."""
    if "baseline2" not in row and "goal2" not in row:
        return [dict(row)]
    common = {key: row.get(key) for key in ("unit", "rounds") if key in row}
    first = {key: value for key, value in row.items()
             if not key.startswith(("baseline2", "ratio2", "goal2", "met2", "landlord2"))}
    first.update(metric=f"{row.get('metric')}, vs {row.get('baseline_name') or 'baseline'}",
                 met=verdict(ratio_of(row.get("landlord"), row.get("baseline"), row.get("unit")), row.get("goal"),
                             row.get("landlord"), row.get("limit"), row.get("unit")))
    second = {**common, "metric": f"{row.get('metric')}, vs {row.get('baseline2_name') or 'baseline 2'}",
              "landlord": row.get("landlord2"), "baseline": row.get("baseline2"), "goal": row.get("goal2"),
              "met": row.get("met2"), "ratio_min": row.get("ratio2_min"), "ratio_max": row.get("ratio2_max"),
              "baseline_min": row.get("baseline2_min"), "baseline_max": row.get("baseline2_max")}
    return [first, second]


@dataclass
class Report:
    """What a benchmark's ``measure`` found: printed (title, table, notes, problems) and written as JSON."""

    rows: list[Row]
    title: str = ""                                            # what was compared with what, above the table
    notes: list[str] = field(default_factory=list)             # below the table: breakdowns, set-up, context
    problems: list[str] = field(default_factory=list)          # each printed; any makes the exit status 1
    machine: dict[str, Any] = field(default_factory=dict)      # more about where it ran (etcd, load average)
    extra: dict[str, Any] = field(default_factory=dict)        # more top-level JSON keys (samples, config)


# -- output -----------------------------------------------------------------------------------


def figure(value: Any) -> str:
    """A figure for the table: three significant digits below 100, whole numbers above."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def goal_text(row: Mapping[str, Any]) -> str:
    parts = [f">={figure(row['goal'])}x"] if row.get("goal") is not None else []
    if row.get("limit") is not None:
        parts.append(f"{'>=' if higher_is_better(row.get('unit')) else '<='}{figure(row['limit'])}")
    return ", ".join(parts)


def spread_text(row: Mapping[str, Any]) -> str:
    """The min and max over the rounds: of the ratio, or of landlord's figure when it has no baseline."""
    if row.get("rounds", 1) <= 1:
        return ""
    if row.get("ratio_min") is not None and ratio_of(row.get("landlord"), row.get("baseline"), row.get("unit")):
        return f"{row['ratio_min']:.2f}–{row['ratio_max']:.2f}x"
    if row.get("landlord_min") is not None:
        return f"{figure(row['landlord_min'])}–{figure(row['landlord_max'])}"
    return ""


def table(results: Sequence[Mapping[str, Any]], *, names: bool = True) -> str:
    """The rows of ``results`` (each ``{"name", "rows"}``, rows as written to JSON) as one table; a row with
    two baselines is two lines, one per baseline (:func:`lines_of`)."""
    whole = [(str(result.get("name", "?")), row) for result in results for row in result.get("rows", [])]
    rows = [(name, line) for name, row in whole for line in lines_of(row)]
    twice = len(rows) > len(whole)  # some row has two baselines
    # as wide as the longest metric: a label cut short reads as another measurement
    width = max([len(str(row.get("metric"))) for _, row in rows] + [6])
    header = (f"{'benchmark':<14} " if names else "") + (
        f"{'metric':<{width}} {'landlord':>12} {'baseline':>12} {'unit':<14} {'ratio':>7} {'rounds':>13} "
        f"{'goal':>14}  met")
    lines = [header, "-" * len(header)]
    for name, row in rows:
        ratio = ratio_of(row.get("landlord"), row.get("baseline"), row.get("unit"))
        met = {True: "PASS", False: "MISS", None: ""}.get(row.get("met"), str(row.get("met")))
        lines.append((f"{name:<14} " if names else "") + (
            f"{str(row.get('metric')):<{width}} {figure(row.get('landlord')):>12} {figure(row.get('baseline')):>12} "
            f"{str(row.get('unit') or '')[:14]:<14} {(f'{ratio:.2f}x' if ratio is not None else '—'):>7} "
            f"{spread_text(row):>13} {goal_text(row):>14}  {met}"))
    lines.append("(ratio: times better than the baseline, > 1 is better" + (
        "; rounds: its min–max over the rounds, or landlord's without a baseline; the figures are the "
        f"median-ratio round's{', for each baseline its own' if twice else ''})"
        if any(row.get("rounds", 1) > 1 for _, row in rows) else ")"))
    return "\n".join(lines)


def machine_info(*modules: ModuleType) -> dict[str, Any]:
    """What the figures were measured on: platform, Python, cores, and the versions of ``modules``."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "cpu_count": os.cpu_count(),
    }
    for module in modules:
        info[module.__name__] = getattr(module, "__version__", "?")
    return info


# -- child processes --------------------------------------------------------------------------


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


def stop_child(child: ChildProcess) -> int | None:
    """End a child started with landlord.testing: SIGTERM, then a kill, reaped either way. Its exit
    status, or None if it had to be killed."""
    status = child.stop(timeout=SERVER_STOP_TIMEOUT)
    child.close()
    return None if child.killed else status


class ServerProcess:
    """``script`` started again as its ``role`` (``--child ROLE``); :meth:`uri` waits for it, :meth:`stop` ends it.

    A :class:`landlord.testing.ChildProcess` with its stderr inherited, so
    that a failing server shows its traceback here.

    Args:
        script: the benchmark script (its ``__file__``).
        role: the child role that makes it serve (a key of ``children`` in :meth:`Benchmark.main`).
        what: what the server is, for messages.
        new_session: run it in a session of its own, so that Ctrl-C reaches
            only the benchmark, which then stops its children in order.
    """

    def __init__(self, script: str, role: str, what: str, *, new_session: bool = False) -> None:
        self.what = what
        self.child = ChildProcess(os.path.abspath(script), "--child", role, name=f"the {what}", stderr="inherit",
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

    def stop(self) -> None:
        """End the process (SIGTERM, then a kill, said on stderr)."""
        if stop_child(self.child) is None:
            progress(f"warning: the {self.what} ignored SIGTERM and had to be killed")


# -- servers that are not Python (etcd, ZooKeeper, Redis) ---------------------------------------


class ServerUnavailable(Exception):
    """A server or its client cannot be had here, or the server would not start; the message says why."""


def filesystem_of(path: str) -> str:
    """The type of the filesystem holding ``path`` (from /proc/mounts), or "unknown"."""
    path = os.path.realpath(path)
    best, kind = "", "unknown"
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                parts = line.split()
                if len(parts) >= 3 and (path == parts[1] or path.startswith(parts[1].rstrip("/") + "/")):
                    if len(parts[1]) > len(best):
                        best, kind = parts[1], parts[2]
    except OSError:
        pass
    return kind


def default_data_parent() -> str | None:
    """tmpfs if there is one to write to (a server's best case: fsync is free), else the usual temp dir."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def no_proxy_get(url: str, timeout: float) -> bytes:
    """GET ``url`` directly: loopback never goes through a proxy."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=timeout) as answer:
        return answer.read()  # type: ignore[no-any-return]


def ask(port: int, request: bytes, timeout: float = 1.0) -> bytes:
    """What a server on 127.0.0.1:``port`` answers to ``request``, read until it closes the connection
    (ZooKeeper's four-letter words close it; end a Redis request with QUIT)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
        connection.sendall(request)
        chunks = []
        while chunk := connection.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


class ExternalServer:
    """A server program on a free port of 127.0.0.1 with a temporary directory (its data and its log);
    :meth:`stop` ends it and removes the directory. It is started when constructed.

    A subclass says how: :meth:`command` (the command line on :attr:`port`, in
    :attr:`workdir`) and :meth:`healthy` (one probe; it may set :attr:`version`).
    A port free when chosen may be taken before the server binds it: a server
    that exits while starting is started again on another, up to
    ``START_ATTEMPTS`` times.

    Args:
        binary: the program (its path).
        parent_dir: where the temporary directory goes (None: the system's).

    Raises:
        ServerUnavailable: it would not start or become healthy within ``START_TIMEOUT``.
    """

    what = "server"
    START_TIMEOUT = 30.0
    START_ATTEMPTS = 3

    def __init__(self, binary: str, parent_dir: str | None = None) -> None:
        self.binary = binary
        self.workdir = tempfile.mkdtemp(prefix=f"bench-{self.what.lower()}-", dir=parent_dir)
        self.filesystem = filesystem_of(self.workdir)
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.version = "?"
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def command(self, attempt: int) -> list[str]:
        """The command line that serves on :attr:`port` (already chosen) for start attempt ``attempt``."""
        raise NotImplementedError

    def healthy(self) -> bool:
        """Whether it serves yet (one probe; it may raise OSError or ValueError for no)."""
        raise NotImplementedError

    @property
    def log_path(self) -> str:
        return os.path.join(self.workdir, "server.log")

    def _start(self) -> None:
        status: int | None = None
        for attempt in range(self.START_ATTEMPTS):
            self.port = free_port()
            with open(self.log_path, "ab") as log:
                self.process = subprocess.Popen(self.command(attempt), stdin=subprocess.DEVNULL, stdout=log,
                                                stderr=subprocess.STDOUT, cwd=self.workdir, start_new_session=True)
            if self._wait_healthy():
                return
            status = self.process.poll()
            if status is None:  # running but never healthy: not a port clash
                raise ServerUnavailable(f"{self.what} did not become healthy within {self.START_TIMEOUT:g} s; "
                                        f"its log ends: {self.log_tail()}")
        raise ServerUnavailable(f"{self.what} exited with status {status} ({self.START_ATTEMPTS} attempts); "
                                f"its log ends: {self.log_tail()}")

    def _wait_healthy(self) -> bool:
        assert self.process is not None
        deadline = time.monotonic() + self.START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                if self.healthy():
                    return True
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        return False

    def log_tail(self, lines: int = 3) -> str:
        """The last lines of its log, on one line."""
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as log:
                return " | ".join(line.strip() for line in log.readlines()[-lines:]) or "(empty)"
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Stop it (SIGTERM, then a kill) and remove its directory."""
        if self.process is not None and stop_process(self.process) is None:
            progress(f"warning: {self.what} ignored SIGTERM and had to be killed")
        shutil.rmtree(self.workdir, ignore_errors=True)
        if os.path.exists(self.workdir):
            progress(f"warning: could not remove {self.what}'s directory {self.workdir}")


class EtcdProcess(ExternalServer):
    """A single-member etcd (``binary``) on 127.0.0.1: clients on :attr:`port`, peers on another free port."""

    what = "etcd"

    def command(self, attempt: int) -> list[str]:
        client_url, peer_url = f"http://127.0.0.1:{self.port}", f"http://127.0.0.1:{free_port()}"
        return [self.binary, "--name", "bench", "--data-dir", os.path.join(self.workdir, f"data{attempt}"),
                "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
                "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
                "--initial-cluster", f"bench={peer_url}", "--initial-cluster-state", "new",
                "--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn"]

    def healthy(self) -> bool:
        url = f"http://127.0.0.1:{self.port}"
        if json.loads(no_proxy_get(f"{url}/health", 1.0)).get("health") != "true":
            return False
        self.version = json.loads(no_proxy_get(f"{url}/version", 5.0))["etcdserver"]
        return True


def etcd_client(port: int, timeout: float) -> Any:
    """An etcd-sdk-python client (``pyetcd``) of the etcd on 127.0.0.1:``port``, never through a proxy.

    Raises:
        ServerUnavailable: no such client here (or protobuf refuses its generated code).
    """
    try:
        import pyetcd
    except Exception as exc:  # ImportError, or protobuf refusing the generated code
        raise ServerUnavailable(f"no Python etcd client ({type(exc).__name__}: {exc}); "
                                "run benchmarks/setup_etcd.sh") from None
    # gRPC honours http_proxy; loopback must not go through one
    return pyetcd.client(host="127.0.0.1", port=port, timeout=timeout, grpc_options=[("grpc.enable_http_proxy", 0)])


class GrantsOnRequest:
    """Mixed into a benchmark's landlord (before ``landlord.Landlord`` or ``ReplicatedLandlord``):
    remote ``grant`` and ``grant_many``, each lease on a fresh resource (a number)."""

    _resources = 0

    @Pyro5.api.expose
    def grant(self, duration: float) -> Any:
        """Lease a fresh resource for ``duration`` seconds."""
        self._resources += 1
        return self.new_lease(self._resources, duration)

    @Pyro5.api.expose
    def grant_many(self, count: int, duration: float) -> list[Any]:
        """Lease ``count`` fresh resources for ``duration`` seconds each, in one call."""
        return [self.grant(duration) for _ in range(count)]


def serve_forever(server: Any) -> int:
    """Serve ``server`` on loopback until SIGTERM or Ctrl-C; a server child process's whole life.

    Prints ``URI: <uri>`` once serving (:meth:`ServerProcess.uri` waits for
    that line), and closes ``server`` at the end if it has a ``close``.
    """
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


# -- the command line -------------------------------------------------------------------------


class Benchmark:
    """One benchmark script's command line and run: the common options, its own (added to :attr:`parser`), its
    child roles, and its report printed and written.

    Args:
        name: the benchmark's name in the JSON and in run_all's table.
        description: what it measures, for ``--help``.
        rounds: the default of ``--rounds``; None: no such option (one measurement).
        sizes: the default of ``--sizes`` (comma-separated); None: no such option.
        max_size: the largest size ``--sizes`` takes.
        quick: the defaults ``--quick`` sets (options given explicitly still win).
        modules: whose versions the machine lines name.
    """

    def __init__(self, name: str, description: str, *, rounds: int | None = 3, sizes: str | None = None,
                 max_size: int | None = None, quick: Mapping[str, Any] | None = None,
                 modules: Sequence[ModuleType] = ()) -> None:
        self.name = name
        self.quick = dict(quick or {})
        self.modules = modules
        self.parser = parser = argparse.ArgumentParser(description=description)
        if rounds is not None:
            parser.add_argument("--rounds", type=positive_int, default=rounds,
                                help="rounds of every measurement, landlord and baseline taking turns; the "
                                     "median-ratio round is reported, with the min and max (default: %(default)s)")
        if sizes is not None:
            parser.add_argument("--sizes", type=size_list(max_size), default=sizes,
                                help="comma-separated sizes; '' for none (default: %(default)s)")
        parser.add_argument("--json", metavar="PATH", help="also write the report as JSON to PATH")
        quick_text = ", ".join(f"--{key.replace('_', '-')} {value}" for key, value in self.quick.items())
        parser.add_argument("--quick", action="store_true",
                            help=f"a small, fast run that checks the benchmark works, its figures meaning little "
                                 f"({quick_text or 'the defaults'}, unless given)")
        parser.add_argument("--child", metavar="ROLE", help=argparse.SUPPRESS)  # this script started again

    def option(self, flag: str, kind: Callable[[str], Any], default: Any, help: str, **more: Any) -> None:
        """Add an option of the script's own, its default shown in ``--help``."""
        self.parser.add_argument(flag, type=kind, default=default, help=f"{help} (default: %(default)s)", **more)

    def parse(self, argv: Sequence[str] | None = None) -> argparse.Namespace:
        args = self.parser.parse_args(argv)
        if args.quick:  # parsed again on the quick defaults, so that what is given explicitly wins
            self.parser.set_defaults(**self.quick)
            args = self.parser.parse_args(argv)
        return args

    def error(self, message: str) -> NoReturn:
        """A usage error: print it with the usage, exit 2."""
        self.parser.error(message)

    def main(self, measure: Callable[[argparse.Namespace], Report], argv: Sequence[str] | None = None,
             children: Mapping[str, Callable[[argparse.Namespace], int]] | None = None) -> int:
        """Parse, run ``measure`` (or the child role asked for), print the report, write the JSON; the exit status."""
        args = self.parse(argv)
        if args.child is not None:
            if args.child not in (children or {}):
                self.error(f"no child role {args.child!r}")
            return (children or {})[args.child](args)
        signal.signal(signal.SIGTERM, stop_on_sigterm)  # so that measure's cleanup stops its children on SIGTERM too
        started = time.monotonic()
        try:
            report = measure(args)
        except KeyboardInterrupt:
            progress("interrupted; the child processes were stopped")
            return 130
        wall = time.monotonic() - started
        info = machine_info(*self.modules) | report.machine
        print(self.format(report, info, wall))
        if args.json:
            with open(args.json, "w", encoding="utf-8") as out:
                json.dump({"name": self.name, "rows": [row.as_json() for row in report.rows], "machine": info,
                           "wall_seconds": wall, **report.extra}, out, indent=2, default=str)
                out.write("\n")
        return 1 if report.problems else 0

    def format(self, report: Report, info: Mapping[str, Any], wall: float) -> str:
        lines = [report.title, ""] if report.title else []
        lines.append(table([{"name": self.name, "rows": [row.as_json() for row in report.rows]}], names=False))
        lines += [""] + report.notes if report.notes else []
        lines += [f"PROBLEM: {problem}" for problem in report.problems]
        versions = ", ".join(f"{module.__name__} {info[module.__name__]}" for module in self.modules)
        lines += ["", f"machine: {info['platform']} ({info['processor']}), {info['cpu_count']} CPUs",
                  f"python:  {info['python']}; {versions}"]
        lines += [f"{key}: {value}" for key, value in report.machine.items()]
        lines.append(f"wall time: {wall:.1f} s")
        return "\n".join(lines)
