#!/usr/bin/env python3
"""A hook's PreToolUse with 100 live claims across 8 worktrees vs none, in CPU time.

Two repositories, each with 8 linked worktrees and 8 agents (one per worktree, each holding a
lock on a file of its own), alike but for the claims:
- `none`: no claim;
- `claims`: 100 claims (folders and patterns: `pkgNN/`, `pkgNN/**/*.sql`, ...) taken by 8
  agents, one per worktree, none of them matching the file edited.

In each, Claude Code's `PreToolUse` for an `Edit` of `src/app.rs` in the first linked worktree
is fed to `coord hook claude` (the edit is allowed: the file is locked, then the lock refreshed
on every later call), in 20 alternating blocks so drift falls on both alike.

  bench/claims_hook.py [COORD] [CALLS]     # COORD defaults to the release build

Prints a markdown table: CPU per hook call (user + system of the coord process), and the
ratio to `none`.
"""
import json
import os
import resource
import subprocess
import sys
import tempfile

coord = sys.argv[1] if len(sys.argv) > 1 else "target/release/coord"
calls = int(sys.argv[2]) if len(sys.argv) > 2 else 600
ROUNDS = 20
TREES = 8
CLAIMS = 100


def env(agent=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("COORD_")}
    for k in ("CLAUDE_CODE_SESSION_ID", "CODEX_SESSION_ID", "CODEX_THREAD_ID",
              "COPILOT_AGENT_SESSION_ID", "GEMINI_SESSION_ID"):
        e.pop(k, None)
    if agent:
        e["COORD_AGENT"] = agent
    e["GIT_CONFIG_GLOBAL"] = "/dev/null"
    e["GIT_AUTHOR_NAME"] = e["GIT_COMMITTER_NAME"] = "b"
    e["GIT_AUTHOR_EMAIL"] = e["GIT_COMMITTER_EMAIL"] = "b@b"
    return e


def git(d, *args):
    subprocess.run(["git", *args], cwd=d, env=env(), check=True, stdout=subprocess.DEVNULL)


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def repo(base, name, with_claims):
    main = os.path.join(base, name)
    os.makedirs(os.path.join(main, "src"))
    git(main, "init", "-q")
    open(os.path.join(main, "src", "app.rs"), "w").write("fn main() {}\n")
    git(main, "add", ".")
    git(main, "commit", "-qm", "x")
    trees = []
    for i in range(TREES):
        t = os.path.join(base, f"{name}-wt{i}")
        git(main, "worktree", "add", "-q", t, "-b", f"b{i}")
        trees.append(os.path.realpath(t))
    # The same 8 agents in both: one per worktree, each holding a lock on a file of its own.
    for i, tree in enumerate(trees):
        open(os.path.join(tree, f"OTHER{i}.txt"), "w").write("x\n")
        subprocess.run([coord, "lock", f"OTHER{i}.txt", "-q", "--no-backup", "--ttl", "2h"],
                       env=env(f"holder{i}"), cwd=tree, check=True)
    if with_claims:
        for i in range(CLAIMS):
            tree = trees[i % TREES]
            kinds = [f"pkg{i:02}/", f"pkg{i:02}/**/*.sql", f"docs/part{i:02}/*.md", f"gen/{i:02}-*"]
            subprocess.run([coord, "lock", kinds[i % 4], "-q", "--ttl", "2h"],
                           env=env(f"holder{i % TREES}"), cwd=tree, check=True)
    return trees[0]


def payload(tree):
    return json.dumps({
        "session_id": "0b5c7e6a-1111-4a19-be34-6aa5a64f4b50",
        "cwd": tree,
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": os.path.join(tree, "src", "app.rs"),
                       "old_string": "main", "new_string": "main"},
        "tool_use_id": "toolu_1",
    }).encode()


def block(tree, n):
    data = payload(tree)
    e = env()
    before = children_cpu()
    for _ in range(n):
        out = subprocess.run([coord, "hook", "claude"], input=data, env=e, cwd=tree,
                             check=True, capture_output=True)
        assert b"deny" not in out.stdout, out.stdout
    return children_cpu() - before


def main():
    base = tempfile.mkdtemp(prefix="coord-bench-claims-")
    setups = {"none": repo(base, "none", False), "claims": repo(base, "claims", True)}
    sums = {k: 0.0 for k in setups}
    per = max(1, calls // ROUNDS)
    for _ in range(ROUNDS):
        for name, tree in setups.items():
            sums[name] += block(tree, per)
    n = per * ROUNDS
    print(f"| set-up ({TREES} linked worktrees) | CPU per PreToolUse | vs none |")
    print("| --- | ---: | ---: |")
    for name in setups:
        ms = sums[name] / n * 1000
        print(f"| {name} | {ms:.2f} ms | {sums[name] / sums['none']:.2f}x |")


main()
