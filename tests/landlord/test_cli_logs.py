"""landlord.cli.logs: one text and one JSON format, UTC timestamps, our loggers at the level asked,
other libraries' at warning; configuring again replaces, never doubles."""

from __future__ import annotations

import argparse
import io
import json
import logging
import re
from collections.abc import Iterator

import pytest

from landlord.cli.logs import add_logging_options, configure_logging, logging_from, utc_time

UTC_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture(autouse=True)
def restored_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    ours = {name: logging.getLogger(name).level for name in ("landlord", "lookup")}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, old in ours.items():
        logging.getLogger(name).setLevel(old)


def test_utc_time_is_iso_with_milliseconds_and_z() -> None:
    assert utc_time(0.0) == "1970-01-01T00:00:00.000Z"
    assert utc_time(1_795_000_000.25) == "2026-11-18T11:06:40.250Z"


def test_text_lines_carry_utc_time_level_logger_and_message() -> None:
    out = io.StringIO()
    configure_logging("info", "text", stream=out)
    logging.getLogger("lookup.service.test").info("registered %s", "svc-1")
    logging.getLogger("landlord.test").debug("not at info")
    line, = out.getvalue().splitlines()
    stamp, rest = line.split(" ", 1)
    assert UTC_STAMP.match(stamp) and rest == "INFO    lookup.service.test: registered svc-1"


def test_json_lines_are_objects_with_the_exception_when_there_is_one() -> None:
    out = io.StringIO()
    configure_logging("debug", "json", stream=out)
    logging.getLogger("landlord.test").debug("quote \" and é")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("lookup.test").exception("failed")
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert UTC_STAMP.match(first["time"]) and first["level"] == "DEBUG" and first["logger"] == "landlord.test"
    assert first["message"] == "quote \" and é" and "exception" not in first
    assert second["message"] == "failed" and "RuntimeError: boom" in second["exception"]


def test_other_libraries_log_warnings_only_and_configuring_again_replaces() -> None:
    first, out = io.StringIO(), io.StringIO()
    configure_logging("debug", "text", stream=first)
    configure_logging("debug", "text", stream=out)
    logging.getLogger("somelib.core").info("chatter")
    logging.getLogger("somelib.core").warning("worth seeing")
    logging.getLogger("landlord.x").debug("ours")
    assert first.getvalue() == ""
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].endswith("somelib.core: worth seeing") and lines[1].endswith("landlord.x: ours")


def test_error_level_hides_warnings_of_ours() -> None:
    out = io.StringIO()
    configure_logging("error", "text", stream=out)
    logging.getLogger("lookup.x").warning("hidden")
    logging.getLogger("lookup.x").error("shown")
    assert [line.split(" ", 1)[1] for line in out.getvalue().splitlines()] == ["ERROR   lookup.x: shown"]


@pytest.mark.parametrize(("level", "log_format"), [("loud", "text"), ("info", "xml")])
def test_unknown_level_or_format_is_refused(level: str, log_format: str) -> None:
    with pytest.raises(ValueError, match="one of"):
        configure_logging(level, log_format)


def test_the_options_parse_and_verbose_means_debug(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="toy")
    add_logging_options(parser)
    args = parser.parse_args(["--log-level", "WARNING", "--log-format", "json"])
    assert (args.log_level, args.log_format, args.verbose) == ("warning", "json", False)
    out = io.StringIO()
    logging_from(parser.parse_args(["-v"]), stream=out)
    logging.getLogger("landlord.x").debug("seen")
    assert out.getvalue().endswith("landlord.x: seen\n")
    with pytest.raises(SystemExit):
        parser.parse_args(["--log-level", "loud"])
    assert "invalid choice: 'loud'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="one of"):
        add_logging_options(argparse.ArgumentParser(), default_level="chatty")
