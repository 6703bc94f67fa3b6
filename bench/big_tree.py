#!/usr/bin/env python3
"""Views of a big repository: coord against `git status --porcelain` and `find` on the same tree.

A JavaScript repository as it is found in practice: 1,000 tracked source files in 50 folders and a
gitignored `node_modules/` of N files, about 9.3 files a folder (250,000 files in 27,000 folders),
one lock held by an active agent. The tree is deterministic (names and contents depend on N only)
and is built once per size under the work folder (`--work`, default $TMPDIR/coord-big-tree).

    bench/big_tree.py                          # 250k, 500k, 1M files; markdown on stdout
    bench/big_tree.py --sizes 250000 --runs 9  # one size
    bench/big_tree.py --write-docs             # also rewrite the section in docs/performance.md
    bench/big_tree.py gen DIR 250000           # only build a tree

Each row is the median of `--runs` runs (after one warm-up run; the rows take turns, round after
round), and the ratio to `git status --porcelain` on the same tree. `coord watch --json` is timed to its first line
(the `started` event, once its folders are watched and the first look is done).
"""

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import time

SOURCE_DIRS, SOURCE_PER_DIR = 50, 20  # 1,000 tracked source files
FILES_PER_DIR = 250_000 / 27_000  # node_modules/ as measured in the field
AGENT = "alice"


def make_folders(job):
    """Make the ignored folders `which` of the tree: returns how many files were made."""
    root, n_files, n_dirs, which = job
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    made = 0
    for d in which:
        folder = os.path.join(root, "node_modules", f"pkg{d // 4:05}", ("lib", "dist", "src", "types")[d % 4])
        os.makedirs(folder, exist_ok=True)
        count = (n_files * (d + 1)) // n_dirs - (n_files * d) // n_dirs
        for f in range(count):
            os.close(os.open(os.path.join(folder, f"m{f:02}.js"), flags, 0o644))
        made += count
    return made


def gen(root, n_files):
    """Build the tree for `n_files` ignored files at `root` (a marker records a finished build)."""
    marker = os.path.join(root, ".big-tree-done")
    if os.path.exists(marker):
        return
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(root)
    t = time.monotonic()
    for d in range(SOURCE_DIRS):
        sub = os.path.join(root, "src", f"mod{d:02}")
        os.makedirs(sub)
        for f in range(SOURCE_PER_DIR):
            with open(os.path.join(sub, f"file{f:02}.js"), "w") as fh:
                fh.write(f"export const v{d}_{f} = {d * f};\n")
    with open(os.path.join(root, ".gitignore"), "w") as fh:
        fh.write("node_modules/\n/.coord/\n*.lock.*\n*.bak\n.*_presence\n")
    with open(os.path.join(root, "package.json"), "w") as fh:
        fh.write('{"name": "big-tree", "version": "1.0.0"}\n')
    # node_modules/pkgNNNNN/{lib,dist,src,types}: packages of 4 folders, ~9.3 files each, made by
    # one process per core.
    n_dirs = max(1, round(n_files / FILES_PER_DIR))
    workers = 4 * (os.cpu_count() or 1)  # the time goes to the filesystem, not the processor
    chunks = [(root, n_files, n_dirs, range(w, n_dirs, workers)) for w in range(workers)]
    with multiprocessing.Pool(workers) as pool:
        made = sum(pool.map(make_folders, chunks))
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b",
               GIT_COMMITTER_EMAIL="b@b")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "tree"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)
    open(marker, "w").close()
    print(f"big-tree: {made} ignored files in {n_dirs} folders + 1,000 sources at {root} "
          f"in {time.monotonic() - t:.1f} s", file=sys.stderr)


def coord_bin():
    if os.environ.get("COORD_BENCH_BIN"):
        return os.path.abspath(os.environ["COORD_BENCH_BIN"])
    here = os.path.dirname(os.path.abspath(__file__))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(here, "..", "target"))
    p = os.path.join(target, "release", "coord")
    if os.path.exists(p):
        return os.path.abspath(p)
    sys.exit("big-tree: build coord first: cargo build --release")


def timed(argv, cwd, stdin=None, env=None):
    t = time.perf_counter()
    r = subprocess.run(argv, cwd=cwd, input=stdin, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    d = time.perf_counter() - t
    return d, r.returncode


def watch_first_line(coord, cwd, env):
    t = time.perf_counter()
    p = subprocess.Popen([coord, "watch", "--json"], cwd=cwd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    p.stdout.readline()
    d = time.perf_counter() - t
    p.kill()
    p.wait()
    return d


def measure(root, coord, runs):
    env = dict(os.environ, COORD_AGENT=AGENT)
    env.pop("COORD_DIR", None)
    # One lock held by an active agent, as in the field.
    subprocess.run([coord, "presence", ".", "big-tree"], cwd=root, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([coord, "lock", "src/mod00/file00.js", "--no-backup", "-q"], cwd=root, env=env,
                   check=True)
    # A staged change for the guard.
    with open(os.path.join(root, "src", "mod01", "file01.js"), "a") as fh:
        fh.write("// staged\n")
    subprocess.run(["git", "add", "src/mod01/file01.js"], cwd=root, check=True)
    hook_env = dict(env)
    hook_env.pop("COORD_AGENT")
    payload = json.dumps({
        "session_id": "7684f1ed-55e2-4a19-be34-6aa5a64f4b50", "transcript_path": "/tmp/t.jsonl",
        "cwd": root, "hook_event_name": "SessionStart", "source": "startup",
    }).encode()
    rows = [
        ("`git status --porcelain`", lambda: timed(["git", "status", "--porcelain"], root)),
        ("`find . -name '*.lock.*'`", lambda: timed(["find", ".", "-name", "*.lock.*"], root)),
        ("`coord status --json`", lambda: timed([coord, "status", "--json"], root, env=env)),
        ("`coord check --strict`", lambda: timed([coord, "check", "--strict"], root, env=env)),
        ("`coord who FILE`", lambda: timed([coord, "who", "src/mod00/file00.js"], root, env=env)),
        ("`coord hook claude` SessionStart", lambda: timed([coord, "hook", "claude"], root, payload, hook_env)),
        ("`coord guard check --staged`", lambda: timed([coord, "guard", "check", "--staged"], root, env=dict(env, COORD_AGENT="bob"))),
        ("`coord watch --json`, first line", lambda: (watch_first_line(coord, root, env), 0)),
        ("`coord lock` + `coord unlock` (another file)", lambda: (
            timed([coord, "lock", "src/mod02/file02.js", "--no-backup", "-q"], root, env=env)[0]
            + timed([coord, "unlock", "src/mod02/file02.js", "-q"], root, env=env)[0], 0)),
    ]
    # Interleaved: every round runs every row once, so that a busy moment of the (shared)
    # machine weighs on all rows alike.
    for _, fn in rows:
        fn()  # warm-up (and the page cache)
    samples = {name: [] for name, _ in rows}
    for _ in range(runs):
        for name, fn in rows:
            samples[name].append(fn()[0])
    out = {name: statistics.median(v) for name, v in samples.items()}
    subprocess.run([coord, "unlock", "-q"], cwd=root, env=env)
    subprocess.run(["git", "reset", "-q", "--hard"], cwd=root, check=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cmd", nargs="?", default="measure", choices=["measure", "gen"])
    ap.add_argument("args", nargs="*")
    ap.add_argument("--sizes", default="250000,500000,1000000")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "coord-big-tree"))
    ap.add_argument("--write-docs", action="store_true")
    a = ap.parse_args()
    if a.cmd == "gen":
        gen(os.path.abspath(a.args[0]), int(a.args[1]))
        return
    coord = coord_bin()
    sizes = [int(s) for s in a.sizes.split(",")]
    results = {}
    for n in sizes:
        root = os.path.join(a.work, f"n{n}")
        gen(root, n)
        results[n] = measure(os.path.realpath(root), coord, a.runs)
    load = os.getloadavg()[0]
    lines = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M %z')} on {os.cpu_count()} cores, load {load:.2f} "
        f"at the end, release build, median of {a.runs} runs; the ratio is to `git status "
        f"--porcelain` on the same tree.",
        "",
        "| command | " + " | ".join(f"{n:,} ignored files" for n in sizes) + " |",
        "|---|" + "---|" * len(sizes),
    ]
    base = "`git status --porcelain`"
    for name in results[sizes[0]]:
        cells = []
        for n in sizes:
            v, g = results[n][name], results[n][base]
            cells.append(f"{v * 1000:.1f} ms" + ("" if name == base else f" ({v / g:.2f}×)"))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    if a.write_docs:
        doc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "performance.md")
        body = open(doc).read()
        begin, end = "<!-- big-tree:begin -->", "<!-- big-tree:end -->"
        if begin in body and end in body:
            head, rest = body.split(begin, 1)
            body = head + begin + "\n" + text + "\n" + end + rest.split(end, 1)[1]
            open(doc, "w").write(body)
            print(f"big-tree: {doc} updated", file=sys.stderr)


if __name__ == "__main__":
    main()
