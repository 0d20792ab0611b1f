"""deploy/: the systemd units pass ``systemd-analyze verify`` and its offline security check, run the
console scripts on the example configs, and keep their store in their state directory; the example
configs are read by their commands' own parsers; the compose file's replicas and etcd members agree
with each other and its commands parse; the container file's health check works against a real
server. The servers' readiness notification, end to end, waits for the command lines' wiring."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator

import pytest
from conftest import ChildProcess, skip_unless_required

from landlord.__main__ import build_parser as landlord_parser
from landlord.cli import layer_options, resolve
from landlord.cli.systemd import NOTIFY_SOCKET
from lookup.cli import build_parser as lookup_parser

if sys.version_info >= (3, 11):
    import tomllib
else:  # the backport, a dependency on 3.10
    import tomli as tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
UNITS = ("lookup.service", "landlord-renewal.service")
CONFIGS = {"lookup.toml": "lookup serve", "renewal-service.toml": "landlord renewal-service"}
# a command line as "<script> <subcommand>", and the parser of the script
PARSERS: dict[str, Callable[[], argparse.ArgumentParser]] = {"lookup": lookup_parser, "landlord": landlord_parser}
# Options issue 27 adds to the command lines that are not on them yet: a key or flag naming one is let
# through. test_pending_options_are_not_options_yet fails once one is added, so that this list is
# emptied as the command lines get them (and every key is then checked).
PENDING: dict[str, set[str]] = {"lookup serve": set(), "landlord renewal-service": set()}
REQUIRE_SYSTEMD = "LANDLORD_REQUIRE_SYSTEMD_ANALYZE"  # "1": a missing systemd-analyze fails, not skips


# -- the command lines, as the files use them ----------------------------------------------------------

def command_parser(command: str) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The script's parser and the subcommand's, the latter taking ``--config`` (layered here if the
    command line does not do it yet: it will, with landlord.cli.layer_options)."""
    script, subcommand = command.split()
    parser = PARSERS[script]()
    commands, = (action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    sub = commands.choices[subcommand]
    if "--config" not in sub._option_string_actions:
        layer_options(sub, env_prefix="DEPLOY_TEST_", table=subcommand)
    return parser, sub


def long_options(sub: argparse.ArgumentParser) -> set[str]:
    return {text[2:] for text in sub._option_string_actions if text.startswith("--")}


def without_pending(argv: list[str], command: str) -> list[str]:
    """``argv`` less the options not on the command line yet (each ``--name=value``, or ``--name value``)."""
    kept, skip_next = [], False
    for arg in argv:
        name = arg[2:].split("=", 1)[0] if arg.startswith("--") else None
        if skip_next:
            skip_next = False
        elif name in PENDING[command]:
            skip_next = "=" not in arg
        else:
            kept.append(arg)
    return kept


def parsed(command: str, argv: list[str]) -> argparse.Namespace:
    """``argv`` (after the script's name) through the command's real parser; its pending options dropped."""
    parser, _ = command_parser(command)
    return parser.parse_args(without_pending(argv, command))


def test_pending_options_are_not_options_yet() -> None:
    for command, names in PENDING.items():
        wired = sorted(names & long_options(command_parser(command)[1]))
        assert not wired, f"{command} has --{', --'.join(wired)} now: drop them from PENDING in tests/test_deploy.py"


# -- the systemd units ---------------------------------------------------------------------------------

def unit_settings(text: str) -> dict[str, dict[str, list[str]]]:
    """A unit file's settings: section, key, every value given (comments and blank lines left out)."""
    settings: dict[str, dict[str, list[str]]] = {}
    section = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = settings.setdefault(line.strip("[]"), {})
            continue
        assert section is not None, f"a setting before any section: {line}"
        key, value = (part.strip() for part in line.split("=", 1))
        section.setdefault(key, []).append(value)
    return settings


def exec_start(unit: str) -> list[str]:
    value, = unit_settings((DEPLOY / unit).read_text())["Service"]["ExecStart"]
    return shlex.split(value)


def systemd_analyze() -> str:
    found = shutil.which("systemd-analyze")
    skip_unless_required(None if found else "no systemd-analyze on this machine", env=REQUIRE_SYSTEMD,
                         tests="systemd unit", needs="systemd-analyze (Debian package: systemd)")
    assert found is not None
    return found


def runnable_unit(unit: str, directory: pathlib.Path, *, with_credentials: bool = False) -> pathlib.Path:
    """The unit written in ``directory`` with its program (/opt/landlord/bin/...) replaced by one that
    exists here, so that verify checks it; optionally with its commented LoadCredential= lines on."""
    text = (DEPLOY / unit).read_text()
    program = exec_start(unit)[0]
    here = pathlib.Path(sys.executable).with_name(pathlib.Path(program).name)
    text = text.replace(program, str(here if here.exists() else pathlib.Path(sys.executable)))
    if with_credentials:
        text = re.sub(r"(?m)^#(LoadCredential=)", r"\1", text)
    path = directory / unit
    path.write_text(text)
    return path


@pytest.mark.parametrize("with_credentials", [False, True], ids=["as-shipped", "with-credentials"])
@pytest.mark.parametrize("unit", UNITS)
def test_units_pass_systemd_analyze_verify(unit: str, with_credentials: bool, tmp_path: pathlib.Path) -> None:
    analyze = systemd_analyze()
    path = runnable_unit(unit, tmp_path, with_credentials=with_credentials)
    done = subprocess.run([analyze, "verify", "--man=no", "--generators=no", str(path)],
                          capture_output=True, text=True, timeout=60)
    # verify exits 0 on an unknown key or a bad value, which it only warns of: its lines on our unit count
    ours = [line for line in (done.stdout + done.stderr).splitlines() if unit in line]
    assert done.returncode == 0 and not ours, done.stdout + done.stderr


@pytest.mark.parametrize("unit", UNITS)
def test_units_are_sandboxed(unit: str) -> None:
    """systemd's own rating of the unit's sandbox: 2.0 at most of 10 ("OK")."""
    analyze = systemd_analyze()
    done = subprocess.run([analyze, "security", "--offline=yes", "--threshold=20", str(DEPLOY / unit)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr


@pytest.mark.parametrize(("unit", "config"), list(zip(UNITS, CONFIGS)))
def test_units_are_notify_services_running_their_command_on_their_config(unit: str, config: str) -> None:
    service = unit_settings((DEPLOY / unit).read_text())["Service"]
    assert service["Type"] == ["notify"] and service["NotifyAccess"] == ["main"]
    assert service["Restart"] == ["on-failure"] and service["ProtectSystem"] == ["strict"]
    program, *argv = exec_start(unit)
    command = f"{pathlib.Path(program).name} {argv[0]}"
    assert command == CONFIGS[config] and argv[1:] == ["--config", f"/etc/landlord/{config}"]
    assert parsed(command, argv).config == pathlib.Path(f"/etc/landlord/{config}")
    store = pathlib.PurePosixPath(tomllib.loads((DEPLOY / config).read_text())["store"])
    state, = service["StateDirectory"]
    assert store.parent == pathlib.PurePosixPath("/var/lib", state), "the store is kept in the state directory"


# -- the example configuration files -------------------------------------------------------------------

COMMENTED_KEY = re.compile(r"(?m)^# ([a-z][a-z-]*) = ")


def config_keys(text: str) -> set[str]:
    document = tomllib.loads(text)
    assert all(not isinstance(value, dict) for value in document.values()), "one command's file: no tables"
    return set(document)


@pytest.mark.parametrize("uncommented", [False, True], ids=["as-shipped", "comments-uncommented"])
@pytest.mark.parametrize("config", CONFIGS)
def test_config_is_read_by_its_command(config: str, uncommented: bool, tmp_path: pathlib.Path) -> None:
    """Every key is an option of the command, and its value one the option takes (read through the
    command's parser and landlord.cli.resolve); the commented keys too, uncommented."""
    command = CONFIGS[config]
    text = (DEPLOY / config).read_text()
    if uncommented:
        assert COMMENTED_KEY.search(text), "no commented key to check"
        text = COMMENTED_KEY.sub(r"\1 = ", text)
    keys = config_keys(text)
    unknown = keys - long_options(command_parser(command)[1])
    assert unknown <= PENDING[command], f"{config}: {sorted(unknown - PENDING[command])}: no such option of {command}"
    checked = tmp_path / config
    checked.write_text("".join(line for line in text.splitlines(keepends=True)
                               if line.split(" = ")[0] not in PENDING[command]))
    parser, _ = command_parser(command)
    args = resolve(parser.parse_args([command.split()[1], "--config", str(checked)]), environ={})
    from_file = {dest for dest, source in args.config_sources.items() if source == str(checked)}
    assert len(from_file) == len(keys - unknown)


def test_the_replica_config_of_the_deploy_doc_is_read_by_lookup_serve(tmp_path: pathlib.Path) -> None:
    """docs/deploy.md's TOML (a replica's lookup.toml) is a config `lookup serve` reads, for a replica."""
    blocks = re.findall(r"(?ms)^```toml\n(.*?)^```", (ROOT / "docs" / "deploy.md").read_text())
    assert blocks, "no TOML in docs/deploy.md"
    for number, block in enumerate(blocks):
        keys = config_keys(block)
        kept = "".join(line for line in block.splitlines(keepends=True)
                       if line.split(" = ")[0] not in PENDING["lookup serve"])
        path = tmp_path / f"replica{number}.toml"
        path.write_text(kept)
        parser, _ = command_parser("lookup serve")
        args = resolve(parser.parse_args(["serve", "--config", str(path)]), environ={})
        assert {"etcd", "group", "replicas"} <= keys and "store" not in keys
        assert f"{args.advertise}:{args.port}" in args.replicas.split(",")


# -- the compose file ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def compose() -> dict[str, object]:
    yaml = pytest.importorskip("yaml", reason="PyYAML reads the compose file (pip install -e '.[test]')")
    document = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert isinstance(document, dict)
    return document


def services(compose: dict[str, object], prefix: str) -> dict[str, dict[str, object]]:
    found = compose["services"]
    assert isinstance(found, dict)
    return {name: service for name, service in found.items() if name.startswith(prefix)}


def flags(argv: list[str]) -> dict[str, str]:
    """``--name=value`` arguments as a dict."""
    return dict(arg[2:].split("=", 1) for arg in argv if arg.startswith("--") and "=" in arg)


def test_compose_runs_three_etcd_members_that_name_each_other(compose: dict[str, object]) -> None:
    members = services(compose, "etcd")
    assert sorted(members) == ["etcd1", "etcd2", "etcd3"]
    for name, service in members.items():
        command = service["command"]
        assert isinstance(command, list) and command[0].endswith("/etcd")
        given = flags(command)
        assert given["name"] == name
        assert given["advertise-client-urls"] == f"http://{name}:2379"
        assert given["initial-advertise-peer-urls"] == f"http://{name}:2380"
        assert given["initial-cluster"] == ",".join(f"{member}=http://{member}:2380" for member in sorted(members))
        assert given["auto-compaction-mode"] == "periodic" and given["auto-compaction-retention"]
        assert f"{name}:/etcd-data" in service["volumes"]


def test_compose_runs_three_lookup_replicas_of_one_group(compose: dict[str, object]) -> None:
    """Each replica's command parses as `lookup serve`, names every etcd member and every replica,
    itself among them, and serves the health check its container checks."""
    replicas = services(compose, "lookup")
    assert sorted(replicas) == ["lookup1", "lookup2", "lookup3"]
    members = {f"http://{name}:2379" for name in services(compose, "etcd")}
    addresses, groups, named = set(), set(), []
    for name, service in replicas.items():
        assert service["build"] == {"context": "..", "dockerfile": "deploy/Containerfile"}
        command = service["command"]
        assert isinstance(command, list)
        args = parsed("lookup serve", command)
        assert set(args.etcd.split(",")) == members and args.advertise == name and not args.discovery
        assert f"{args.advertise}:{args.port}" in args.replicas.split(",")
        addresses.add(f"{args.advertise}:{args.port}")
        groups.add(args.group)
        named.append(set(args.replicas.split(",")))
        assert service["environment"] == {"HEALTHCHECK_URL": f"http://127.0.0.1:{args.metrics_port}/healthz"}
        assert args.metrics_host == "0.0.0.0"
        assert set(service["depends_on"]) == set(services(compose, "etcd"))
    assert len(groups) == 1 and all(replicas_named == addresses for replicas_named in named)


def test_docker_compose_reads_the_file() -> None:
    docker = shutil.which("docker")
    plugin = docker and subprocess.run([docker, "compose", "version"], capture_output=True, timeout=30).returncode == 0
    if not plugin:
        pytest.skip("no `docker compose` on this machine (the file is read with PyYAML above)")
    done = subprocess.run([docker, "compose", "-f", str(DEPLOY / "compose.yaml"), "config", "--quiet"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


# -- the container file --------------------------------------------------------------------------------

def instructions(text: str) -> list[tuple[str, str]]:
    """The container file's instructions, continuation lines joined: (INSTRUCTION, the rest)."""
    joined = re.sub(r"\\\n\s*", " ", "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")))
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in joined.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def containerfile() -> list[tuple[str, str]]:
    return instructions((DEPLOY / "Containerfile").read_text())


def one_instruction(containerfile: list[tuple[str, str]], name: str) -> str:
    found = [rest for instruction, rest in containerfile if instruction == name]
    assert len(found) == 1, f"{name}: {found}"
    return found[0]


def test_the_image_is_slim_python_non_root_with_the_extras_it_needs(containerfile: list[tuple[str, str]]) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    bases = [rest.split()[0] for instruction, rest in containerfile if instruction == "FROM"]
    assert bases and all(re.fullmatch(r"python:\$\{PYTHON_VERSION\}-slim", base) for base in bases)
    user = one_instruction(containerfile, "USER").split(":")[0]
    assert user.isdigit() and int(user) != 0
    installs = [rest for instruction, rest in containerfile if instruction == "RUN" and "pip install" in rest]
    extras, = re.findall(r'pip install [^"]*"\$1\[([a-z,]+)\]"', " ".join(installs))
    assert set(extras.split(",")) == {"etcd", "metrics"} <= set(project["optional-dependencies"])
    entrypoint = json.loads(one_instruction(containerfile, "ENTRYPOINT"))
    assert entrypoint == ["lookup"] and "lookup" in project["scripts"]
    args = parsed("lookup serve", json.loads(one_instruction(containerfile, "CMD")))
    url = re.search(r"HEALTHCHECK_URL=(\S+)", one_instruction(containerfile, "ENV"))
    assert url and url.group(1) == f"http://127.0.0.1:{args.metrics_port}/healthz"


def test_the_build_context_lets_in_what_the_image_copies(containerfile: list[tuple[str, str]]) -> None:
    allowed = {line[1:] for line in (DEPLOY / "Containerfile.dockerignore").read_text().splitlines()
               if line.startswith("!")}
    copied = {source for instruction, rest in containerfile if instruction == "COPY" and "--from" not in rest
              for source in rest.split()[:-1]}
    assert copied == allowed and all((ROOT / source).exists() for source in copied)


@pytest.fixture(scope="module")
def health_check(containerfile: list[tuple[str, str]]) -> Callable[[str], subprocess.CompletedProcess[str]]:
    """The container's HEALTHCHECK command, run here with this Python against a URL."""
    check = one_instruction(containerfile, "HEALTHCHECK")
    argv = json.loads(check[check.index("CMD") + 3:])
    assert argv[0] == "python"

    def run(url: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *argv[1:]], env={**os.environ, "HEALTHCHECK_URL": url},
                              capture_output=True, text=True, timeout=30)
    return run


def test_the_health_check_passes_on_a_serving_lookup_and_fails_without_one(
        health_check: Callable[[str], subprocess.CompletedProcess[str]]) -> None:
    with ChildProcess("-m", "lookup", "serve", "--port", "0", "--metrics-port", "0", "--no-announce") as server:
        metrics = server.wait_for(r"metrics at (http://\S+)/metrics", timeout=60).group(1)
        passed = health_check(f"{metrics}/healthz")
        assert passed.returncode == 0, passed.stderr
        assert health_check(f"{metrics}/no-such-page").returncode != 0  # an HTTP error fails it too
        server.stop()
    assert health_check(f"{metrics}/healthz").returncode != 0


# -- backups -------------------------------------------------------------------------------------------

HOLDER = """
import sys, time
from landlord.grantor.store import LeaseStore
store = LeaseStore(sys.argv[1], name="lookup")
now = time.time()
store.put("cookie-1", now + 3600, {"held": True}, now)
print("written", flush=True)
sys.stdin.readline()  # the store stays open, its write in the WAL, until told
store.close()
"""


def test_sqlite3_backs_up_a_store_while_its_server_holds_it(tmp_path: pathlib.Path) -> None:
    """What docs/deploy.md tells an operator to run: `sqlite3 STORE ".backup COPY"`, the store in use."""
    import time

    from landlord.grantor.store import LeaseStore

    program = shutil.which("sqlite3")
    if program is None:
        pytest.skip("no sqlite3 program on this machine (Debian package: sqlite3)")
    store, copy = tmp_path / "registrations.sqlite3", tmp_path / "backup.sqlite3"
    with ChildProcess("-c", HOLDER, str(store), stdin=True) as holder:
        holder.wait_for("^written$", timeout=60)
        done = subprocess.run([program, str(store), f".backup {copy}"], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        assert holder.process.poll() is None, "the store was in use throughout"
        holder.send("")
    restored = LeaseStore(copy, name="lookup")
    try:
        (cookie, remaining, resource), = restored.leases(time.time())
    finally:
        restored.close()
    assert cookie == "cookie-1" and 3000 < remaining <= 3600 and resource == {"held": True}


# -- readiness, end to end (the lead wires SystemdNotifier into the command lines) ---------------------

@pytest.fixture
def notify_socket() -> Iterator[tuple[socket.socket, str]]:
    with tempfile.TemporaryDirectory(prefix="sd-") as directory:  # an AF_UNIX path is 107 bytes at most
        path = os.path.join(directory, "notify")
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.bind(path)
            sock.settimeout(10.0)
            yield sock, path


@pytest.mark.slow
@pytest.mark.parametrize(("argv", "line"), [
    (["-m", "lookup", "serve", "--port", "0", "--no-announce"], "lookup service at PYRO:"),
    (["-m", "landlord", "renewal-service", "--port", "0"], "PYRO:landlord.RenewalService@"),
], ids=["lookup-serve", "renewal-service"])
def test_a_server_notifies_ready_once_it_answers_and_stopping_on_sigterm(
        argv: list[str], line: str, notify_socket: tuple[socket.socket, str]) -> None:
    sock, path = notify_socket
    with ChildProcess(*argv, env={NOTIFY_SOCKET: path}) as server:
        uri = server.wait_for(re.escape(line) + r"\S*", timeout=60).group(0)
        ready = dict(field.split("=", 1) for field in sock.recv(4096).decode().split("\n"))
        assert ready["READY"] == "1" and uri.split()[-1] in ready["STATUS"]
        assert server.stop() == 0
        assert sock.recv(4096).decode().split("\n") == ["STOPPING=1"]
