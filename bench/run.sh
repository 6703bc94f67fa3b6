#!/usr/bin/env bash
# Run coord's benchmarks against the reference tools, print a markdown report, and rewrite the
# measured section of docs/performance.md with it (machine and date included).
#
#   bench/run.sh            # all sections, docs/performance.md rewritten
#   bench/run.sh lock wake  # some sections, printed only
#
# Reference tools: dotlockfile (liblockfile-bin) and flock (util-linux). On Debian/Ubuntu the
# script installs dotlockfile when it is missing and it can (root or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v dotlockfile >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get install -y -qq liblockfile-bin >/dev/null 2>&1 || true
    elif command -v sudo >/dev/null && command -v apt-get >/dev/null; then
        sudo apt-get install -y -qq liblockfile-bin >/dev/null 2>&1 || true
    fi
fi
report=$(mktemp)
trap 'rm -f "$report"' EXIT
cargo bench --bench coord -- "$@" | tee "$report"

# Only a full run replaces the figures in the docs: a partial one would drop the others.
[ $# -eq 0 ] || exit 0
doc=docs/performance.md
python3 - "$doc" "$report" <<'PY'
import sys
doc, report = sys.argv[1], sys.argv[2]
text = open(doc).read()
begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
body = open(report).read().strip()
block = f"{begin}\n{body}\n{end}"
if begin in text and end in text:
    head, rest = text.split(begin, 1)
    text = head + block + rest.split(end, 1)[1]
else:
    # First run: the measured section goes right after the page's introduction.
    first, _, rest = text.partition("\n## ")
    text = f"{first.rstrip()}\n\n## Every figure, one run\n\nWritten by `bench/run.sh`.\n\n{block}\n\n## {rest}"
open(doc, "w").write(text)
print(f"bench: {doc} updated", file=sys.stderr)
PY
