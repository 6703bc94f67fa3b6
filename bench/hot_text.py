#!/usr/bin/env python3
"""Write `.cargo/hot-text.txt`: the functions coord's short commands run, for the linker to lay
out first and side by side (see `build.rs` and docs/performance.md, "Where a short command's
time goes").

A lock, an unlock or a hook call is a process of well under a million instructions; most of its
time is the kernel's: mapping the pages of the binary it touches is a third of it. In link order
the few hundred functions such a command runs are spread over most of the binary's 5 MB of code,
so the process takes a page fault for nearly every 64 KiB of it. Listed in this file they are
placed together at the start of the code, a few hundred kilobytes that a dozen faults map.

The list is what valgrind's callgrind saw run, in the order it first saw each function, over the
commands an agent and its client run most: `lock`, `unlock`, `who`, a refused lock, `run`, and a
session's hook calls (SessionStart, the shell tool's and the edit tool's PreToolUse and
PostToolUse, a denied edit, Stop, SessionEnd, a repository that turned coord off). Names are the
linker's (mangled). They stay the same when code changes inside a function; a new toolchain or
new versions of the dependencies rename them, and names the binary no longer has are skipped by
the linker: run this again then (`bench/run.sh` prints how much of the list still matches).

Rust's symbol names differ from one target to another (the crate hashes in them do): the list
holds the names of each build given, one after the other, and each link finds its own.

Usage: bench/hot_text.py [COORD...]   (default: this checkout's release build, and its musl
build where the target is installed, as the README installs it). Needs valgrind.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(HERE, ".cargo", "hot-text.txt")


def release_builds():
    """This checkout's release build, and its musl build where that target is installed."""
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(HERE, "target"))
    host = re.search(r"^host: (\S+)", subprocess.run(
        ["rustc", "-vV"], capture_output=True, text=True, check=True).stdout, re.M).group(1)
    triples = [host]
    musl = host.replace("-gnu", "-musl")
    installed = subprocess.run(["rustup", "target", "list", "--installed"],
                               capture_output=True, text=True).stdout.split()
    if musl != host and musl in installed:
        triples.append(musl)
    builds = []
    for triple in triples:
        subprocess.run(["cargo", "build", "--release", "--quiet", "--target", triple],
                       cwd=HERE, check=True)
        builds.append(os.path.join(target, triple, "release", "coord"))
    return builds


def text_symbols(binary):
    """The binary's function symbols."""
    out = subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout
    return {p[2] for p in (l.split() for l in out.splitlines()) if len(p) == 3 and p[1] in "tTwW"}


def traced(coord, args, cwd, env, stdin=b""):
    """The functions one run of coord executed, in the order callgrind first names them."""
    with tempfile.NamedTemporaryFile(suffix=".callgrind") as out:
        r = subprocess.run(
            ["valgrind", "--tool=callgrind", "--demangle=no", "--dump-instr=no",
             f"--callgrind-out-file={out.name}", coord, *args],
            cwd=cwd, env=env, input=stdin, capture_output=True)
        if r.returncode not in (0, 1, 3):
            sys.exit(f"hot_text: `coord {' '.join(args)}` exited {r.returncode}: {r.stderr[-500:]!r}")
        names = []
        for line in open(out.name, encoding="utf-8", errors="replace"):
            m = re.match(r"c?fn=\(\d+\)(?: (.*))?$", line.rstrip("\n"))
            if m and m.group(1):
                names.append(m.group(1))
        return names


def main():
    if not shutil.which("valgrind"):
        sys.exit("hot_text: needs valgrind (apt-get install valgrind)")
    builds = [os.path.abspath(b) for b in sys.argv[1:]] or release_builds()
    order, seen = [], set()
    for coord in builds:
        names = trace_all(coord)
        print(f"hot_text: {len(names)} functions of {coord}")
        for name in names:
            if name not in seen:
                seen.add(name)
                order.append(name)
    with open(OUT, "w") as fh:
        fh.write("\n".join(order) + "\n")
    print(f"hot_text: {len(order)} functions written to {os.path.relpath(OUT, HERE)}")


def trace_all(coord):
    """The functions of `coord` that the commands below run, in the order first run."""
    have = text_symbols(coord)
    ws = tempfile.mkdtemp(prefix="coord-hot-text-")
    try:
        repo = os.path.join(ws, "repo")
        off = os.path.join(ws, "off")
        for d in (repo, off):
            os.makedirs(d)
            subprocess.run(["git", "init", "-q", d], check=True)
            for f in ("a.txt", "held.txt"):
                with open(os.path.join(d, f), "w") as fh:
                    fh.write("one\n")
        subprocess.run(["git", "-C", off, "config", "coord.enabled", "false"], check=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("COORD_")}
        agent = dict(env, COORD_AGENT="claude")
        subprocess.run([coord, "-a", "holder", "lock", "held.txt"], cwd=repo, env=env,
                       check=True, capture_output=True)

        def payload(d, event, tool=None, args=None):
            p = {"hook_event_name": event, "session_id": "h0t7e000-0000", "cwd": d}
            if tool:
                p["tool_name"], p["tool_input"] = tool, args
            if event == "SessionStart":
                p["source"] = "startup"
            if event == "Stop":
                p["stop_hook_active"] = False
            if event == "SessionEnd":
                p["reason"] = "exit"
            return json.dumps(p).encode()

        def write(d, f):
            return payload(d, "PreToolUse", "Write", {"file_path": os.path.join(d, f), "content": "x"})

        hook = ["hook", "claude", "--plugin"]
        # The most frequent first: they are laid out first. SessionStart opens the session the
        # edits belong to, but it runs once a session; it is traced after them.
        session = [
            (hook, repo, env, payload(repo, "SessionStart")),
        ]
        runs = [
            (["lock", "a.txt"], repo, agent, b""),
            (["unlock", "a.txt"], repo, agent, b""),
            (["lock", "--no-backup", "a.txt"], repo, agent, b""),
            (["who", "a.txt"], repo, agent, b""),
            (["unlock", "a.txt"], repo, agent, b""),
            (["lock", "--no-wait", "held.txt"], repo, agent, b""),
            (hook, repo, env, payload(repo, "PreToolUse", "Bash", {"command": "ls"})),
            (hook, repo, env, write(repo, "a.txt")),
            (hook, repo, env, write(repo, "a.txt")),
            (hook, repo, env, payload(repo, "PostToolUse", "Write",
                                      {"file_path": os.path.join(repo, "a.txt"), "content": "x"})),
            ([*hook, "--wait", "0"], repo, env, write(repo, "held.txt")),
            (hook, off, env, write(off, "a.txt")),
            (["run", "a.txt", "--", "true"], repo, agent, b""),
            *session,
            (hook, repo, env, payload(repo, "Stop")),
            (hook, repo, env, payload(repo, "SessionEnd")),
        ]
        # Once untraced, so that what is traced is the steady state (the repository adopted,
        # the session known), not a first run's set-up.
        for args, cwd, e, stdin in session + runs:
            subprocess.run([coord, *args], cwd=cwd, env=e, input=stdin, capture_output=True)
        for args, cwd, e, stdin in session:
            subprocess.run([coord, *args], cwd=cwd, env=e, input=stdin, capture_output=True)
        order, seen = [], set()
        for args, cwd, e, stdin in runs:
            for name in traced(coord, args, cwd, e, stdin):
                if name in have and name not in seen:
                    seen.add(name)
                    order.append(name)
    finally:
        shutil.rmtree(ws, ignore_errors=True)
    return order


if __name__ == "__main__":
    main()
