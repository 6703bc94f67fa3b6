#!/usr/bin/env bash
# Measure coord against the reference tools, side by side in one run, with the Linux release
# build (static musl) where a client runs a hook; print a markdown report and rewrite the
# measured section of docs/performance.md with it (machine and date included).
#
#   bench/run.sh            # every figure, docs/performance.md rewritten
#   bench/run.sh lock wake  # some sections of benches/coord.rs, printed only
#
# Reference tools: dotlockfile (liblockfile-bin), flock (util-linux), git. On Debian/Ubuntu the
# script installs dotlockfile when it is missing and it can (root or sudo). A full run takes
# about 15 minutes on 2 cores (most of it making and reading the 250,000-file tree).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v dotlockfile >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get install -y -qq liblockfile-bin >/dev/null 2>&1 || true
    elif command -v sudo >/dev/null && command -v apt-get >/dev/null; then
        sudo apt-get install -y -qq liblockfile-bin >/dev/null 2>&1 || true
    fi
fi
target=${CARGO_TARGET_DIR:-target}
# The binary a user installs: the static musl build on Linux x86-64, else `cargo build --release`.
if [ -z "${COORD_BENCH_BIN:-}" ]; then
    if [ "$(uname -sm)" = "Linux x86_64" ] && rustup target add x86_64-unknown-linux-musl >/dev/null 2>&1; then
        cargo build --release --quiet --target x86_64-unknown-linux-musl
        COORD_BENCH_BIN=$target/x86_64-unknown-linux-musl/release/coord
    else
        cargo build --release --quiet
        COORD_BENCH_BIN=$target/release/coord
    fi
fi
bin=$(mktemp -d)
report=$(mktemp)
trap 'rm -rf "$bin" "$report"' EXIT
# Measured as installed: a copy written front to back, as `cargo install` or a package puts it.
cp "$COORD_BENCH_BIN" "$bin/coord"
export COORD_BENCH_BIN=$bin/coord
echo "bench: measuring $(file -b "$COORD_BENCH_BIN" | cut -d, -f1-2) ($COORD_BENCH_BIN)" >&2

# The plugin's hook, every event, against a hook that does nothing: as a Node client (Claude
# Code, Gemini CLI, Copilot CLI, …) runs it, and from a bare `sh -c`; `status` in a repository
# with 250,000 ignored files against `git status`. The hooks go first: the sections of
# benches/coord.rs make and delete tens of thousands of files, and ext4 without a journal (as
# on many VM images, the machine of docs/performance.md among them) passes over every inode
# freed in the last minute or more of a block group whenever it makes a file there: every
# figure that makes files pays for what ran before it. The report names the filesystem.
where=${TMPDIR:-/tmp}
read -r fstype source < <(findmnt -no FSTYPE,SOURCE -T "$where" 2>/dev/null || true) || true
fs="${fstype:-an unknown filesystem}${source:+ ($source)}"
journal=/sys/fs/ext4/${source##*/}/journal_task
if [ "${fstype:-}" = ext4 ] && [ -r "$journal" ]; then
    [ "$(cat "$journal")" = "<none>" ] && fs="$fs without a journal" || fs="$fs with a journal"
fi
export COORD_BENCH_FS="$fs under $where"
hook=$(mktemp)
client=$(mktemp)
big=$(mktemp)
trap 'rm -rf "$bin" "$report" "$hook" "$client" "$big"' EXIT
if [ $# -eq 0 ]; then
    if command -v node >/dev/null; then
        node bench/plugin_hook_client.mjs "$COORD_BENCH_BIN" 200 | tee "$client"
    fi
    bench/plugin_hook.sh 100 "$COORD_BENCH_BIN" | tee "$hook"
fi
cargo bench --quiet --bench coord -- "$@" | tee "$report"
[ $# -eq 0 ] || exit 0
bench/big_tree.py --sizes 250000 --runs 7 | tee "$big"

doc=docs/performance.md
python3 - "$doc" "$report" "$hook" "$client" "$big" <<'PY'
import os, re, sys
doc, report, hook, client, big = sys.argv[1:]
body = open(report).read().strip()
first, _, rest = body.partition("\n")
body = f"{first} Files made on {os.environ['COORD_BENCH_FS']}.\n{rest}"
hook_text, big_text = open(hook).read().strip(), open(big).read().strip()
client_text = open(client).read().strip()

def worst(text, col):
    """The hook event furthest from `true` (wall medians) in a table, and its ratio."""
    events = [l for l in text.splitlines() if l.startswith("| ") and "x |" in l
              and not l.startswith("| `")]
    w = max(events, key=lambda l: float(l.split("|")[col].strip().rstrip("x")))
    return w.split("|")[1].strip(), w.split("|")[col].strip().rstrip("x")

sh_name, sh_ratio = worst(hook_text, 3)
hook_cell = f"{sh_ratio}× at most from a bare `sh -c` ({sh_name})"
if client_text:
    c_name, c_ratio = worst(client_text, 3)
    hook_cell = f"{c_ratio}× at most as a Node client runs it ({c_name}); " + hook_cell
status = next(l for l in big_text.splitlines() if l.startswith("| `coord status --json`"))
s_ratio = re.search(r"\(([\d.]+)×\)", status).group(1)
floors = (f"| a plugin hook call, every event / a `true` hook | {hook_cell} | ≤ 2× |\n"
          f"| `status` with 250,000 ignored files / `git status` | {s_ratio}× | ≤ 2× |")
lines = body.splitlines()
at = max(i for i, l in enumerate(lines) if l.startswith("| ") and "≤" in l)
lines.insert(at + 1, floors)
body = "\n".join(lines)
if client_text:
    body += "\n\n### The plugin's hook, every event, as a Node client runs it\n\n" + client_text
body += "\n\n### The plugin's hook, every event, from a bare `sh -c`\n\n" + hook_text
body += "\n\n### A repository with 250,000 ignored files\n\n" + big_text
text = open(doc).read()
begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
head, rest = text.split(begin, 1)
open(doc, "w").write(head + f"{begin}\n{body}\n{end}" + rest.split(end, 1)[1])
print(f"bench: {doc} updated", file=sys.stderr)
PY
