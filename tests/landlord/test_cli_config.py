"""landlord.cli.config: a flag wins over the environment, which wins over the file, which wins over
the default; bad values anywhere are one line naming their source and exit 2; --print-config reads back."""

from __future__ import annotations

import argparse
import io
import pathlib
import sys

import pytest

from landlord.admin.commands import port_argument, seconds_argument
from landlord.cli.config import FROM_DEFAULT, FROM_FLAG, ConfigError, given_as, layer_options, read_config, resolve

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PREFIX = "TOY_SERVE_"


def parser() -> argparse.ArgumentParser:
    """A toy server command with every kind of option a real one has."""
    parser = argparse.ArgumentParser(prog="toy serve")
    parser.add_argument("--host", default="127.0.0.1", help="listen here (default %(default)s)")
    parser.add_argument("--port", type=port_argument, default=4160, help="port (default %(default)s)")
    parser.add_argument("--max-lease", type=seconds_argument, default=3600.0, help="(default %(default)g)")
    parser.add_argument("--store", type=pathlib.Path, default=None)
    parser.add_argument("--reaper", choices=("sleeper", "lazy"), default="sleeper")
    parser.add_argument("--no-announce", dest="discovery", action="store_false")
    parser.add_argument("--broadcast", action="store_true")
    parser.add_argument("--admin-name", action="append", default=[])
    parser.add_argument("--text-default", type=int, default="7")
    layer_options(parser, env_prefix=PREFIX, table="serve")
    return parser


def parsed(argv: list[str], environ: dict[str, str] | None = None) -> argparse.Namespace:
    return resolve(parser().parse_args(argv), environ=environ or {})


def failure(argv: list[str], environ: dict[str, str] | None = None,
            capsys: pytest.CaptureFixture[str] | None = None) -> tuple[int, str]:
    with pytest.raises(SystemExit) as raised:
        parsed(argv, environ)
    assert capsys is not None
    err = capsys.readouterr().err
    return int(raised.value.code or 0), err


def write(tmp_path: pathlib.Path, text: str) -> pathlib.Path:
    path = tmp_path / "toy.toml"
    path.write_text(text)
    return path


def test_defaults_apply_when_nothing_is_given() -> None:
    args = parsed([])
    assert (args.host, args.port, args.max_lease, args.store, args.reaper) == ("127.0.0.1", 4160, 3600.0, None,
                                                                              "sleeper")
    assert args.discovery is True and args.broadcast is False and args.admin_name == []
    assert args.text_default == 7  # a default given as text goes through the type, as in argparse
    assert set(args.config_sources.values()) == {FROM_DEFAULT}


def test_a_flag_wins_over_the_environment_which_wins_over_the_file(tmp_path: pathlib.Path) -> None:
    config = write(tmp_path, 'host = "file.example"\nport = 1111\nmax-lease = 30\nreaper = "lazy"\n')
    environ = {"TOY_SERVE_PORT": "2222", "TOY_SERVE_MAX_LEASE": "40"}
    args = parsed(["--config", str(config), "--max-lease", "50"], environ)
    assert (args.host, args.port, args.max_lease, args.reaper) == ("file.example", 2222, 50.0, "lazy")
    assert args.config_sources["host"] == str(config)
    assert args.config_sources["port"] == "$TOY_SERVE_PORT"
    assert args.config_sources["max_lease"] == FROM_FLAG
    assert args.config_sources["store"] == FROM_DEFAULT


def test_the_config_file_may_come_from_the_environment(tmp_path: pathlib.Path) -> None:
    config = write(tmp_path, "port = 1111\n")
    args = parsed([], {"TOY_SERVE_CONFIG": str(config)})
    assert args.port == 1111 and args.config == config and args.config_sources["config"] == "$TOY_SERVE_CONFIG"


def test_the_commands_table_adds_to_and_wins_over_the_top_and_other_tables_are_left(tmp_path: pathlib.Path) -> None:
    config = write(tmp_path, 'port = 1111\nhost = "top"\n[serve]\nport = 3333\n[list]\nlimit = 5\n')
    args = parsed(["--config", str(config)])
    assert (args.host, args.port) == ("top", 3333)


def test_flags_and_lists_from_the_environment_and_the_file(tmp_path: pathlib.Path) -> None:
    args = parsed([], {"TOY_SERVE_NO_ANNOUNCE": "yes", "TOY_SERVE_BROADCAST": "1", "TOY_SERVE_ADMIN_NAME": "a, b"})
    assert args.discovery is False and args.broadcast is True and args.admin_name == ["a", "b"]
    config = write(tmp_path, 'no-announce = false\nbroadcast = true\nadmin-name = ["ops"]\n')
    args = parsed(["--config", str(config)])
    assert args.discovery is True and args.broadcast is True and args.admin_name == ["ops"]


def test_an_empty_variable_is_unset() -> None:
    args = parsed([], {"TOY_SERVE_PORT": "", "TOY_SERVE_STORE": ""})
    assert args.port == 4160 and args.store is None


@pytest.mark.parametrize(("argv", "environ", "text", "says"), [
    ([], {"TOY_SERVE_PORT": "http"}, "", "$TOY_SERVE_PORT: not a port number: 'http'"),
    ([], {"TOY_SERVE_PORT": "70000"}, "", "$TOY_SERVE_PORT: a port is 1 to 65535, not 70000"),
    ([], {"TOY_SERVE_MAX_LEASE": "-1"}, "", "$TOY_SERVE_MAX_LEASE: seconds must be positive"),
    ([], {"TOY_SERVE_REAPER": "fast"}, "", "$TOY_SERVE_REAPER: 'fast' is not one of sleeper, lazy"),
    ([], {"TOY_SERVE_BROADCAST": "maybe"}, "", "$TOY_SERVE_BROADCAST: 'maybe' is not a flag's value: one of 1, true"),
    (["--config", "{file}"], {}, 'port = "x"\n', "toy.toml: port: not a port number: 'x'"),
    (["--config", "{file}"], {}, "port = 0\n", "toy.toml: port: a port is 1 to 65535, not 0"),
    (["--config", "{file}"], {}, "port = true\n", "toy.toml: port: expected a string or a number, not True"),
    (["--config", "{file}"], {}, "broadcast = 1\n", "toy.toml: broadcast: a flag is true or false, not 1"),
    (["--config", "{file}"], {}, 'reaper = "fast"\n', "toy.toml: reaper: 'fast' is not one of sleeper, lazy"),
    (["--config", "{file}"], {}, "prot = 1\n", "toy.toml: prot: not an option of this command (see toy serve --help)"),
    (["--config", "{file}"], {}, "port = = 1\n", "toy.toml: not TOML"),
    (["--config", "{file}"], {}, "serve = 1\n", "toy.toml: serve must be a table of options"),
    (["--config", "{file}"], {}, "print-config = true\n", "toy.toml: print-config: only on the command line"),
    (["--config", "{missing}"], {}, "", "--config {missing}: cannot read it: No such file or directory"),
])
def test_a_bad_value_is_one_line_naming_its_source_and_exit_2(
        tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], argv: list[str], environ: dict[str, str],
        text: str, says: str) -> None:
    config = write(tmp_path, text)
    missing = tmp_path / "missing.toml"
    argv = [arg.format(file=config, missing=missing) for arg in argv]
    code, err = failure(argv, environ, capsys)
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("toy serve: error: ") and says.format(missing=missing) in err, err


def test_a_bad_flag_on_the_command_line_is_still_argparses_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = failure(["--port", "x"], {}, capsys)
    assert code == 2 and "argument --port: not a port number" in err


def test_print_config_prints_toml_with_sources_that_reads_back(tmp_path: pathlib.Path) -> None:
    config = write(tmp_path, 'host = "file.example"\nadmin-name = ["a", "b \\"quoted\\""]\n')
    out = io.StringIO()
    with pytest.raises(SystemExit) as raised:
        resolve(parser().parse_args(["--config", str(config), "--print-config", "--no-announce", "--port", "99"]),
                environ={"TOY_SERVE_MAX_LEASE": "12.5"}, out=out)
    assert raised.value.code == 0
    text = out.getvalue()
    assert 'host = "file.example"  # ' + str(config) in text
    assert "port = 99  # command line" in text and "max-lease = 12.5  # $TOY_SERVE_MAX_LEASE" in text
    assert "# store = (not set)  # default" in text
    assert tomllib.loads(text) == {"host": "file.example", "port": 99, "max-lease": 12.5, "reaper": "sleeper",
                                   "no-announce": True, "broadcast": False, "admin-name": ["a", 'b "quoted"'],
                                   "text-default": 7}
    again = tmp_path / "again.toml"
    again.write_text(text)
    args = parsed(["--config", str(again)])
    assert (args.host, args.port, args.max_lease, args.discovery, args.admin_name) == (
        "file.example", 99, 12.5, False, ["a", 'b "quoted"'])


def test_help_still_shows_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["--help"])
    out = capsys.readouterr().out
    assert "(default 4160)" in out and "(default 3600)" in out and "SUPPRESS" not in out
    assert "TOY_SERVE_SOME_OPTION" in out and "--print-config" in out


def test_a_parser_without_layers_is_left_alone() -> None:
    plain = argparse.ArgumentParser()
    plain.add_argument("--port", type=int, default=1)
    args = resolve(plain.parse_args([]), environ={"TOY_SERVE_PORT": "2"})
    assert args.port == 1 and not hasattr(args, "config_sources")


def test_read_config_names_the_file_in_its_errors(tmp_path: pathlib.Path) -> None:
    from landlord.cli.config import Layered
    with pytest.raises(ConfigError, match="cannot read it"):
        read_config(tmp_path / "nowhere.toml", Layered("toy", PREFIX, "serve"))


def test_layer_options_refuses_a_bad_prefix() -> None:
    with pytest.raises(ValueError, match="capitals ending in '_'"):
        layer_options(argparse.ArgumentParser(), env_prefix="toy_", table="serve")
    with pytest.raises(ValueError, match="capitals ending in '_'"):
        layer_options(argparse.ArgumentParser(), env_prefix="TOY_", table="")


def test_a_required_option_may_come_from_any_source_but_must_come(
        tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    def needs_port() -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser(prog="toy list")
        parser.add_argument("--port", type=port_argument, required=True)
        layer_options(parser, env_prefix="TOY_LIST_", table="list")
        return parser

    assert resolve(needs_port().parse_args([]), environ={"TOY_LIST_PORT": "7"}).port == 7
    assert resolve(needs_port().parse_args(["--config", str(write(tmp_path, "port = 8"))]), environ={}).port == 8
    with pytest.raises(SystemExit) as raised:
        resolve(needs_port().parse_args([]), environ={})
    assert raised.value.code == 2
    assert capsys.readouterr().err == ("toy list: error: --port is required (or $TOY_LIST_PORT, or port in a "
                                       "--config file)\n")


def test_an_option_is_named_as_its_source_gave_it(tmp_path: pathlib.Path) -> None:
    config = write(tmp_path, "store = 'kept.sqlite'\n")
    args = parsed(["--config", str(config), "--port", "1"], {PREFIX + "MAX_LEASE": "60"})
    assert [given_as(args, dest) for dest in ("port", "max_lease", "store", "reaper")] == [
        "--port", "$TOY_SERVE_MAX_LEASE", f"{config}: store", "--reaper"]  # the last: its default
    assert given_as(argparse.Namespace(), "admin_token_file") == "--admin-token-file"  # not resolved


def test_a_config_file_from_the_environment_that_cannot_be_read_names_the_variable(
        tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = failure([], {PREFIX + "CONFIG": str(tmp_path / "missing.toml")}, capsys)
    assert code == 2 and err.startswith(f"toy serve: error: ${PREFIX}CONFIG {tmp_path / 'missing.toml'}: cannot read")
