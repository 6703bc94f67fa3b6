#!/usr/bin/env bash
# The cost of a heartbeat and of a session's clock-in + clock-out as the stamp card's history
# grows: ROWS sessions of 16 partners clocked in and out first, then one partner online.
#
#   bench/stamp_card.sh [COORD] [ROWS...]   # defaults: the release build; 1 300 1000
#
# Prints CPU time (perf stat task-clock, else wall clock) of `coord presence . x` (the heartbeat
# a hook or an agent makes: presence and open stamp-card rows) and of `coord startup` +
# `coord shutdown`, for each ROWS.
set -euo pipefail
coord=${1:-target/release/coord}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1 300 1000)
coord=$(realpath "$coord")
measure() {
    local runs=$1
    shift
    if command -v perf >/dev/null; then
        perf stat -r "$runs" -e task-clock "$@" 2>&1 >/dev/null |
            awk '/task-clock/ {print $1 " ms CPU"}'
    else
        local t0 t1
        t0=$(date +%s%N)
        for _ in $(seq "$runs"); do "$@" >/dev/null; done
        t1=$(date +%s%N)
        echo "$(((t1 - t0) / runs / 1000)) µs wall"
    fi
}
echo "| rows on the card | heartbeat (\`coord presence\`) | \`startup\` + \`shutdown\` |"
echo "|---|---|---|"
for n in "${sizes[@]}"; do
    d=$(mktemp -d)
    (
        cd "$d"
        for i in $(seq 1 "$n"); do
            p=old$((i % 16))
            COORD_AGENT=$p "$coord" startup --partner "$p" >/dev/null
            COORD_AGENT=$p "$coord" shutdown >/dev/null
        done
        COORD_AGENT=claude "$coord" startup --partner claude >/dev/null
        hb=$(measure 200 env COORD_AGENT=claude "$coord" presence . x)
        cycle=$(measure 50 sh -c "COORD_AGENT=claude '$coord' startup --partner claude >/dev/null; COORD_AGENT=claude '$coord' shutdown >/dev/null")
        echo "| $n | $hb | $cycle |"
    )
    rm -rf "$d"
done
