"""Bad input on every command line: each command run as a real process (``python -m landlord list|evict|
renewal-service``, ``python -m lookup serve|list|leases|evict``) with each kind of bad value, through each
source it can come from (a flag, an environment variable, a ``--config`` file). Every row must end in
exactly one line on stderr that names what is wrong (the option as its source has it: ``--port``,
``$LOOKUP_LIST_PORT``, ``FILE: port``; TLS files by their role and path), nothing on stdout, no
traceback, no usage block, and the exit code the commands document: 0 done, 1 unreachable, refused,
in use or not found, 2 bad input (the options, the files they name, an extra they need).

The kinds: empty, malformed, out of range, unreachable (a port nothing listens on, a host that does not
resolve, an address not this host's, an etcd nobody serves), missing extra (the etcd client made
unimportable by a ``pyetcd.py`` on ``PYTHONPATH`` that raises ImportError), missing file, no permission,
and the refusals a real server gives (a wrong token, a prefix of no lease, a port or store another
process holds). The tests run as root here, whom no file mode stops, so "no permission" is a directory
where a file is read (EISDIR), a regular file where a directory must be (ENOTDIR), and a path on sysfs,
where not even root may create a file (EACCES).

Most rows fail while the options are read; a row of a client carries ``--timeout 1`` and a server row
``--port 0``, so that a check gone missing shows as a wrong exit code, not as a hang. The rows run a few
at a time in threads (each mostly waits on an interpreter starting), the servers a row needs started once.
"""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest
from conftest import REPO_ROOT, free_port

from landlord.testing import start_server

TOKEN = "operator-token-for-bad-input-tests"
PREFIX = "abcdefgh"  # a well-formed cookie prefix no lease has
UNRESOLVABLE = "no-such-host.invalid"  # RFC 6761: never resolves
NOT_OURS = "192.0.2.1"  # RFC 5737 documentation address: no interface of this host has it
WORKERS = 3  # processes at once: two cores, each process mostly starting its interpreter
ROW_TIMEOUT = 30.0  # seconds a row may run: only a server that wrongly serves comes near it

EMPTY, MALFORMED, RANGE, UNREACHABLE = "empty", "malformed", "out of range", "unreachable"
EXTRA, MISSING, PERMISSION = "missing extra", "missing file", "no permission"
REFUSED, IN_USE, NOT_FOUND = "refused", "in use", "not found"
KINDS = (EMPTY, MALFORMED, RANGE, UNREACHABLE, EXTRA, MISSING, PERMISSION)

# each command: how it is run, and its environment prefix
COMMANDS = {
    "landlord list": ("landlord", "list", "LANDLORD_LIST_"),
    "landlord evict": ("landlord", "evict", "LANDLORD_EVICT_"),
    "landlord renewal-service": ("landlord", "renewal-service", "LANDLORD_RENEWAL_SERVICE_"),
    "lookup serve": ("lookup", "serve", "LOOKUP_SERVE_"),
    "lookup list": ("lookup", "list", "LOOKUP_LIST_"),
    "lookup leases": ("lookup", "leases", "LOOKUP_LEASES_"),
    "lookup evict": ("lookup", "evict", "LOOKUP_EVICT_"),
}
ADMIN = ("landlord list", "landlord evict", "lookup leases", "lookup evict")
CLIENTS = (*ADMIN, "lookup list")
SERVERS = ("landlord renewal-service", "lookup serve")
# the kinds a command has no option for: no extra is optional to an admin command or the renewal service
NOT_APPLICABLE = {(command, EXTRA) for command in (*ADMIN, "landlord renewal-service")}

# what every row of a command is given unless the row sets the option itself (any source)
BASE: dict[str, dict[str, str | None]] = {
    **{command: {"port": "{dead_port}", "token-file": "{token}", "timeout": "1"} for command in ADMIN},
    "lookup list": {"port": "{dead_port}", "timeout": "1"},
    "landlord renewal-service": {"port": "0"},
    "lookup serve": {"port": "0", "no-announce": None},
}


@dataclass(frozen=True)
class Row:
    """One run of a command with something bad in it, and what it must answer.

    Values may name the places :func:`places` makes, as ``{token}``, ``{missing}``...
    """

    command: str
    kind: str
    what: str  # a few words for the row's id
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # the prefix is the command's, unless the name starts with "!"
    config: tuple[tuple[str, object], ...] = ()  # keys of a TOML file given with --config
    config_text: str | None = None  # or the file's whole text
    code: int = 2
    words: tuple[str, ...] = ()  # in the error line
    prefix: str | None = PREFIX  # the evict commands' positional argument
    hide_etcd: bool = False
    unset: tuple[str, ...] = ()  # options of the command's base the row goes without

    @property
    def id(self) -> str:
        source = "flag" if not (self.env or self.config or self.config_text) else "env" if self.env else "file"
        return f"{self.command.replace(' ', '-')}:{self.kind}:{self.what}:{source}".replace(" ", "-")

    def given(self) -> set[str]:
        """The options the row sets, from any source."""
        prefix = COMMANDS[self.command][2]
        options = {arg[2:].split("=", 1)[0] for arg in self.args if arg.startswith("--")}
        options |= {name[len(prefix):].lower().replace("_", "-") for name, _ in self.env if name.startswith(prefix)}
        return options | {key for key, _ in self.config}


def bad(commands: tuple[str, ...] | str, kind: str, option: str, value: str, *words: str, code: int = 2,
        sources: tuple[str, ...] = ("flag", "env", "file"), args: tuple[str, ...] = (),
        what: str | None = None) -> list[Row]:
    """Rows giving ``--option value`` to each command through each source; the error line must name
    the option as that source has it (``--port``, ``$LOOKUP_LIST_PORT``, ``bad.toml: port``) and hold
    ``words``. An empty value has no environment row: an empty variable counts as unset."""
    rows = []
    for command in (commands,) if isinstance(commands, str) else commands:
        variable = COMMANDS[command][2] + option.upper().replace("-", "_")
        for source in sources:
            if source == "env" and value == "":
                continue
            if source == "flag":
                rows.append(Row(command, kind, what or option, (*args, f"--{option}={value}"), code=code,
                                words=(f"--{option}", *words)))
            elif source == "env":
                rows.append(Row(command, kind, what or option, args, env=((variable, value),), code=code,
                                words=(f"${variable}", *words)))
            else:
                rows.append(Row(command, kind, what or option, args, config=((option, value),), code=code,
                                words=(f"bad.toml: {option}", *words)))
    return rows


def each(commands: tuple[str, ...], kind: str, what: str, *args: str, code: int = 2, words: tuple[str, ...] = (),
         prefix: str | None = PREFIX, hide_etcd: bool = False, config: tuple[tuple[str, object], ...] = (),
         config_text: str | None = None) -> list[Row]:
    """One row per command, the same arguments."""
    return [Row(command, kind, what, args, config=config, config_text=config_text, code=code, words=words,
                prefix=prefix, hide_etcd=hide_etcd) for command in commands]


TLS_MISSING = ("--cert={missing}", "--key={missing}", "--ca={missing}")
TLS_DIRECTORY = ("--cert={directory}", "--key={directory}", "--ca={directory}")
TLS_GARBAGE = ("--cert={garbage}", "--key={garbage}", "--ca={garbage}")
LL, LE, RS = "landlord list", "landlord evict", "landlord renewal-service"
LS, KL, KS, KE = "lookup serve", "lookup list", "lookup leases", "lookup evict"
REPLICA = ("--port={dead_port}", "--group=g", "--replicas=127.0.0.1:{dead_port}")  # with --etcd: a replica

ROWS: list[Row] = [
    # -- every client: where it asks, how long it waits, its file, TLS
    *bad(CLIENTS, EMPTY, "host", "", "empty", sources=("flag",)),
    *bad(KL, EMPTY, "host", "", "empty", sources=("file",)),
    *bad(CLIENTS, MALFORMED, "host", "h1:4160", "without a port", sources=("flag",)),
    *bad(LL, MALFORMED, "host", "h1:4160", "without a port", sources=("env",)),
    *bad(KL, MALFORMED, "host", "h1:4160", "without a port", sources=("file",)),
    *bad(KL, MALFORMED, "port", "abc", "not a port number", sources=("flag",)),
    *bad(LL, MALFORMED, "port", "abc", "not a port number", sources=("env",)),
    *bad(KS, MALFORMED, "port", "abc", "not a port number", sources=("file",)),
    *bad(KL, EMPTY, "port", "", "not a port number", sources=("file",)),
    *bad(LL, RANGE, "port", "70000", "65535", sources=("flag",)),
    *bad(KE, RANGE, "port", "70000", "65535", sources=("env",)),
    *bad(KL, RANGE, "port", "70000", "65535", sources=("file",)),
    *bad((KL, LE), RANGE, "port", "0", "1 to 65535", what="port 0", sources=("flag",)),
    *bad((LL, KL), RANGE, "timeout", "0", "positive", sources=("flag",)),
    *bad(KL, RANGE, "timeout", "-1", "positive", sources=("env",)),
    *bad(LL, RANGE, "timeout", "-1", "positive", sources=("file",)),
    *bad(KS, MALFORMED, "timeout", "soon", "not a number of seconds", sources=("flag",)),
    *each(CLIENTS, UNREACHABLE, "port nobody listens on", code=1, words=("127.0.0.1:{dead_port}",)),
    *each(CLIENTS, UNREACHABLE, "host that does not resolve", f"--host={UNRESOLVABLE}", code=1,
          words=(UNRESOLVABLE,)),
    *each((LL, KE), MISSING, "config", "--config={missing}", words=("--config {missing}: cannot read",)),
    Row(KL, MISSING, "config", env=(("LOOKUP_LIST_CONFIG", "{missing}"),),
        words=("$LOOKUP_LIST_CONFIG {missing}: cannot read",)),
    *each((KS,), PERMISSION, "config is a directory", "--config={directory}", words=("--config", "Is a directory")),
    *each((LE,), MALFORMED, "config not TOML", "--config={garbage}", words=("not TOML",)),
    *each((KL,), MALFORMED, "config key unknown", config=(("hots", "h1"),), words=("bad.toml: hots: not an option",)),
    *each((KL,), EMPTY, "config path", "--config=", words=("--config", "Is a directory")),
    *each((LL, KL, KS), MISSING, "TLS files", *TLS_MISSING, words=("TLS", "{missing}")),
    Row(KL, MISSING, "TLS files", env=(("LOOKUP_LIST_CERT", "{missing}"), ("LOOKUP_LIST_KEY", "{missing}"),
                                       ("LOOKUP_LIST_CA", "{missing}")), words=("TLS", "{missing}")),
    *each((LE, KL), PERMISSION, "TLS file a directory", *TLS_DIRECTORY, words=("TLS", "not a file")),
    *each((KE,), MALFORMED, "TLS files not PEM", *TLS_GARBAGE, words=("TLS",)),
    *each((KS, KL), MALFORMED, "TLS half given", "--cert={garbage}", words=("--cert, --key and --ca go together",)),

    # -- the admin commands: the token, which admin object, how many rows, the prefix
    *bad((LL, KS), MISSING, "token-file", "{missing}", "cannot read the token file", "No such file",
         sources=("flag",)),
    *bad(LE, MISSING, "token-file", "{missing}", "No such file", sources=("env",)),
    *bad(LL, MISSING, "token-file", "{missing}", "No such file", sources=("file",)),
    *bad(LL, PERMISSION, "token-file", "{directory}", "Is a directory", what="token file a directory",
         sources=("flag",)),
    *bad(KS, PERMISSION, "token-file", "{directory}", "Is a directory", what="token file a directory",
         sources=("env",)),
    *bad(KE, PERMISSION, "token-file", "{directory}", "Is a directory", what="token file a directory",
         sources=("file",)),
    *bad(LL, EMPTY, "token-file", "", "Is a directory", sources=("flag",)),
    *bad(LE, EMPTY, "token-file", "", "Is a directory", sources=("file",)),
    *bad(LL, MALFORMED, "token-file", "{short_token}", "16 to 4096 characters", what="token too short",
         sources=("flag",)),
    *bad(KE, MALFORMED, "token-file", "{short_token}", "16 to 4096 characters", what="token too short",
         sources=("env",)),
    Row(LE, MALFORMED, "token in the environment too short", env=(("!LANDLORD_ADMIN_TOKEN", "short"),),
        unset=("token-file",), words=("$LANDLORD_ADMIN_TOKEN", "16 to 4096 characters")),
    *bad(LL, EMPTY, "id", "", "is not empty", sources=("flag",)),
    *bad(KS, EMPTY, "id", "", "is not empty", sources=("file",)),
    *bad(LE, MALFORMED, "object-id", "a@b", "no spaces or '@'", sources=("flag",)),
    *each((LL,), MALFORMED, "id and object-id", "--id=x", "--object-id=y", words=("not allowed with",)),
    *bad(LL, MALFORMED, "limit", "many", "not a number of leases", sources=("flag",)),
    *bad(KS, RANGE, "limit", "-1", "not a number of leases", sources=("env",)),
    *bad(LL, RANGE, "limit", "1000000", "not a number of leases", sources=("file",)),
    *bad(LL, MALFORMED, "output", "yaml", "yaml", sources=("flag",)),
    Row(LE, EMPTY, "prefix", prefix="", words=("8 to 256 characters",)),
    Row(KE, RANGE, "prefix too short", prefix="abc", words=("8 to 256 characters",)),
    *each((LE, KE), MALFORMED, "prefix", prefix="abcdefg*", words=("only letters",)),
    # against a served admin object: a wrong token is refused; a prefix no lease has is not found
    Row(LL, REFUSED, "wrong token", ("--port={renewal_port}", "--token-file={wrong_token}"), code=1,
        words=("refused",)),
    Row(KS, REFUSED, "wrong token", ("--port={lookup_port}", "--token-file={wrong_token}"), code=1,
        words=("refused",)),
    Row(LE, NOT_FOUND, "prefix of no lease", ("--port={renewal_port}",), code=1,
        words=(f"no lease's cookie starts with '{PREFIX}'",)),
    Row(KE, NOT_FOUND, "prefix of no lease", ("--port={lookup_port}",), code=1,
        words=(f"no lease's cookie starts with '{PREFIX}'",)),

    # -- lookup list: the replica group, etcd, the output
    *bad(KL, MALFORMED, "etcd", "ftp://h1:2379", "not an etcd client URL", args=("--group=g",)),
    *bad(KL, MALFORMED, "group", "a/b", "letters, digits", args=("--etcd=http://127.0.0.1:{dead_port}",),
         sources=("flag",)),
    *each((KL,), MALFORMED, "etcd without group", "--etcd=http://127.0.0.1:{dead_port}",
          words=("--etcd and --group go together",)),
    *bad(KL, RANGE, "limit", "-3", "must not be negative", sources=("env",)),
    *bad(KL, MALFORMED, "output", "yaml", "yaml", sources=("file",)),
    *each((KL,), UNREACHABLE, "etcd nobody serves", "--etcd=http://127.0.0.1:{dead_port}", "--group=g",
          code=1, words=("cannot reach etcd",)),
    *each((KL,), EXTRA, "etcd client", "--etcd=http://127.0.0.1:{dead_port}", "--group=g", hide_etcd=True,
          words=("pip install 'landlord[etcd]'",)),

    # -- every server: where it listens, its store, its token, TLS, logging, its file
    *bad(SERVERS, EMPTY, "host", "", "empty", sources=("flag",)),
    *bad(RS, EMPTY, "host", "", "empty", sources=("file",)),
    *bad(LS, MALFORMED, "host", "h1:4160", "without a port", sources=("flag",)),
    *bad(RS, MALFORMED, "host", "h1:4160", "without a port", sources=("env",)),
    *each(SERVERS, UNREACHABLE, "host that does not resolve", f"--host={UNRESOLVABLE}", code=1,
          words=("cannot serve at", UNRESOLVABLE)),
    *each((LS,), UNREACHABLE, "address not ours", f"--host={NOT_OURS}", code=1, words=("cannot serve at", NOT_OURS)),
    *each(SERVERS, IN_USE, "port", "--port={busy_port}", code=1, words=("cannot serve at", "{busy_port}")),
    *bad(RS, MALFORMED, "port", "abc", "not a port number", sources=("flag",)),
    *bad(LS, MALFORMED, "port", "abc", "not a port number", sources=("env",)),
    *bad(LS, RANGE, "port", "70000", "65535", sources=("file",)),
    *bad(RS, RANGE, "port", "-1", "0 to 65535", sources=("flag",)),
    *bad(LS, EMPTY, "advertise", "", "empty", sources=("flag",)),
    *bad(RS, MALFORMED, "advertise", "h1:4160", "without a port", sources=("env",)),
    *bad(SERVERS, MISSING, "store", "{missing}/store.sqlite", "cannot use the store", what="store's directory",
         sources=("flag",)),
    *bad(LS, MISSING, "store", "{missing}/store.sqlite", "cannot use the store", what="store's directory",
         sources=("env",)),
    *bad(RS, MISSING, "store", "{missing}/store.sqlite", "cannot use the store", what="store's directory",
         sources=("file",)),
    *bad(RS, PERMISSION, "store", "/sys/landlord-bad-input.sqlite", "cannot use the store", what="store on sysfs",
         sources=("flag",)),
    *bad(LS, PERMISSION, "store", "{garbage}/store.sqlite", "cannot use the store", what="store under a file",
         sources=("env",)),
    *bad(LS, MALFORMED, "store", "{garbage}", "not a database", what="store not a database", sources=("flag",)),
    *bad(RS, MALFORMED, "store", "{garbage}", "not a database", what="store not a database", sources=("file",)),
    *bad(RS, EMPTY, "store", "", "cannot use the store", sources=("flag",)),
    *bad(RS, IN_USE, "store", "{renewal_store}", "cannot use the store", "in another store", code=1,
         sources=("flag",)),
    *bad(LS, IN_USE, "store", "{lookup_store}", "cannot use the store", "in another store", code=1,
         sources=("flag",)),
    *bad(SERVERS, MISSING, "admin-token-file", "{missing}", "No such file", sources=("flag",)),
    *bad(RS, MISSING, "admin-token-file", "{missing}", "No such file", sources=("env",)),
    *bad(LS, MISSING, "admin-token-file", "{missing}", "No such file", sources=("file",)),
    *bad(LS, PERMISSION, "admin-token-file", "{directory}", "Is a directory", what="token file a directory",
         sources=("flag",)),
    *bad(RS, EMPTY, "admin-token-file", "", "Is a directory", sources=("file",)),
    *bad(LS, MALFORMED, "admin-token-file", "{short_token}", "16 to 4096 characters", what="token too short",
         sources=("flag",)),
    *each(SERVERS, MISSING, "TLS files", *TLS_MISSING, words=("TLS", "{missing}")),
    Row(LS, MISSING, "TLS files", env=(("LOOKUP_SERVE_CERT", "{missing}"), ("LOOKUP_SERVE_KEY", "{missing}"),
                                       ("LOOKUP_SERVE_CA", "{missing}")), words=("TLS", "{missing}")),
    *each((RS,), PERMISSION, "TLS file a directory", *TLS_DIRECTORY, words=("TLS", "not a file")),
    *each((LS,), MALFORMED, "TLS files not PEM", *TLS_GARBAGE, words=("TLS",)),
    *each((RS,), MALFORMED, "TLS half given", "--key={garbage}", words=("go together",)),
    *each((LS,), MALFORMED, "admin name without TLS", "--admin-name=ops", words=("--admin-name needs",)),
    *bad(RS, MALFORMED, "log-level", "loud", "loud", sources=("flag",)),
    *bad(LS, MALFORMED, "log-level", "loud", "loud", sources=("env",)),
    *bad(RS, MALFORMED, "log-format", "xml", "xml", sources=("file",)),
    *bad(RS, MALFORMED, "verbose", "maybe", "flag's value", sources=("env",)),
    *each((LS,), MALFORMED, "flag not a boolean", config=(("verbose", "yes"),), words=("bad.toml: verbose",)),
    *each((RS,), MISSING, "config", "--config={missing}", words=("--config {missing}: cannot read",)),
    Row(LS, MISSING, "config", env=(("LOOKUP_SERVE_CONFIG", "{missing}"),),
        words=("$LOOKUP_SERVE_CONFIG {missing}: cannot read",)),
    *each((LS,), PERMISSION, "config is a directory", "--config={directory}", words=("Is a directory",)),
    *each((RS,), MALFORMED, "config not TOML", "--config={garbage}", words=("not TOML",)),
    *each(SERVERS, MALFORMED, "config key unknown", config=(("max-leases", 10),),
          words=("bad.toml: max-leases: not an option",)),
    *each((LS,), MALFORMED, "config table not a table", config_text="serve = 1\n", words=("must be a table",)),
    *each((RS,), MALFORMED, "config sets config", config=(("config", "other.toml"),),
          words=("only on the command line",)),
    *each((LS,), RANGE, "config port", config=(("port", 65536),), words=("bad.toml: port", "65535")),
    *each((RS,), MALFORMED, "config port a boolean", config=(("port", True),), words=("bad.toml: port",)),

    # -- the renewal service's own options
    *bad(RS, RANGE, "max-set-lease", "0", "positive", sources=("flag",)),
    *bad(RS, MALFORMED, "set-lease", "soon", "not a number of seconds", sources=("env",)),
    *bad(RS, RANGE, "sets-per-client", "0", "at least 1", sources=("file",)),
    *bad(RS, MALFORMED, "landlord-hosts", "a,,b", "comma-separated", sources=("flag",)),
    *bad(RS, EMPTY, "callback-hosts", "", "comma-separated", sources=("flag",)),

    # -- lookup serve's own options
    *bad(LS, MALFORMED, "reaper", "grim", "grim", sources=("env",)),
    *bad(LS, RANGE, "max-lease", "-1", "positive", sources=("file",)),
    *bad(LS, RANGE, "max-lease", "inf", "finite", what="infinite max-lease", sources=("flag",)),
    *each((LS,), RANGE, "default-lease beyond max-lease", "--max-lease=10", "--default-lease=20",
          words=("--default-lease (20) exceeds --max-lease (10)",)),
    *bad(LS, RANGE, "announce-interval", "0.001", "seconds", sources=("flag",)),
    *bad(LS, RANGE, "discovery-port", "0", "1 to 65535", sources=("flag",)),
    *bad(LS, MALFORMED, "discovery-interface", "eth0", "--discovery-interface", sources=("flag",)),
    *bad(LS, RANGE, "event-queue", "0", "at least 1", sources=("file",)),
    *bad(LS, RANGE, "connections-per-host", "0", "at least 1", sources=("env",)),
    *bad(LS, MALFORMED, "groups", "a\tb", "printable", sources=("flag",)),
    *bad(LS, MALFORMED, "no-announce", "maybe", "flag's value", sources=("env",)),
    *bad(LS, MALFORMED, "etcd", "ftp://h1:2379", "not an etcd client URL", args=REPLICA, sources=("flag", "env")),
    *bad(LS, MALFORMED, "replicas", "h1", "h1", args=("--port={dead_port}", "--group=g", "--etcd=http://127.0.0.1:1"),
         sources=("file",)),
    *each((LS,), MALFORMED, "etcd alone", "--etcd=http://127.0.0.1:1",
          words=("--etcd, --group and --replicas go together",)),
    *each((LS,), MALFORMED, "store and etcd", "--store={directory}/s.sqlite", "--etcd=http://127.0.0.1:1", *REPLICA,
          words=("--store and --etcd exclude each other",)),
    *each((LS,), MALFORMED, "replica not among replicas", "--port={dead_port}", "--etcd=http://127.0.0.1:1",
          "--group=g", "--replicas=127.0.0.1:1,127.0.0.1:2", words=("not one of the replicas",)),
    *each((LS,), UNREACHABLE, "etcd nobody serves", "--etcd=http://127.0.0.1:{dead_port_2}", *REPLICA, code=1,
          words=("cannot reach etcd",)),
    *each((LS,), EXTRA, "etcd client", "--etcd=http://127.0.0.1:{dead_port_2}", *REPLICA, hide_etcd=True,
          words=("pip install 'landlord[etcd]'",)),
]


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, int) else json.dumps(value)  # a JSON string is a TOML basic string


@dataclass
class Outcome:
    """What a row's process did."""

    argv: list[str]
    code: int | None
    stdout: str
    stderr: str


@dataclass
class Places:
    """The files, ports and servers the rows name, by the names they use (``{token}``)."""

    values: dict[str, str] = field(default_factory=dict)

    def fill(self, text: str) -> str:
        return text.format(**self.values)


def _run(row: Row, places: Places, workdir: pathlib.Path) -> Outcome:
    """Run ``row``'s command in a process of its own, in a directory of its own; what it did."""
    module, command, _ = COMMANDS[row.command]
    argv = [sys.executable, "-m", module, command]
    if command == "evict" and row.prefix is not None:
        argv.append(row.prefix)  # before the options: it must not be taken for an option's value
    argv += [places.fill(arg) for arg in row.args]
    given = row.given()
    for option, value in BASE[row.command].items():
        if option not in given and option not in row.unset:
            argv.append(f"--{option}" if value is None else f"--{option}={places.fill(value)}")
    env = {name: value for name, value in os.environ.items() if not name.startswith(("LANDLORD_", "LOOKUP_"))}
    env["PYTHONPATH"] = os.pathsep.join(([places.values["hidden"]] if row.hide_etcd else []) + [str(REPO_ROOT)])
    for name, value in row.env:
        env[name[1:] if name.startswith("!") else name] = places.fill(value)
    if row.config or row.config_text is not None:
        config = workdir / "bad.toml"
        config.write_text(row.config_text if row.config_text is not None else
                          "".join(f"{key} = {_toml(places.fill(value) if isinstance(value, str) else value)}\n"
                                  for key, value in row.config))
        argv.append(f"--config={config}")
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=ROW_TIMEOUT, env=env, cwd=workdir,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as expired:
        return Outcome(argv, None, str(expired.stdout or ""), str(expired.stderr or ""))
    return Outcome(argv, done.returncode, done.stdout, done.stderr)


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Places]:
    """The files rows read; a port nobody listens on and one somebody does; a renewal service and a lookup
    service, each with the admin token and a store (held: a second server on it is refused)."""
    root = tmp_path_factory.mktemp("places")
    (root / "token").write_text(TOKEN + "\n")
    (root / "wrong-token").write_text("not-the-operator-token-at-all\n")
    (root / "short-token").write_text("short\n")
    (root / "garbage").write_text("this is [not toml, nor PEM, nor SQLite\n" * 50)
    (root / "hidden").mkdir()
    (root / "hidden" / "pyetcd.py").write_text("raise ImportError('hidden by tests/test_command_lines.py')\n")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    renewal, renewal_uri = start_server("-m", "landlord", "renewal-service", "--port", "0", "--admin-token-file",
                                        str(root / "token"), "--store", str(root / "renewal.sqlite"),
                                        "--log-level", "warning")
    lookup, lookup_uri = start_server("-m", "lookup", "serve", "--port", "0", "--no-announce", "--admin-token-file",
                                      str(root / "token"), "--store", str(root / "lookup.sqlite"),
                                      "--log-level", "warning")
    with busy, renewal, lookup:
        yield Places({
            "token": str(root / "token"), "wrong_token": str(root / "wrong-token"),
            "short_token": str(root / "short-token"), "garbage": str(root / "garbage"),
            "directory": str(root), "missing": str(root / "missing"), "hidden": str(root / "hidden"),
            "dead_port": str(free_port()), "dead_port_2": str(free_port()), "busy_port": str(busy.getsockname()[1]),
            "renewal_port": renewal_uri.rsplit(":", 1)[1], "renewal_store": str(root / "renewal.sqlite"),
            "lookup_port": lookup_uri.rsplit(":", 1)[1], "lookup_store": str(root / "lookup.sqlite"),
        })


@pytest.fixture(scope="module")
def outcomes(request: pytest.FixtureRequest, places: Places,
             tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every selected row run, a few at a time; by row id."""
    selected = [item.callspec.params["row"] for item in request.session.items
                if getattr(item, "originalname", None) == "test_bad_input_is_one_line_and_the_documented_exit_code"]
    rows: list[Row] = [row for row in selected if isinstance(row, Row)]
    with ThreadPoolExecutor(WORKERS) as pool:
        results = pool.map(lambda row: _run(row, places, tmp_path_factory.mktemp("row")), rows)
        return {row.id: outcome for row, outcome in zip(rows, results)}


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_bad_input_is_one_line_and_the_documented_exit_code(row: Row, outcomes: dict[str, Outcome],
                                                             places: Places) -> None:
    outcome = outcomes[row.id]
    shown = f"{' '.join(outcome.argv[1:])}\nexit {outcome.code}\nstdout: {outcome.stdout!r}\nstderr: {outcome.stderr}"
    assert outcome.code == row.code, shown
    assert outcome.stdout == "", shown
    assert "Traceback" not in outcome.stderr and "usage:" not in outcome.stderr, shown
    lines = outcome.stderr.splitlines()
    assert len(lines) == 1, shown
    for word in row.words:
        assert places.fill(word) in lines[0], f"{word!r} not in the line\n{shown}"


def test_the_rows_are_distinct_and_cover_every_kind_on_every_command() -> None:
    ids = [row.id for row in ROWS]
    assert len(ids) == len(set(ids)), sorted({row_id for row_id in ids if ids.count(row_id) > 1})
    covered = {(row.command, row.kind) for row in ROWS}
    wanted = {(command, kind) for command in COMMANDS for kind in KINDS} - NOT_APPLICABLE
    assert wanted <= covered, sorted(wanted - covered)
    for command in COMMANDS:
        sources = {row.id.rsplit(":", 1)[1] for row in ROWS if row.command == command}
        assert sources == {"flag", "env", "file"}, (command, sources)
