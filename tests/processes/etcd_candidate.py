"""A candidate for the leadership of a replica group, in a process of its own (tests/landlord/test_election.py).

    python tests/processes/etcd_candidate.py ENDPOINTS GROUP ID

It runs a :class:`landlord.replication.election.Election` and prints, each on a line of
its own as it happens::

    elected <revision>      it leads (on_elected)
    deposed <reason>        it no longer does (on_deposed)
    leader <id>|none        leader() changed (on_leader)

and answers commands read from stdin, one line each::

    leading                 -> "leading yes" | "leading no"
    write                   -> "write ok" | "write refused <why>": a write guarded by
                               Election.transaction (refused at once when not leading)
    write-as <revision>     -> "write-as ok" | "write-as refused <why>": the same write sent to
                               etcd guarded by that revision, whatever this candidate believes
    quit                    -> resigns, prints "bye" and exits
"""

from __future__ import annotations

import faulthandler
import sys
import threading

from landlord.replication.election import Election, LeadershipLost, connect, guarded_transaction

_print_lock = threading.Lock()


def say(line: str) -> None:
    with _print_lock:  # one write, line and newline: the log's lines share the pipe (stderr merged)
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def main(endpoints: str, group: str, candidate: str) -> int:
    client = connect(endpoints)
    election = Election(client, group=group, candidate=candidate,
                        on_elected=lambda revision: say(f"elected {revision}"),
                        on_deposed=lambda reason: say(f"deposed {reason}"),
                        on_leader=lambda leader: say(f"leader {leader or 'none'}"))
    try:
        written = f"/landlord/{group}/written"
        put = client.transactions.put(written, candidate)
        with election:
            for line in sys.stdin:
                command = line.split()
                if command == ["leading"]:
                    say(f"leading {'yes' if election.leading else 'no'}")
                elif command == ["write"]:
                    try:
                        election.transaction(success=[put])
                        say("write ok")
                    except LeadershipLost as exc:
                        say(f"write refused {exc}")
                elif command[:1] == ["write-as"] and len(command) == 2:
                    try:
                        guarded_transaction(client, election.key, int(command[1]), success=[put])
                        say("write-as ok")
                    except LeadershipLost as exc:
                        say(f"write-as refused {exc}")
                elif command == ["quit"]:
                    break
                else:
                    say(f"unknown command {line.strip()!r}")
    finally:  # its channel, and the watch stream on it, end now: an open stream can hold up the exit
        client.close()
    say("bye")
    # Exiting should take no time; if it hangs, the test's failure shows where (its output is read).
    faulthandler.dump_traceback_later(5.0, exit=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
