"""The API reference (docs/reference/) builds with every warning an error, and covers the public face.

It is built as ``make docs`` builds it (``python -m sphinx -E -n -W
--keep-going -b html docs/reference build/docs``), into a temporary directory:
a docstring whose cross-reference names nothing, or whose layout Sphinx
cannot read, fails here. Then the reference's inventory is read: every
module of ``landlord.PUBLIC_MODULES`` and lookup's public modules has a page,
and every name of their ``__all__`` is documented, there or with its facade.
Needs the ``docs`` extra (Sphinx); skipped without it.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

import landlord

pytest.importorskip("sphinx", reason="the docs extra is not installed: pip install 'landlord[docs]' (Python >= 3.11)")

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "docs" / "reference"
BUILD_TIMEOUT = 300.0  # seconds; about 15 here
# lookup's public face (docs/architecture.md, "public modules"): its facade and the modules users name
LOOKUP_PUBLIC_MODULES = ("lookup", "lookup.entry", "lookup.item", "lookup.events", "lookup.registration",
                         "lookup.aio", "lookup.cli")
FACADES = ("landlord", "lookup")

pytestmark = pytest.mark.slow


def build_command(out: Path) -> list[str]:
    """The build, as ``make docs`` runs it: a fresh environment (-E), every reference checked (-n),
    every warning an error (-W), all of them reported (--keep-going)."""
    return [sys.executable, "-m", "sphinx", "-E", "-n", "-W", "--keep-going", "-q", "-b", "html", str(SOURCE), str(out)]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reference")
    paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    ran = subprocess.run(build_command(out), cwd=out, capture_output=True, text=True, timeout=BUILD_TIMEOUT,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)}, stdin=subprocess.DEVNULL)
    assert ran.returncode == 0 and "WARNING" not in ran.stderr, (
        f"the reference does not build cleanly (exit {ran.returncode}):\n{ran.stderr[-6000:]}")
    return out


def documented(built: Path) -> set[tuple[str, str]]:
    """What the reference documents: (full name, role) pairs, the role ``py:class``, ``py:module``, ``std:doc``..."""
    data = (built / "objects.inv").read_bytes()
    header_end = 0
    for _ in range(4):  # four lines of header, then the zlib-compressed entries
        header_end = data.index(b"\n", header_end) + 1
    return {(line.split(" ", 2)[0], line.split(" ", 2)[1])
            for line in zlib.decompress(data[header_end:]).decode().splitlines()}


def test_the_reference_builds_without_a_warning(built: Path) -> None:
    assert (built / "index.html").is_file() and (built / "landlord.html").is_file()


def test_every_public_module_has_a_page(built: Path) -> None:
    modules = {name for name, role in documented(built) if role == "py:module"}
    missing = sorted((set(landlord.PUBLIC_MODULES) | set(LOOKUP_PUBLIC_MODULES)) - modules)
    assert not missing, f"no page in docs/reference/ (add NAME.rst and list it in index.rst): {missing}"


def test_every_public_name_is_documented(built: Path) -> None:
    names = {name for name, role in documented(built) if role.startswith("py:")}
    missing = []
    for module_name in (*landlord.PUBLIC_MODULES, *LOOKUP_PUBLIC_MODULES):
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            value = getattr(module, name)
            # a name a facade exports is documented there, once
            homes = [f"{module_name}.{name}"] + [f"{facade}.{name}" for facade in FACADES
                                                 if getattr(importlib.import_module(facade), name, None) is value]
            if not any(home in names for home in homes):
                missing.append(f"{module_name}.{name}")
    assert not missing, f"in __all__ but not in the reference: {missing}"
