#!/usr/bin/env bash
# One agent's turn under Protocol V3: announce, lock, edit, unlock.
#
#   COORD_AGENT=claude examples/agent_turn.sh SHARED.txt "line to add"
set -euo pipefail
file=${1:?usage: agent_turn.sh FILE TEXT}
text=${2:?usage: agent_turn.sh FILE TEXT}
: "${COORD_AGENT:?set COORD_AGENT to your agent name}"

coord presence . "editing $file"
coord check                                   # who else is here?

# Wait up to 5 minutes for the lock; exit 3 means someone else kept it.
if ! coord lock "$file" --wait 5m --reason "adding a line"; then
    echo "could not get $file; try later" >&2
    exit 3
fi
trap 'coord unlock "$file" -q' EXIT           # release whatever happens

printf '%s\n' "$text" >> "$file"              # the edit ($file.bak holds the previous version)
