#!/usr/bin/env python3
"""Benchmark: 16 client sessions' hooks editing 240 files at once.

Each session is its own process standing for one agent client (as Claude Code is: it runs every
hook as `sh -c COMMAND` with the event's JSON on stdin and waits for it). All sessions start
together in one fresh git repository holding FILES files, with no `coord init` (the plugin's hook,
`exec coord hook claude --plugin` (as the plugin registers it), with its defaults: a held file is waited for up to 2 s, then
denied). Each session edits every one of the files, in its own random order, in turns of TURN
files:

    SessionStart
    for each turn: for each file: PreToolUse of Write -> (allowed) the edit -> PostToolUse
                   Stop (the turn is over: its locks are released)
    SessionEnd

A file denied (another session held it past the wait) is tried again in a later turn, as an agent
told "work on something else and try again later" would. The edit itself checks exclusion: it
creates `FILE.witness` with O_EXCL (a second holder at once fails there), appends one line naming
the session to the file, and removes the witness. At the end every file must hold exactly one line
per session (nothing lost, nothing twice) and no witness may have collided.

Measured: every hook call's wall time (sh + coord, as the client waits for it), by event, against
the clients' hook timeouts (Claude Code and Gemini CLI 60 s by default, Copilot CLI 30 s as coord's
own hook file sets it: 30 s is the bar). Release build.

Usage: bench/many_sessions.py [--sessions 16] [--files 240] [--turn 6] [--coord PATH]
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from multiprocessing import Process, Queue

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def release_build():
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=HERE, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(HERE, "target"))
    return os.path.join(target, "release", "coord")


def session(n, coord, repo, files, turn, seed, out):
    """One client session; its own process, so the hooks see one client process per session."""
    sid = f"5e55{n:04d}-0000-4000-8000-{n:012d}"
    # As the plugin registers it (coord plugin write): the shell becomes coord.
    hook = f"exec {coord} hook claude --plugin"
    rng = random.Random(seed + n)
    todo = list(files)
    rng.shuffle(todo)
    calls = []  # (event, seconds, outcome)
    denied = collided = 0

    def call(event, extra=None):
        p = {"hook_event_name": event, "session_id": sid, "cwd": repo}
        p.update(extra or {})
        t = time.perf_counter()
        r = subprocess.run(["sh", "-c", hook], input=json.dumps(p).encode(), capture_output=True)
        dt = time.perf_counter() - t
        if r.returncode != 0 or b"warning" in r.stderr:
            raise SystemExit(f"session {n}: {event} failed: {r.stdout!r} {r.stderr!r}")
        deny = b'"deny"' in r.stdout
        calls.append((event, dt, "deny" if deny else "allow"))
        return not deny

    call("SessionStart", {"source": "startup"})
    while todo:
        batch, todo = todo[:turn], todo[turn:]
        for f in batch:
            path = os.path.join(repo, f)
            tool = {"tool_name": "Edit", "tool_input": {"file_path": path, "old_string": "", "new_string": "x"}}
            if not call("PreToolUse", tool):
                denied += 1
                todo.append(f)
                continue
            witness = path + ".witness"
            try:
                fd = os.open(witness, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                collided += 1
                fd = None
            with open(path, "a") as fh:
                fh.write(f"s{n:02d}\n")
            if fd is not None:
                os.close(fd)
                os.unlink(witness)
            call("PostToolUse", tool)
        call("Stop", {"stop_hook_active": False})
    call("SessionEnd", {"reason": "exit"})
    out.put((n, calls, denied, collided))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=16)
    ap.add_argument("--files", type=int, default=240)
    ap.add_argument("--turn", type=int, default=6)
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--coord")
    a = ap.parse_args()
    coord = a.coord or release_build()

    ws = tempfile.mkdtemp(prefix="coord-sessions-bench-")
    try:
        repo = os.path.join(ws, "repo")
        os.makedirs(os.path.join(repo, "src"))
        files = [f"src/f{i:03d}.txt" for i in range(a.files)]
        for f in files:
            open(os.path.join(repo, f), "w").close()
        git = lambda *args: subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True)
        git("init", "-q")
        git("add", ".")
        git("-c", "user.email=b@example.com", "-c", "user.name=b", "commit", "-qm", "init")

        q = Queue()
        procs = [Process(target=session, args=(n, coord, repo, files, a.turn, a.seed, q))
                 for n in range(a.sessions)]
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        for p in procs:
            p.start()
        results = [q.get() for _ in procs]
        for p in procs:
            p.join()
        wall = time.perf_counter() - t0
        if any(p.exitcode != 0 for p in procs):
            sys.exit("bench: a session failed")

        # Nothing lost, nothing twice: one line per session in every file.
        bad = []
        for f in files:
            lines = open(os.path.join(repo, f)).read().split()
            if sorted(lines) != [f"s{n:02d}" for n in range(a.sessions)]:
                bad.append((f, lines))
        collided = sum(r[3] for r in results)
        denied = sum(r[2] for r in results)
        left = subprocess.run([coord, "status", "--json"], cwd=repo, capture_output=True, text=True)
        held = len(json.loads(left.stdout).get("locks", [])) if left.returncode == 0 else -1
        status = subprocess.run(["git", "-C", repo, "status", "--porcelain"], capture_output=True,
                                text=True).stdout

        by_event = {}
        for _, calls, _, _ in results:
            for event, dt, outcome in calls:
                key = event if event != "PreToolUse" or outcome == "allow" else "PreToolUse (denied)"
                by_event.setdefault(key, []).append(dt)
        every = [dt for xs in by_event.values() for dt in xs]

        def q_(xs, p):
            xs = sorted(xs)
            return xs[min(len(xs) - 1, int(len(xs) * p))]

        ms = lambda s: f"{s * 1000:.1f} ms"
        print(f"{time.strftime('%Y-%m-%d %H:%M %Z')}; {os.cpu_count()} cores; load {load0:.2f} at "
              f"the start, {os.getloadavg()[0]:.2f} at the end; {a.sessions} sessions x {a.files} "
              f"files, turns of {a.turn}; wall clock {wall:.1f} s")
        print()
        print("| hook calls | calls | median | p95 | p99 | max | max / 30 s |")
        print("|---|---|---|---|---|---|---|")
        order = ["SessionStart", "PreToolUse", "PreToolUse (denied)", "PostToolUse", "Stop", "SessionEnd"]
        for key in order + ["every call"]:
            xs = every if key == "every call" else by_event.get(key, [])
            if not xs:
                continue
            print(f"| {key} | {len(xs)} | {ms(statistics.median(xs))} | {ms(q_(xs, 0.95))} | "
                  f"{ms(q_(xs, 0.99))} | {ms(max(xs))} | {max(xs) / 30:.1%} |")
        print()
        print(f"edits {a.sessions * a.files} of {a.sessions * a.files} made once each: "
              f"{'yes' if not bad else f'NO ({len(bad)} files wrong)'}; two holders at once: {collided}; "
              f"edits denied then made in a later turn: {denied}; locks left held: {held}; "
              f"`git status` shows coord's files: {'no' if all('.coord' not in l and '_presence' not in l and '.lock.' not in l for l in status.splitlines()) else 'YES'}")
        if bad or collided or held:
            sys.exit(1)
    finally:
        shutil.rmtree(ws, ignore_errors=True)


if __name__ == "__main__":
    main()
