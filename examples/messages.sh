#!/usr/bin/env bash
# Two agents talk through coord: a direct message, a broadcast, a wait, a note and the
# seed 000 collaboration file. Runs in a fresh temporary folder.
#
#   examples/messages.sh            (uses `coord` from PATH, or COORD=path/to/coord)
set -euo pipefail
COORD=${COORD:-coord}
export COORD_DIR
COORD_DIR=$(mktemp -d "${TMPDIR:-/tmp}/coord-messages-XXXXXX")
cd "$COORD_DIR"
echo "# workspace: $COORD_DIR"

"$COORD" -a claude presence "$COORD_DIR" "writing the intro"
"$COORD" -a gemini presence "$COORD_DIR" "checking numbers"

echo "# gemini waits for mail in the background"
"$COORD" -a gemini msg wait --timeout 30s > wait.out &
waiter=$!
sleep 0.3

echo "# claude sends one direct message and one broadcast"
id=$("$COORD" -a claude msg send gemini "Intro done; SHARED.txt is yours")
"$COORD" -a claude msg send all "Lunch in 10 minutes"
wait "$waiter"
echo "# gemini woke up with:"; cat wait.out; rm wait.out

echo "# gemini reads the direct message; the broadcast stays unread"
"$COORD" -a gemini msg read "$id"
"$COORD" -a gemini msg list --unread

echo "# a note in the shared file, under its lock"
printf '# Shared\n' > SHARED.txt
"$COORD" -a gemini note SHARED.txt "numbers in section 2 checked"
cat SHARED.txt

echo "# the collaboration file"
"$COORD" -a Claude collab write "I take the parser"
"$COORD" -a Gemini collab write "I take the tests"
"$COORD" collab read

"$COORD" status
