"""The safety checker's own parts, without processes: the fenced resource and its log, what the
log is checked for (:func:`landlord.testing.lockcheck.analyse`), the report, the options.

The checker run for real (clients in processes, paused and killed) is tests/faults/test_lock_faults.py.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from landlord.testing import ServingDaemon
from landlord.testing.lockcheck import (
    Backend,
    Faults,
    FencedResource,
    LandlordBackend,
    LockCheck,
    Report,
    Write,
    analyse,
    load_backend,
    main,
    read_log,
    run_client,
)
from landlord.testing.replicacheck import ReplicaGroupBackend


def write(client: str, token: int, seq: int, at: float, *, accepted: bool = True, believed: bool = True,
          acquired: float | None = None, arrived: float | None = None, stale: bool = False) -> Write:
    """A write checked at ``at``, believed 10 ms later, arriving 1 ms after that."""
    return Write(client, token, seq, believed, at, at + 0.01, at - 0.01 if acquired is None else acquired,
                 at + 0.011 if arrived is None else arrived, accepted, stale)


def test_a_clean_log_is_safe_and_counts_its_holdings_and_hand_overs() -> None:
    log = [write("a", 1, 1, 1.0), write("a", 1, 2, 1.1), write("b", 2, 3, 1.2), write("c", 3, 4, 1.5)]
    found = analyse(log)
    assert found.safe and found.writes == found.accepted == 4 and found.refused == 0
    assert found.holdings == 3 and found.overlaps == () and found.late == 0
    assert found.closest_handover == pytest.approx(1.2 - 1.11)  # a's last belief (1.1 + 10 ms) to b's first


def test_an_accepted_write_below_an_earlier_accepted_token_is_unsafe() -> None:
    stale = write("a", 1, 3, 2.0, arrived=2.5)
    found = analyse([write("a", 1, 1, 1.0), write("b", 2, 2, 1.5), stale])
    assert not found.safe and found.stale_accepted == (stale,)
    assert found.late == 1 and found.late_accepted == 1  # it arrived after b had acquired (at 1.49)


def test_a_refused_stale_write_is_safe_and_counted_with_what_its_client_believed() -> None:
    log = [write("a", 1, 1, 1.0), write("b", 2, 2, 1.5), write("a", 1, 3, 2.0, accepted=False, believed=True),
           write("a", 1, 4, 2.1, accepted=False, believed=False)]
    found = analyse(log)
    assert found.safe and found.refused == 2 and found.refused_believed == 1
    assert found.late == 2 and found.late_accepted == 0


def test_an_old_token_that_lands_before_the_newer_holder_writes_is_late_but_safe() -> None:
    """What fencing promises: the resource's order follows the tokens', not the clock's."""
    log = [write("a", 1, 1, 1.0), write("a", 1, 2, 3.0, arrived=3.0), write("b", 2, 3, 3.1, acquired=2.0)]
    found = analyse(log)
    assert found.safe and found.late == 1 and found.late_accepted == 1


def test_one_token_written_by_two_clients_is_unsafe() -> None:
    found = analyse([write("a", 1, 1, 1.0), write("b", 1, 2, 2.0)])
    assert not found.safe and found.shared_tokens == {1: ("a", "b")}


def test_two_clients_believing_at_once_are_an_overlap_only_where_their_readings_say_so() -> None:
    # b believed at 1.05, while a believed until 1.11 (its reading at 1.1 + 10 ms): an overlap
    overlapping = analyse([write("a", 1, 1, 1.0), write("a", 1, 2, 1.1), write("b", 2, 3, 1.05)])
    assert len(overlapping.overlaps) == 1
    [(first, second)] = overlapping.overlaps
    assert (first.client, second.client) == ("a", "b")
    # a's second reading said false: its window ends at its check of 1.1, before b's first at 1.105
    apart = analyse([write("a", 1, 1, 1.0), write("a", 1, 2, 1.1, believed=False), write("b", 2, 3, 1.105)])
    assert apart.overlaps == ()


def test_a_token_below_one_acquired_before_is_a_token_gone_back() -> None:
    """Holdings in the order their clients acquired: b acquired (2.0) after c (1.5) with a lower token,
    as from a lock service whose failover forgot c's grant. Its writes, fenced, are refused: safe, but
    the report says the tokens went back."""
    log = [write("a", 1, 1, 1.0), write("c", 3, 2, 1.6, acquired=1.5),
           write("b", 2, 3, 2.1, acquired=2.0, accepted=False), write("d", 4, 4, 3.0)]
    found = analyse(log)
    assert found.safe
    [(highest, back)] = found.tokens_back
    assert (highest.client, highest.token, back.client, back.token) == ("c", 3, "b", 2)
    assert analyse([write("a", 1, 1, 1.0), write("b", 2, 2, 1.5), write("c", 5, 3, 2.0)]).tokens_back == ()
    text = report(log).format()
    assert "tokens gone back:      1 holdings" in text and "but the lock service's tokens went back" in text
    assert report(log).as_dict()["tokens_back"] == 1


def test_the_fenced_resource_refuses_a_lower_token_and_logs_every_write(tmp_path: Path) -> None:
    resource = FencedResource(tmp_path / "log")
    assert resource.write("a", 5, 1, True, 1.0, 1.1, 0.9)
    assert resource.write("b", 6, 2, True, 2.0, 2.1, 1.9)
    assert not resource.write("a", 5, 3, False, 3.0, 3.1, 0.9)
    assert resource.write("b", 6, 4, True, 4.0, 4.1, 1.9)  # the same holder writes again
    resource.close()
    assert resource.stats() == {"accepted": 3, "refused": 1, "stale": 0}
    log = read_log(tmp_path / "log")
    assert [(w.client, w.token, w.accepted, w.stale) for w in log] == [
        ("a", 5, True, False), ("b", 6, True, False), ("a", 5, False, True), ("b", 6, True, False)]
    assert analyse(log).safe


def test_the_unfenced_resource_lets_a_stale_write_land_and_says_so(tmp_path: Path) -> None:
    resource = FencedResource(tmp_path / "log", fenced=False)
    assert resource.write("a", 5, 1, True, 1.0, 1.1, 0.9)
    assert resource.write("b", 6, 2, True, 2.0, 2.1, 1.9)
    assert resource.write("a", 5, 3, False, 3.0, 3.1, 0.9)
    assert resource.stats() == {"accepted": 3, "refused": 0, "stale": 1}
    assert resource.ticket() == 1 and resource.ticket() == 2
    resource.close()
    found = analyse(read_log(tmp_path / "log"))
    assert len(found.stale_accepted) == 1 and not found.safe


def test_a_torn_last_line_is_left_out(tmp_path: Path) -> None:
    resource = FencedResource(tmp_path / "log")
    resource.write("a", 1, 1, True, 1.0, 1.1, 0.9)
    resource.close()
    with open(tmp_path / "log", "a") as log:
        log.write('{"client": "a", "tok')  # the resource killed in the middle of a line
    assert len(read_log(tmp_path / "log")) == 1


def report(log: list[Write], *, fenced: bool = True, finished: bool = True) -> Report:
    return Report("landlord", fenced, 2, 3, 1.0, 7, {"pause": 2}, {"pause": 1}, 6, 1, {"acquire LeaseDeniedError": 1},
                  finished, 3.5, analyse(log))


def test_the_report_says_what_was_done_and_what_the_log_shows() -> None:
    safe = report([write("a", 1, 1, 1.0), write("b", 2, 2, 1.5), write("a", 1, 3, 2.0, accepted=False)])
    text = safe.format()
    assert safe.ok and "verdict:               SAFE" in text and "UNSAFE" not in text
    assert "2 pause (1 of the holder)" in text and "1 refused as stale" in text
    assert "stale writes accepted: 0" in text and "acquire LeaseDeniedError: 1" in text
    assert json.loads(json.dumps(safe.as_dict()))["ok"] is True

    unsafe = report([write("a", 1, 1, 1.0), write("b", 2, 2, 1.5), write("a", 1, 3, 2.0)])
    assert not unsafe.ok and "UNSAFE" in unsafe.format() and "stale writes accepted: 1" in unsafe.format()
    unfenced = report([write("a", 1, 1, 1.0), write("b", 2, 2, 1.5), write("a", 1, 3, 2.0)], fenced=False)
    assert unfenced.ok and "1 stale writes landed without fencing" in unfenced.format()
    assert not report([], finished=False).ok
    overlapping = report([write("a", 1, 1, 1.0), write("a", 1, 2, 1.1), write("b", 2, 3, 1.05)])
    assert "1 overlapping belief windows (worst 10.0 ms)" in overlapping.format()  # b's window, within a's
    assert "but two clients believed themselves holders at once" in overlapping.format()


def test_options_that_cannot_run_are_refused_before_anything_starts() -> None:
    with pytest.raises(ValueError, match="partition hook"):
        LockCheck(faults=Faults(partitions=1))
    with pytest.raises(ValueError, match="cannot be restarted"):
        LockCheck(LandlordBackend(), faults=Faults(restarts=1))
    LockCheck(LandlordBackend(store=True), faults=Faults(restarts=1))
    with pytest.raises(ValueError):
        LockCheck(clients=0)


def test_a_backend_is_named_by_module_and_class() -> None:
    assert load_backend(LandlordBackend.path()) is LandlordBackend
    for wrong in ("landlord.testing.lockcheck", "landlord.testing.lockcheck:Faults", "json:dumps"):
        with pytest.raises(ValueError):
            load_backend(wrong)
    with pytest.raises(NotImplementedError):
        Backend().restart()
    # the replica group's, in a module of its own (it imports the etcd helpers, never an etcd client)
    assert load_backend(ReplicaGroupBackend.path()) is ReplicaGroupBackend
    LockCheck(ReplicaGroupBackend("http://127.0.0.1:2379"), faults=Faults(restarts=1))  # its restart: a failover


def test_the_command_line_refuses_a_bad_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--clients", "many"])
    assert exited.value.code == 2 and "invalid int value" in capsys.readouterr().err


class PlainLock:
    """A lock with neither a token nor a validity: a threading lock, as a system without fencing gives."""

    shared = threading.Lock()

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        return self.shared.acquire(blocking, -1 if timeout is None else timeout)

    def release(self) -> None:
        self.shared.release()


class PlainBackend(Backend):
    name = "plain"
    fencing_tokens = False

    @classmethod
    def open_lock(cls, config: str, name: str, term: float) -> Any:
        return PlainLock()


def test_a_client_of_a_backend_without_tokens_or_validity_writes_with_tickets_and_believes_throughout(
        tmp_path: Path, daemon: ServingDaemon) -> None:
    resource = FencedResource(tmp_path / "log")
    said: list[str] = []
    done = run_client(PlainBackend, "", daemon.register(resource), "c0.0", 3, writes=2, work=0.0,
                      say=lambda *words: said.append(" ".join(map(str, words))))
    resource.close()
    log = read_log(tmp_path / "log")
    assert done == 3 and said[0] == "ready" and said[-1] == "done 3"
    assert [(w.token, w.seq, w.believed, w.accepted) for w in log] == [
        (1, 1, True, True), (1, 2, True, True), (2, 3, True, True), (2, 4, True, True), (3, 5, True, True),
        (3, 6, True, True)]
    assert [line.split()[:2] for line in said if line.startswith("holding")] == [["holding", "1"], ["holding", "2"],
                                                                                  ["holding", "3"]]
