"""``python -m landlord``: administer a served landlord.

::

    python -m landlord list  --port P [--host H] [--token-file F] [--cert C --key K --ca CA]
                             [--id LANDLORD_ID | --object-id ID] [--limit N] [--timeout S]
    python -m landlord evict PREFIX --port P [the same options but --limit]
    python -m landlord --version

``list`` prints the leases the landlord at ``H:P`` holds, earliest
expiration first: the first 8 characters of each cookie (never the whole:
the cookie is the capability to renew or cancel), the time left, how many
resources are attached, and a short repr of the resource. ``evict`` ends the
lease whose cookie starts with ``PREFIX`` (8 characters or more) now, as a
cancel would, and prints what it ended.

Both call the landlord's admin object (:mod:`landlord.admin`), served beside
it when it is served with an admin token or admin names. Credentials: the
admin token from ``--token-file`` (else the ``LANDLORD_ADMIN_TOKEN``
variable), never from the arguments, which every user of the host sees in
``ps``; and/or an admin certificate for two-way TLS (``--cert``, ``--key``,
``--ca``). Without ``--id`` or ``--object-id`` the command asks the daemon
which admin object it serves.

Errors are one line on stderr, ``landlord <command>: error: <what>`` (usage)
or ``landlord: error: <what>``. Exit codes: 0 done, 1 refused or unreachable
(or a replica that does not lead), 2 bad input (the options, a token file
that holds no token, or a prefix that matches no lease or several).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from . import __version__
from .admin import EXIT_USAGE, add_admin_commands, prefix_behind_dashes, run_admin

__all__ = ["main", "build_parser"]


class _OneLineParser(argparse.ArgumentParser):
    """A parser whose usage errors are one line, ``<prog>: error: <message>``, exit status 2
    (its subcommands' parsers are of its class too)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(prog: str = "landlord") -> argparse.ArgumentParser:
    """The command line's parser, with the ``list`` and ``evict`` subcommands."""
    parser = _OneLineParser(
        prog=prog, description="Administer a served landlord: list its leases, end one.",
        epilog="Exit codes: 0 done, 1 refused or unreachable, 2 bad input.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_admin_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None, *, prog: str = "landlord") -> int:
    """Run the command line; return the exit code.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).
        prog: the program name usage and error lines show.

    Raises:
        SystemExit: from argparse, with code 0 for ``--help`` and ``--version``, 2 for a usage error.
    """
    args = build_parser(prog).parse_args(prefix_behind_dashes(sys.argv[1:] if argv is None else argv))
    return run_admin(args, prog=prog)


if __name__ == "__main__":
    sys.exit(main())
