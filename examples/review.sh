#!/bin/sh
# A whole review cycle between two agents, "claude" (reviewer) and "codex" (implementer),
# in a fresh folder. Run it from anywhere: ./examples/review.sh [coord-binary]
set -eu

COORD=${1:-coord}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/coord-review-XXXXXX")
export COORD_DIR="$DIR"
cd "$DIR"

mkdir -p docs
printf '# API\n\nList endpoints return everything.\n' > docs/api.md

# Write an output file at PATH whose last section is the handoff prompt for the next actor.
write_output() { # PATH BODY PROMPT
    mkdir -p "$(dirname "$1")"
    printf '# %s\n\n%s\n\n## Handoff Prompt for Next Actor\n\n%s\n' "$(basename "$1")" "$2" "$3" > "$1"
}

"$COORD" review new api --target docs/api.md --reviewer claude --implementer codex
"$COORD" review next api

# Step 01: claude reviews.
out=$("$COORD" review path api --kind review --llm claude)
write_output "$out" "ISSUE-01: list endpoints need pagination." \
    "Codex: read .metadata/reviews/active/api-tracker.md and respond to ISSUE-01 (step 02)."
"$COORD" review issue api add --severity high --title "List endpoints need pagination"
"$COORD" -a claude review step api --action review --output "$out" --summary "1 issue" --next codex

# Step 02: codex responds; step 03: claude agrees.
out=$("$COORD" review path api --kind response --llm codex --description "agree")
write_output "$out" "Agreed: cursor pagination." "Claude: confirm the plan (step 03)."
"$COORD" -a codex review step api --action response --output "$out" --summary "agreed" --next claude
"$COORD" review agree api "Use cursor pagination" --adopted claude
out=$("$COORD" review path api --kind response --llm claude --description "confirm")
write_output "$out" "Confirmed." "Codex: implement cursor pagination (step 04)."
"$COORD" -a claude review step api --action response --output "$out" --summary "confirmed" --next codex

# Step 04: codex implements.
printf '\nLists take `cursor` and `limit`.\n' >> docs/api.md
out=$("$COORD" review path api --kind changelog --llm codex --description "cursor pagination")
write_output "$out" "docs/api.md: pagination section." "Claude: verify docs/api.md (step 05)."
"$COORD" -a codex review step api --action implement --output "$out" --summary "pagination documented" --next claude
"$COORD" review issue api set ISSUE-01 --status resolved --resolution "Cursor pagination documented"

# Closing before the verification is refused (exit 4), naming what is missing.
"$COORD" review close api || echo "(close refused with exit $?, as expected)"

# Step 05: claude verifies; then the review closes.
out=$("$COORD" review path api --kind response --llm claude --step 5 --action verify --description "ok")
write_output "$out" "Verified docs/api.md, section Pagination." "Codex: nothing left to do."
"$COORD" -a claude review step api --action verify --output "$out" --summary "verified" --next codex
"$COORD" review close api
"$COORD" review show api
echo "The review folder is $DIR"
