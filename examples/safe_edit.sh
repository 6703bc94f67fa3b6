#!/usr/bin/env bash
# Safe editing with coord, step by step, in a fresh temporary folder.
#
#   examples/safe_edit.sh            # uses `coord` from PATH
#   COORD=target/debug/coord examples/safe_edit.sh
set -euo pipefail

coord="${COORD:-coord}"
case "$coord" in */*) coord="$(cd "$(dirname "$coord")" && pwd)/$(basename "$coord")" ;; esac
dir="$(mktemp -d -t coord-safe-edit-XXXXXX)"
cd "$dir"
export COORD_DIR="$dir"
say() { printf '\n# %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }

say "A shared file"
printf 'line 1\n' > SHARED.txt

say "claude edits it under the lock, through coord write (backup first, atomic replace)"
show "$coord" -a claude lock SHARED.txt
printf 'line 1\nline 2 (claude)\n' | show "$coord" -a claude write SHARED.txt
show "$coord" -a claude unlock SHARED.txt
show cat SHARED.txt SHARED.txt.bak

say "gemini tries to write without the lock: refused, nothing lost"
printf 'gemini was here\n' | show "$coord" -a gemini write SHARED.txt || echo "(exit $?)"
show cat SHARED.txt.rejected.gemini

say "undo and redo with restore (a swap)"
show "$coord" -a claude restore SHARED.txt
show cat SHARED.txt
show "$coord" -a claude restore SHARED.txt
show cat SHARED.txt

say "three agents increment a counter 5 times each with coord run: no update is lost"
echo 0 > counter.txt
for agent in claude gemini copilot; do
    (
        for _ in 1 2 3 4 5; do
            "$coord" -q -a "$agent" run counter.txt -- \
                sh -c 'echo $(( $(cat counter.txt) + 1 )) > counter.txt'
        done
    ) &
done
wait
show cat counter.txt

say "coord run passes the command's exit status on, and always releases the lock"
show "$coord" -a claude run counter.txt -- sh -c 'exit 7' || echo "(exit $?)"
show "$coord" status

echo
echo "The folder is $dir"
