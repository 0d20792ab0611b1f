"""One way to log for every server and example: ``--log-level`` and ``--log-format text|json``, to
stderr, timestamps in UTC.

Text, for a person::

    2026-11-27T20:31:02.123Z INFO    lookup.service.lookupservice: registered ...

JSON, for a log collector: one object a line, with ``time``, ``level``, ``logger``, ``message``,
and ``exception`` when there is one::

    {"time": "2026-11-27T20:31:02.123Z", "level": "INFO", "logger": "lookup.service...", "message": "..."}

The level applies to landlord's and lookup's own loggers; everything else (Pyro5, the etcd client)
logs warnings and worse, so that ``--log-level debug`` shows our story and not every library's.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import sys
from typing import Any, TextIO

__all__ = ["LEVELS", "FORMATS", "add_logging_options", "configure_logging", "logging_from", "LogFormatter",
           "JsonLogFormatter"]

LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("text", "json")
OUR_LOGGERS = ("landlord", "lookup")
_HANDLER_NAME = "landlord.cli"  # our handler on the root logger: configuring again replaces it


def utc_time(created: float) -> str:
    """``created`` (seconds since the epoch) as ISO 8601 in UTC to the millisecond, ``Z``-suffixed."""
    moment = datetime.datetime.fromtimestamp(created, datetime.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class LogFormatter(logging.Formatter):
    """``<UTC time> <LEVEL> <logger>: <message>``, and the traceback after it if any."""

    def __init__(self) -> None:
        super().__init__("%(levelname)-7s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        return f"{utc_time(record.created)} {super().format(record)}"


class JsonLogFormatter(logging.Formatter):
    """One JSON object a record: ``time`` (UTC), ``level``, ``logger``, ``message``, and
    ``exception`` (the traceback's text) when the record carries one."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {"time": utc_time(record.created), "level": record.levelname,
                                 "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        return json.dumps(entry, ensure_ascii=False, default=str)


def add_logging_options(parser: argparse.ArgumentParser, *, default_level: str = "info") -> None:
    """Add the logging group: ``--log-level``, ``--log-format``, and ``-v`` (``--log-level debug``).

    Args:
        parser: the command's parser.
        default_level: the level when none is given, one of :data:`LEVELS`.

    Raises:
        ValueError: ``default_level`` is not one of :data:`LEVELS`.
    """
    if default_level not in LEVELS:
        raise ValueError(f"a level is one of {', '.join(LEVELS)}, not {default_level!r}")
    group = parser.add_argument_group("logging", "to stderr, timestamps in UTC")
    group.add_argument("--log-level", choices=LEVELS, default=default_level, type=str.lower,
                       help="the least severe records logged (default %(default)s)")
    group.add_argument("--log-format", choices=FORMATS, default="text", type=str.lower,
                       help="text for a person, json (one object a line) for a log collector (default %(default)s)")
    group.add_argument("-v", "--verbose", action="store_true", help="the same as --log-level debug")


def logging_from(args: argparse.Namespace, *, stream: TextIO | None = None) -> None:
    """Configure logging from what :func:`add_logging_options` parsed."""
    configure_logging("debug" if args.verbose else args.log_level, args.log_format, stream=stream)


def configure_logging(level: str = "info", log_format: str = "text", *, stream: TextIO | None = None) -> None:
    """Log landlord's and lookup's records of ``level`` and worse (other libraries' of warning and
    worse) to ``stream`` in ``log_format``. Configuring again replaces what was configured.

    Args:
        level: one of :data:`LEVELS`.
        log_format: ``"text"`` or ``"json"``.
        stream: where the lines go (default stderr).

    Raises:
        ValueError: an unknown level or format.
    """
    if level not in LEVELS:
        raise ValueError(f"a level is one of {', '.join(LEVELS)}, not {level!r}")
    if log_format not in FORMATS:
        raise ValueError(f"a log format is one of {', '.join(FORMATS)}, not {log_format!r}")
    handler = logging.StreamHandler(sys.stderr if stream is None else stream)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(JsonLogFormatter() if log_format == "json" else LogFormatter())
    root = logging.getLogger()
    for old in [old for old in root.handlers if old.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    for name in OUR_LOGGERS:
        logging.getLogger(name).setLevel(level.upper())
