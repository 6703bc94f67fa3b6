#!/usr/bin/env bash
# Benchmark: what the plugin's hook costs a client in a repository nobody set up, against a
# hook that does nothing (`true`). Every command is run as the plugin registers it, behind
# `exec`. bench/plugin_hook_client.mjs measures the same through Node, as the clients run hooks.
#
# A client runs a hook as a shell command with the event's JSON on stdin and waits for it. Every
# hook is run that way here (`sh -c COMMAND`, payload on stdin, from one python process that
# stands for the client), in interleaved rounds so a change in machine load hits all of them
# alike; wall-clock medians and the mean CPU time (user + system of the shell and the hook, from
# `getrusage`). The repository is a fresh `git init` with one commit and no `coord init`: the
# first hook call adopts it (`.coord/`, `.git/info/exclude`), the measured calls are the ones
# after it. One round is one session's turn, in this order:
#
#   `true`                           the hook that does nothing (a shell builtin: no exec)
#   `exec /bin/true`                 the cheapest hook that is a program: one exec
#   `exec coord --version`           coord's own start and exit, nothing read
#   SessionStart                     clock in, the context (who else is here)
#   PreToolUse of Bash (`ls`)        the shell tool: a heartbeat
#   PreToolUse of Write, free file   the edit tool: lock taken (with `.bak`)
#   PreToolUse of Write, own file    the same file again: a renewal
#   PostToolUse of Write             heartbeat and renewal
#   PreToolUse of Write, held file   another agent holds it: denied (`--wait 0`; the plugin's
#                                    default waits up to 2 s for the holder first)
#   Stop                             the turn is over: the lock released
#   SessionEnd                       clock out (the next round is a new session of the client)
#   PreToolUse of Write, turned off  `git config coord.enabled false`: read, decide, exit
#
# Usage: bench/plugin_hook.sh [RUNS] [COORD [COORD_BEFORE]]   (RUNS default 300; COORD default:
# a release build of this checkout). With COORD_BEFORE, both binaries run every case, in turns
# (the order alternates each round), each in its own repository, and the table shows both.
# Needs python3 and git. Floor: 2x `true` (judged as a client runs it: bench/plugin_hook_client.mjs).
set -euo pipefail

runs="${1:-300}"
here="$(cd "$(dirname "$0")/.." && pwd)"
if [ -n "${2:-}" ]; then
    coord="$2"
else
    (cd "$here" && cargo build --release --quiet)
    target="${CARGO_TARGET_DIR:-$here/target}"
    coord="$target/release/coord"
fi
before="${3:-}"

ws="$(mktemp -d "${TMPDIR:-/tmp}/coord-plugin-bench-XXXXXX")"
trap 'rm -rf "$ws"' EXIT

python3 - "$ws" "$runs" "$coord" $before <<'PY'
import json, os, resource, statistics, subprocess, sys, time

ws, runs, builds = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
labels = ["after", "before"] if len(builds) == 2 else [""]

def repo(name, off=False):
    d = os.path.join(ws, name)
    os.makedirs(d)
    git = lambda *a: subprocess.run(["git", "-C", d, *a], check=True, capture_output=True)
    git("init", "-q")
    for f in ("a.txt", "held.txt"):
        with open(os.path.join(d, f), "w") as fh:
            fh.write("one\n")
    git("add", "a.txt", "held.txt")
    git("-c", "user.email=b@example.com", "-c", "user.name=b", "commit", "-qm", "init")
    if off:
        git("config", "coord.enabled", "false")
    return d

def payload(d, event, tool=None, args=None):
    p = {"hook_event_name": event, "session_id": "b3nch000-0000", "cwd": d}
    if tool:
        p["tool_name"], p["tool_input"] = tool, args
    if event == "SessionStart":
        p["source"] = "startup"
    if event == "Stop":
        p["stop_hook_active"] = False
    if event == "SessionEnd":
        p["reason"] = "exit"
    return json.dumps(p).encode()

def cases(coord, tag):
    on, off = repo("on" + tag), repo("off" + tag, off=True)
    # As the plugin registers it (coord plugin write): the shell becomes coord.
    hook = f"exec {coord} hook claude --plugin"
    write = lambda d, f: payload(d, "PreToolUse", "Write", {"file_path": os.path.join(d, f), "content": "x"})
    return on, [
        ("`true` as the hook", "true", payload(on, "PreToolUse", "Write", {}), None),
        ("`exec /bin/true` (one exec)", "exec /bin/true", payload(on, "PreToolUse", "Write", {}), None),
        ("`exec coord --version` (start, exit)", f"exec {coord} --version", b"", None),
        ("SessionStart (clock in, the context)", hook, payload(on, "SessionStart"), b"additionalContext"),
        ("PreToolUse of Bash (`ls`): heartbeat", hook, payload(on, "PreToolUse", "Bash", {"command": "ls"}), None),
        ("PreToolUse of Write, free file: lock", hook, write(on, "a.txt"), None),
        ("PreToolUse of Write, own file: renewal", hook, write(on, "a.txt"), None),
        ("PostToolUse of Write: heartbeat, renewal", hook,
         payload(on, "PostToolUse", "Write", {"file_path": os.path.join(on, "a.txt"), "content": "x"}), None),
        ("PreToolUse of Write, held file: denied", f"{hook} --wait 0", write(on, "held.txt"), b"deny"),
        ("Stop: release", hook, payload(on, "Stop"), None),
        ("SessionEnd: clock out", hook, payload(on, "SessionEnd"), None),
        ("PreToolUse of Write, turned off", hook, write(off, "a.txt"), None),
    ]

def cpu():
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime

def once(key, cmd, data, want):
    c = cpu()
    t = time.perf_counter()
    r = subprocess.run(["sh", "-c", cmd], input=data, capture_output=True)
    dt = time.perf_counter() - t
    ok = r.returncode == 0 and b"warning" not in r.stderr
    ok = ok and (want in r.stdout if want else b"deny" not in r.stdout)
    if not ok:
        sys.exit(f"bench: `{cmd}` failed: {r.stdout!r} {r.stderr!r}")
    cpus[key].append(cpu() - c)
    times[key].append(dt)

sets = []
for coord, tag in zip(builds, labels):
    on, cs = cases(coord, tag)
    # Another agent holds `held.txt` for the whole run.
    subprocess.run([coord, "-a", "holder", "lock", "held.txt"], cwd=on, check=True,
                   capture_output=True)
    sets.append((tag, cs))
    status_of = on

times = {(tag, name): [] for tag, cs in sets for name, *_ in cs}
cpus = {k: [] for k in times}

# Adopt the repositories, warm the caches.
for _ in range(3):
    for tag, cs in sets:
        for name, cmd, data, want in cs:
            once((tag, name), cmd, data, want)
for tag, _ in sets:
    on = os.path.join(ws, "on" + tag)
    assert os.path.isfile(os.path.join(on, ".coord", ".gitignore"))
    assert not os.path.exists(os.path.join(ws, "off" + tag, ".coord"))
    status = subprocess.run(["git", "-C", on, "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True).stdout
    assert status == "", f"git status shows coord's files: {status!r}"
for k in times:
    times[k].clear()
    cpus[k].clear()

load0 = os.getloadavg()[0]
for i in range(runs):
    order = sets if i % 2 == 0 else sets[::-1]
    for tag, cs in order:
        for name, cmd, data, want in cs:
            once((tag, name), cmd, data, want)

ms = lambda s: f"{s * 1000:.2f} ms"
print(f"{time.strftime('%Y-%m-%d %H:%M %Z')}; {os.cpu_count()} cores; load {load0:.2f} at the start, "
      f"{os.getloadavg()[0]:.2f} at the end; {runs} rounds")
print()
head = "| one hook call, as a client runs it (`sh -c`, payload on stdin) |"
rule = "|---|"
for tag, _ in sets:
    t = f" {tag}" if tag else ""
    head += f" wall median{t} | / `true` | CPU mean{t} | / `true` |"
    rule += "---|---|---|---|"
print(head)
print(rule)
for j, (name, *_rest) in enumerate(sets[0][1]):
    row = f"| {name} |"
    for tag, cs in sets:
        base = statistics.median(times[(tag, cs[0][0])])
        base_cpu = statistics.mean(cpus[(tag, cs[0][0])])
        med = statistics.median(times[(tag, name)])
        c = statistics.mean(cpus[(tag, name)])
        row += f" {ms(med)} | {med / base:.2f}x | {ms(c)} | {c / base_cpu:.2f}x |"
    print(row)
PY
