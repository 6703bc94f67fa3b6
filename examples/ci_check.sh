#!/usr/bin/env bash
# A CI step: fail when the shared folder has stale or conflicting locks, and show why.
set -euo pipefail
if ! coord check --strict; then
    coord status
    exit 4
fi
# Machine-readable: list every lock that is not LIVE.
coord status --json | python3 -c '
import json, sys
for lock in json.load(sys.stdin)["locks"]:
    if lock["state"] != "LIVE":
        print(lock["file"], lock["agent"], lock["state"])
'
