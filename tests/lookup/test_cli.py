"""The ``lookup`` command line, run as real processes: ``serve`` (and the addresses its URIs carry),
``list``, ``--help``, ``--version``, exit codes."""

from __future__ import annotations

import json
import pathlib
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable

import Pyro5.api
import Pyro5.errors
import pytest
import tomllib
from conftest import free_port
from lookup_processes import LookupProcess, run_lookup, serve_lookup  # noqa: F401  (a fixture)

import landlord
from landlord.testing import free_udp_port
from landlord.transport.addresses import own_address
from lookup import TRANSITION_NOMATCH_MATCH, Comment, Location, Name, ServiceItem, ServiceTemplate
from lookup.cli import format_table
from lookup.discovery.unicast import locate

SERVICE_URI = "PYRO:quoter@127.0.0.1:9999"
ADVERTISED = "127.0.0.2"  # loopback too (all of 127/8 is, on Linux), yet not the address listened on
ANNOUNCED = r"^lookup service at (PYRO:\S+) \((.*)\)$"  # the line `serve` prints to stdout
Serve = Callable[..., "tuple[LookupProcess, int]"]


@pytest.mark.parametrize("args", [["--help"], ["serve", "--help"], ["list", "--help"]])
def test_help_for_the_command_and_each_subcommand(args: list[str]) -> None:
    done = run_lookup(*args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m lookup")
    expected = {"--help": ["serve", "list", "--version"],
                "serve": ["--host", "--advertise", "--port", "--max-lease", "--default-lease", "--reaper",
                          "--verbose"],
                "list": ["--host", "--port", "--timeout", "--limit"]}[args[0]]
    for word in expected:
        assert word in done.stdout


def test_version_prints_the_package_version() -> None:
    done = run_lookup("--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"python -m lookup {landlord.__version__}\n", "")


def test_the_console_script_is_installed() -> None:
    script = pathlib.Path(sys.executable).parent / "lookup"
    if not script.exists():
        pytest.skip(f"no console script at {script}: reinstall the project (pip install -e .)")
    done = subprocess.run([str(script), "list", "--help"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: lookup list")


@pytest.mark.parametrize("args", [
    [], ["bogus"], ["serve", "--port", "abc"], ["serve", "--port", "70000"], ["serve", "--reaper", "grim"],
    ["serve", "--max-lease", "-1"], ["serve", "--max-lease", "10", "--default-lease", "20"],
    ["list", "--port", "0"], ["list", "--limit", "-3"],
])
def test_usage_errors_exit_2_with_a_message(args: list[str]) -> None:
    done = run_lookup(*args)
    assert done.returncode == 2
    assert "error:" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(("bad", "reason"), [
    ("", "empty"), ("h1 h2", "spaces"), ("h1:4160", "without a port"), ("PYRO:lookup.LookupService@h1:4160", "URI"),
    ("http://h1", "URI"), ("4160", "a port?"), ("0.0.0.0", "wildcard"), ("::", "wildcard"), ("1.2.3", "IPv4"),
    ("h1@h2", "URI"), ("-h1", "not a host name"),
])
def test_an_address_to_advertise_that_is_no_address_is_a_usage_error(bad: str, reason: str) -> None:
    done = run_lookup("serve", "--host", "0.0.0.0", "--port", str(free_port()), f"--advertise={bad}")
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    assert errors == [done.stderr.splitlines()[-1]]  # one line says what is wrong (after argparse's usage)
    assert errors[0].startswith(f"python -m lookup serve: error: argument --advertise: cannot advertise {bad!r}")
    assert reason in errors[0]
    assert "Traceback" not in done.stderr and done.stdout == ""


def _uris_in(lines: list[str]) -> list[str]:
    return re.findall(r"PYRO:[^\s@]+@\S+:\d+", "\n".join(lines))


def _check_handed_out(lookup_uri: str, host: str, port: int) -> None:
    """The lookup service at ``lookup_uri`` names ``host`` in everything it hands out, and answers there."""
    assert str(Pyro5.api.URI(lookup_uri).host) == host and Pyro5.api.URI(lookup_uri).port == port
    with locate(host, port) as lookup:  # it answers at the address it advertises
        registration = lookup.register(ServiceItem(None, SERVICE_URI, ["x.Advertised"], [Name("a")]), 30)
        watching = lookup.notify(ServiceTemplate(types=["x.NeverRegistered"]), TRANSITION_NOMATCH_MATCH,
                                 "PYRO:listener@127.0.0.1:9", None, 30)
    for lease in (registration.lease, watching.lease):
        assert str(lease.landlord) == lookup_uri  # the leases it grants carry its advertised URI...
        assert 29 < lease.renew(30) <= 30        # ...and are renewed through it
    registration.add_attributes([Comment("through the advertised address")])  # via the lease's landlord
    with locate(host, port) as lookup:
        found = lookup.lookup_all(ServiceTemplate(types=["x.Advertised"]), 10).items
        assert list(found[0].attributes) == [Name("a"), Comment("through the advertised address")]
    done = run_lookup("list", "--host", host, "--port", str(port))
    assert done.returncode == 0 and registration.service_id in done.stdout, done.stderr
    for lease in (registration.lease, watching.lease):
        lease.cancel()
    landlord.transport.proxies.discard(lookup_uri)


def test_serve_advertises_the_address_it_is_told_in_its_uri_and_every_lease(serve_lookup: Serve) -> None:
    server, port = serve_lookup("--host", "0.0.0.0", "--advertise", ADVERTISED)
    announced = re.match(ANNOUNCED, server.announced)
    assert announced is not None, server.announced
    uri = announced.group(1)
    assert uri == f"PYRO:lookup.LookupService@{ADVERTISED}:{port}"
    assert announced.group(2).endswith(f", listening on 0.0.0.0:{port}")
    _check_handed_out(uri, ADVERTISED, port)
    assert server.stop() == 0
    assert set(_uris_in(server.output)) == {uri}  # every line naming it names the same URI


def test_serve_on_every_interface_advertises_this_hosts_address_never_the_wildcard(serve_lookup: Serve) -> None:
    server, port = serve_lookup("--host", "0.0.0.0")
    uri = re.match(ANNOUNCED, server.announced).group(1)  # type: ignore[union-attr]
    host = own_address()
    assert uri == f"PYRO:lookup.LookupService@{host}:{port}"
    _check_handed_out(uri, host, port)
    assert server.stop() == 0
    assert set(_uris_in(server.output)) == {uri}
    assert not any("@0.0.0.0" in line for line in server.output)


def test_serve_prints_its_uri_once_to_stdout(serve_lookup: Serve) -> None:
    server, port = serve_lookup()
    uri = f"PYRO:lookup.LookupService@127.0.0.1:{port}"
    assert server.stop() == 0
    assert [found.group(1) for found in map(re.compile(ANNOUNCED).match, server.output) if found] == [uri]
    assert sum(line.startswith("lookup service at ") for line in server.output) == 1
    assert sum(f"lookup service at {uri} (" in line for line in server.output) == 1  # not logged at INFO too


def test_list_against_a_dead_port_exits_1_with_a_clear_message() -> None:
    port = free_port()  # nothing listens there
    done = run_lookup("list", "--port", str(port), "--timeout", "5")
    assert done.returncode == 1
    assert done.stdout == ""
    assert f"no lookup service answers at 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr


def test_serve_on_a_port_in_use_exits_1_with_a_clear_message() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_lookup("serve", "--port", str(port))
    assert done.returncode == 1
    assert f"cannot serve at 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr


def test_serve_with_a_store_it_cannot_use_exits_2_with_a_clear_message(tmp_path: pathlib.Path) -> None:
    not_a_database = tmp_path / "notes.txt"
    not_a_database.write_text("these are not leases\n" * 100)
    for store in (not_a_database, tmp_path / "no such folder" / "lookup.sqlite"):
        done = run_lookup("serve", "--port", str(free_port()), "--store", str(store))
        assert done.returncode == 2, done.stderr  # bad input: a restart would not mend it
        assert f"cannot use the store {store}" in done.stderr
        assert "Traceback" not in done.stderr
    assert not_a_database.read_text() == "these are not leases\n" * 100  # left as it was


def test_a_second_service_on_the_same_store_is_refused(serve_lookup: Serve, tmp_path: pathlib.Path) -> None:
    store = str(tmp_path / "lookup.sqlite")
    serve_lookup("--store", store)
    done = run_lookup("serve", "--port", str(free_port()), "--store", store)
    assert done.returncode == 1
    assert f"cannot use the store {store}" in done.stderr and "open in another store" in done.stderr


def test_list_shows_what_a_restarted_service_took_back_from_its_store(serve_lookup: Serve,
                                                                       tmp_path: pathlib.Path) -> None:
    store = str(tmp_path / "lookup.sqlite")
    server, port = serve_lookup("--store", store)
    with locate("127.0.0.1", port) as lookup:
        service_id = lookup.register(ServiceItem(None, "PYRO:kept@127.0.0.1:1", ["test.Kept"]), 120).service_id
    server.kill()
    server, port = serve_lookup("--store", store, port=port)
    assert re.search(r"kept in .* \(1 lease\(s\) taken back\)", "\n".join(server.output))
    done = run_lookup("list", "--port", str(port))
    assert done.returncode == 0 and service_id in done.stdout and "test.Kept" in done.stdout


def test_list_prints_the_registrations_as_a_table(serve_lookup: Serve) -> None:
    server, port = serve_lookup()
    done = run_lookup("list", "--port", str(port))
    assert (done.returncode, done.stdout) == (0, "no registrations\n")

    with locate(port=port) as lookup:
        quoter = lookup.register(ServiceItem(None, SERVICE_URI, ["examples.Quoter", "examples.Service"],
                                             [Name("quoter"), Location(floor=3, building="B")]), 40)
        plain = lookup.register(ServiceItem(None, SERVICE_URI, ["x.Plain"]), 20)
        done = run_lookup("list", "--port", str(port))
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["SERVICE", "ID", "TYPES", "ATTRIBUTES", "TIME", "LEFT"]
    assert len(rows) == 2
    by_id = {row.split()[0]: row for row in rows}
    row = by_id[quoter.service_id]
    assert "examples.Quoter, examples.Service" in row
    assert "Name(name='quoter'), Location(floor=3, building='B')" in row
    seconds = float(re.search(r"([\d.]+) s$", row).group(1))  # type: ignore[union-attr]
    assert 30 < seconds <= 40
    assert re.search(r"x\.Plain\s+-\s+1\d\.\d s$", by_id[plain.service_id])
    column = header.index("TYPES")
    for line in rows:  # the columns line up
        assert line[column - 2:column] == "  " and line[column] != " "


def test_list_shows_at_most_limit_rows(serve_lookup: Serve) -> None:
    server, port = serve_lookup()
    with locate(port=port) as lookup:
        for number in range(3):
            lookup.register(ServiceItem(None, SERVICE_URI, [f"x.Service{number}"]), 30)
        done = run_lookup("list", "--port", str(port), "--limit", "2")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 1 + 2 + 1
    assert "(2 of 3 registrations shown; see --limit)" in done.stdout


def test_serve_logs_grants_renewals_expiries_and_cancellations(serve_lookup: Serve) -> None:
    server, port = serve_lookup("--verbose", "--max-lease", "30", "--reaper", "polling")
    assert "(guarded server, leases up to 30 s, 30 s for ANY, polling reaper, in memory)" in server.output[-1]
    with locate(port=port) as lookup:
        kept = lookup.register(ServiceItem(None, SERVICE_URI, ["x.Kept"]), 20)
        server.wait_for(rf"INFO .*lookup\.service: registered {kept.service_id} \['x.Kept'\] for 20\.0 s")
        kept.lease.renew(25)
        server.wait_for(rf"DEBUG .*lookup\.server: renewed registration {kept.service_id} for 25\.0 s")
        gone = lookup.register(ServiceItem(None, SERVICE_URI, ["x.Gone"]), 20)
        gone.lease.cancel()
        server.wait_for(rf"INFO .*lookup\.server: registration {gone.service_id} cancelled")
        brief = lookup.register(ServiceItem(None, SERVICE_URI, ["x.Brief"]), 0.3)
        server.wait_for(rf"INFO .*lookup\.server: registration {brief.service_id} expired", timeout=10)
    assert server.stop() == 0
    assert not any(kept.lease.cookie in line or gone.lease.cookie in line for line in server.output)


def test_renewals_are_not_logged_without_verbose(serve_lookup: Serve) -> None:
    server, port = serve_lookup()
    with locate(port=port) as lookup:
        registration = lookup.register(ServiceItem(None, SERVICE_URI, ["x.Kept"]), 20)
        registration.lease.renew(20)
        registration.lease.cancel()
        server.wait_for(rf"registration {registration.service_id} cancelled")
    assert server.stop() == 0
    assert not any("renewed" in line or "DEBUG" in line for line in server.output)


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_serve_stops_cleanly_on_a_signal(serve_lookup: Serve, signame: str) -> None:
    server, port = serve_lookup()
    client = locate(port=port)  # a client still connected when the signal comes
    client.register(ServiceItem(None, SERVICE_URI, ["x.Kept"]), 30)
    started = time.monotonic()
    assert server.stop(getattr(signal, signame)) == 0
    assert time.monotonic() - started < 5
    assert any("lookup service stopped (1 connection(s) closed" in line for line in server.output)
    assert not any("Traceback" in line for line in server.output)
    client._pyroTimeout = 2
    with pytest.raises(Pyro5.errors.CommunicationError):
        client.service_types(ServiceTemplate())
    client._pyroRelease()


def test_format_table_aligns_columns_and_marks_unknown_time_left() -> None:
    table = format_table([("a", ["x.Y"], [], 1.5), ("bbbb", [], ["Name(name='n')"], None)])
    assert table.splitlines() == [
        "SERVICE ID  TYPES  ATTRIBUTES      TIME LEFT",
        "a           x.Y    -                   1.5 s",
        "bbbb        -      Name(name='n')          ?",
    ]
    assert format_table([]) == "no registrations\n"


def test_an_operator_lists_and_evicts_registrations_with_the_admin_token(serve_lookup: Serve,
                                                                          tmp_path: pathlib.Path) -> None:
    token_file = tmp_path / "admin-token"
    token_file.write_text("an admin token of the operators\n")
    server, port = serve_lookup("--admin-token-file", str(token_file))
    server.wait_for(r"^lookup service admin at PYRO:landlord-admin\.")
    with locate("127.0.0.1", port) as lookup:
        kept = lookup.register(ServiceItem(None, SERVICE_URI, ("x.Kept",), (Name("kept"),)), 60)
        evicted = lookup.register(ServiceItem(None, SERVICE_URI, ("x.Evicted",), (Name("evicted"),)), 60)
    wrong = tmp_path / "wrong-token"
    wrong.write_text("not the operators' admin token\n")
    refused = run_lookup("leases", "--port", str(port), "--token-file", str(wrong))
    assert refused.returncode == 1 and refused.stdout == "" and kept.lease.cookie not in refused.stderr
    listed = run_lookup("leases", "--port", str(port), "--token-file", str(token_file))
    assert listed.returncode == 0, listed.stderr
    assert {evicted.lease.cookie[:8], kept.lease.cookie[:8]} <= {line.split()[0] for line in listed.stdout.splitlines()}
    assert kept.lease.cookie not in listed.stdout  # prefixes only: a whole cookie is a capability
    done = run_lookup("evict", evicted.lease.cookie[:10], "--port", str(port), "--token-file", str(token_file))
    assert done.returncode == 0, done.stderr
    with locate("127.0.0.1", port) as lookup:
        assert lookup.lookup(ServiceTemplate(types=["x.Evicted"])) is None
        assert lookup.lookup(ServiceTemplate(types=["x.Kept"])) is not None
    with pytest.raises(landlord.LeaseDeniedError, match="evicted by an operator"):
        evicted.lease.renew(60)


def test_admin_options_that_cannot_work_are_usage_errors(tmp_path: pathlib.Path) -> None:
    short = tmp_path / "short"
    short.write_text("short\n")
    for args in (["--admin-token-file", str(tmp_path / "missing")], ["--admin-token-file", str(short)],
                 ["--admin-name", "ops"]):
        done = run_lookup("serve", "--port", "0", *args)
        assert done.returncode == 2 and "admin" in done.stderr, done


# -- discovery ----------------------------------------------------------------------------------


def test_serve_announces_to_its_groups_and_no_announce_turns_it_off(serve_lookup: Serve) -> None:
    from lookup import discover

    udp = free_udp_port("")
    options = ("--discovery-port", str(udp), "--discovery-interface", "127.0.0.1", "--announce-interval", "0.5")
    server, _ = serve_lookup("--groups", "cli-a,cli-b", *options)
    uri = re.match(ANNOUNCED, server.announced).group(1)  # type: ignore[union-attr]
    assert server.matches(r"announcing to groups 'cli-a', 'cli-b' every 0.5 s on port")  # before the URI line
    found = discover(10, groups=["cli-b"], port=udp, interface="127.0.0.1", count=1)
    assert [(lookup.uri, lookup.groups) for lookup in found] == [(uri, ("cli-a", "cli-b"))]
    server.kill()
    serve_lookup("--groups", "cli-a", "--no-announce", *options)
    assert discover(1.5, groups=None, port=udp, interface="127.0.0.1") == []


@pytest.mark.parametrize(("args", "message"), [
    (["--announce-interval", "0"], "announce-interval"),
    (["--groups", "x" * 65], "printable"),
    (["--discovery-interface", "192.0.2.254"], "no interface of this host"),
    (["--discovery-interface", "not-an-address"], "not an IPv4 address"),
])
def test_bad_discovery_options_are_usage_errors(args: list[str], message: str) -> None:
    done = run_lookup("serve", "--port", "0", *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--event-timeout", "0"], "event-timeout"),
    (["--event-deadline", "inf"], "event-deadline"),
    (["--event-queue", "0"], "event-queue"),
    (["--event-attempts", "-1"], "event-attempts"),
    (["--callback-hosts", "a,,b"], "callback-hosts"),
])
def test_bad_event_options_are_usage_errors(args: list[str], message: str) -> None:
    done = run_lookup("serve", "--port", "0", "--no-announce", *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--connections-per-host", "0"], "connections-per-host"),
    (["--message-deadline", "0"], "message-deadline"),
    (["--message-deadline", "inf"], "message-deadline"),
])
def test_bad_connection_options_are_usage_errors(args: list[str], message: str) -> None:
    done = run_lookup("serve", "--port", "0", "--no-announce", *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr and "Traceback" not in done.stderr


def test_serve_holds_no_more_connections_per_host_than_told(serve_lookup: Serve) -> None:
    server, port = serve_lookup("--no-announce", "--connections-per-host", "2")
    with locate(port=port) as first, locate(port=port) as second:
        assert first.lookup(ServiceTemplate(types=["x.None"])) is None
        assert second.lookup(ServiceTemplate(types=["x.None"])) is None
        with pytest.raises(Pyro5.errors.CommunicationError, match="too many connections from 127.0.0.1: at most 2"):
            with locate(port=port) as third:
                third.lookup(ServiceTemplate(types=["x.None"]))
    server.wait_for("the most one address may")


def test_serve_holds_no_more_registrations_per_client_than_told(serve_lookup: Serve) -> None:
    _, port = serve_lookup("--no-announce", "--registrations-per-client", "1", "--attribute-bytes", "50")
    with locate(port=port) as lookup:
        with pytest.raises(ValueError, match="at most 50"):
            lookup.register(ServiceItem(None, "PYRO:s@127.0.0.1:9", ["x.A"], [Comment("c" * 51)]), 30)
        lookup.register(ServiceItem(None, "PYRO:s@127.0.0.1:9", ["x.A"], [Comment("c" * 50)]), 30)
        with pytest.raises(landlord.LeaseDeniedError, match="at most 1 registrations"):
            lookup.register(ServiceItem(None, "PYRO:s@127.0.0.1:9", ["x.B"], []), 30)


# -- one shape for every server: configuration, JSON output, logs ------------------------------


def test_list_and_leases_write_one_json_object_a_line(serve_lookup: Serve, tmp_path: pathlib.Path) -> None:
    token_file = tmp_path / "admin-token"
    token_file.write_text("an admin token of the operators\n")
    server, port = serve_lookup("--admin-token-file", str(token_file))
    with locate("127.0.0.1", port) as lookup:
        quoter = lookup.register(ServiceItem(None, SERVICE_URI, ["examples.Quoter"], [Name("quoter")]), 40)
        lookup.register(ServiceItem(None, SERVICE_URI, ["x.Other"]), 20)
    done = run_lookup("list", "--port", str(port), "-o", "json")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    rows = {row["service_id"]: row for row in map(json.loads, done.stdout.splitlines())}
    assert len(rows) == 2
    row = rows[str(quoter.service_id)]
    assert row["types"] == ["examples.Quoter"] and row["attributes"] == ["Name(name='quoter')"]
    assert 30 < row["seconds_left"] <= 40
    cut = run_lookup("list", "--port", str(port), "-o", "json", "--limit", "1")
    assert len(cut.stdout.splitlines()) == 1 and "1 of 2 registrations shown; see --limit" in cut.stderr
    leases = run_lookup("leases", "--port", str(port), "--token-file", str(token_file), "--output", "json")
    assert leases.returncode == 0, leases.stderr
    objects = [json.loads(line) for line in leases.stdout.splitlines()]
    assert {item["kind"] for item in objects} == {"lease"} and len(objects) == 2
    assert quoter.lease.cookie[:8] in {item["cookie"] for item in objects}
    assert all(quoter.lease.cookie not in line for line in leases.stdout.splitlines())  # prefixes only


def test_serve_takes_its_options_from_a_file_and_the_environment_a_flag_winning(tmp_path: pathlib.Path) -> None:
    port, other = free_port(), free_port()
    config = tmp_path / "lookup.toml"
    config.write_text(f'max-lease = 30\nreaper = "lazy"\nno-announce = true\n[serve]\nport = {other}\n'
                      f'[list]\nlimit = 5\n')
    env = {"LOOKUP_SERVE_CONFIG": str(config), "LOOKUP_SERVE_PORT": str(port), "LOOKUP_SERVE_MAX_LEASE": "20"}
    shown = run_lookup("serve", "--max-lease", "10", "--print-config", env=env)
    assert shown.returncode == 0, shown.stderr
    settings = tomllib.loads(shown.stdout)
    assert (settings["port"], settings["max-lease"], settings["reaper"], settings["no-announce"]) == (
        port, 10.0, "lazy", True)
    assert f"port = {port}  # $LOOKUP_SERVE_PORT" in shown.stdout and f"reaper = \"lazy\"  # {config}" in shown.stdout
    assert "max-lease = 10.0  # command line" in shown.stdout
    server = LookupProcess("serve", "--max-lease", "10", env=env)
    with server:
        server.wait_for(re.escape(f"lookup service at PYRO:lookup.LookupService@127.0.0.1:{port} "))
        with locate("127.0.0.1", port) as lookup:  # the variable's port, and the flag's longest lease
            granted = lookup.register(ServiceItem(None, SERVICE_URI, ["x.Configured"]), 60).lease
            assert granted.expiration - time.time() <= 10.5


@pytest.mark.parametrize(("source", "says"), [
    ({"LOOKUP_SERVE_PORT": "http"}, "lookup serve: error: $LOOKUP_SERVE_PORT: not a port number: 'http'"),
    ({"LOOKUP_SERVE_REAPER": "eager"}, "lookup serve: error: $LOOKUP_SERVE_REAPER: 'eager' is not one of"),
    ({"LOOKUP_SERVE_CONFIG": "{missing}"}, "lookup serve: error: $LOOKUP_SERVE_CONFIG {missing}: cannot read it"),
    ({"LOOKUP_SERVE_CONFIG": "{config}"}, "lookup serve: error: {config}: max-leas: not an option of this command"),
])
def test_a_bad_value_from_the_environment_or_the_file_is_one_line_and_exit_2(
        tmp_path: pathlib.Path, source: dict[str, str], says: str) -> None:
    config, missing = tmp_path / "typo.toml", tmp_path / "missing.toml"
    config.write_text("max-leas = 30\n")
    env = {name: value.format(config=config, missing=missing) for name, value in source.items()}
    done = run_lookup("serve", "--print-config", env=env)  # refused before anything is printed or served
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [done.stderr.strip()], done.stderr
    assert says.format(config=config, missing=missing) in done.stderr, done.stderr


def test_serve_logs_json_lines_with_utc_times(serve_lookup: Serve) -> None:
    server, port = serve_lookup("--log-format", "json", "--no-announce")
    with locate("127.0.0.1", port) as lookup:
        lookup.register(ServiceItem(None, SERVICE_URI, ["x.Logged"]), 30)
    entry = json.loads(server.wait_for(r'^\{.*"message": "registered .*x\.Logged').string)
    assert entry["level"] == "INFO" and entry["logger"].startswith(("lookup", "landlord"))
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", entry["time"])


def test_every_server_command_takes_the_same_option_groups() -> None:
    from landlord.__main__ import build_parser as build_landlord_parser
    from landlord.cli import subcommand_parser
    from lookup.cli import build_parser

    shared = {"--host", "--port", "--advertise", "--cert", "--key", "--ca", "--metrics-port", "--metrics-host",
              "--admin-token-file", "--admin-name", "--store", "--log-level", "--log-format", "--verbose",
              "--config", "--print-config"}
    for parser, command in ((build_parser(), "serve"), (build_landlord_parser(), "renewal-service")):
        options = set(subcommand_parser(parser, command)._option_string_actions)
        assert shared <= options, (command, sorted(shared - options))
