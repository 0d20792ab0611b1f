"""The admin commands (``landlord.admin.commands``): ``python -m landlord list|evict``, run as a real process
against a landlord served in another (``tests/processes/admin_landlord.py``), with a canary holder
renewing through the hostile calls: a wrong token is refused in one error line, bytes of the command's
calls captured by a relay and replayed on a new connection list and evict nothing, and the token never
crosses the wire (the same, and a flood of wrong proofs, against each of the four servers that serve an
admin object: tests/hostile/test_admin_attacks.py). In this process: bad input is
one error line and exit 2, the command finds the admin object or says why not, the commands join
another command line, and a cookie prefix may start with a dash. Named leases: ``list`` shows the
names, their holders with tokens and their waiters; ``evict`` of a Lock's holding is pushed to it at
once (``valid`` turns false) and the next waiter holds.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pathlib
import subprocess
import sys
import time
from collections.abc import Iterator

import Pyro5.api
import Pyro5.protocol
import Pyro5.serializers
import pytest
from admin_fixtures import (  # noqa: F401  (fixtures)
    TOKEN,
    WRONG,
    Certs,
    Rooms,
    Served,
    admin_uri_of,
    certs,
    given_cookies,
    served,
)
from conftest import REPO_ROOT, Child, free_port

import landlord
from landlord import ClaimInbox, LeaseDeniedError, LeaseRenewalManager, Lock, tls_settings
from landlord.__main__ import main
from landlord.admin import (
    ADMIN_PREFIX,
    EVICT_OPTIONS,
    TOKEN_ENV,
    AdminClient,
    AdminRefusedError,
    admin_object_id,
    prefix_behind_dashes,
    register_admin,
)
from landlord.testing import Recorder, ServingDaemon

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "hostile"))
from attacks import PYRO_HEADER, Canary, RecordingRelay, decoded, messages_in, replay  # noqa: E402 (the hostile suite's)

CLI_TIMEOUT = 60.0  # seconds a command-line process may take (a cold interpreter on a busy machine)
CANARY_TERM = 2.0  # seconds: the canary holder's lease, renewed every 0.1 s


# -- the command line, in processes of its own --------------------------------------------------------


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {key: value for key, value in os.environ.items() if key != TOKEN_ENV}
    return subprocess.run([sys.executable, "-m", "landlord", *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=CLI_TIMEOUT, env={**environ, **(env or {})})


def _start(*args: str) -> tuple[Child, str, int]:
    """A landlord with its admin object in a child process; the child, the landlord's URI, its port."""
    child = Child("admin_landlord.py", *args)
    try:
        admin_uri = child.read_uri(pattern=r"^landlord admin at (?P<uri>PYRO:\S+)")
    except BaseException:
        child.close()
        raise
    location = Pyro5.api.URI(admin_uri)
    assert location.port is not None
    return child, f"PYRO:landlord.{location.object[len(ADMIN_PREFIX):]}@127.0.0.1:{location.port}", location.port


def _rent(landlord_uri: str, room: str, duration: float = 300) -> landlord.LandlordLease:
    with Pyro5.api.Proxy(landlord_uri) as proxy:
        lease: landlord.LandlordLease = proxy.rent(room, duration)
    return lease


@contextlib.contextmanager
def _canary(landlord_uri: str) -> Iterator[Canary]:
    """A holder renewing a 2 s lease every 0.1 s throughout the block; checked after it: it never
    missed a renewal, and none took half its term."""
    canary = Canary(_rent(landlord_uri, "canary", CANARY_TERM), term=CANARY_TERM).start()
    try:
        canary.renew_more(2)
        yield canary
        canary.renew_more(3)  # and it is served on
    finally:
        canary.stop()
    canary.check(CANARY_TERM / 2)


def _still_held(child: Child, landlord_uri: str, leases: list[landlord.LandlordLease]) -> None:
    """Nothing of the child's was freed, and its admin object, asked with the token, lists every lease
    (call it while the canary renews: its lease is short)."""
    assert child.matches(r"^(freed|cancelled) ") == []
    with AdminClient(admin_uri_of(landlord_uri), token=TOKEN) as admin:
        listed = {row.cookie for row in admin.list().rows}
    assert listed == {lease.cookie[:8] for lease in leases}


@pytest.fixture
def token_file(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "admin-token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    return path


def _one_error_line(finished: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    assert finished.returncode == code, finished
    assert finished.stdout == ""
    lines = finished.stderr.splitlines()
    assert len(lines) == 1 and "error: " in lines[0], finished.stderr
    assert all(word in lines[0] for word in words), lines[0]
    return lines[0]


def test_the_command_lists_and_evicts_the_leases_of_a_landlord_in_another_process(token_file: pathlib.Path) -> None:
    child, landlord_uri, port = _start("--token-file", str(token_file))
    with child:
        evicted, kept = _rent(landlord_uri, "room 101"), _rent(landlord_uri, "room 102")
        listed = _run("list", "--port", str(port), "--token-file", str(token_file))
        assert listed.returncode == 0 and listed.stderr == "", listed
        lines = listed.stdout.splitlines()
        assert lines[0].split() == ["COOKIE", "LEFT", "ATTACHED", "RESOURCE"] and len(lines) == 3
        assert {line.split()[0] for line in lines[1:]} == {evicted.cookie[:8], kept.cookie[:8]}
        assert "'room 101'" in listed.stdout and evicted.cookie not in listed.stdout

        ended = _run("evict", evicted.cookie[:8], "--port", str(port), "--id", evicted.landlord_id,
                     env={TOKEN_ENV: TOKEN})  # the token from the environment
        assert ended.returncode == 0 and ended.stderr == "", ended
        assert ended.stdout.startswith(f"evicted {evicted.cookie[:8]}… 'room 101' (")
        child.wait_for(r"^freed room 101$")
        with pytest.raises(LeaseDeniedError, match="evicted by an operator"):
            evicted.renew(60)
        assert kept.renew(60) == 60


def test_the_command_lists_the_names_and_an_evicted_lock_holder_hears_at_once(token_file: pathlib.Path) -> None:
    child, landlord_uri, port = _start("--token-file", str(token_file))
    with child, ClaimInbox(host="127.0.0.1") as inbox, LeaseRenewalManager() as renewals:
        lock = Lock(landlord_uri, "orders", duration=30, value="worker-1", inbox=inbox, renewals=renewals)
        lost: Recorder[str] = Recorder()
        lock.on_lost(lost)
        assert lock.acquire(timeout=10) and lock.lease is not None and lock.token is not None
        held, token = lock.lease.cookie, lock.token
        with Pyro5.api.Proxy(landlord_uri) as proxy:  # a second holder waits (its request queues at once)
            waiting, none = proxy.acquire("orders", 300, 1, landlord.FOREVER, 0.0, "worker-2", inbox.uri)
        assert none is None
        turn = inbox.expect(waiting.cookie)

        listed = _run("list", "--port", str(port), "--token-file", str(token_file))
        assert listed.returncode == 0 and listed.stderr == "", listed
        leases, names = listed.stdout.split("\n\n")
        assert f"name 'orders' (token {token})" in leases and "name 'orders' (waiting)" in leases
        header, holder, waiter = names.splitlines()
        assert header.split()[:3] == ["NAME", "LIMIT", "ROLE"]
        assert holder.split()[:5] == ["orders", "1", "holder", held[:8], str(token)] and holder.endswith("worker-1")
        assert waiter.split()[:4] == ["waiter", "1", waiting.cookie[:8], "-"] and "forever" in waiter
        assert held not in listed.stdout and waiting.cookie not in listed.stdout  # prefixes only

        cut = _run("list", "--port", str(port), "--token-file", str(token_file), "-o", "json",
                   env={"LANDLORD_LIST_LIMIT": "1"})  # the limit from the environment: one lease of two
        assert cut.returncode == 0 and "1 of 2 leases shown; see --limit" in cut.stderr, cut
        assert [json.loads(line)["kind"] for line in cut.stdout.splitlines()] == ["lease", "name"]
        as_json = _run("list", "--port", str(port), "--token-file", str(token_file), "-o", "json")
        assert as_json.returncode == 0 and as_json.stderr == "", as_json
        objects = [json.loads(line) for line in as_json.stdout.splitlines()]
        assert [item["kind"] for item in objects] == ["lease", "lease", "name"]
        name = objects[2]
        assert (name["name"], name["limit"], name["closed_for"], name["holders_total"]) == ("orders", 1, None, 1)
        assert name["holders"][0]["cookie"] == held[:8] and name["holders"][0]["token"] == token
        assert name["holders"][0]["value"] == "worker-1" and 0 < name["holders"][0]["seconds_left"] <= 30
        assert name["waiters"][0]["cookie"] == waiting.cookie[:8] and name["waiters"][0]["wait_left"] is None
        assert held not in as_json.stdout and waiting.cookie not in as_json.stdout

        ended = _run("evict", held[:8], "--port", str(port), "--token-file", str(token_file))
        assert ended.returncode == 0 and ended.stderr == "", ended
        assert ended.stdout.startswith(f"evicted {held[:8]}… name 'orders' (token {token}) (")
        assert lost.wait_for(1, timeout=5) == ["evicted by an operator"]  # pushed: not its next renewal
        assert not lock.valid and lock.token is None
        assert turn.wait(time.monotonic() + 10) and turn.token == token + 1  # the next holder, at once
        lock.close()
        waiting.cancel()


def test_the_command_refused_prints_one_error_line_and_exits_1(token_file: pathlib.Path,
                                                                tmp_path: pathlib.Path) -> None:
    wrong = tmp_path / "wrong-token"
    wrong.write_text(WRONG)
    child, landlord_uri, port = _start("--token-file", str(token_file))
    with child:
        lease = _rent(landlord_uri, "room 101")
        with _canary(landlord_uri) as canary:
            _one_error_line(_run("list", "--port", str(port), "--token-file", str(wrong)), 1, "list refused",
                            "a wrong proof")
            _one_error_line(_run("evict", lease.cookie[:8], "--port", str(port), env={TOKEN_ENV: WRONG}), 1,
                            "evict refused")
            child.wait_for(r"refused an admin call \(evict\) from 127\.0\.0\.1:\d+: a wrong proof")
            with Pyro5.api.Proxy(admin_uri_of(landlord_uri)) as proxy:  # no token, or the token itself
                for call in (lambda: proxy.list(10), lambda: proxy.evict(lease.cookie[:8]),
                             lambda: proxy.list(10, token=TOKEN), lambda: proxy.evict(lease.cookie[:8], token=TOKEN)):
                    with pytest.raises(AdminRefusedError, match="refused"):
                        call()
            _still_held(child, landlord_uri, [lease, canary.lease])
        assert lease.renew(60) == 60


def test_captured_admin_bytes_replayed_on_a_new_connection_list_and_evict_nothing(token_file: pathlib.Path) -> None:
    child, landlord_uri, port = _start("--token-file", str(token_file))
    with child, RecordingRelay(("127.0.0.1", port)) as relay:
        leases = [_rent(landlord_uri, "room 101"), _rent(landlord_uri, "room 102")]
        with _canary(landlord_uri) as canary:
            listed = _run("list", "--port", str(relay.port), "--id", leases[0].landlord_id,
                          "--token-file", str(token_file))  # a legitimate call, through the relay
            assert listed.returncode == 0 and leases[0].cookie[:8] in listed.stdout, listed
            [(sent, answered)] = relay.recorded()

            answers = replay(port, sent)
            refusal = decoded(answers[-1])
            assert answers[-1].flags & Pyro5.protocol.FLAGS_EXCEPTION, f"the replay was answered: {refusal!r:.300}"
            assert isinstance(refusal, AdminRefusedError) and "replayed from another connection" in str(refusal)
            assert not any(lease.cookie[:8].encode() in bytes(answer.data) for answer in answers for lease in leases)
            child.wait_for(r"refused an admin call \(list\) from 127\.0\.0\.1:\d+: a wrong proof")

            # the captured proof of the listing, for an eviction: refused on a connection of its own,
            # challenged or not (the command asks for the names after the leases: the last call is that)
            calls = []
            for invoke in messages_in(sent)[-2:]:
                received = Pyro5.protocol.ReceivingMessage(invoke[:PYRO_HEADER])
                received.add_payload(invoke[PYRO_HEADER:])
                calls.append(Pyro5.serializers.serializers_by_id[received.serializer_id].loadsCall(
                    bytes(received.data)))
            assert [method for _, method, _, _ in calls] == ["list", "names"]
            captured = calls[0][3]
            assert set(captured) == {"sequence", "proof"}
            with Pyro5.api.Proxy(admin_uri_of(landlord_uri)) as proxy:
                with pytest.raises(AdminRefusedError, match="a proof without a challenge on this connection"):
                    proxy.evict(leases[0].cookie[:8], **captured)
                proxy.challenge()
                with pytest.raises(AdminRefusedError, match="a wrong proof"):
                    proxy.evict(leases[0].cookie[:8], **captured)

            # and the token itself never crossed, either way
            assert TOKEN.encode() not in sent and TOKEN.encode() not in answered
            _still_held(child, landlord_uri, [*leases, canary.lease])  # while the canary still renews


def test_the_command_over_tls_with_an_admin_certificate(certs: Certs) -> None:
    child, landlord_uri, port = _start("--admin-name", "ops-admin", *Certs.args(certs.server))
    with child:
        with tls_settings(certs.admin):
            lease = _rent(landlord_uri, "room 101")
        listed = _run("list", "--port", str(port), *Certs.args(certs.admin))
        assert listed.returncode == 0 and lease.cookie[:8] in listed.stdout, listed
        _one_error_line(_run("list", "--port", str(port), *Certs.args(certs.client)), 1, "list refused")


def _main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = main(list(args))
    except SystemExit as exit:
        code = int(exit.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_bad_input_is_one_error_line_and_exit_2(capsys: pytest.CaptureFixture[str], token_file: pathlib.Path,
                                                monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    short = tmp_path / "short"
    short.write_text("short")
    for args, words in [
        (["list"], ["--port is required (or $LANDLORD_LIST_PORT"]),
        (["list", "--port", "0", "--token-file", str(token_file)], ["a port is 1 to 65535"]),
        (["list", "--port", "4160", "--limit", "-1", "--token-file", str(token_file)], ["--limit"]),
        (["evict", "abc", "--port", "4160", "--token-file", str(token_file)], ["8 to 256 characters, got 3"]),
        (["evict", "abcdefg*", "--port", "4160", "--token-file", str(token_file)], ["only letters, digits"]),
        (["list", "--port", "4160"], ["no credentials"]),
        (["list", "--port", "4160", "--token-file", str(short)], ["16 to 4096 characters, got 5"]),
        (["list", "--port", "4160", "--token-file", str(tmp_path / "none")], ["cannot read the token file"]),
        (["list", "--port", "4160", "--cert", str(token_file)], ["--cert, --key and --ca go together"]),
        (["list", "--port", "4160", "--token-file", str(token_file), "--id", "a b"], ["no spaces"]),
        (["list", "--port", "4160", "--token-file", str(token_file), "--id", "x", "--object-id", "y"],
         ["not allowed with"]),
    ]:
        code, out, err = _main(capsys, *args)
        assert (code, out) == (2, ""), (args, err)
        assert len(err.splitlines()) == 1 and "error: " in err and all(word in err for word in words), (args, err)
    monkeypatch.setenv(TOKEN_ENV, "short")
    code, out, err = _main(capsys, "list", "--port", "4160")
    assert code == 2 and f"${TOKEN_ENV}: an admin token has 16" in err


def test_no_landlord_there_is_one_error_line_and_exit_1(capsys: pytest.CaptureFixture[str],
                                                        token_file: pathlib.Path) -> None:
    code, out, err = _main(capsys, "list", "--port", str(free_port()), "--token-file", str(token_file),
                           "--timeout", "5")
    assert (code, out) == (1, "") and len(err.splitlines()) == 1 and "landlord: error: cannot reach" in err


def test_the_command_finds_the_admin_object_or_says_why_not(capsys: pytest.CaptureFixture[str],
                                                            token_file: pathlib.Path) -> None:
    with ServingDaemon() as daemon:
        rooms = Rooms()
        others = Rooms()
        try:
            daemon.register(rooms)
            port = str(daemon.daemon.locationStr.rsplit(":", 1)[1])
            code, out, err = _main(capsys, "list", "--port", port, "--token-file", str(token_file))
            assert (code, out) == (1, "") and "serves no landlord admin object" in err
            register_admin(daemon.daemon, rooms, token=TOKEN)
            rooms.new_lease("room 101", 30)
            code, out, err = _main(capsys, "list", "--port", port, "--token-file", str(token_file))
            assert code == 0 and "'room 101'" in out, err
            register_admin(daemon.daemon, others, token=TOKEN)
            code, out, err = _main(capsys, "list", "--port", port, "--token-file", str(token_file))
            assert (code, out) == (1, "") and "serves 2 landlord admin objects" in err and "--id" in err
            code, out, err = _main(capsys, "list", "--port", port, "--token-file", str(token_file),
                                   "--id", others.landlord_id)
            assert (code, out) == (0, "no leases\n"), err
            code, out, err = _main(capsys, "list", "--port", port, "--token-file", str(token_file),
                                   "--object-id", admin_object_id(rooms))
            assert code == 0 and "'room 101'" in out, err
            code, out, err = _main(capsys, "list", "--port", port, "--token-file", str(token_file), "--id", "nobody")
            assert (code, out) == (1, "") and "unknown object" in err and len(err.splitlines()) == 1
        finally:
            rooms.close()
            others.close()


def test_the_commands_can_be_added_to_another_command_line(served: Served) -> None:
    import argparse

    from landlord.admin import add_admin_commands, run_admin

    parser = argparse.ArgumentParser(prog="lookup")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list")  # a command of its own by that name
    add_admin_commands(commands, list_name="leases", evict_name="evict", default_port=4160, what="lookup service")
    assert parser.parse_args(["leases"]).port == 4160
    served.rent("room 101")
    port = Pyro5.api.URI(served.admin_uri).port
    out, err = io.StringIO(), io.StringIO()
    args = parser.parse_args(["leases", "--port", str(port)])
    assert run_admin(args, out=out, err=err, prog="lookup", environ={TOKEN_ENV: TOKEN}) == 0, err.getvalue()
    assert "'room 101'" in out.getvalue()
    assert run_admin(args, out=out, err=err, prog="lookup", environ={TOKEN_ENV: WRONG}) == 1
    assert err.getvalue().startswith("lookup: error: ") and "list refused" in err.getvalue()


def test_a_cookie_prefix_starting_with_a_dash_is_read_as_the_prefix() -> None:
    # one cookie in 64 starts with "-": argparse alone reads "evict -OG9xgi2" as an unknown option
    from landlord.__main__ import build_parser

    parser = build_parser()
    for argv, prefix in [(["evict", "-OG9xgi2", "--port", "4160"], "-OG9xgi2"),
                         (["evict", "--port", "4160", "-OG9xgi2", "--id", "x"], "-OG9xgi2"),
                         (["evict", "--port=4160", "--OG9xgi2"], "--OG9xgi2"),
                         (["evict", "--port", "4160", "--", "-OG9xgi2"], "-OG9xgi2")]:
        args = parser.parse_args(prefix_behind_dashes(argv))
        assert (args.prefix, args.port) == (prefix, 4160), argv
    args = parser.parse_args(prefix_behind_dashes(["evict", "--token-file=-a-file", "-OG9xgi2", "--port", "1"]))
    assert (str(args.token_file), args.prefix) == ("-a-file", "-OG9xgi2")
    assert prefix_behind_dashes(["list", "--port", "1"]) == ["list", "--port", "1"]
    assert prefix_behind_dashes(["evict", "OG9xgi2-", "--port", "1"]) == ["evict", "OG9xgi2-", "--port", "1"]


def test_the_evict_options_known_to_the_prefix_rule_are_the_commands_options() -> None:
    from landlord.__main__ import build_parser
    from lookup.cli import build_parser as build_lookup_parser

    for parser in (build_parser(), build_lookup_parser()):
        commands = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
        evict = commands.choices["evict"]
        assert set(evict._option_string_actions) == EVICT_OPTIONS
        flags = {option for option, action in evict._option_string_actions.items() if action.nargs == 0}
        assert flags == {"-h", "--help", "--print-config"}


def test_a_lease_whose_cookie_starts_with_a_dash_is_evicted_by_the_command(
        served: Served, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    given_cookies(monkeypatch, "-OG9xgi2xxxxxxxxxxxxxx")
    served.rent("room 101")
    port = str(Pyro5.api.URI(served.admin_uri).port)
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    code, out, err = _main(capsys, "evict", "-OG9xgi2", "--port", port)
    assert (code, err) == (0, "") and out.startswith("evicted -OG9xgi2… 'room 101'"), err
