#!/usr/bin/env bash
# Run coord's benchmarks against the reference tools and print a markdown report.
#
#   bench/run.sh            # all: lock, mcp, wake, status, deadlock
#   bench/run.sh lock wake  # some
#
# Reference tools: dotlockfile (liblockfile-bin) and flock (util-linux). On Debian/Ubuntu the
# script installs dotlockfile when it is missing and it can (root or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v dotlockfile >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get install -y -qq liblockfile-bin >/dev/null 2>&1 || true
    elif command -v sudo >/dev/null && command -v apt-get >/dev/null; then
        sudo apt-get install -y -qq liblockfile-bin >/dev/null 2>&1 || true
    fi
fi
cargo bench --bench coord -- "$@"
