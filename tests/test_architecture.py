"""The tree shows the architecture, and stays so: checks on the source, not on behaviour.

- landlord's public modules are declared once (``landlord.PUBLIC_MODULES``): lookup
  imports only those, the import-linter contract forbids lookup every other
  module, and docs/architecture.md lists the same;
- the top of each package holds at most about 15 modules, the rest in rooms;
- every room's ``__init__`` says what it holds and what it may import.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import tomllib

import landlord

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("landlord", "lookup")
MAX_TOP_MODULES = 15  # "at most about 15 files" at the top of a package


def module_names(package: str) -> dict[str, Path]:
    """Every module of ``package`` by dotted name (a package by its own name), and its file."""
    names = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def imported_modules(name: str, path: Path) -> Iterator[str]:
    """The modules a module's import statements name (``from a import b`` names ``a``, or ``a.b``
    when that is a module), relative imports resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def landlord_imports_of_lookup() -> dict[str, set[str]]:
    """Which of landlord's modules each lookup module imports."""
    known = set(module_names("landlord"))
    found: dict[str, set[str]] = {}
    for name, path in module_names("lookup").items():
        for imported in imported_modules(name, path):
            if imported in known:
                found.setdefault(imported, set()).add(name)
    return found


def contract(name_start: str) -> dict[str, object]:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    [found] = [c for c in contracts if c["name"].startswith(name_start)]
    return found


def test_public_modules_exist_and_are_not_listed_twice() -> None:
    modules = module_names("landlord")
    assert len(set(landlord.PUBLIC_MODULES)) == len(landlord.PUBLIC_MODULES)
    assert set(landlord.PUBLIC_MODULES) <= set(modules), set(landlord.PUBLIC_MODULES) - set(modules)


def test_lookup_imports_only_landlords_public_modules() -> None:
    imports = landlord_imports_of_lookup()
    private = {module: sorted(by) for module, by in imports.items() if module not in landlord.PUBLIC_MODULES}
    assert not private, f"lookup imports private modules of landlord's (module: importers): {private}"
    assert "landlord" in imports  # the check sees imports at all


def test_the_import_contract_forbids_lookup_every_other_module() -> None:
    forbidden = set(contract("lookup uses landlord's public modules only")["forbidden_modules"])  # type: ignore[arg-type]
    public = set(landlord.PUBLIC_MODULES)
    assert not forbidden & public, forbidden & public
    # a package whose descendants include a public module cannot be forbidden (the contract would
    # forbid them too); every other private module must be
    holds_public = {name for name in module_names("landlord") if any(p.startswith(name + ".") for p in public)}
    missing = set(module_names("landlord")) - public - forbidden - holds_public
    assert not missing, f"private modules the contract does not forbid lookup: {sorted(missing)}"


def test_the_architecture_doc_lists_the_public_modules() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = re.search(r"<!-- public modules -->(.*?)<!-- end public modules -->", text, re.S)
    assert block, "docs/architecture.md has no public-modules block"
    listed = re.findall(r"`(landlord(?:\.[a-z_]+)*)`", block.group(1))
    assert sorted(listed) == sorted(landlord.PUBLIC_MODULES)


@pytest.mark.parametrize("package", PACKAGES)
def test_the_top_of_each_package_holds_at_most_about_15_modules(package: str) -> None:
    top = sorted(path.name for path in (ROOT / package).glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, top


def rooms() -> list[str]:
    return sorted(name for package in PACKAGES for name, path in module_names(package).items()
                  if path.name == "__init__.py" and "." in name)


@pytest.mark.parametrize("room", rooms())
def test_every_room_says_what_it_holds_and_what_it_may_import(room: str) -> None:
    path = module_names(room.split(".")[0])[room]
    docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
    assert re.search(r"\bmay import\b", docstring, re.I), f"{room}'s docstring does not say what it may import"
    named = set(re.findall(rf"{re.escape(room)}\.([a-z_]+)", docstring))
    modules = {name.rpartition(".")[2] for name in module_names(room.split(".")[0])
               if name.rpartition(".")[0] == room}
    assert modules <= named, f"{room}'s docstring does not name {sorted(modules - named)}"


def test_imported_modules_resolves_relative_imports(tmp_path: Path) -> None:
    source = tmp_path / "join.py"
    source.write_text("from ..item import X\nfrom . import peer\nimport landlord.wire\n")
    found = set(imported_modules("lookup.client.join", source))
    assert {"lookup.item", "lookup.item.X", "lookup.client", "lookup.client.peer", "landlord.wire"} <= found


MAX_CLASS_LINES = 260  # lines of code: not blank, not a comment, not a docstring


def code_lines(source: str, node: ast.ClassDef) -> int:
    """How many lines of code a class has: its lines less blank ones, comments and docstrings."""
    docstrings: set[int] = set()
    for inner in ast.walk(node):
        if isinstance(inner, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and ast.get_docstring(inner):
            first = inner.body[0]
            docstrings.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    lines = source.splitlines()[node.lineno - 1:node.end_lineno]
    return sum(1 for number, line in enumerate(lines, start=node.lineno)
               if line.strip() and not line.strip().startswith("#") and number not in docstrings)


def test_code_lines_counts_code_only() -> None:
    source = ('class A:\n    """Doc.\n\n    More."""\n\n    # why\n    x = 1\n\n'
              '    def f(self) -> None:\n        """Doc."""\n        pass\n')
    [node] = ast.parse(source).body
    assert isinstance(node, ast.ClassDef) and code_lines(source, node) == 4  # class, x, def, pass


def test_no_class_is_over_260_lines_of_code() -> None:
    big = []
    for package in PACKAGES:
        for path in module_names(package).values():
            source = path.read_text()
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.ClassDef) and code_lines(source, node) > MAX_CLASS_LINES:
                    big.append(f"{path.relative_to(ROOT)}: {node.name} ({code_lines(source, node)})")
    assert not big, big


def test_no_type_ignore_of_an_attribute_in_our_code() -> None:
    # a "type: ignore[attr-defined]" hid a private interface between our modules; none is left
    found = [f"{path.relative_to(ROOT)}:{number}" for package in PACKAGES
             for path in module_names(package).values()
             for number, line in enumerate(path.read_text().splitlines(), start=1)
             if "type: ignore[attr-defined]" in line]
    assert not found, found
