"""Every code block of README.md and docs/*.md runs, or says it is a fragment.

A ```python block runs as it is, as its reader would run it: alone, in a
fresh interpreter, from an empty directory, under a timeout. A block that
needs a server, other hosts, or the story around it (``lease`` from the
section before) is marked with the line ``<!-- fragment -->`` right before
its fence, and is not run. A block that runs may reach only this machine:
one naming another host is refused before it runs (mark it a fragment).

Shell blocks (```sh, ```bash, ```console) are not run: they start servers,
benchmarks, the whole suite. What can rot in them cheaply is checked: each
``python -m landlord|lookup`` (or ``landlord``, ``lookup``) command names a
subcommand that exists, with long options its ``--help`` lists.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
FRAGMENT = "<!-- fragment -->"
RUN_TIMEOUT = 60.0  # seconds for one block: the longest runs a few on a loaded machine
SHELL_LANGUAGES = ("sh", "bash", "console", "shell")

_OPENING = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,})(?P<language>[\w-]*)\s*$")
_LOOPBACK = ("127.", "0.0.0.0")
_IPV4 = re.compile(r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.])")
_PYRO_HOST = re.compile(r"PYRO:[^@\s\"']+@(?P<host>\[[^\]]*\]|[^:\s\"']+):")
_MULTICAST_CALLS = re.compile(r"\b(discover|LookupDiscovery)\(")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a Markdown file."""

    path: Path
    line: int  # of its opening fence, from 1
    language: str
    code: str
    fragment: bool

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks_of(path: Path) -> list[Block]:
    """The fenced blocks of ``path``, their indentation (a block in a list item) taken off.

    Raises:
        AssertionError: a fence is never closed.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    index = 0
    while index < len(lines):
        opening = _OPENING.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        closing = next((end for end in range(index + 1, len(lines))
                        if lines[end].strip() == fence and lines[end].startswith(indent)), None)
        assert closing is not None, f"{path.relative_to(ROOT)}:{index + 1}: the fence is never closed"
        code = "\n".join(line[len(indent):] if line.startswith(indent) else line.lstrip()
                         for line in lines[index + 1:closing])
        marked = index > 0 and lines[index - 1].strip() == FRAGMENT
        found.append(Block(path, index + 1, opening["language"], code + "\n", marked))
        index = closing + 1
    return found


ALL_BLOCKS = [block for path in DOC_FILES for block in blocks_of(path)]
PYTHON_BLOCKS = [block for block in ALL_BLOCKS if block.language == "python"]
RUNNABLE = [block for block in PYTHON_BLOCKS if not block.fragment]
SHELL_BLOCKS = [block for block in ALL_BLOCKS if block.language in SHELL_LANGUAGES and not block.fragment]


def other_hosts(code: str) -> list[str]:
    """The addresses ``code`` names that are not this machine's, and its multicast calls."""
    hosts = [address for address in _IPV4.findall(code) if not address.startswith(_LOOPBACK)]
    hosts += [match["host"] for match in _PYRO_HOST.finditer(code)
              if match["host"] not in ("localhost", "[::1]") and not match["host"].startswith(_LOOPBACK)]
    hosts += [f"{call}(...) (multicast)" for call in _MULTICAST_CALLS.findall(code)]
    return hosts


def _environment() -> dict[str, str]:
    """This checkout's packages first on the path, whatever is installed."""
    paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


@pytest.mark.parametrize("block", RUNNABLE, ids=str)
def test_python_block_runs(block: Block, tmp_path: Path) -> None:
    reaches = other_hosts(block.code)
    assert not reaches, f"{block} would reach {reaches}: mark it {FRAGMENT!r}, or keep it on loopback"
    script = tmp_path / "snippet.py"
    script.write_text(block.code, encoding="utf-8")
    try:
        ran = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_environment(),
                             capture_output=True, text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{block} still ran after {RUN_TIMEOUT:g} s (a server? mark it {FRAGMENT!r}):\n{exc.stdout!r}")
    assert ran.returncode == 0, (f"{block} exited {ran.returncode}; mark it {FRAGMENT!r} if it needs more "
                                 f"than itself\n--- stdout\n{ran.stdout[-2000:]}\n--- stderr\n{ran.stderr[-3000:]}")


def test_some_blocks_run_and_some_are_fragments() -> None:
    # the parser finds the blocks: none found would make every other test here pass on nothing
    assert RUNNABLE and len(RUNNABLE) < len(PYTHON_BLOCKS)


def test_every_mark_stands_right_before_a_fence() -> None:
    misplaced = []
    for path in DOC_FILES:
        lines = path.read_text(encoding="utf-8").splitlines()
        misplaced += [f"{path.relative_to(ROOT)}:{number}" for number, line in enumerate(lines, 1)
                      if line.strip() == FRAGMENT
                      and (number == len(lines) or _OPENING.match(lines[number]) is None)]
    assert not misplaced, f"{FRAGMENT} marks nothing unless the next line opens a fence: {misplaced}"


def test_other_hosts_are_found() -> None:
    code = 'lock = Lock("PYRO:landlord@10.0.0.5:4170", "x"); p = Proxy("PYRO:x@h1:4160"); discover(3)'
    assert other_hosts(code) == ["10.0.0.5", "10.0.0.5", "h1", "discover(...) (multicast)"]
    assert other_hosts('serve(x, "127.0.0.1", 7000); Proxy("PYRO:x@localhost:1"); serve(x, "0.0.0.0", 1)') == []


def test_blocks_in_a_list_item_are_found_and_dedented(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(f"- an item:\n\n  {FRAGMENT}\n  ```python\n  x = 1\n\n  y = 2\n  ```\n\n```sh\nls\n```\n")
    assert blocks_of(doc) == [Block(doc, 4, "python", "x = 1\n\ny = 2\n", True), Block(doc, 10, "sh", "ls\n", False)]


# --- shell blocks: the commands of our own command lines -------------------------------------------------------------

_COMMAND = re.compile(r"^(?:(?:\S*/)?python3?\s+-m\s+|(?:\S*/)?)(?P<program>landlord|lookup)(?:\s|$)")


def commands_of(block: Block) -> list[list[str]]:
    """Each command line of ``block`` that runs landlord or lookup, as its words after the program."""
    lines = block.code.replace("\\\n", " ").splitlines()  # a command continued on the next line: one
    if block.language == "console":  # a transcript: its commands follow the prompt
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    commands = []
    for line in lines:
        command = _COMMAND.match(line.strip())
        if command:
            words = shlex.split(line.strip()[command.end():], comments=True)
            commands.append([command["program"], *words])
    return commands


SHELL_COMMANDS = [(block, command) for block in SHELL_BLOCKS for command in commands_of(block)]


@pytest.mark.parametrize(("block", "command"), SHELL_COMMANDS, ids=lambda value: str(value)[:60])
def test_shell_command_has_its_options(block: Block, command: list[str]) -> None:
    program, *words = command
    subcommand = [words[0]] if words and not words[0].startswith("-") else []
    helped = subprocess.run([sys.executable, "-m", program, *subcommand, "--help"], cwd=ROOT, env=_environment(),
                            capture_output=True, text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
    assert helped.returncode == 0, f"{block}: {' '.join(command)}: no such command\n{helped.stderr[-2000:]}"
    unknown = [word for word in words if word.startswith("--")
               and not re.search(rf"(?<![\w-]){re.escape(word.split('=')[0])}(?![\w-])", helped.stdout)]
    assert not unknown, f"{block}: {' '.join(command)}: {unknown} not in its --help"


def test_shell_commands_are_found() -> None:
    block = Block(ROOT / "README.md", 1, "console", "$ python -m landlord list --port 1  # here\nCOOKIE\n"
                  "$ .venv/bin/lookup serve \\\n  --store s\n$ make test\n", False)
    assert commands_of(block) == [["landlord", "list", "--port", "1"], ["lookup", "serve", "--store", "s"]]
    assert SHELL_COMMANDS, "the docs' shell blocks run our command lines somewhere"
