#!/usr/bin/env bash
# Benchmark: `coord run FILE -- true` against `flock FILE true` plus one extra process spawn.
#
# flock(1) takes a kernel lock and runs the command; `coord run` also writes the lock record
# (seed format), the backup and the presence, and releases them after. The baseline adds one
# process spawn (the median of `true`), because `coord run` is a process that spawns CMD where
# `flock FILE true` is one that execs it... and spawns it too; the extra spawn stands for the
# second program (coord itself being a larger binary than flock). Target: within 1.3x.
#
# Usage: bench/run.sh [RUNS]   (default 300; needs hyperfine, python3, flock; builds --release)
# Installs nothing: if hyperfine is missing it says how to get it
# (`apt-get install -y hyperfine`) and falls back to a python timing loop.
set -euo pipefail

runs="${1:-300}"
here="$(cd "$(dirname "$0")/.." && pwd)"

for tool in python3 flock; do
    command -v "$tool" >/dev/null || { echo "bench: $tool is needed" >&2; exit 1; }
done

(cd "$here" && cargo build --release --quiet)
coord="$here/target/release/coord"

ws="$(mktemp -d -t coord-bench-XXXXXX)"
trap 'rm -rf "$ws"' EXIT
cd "$ws"
echo 0 > counter.txt
export COORD_DIR="$ws" COORD_AGENT=bench
unset COORD_SESSION COORD_SESSION_PID

out="$ws/.times.json"
if command -v hyperfine >/dev/null; then
    tool="hyperfine $(hyperfine --version | awk '{print $2}')"
    hyperfine -N --warmup 30 --runs "$runs" --export-json "$out" \
        "$coord run counter.txt -- true" \
        "flock counter.txt true" \
        "true" >/dev/null
else
    echo "bench: hyperfine not found (apt-get install -y hyperfine); using a python loop" >&2
    tool="python3 subprocess loop"
    python3 - "$runs" "$out" "$coord" <<'PY'
import json, subprocess, sys, time
runs, out, coord = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cmds = [[coord, "run", "counter.txt", "--", "true"], ["flock", "counter.txt", "true"], ["true"]]
res = {" ".join(c): [] for c in cmds}
for _ in range(30):
    for c in cmds:
        subprocess.run(c, check=True)
for _ in range(runs):
    for c in cmds:  # interleaved, so load changes hit all alike
        t = time.perf_counter(); subprocess.run(c, check=True)
        res[" ".join(c)].append(time.perf_counter() - t)
json.dump({"results": [{"command": k, "times": v} for k, v in res.items()]}, open(out, "w"))
PY
fi

python3 - "$out" "$tool" "$runs" <<'PY'
import json, os, platform, statistics, sys
out, tool, runs = sys.argv[1], sys.argv[2], sys.argv[3]
res = {r["command"]: r["times"] for r in json.load(open(out))["results"]}
med = {k: statistics.median(v) * 1000 for k, v in res.items()}
run = next(v for k, v in med.items() if " run " in k)
flock = next(v for k, v in med.items() if k.startswith("flock"))
true = med["true"]
base = flock + true
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"machine: {cpu}, {os.cpu_count()} cores, Linux {platform.release()}, load {os.getloadavg()[0]:.2f}")
print(f"tool: {tool}, {runs} runs each, medians")
print(f"coord run counter.txt -- true : {run:.3f} ms")
print(f"flock counter.txt true        : {flock:.3f} ms")
print(f"true (one process spawn)      : {true:.3f} ms")
print(f"baseline flock + spawn        : {base:.3f} ms")
print(f"ratio coord run / baseline    : {run / base:.2f}x (target 1.30x)")
PY
