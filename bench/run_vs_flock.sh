#!/usr/bin/env bash
# Benchmark: `coord run FILE -- true` against `flock FILE true` plus one extra process spawn.
#
# flock(1) takes a kernel lock and runs the command. `coord run` also publishes the lock record
# (seed format), the backup and the presence, and removes them after; and it is one more
# program to start, hence the baseline: median(flock FILE true) + median(true). Target: 1.3x.
#
# The commands are measured in interleaved rounds (so a change in machine load hits all of
# them alike), wall-clock medians, plus the median CPU time (user + system, children included),
# which a loaded machine disturbs much less.
#
# Usage: bench/run_vs_flock.sh [RUNS] [DIR]   (RUNS default 300, DIR: where the workspace is made,
# default the system temp folder). Needs python3, flock; builds --release. Installs nothing:
# without hyperfine (`apt-get install -y hyperfine`) it falls back to a python timing loop.
set -euo pipefail

runs="${1:-300}"
here="$(cd "$(dirname "$0")/.." && pwd)"

for tool in python3 flock; do
    command -v "$tool" >/dev/null || { echo "bench: $tool is needed" >&2; exit 1; }
done

(cd "$here" && cargo build --release --quiet)
coord="${CARGO_TARGET_DIR:-$here/target}/release/coord"

ws="$(mktemp -d "${2:-${TMPDIR:-/tmp}}/coord-bench-XXXXXX")"
trap 'rm -rf "$ws"' EXIT
cd "$ws"
echo 0 > counter.txt
export COORD_DIR="$ws" COORD_AGENT=bench
unset COORD_SESSION COORD_SESSION_PID

out="$ws/.times.json"
if command -v hyperfine >/dev/null; then
    tool="hyperfine $(hyperfine --version | awk '{print $2}') -N, 5 interleaved rounds"
    rounds=5
    per=$(( (runs + rounds - 1) / rounds ))
    for r in $(seq "$rounds"); do
        hyperfine -N --warmup 10 --runs "$per" --export-json "$ws/.round-$r.json" \
            "$coord run counter.txt -- true" \
            "flock counter.txt true" \
            "true" >/dev/null 2>&1
    done
    python3 - "$out" "$ws"/.round-*.json <<'PY'
import json, sys
merged = {}
for path in sys.argv[2:]:
    for r in json.load(open(path))["results"]:
        m = merged.setdefault(r["command"], {"command": r["command"], "times": [], "cpu": []})
        m["times"] += r["times"]
        # hyperfine gives the mean CPU time of a round; the median is then over rounds.
        m["cpu"].append(r["user"] + r["system"])
json.dump({"results": list(merged.values())}, open(sys.argv[1], "w"))
PY
else
    echo "bench: hyperfine not found (apt-get install -y hyperfine); using a python loop" >&2
    tool="python3 subprocess loop"
    python3 - "$runs" "$out" "$coord" <<'PY'
import json, subprocess, sys, time
runs, out, coord = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cmds = [[coord, "run", "counter.txt", "--", "true"], ["flock", "counter.txt", "true"], ["true"]]
import resource
res = {" ".join(c): [] for c in cmds}
cpu = {" ".join(c): [] for c in cmds}
for _ in range(30):
    for c in cmds:
        subprocess.run(c, check=True)
for _ in range(runs):
    for c in cmds:  # interleaved, so load changes hit all alike
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter(); subprocess.run(c, check=True)
        res[" ".join(c)].append(time.perf_counter() - t)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[" ".join(c)].append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
json.dump({"results": [{"command": k, "times": v, "cpu": cpu[k]} for k, v in res.items()]}, open(out, "w"))
PY
fi

python3 - "$out" "$tool" "$runs" <<'PY'
import json, os, platform, statistics, sys
out, tool, runs = sys.argv[1], sys.argv[2], sys.argv[3]
results = json.load(open(out))["results"]
def med(key, pick):
    r = next(r for r in results if pick(r["command"]))
    return statistics.median(r[key]) * 1000
is_run = lambda c: " run " in c
is_flock = lambda c: c.startswith("flock")
is_true = lambda c: c == "true"
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
fs = os.popen(f"stat -f -c %T {os.path.dirname(out)}").read().strip()
print(f"machine: {cpu}, {os.cpu_count()} cores, Linux {platform.release()}, {fs} filesystem, load {os.getloadavg()[0]:.2f}")
print(f"tool: {tool}, {runs} runs each, medians")
for key, label in (("times", "wall clock"), ("cpu", "CPU time (user+sys)")):
    run, flock, true = med(key, is_run), med(key, is_flock), med(key, is_true)
    base = flock + true
    print(f"-- {label}")
    print(f"coord run counter.txt -- true : {run:.3f} ms")
    print(f"flock counter.txt true        : {flock:.3f} ms")
    print(f"true (one process spawn)      : {true:.3f} ms")
    print(f"baseline flock + spawn        : {base:.3f} ms")
    print(f"ratio coord run / baseline    : {run / base:.2f}x (target 1.30x)")
PY
