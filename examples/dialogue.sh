#!/usr/bin/env bash
# Two agents hold a six-message dialogue through coord, each in its own loop of
# `coord dialogue wait` and `coord dialogue say`. Run from anywhere; needs `coord` on PATH
# (or COORD=/path/to/coord).
set -euo pipefail
COORD=${COORD:-coord}
export COORD_DIR=$(mktemp -d -t coord-dialogue-example-XXXXXX)
echo "workspace: $COORD_DIR"

"$COORD" dialogue init --topic "Should the cache be write-through?"

agent() {   # agent ID ROUNDS: wait for the turn, read, answer
  local me=$1 rounds=$2
  for i in $(seq 1 "$rounds"); do
    "$COORD" -q dialogue wait --as "$me" --timeout 60s || return 0
    local seen
    seen=$("$COORD" dialogue turn --json | grep -o '"message_count": [0-9]*' | grep -o '[0-9]*$')
    if [ "$me" = AGENT-2 ] && [ "$i" = "$rounds" ]; then
      "$COORD" dialogue say --as "$me" "I have read $seen messages. Let us stop here." \
        --marker AGREEMENT --marker PROPOSE-END
    else
      "$COORD" dialogue say --as "$me" "Round $i from $me: I have read $seen messages."
    fi
  done
}

agent AGENT-1 3 &
agent AGENT-2 3 &
wait

"$COORD" dialogue show
"$COORD" dialogue turn
