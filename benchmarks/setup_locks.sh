#!/usr/bin/env bash
# Install what benchmarks/bench_locks.py compares against, where it is missing:
# Debian's ZooKeeper (`zookeeperd`: the server's jars, run by the benchmark with
# the java already here) and Redis (`redis-server`) with apt-get, and their
# Python clients, kazoo and redis-py (the `bench` extra of pyproject.toml), with
# pip into the project's virtualenv. etcd and its client: benchmarks/setup_etcd.sh.
# Prints what it did, or why it could not.
#
#   bash benchmarks/setup_locks.sh                    # the clients go into ./.venv
#   bash benchmarks/setup_locks.sh .venv/bin/python   # or into this interpreter's environment
#   VENV=/path/to/venv bash benchmarks/setup_locks.sh
#
# Exit status: 0 when both servers and both clients are usable afterwards, 1
# when one is not (the benchmark then measures the others and says why).
#
# The packages may enable system services (ZooKeeper on 2181, Redis on 6379);
# the benchmark uses none: it starts servers of its own on free loopback ports.

set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
PY="${1:-$VENV/bin/python}"
ZOOKEEPER_JAR=/usr/share/java/zookeeper.jar  # Debian's; its manifest names the jars it needs
LOG=/tmp/setup_locks.log

missing=0
updated=0

say() { printf '%s\n' "setup_locks: $*"; }

# apt-get update, once
apt_update() {
    [ "$updated" -eq 1 ] && return 0
    updated=1
    DEBIAN_FRONTEND=noninteractive apt-get update -q >"$LOG" 2>&1
}

# apt_install WHAT PACKAGE CHECK...: install PACKAGE unless the command CHECK succeeds already
apt_install() {
    local what="$1" package="$2"
    shift 2
    if "$@" >/dev/null 2>&1; then
        say "$what: already installed"
        return 0
    elif ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" -ne 0 ]; then
        say "$what: NOT installed: needs apt-get as root; run: sudo apt-get install $package"
    elif ! apt_update; then
        say "$what: NOT installed: apt-get update failed (last lines of $LOG):"
        tail -n 5 "$LOG" | sed 's/^/    /'
    elif ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$package" >>"$LOG" 2>&1; then
        say "$what: NOT installed: apt-get install $package failed (last lines of $LOG):"
        tail -n 5 "$LOG" | sed 's/^/    /'
    elif "$@" >/dev/null 2>&1; then
        say "$what: installed Debian's $package"
        return 0
    else
        say "$what: NOT usable: $package installed, but '$*' fails"
    fi
    missing=1
}

apt_install "ZooKeeper" zookeeperd test -r "$ZOOKEEPER_JAR"
command -v java >/dev/null 2>&1 || { say "ZooKeeper: NOT usable: no java on PATH (apt-get install default-jre-headless)"; missing=1; }
apt_install "Redis" redis-server command -v redis-server

# -- the Python clients -------------------------------------------------------------------

if ! command -v "$PY" >/dev/null 2>&1; then
    say "clients: NOT installed: no Python at $PY (run 'make test' or 'python3 -m venv $VENV' first)"
    missing=1
elif "$PY" -c "import kazoo.client, redis" >/dev/null 2>&1; then
    say "clients: already installed for $PY"
elif ! "$PY" -m pip install --quiet -e "$ROOT[bench]" >"$LOG.pip" 2>&1; then
    say "clients: NOT installed: pip install -e '.[bench]' failed (last lines of $LOG.pip):"
    tail -n 5 "$LOG.pip" | sed 's/^/    /'
    missing=1
elif ! "$PY" -c "import kazoo.client, redis" >/dev/null 2>&1; then
    say "clients: NOT usable: installed, but 'import kazoo.client, redis' fails"
    missing=1
else
    say "clients: installed kazoo and redis for $PY"
fi

if [ "$missing" -eq 0 ]; then
    say "ready: run $PY benchmarks/bench_locks.py"
    exit 0
fi
say "incomplete: benchmarks/bench_locks.py will measure the others and say why"
exit 1
