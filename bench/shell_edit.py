#!/usr/bin/env python3
"""The shell-edit check after a shell tool call, on a big repository, against `git status --porcelain`.

The tree is bench/big_tree.py's (1,000 tracked sources and a gitignored `node_modules/` of N files;
built once per size under `--work`, default $TMPDIR/coord-shell-edit). Other agents hold `--locks`
files (default 10). A Claude Code session runs a shell command: coord's pre-tool hook records the
held files as they are, the post-tool hook compares them (see src/shelledit.rs). Rows:

- `git status --porcelain`: what a look at "what changed" costs with git;
- `coord hook claude` PostToolUse of an edit tool (heartbeat only): the hook's floor;
- PreToolUse `Bash`, PostToolUse `Bash` (nothing changed), and PostToolUse `Bash` after the command
  changed one held file (the notice is printed and logged): the check;
- pre + post: what one shell call costs in all.

    bench/shell_edit.py                         # 250,000 files, markdown on stdout
    bench/shell_edit.py --sizes 250000,1000000 --runs 15 --write-docs

Each row is the median of `--runs` rounds (after one warm-up round; rows take turns round after round).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import big_tree  # noqa: E402

SESSION = "7684f1ed-55e2-4a19-be34-6aa5a64f4b50"


def payload(root, event, tool, tool_input):
    return json.dumps({
        "session_id": SESSION, "transcript_path": "/tmp/t.jsonl", "cwd": root,
        "hook_event_name": event, "tool_name": tool, "tool_input": tool_input,
        "tool_response": {"stdout": "", "stderr": "", "interrupted": False},
    }).encode()


def measure(root, coord, runs, locks):
    env = dict(os.environ)
    for k in ("COORD_DIR", "COORD_AGENT"):
        env.pop(k, None)
    held = [f"src/mod{i % 50:02}/file{i // 50:02}.js" for i in range(locks)]
    for i, f in enumerate(held):
        subprocess.run([coord, "lock", f, "--no-backup", "-q"], cwd=root,
                       env=dict(env, COORD_AGENT=f"holder{i % 4}"), check=True)
    shell = {"command": "sed -i s/a/b/ src/mod00/file00.js", "description": "edit"}
    pre = payload(root, "PreToolUse", "Bash", shell)
    post = payload(root, "PostToolUse", "Bash", shell)
    edit_post = payload(root, "PostToolUse", "Edit", {"file_path": f"{root}/package.json",
                                                     "old_string": "a", "new_string": "a"})
    hook = [coord, "hook", "claude"]
    victim = os.path.join(root, held[0])
    original = open(victim).read()

    def post_after_change():
        big_tree.timed(hook, root, pre, env)
        with open(victim, "a") as fh:
            fh.write("// by the shell\n")
        d, _ = big_tree.timed(hook, root, post, env)
        with open(victim, "w") as fh:
            fh.write(original)
        return d, 0

    def pre_and_post():
        a, _ = big_tree.timed(hook, root, pre, env)
        b, _ = big_tree.timed(hook, root, post, env)
        return a + b, 0

    def post_only():
        big_tree.timed(hook, root, pre, env)
        return big_tree.timed(hook, root, post, env)

    rows = [
        ("`git status --porcelain`", lambda: big_tree.timed(["git", "status", "--porcelain"], root)),
        ("hook PostToolUse `Edit` (heartbeat only)", lambda: big_tree.timed(hook, root, edit_post, env)),
        ("hook PreToolUse `Bash` (records the held files)", lambda: big_tree.timed(hook, root, pre, env)),
        ("hook PostToolUse `Bash`, nothing changed", post_only),
        ("hook PostToolUse `Bash`, a held file changed (notice)", post_after_change),
        ("one shell call: PreToolUse + PostToolUse", pre_and_post),
    ]
    for _, fn in rows:
        fn()
    samples = {name: [] for name, _ in rows}
    for _ in range(runs):
        for name, fn in rows:
            samples[name].append(fn()[0])
    for i, f in enumerate(held):
        subprocess.run([coord, "unlock", "-q"], cwd=root, env=dict(env, COORD_AGENT=f"holder{i % 4}"))
    subprocess.run(hook, cwd=root, env=env, input=payload(root, "SessionEnd", None, None),
                   stdout=subprocess.DEVNULL)
    return {name: statistics.median(v) for name, v in samples.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="250000")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--locks", type=int, default=10)
    ap.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "coord-shell-edit"))
    ap.add_argument("--write-docs", action="store_true")
    a = ap.parse_args()
    coord = big_tree.coord_bin()
    sizes = [int(s) for s in a.sizes.split(",")]
    results = {}
    for n in sizes:
        root = os.path.join(a.work, f"n{n}")
        big_tree.gen(root, n)
        results[n] = measure(os.path.realpath(root), coord, a.runs, a.locks)
    load = os.getloadavg()[0]
    lines = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M %z')} on {os.cpu_count()} cores, load {load:.2f} "
        f"at the end, release build, median of {a.runs} rounds, {a.locks} files held by other agents; "
        f"the ratio is to `git status --porcelain` on the same tree.",
        "",
        "| step | " + " | ".join(f"{n:,} ignored files" for n in sizes) + " |",
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
        begin, end = "<!-- shell-edit:begin -->", "<!-- shell-edit:end -->"
        block = f"{begin}\n{text}\n{end}"
        if begin in body and end in body:
            head, rest = body.split(begin, 1)
            body = head + block + rest.split(end, 1)[1]
        else:
            body = body.rstrip() + "\n\n## The shell-edit check after a shell tool call\n\n" + block + "\n"
        open(doc, "w").write(body)


if __name__ == "__main__":
    main()
