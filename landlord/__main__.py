"""The ``landlord`` command (``python -m landlord``): administer a served landlord, or serve a
renewal service.

::

    landlord list  --port P [--host H] [--token-file F] [--cert C --key K --ca CA]
                   [--id LANDLORD_ID | --object-id ID] [--limit N] [--timeout S] [-o text|json]
    landlord evict PREFIX --port P [the same options but --limit and -o]
    landlord renewal-service [--max-set-lease S] [--set-lease S] [--sets-per-client N]
                             [--leases-per-set N] [--leases-per-client N]
                             [--landlord-hosts H1,H2] [--callback-hosts H1,H2]
                             [every server's options: --host --port --advertise, --cert --key --ca,
                              --metrics-port --metrics-host, --admin-token-file --admin-name,
                              --store, --log-level --log-format -v]
    landlord --version

(``python -m landlord`` is the same command.) Every option also comes from the environment
(``LANDLORD_LIST_``, ``LANDLORD_EVICT_``, ``LANDLORD_RENEWAL_SERVICE_`` and its name in capitals)
or a TOML ``--config`` file, a flag winning over the environment and the environment over the
file; ``--print-config`` shows what is in force (:mod:`landlord.cli.config`, docs/commands.md).

``list`` prints the leases the landlord at ``H:P`` holds, earliest
expiration first: the first 8 characters of each cookie (never the whole:
the cookie is the capability to renew or cancel), the time left, how many
resources are attached, and a short repr of the resource; then, if the
landlord has named leases (locks, semaphores), its names: each holder (a
prefix of its cookie, its fencing token, time left, lock-delay, value), the
waiters in order with the time their wait has left, and the names a
lock-delay keeps closed. ``--limit`` bounds both. ``evict`` ends the
lease whose cookie starts with ``PREFIX`` (8 characters or more) now, as a
revocation (its resources freed through ``on_expire``; a renewal after is
denied with the reason), and prints what it ended; a named lease's holder
hears at once.

Both call the landlord's admin object (:mod:`landlord.admin`), served beside
it when it is served with an admin token or admin names. Credentials: the
admin token from ``--token-file`` (else the ``LANDLORD_ADMIN_TOKEN``
variable), never from the arguments, which every user of the host sees in
``ps``, and never sent: each call carries a proof of it good for that call on
that connection only (see :mod:`landlord.admin`); and/or an admin certificate for two-way TLS (``--cert``, ``--key``,
``--ca``). Without ``--id`` or ``--object-id`` the command asks the daemon
which admin object it serves.

``renewal-service`` serves a lease renewal service
(:mod:`landlord.renewalservice.service`, after Jini's Norm) until SIGTERM or SIGINT,
printing ``renewal service at <uri> (...)`` once it answers (and telling systemd so, under
a ``Type=notify`` unit). It takes the option groups every server takes
(:mod:`landlord.cli.servers`). With ``--store`` its renewal sets survive a restart.
``--sets-per-client``, ``--leases-per-set`` and ``--leases-per-client`` bound what one client (a host) may hold;
``--landlord-hosts`` names the only hosts the leases' landlords may be at and
``--callback-hosts`` the only hosts the sets' listeners may be on (each: any
host when not given). See :class:`landlord.renewalservice.service.RenewalLimits`.

Errors are one line on stderr, ``landlord <command>: error: <what>`` (usage)
or ``landlord: error: <what>``, naming the option as it was given (``--store``,
``$LANDLORD_RENEWAL_SERVICE_STORE``, ``FILE: store``). Exit codes: 0 done; 1
refused or unreachable (or a replica that does not lead), nothing to evict (no
lease's cookie starts with the prefix: it may have ended since it was listed),
or in use (the address, or the store, held by another process; a restart
may mend it); 2 bad input: the options, and the files they name (a token file
that is missing, unreadable or holds no token, TLS files, a store whose
directory is missing or that is not a database), or a prefix of several leases.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from . import __version__
from .admin.commands import (
    EXIT_FAILED,
    EXIT_USAGE,
    add_admin_commands,
    hosts_argument,
    positive_count_argument,
    prefix_behind_dashes,
    run_admin,
    seconds_argument,
)
from .cli import (
    OneLineParser,
    add_server_options,
    given_as,
    layer_options,
    logging_from,
    resolve,
    server_settings,
    serving_hooks,
    subcommand_parser,
)

__all__ = ["main", "build_parser"]


def build_parser(prog: str = "landlord") -> argparse.ArgumentParser:
    """The command line's parser, with the ``list`` and ``evict`` subcommands."""
    parser = OneLineParser(
        prog=prog, description="Administer a served landlord: list its leases, end one.",
        epilog="Exit codes: 0 done, 1 refused, unreachable, in use or nothing to evict, 2 bad input "
               "(the options, and the files they name).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_admin_commands(commands)
    layer_options(commands.choices["list"], env_prefix="LANDLORD_LIST_", table="list")
    layer_options(commands.choices["evict"], env_prefix="LANDLORD_EVICT_", table="evict")
    _add_renewal_service(commands)
    return parser


def _add_renewal_service(commands: argparse._SubParsersAction[Any]) -> None:
    from .renewalservice.service import (
        DEFAULT_PORT,
        DEFAULT_SET_LEASE,
        LEASES_PER_CLIENT,
        MAX_MEMBERS,
        MAX_SET_LEASE,
        SERVICE_OBJECT_ID,
        SETS_PER_CLIENT,
    )

    service = commands.add_parser(
        "renewal-service", help="serve a lease renewal service (renewal sets: leases kept alive for others)",
        description=f"Serve a lease renewal service at HOST:PORT as PYRO:{SERVICE_OBJECT_ID}@HOST:PORT, "
                    f"until SIGTERM or SIGINT. Clients put leases in renewal sets "
                    f"(landlord.renewalservice.client.RenewalSetClient) and may exit; the service renews them.")
    service.set_defaults(serve_renewals=True)
    service.add_argument("--max-set-lease", type=seconds_argument, default=MAX_SET_LEASE, metavar="S",
                         help="the longest a set's lease is granted for (default %(default)g)")
    service.add_argument("--set-lease", type=seconds_argument, default=DEFAULT_SET_LEASE, metavar="S",
                         help="a set's lease when any is asked for (default %(default)g)")
    limits = service.add_argument_group("client limits", "bounds on what one client (a host) may hold, "
                                        "and on where the service may be sent")
    limits.add_argument("--sets-per-client", type=positive_count_argument, default=SETS_PER_CLIENT, metavar="N",
                        help="renewal sets one client (a host) may hold (default %(default)s)")
    limits.add_argument("--leases-per-set", type=positive_count_argument, default=MAX_MEMBERS, metavar="N",
                        help="leases one set may hold (default %(default)s)")
    limits.add_argument("--leases-per-client", type=positive_count_argument, default=LEASES_PER_CLIENT, metavar="N",
                        help="leases one client's sets may hold together (default %(default)s)")
    limits.add_argument("--landlord-hosts", type=hosts_argument, default=None, metavar="H1,H2",
                        help="the only hosts the leases' landlords may be at, as their URIs name them "
                             "(default: any)")
    limits.add_argument("--callback-hosts", type=hosts_argument, default=None, metavar="H1,H2",
                        help="the only hosts the sets' listeners may be on (default: any)")
    add_server_options(service, default_host="127.0.0.1", default_port=DEFAULT_PORT, what="renewal service",
                       store_help="keep the sets in this SQLite file, so they survive a restart "
                                  "(default: in memory only)")
    layer_options(service, env_prefix="LANDLORD_RENEWAL_SERVICE_", table="renewal-service")


def _serve_renewals(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    import sqlite3

    from .admin.server import LandlordAdmin
    from .grantor.policy import LeaseDurationPolicy
    from .grantor.store import StoreInUseError
    from .renewalservice.service import SERVICE_OBJECT_ID, LeaseRenewalService, RenewalLimits
    from .serving import serve_landlord

    settings = server_settings(args, parser)
    logging_from(args)
    try:
        policy = LeaseDurationPolicy(args.max_set_lease, min(args.set_lease, args.max_set_lease))
        limits = RenewalLimits(args.sets_per_client, args.leases_per_set, args.leases_per_client,
                               None if args.landlord_hosts is None else frozenset(args.landlord_hosts))
        service = LeaseRenewalService(policy=policy, store=settings.store, limits=limits,
                                      callback_hosts=args.callback_hosts)
    except StoreInUseError as exc:  # another process's: it may let go, so a restart may mend it
        print(f"{parser.prog}: error: {given_as(args, 'store')}: cannot use the store {settings.store}: {exc}",
              file=sys.stderr)
        return EXIT_FAILED
    except (ValueError, sqlite3.Error, OSError) as exc:  # no such directory, not ours to write, not a database
        print(f"{parser.prog}: error: {given_as(args, 'store')}: cannot use the store {settings.store}: {exc}"
              if settings.store else f"{parser.prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    admin = LandlordAdmin.if_asked(service, token=settings.admin_token, admin_names=settings.admin_names)
    stop, ready = serving_hooks("renewal service")  # systemd (Type=notify) told when it answers, and stops
    try:
        serve_landlord(service, settings.host, settings.port, object_id=SERVICE_OBJECT_ID, stop=stop,
                       ready=ready,
                       advertise=settings.advertise, tls=settings.tls, metrics_port=settings.metrics_port,
                       metrics_host=settings.metrics_host, admin=admin, name="renewal service")
    except (ValueError, OSError) as exc:
        print(f"{parser.prog}: error: cannot serve at {settings.host}:{settings.port}: {exc}", file=sys.stderr)
        return 1
    finally:
        service.close()
    return 0


def main(argv: Sequence[str] | None = None, *, prog: str = "landlord") -> int:
    """Run the command line; return the exit code.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).
        prog: the program name usage and error lines show.

    Raises:
        SystemExit: from argparse, with code 0 for ``--help`` and ``--version``, 2 for a usage error.
    """
    parser = build_parser(prog)
    args = resolve(parser.parse_args(prefix_behind_dashes(sys.argv[1:] if argv is None else argv)))
    if getattr(args, "serve_renewals", False):
        return _serve_renewals(args, subcommand_parser(parser, "renewal-service"))
    return run_admin(args, prog=prog)


if __name__ == "__main__":
    sys.exit(main())
