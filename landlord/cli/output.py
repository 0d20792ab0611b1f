"""``-o json`` on list commands: one JSON object per line (JSON Lines), one line per lease or
registration, and nothing else on stdout, so that ``jq`` or a script reads it line by line.

Times are numbers of seconds (``seconds_left``), never formatted text; a value JSON has no form for
(a URI, a path) is written as its text.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

__all__ = ["OUTPUTS", "add_output_option", "write_json_lines"]

OUTPUTS = ("text", "json")


def add_output_option(parser: argparse.ArgumentParser) -> None:
    """Add ``-o``/``--output text|json`` to a list command's parser."""
    parser.add_argument("-o", "--output", choices=OUTPUTS, default="text", type=str.lower,
                        help="text: a table for a person; json: one JSON object per line, for a script "
                             "(default %(default)s)")


def write_json_lines(rows: Iterable[Mapping[str, Any]], out: TextIO) -> int:
    """Write each row as one line of JSON; the number of rows written.

    Args:
        rows: the objects, each a mapping of names to values.
        out: where the lines go.
    """
    count = 0
    for row in rows:
        out.write(json.dumps(dict(row), ensure_ascii=False, default=str, allow_nan=False) + "\n")
        count += 1
    return count
