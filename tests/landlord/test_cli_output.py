"""landlord.cli.output: -o json writes one JSON object a line, which parses back as written."""

from __future__ import annotations

import argparse
import io
import json
import math
import pathlib

import pytest

from landlord.cli.output import add_output_option, write_json_lines


def test_each_row_is_one_line_that_parses_back() -> None:
    out = io.StringIO()
    rows = [{"service_id": "a", "types": ["x", "y"], "seconds_left": 1.5},
            {"service_id": "b\nnewline", "types": [], "seconds_left": None, "path": pathlib.Path("/p")}]
    assert write_json_lines(rows, out) == 2
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert json.loads(lines[0]) == rows[0]
    assert json.loads(lines[1]) == {**rows[1], "path": "/p"}  # what JSON has no form for, as text


def test_a_value_json_cannot_hold_is_refused_not_written_as_nan() -> None:
    with pytest.raises(ValueError):
        write_json_lines([{"seconds_left": math.nan}], io.StringIO())


def test_the_option_takes_text_or_json_only(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="toy")
    add_output_option(parser)
    assert parser.parse_args([]).output == "text"
    assert parser.parse_args(["-o", "JSON"]).output == "json"
    with pytest.raises(SystemExit):
        parser.parse_args(["-o", "yaml"])
    assert "invalid choice: 'yaml'" in capsys.readouterr().err
