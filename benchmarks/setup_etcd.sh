#!/usr/bin/env bash
# Install what benchmarks/bench_etcd.py compares against: Debian's etcd server
# (apt-get, when the `etcd` binary is missing) and a Python etcd client (pip,
# into the project's virtualenv). Prints what it did, or why it could not.
#
#   bash benchmarks/setup_etcd.sh                    # the client goes into ./.venv
#   bash benchmarks/setup_etcd.sh .venv/bin/python   # or into this interpreter's environment
#   VENV=/path/to/venv bash benchmarks/setup_etcd.sh
#
# Exit status: 0 when both etcd and the client are usable afterwards, 1 when
# either is not (the benchmark then runs without etcd and says so).
#
# The client is etcd-sdk-python (module `pyetcd`, the `etcd` extra): a maintained fork of the
# `etcd3` gRPC client whose generated code needs protobuf >= 5.27.2, which its
# own metadata forgets to require; hence the explicit protobuf requirement.
# (`etcd3` itself needs protobuf <= 3.20 or the slow pure-Python protobuf;
# `etcd3gw` goes through etcd's HTTP/JSON gateway, about half as fast.)

set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
PY="${1:-$VENV/bin/python}"
CLIENT_REQUIREMENTS=("-e" "$ROOT[etcd]")  # the etcd extra of pyproject.toml

etcd_ok=0
client_ok=0

say() { printf '%s\n' "setup_etcd: $*"; }

# -- the etcd server ------------------------------------------------------------------

if command -v etcd >/dev/null 2>&1; then
    say "etcd: already installed: $(command -v etcd) ($(etcd --version 2>/dev/null | head -n 1))"
    etcd_ok=1
elif ! command -v apt-get >/dev/null 2>&1; then
    say "etcd: NOT installed: no etcd on PATH and no apt-get here; install etcd 3.4+ yourself"
elif [ "$(id -u)" -ne 0 ]; then
    say "etcd: NOT installed: no etcd on PATH and not root; run: sudo apt-get install etcd-server"
else
    say "etcd: not found; running apt-get update, then apt-get install -y etcd-server..."
    if ! DEBIAN_FRONTEND=noninteractive apt-get update -q >/tmp/setup_etcd.apt.log 2>&1; then
        say "etcd: NOT installed: apt-get update failed (last lines of /tmp/setup_etcd.apt.log):"
        tail -n 5 /tmp/setup_etcd.apt.log | sed 's/^/    /'
    elif ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q etcd-server >>/tmp/setup_etcd.apt.log 2>&1; then
        say "etcd: NOT installed: apt-get install etcd-server failed (last lines of /tmp/setup_etcd.apt.log):"
        tail -n 5 /tmp/setup_etcd.apt.log | sed 's/^/    /'
    elif command -v etcd >/dev/null 2>&1; then
        say "etcd: installed Debian's etcd-server: $(command -v etcd) ($(etcd --version 2>/dev/null | head -n 1))"
        say "      (the package may enable a system etcd service on 127.0.0.1:2379; the benchmark does not"
        say "       use it: it starts an etcd of its own on free loopback ports)"
        etcd_ok=1
    else
        say "etcd: NOT usable: etcd-server installed but no etcd binary on PATH"
    fi
fi

# -- the Python client -------------------------------------------------------------------

if ! command -v "$PY" >/dev/null 2>&1; then
    say "client: NOT installed: no Python at $PY (run 'make test' or 'python3 -m venv $VENV' first)"
elif "$PY" -c "from pyetcd import Etcd3Client, etcdrpc" >/dev/null 2>&1; then
    say "client: already installed for $PY: $("$PY" -m pip show etcd-sdk-python 2>/dev/null | sed -n 's/^Version: /etcd-sdk-python /p')"
    client_ok=1
else
    say "client: installing ${CLIENT_REQUIREMENTS[*]} for $PY with pip..."
    if ! "$PY" -m pip install --quiet "${CLIENT_REQUIREMENTS[@]}" >/tmp/setup_etcd.pip.log 2>&1; then
        say "client: NOT installed: pip failed (last lines of /tmp/setup_etcd.pip.log):"
        tail -n 5 /tmp/setup_etcd.pip.log | sed 's/^/    /'
    elif ! import_error="$("$PY" -c "from pyetcd import Etcd3Client, etcdrpc" 2>&1)"; then
        say "client: NOT usable: installed, but 'from pyetcd import Etcd3Client, etcdrpc' fails:"
        printf '%s\n' "$import_error" | tail -n 3 | sed 's/^/    /'
    else
        say "client: installed $("$PY" -c 'import importlib.metadata as m; print("etcd-sdk-python", m.version("etcd-sdk-python") + ", grpcio", m.version("grpcio") + ", protobuf", m.version("protobuf"))')"
        client_ok=1
    fi
fi

if [ "$etcd_ok" -eq 1 ] && [ "$client_ok" -eq 1 ]; then
    say "ready: run $PY benchmarks/bench_etcd.py"
    exit 0
fi
say "incomplete: benchmarks/bench_etcd.py will report landlord figures only, with the reason"
exit 1
