"""The calls the name server face is compared on against Pyro5's own name server, in-process
(tests/lookup/test_pyrons_face.py) and over the wire (tests/lookup/test_pyrons_processes.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import Pyro5.core
from Pyro5.nameserver import NameServer

from lookup.service.pyrons.face import NS_OWN_METADATA

OWN = "PYRO:Pyro.NameServer@127.0.0.1:9090"
URI_A, URI_A2, URI_B, URI_C = (f"PYRO:obj{i}@127.0.0.1:{port}" for i, port in
                               enumerate([7001, 7002, 7003, 7003]))

def reference() -> NameServer:
    """Pyro5's own name server object, as its daemon sets it up (itself registered)."""
    ns = NameServer()
    ns.register(Pyro5.core.NAMESERVER_NAME, OWN, metadata=set(NS_OWN_METADATA))
    return ns


def outcome(call: Callable[[], Any], own: str = OWN) -> Any:
    """What a call gives, comparable across the two: URIs as str, (frozen)sets as sets, errors as (type, text)."""
    try:
        return normal(call(), own)
    except Exception as exc:
        return type(exc).__name__, str(exc)


def normal(value: Any, own: str = OWN) -> Any:
    """``value`` comparable: URIs as str (``own``, the name server's own, as OWN), sets as sets."""
    if isinstance(value, Pyro5.core.URI):
        value = str(value)
    if isinstance(value, str):
        return OWN if value == own else value
    if isinstance(value, (set, frozenset)):
        return set(value)
    if isinstance(value, tuple):
        return tuple(normal(v, own) for v in value)
    if isinstance(value, dict):
        return {k: normal(v, own) for k, v in value.items()}
    return value


CALLS: list[tuple[str, Callable[[Any], Any]]] = [
    ("count, empty", lambda ns: ns.count()),
    ("ping", lambda ns: ns.ping()),
    ("lookup itself", lambda ns: ns.lookup("Pyro.NameServer", return_metadata=True)),
    ("register a", lambda ns: ns.register("a", URI_A)),
    ("register a again", lambda ns: ns.register("a", Pyro5.core.URI(URI_A2))),
    ("register a safely", lambda ns: ns.register("a", URI_A, safe=True)),
    ("register b with metadata", lambda ns: ns.register("b", URI_B, metadata={"x", "y"})),
    ("register c with a list", lambda ns: ns.register("c.1", URI_C, False, ["y"])),
    ("register a non-str name", lambda ns: ns.register(5, URI_A)),
    ("register a non-URI", lambda ns: ns.register("d", 5)),
    ("register garbage", lambda ns: ns.register("d", "garbage")),
    ("register str metadata", lambda ns: ns.register("d", URI_A, metadata="x")),
    ("register int metadata", lambda ns: ns.register("d", URI_A, metadata=5)),
    ("lookup a", lambda ns: ns.lookup("a")),
    ("lookup b with metadata", lambda ns: ns.lookup("b", return_metadata=True)),
    ("lookup a with metadata", lambda ns: ns.lookup("a", True)),
    ("lookup missing", lambda ns: ns.lookup("missing")),
    ("count", lambda ns: ns.count()),
    ("list", lambda ns: ns.list()),
    ("list with metadata", lambda ns: ns.list(return_metadata=True)),
    ("list a prefix", lambda ns: ns.list(prefix="c.")),
    ("list a prefix, metadata", lambda ns: ns.list(prefix="b", return_metadata=True)),
    ("list a regex", lambda ns: ns.list(regex="b|c")),
    ("list a regex, metadata", lambda ns: ns.list(regex=r"c\.\d", return_metadata=True)),
    ("list a bad regex", lambda ns: ns.list(regex="(")),
    ("list both", lambda ns: ns.list(prefix="a", regex="b")),
    ("yp all", lambda ns: ns.yplookup(meta_all=["y"])),
    ("yp all, no metadata", lambda ns: ns.yplookup(meta_all={"x", "y"}, return_metadata=False)),
    ("yp any", lambda ns: ns.yplookup(meta_any=("x", "class:Pyro5.nameserver.NameServer"))),
    ("yp none", lambda ns: ns.yplookup()),
    ("yp both", lambda ns: ns.yplookup(meta_all=["x"], meta_any=["y"])),
    ("yp a str", lambda ns: ns.yplookup(meta_all="y")),
    ("yp any a str", lambda ns: ns.yplookup(meta_any="y")),
    ("set metadata", lambda ns: ns.set_metadata("b", {"z"})),
    ("lookup after set", lambda ns: ns.lookup("b", return_metadata=True)),
    ("set no metadata", lambda ns: ns.set_metadata("c.1", None)),
    ("list after set", lambda ns: ns.list(return_metadata=True)),
    ("set metadata of missing", lambda ns: ns.set_metadata("missing", {"z"})),
    ("set str metadata", lambda ns: ns.set_metadata("b", "z")),
    ("set metadata of a non-str", lambda ns: ns.set_metadata(5, ["z"])),
    ("remove missing", lambda ns: ns.remove("missing")),
    ("remove itself", lambda ns: ns.remove("Pyro.NameServer")),
    ("remove nothing", lambda ns: ns.remove()),
    ("remove a", lambda ns: ns.remove("a")),
    ("remove a prefix", lambda ns: ns.remove(prefix="c.")),
    ("remove a regex", lambda ns: ns.remove(regex=".*")),
    ("list at the end", lambda ns: ns.list(return_metadata=True)),
    ("count at the end", lambda ns: ns.count()),
]


