"""The admin commands of a command line: listing a landlord's leases and evicting one
(``python -m landlord list|evict``, ``python -m lookup leases|evict``): :func:`add_admin_commands`
adds them to a parser, :func:`run_admin` runs what it parsed (one error line and an exit code on
failure), :func:`prefix_behind_dashes` lets a cookie prefix start with ``-``. With them, the
argument types both command lines share (:func:`host_argument`, :func:`port_argument`,
:func:`seconds_argument`, :func:`positive_count_argument`, :func:`hosts_argument`).

The credentials come from a file (``--token-file``) or the ``LANDLORD_ADMIN_TOKEN``
variable, never from the arguments, which ``ps`` shows to every user of the host;
and/or an admin certificate (``--cert``, ``--key``, ``--ca``). It calls the admin
object through :mod:`landlord.admin.client`, never importing the admin object itself.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import pathlib
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import Pyro5.errors

from ..errors import LeaseError, NotLeaderError, UnknownLeaseError
from ..tls import TLSConfig, tls_settings
from ..transport.addresses import check_host, uri_host
from .client import (
    DEFAULT_TIMEOUT,
    AdminClient,
    AdminListing,
    NameListing,
    find_admin,
    format_names,
    format_remaining,
    format_table,
    listing_objects,
)
from .protocol import (
    ADMIN_PREFIX,
    COOKIE_CHARACTERS,
    DEFAULT_LIMIT,
    MAX_LIMIT,
    MIN_PREFIX,
    AdminRefusedError,
    check_limit,
    check_prefix,
    check_token,
    read_token,
)

__all__ = [
    "add_admin_commands", "run_admin", "prefix_behind_dashes", "EVICT_OPTIONS", "host_argument", "port_argument",
    "seconds_argument", "positive_count_argument", "hosts_argument", "TOKEN_ENV", "EXIT_OK", "EXIT_FAILED",
    "EXIT_USAGE",
]

TOKEN_ENV = "LANDLORD_ADMIN_TOKEN"
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def host_argument(text: str) -> str:
    """A host to connect to or listen on from the command line: a host name or an IP address
    (``0.0.0.0`` and ``::``, every interface, included; an IPv6 address in brackets comes bare).

    Raises:
        argparse.ArgumentTypeError: empty, or no host name or address (a port, a URI, spaces...).
    """
    try:
        return check_host(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def port_argument(text: str, *, allow_zero: bool = False) -> int:
    """A port from the command line (0, "any free port", only if ``allow_zero``).

    Raises:
        argparse.ArgumentTypeError: not a number, or out of range.
    """
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    lowest = 0 if allow_zero else 1
    if not lowest <= port < 65536:
        raise argparse.ArgumentTypeError(f"a port is {lowest} to 65535, not {port}")
    return port


def seconds_argument(text: str) -> float:
    """A positive, finite number of seconds from the command line.

    Raises:
        argparse.ArgumentTypeError: anything else.
    """
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (seconds > 0 and math.isfinite(seconds)):
        raise argparse.ArgumentTypeError(f"seconds must be positive and finite, not {text}")
    return seconds


def positive_count_argument(text: str) -> int:
    """A whole number of at least 1 from the command line (a limit: connections, sets, leases...).

    Raises:
        argparse.ArgumentTypeError: anything else.
    """
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {count}")
    return count


def hosts_argument(text: str) -> list[str]:
    """A comma-separated list of host names or addresses from the command line (an allow-list).

    Raises:
        argparse.ArgumentTypeError: an empty name in it.
    """
    hosts = [host.strip() for host in text.split(",")]
    if not all(hosts):
        raise argparse.ArgumentTypeError(f"a comma-separated list of host names or addresses, got {text!r}")
    return hosts


def _limit(text: str) -> int:
    try:
        return check_limit(int(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a number of leases from 0 to {MAX_LIMIT}: {text!r}") from exc


def _prefix(text: str) -> str:
    try:
        return check_prefix(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _name(text: str) -> str:
    if not text or "@" in text or any(char.isspace() for char in text):
        raise argparse.ArgumentTypeError(f"an id has no spaces or '@', and is not empty: {text!r:.80}")
    return text


def add_admin_commands(commands: argparse._SubParsersAction[Any], *,
                       list_name: str = "list", evict_name: str = "evict", default_host: str = "127.0.0.1",
                       default_port: int | None = None, what: str = "landlord") -> None:
    """Add the admin commands (listing the leases, evicting one) to a command line's subcommands;
    run them with :func:`run_admin` (they set ``args.admin_command`` to ``"list"`` or ``"evict"``).

    Each takes ``--host``, ``--port``, the credentials (``--token-file``, or the ``LANDLORD_ADMIN_TOKEN``
    variable, and/or ``--cert --key --ca``), ``--id`` or ``--object-id`` (default: the one
    admin object the daemon serves) and ``--timeout``; ``list`` takes ``--limit``, ``evict`` a
    cookie prefix.

    Args:
        commands: what ``parser.add_subparsers()`` returned.
        list_name, evict_name: the commands' names (``python -m lookup`` has a ``list`` of its own).
        default_host: the host asked unless ``--host`` is given.
        default_port: the port asked unless ``--port`` is given (``None``: ``--port`` is required).
        what: what the help calls the server ("landlord", "lookup service").
    """
    for name, command in ((list_name, "list"), (evict_name, "evict")):
        if command == "list":
            parser = commands.add_parser(
                name, help=f"list the leases a {what} holds (needs its admin token or an admin certificate)",
                description=f"Print the leases the {what} at HOST:PORT holds, earliest expiration first: "
                            f"a prefix of each cookie, the time left, how many resources are attached, "
                            f"and the resource. Then, if it has named leases (locks, semaphores), the "
                            f"names: each holder (a prefix of its cookie, its fencing token, time left, "
                            f"lock-delay, value), the waiters in order, and names closed by a lock-delay.")
            parser.add_argument("--limit", type=_limit, default=DEFAULT_LIMIT, metavar="N",
                                help=f"show at most N leases, and N rows of names (default %(default)s, "
                                     f"at most {MAX_LIMIT})")
            parser.add_argument("-o", "--output", choices=("text", "json"), default="text", type=str.lower,
                                help="text: tables for a person; json: one JSON object per lease, then per "
                                     "name, one a line, for a script (default %(default)s)")
        else:
            parser = commands.add_parser(
                name, help=f"end one lease of a {what} now (needs its admin token or an admin certificate)",
                description=f"End the lease of the {what} at HOST:PORT whose cookie starts with PREFIX "
                            f"now: a revocation (its resources freed through on_expire; its holder's next "
                            f"renewal is denied with the reason, or it hears at once if it listens); print what "
                            f"was ended. A named lease's holder (a lock's) hears at once, and its name goes to "
                            f"the next waiter after the holder's lock-delay.")
            parser.add_argument("prefix", type=_prefix, metavar="PREFIX",
                                help=f"the start of its cookie, as {list_name} shows it ({MIN_PREFIX}+ characters)")
        parser.set_defaults(admin_command=command)
        parser.add_argument("--host", type=host_argument, default=default_host,
                            help=f"the {what}'s host (default %(default)s)")
        parser.add_argument("--port", type=port_argument, default=default_port, required=default_port is None,
                            help=f"its port{' (default %(default)s)' if default_port is not None else ''}")
        parser.add_argument("--timeout", type=seconds_argument, default=DEFAULT_TIMEOUT, metavar="S",
                            help="seconds to wait for it (default %(default)g)")
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--id", type=_name, metavar="LANDLORD_ID",
                           help=f"the landlord's id: its admin object is {ADMIN_PREFIX}LANDLORD_ID "
                                f"(default: the one admin object served there)")
        which.add_argument("--object-id", type=_name, metavar="ID", help="the admin object's Pyro5 object id")
        credentials = parser.add_argument_group(
            "credentials", f"the admin token (from --token-file, else ${TOKEN_ENV}), and/or an admin "
                           f"certificate (--cert, --key and --ca, for two-way TLS)")
        credentials.add_argument("--token-file", type=pathlib.Path, metavar="PATH",
                                 help="a file holding the admin token (not the token itself: "
                                      "arguments are visible to every user in ps)")
        credentials.add_argument("--cert", type=pathlib.Path, metavar="PATH",
                                 help="this client's certificate (PEM, with its chain)")
        credentials.add_argument("--key", type=pathlib.Path, metavar="PATH", help="its private key (PEM)")
        credentials.add_argument("--ca", type=pathlib.Path, metavar="PATH",
                                 help="the CA certificate the server's certificate must be signed by (PEM)")


# every option of the evict command, and of them those given alone (the rest take a value)
EVICT_OPTIONS = frozenset({"-h", "--help", "--host", "--port", "--timeout", "--id", "--object-id",
                           "--token-file", "--cert", "--key", "--ca", "--config", "--print-config"})
_EVICT_FLAGS = frozenset({"-h", "--help", "--print-config"})  # --config and --print-config: landlord.cli.config


def prefix_behind_dashes(argv: Sequence[str], *, evict_name: str = "evict") -> list[str]:
    """``argv`` with the evict command's cookie prefix moved behind ``--`` if it starts with ``-``.

    A cookie is ``secrets.token_urlsafe``, so one in 64 starts with ``-``; argparse would read
    ``evict -OG9xgi2`` as an unknown option. The prefix is the first argument after the command
    that is not one of its options (:data:`EVICT_OPTIONS`, alone or as ``--option=value``) nor
    the value of the option before it. Anything after an explicit ``--`` is left as it is.

    Args:
        argv: the command line's arguments, without the program.
        evict_name: the evict command's name in this command line.
    """
    arguments = list(argv)
    if evict_name not in arguments:
        return arguments
    start = arguments.index(evict_name) + 1
    takes_value = False
    for at in range(start, len(arguments)):
        argument = arguments[at]
        if argument == "--":
            break
        if takes_value:
            takes_value = False
            continue
        option = argument.split("=", 1)[0]
        if option in EVICT_OPTIONS:
            takes_value = "=" not in argument and option not in _EVICT_FLAGS
            continue
        if argument.startswith("-") and COOKIE_CHARACTERS.match(argument) and "--" not in arguments[at:]:
            return arguments[:at] + arguments[at + 1:] + ["--", argument]
        if not argument.startswith("-"):
            break  # the prefix as argparse reads it
    return arguments


def _listing_text(listing: AdminListing, names: NameListing | None, output: str) -> tuple[str, str]:
    """A listing as ``list`` prints it (tables, or JSON Lines), and the note of what was left out."""
    if output == "json":  # stdout holds the objects alone: what --limit left out goes to stderr
        text = "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in listing_objects(listing, names))
        cut = [f"{len(listing.rows)} of {listing.total} leases"] if listing.total > len(listing.rows) else []
        if names is not None and names.total > len(names.names):
            cut.append(f"{len(names.names)} of {names.total} names")
        return text, f"{' and '.join(cut)} shown; see --limit" if cut else ""
    tables = format_table(listing)
    named = format_names(names) if names is not None else ""
    return tables + ("\n" + named if named else ""), ""


class _Failed(Exception):
    """A command's one error line, and its exit code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _given_as(args: argparse.Namespace, dest: str) -> str:
    """How an error names option ``dest``: where its value came from (``--token-file``,
    ``$LANDLORD_LIST_TOKEN_FILE``, ``FILE: token-file``) as landlord.cli.config recorded it."""
    origins: dict[str, str] = getattr(args, "option_origins", {})
    return origins.get(dest, "--" + dest.replace("_", "-"))


def _credentials(args: argparse.Namespace, environ: dict[str, str] | os._Environ[str]) -> tuple[str | None,
                                                                                                  TLSConfig | None]:
    tls_files = [args.cert, args.key, args.ca]
    tls = None
    if any(path is not None for path in tls_files):
        if None in tls_files:
            raise _Failed(EXIT_USAGE, "--cert, --key and --ca go together")
        try:
            tls = TLSConfig(args.cert, args.key, args.ca)
        except (OSError, ValueError) as exc:
            raise _Failed(EXIT_USAGE, f"TLS: {exc}") from None
    token = None
    try:
        if args.token_file is not None:
            token = read_token(args.token_file)
        elif environ.get(TOKEN_ENV):
            token = check_token(environ[TOKEN_ENV].strip())
    except OSError as exc:
        raise _Failed(EXIT_USAGE, f"{_given_as(args, 'token_file')}: cannot read the token file {args.token_file}: "
                                  f"{exc.strerror or exc}") from None
    except ValueError as exc:
        raise _Failed(EXIT_USAGE, f"{_given_as(args, 'token_file')}: {exc}" if args.token_file is not None
                      else f"${TOKEN_ENV}: {exc}") from None
    if token is None and tls is None:
        raise _Failed(EXIT_USAGE, f"no credentials: give --token-file PATH (or set ${TOKEN_ENV}), "
                                  f"or an admin certificate (--cert, --key, --ca)")
    return token, tls


def run_admin(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None,
              prog: str = "landlord", environ: dict[str, str] | None = None) -> int:
    """Run an admin command parsed by a parser :func:`add_admin_commands` made; its exit code:
    0 done, 1 refused or unreachable (or a replica that does not lead), or no lease to evict
    (the prefix matches none: it may have ended since it was listed), 2 bad input (the options,
    the files they name, or a prefix matching several leases). A failure is one line on ``err``:
    ``<prog>: error: <what>``.

    Args:
        args: the parsed arguments.
        out: where the table or the eviction goes (default stdout).
        err: where the error line goes (default stderr).
        prog: the program the error line names.
        environ: where ``LANDLORD_ADMIN_TOKEN`` is looked up (default ``os.environ``).
    """
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        token, tls = _credentials(args, os.environ if environ is None else environ)
        # TLS is the process's: restored after, as main() may run inside a longer-lived process
        with tls_settings(tls) if tls is not None else contextlib.nullcontext():
            text, note = _call(args, token)
            out.write(text)
            if note:
                print(f"{prog}: {note}", file=err)
    except _Failed as failed:
        print(f"{prog}: error: {failed}", file=err)
        return failed.code
    return EXIT_OK


def _call(args: argparse.Namespace, token: str | None) -> tuple[str, str]:
    """What the command prints, and a note for stderr (what ``-o json`` left out); its failure as
    :class:`_Failed`."""
    where = f"{args.host}:{args.port}"
    try:
        if args.object_id is not None:
            object_id = args.object_id
        elif args.id is not None:
            object_id = ADMIN_PREFIX + args.id
        else:
            object_id = find_admin(args.host, args.port, timeout=args.timeout)
        with AdminClient(f"PYRO:{object_id}@{uri_host(args.host)}:{args.port}", token=token,
                         timeout=args.timeout) as client:
            if args.admin_command == "list":
                listing = client.list(args.limit)
                try:
                    names: NameListing | None = client.names(args.limit)
                except AttributeError:  # an admin object of an earlier release lists no names
                    names = None
                return _listing_text(listing, names, getattr(args, "output", "text"))
            row = client.evict(args.prefix)
            return (f"evicted {row.cookie}… {row.resource} ({format_remaining(row.remaining)} left, "
                    f"{row.attached} attached)\n"), ""
    except AdminRefusedError as exc:
        raise _Failed(EXIT_FAILED, f"{where}: {exc}") from None
    except NotLeaderError as exc:
        raise _Failed(EXIT_FAILED, f"{where} does not lead its group"
                                   + (f": ask {exc.leader}" if exc.leader else "")) from None
    except UnknownLeaseError as exc:  # not found: well-formed, but no lease (now) has that prefix
        raise _Failed(EXIT_FAILED, str(exc)) from None
    except (TypeError, ValueError) as exc:  # a prefix of several leases, say
        raise _Failed(EXIT_USAGE, str(exc)) from None
    except LeaseError as exc:
        raise _Failed(EXIT_FAILED, str(exc)) from None
    except LookupError as exc:  # find_admin: none, or several
        raise _Failed(EXIT_FAILED, str(exc)) from None
    except Pyro5.errors.CommunicationError as exc:
        raise _Failed(EXIT_FAILED, f"cannot reach {where}: {exc}") from None
    except (Pyro5.errors.PyroError, OSError) as exc:  # no such object there, say
        raise _Failed(EXIT_FAILED, f"{where}: {exc}") from None

