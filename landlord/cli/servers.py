"""The option groups every server command takes, in the same shape: listen and advertise, two-way
TLS, metrics and health, admin, logging, store (:func:`add_server_options`), and what they come to
once checked (:func:`server_settings`, a :class:`ServerSettings`).

``lookup serve`` and ``landlord renewal-service`` are built on it, so that an operator who knows one
knows the other: the same flags, the same environment variables after each command's prefix, the
same keys in a config file.
"""

from __future__ import annotations

import argparse
import pathlib
from dataclasses import dataclass, field
from typing import NoReturn

from ..admin.commands import host_argument, port_argument
from ..admin.protocol import read_token
from ..tls import TLSConfig
from ..transport.addresses import check_advertise
from .config import given_as
from .logs import add_logging_options

__all__ = ["ServerSettings", "add_server_options", "add_tls_options", "server_settings", "tls_config",
           "advertise_argument", "any_port_argument", "TLS_OPTIONS"]

TLS_OPTIONS = ("cert", "key", "ca")  # their dests: all given, or none


@dataclass(frozen=True)
class ServerSettings:
    """A server command's shared options, checked."""

    host: str
    port: int
    advertise: str | None = None
    tls: TLSConfig | None = None
    metrics_port: int | None = None
    metrics_host: str | None = None
    admin_token: str | None = field(default=None, repr=False)  # a secret: never in a repr, a log, a traceback
    admin_names: tuple[str, ...] = ()
    store: pathlib.Path | None = None


def any_port_argument(text: str) -> int:
    """A port to listen on, 0 meaning any free one.

    Raises:
        argparse.ArgumentTypeError: not a number from 0 to 65535.
    """
    return port_argument(text, allow_zero=True)


def advertise_argument(text: str) -> str:
    """A host name or IP address to put in URIs.

    Raises:
        argparse.ArgumentTypeError: anything else.
    """
    try:
        return check_advertise(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_server_options(parser: argparse.ArgumentParser, *, default_host: str, default_port: int, what: str,
                       store_help: str) -> None:
    """Add the shared groups to a server command's parser: ``--host``, ``--port``, ``--advertise``;
    ``--cert``, ``--key``, ``--ca``; ``--metrics-port``, ``--metrics-host``; ``--admin-token-file``,
    ``--admin-name``; ``--store``; ``--log-level``, ``--log-format``, ``-v``.

    Args:
        parser: the command's parser.
        default_host, default_port: where it listens unless told.
        what: what the help calls the server ("lookup service", "renewal service").
        store_help: what ``--store`` keeps, for its help.
    """
    listen = parser.add_argument_group("listen", f"where the {what} listens, and the address its URIs name")
    listen.add_argument("--host", type=host_argument, default=default_host,
                        help="address to listen on (default %(default)s; 0.0.0.0 or :: for every interface)")
    listen.add_argument("--port", type=any_port_argument, default=default_port,
                        help="port to listen on (default %(default)s; 0: any free port, which the printed URI names)")
    listen.add_argument("--advertise", type=advertise_argument, metavar="ADDR",
                        help="host name or address put in every URI handed out, for clients on other hosts "
                             "(default: --host, or this host's own address if --host is every interface)")
    add_tls_options(parser, side="server")
    metrics = parser.add_argument_group(
        "metrics and health", "over HTTP: /healthz and /readyz, and /metrics for Prometheus (/metrics needs "
                              "prometheus-client: pip install 'landlord[metrics]'; without it, 501)")
    metrics.add_argument("--metrics-port", type=any_port_argument, metavar="PORT",
                         help="serve /metrics, /healthz and /readyz at this port (0: any free port; default: none)")
    metrics.add_argument("--metrics-host", metavar="ADDR", help="address the metrics listen on (default: --host)")
    admin = parser.add_argument_group(
        "admin", f"an admin object beside the {what}, to list its leases and evict one (a cookie is a capability: "
                 f"only an operator may list them)")
    admin.add_argument("--admin-token-file", type=pathlib.Path, metavar="PATH",
                       help="the admin token, read from this file (never from the command line, which other "
                            "users can see)")
    admin.add_argument("--admin-name", action="append", default=[], metavar="NAME",
                       help="a commonName whose certificate (of --ca, over two-way TLS) is an admin's; repeatable")
    store = parser.add_argument_group("store", "what survives a restart")
    store.add_argument("--store", type=pathlib.Path, metavar="PATH", help=store_help)
    add_logging_options(parser)


def add_tls_options(parser: argparse.ArgumentParser, *, side: str) -> None:
    """Add ``--cert``, ``--key`` and ``--ca`` (two-way TLS; all three or none).

    Args:
        parser: the command's parser.
        side: "server" or "client": whose certificate ``--cert`` is.
    """
    group = parser.add_argument_group(
        "two-way TLS", f"all three or none; the certificate is the one this {side} presents")
    group.add_argument("--cert", type=pathlib.Path, metavar="PATH",
                       help="this process's certificate (PEM, with its chain)")
    group.add_argument("--key", type=pathlib.Path, metavar="PATH", help="its private key (PEM)")
    group.add_argument("--ca", type=pathlib.Path, metavar="PATH",
                       help="the CA certificate the peer's certificate must be signed by (PEM)")


def tls_config(args: argparse.Namespace, parser: argparse.ArgumentParser) -> TLSConfig | None:
    """The TLS options as a :class:`~landlord.tls.TLSConfig`, ``None`` if none is given.

    Raises:
        SystemExit: status 2 (``parser.error``): some of the three missing, or a file that is not
            there or not a certificate or key.
    """
    given = [name for name in TLS_OPTIONS if getattr(args, name, None) is not None]
    if not given:
        return None
    if len(given) < len(TLS_OPTIONS):
        missing = ", ".join(f"--{name}" for name in TLS_OPTIONS if name not in given)
        _error(parser, f"--cert, --key and --ca go together: {missing} missing")
    try:
        return TLSConfig(args.cert, args.key, args.ca)
    except (OSError, ValueError) as exc:  # not found, not readable, not a certificate or key
        _error(parser, f"TLS: {exc}")


def server_settings(args: argparse.Namespace, parser: argparse.ArgumentParser) -> ServerSettings:
    """The shared options :func:`add_server_options` added, checked together.

    Raises:
        SystemExit: status 2 (``parser.error``) for options that do not go together (``--admin-name``
            without TLS, ``--metrics-host`` without ``--metrics-port``, part of TLS) or a token file
            that cannot be read or holds no token.
    """
    tls = tls_config(args, parser)
    token = None
    if args.admin_token_file is not None:
        try:
            token = read_token(args.admin_token_file)
        except (OSError, ValueError) as exc:
            _error(parser, f"{given_as(args, 'admin_token_file')}: {exc}")
    if args.admin_name and tls is None:
        _error(parser, "--admin-name needs --cert, --key and --ca: without TLS no caller has a certificate")
    if args.metrics_host is not None and args.metrics_port is None:
        _error(parser, "--metrics-host needs --metrics-port")
    return ServerSettings(args.host, args.port, args.advertise, tls, args.metrics_port, args.metrics_host, token,
                          tuple(args.admin_name), args.store)


def _error(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    parser.error(message)
