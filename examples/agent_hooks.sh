#!/usr/bin/env bash
# Two Claude Code sessions' hook traffic against one folder, played by hand: what `coord init`
# wires each client to send. Session A writes notes.md; session B's Write of the same file is
# denied naming A; after A's turn ends (Stop) B gets it.
#
#   examples/agent_hooks.sh [DIR]        # default: a fresh temporary folder
set -euo pipefail
dir=${1:-$(mktemp -d)}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd -P)
unset COORD_AGENT COORD_DIR

# One hook event of one session, as the client writes it on the hook's stdin.
event() { # SESSION EVENT [TOOL FILE]
    local tool_part=""
    if [ $# -ge 4 ]; then
        tool_part=$(printf ',"tool_name":"%s","tool_input":{"file_path":"%s/%s","content":"..."}' "$3" "$dir" "$4")
    fi
    printf '{"session_id":"%s","cwd":"%s","hook_event_name":"%s"%s}' "$1" "$dir" "$2" "$tool_part"
}
hook() { coord hook claude --wait 1s; }

A=aaaa1111-0000-4000-8000-000000000001
B=bbbb2222-0000-4000-8000-000000000002

echo "== both sessions start (SessionStart prints context for the agent)"
event $A SessionStart | hook
event $B SessionStart | hook

echo "== A is about to Write notes.md: allowed (nothing printed), the lock is A's"
event $A PreToolUse Write notes.md | hook
echo "hello from A" > "$dir/notes.md"
event $A PostToolUse Write notes.md | hook
ls "$dir" | grep '^notes.md'

echo "== B is about to Write notes.md: denied, naming A"
event $B PreToolUse Write notes.md | hook

echo "== A's turn ends (Stop): its locks are released"
event $A Stop | hook

echo "== B tries again: allowed"
event $B PreToolUse Write notes.md | hook
echo "hello from B" > "$dir/notes.md"
event $B Stop | hook

echo "== both sessions end (SessionEnd: clocked out, FINISHED)"
event $A SessionEnd | hook
event $B SessionEnd | hook
coord -C "$dir" status
