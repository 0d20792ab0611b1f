"""The ``lookup`` command: serve a lookup service, or list what one holds.

::

    python -m lookup serve [--host 127.0.0.1] [--advertise ADDR] [--port 4160] [--max-lease S]
                           [--default-lease S] [--reaper sleeper|polling|lazy] [--store PATH] [--verbose]
                           [--etcd URL[,URL...] --group NAME --replicas H1:P1,H2:P2,H3:P3]
                           [--cert PATH --key PATH --ca PATH] [--metrics-port PORT [--metrics-host ADDR]]
                           [--admin-token-file PATH] [--admin-name NAME ...]
                           [--groups G1,G2] [--no-announce] [--announce-interval S]
                           [--discovery-port PORT] [--discovery-interface ADDR] [--broadcast]
                           [--event-timeout S] [--event-deadline S] [--event-queue N] [--event-attempts N]
                           [--callback-hosts H1,H2]
    python -m lookup leases|evict ...   (an operator's: as python -m landlord list|evict)
    python -m lookup list [--host 127.0.0.1] [--port 4160] [--etcd URL[,URL...] --group NAME]
                          [--timeout S] [--limit N] [--cert PATH --key PATH --ca PATH]
    python -m lookup --version

``serve`` listens on ``--host`` and puts ``--advertise`` in every URI it
hands out (its own, and the leases of registrations and event
registrations); on every interface (``--host 0.0.0.0`` or ``::``) without
``--advertise`` it advertises this host's own address, never the wildcard.
Once it answers it prints ``lookup service at <uri> (...)`` to stdout, and
logs to stderr.

``--cert``, ``--key`` and ``--ca`` (all three or none) put two-way TLS in
force for the process (see :mod:`landlord.tls`): ``serve`` accepts only
clients with a certificate signed by the CA, ``list`` presents its
certificate and accepts only a server whose certificate the CA signed.

``--store PATH`` keeps the registrations in an SQLite file: a service
restarted on it (even after ``kill -9``) has them back, each with its
remaining time less the downtime, and its clients carry on as if nothing had
happened (see :class:`landlord.LeaseStore`).

``--http-port PORT`` serves the lookup browser, a live page of the
registrations, at ``http://ADDR:PORT/`` (ADDR: ``--http-host``, default
127.0.0.1); with ``--admin-token-file`` it shows the leases and evicts
(:mod:`lookup.browser`), on loopback only: a page on any other address is
read-only, and ``serve`` prints a line saying so, since the page's token would
cross the network in clear (the Pyro admin, which never sends it, still works).

``--metrics-port PORT`` serves health checks for a load balancer at
``http://HOST:PORT`` (HOST: ``--metrics-host``, default ``--host``): ``/healthz``
(200 while the process serves) and ``/readyz`` (200 while it answers leases: a
replica only while it leads), which need nothing installed; and Prometheus
metrics at ``/metrics`` with prometheus-client (``pip install
'landlord[metrics]'``; without it ``/metrics`` answers 501 naming the extra,
and the server says so once at start). See :class:`lookup.service.server.LookupMetrics`.

``--admin-token-file PATH`` (and, over two-way TLS, ``--admin-name NAME``)
serves an admin object beside the service (:class:`landlord.admin.LandlordAdmin`):
``python -m lookup leases`` lists its leases by a prefix of their cookies and
``python -m lookup evict PREFIX`` revokes one, for a caller with the token
(``--token-file`` or ``LANDLORD_ADMIN_TOKEN``; the command sends a proof of it
for its connection, never the token) or an admin certificate.

``--event-timeout``, ``--event-deadline``, ``--event-queue`` and
``--event-attempts`` bound event delivery (see :mod:`lookup.service.outbox`);
``--callback-hosts`` names the only hosts event listeners may be on.

``serve`` announces the service for discovery (see :mod:`lookup.discovery.announcer`),
to the public group unless ``--groups`` names others, every
``--announce-interval`` seconds, and answers discovery requests;
``--no-announce`` turns that off. ``--broadcast`` broadcasts where the
network has no multicast (it falls back to broadcast by itself where
sending multicast fails).

``--etcd``, ``--group`` and ``--replicas`` (all three) run one replica of a
replicated lookup service (see docs/replication.md and
:mod:`lookup.service.replicated`): run one on each host named in ``--replicas``,
with the same three options. ``list --etcd URL --group NAME`` asks etcd
which replica leads the group, says so, and lists that replica's table.
With ``--pyro-ns`` every replica serves Pyro5's name server: the leader
answers (and answers broadcasts), the others raise ``NamingError`` naming the
leader's lookup service (see :mod:`lookup.service.pyrons.replica`).
With ``--http-port`` every replica serves the page: the leader's shows its
registrations, a follower's that it does not lead and who does.

Errors are one line on stderr, naming the option as it was given (``--store``,
``$LOOKUP_SERVE_STORE``, ``FILE: store``). Exit codes: 0 done; 1 the lookup
service (or etcd) cannot be reached, the address cannot be served, or the store
is in use by another process (a restart may mend these), or, for ``evict``, no
lease's cookie starts with the prefix; 2 bad input: the options, and the files
they name (a store whose directory is missing or that is not a database, token
and TLS files missing or unreadable), or an extra the options need and that is
not installed (``--etcd`` without ``pip install 'landlord[etcd]'``).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sqlite3
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import Pyro5.errors

from landlord import StoreInUseError, __version__
from landlord.admin import (
    add_admin_commands,
    host_argument,
    hosts_argument,
    port_argument,
    positive_count_argument,
    prefix_behind_dashes,
    run_admin,
    seconds_argument,
)
from landlord.cli import (
    OneLineParser,
    add_output_option,
    add_server_options,
    add_tls_options,
    any_port_argument,
    given_as,
    layer_options,
    logging_from,
    resolve,
    server_settings,
    serving_hooks,
    subcommand_parser,
    tls_config,
    write_json_lines,
)
from landlord.serving import FrameLimits
from landlord.tls import tls_settings

from .discovery.unicast import DEFAULT_HOST, DEFAULT_PORT, DEFAULT_TIMEOUT, LookupServiceNotFoundError, locate
from .registration import DEFAULT_LEASE, DEFAULT_MAX_LEASE
from .service.outbox import MailLimits
from .service.quotas import LookupLimits

__all__ = ["main", "build_parser", "format_table", "registration_object", "EXIT_OK", "EXIT_UNREACHABLE", "EXIT_USAGE"]

log = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_UNREACHABLE = 1
EXIT_USAGE = 2
DEFAULT_LIMIT = 1000  # rows `list` shows unless told otherwise

def _count(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if count < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, not {count}")
    return count




def _checked_by(check: Any) -> Any:
    """An argparse type that passes the text through ``check``, its ValueError a usage error."""
    def parse(text: str) -> str:
        try:
            check(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return text
    return parse


def _add_etcd_options(parser: argparse.ArgumentParser, *, serving: bool) -> None:
    from landlord import replica_uris
    from landlord.replication.election import leader_key, parse_endpoints

    group = parser.add_argument_group("replication", "a replicated lookup service, over etcd")
    group.add_argument("--etcd", type=_checked_by(parse_endpoints), metavar="URL[,URL...]",
                       help="the etcd cluster's client URLs (http://host:port)")
    group.add_argument("--group", type=_checked_by(leader_key), metavar="NAME",
                       help="the replica group's name (letters, digits, _.-)")
    if serving:
        group.add_argument("--replicas", type=_checked_by(lambda text: replica_uris(text, "g")),
                           metavar="H1:P1,H2:P2,...", help="every replica's address, this one's among them")


def _groups(text: str) -> tuple[str, ...]:
    """``a,b`` as discovery groups (``""``: the public group alone)."""
    from .discovery.packets import check_groups

    try:
        return check_groups(text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _interval(text: str) -> float:
    from .discovery.packets import MAX_INTERVAL, MIN_INTERVAL

    seconds = seconds_argument(text)
    if not MIN_INTERVAL <= seconds <= MAX_INTERVAL:
        raise argparse.ArgumentTypeError(f"must be {MIN_INTERVAL:g} to {MAX_INTERVAL:g} seconds, not {text}")
    return seconds


def _add_discovery_options(parser: argparse.ArgumentParser) -> None:
    from .discovery.announcer import DEFAULT_INTERVAL
    from .discovery.network import ANNOUNCE_GROUP, DISCOVERY_PORT, REQUEST_GROUP

    group = parser.add_argument_group(
        "discovery", f"announce the service on UDP multicast ({ANNOUNCE_GROUP}), and answer requests "
                     f"({REQUEST_GROUP}), so that services and clients find it with no address configured")
    group.add_argument("--groups", type=_groups, default=("",), metavar="G1,G2",
                       help="the discovery groups it is a member of (default: the public group, \"\"; "
                            "not --group, the replica group)")
    group.add_argument("--no-announce", dest="discovery", action="store_false",
                       help="no discovery: found only by its address")
    group.add_argument("--announce-interval", type=_interval, default=DEFAULT_INTERVAL, metavar="S",
                       help="seconds between announcements (default %(default)g)")
    group.add_argument("--discovery-port", type=any_port_argument, default=DISCOVERY_PORT, metavar="PORT",
                       help="the UDP port of announcements and requests (default %(default)s)")
    group.add_argument("--discovery-interface", metavar="ADDR",
                       help="the IPv4 address of the one interface to announce on (default: every "
                            "interface, or loopback alone when --host is a loopback address)")
    group.add_argument("--broadcast", action="store_true",
                       help="broadcast, never multicast (where the network has no multicast)")


def _add_pyro_ns_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "Pyro5 name server", "also answer as Pyro5's name server (Pyro.NameServer), so unmodified Pyro5 code "
                             "(locate_ns, PYRONAME:, ns.register, python -m Pyro5.nsc) works against it; names "
                             "registered through it go once their daemon stops answering pings; with --etcd, "
                             "the leader answers and the other replicas name it")
    group.add_argument("--pyro-ns", metavar="[HOST:]PORT",
                       help="where to answer (HOST defaults to --host; Pyro5 clients look at port 9090 "
                            "unless told otherwise)")
    group.add_argument("--pyro-ns-ping", type=seconds_argument, default=10.0, metavar="S",
                       help="seconds between pings of a registered object's daemon (default %(default)g); "
                            "a dead one's names go within about S plus 3 s for each of 2 missed pings")
    group.add_argument("--pyro-ns-broadcast", type=any_port_argument, default=9091, metavar="PORT",
                       help="the UDP port where it answers Pyro5's broadcast discovery, locate_ns() with no host "
                            "(default %(default)s, Pyro5's; 0: none)")


def _pyro_ns(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Any:
    """``--pyro-ns`` and ``--pyro-ns-ping`` as a PyroNs, or ``None`` (a usage error if bad)."""
    if args.pyro_ns is None:
        return None
    from .service.pyrons.bridge import PyroNs
    from .service.pyrons.liveness import PingTerms

    try:
        settings = PyroNs.parse(args.pyro_ns, PingTerms.every(args.pyro_ns_ping), args.pyro_ns_broadcast or None)
    except ValueError as exc:
        parser.error(f"--pyro-ns: {exc}")
    if settings.terms.lease_term > args.max_lease:
        parser.error(f"--pyro-ns-ping {args.pyro_ns_ping:g} gives names leases of {settings.terms.lease_term:g} s, "
                     f"longer than --max-lease ({args.max_lease:g}): ping more often, or grant longer leases")
    return settings


def _discovery_network(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Any:
    """The discovery options as a DiscoveryNetwork (a usage error if bad)."""
    from .discovery.network import DiscoveryNetwork, choose_interfaces

    if args.discovery_port == 0:
        parser.error("--discovery-port must be 1 to 65535")
    try:
        network = DiscoveryNetwork(port=args.discovery_port, interface=args.discovery_interface,
                                   broadcast=args.broadcast)
        if network.interface is not None and args.discovery:
            choose_interfaces(network.interface)
    except ValueError as exc:
        parser.error(f"--discovery-interface: {exc}")
    return network


def _add_event_options(parser: argparse.ArgumentParser) -> None:
    """``serve``'s bounds on event delivery (see :mod:`lookup.service.outbox`) and on where events may go."""
    limits = MailLimits()
    group = parser.add_argument_group("events", "bounds on delivering events, so that no listener holds up another")
    group.add_argument("--event-timeout", type=seconds_argument, default=limits.attempt_timeout, metavar="S",
                       help="seconds one delivery attempt may take, connecting included (default %(default)g)")
    group.add_argument("--event-deadline", type=seconds_argument, default=limits.deadline, metavar="S",
                       help="seconds an event may wait to be delivered, then it is dropped (default %(default)g)")
    group.add_argument("--event-queue", type=positive_count_argument, default=limits.queue, metavar="N",
                       help="events waiting per listener; beyond, its oldest is dropped (default %(default)d)")
    group.add_argument("--event-attempts", type=positive_count_argument, default=limits.in_flight, metavar="N",
                       help="delivery attempts at once (sockets), a quarter of them kept for listeners "
                            "known to be live (default %(default)d)")
    group.add_argument("--callback-hosts", type=hosts_argument, metavar="H1,H2",
                       help="the only hosts event listeners may be on (default: any)")


def _add_connection_options(parser: argparse.ArgumentParser) -> None:
    """``serve``'s bounds on what one client may hold (see :class:`landlord.FrameLimits`)."""
    limits = FrameLimits()
    group = parser.add_argument_group("client limits", "bounds on what one client (a host) may hold")
    group.add_argument("--connections-per-host", type=positive_count_argument, default=limits.connections_per_host,
                       metavar="N", help="connections one client address may hold open (default %(default)d)")
    group.add_argument("--message-deadline", type=seconds_argument, default=limits.deadline, metavar="S",
                       help="seconds a message may take to arrive whole, from its first byte; a slower one is "
                            "refused and its connection closed (default %(default)g)")
    quotas = LookupLimits()
    group.add_argument("--registrations-per-client", type=positive_count_argument,
                       default=quotas.registrations_per_client, metavar="N",
                       help="live registrations one client may hold (default %(default)d)")
    group.add_argument("--event-registrations-per-client", type=positive_count_argument,
                       default=quotas.event_registrations_per_client, metavar="N",
                       help="live event registrations one client may hold (default %(default)d)")
    group.add_argument("--attribute-bytes", type=positive_count_argument, default=quotas.attribute_bytes, metavar="N",
                       help="bytes of attributes one registration may carry (default %(default)d)")


def _frame_limits(args: argparse.Namespace, parser: argparse.ArgumentParser) -> FrameLimits:
    try:
        return FrameLimits(deadline=args.message_deadline, connections_per_host=args.connections_per_host)
    except (TypeError, ValueError) as exc:
        parser.error(f"connections: {exc}")
    raise AssertionError("parser.error exits")  # pragma: no cover


def _mail_limits(args: argparse.Namespace, parser: argparse.ArgumentParser) -> MailLimits:
    try:
        return MailLimits(queue=args.event_queue, deadline=args.event_deadline, attempt_timeout=args.event_timeout,
                          in_flight=args.event_attempts, unproven=max(1, args.event_attempts * 3 // 4))
    except (TypeError, ValueError) as exc:
        parser.error(f"events: {exc}")
    raise AssertionError("parser.error exits")  # pragma: no cover




def build_parser(prog: str = "lookup") -> argparse.ArgumentParser:
    """The command line's parser: ``serve``, ``list``, and the admin commands ``leases`` and ``evict``."""
    parser = OneLineParser(
        prog=prog, description="A Jini-style lookup service whose registrations are leases.",
        epilog="Exit codes: 0 ok, 1 cannot reach (or serve at) the address, the store in use, or nothing to "
               "evict, 2 bad input (the options, the files they name, an extra they need).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}",
                        help="print the version (of landlord, which lookup is part of) and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    serve = commands.add_parser(
        "serve", help="run a lookup service until SIGTERM or SIGINT",
        description="Run a lookup service at HOST:PORT until SIGTERM or SIGINT. Logs to stderr: "
                    "registrations, grants, expiries and cancellations; renewals too with --verbose.")
    serve.add_argument("--max-lease", type=seconds_argument, default=DEFAULT_MAX_LEASE, metavar="S",
                       help="longest lease granted, in seconds (default %(default)g)")
    serve.add_argument("--default-lease", type=seconds_argument, default=None, metavar="S",
                       help=f"lease granted to a request for ANY, in seconds "
                            f"(default {DEFAULT_LEASE:g}, or --max-lease if shorter)")
    serve.add_argument("--reaper", choices=("sleeper", "polling", "lazy"), default="sleeper",
                       help="how expired registrations are freed (default %(default)s)")
    add_server_options(serve, default_host=DEFAULT_HOST, default_port=DEFAULT_PORT, what="lookup service",
                       store_help="keep registrations in this SQLite file, and take back those it holds "
                                  "(default: in memory only)")
    _add_event_options(serve)
    _add_connection_options(serve)
    _add_discovery_options(serve)
    _add_pyro_ns_options(serve)
    _add_etcd_options(serve, serving=True)
    serve.add_argument("--http-port", type=any_port_argument, default=None, metavar="PORT",
                       help="also serve the lookup browser page (registrations, live) at http://ADDR:PORT/ "
                            "(0: any free port; default: no page); with --etcd, a follower's names the leader")
    serve.add_argument("--http-host", default="127.0.0.1", metavar="ADDR",
                       help="the address the page listens on (default %(default)s: this host only; "
                            "elsewhere the page is read-only, the admin token being for loopback)")
    layer_options(serve, env_prefix="LOOKUP_SERVE_", table="serve")

    show = commands.add_parser(
        "list", help="print the registrations of a lookup service",
        description="Print the registrations of the lookup service at HOST:PORT as a table: "
                    "service id, types, attributes, time left.")
    show.add_argument("--host", type=host_argument, default=DEFAULT_HOST,
                      help="the lookup service's host (default %(default)s)")
    show.add_argument("--port", type=port_argument, default=DEFAULT_PORT, help="its port (default %(default)s)")
    show.add_argument("--timeout", type=seconds_argument, default=DEFAULT_TIMEOUT, metavar="S",
                      help="seconds to wait for it (default %(default)g)")
    show.add_argument("--limit", type=_count, default=DEFAULT_LIMIT, metavar="N",
                      help="show at most N registrations (default %(default)s)")
    add_output_option(show)
    _add_etcd_options(show, serving=False)
    add_tls_options(show, side="client")
    layer_options(show, env_prefix="LOOKUP_LIST_", table="list")
    add_admin_commands(commands, list_name="leases", evict_name="evict", default_port=DEFAULT_PORT,
                       what="lookup service")
    layer_options(commands.choices["leases"], env_prefix="LOOKUP_LEASES_", table="leases")
    layer_options(commands.choices["evict"], env_prefix="LOOKUP_EVICT_", table="evict")
    return parser


def main(argv: Sequence[str] | None = None, *, prog: str = "lookup") -> int:
    """Run the command line; return the exit code.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).
        prog: the program name usage messages show.

    Raises:
        SystemExit: from argparse, with code 0 for ``--help`` and 2 for a usage error.
    """
    parser = build_parser(prog)
    args = resolve(parser.parse_args(prefix_behind_dashes(sys.argv[1:] if argv is None else argv)))
    if getattr(args, "admin_command", None):
        return run_admin(args, prog=prog)
    command = subcommand_parser(parser, args.command)  # its errors name it: "lookup serve: error: ..."
    if args.command == "serve":
        return _serve_command(args, command)
    args.tls = tls_config(args, command)
    if (args.etcd is None) != (args.group is None):
        command.error("--etcd and --group go together")
    return _list(args, sys.stdout)


def _serve_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``serve``'s options checked together, then the service served (a replica, with ``--etcd``)."""
    settings = server_settings(args, parser)
    args.tls, args.admin_token = settings.tls, settings.admin_token
    if args.default_lease is None:
        args.default_lease = min(DEFAULT_LEASE, args.max_lease)
    elif args.default_lease > args.max_lease:
        parser.error(f"--default-lease ({args.default_lease:g}) exceeds --max-lease ({args.max_lease:g})")
    args.discovery_network = _discovery_network(args, parser)
    args.pyro_ns_settings = _pyro_ns(args, parser)
    args.mail_limits = _mail_limits(args, parser)
    args.frame_limits = _frame_limits(args, parser)
    args.lookup_limits = LookupLimits(registrations_per_client=args.registrations_per_client,
                                      event_registrations_per_client=args.event_registrations_per_client,
                                      attribute_bytes=args.attribute_bytes)
    replicated = [args.etcd, args.group, args.replicas]
    if any(option is not None for option in replicated):
        if None in replicated:
            parser.error("--etcd, --group and --replicas go together")
        if args.store is not None:
            parser.error("--store and --etcd exclude each other: a replica keeps its leases in etcd")
        return _serve_replica(args, parser)
    return _serve(args)


def _discovery(args: argparse.Namespace) -> dict[str, Any]:
    """The discovery keywords of ``serve`` and ``serve_replicated``."""
    return {"discovery": args.discovery, "groups": args.groups, "announce_interval": args.announce_interval,
            "discovery_network": args.discovery_network}


def _addresses(args: argparse.Namespace) -> str:
    """Where ``serve`` listens: ``host:port``, and its metrics' and page's addresses if any."""
    where = f"{args.host}:{args.port}"
    if args.metrics_port is not None:
        where += f" (or metrics at {args.metrics_host or args.host}:{args.metrics_port})"
    if args.http_port is not None:
        where += f" (or the page at {args.http_host}:{args.http_port})"
    return where


def _serve(args: argparse.Namespace) -> int:
    from .service.server import serve  # here: `list` need not import the server

    logging_from(args)
    stop, ready = serving_hooks("lookup service")  # systemd told when it answers, and stops
    try:
        serve(args.host, args.port, advertise=args.advertise, max_lease=args.max_lease, stop=stop, ready=ready,
              default_lease=args.default_lease, reaper=args.reaper, tls=args.tls, store=args.store,
              metrics_port=args.metrics_port, metrics_host=args.metrics_host, admin_token=args.admin_token,
              admin_names=args.admin_name, mail_limits=args.mail_limits, callback_hosts=args.callback_hosts,
              limits=args.frame_limits, lookup_limits=args.lookup_limits, pyro_ns=args.pyro_ns_settings,
              page=_page(args), **_discovery(args))
    except OSError as exc:  # the address is in use, or not ours
        print(f"lookup: cannot serve at {_addresses(args)}: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except StoreInUseError as exc:  # another process's: it may let go, so a restart may mend it
        print(f"lookup: {given_as(args, 'store')}: cannot use the store {args.store}: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except (sqlite3.Error, ValueError) as exc:  # no such directory, not ours to write, not a database
        print(f"lookup: {given_as(args, 'store')}: cannot use the store {args.store}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def _page(args: argparse.Namespace) -> Any:
    """The browser page ``serve`` starts (``--http-port``), or ``None``."""
    if args.http_port is None:
        return None
    from .browser import page_at  # here: only a server with the page loads it

    return page_at(args.http_host, args.http_port)


def _serve_replica(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from .service.replicated import EtcdUnreachableError, serve_replicated  # here: only a replica needs etcd

    logging_from(args)
    stop, ready = serving_hooks("lookup replica")
    try:
        serve_replicated(args.host, args.port, etcd=args.etcd, group=args.group, replicas=args.replicas,
                         stop=stop, ready=ready,
                         advertise=args.advertise, max_lease=args.max_lease, default_lease=args.default_lease,
                         reaper=args.reaper, tls=args.tls, metrics_port=args.metrics_port,
                         metrics_host=args.metrics_host, admin_token=args.admin_token, admin_names=args.admin_name,
                         limits=args.frame_limits, lookup_limits=args.lookup_limits, mail_limits=args.mail_limits,
                         callback_hosts=args.callback_hosts, pyro_ns=args.pyro_ns_settings, page=_page(args),
                         **_discovery(args))
    except ValueError as exc:  # this replica not among --replicas
        parser.error(str(exc))
    except ImportError as exc:
        print(f"lookup: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except EtcdUnreachableError as exc:
        print(f"lookup: cannot reach etcd: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except OSError as exc:  # the address is in use, or not ours
        print(f"lookup: cannot serve at {_addresses(args)}: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    return EXIT_OK


def _leader_address(args: argparse.Namespace, out: TextIO) -> int:
    """Ask etcd which replica leads ``--group``, say so, and point ``args`` at it; :data:`EXIT_OK` if one
    does, else the exit code (the error said on stderr)."""
    import Pyro5.core

    from landlord.replication.election import etcd_errors

    from .service.replicated import EtcdUnreachableError, group_leader, reach_etcd

    try:
        client = reach_etcd(args.etcd, timeout=args.timeout)
    except ImportError as exc:  # no etcd client: before etcd_errors(), which needs it
        print(f"lookup: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except EtcdUnreachableError as exc:
        print(f"lookup: cannot reach etcd: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    try:
        leader = group_leader(client, args.group)
    except etcd_errors() as exc:  # it answered once, then no more
        print(f"lookup: lost etcd: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    finally:
        client.close()
    if leader is None:
        print(f"lookup: group {args.group} has no leader now", file=sys.stderr)
        return EXIT_UNREACHABLE
    out.write(f"group {args.group}: led by {leader}\n")
    uri = Pyro5.core.URI(leader)
    args.host, args.port = uri.host, uri.port
    return EXIT_OK


def _list(args: argparse.Namespace, out: TextIO) -> int:
    if args.etcd is not None:
        code = _leader_address(args, out)
        if code != EXIT_OK:
            return code
    try:
        # restored after: main() may run inside a longer-lived process
        with tls_settings(args.tls) if args.tls is not None else contextlib.nullcontext():
            rows, total = _fetch(args.host, args.port, timeout=args.timeout, limit=args.limit)
    except LookupServiceNotFoundError as exc:
        print(f"lookup: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except Pyro5.errors.CommunicationError as exc:  # it went away, or timed out, while answering
        print(f"lookup: lost the lookup service at {args.host}:{args.port}: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    if args.output == "json":  # stdout holds the objects alone; what was left out goes to stderr
        write_json_lines((registration_object(row) for row in rows), out)
        if total > len(rows):
            print(f"lookup list: {len(rows)} of {total} registrations shown; see --limit", file=sys.stderr)
        return EXIT_OK
    out.write(format_table(rows))
    if total > len(rows):
        out.write(f"({len(rows)} of {total} registrations shown; see --limit)\n")
    return EXIT_OK


def registration_object(row: Sequence[Any]) -> dict[str, Any]:
    """One row of ``list`` as ``-o json`` writes it: ``service_id`` (text), ``types`` and ``attributes``
    (lists of text), ``seconds_left`` (a number, or null when the service cannot say)."""
    service_id, types, attributes, seconds_left = row
    return {"service_id": str(service_id), "types": list(types), "attributes": list(attributes),
            "seconds_left": seconds_left}


def _fetch(host: str, port: int, *, timeout: float, limit: int) -> tuple[list[tuple[Any, ...]], int]:
    """The rows ``(service_id, types, attributes, seconds_left or None)`` and the total."""
    from .item import ServiceTemplate
    from .service.server import MAX_TABLE_ROWS, entry_text

    with locate(host, port, timeout=timeout) as proxy:
        limit = min(limit, MAX_TABLE_ROWS)
        if "registrations_table" in proxy._pyroMethods:
            rows, total = proxy.registrations_table(limit)
            return [tuple(row) for row in rows], total
        # a lookup service served otherwise: the items, but no time left
        found = proxy.lookup_all(ServiceTemplate(), limit)
        rows = [(item.service_id, list(item.types), [entry_text(e) for e in item.attributes], None)
                for item in found.items]
        return rows, found.total


def format_table(rows: Sequence[Sequence[Any]]) -> str:
    """The registrations as an aligned text table (a header line, then one line each).

    Args:
        rows: ``(service_id, types, attributes, seconds_left)``; ``seconds_left``
            may be ``None`` (unknown).
    """
    if not rows:
        return "no registrations\n"
    header = ("SERVICE ID", "TYPES", "ATTRIBUTES", "TIME LEFT")
    lines = [header] + [(str(service_id), ", ".join(types) or "-", ", ".join(attributes) or "-",
                         "?" if seconds_left is None else f"{seconds_left:.1f} s")
                        for service_id, types, attributes, seconds_left in rows]
    widths = [max(len(line[column]) for line in lines) for column in range(3)]
    return "".join(f"{line[0]:<{widths[0]}}  {line[1]:<{widths[1]}}  {line[2]:<{widths[2]}}  {line[3]:>9}"
                   .rstrip() + "\n" for line in lines)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
