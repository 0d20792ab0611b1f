"""The command lines' shared parts: what makes every server command take the same options, read
them the same way, log the same way and print lists the same way.

One job per module:

- :mod:`~landlord.cli.config`: every option also from the environment and a TOML file, a flag
  winning over the environment, the environment over the file, the file over the default
  (:func:`layer_options`, :func:`resolve`), and ``--print-config``;
- :mod:`~landlord.cli.logs`: ``--log-level`` and ``--log-format text|json``, one format for every
  server and example, timestamps in UTC (:func:`configure_logging`);
- :mod:`~landlord.cli.output`: ``-o json`` on list commands, one JSON object per line
  (:func:`add_output_option`, :func:`write_json_lines`);
- :mod:`~landlord.cli.systemd`: readiness for systemd (``Type=notify``): ``READY=1``,
  ``STOPPING=1`` and ``STATUS=`` sent to ``$NOTIFY_SOCKET``, nothing without it
  (:class:`SystemdNotifier`).

``landlord/__main__.py`` and ``lookup/cli.py`` build their parsers from these. The room sits at
the top of landlord: it may import anything below it (the admin commands, serving, metrics), and
nothing but a command line imports it. Its modules import none of each other.
"""

from __future__ import annotations

from .config import layer_options, resolve
from .logs import add_logging_options, configure_logging, logging_from
from .output import add_output_option, write_json_lines
from .systemd import SystemdNotifier

__all__ = ["layer_options", "resolve", "add_logging_options", "configure_logging", "logging_from",
           "add_output_option", "write_json_lines", "SystemdNotifier"]
