#!/usr/bin/env python3
"""Lock + unlock across git worktrees vs within one folder, in CPU time (user + system).

Three set-ups, measured in alternating blocks so drift falls on all alike:
- `folder`: a plain folder, no git;
- `repo`: the main work tree of a repository with no linked worktree;
- `worktree`: a linked worktree of a repository with 8 linked worktrees (7 others and the
  main one share its workspace; another agent holds a different file in each of them).

In each set-up 8 other agents hold a file of their own (in `worktree`, one in each linked tree),
so the three differ only in where the locks lie.

  bench/worktrees.py [COORD] [PAIRS]     # COORD defaults to the release build

Prints a markdown table: CPU per lock + unlock (two processes), and the ratio to `folder`.
"""
import os
import resource
import subprocess
import sys
import tempfile

coord = sys.argv[1] if len(sys.argv) > 1 else "target/release/coord"
pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 300
ROUNDS = 6


def env(agent):
    e = {k: v for k, v in os.environ.items() if not k.startswith("COORD_")}
    e["COORD_AGENT"] = agent
    e["GIT_CONFIG_GLOBAL"] = "/dev/null"
    e["GIT_AUTHOR_NAME"] = e["GIT_COMMITTER_NAME"] = "b"
    e["GIT_AUTHOR_EMAIL"] = e["GIT_COMMITTER_EMAIL"] = "b@b"
    return e


def git(d, *args):
    subprocess.run(["git", *args], cwd=d, env=env("x"), check=True, stdout=subprocess.DEVNULL)


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cycle(d, n):
    e = env("bench")
    before = children_cpu()
    for _ in range(n):
        subprocess.run([coord, "lock", "SHARED.txt", "-q", "--no-backup"], env=e, cwd=d, check=True)
        subprocess.run([coord, "unlock", "SHARED.txt", "-q"], env=e, cwd=d, check=True)
    return children_cpu() - before


def hold_others(d):
    """8 other agents each holding a file of their own, as in the worktree set-up."""
    for i in range(8):
        open(os.path.join(d, f"OTHER{i}.txt"), "w").write("x\n")
        subprocess.run([coord, "lock", f"OTHER{i}.txt", "-q", "--no-backup"], env=env(f"holder{i}"), cwd=d, check=True)


def main():
    base = tempfile.mkdtemp(prefix="coord-bench-wt-")
    folder = os.path.join(base, "folder")
    os.makedirs(folder)
    open(os.path.join(folder, "SHARED.txt"), "w").write("x\n")
    hold_others(folder)
    repo = os.path.join(base, "repo")
    os.makedirs(repo)
    git(repo, "init", "-q")
    open(os.path.join(repo, "SHARED.txt"), "w").write("x\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "x")
    hold_others(repo)
    multi = os.path.join(base, "multi")
    os.makedirs(multi)
    git(multi, "init", "-q")
    open(os.path.join(multi, "SHARED.txt"), "w").write("x\n")
    git(multi, "add", ".")
    git(multi, "commit", "-qm", "x")
    trees = []
    for i in range(8):
        t = os.path.join(base, f"wt{i}")
        git(multi, "worktree", "add", "-q", t, "-b", f"b{i}")
        trees.append(t)
        open(os.path.join(t, f"OTHER{i}.txt"), "w").write("x\n")
        subprocess.run([coord, "lock", f"OTHER{i}.txt", "-q", "--no-backup"], env=env(f"holder{i}"), cwd=t, check=True)
    worktree = trees[0]
    sums = {"folder": 0.0, "repo": 0.0, "worktree": 0.0}
    block = max(1, pairs // ROUNDS)
    for _ in range(ROUNDS):
        for name, d in (("folder", folder), ("repo", repo), ("worktree", worktree)):
            sums[name] += cycle(d, block)
    n = block * ROUNDS
    print("| set-up | CPU per lock + unlock | vs folder |")
    print("| --- | ---: | ---: |")
    for name in ("folder", "repo", "worktree"):
        ms = sums[name] / n * 1000
        print(f"| {name} | {ms:.2f} ms | {sums[name] / sums['folder']:.2f}x |")


main()
