"""Sphinx settings for landlord's API reference (docs/reference/).

Built by ``python -m sphinx -E -n -W --keep-going -b html docs/reference build/docs``;
tests/test_docs.py builds it the same way, so that a docstring whose
cross-reference does not resolve, or whose layout Sphinx cannot read, fails
the tests. Only the reference is generated: the guides in docs/ stay
Markdown, read as they are.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import sys
from pathlib import Path
from typing import Any

from sphinx.pycode import ModuleAnalyzer, PycodeError
from sphinx.util.nodes import make_refnode

# the checkout's packages, whether or not they are installed
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

project = "landlord"
author = "the landlord authors"
copyright = "the landlord authors"

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]

# The docstrings are Google style (Args:, Raises:, Returns:) with Sphinx's roles
# (:class:, :meth:) for cross-references.
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True  # Attributes: as fields of their class, not a second entry beside autodoc's

autodoc_default_options = {
    "members": True,
    "undoc-members": True,  # every public name shows, constants (ANY, FOREVER) too
    "show-inheritance": True,
    "member-order": "bysource",  # a facade's in its __all__'s order, which groups its names
}
autodoc_class_signature = "separated"
autodoc_preserve_defaults = True  # SYSTEM_CLOCK, not the repr of the object

# Every cross-reference must resolve (-n): to a documented object, or else to a
# real one (_resolve_by_object below). The standard library's and other
# packages' objects are not linked: no inventory is fetched, since the build
# must run without a network.
nitpick_ignore = [
    ("py:class", "floating point number"),  # time.time's own signature: SystemClock.time is that C function
]

html_theme = "alabaster"
html_title = "landlord API reference"

# A facade's names are documented once, with the facade (``landlord.Lease``, as
# users import it); a public module's page lists them as links and documents
# the rest of its ``__all__``.
FACADES = ("landlord", "lookup")


def _facade_of(name: str, obj: Any) -> str | None:
    """The facade that exports ``obj`` under ``name``, if any."""
    for facade in FACADES:
        if getattr(importlib.import_module(facade), name, None) is obj and name in _all(facade):
            return facade
    return None


def _all(module: str) -> list[str]:
    return list(getattr(importlib.import_module(module), "__all__", []))


def _skip_facade_names(app: Any, what: str, name: str, obj: Any, skip: bool, options: Any) -> bool | None:
    """Skips, on a module's page, a member that a facade documents."""
    module = app.env.ref_context.get("py:module") or app.env.temp_data.get("autodoc:module")
    if what != "module" or module in FACADES:
        return None
    return True if _facade_of(name, obj) is not None else None


def _link_facade_names(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """Ends a public module's docstring with links to its names that a facade documents."""
    if what != "module" or name in FACADES:
        return
    links = [f":obj:`{facade}.{member}`" for member in _all(name)
             if (facade := _facade_of(member, getattr(obj, member, None))) is not None]
    if links:
        lines.extend(["", "Documented with the facade: " + ", ".join(links) + "."])


# A docstring may name a private object (``:func:`check_landlords```): it has no
# page, so it is shown as code, not linked; a name that is nowhere (a typo, a
# renamed function) still fails the build. The name is looked up as Python
# would, from the docstring's own module and class, or as a dotted path; one
# that turns out to be a public object under another path links there.
_MISSING = object()


def _walk(path: str) -> list[Any]:
    """The objects along a dotted path (its longest importable module first); [] if none imports."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            objects = [importlib.import_module(".".join(parts[:cut]))]
        except ImportError:
            continue
        for part in parts[cut:]:
            objects.append(getattr(objects[-1], part, _MISSING))
            if objects[-1] is _MISSING:
                return objects[:-1]
        return objects
    return []


def _find(target: str, origin: str) -> Any:
    """What ``target`` names, seen from ``origin`` (the dotted path of the docstring's object)."""
    found = _walk(target)
    if found and len(found) == 1 + target.count(".") - found[0].__name__.count("."):
        return found[-1]
    head, _, rest = target.partition(".")
    scopes = []
    for outer in _walk(origin) if origin else []:  # a class's own module too: it may be re-exported
        scopes += [outer, sys.modules.get(getattr(outer, "__module__", None) or "")]
    for scope in reversed([scope for scope in scopes if scope is not None]):
        value = getattr(scope, head, _MISSING)
        for part in rest.split(".") if rest else []:
            value = getattr(value, part, _MISSING)
        if value is not _MISSING:
            return value
    return _MISSING


@functools.cache
def _type_checking_names(module: str) -> frozenset[str]:
    """The names ``module`` imports under ``if TYPE_CHECKING:``, for the type checker alone."""
    try:
        tree = ast.parse(inspect.getsource(sys.modules[module]))
    except (KeyError, OSError, TypeError):
        return frozenset()
    names = set()
    for block in ast.walk(tree):
        if isinstance(block, ast.If) and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for statement in ast.walk(block):
                if isinstance(statement, (ast.Import, ast.ImportFrom)):
                    names.update((alias.asname or alias.name).split(".")[0] for alias in statement.names)
    return frozenset(names)


def _imported_for_type_checker(target: str, origin: str) -> bool:
    modules = [getattr(scope, "__module__", None) or getattr(scope, "__name__", "") for scope in _walk(origin)]
    return any(target.split(".")[0] in _type_checking_names(module) for module in modules if module)


def _origin(node: Any) -> str:
    """The dotted path where the object whose docstring or signature holds ``node`` is defined."""
    source = node.source or ""
    if "docstring of " in source:  # autodoc's name for the lines of a docstring
        return str(source.rsplit("docstring of ", 1)[1])
    while node is not None and node.tagname != "desc":  # an annotation, or a field napoleon made
        node = node.parent
    signature = next((child for child in node.children if child.tagname == "desc_signature"), None) if node else None
    if signature is None:
        return ""
    obj = _find(f"{signature['module']}.{signature['fullname']}", "")
    if hasattr(obj, "__module__") and hasattr(obj, "__qualname__"):
        return f"{obj.__module__}.{obj.__qualname__}"
    return f"{signature['module']}.{signature['fullname']}"


def _resolve_by_object(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    origin = _origin(node)
    obj = _find(target, origin)
    if obj is _MISSING:
        # a name imported for the type checker only is there, if not at run time; any other, the warning stands
        return contnode if _imported_for_type_checker(target, origin) else None
    name = target.rsplit(".", 1)[-1]
    for fullname, entry in env.get_domain("py").objects.items():
        if fullname.rsplit(".", 1)[-1] == name and _find(fullname, "") is obj:
            return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, fullname)
    return contnode


# autodoc documents a module's constants only where that module's source gives
# them a doc comment (``#:``) or a docstring: the others in its ``__all__``
# (a facade's re-exports too) are added to its page here, each described by
# the comment where it is defined, if any.
def _is_data(value: Any) -> bool:
    return not (inspect.isclass(value) or inspect.isroutine(value) or inspect.ismodule(value))


def _doc_comments(module: str) -> dict[str, list[str]]:
    try:
        return {name: list(lines) for (scope, name), lines in ModuleAnalyzer.for_module(module).find_attr_docs().items()
                if scope == ""}
    except PycodeError:
        return {}


def _add_constants(app: Any, docname: str, source: list[str]) -> None:
    if not docname.startswith(FACADES):  # the index
        return
    module_name = docname  # a module's page is named after it
    module = importlib.import_module(module_name)
    commented = _doc_comments(module_name)
    for name in _all(module_name):
        value = getattr(module, name)
        if _is_data(value) and name not in commented and (module_name in FACADES or _facade_of(name, value) is None):
            source[0] += f"\n.. autodata:: {module_name}.{name}\n"


def _describe_constant(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """Gives a re-exported constant the doc comment where it is defined, in place of its type's docstring."""
    if what != "data" or (lines and "\n".join(lines).strip() != (type(obj).__doc__ or "").strip()):
        return
    lines.clear()
    short = name.rsplit(".", 1)[1]
    for module in sorted(m for m in sys.modules if m.startswith(FACADES)):
        for defined, comment in _doc_comments(module).items():
            if defined == short and getattr(sys.modules[module], defined, None) is obj:
                lines.extend(comment)
                return


# napoleon reads the first line ``X: Y`` of an attribute's docstring as "of type
# X", and does nothing else to it. Our attributes and properties take their types
# from annotations, and their docstrings are prose, often with a colon in the
# first line: napoleon is undone for them (its hook runs at priority 500).
_ATTRIBUTES = ("attribute", "property", "data")
_before_napoleon: dict[str, list[str]] = {}


def _keep_attribute_doc(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    if what in _ATTRIBUTES:
        _before_napoleon[name] = list(lines)


def _restore_attribute_doc(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    if what in _ATTRIBUTES and name in _before_napoleon:
        lines[:] = _before_napoleon.pop(name)


def setup(app: Any) -> None:
    app.connect("autodoc-process-docstring", _keep_attribute_doc, priority=499)
    app.connect("autodoc-process-docstring", _restore_attribute_doc, priority=501)
    app.connect("source-read", _add_constants)
    app.connect("autodoc-process-docstring", _describe_constant, priority=502)  # after the restoring
    app.connect("autodoc-skip-member", _skip_facade_names)
    app.connect("autodoc-process-docstring", _link_facade_names)
    app.connect("missing-reference", _resolve_by_object)
