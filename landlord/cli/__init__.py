"""The command lines' shared parts: what makes every server command take the same options, read
them the same way, log the same way and print lists the same way.

One job per module:

- :mod:`~landlord.cli.config`: every option also from the environment and a TOML file, a flag
  winning over the environment, the environment over the file, the file over the default
  (:func:`layer_options`, :func:`resolve`), and ``--print-config``; usage errors in one line
  (:class:`OneLineParser`), naming an option as its source gave it (:func:`given_as`);
- :mod:`~landlord.cli.logs`: ``--log-level`` and ``--log-format text|json``, one format for every
  server and example, timestamps in UTC (:func:`configure_logging`);
- :mod:`~landlord.cli.output`: ``-o json`` on list commands, one JSON object per line
  (:func:`add_output_option`, :func:`write_json_lines`);
- :mod:`~landlord.cli.servers`: the option groups every server command takes in the same shape
  (listen and advertise, TLS, metrics and health, admin, store, logging: :func:`add_server_options`)
  and what they come to, checked (:func:`server_settings`);
- :mod:`~landlord.cli.systemd`: readiness for systemd (``Type=notify``): ``READY=1``,
  ``STOPPING=1`` and ``STATUS=`` sent to ``$NOTIFY_SOCKET``, nothing without it
  (:class:`SystemdNotifier`; :func:`serving_hooks`, what a server command hands its serve function).

``landlord/__main__.py`` and ``lookup/cli.py`` build their parsers from these. The room sits at
the top of landlord: it may import anything below it (the admin commands, serving, metrics), and
nothing but a command line imports it. servers.py builds on logs.py and config.py; the others import
none of each other.
"""

from __future__ import annotations

from .config import OneLineParser, given_as, layer_options, resolve, subcommand_parser
from .logs import add_logging_options, configure_logging, logging_from
from .output import add_output_option, write_json_lines
from .servers import (
    ServerSettings,
    add_server_options,
    add_tls_options,
    advertise_argument,
    any_port_argument,
    server_settings,
    tls_config,
)
from .systemd import SystemdNotifier, serving_hooks

__all__ = ["OneLineParser", "subcommand_parser", "layer_options", "resolve", "given_as", "add_logging_options",
           "configure_logging", "logging_from", "add_output_option", "write_json_lines", "ServerSettings",
           "add_server_options", "add_tls_options", "advertise_argument", "any_port_argument", "server_settings",
           "tls_config", "SystemdNotifier", "serving_hooks"]
