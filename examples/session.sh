#!/bin/sh
# Two agents in one folder, each under `coord session`: they clock in, hand-shake, take turns on
# a shared file, and clock out when their command ends. Run from anywhere:
#   sh examples/session.sh            (uses `coord` from PATH, or COORD=/path/to/coord)
set -eu

COORD=${COORD:-coord}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/coord-session-XXXXXX")
export COORD_DIR="$DIR"
echo "# Shared notes" > "$DIR/NOTES.md"
cd "$DIR" # FILE arguments are relative to the current directory, as with any command

# What each agent does inside its session. COORD_AGENT, COORD_SESSION and COORD_SESSION_PID are
# set by `coord session`; locks taken here are released when the session ends.
agent_work='
  set -e
  "$COORD" handshake --wait 30s
  "$COORD" lock NOTES.md --wait 30s
  echo "- $COORD_AGENT was here (session $COORD_SESSION)" >> "$COORD_DIR/NOTES.md"
  sleep 1
  "$COORD" unlock NOTES.md
'

export COORD
"$COORD" session --partner claude --task "write notes" -- sh -c "$agent_work" &
"$COORD" session --partner gemini --task "write notes" -- sh -c "$agent_work" &
wait

echo
cat "$DIR/NOTES.md"
echo
"$COORD" partners
echo
"$COORD" status
echo
echo "The folder is $DIR"
