#!/usr/bin/env bash
# Measure how fast `coord dialogue wait` wakes after the other agent's `coord dialogue say`.
#
# Each round: AGENT-2 runs `coord dialogue wait --as AGENT-2` in the background; once it is
# subscribed, AGENT-1 runs `coord dialogue say`; we record the time from the start of that
# `say` to the return of the `wait` (wake), and the `say` process's own run time. AGENT-2 then
# passes the turn back. Prints median and p95 of both over ROUNDS rounds (default 30).
#
#   bench/dialogue_wait.sh            # uses target/release/coord (else target/debug/coord)
#   COORD=/path/to/coord ROUNDS=50 bench/dialogue_wait.sh
set -euo pipefail
cd "$(dirname "$0")/.."
built=${CARGO_TARGET_DIR:-target}
COORD=${COORD:-$( [ -x "$built/release/coord" ] && echo "$built/release/coord" || echo "$built/debug/coord" )}
COORD=$(realpath "$COORD")
ROUNDS=${ROUNDS:-30}
WORK=$(mktemp -d -t coord-bench-dialogue-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
export COORD_DIR=$WORK
unset COORD_AGENT
now_us() { echo $(( $(date +%s%N) / 1000 )); }

"$COORD" -q dialogue init --topic "wake-up benchmark"
"$COORD" -q dialogue say --as AGENT-1 "warm-up"
"$COORD" -q dialogue say --as AGENT-2 "warm-up"

wakes=() says=()
for i in $(seq 1 "$ROUNDS"); do
  ( "$COORD" -q dialogue wait --as AGENT-2 --timeout 30s && now_us > "$WORK/woke" ) &
  waiter=$!
  sleep 0.3   # let the waiter start and subscribe before the turn changes
  t0=$(now_us)
  "$COORD" -q dialogue say --as AGENT-1 "round $i"
  t_say=$(now_us)
  wait "$waiter"
  t1=$(cat "$WORK/woke")
  wakes+=( $(( t1 - t0 )) )
  says+=( $(( t_say - t0 )) )
  "$COORD" -q dialogue say --as AGENT-2 "ack $i"
done

stats() { # prints "median p95" in ms of the microsecond values given
  printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END {
    m = v[int((NR + 1) / 2)]; p = v[int(NR * 0.95 + 0.999)]; if (p == "") p = v[NR];
    printf "%.1f %.1f\n", m / 1000, p / 1000 }'
}
read -r wm wp < <(stats "${wakes[@]}")
read -r sm sp < <(stats "${says[@]}")
echo "coord: $COORD"
echo "rounds: $ROUNDS"
echo "say start -> other side's wait returns: median ${wm} ms, p95 ${wp} ms"
echo "say process run time (for reference):    median ${sm} ms, p95 ${sp} ms"
