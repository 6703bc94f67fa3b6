#!/usr/bin/env bash
# Benchmark: what the plugin's hook costs a client in a repository nobody set up, against a
# hook that does nothing (`true`).
#
# A client runs a hook as a shell command with the event's JSON on stdin and waits for it. Both
# hooks are run that way here (`sh -c COMMAND`, payload on stdin, from one python process that
# stands for the client), in interleaved rounds so a change in machine load hits all of them
# alike; wall-clock medians and p95. The repository is a fresh `git init` with one commit and no
# `coord init`: the first hook call adopts it (`.coord/`, `.git/info/exclude`), the measured
# calls are the ones after it. Cases, each against `true`:
#
#   PreToolUse of Bash (`ls`)        the shell tool: a heartbeat
#   PreToolUse of Write              the edit tool: lock (held already after the first: a renewal)
#   PostToolUse of Write             heartbeat and renewal
#   PreToolUse of Write, turned off  `git config coord.enabled false`: read, decide, exit
#
# Usage: bench/plugin_hook.sh [RUNS] [COORD]   (RUNS default 300; COORD default: a release
# build of this checkout). Needs python3 and git. Goal: 1.5x `true` or less.
set -euo pipefail

runs="${1:-300}"
here="$(cd "$(dirname "$0")/.." && pwd)"
if [ -n "${2:-}" ]; then
    coord="$2"
else
    (cd "$here" && cargo build --release --quiet)
    target="${CARGO_TARGET_DIR:-$here/target}"
    coord="$target/$(rustc -vV | sed -n 's/^host: //p')/release/coord"
fi

ws="$(mktemp -d "${TMPDIR:-/tmp}/coord-plugin-bench-XXXXXX")"
trap 'rm -rf "$ws"' EXIT

python3 - "$coord" "$ws" "$runs" <<'PY'
import json, os, resource, statistics, subprocess, sys, time

coord, ws, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])

def repo(name, off=False):
    d = os.path.join(ws, name)
    os.makedirs(d)
    git = lambda *a: subprocess.run(["git", "-C", d, *a], check=True, capture_output=True)
    git("init", "-q")
    with open(os.path.join(d, "a.txt"), "w") as f:
        f.write("one\n")
    git("add", "a.txt")
    git("-c", "user.email=b@example.com", "-c", "user.name=b", "commit", "-qm", "init")
    if off:
        git("config", "coord.enabled", "false")
    return d

on, off = repo("on"), repo("off", off=True)
hook = f"{coord} hook claude --plugin"

def payload(d, event, tool, args):
    return json.dumps({"hook_event_name": event, "session_id": "b3nch000-0000", "cwd": d,
                       "tool_name": tool, "tool_input": args}).encode()

cases = [
    ("PreToolUse of Bash (`ls`)", hook, payload(on, "PreToolUse", "Bash", {"command": "ls"})),
    ("PreToolUse of Write", hook,
     payload(on, "PreToolUse", "Write", {"file_path": os.path.join(on, "a.txt"), "content": "x"})),
    ("PostToolUse of Write", hook,
     payload(on, "PostToolUse", "Write", {"file_path": os.path.join(on, "a.txt"), "content": "x"})),
    ("PreToolUse of Write, turned off", hook,
     payload(off, "PreToolUse", "Write", {"file_path": os.path.join(off, "a.txt"), "content": "x"})),
]
baseline = ("`true` as the hook", "true", payload(on, "PreToolUse", "Write", {}))

def cpu():
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime

def once(cmd, data):
    c = cpu()
    t = time.perf_counter()
    r = subprocess.run(["sh", "-c", cmd], input=data, capture_output=True)
    dt = time.perf_counter() - t
    if r.returncode != 0 or b"deny" in r.stdout:
        sys.exit(f"bench: `{cmd}` failed: {r.stdout!r} {r.stderr!r}")
    cpus[cmd + repr(data)].append(cpu() - c)
    return dt

cpus = {cmd + repr(data): [] for _, cmd, data in [baseline] + cases}

# Adopt the repository, warm the caches.
for _, cmd, data in [baseline] + cases:
    for _ in range(5):
        once(cmd, data)
assert os.path.isfile(os.path.join(on, ".coord", ".gitignore"))
assert not os.path.exists(os.path.join(off, ".coord"))
status = subprocess.run(["git", "-C", on, "status", "--porcelain", "--untracked-files=all"],
                        capture_output=True, text=True).stdout
assert status == "", f"git status shows coord's files: {status!r}"

times = {name: [] for name, _, _ in [baseline] + cases}
for k in cpus:
    cpus[k].clear()
for _ in range(runs):
    for name, cmd, data in [baseline] + cases:
        times[name].append(once(cmd, data))

ms = lambda s: f"{s * 1000:.2f} ms"
p95 = lambda xs: sorted(xs)[int(len(xs) * 0.95) - 1]
base = statistics.median(times[baseline[0]])
# CPU time (user + system of the shell and the hook) is counted in clock ticks, so its mean
# over the runs is the figure; a loaded machine disturbs it much less than wall time.
cpu_of = lambda cmd, data: statistics.mean(cpus[cmd + repr(data)])
base_cpu = cpu_of(baseline[1], baseline[2])
print(f"load {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores")
print()
print("| one hook call, as a client runs it (`sh -c`, payload on stdin) | wall median | p95 | / `true` | CPU mean | / `true` | runs |")
print("|---|---|---|---|---|---|---|")
for name, cmd, data in [baseline] + cases:
    xs = times[name]
    med = statistics.median(xs)
    c = cpu_of(cmd, data)
    print(f"| {name} | {ms(med)} | {ms(p95(xs))} | {med / base:.2f}x | {ms(c)} | {c / base_cpu:.2f}x | {len(xs)} |")
PY
