"""Every option of a command from four places, the first that has it winning: the command line, the
environment, a TOML file, the default.

A command's parser is built with argparse as usual; :func:`layer_options`, called once every option
is added, makes each of them settable as ``PREFIX`` + its name in capitals (``--max-lease`` of
``LOOKUP_SERVE_``: ``LOOKUP_SERVE_MAX_LEASE``) and as a key of a TOML file (``max-lease = 60``), and
adds ``--config FILE`` and ``--print-config``. After parsing, :func:`resolve` fills in what the
command line left out and records where each value came from.

The file's keys are the long options without their dashes. It may serve several commands: the keys
at its top apply to the command being run, and a table named after the command (``[serve]``,
``[renewal-service]``) adds to them and wins over them; other tables are left to their commands. A
key that names no option of the command is an error (a typo would otherwise pass unseen).

Values from the environment and the file go through the option's own type, so a bad one is refused
as on the command line, in one line naming where it came from, with exit status 2. An empty
variable counts as unset (an ``env`` file's ``NAME=`` clears a value). A flag (``--broadcast``)
is ``true``/``false`` in the file and ``1``/``0``, ``true``/``false``, ``yes``/``no`` in the
environment; a repeatable option (``--admin-name``) is an array in the file and a comma-separated
list in the environment.

``--print-config`` prints the options in force as TOML, each with where it came from, and exits: the
output is itself a file ``--config`` reads. A check made after :func:`resolve` (a file an option names
cannot be read, say) names the option as its source has it, through :func:`given_as`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import pathlib
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, TextIO

__all__ = [
    "OneLineParser", "subcommand_parser", "layer_options", "resolve", "given_as", "Layered", "Option", "ConfigError",
    "read_config", "render_config", "FROM_FLAG", "FROM_DEFAULT", "EXIT_USAGE",
]

EXIT_USAGE = 2
FROM_FLAG = "command line"
FROM_DEFAULT = "default"
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
_LAYERED = "_layered"  # the namespace attribute resolve() finds the command's options under
_SKIPPED = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)


class OneLineParser(argparse.ArgumentParser):
    """A parser whose usage errors are one line, ``<prog>: error: <message> (see <prog> --help)``, exit
    status 2, with no usage block before it; its subcommands' parsers are of its class too."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def subcommand_parser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    """The parser of ``parser``'s subcommand ``name`` (its errors name it: ``lookup serve: error: ...``).

    Raises:
        LookupError: ``parser`` has no such subcommand.
    """
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            found: argparse.ArgumentParser = action.choices[name]
            return found
    raise LookupError(f"{parser.prog} has no subcommand {name!r}")


class ConfigError(ValueError):
    """A value from the environment or a file that the option refuses, or a file that cannot be read."""


@dataclass(frozen=True)
class Option:
    """One option as the layers see it: its dest, its long name, how it takes a value, its default."""

    dest: str
    name: str  # the long option without dashes: the file's key
    kind: str  # "value", "flag" (store_true/store_false) or "list" (append)
    default: Any
    convert: Callable[[str], Any] | None
    choices: Sequence[Any] | None
    flag_value: bool = True  # what the flag's presence means
    required: bool = False  # must come from somewhere: the command line, the environment or the file

    def env_name(self, prefix: str) -> str:
        """The variable that sets this option under ``prefix``: its name (``--no-announce``, not its
        dest) in capitals."""
        return prefix + self.name.upper().replace("-", "_")


@dataclass
class Layered:
    """A command's options with its prefix and table: what :func:`resolve` works from."""

    prog: str
    env_prefix: str
    table: str
    options: dict[str, Option] = field(default_factory=dict)


def layer_options(parser: argparse.ArgumentParser, *, env_prefix: str, table: str) -> Layered:
    """Make every option ``parser`` has so far settable from the environment and a file, and add
    ``--config`` and ``--print-config``. Call it once the command's options are all added.

    Args:
        parser: the command's parser (a subcommand's, for a command with subcommands).
        env_prefix: the variables' prefix, ending in ``_`` (``LOOKUP_SERVE_``).
        table: the file's table for this command (its name: ``serve``).

    Raises:
        ValueError: ``env_prefix`` not in capitals or not ending in ``_``, or ``table`` empty.
    """
    if not (env_prefix.endswith("_") and env_prefix.isupper()) or not table:
        raise ValueError(f"an environment prefix is capitals ending in '_', and a table a name: {env_prefix!r}, "
                         f"{table!r}")
    layered = Layered(parser.prog, env_prefix, table)
    for action in parser._actions:
        option = _option_of(action)
        if option is not None:
            layered.options[option.dest] = option
            if action.help:  # its %(default)s said now: the default is about to go
                action.help = parser._get_formatter()._expand_help(action).replace("%", "%%")
            action.default = argparse.SUPPRESS  # absent from the namespace unless given: so we know it was not
            action.required = False  # it may come from the environment or the file: resolve() checks
    group = parser.add_argument_group(
        "configuration", f"every option also from the environment ({env_prefix} and its name: --some-option is "
                         f"{env_prefix}SOME_OPTION) or from a TOML file (its name as a key, at the top or in a "
                         f"[{table}] table); a flag wins over the environment, the environment over the file")
    group.add_argument("--config", type=pathlib.Path, metavar="FILE",
                       help=f"read options from this TOML file (also {env_prefix}CONFIG)")
    group.add_argument("--print-config", action="store_true",
                       help="print the options in force as TOML, with where each came from, and exit")
    parser.set_defaults(**{_LAYERED: layered})
    return layered


def _option_of(action: argparse.Action) -> Option | None:
    """The layered form of ``action``; ``None`` for what is not an option with a long name (help,
    version, subcommands, positional arguments)."""
    if isinstance(action, _SKIPPED) or not action.option_strings:
        return None
    longs = [text for text in action.option_strings if text.startswith("--")]
    if not longs:
        return None
    name = longs[0][2:]
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        return Option(action.dest, name, "flag", action.default, None, None,
                      isinstance(action, argparse._StoreTrueAction))
    kind = "list" if isinstance(action, argparse._AppendAction) else "value"
    convert = action.type if callable(action.type) else None
    choices = None if action.choices is None else tuple(action.choices)
    return Option(action.dest, name, kind, action.default, convert, choices, required=action.required)


def resolve(args: argparse.Namespace, *, environ: Mapping[str, str] | None = None,
            out: TextIO | None = None) -> argparse.Namespace:
    """Fill in the options the command line left out, from the environment, the file, the default;
    record where each came from in ``args.config_sources`` (and how an error names it, for
    :func:`given_as`). With ``--print-config``, print them and exit. A command parsed without
    :func:`layer_options` is returned as it is.

    Args:
        args: what the parser returned.
        environ: the environment (default ``os.environ``).
        out: where ``--print-config`` prints (default stdout).

    Raises:
        SystemExit: status 2 with one line on stderr for a bad value, file or key (naming where it
            came from); status 0 after ``--print-config``.
    """
    layered: Layered | None = getattr(args, _LAYERED, None)
    if layered is None:
        return args
    delattr(args, _LAYERED)
    environ = os.environ if environ is None else environ
    try:
        sources = _fill(args, layered, environ)
    except ConfigError as exc:
        _fail(layered.prog, str(exc))
    args.config_sources = sources
    args.option_origins = {dest: _origin(layered, dest, source) for dest, source in sources.items()
                           if dest in layered.options}
    if getattr(args, "print_config", False):
        (out or sys.stdout).write(render_config(args, layered))
        raise SystemExit(0)
    return args


def given_as(args: argparse.Namespace, dest: str) -> str:
    """How an error names the option whose dest is ``dest``: as its value was given, ``--store``,
    ``$LOOKUP_SERVE_STORE`` or ``/etc/lookup.toml: store`` (``--`` and the dest, for a namespace
    :func:`resolve` did not fill)."""
    origins: dict[str, str] = getattr(args, "option_origins", {})
    return origins.get(dest, "--" + dest.replace("_", "-"))


def _origin(layered: Layered, dest: str, source: str) -> str:
    """An option's name as its source has it, from the source :func:`_fill` recorded."""
    name = layered.options[dest].name
    if source.startswith("$"):
        return source
    return f"--{name}" if source in (FROM_FLAG, FROM_DEFAULT) else f"{source}: {name}"


def _fail(prog: str, message: str) -> NoReturn:
    sys.stderr.write(f"{prog}: error: {message}\n")
    raise SystemExit(EXIT_USAGE)


def _fill(args: argparse.Namespace, layered: Layered, environ: Mapping[str, str]) -> dict[str, str]:
    """Set every option ``args`` lacks; the source of each, by dest."""
    config_path = getattr(args, "config", None)
    config_source = FROM_FLAG
    if config_path is None and environ.get(layered.env_prefix + "CONFIG"):
        config_path = pathlib.Path(environ[layered.env_prefix + "CONFIG"])
        config_source = f"${layered.env_prefix}CONFIG"
    args.config = config_path
    config_name = "--config" if config_source == FROM_FLAG else config_source
    from_file = read_config(config_path, layered, named=config_name) if config_path is not None else {}
    sources = {"config": config_source if config_path is not None else FROM_DEFAULT}
    for dest, option in layered.options.items():
        if hasattr(args, dest):
            sources[dest] = FROM_FLAG
            continue
        variable = option.env_name(layered.env_prefix)
        if environ.get(variable):
            setattr(args, dest, _from_text(option, environ[variable], f"${variable}"))
            sources[dest] = f"${variable}"
        elif option.name in from_file:
            where = f"{config_path}: {option.name}"
            setattr(args, dest, _from_toml(option, from_file[option.name], where))
            sources[dest] = str(config_path)
        elif option.required:
            raise ConfigError(f"--{option.name} is required (or ${variable}, or {option.name} in a --config file)")
        else:  # as argparse does, a default given as text goes through the type
            default = option.default
            setattr(args, dest, option.convert(default) if isinstance(default, str) and option.convert else default)
            sources[dest] = FROM_DEFAULT
    return sources


def read_config(path: pathlib.Path, layered: Layered, *, named: str = "--config") -> dict[str, Any]:
    """The keys of the TOML file at ``path`` that apply to ``layered``'s command: its top-level keys,
    and over them those of the table named after the command.

    Args:
        path: the file.
        layered: the command's options.
        named: how an error names where the path came from (``$LOOKUP_SERVE_CONFIG``).

    Raises:
        ConfigError: the file cannot be read or is not TOML, the command's table is not a table, or a
            key names no option of the command.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{named} {path}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        document = _toml_loads(text)
    except ValueError as exc:  # tomllib.TOMLDecodeError is a ValueError
        raise ConfigError(f"{path}: not TOML: {exc}") from None
    table = document.get(layered.table, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {layered.table} must be a table of options, not {type(table).__name__}")
    keys = {key: value for key, value in document.items() if not isinstance(value, dict)}
    keys.update(table)
    known = {option.name for option in layered.options.values()}
    unknown = sorted(set(keys) - known - {"config", "print-config"})
    if unknown:
        raise ConfigError(f"{path}: {', '.join(unknown)}: not an option of this command (see {layered.prog} --help)")
    for key in ("config", "print-config"):
        if key in keys:
            raise ConfigError(f"{path}: {key}: only on the command line")
    return keys


def _toml_loads(text: str) -> dict[str, Any]:
    # the standard library's from 3.11; on 3.10 its backport, tomli (a dependency there only)
    module = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")
    loads: Callable[[str], dict[str, Any]] = module.loads
    return loads(text)


def _from_text(option: Option, text: str, where: str) -> Any:
    """An environment variable's value for ``option``."""
    if option.kind == "flag":
        word = text.strip().lower()
        if word not in _TRUE + _FALSE:
            raise ConfigError(f"{where}: {text!r} is not a flag's value: one of {', '.join(_TRUE + _FALSE)}")
        return (word in _TRUE) == option.flag_value
    if option.kind == "list":
        return [_converted(option, item.strip(), where) for item in text.split(",")]
    return _converted(option, text, where)


def _from_toml(option: Option, value: Any, where: str) -> Any:
    """A file's value for ``option``."""
    if option.kind == "flag":
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: a flag is true or false, not {value!r}")
        return value == option.flag_value
    if option.kind == "list":
        items = value if isinstance(value, list) else [value]
        return [_converted(option, _scalar_text(item, where), where) for item in items]
    return _converted(option, _scalar_text(value, where), where)


def _scalar_text(value: Any, where: str) -> str:
    """A TOML string or number as the text the option's type reads."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ConfigError(f"{where}: expected a string or a number, not {value!r}")
    return value if isinstance(value, str) else repr(value)


def _converted(option: Option, text: str, where: str) -> Any:
    """``text`` through the option's type and choices, as argparse would; ``where`` names its source."""
    value: Any = text
    if option.convert is not None:
        try:
            value = option.convert(text)
        except (argparse.ArgumentTypeError, TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: {exc or f'invalid value {text!r}'}") from None
    if option.choices is not None and value not in option.choices:
        raise ConfigError(f"{where}: {text!r} is not one of {', '.join(map(str, option.choices))}")
    return value


def render_config(args: argparse.Namespace, layered: Layered) -> str:
    """The options in force as TOML, each line saying where its value came from; an option with no
    value is a comment. What :func:`read_config` reads back."""
    sources: dict[str, str] = getattr(args, "config_sources", {})
    lines = [f"# {layered.prog}: the options in force (a flag wins over ${layered.env_prefix}NAME, which wins over "
             f"the --config file, which wins over the default)"]
    for dest, option in layered.options.items():
        value = getattr(args, dest, None)
        if option.kind == "flag":  # the key is the flag's name: --no-announce given is no-announce = true
            value = value == option.flag_value
        source = sources.get(dest, FROM_DEFAULT)
        text = _toml_value(value)
        lines.append(f"# {option.name} = (not set)  # {source}" if text is None
                     else f"{option.name} = {text}  # {source}")
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str | None:
    """``value`` as a TOML value; ``None`` for no value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf") if value == value else "nan"
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_toml_value(item) for item in value]
        return "[" + ", ".join(item for item in items if item is not None) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a TOML basic string
