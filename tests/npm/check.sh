#!/usr/bin/env bash
# The npm install, for real: the static release binary (scripts/release-build.sh, this machine's
# Linux target), the packages packed (npm/stage.sh), installed from the tarballs into scratch
# prefixes with no cargo on PATH, then `coord --version`, `coord demo` and `coord init --client
# claude --dry-run` through the installed `coord`, both as npm installs it (scripts run: the
# native binary in place of the launcher) and with `--ignore-scripts` (the JS launcher), and a
# real Claude Code session offline against the scripted model (tests/e2e/fake_anthropic.py) in a
# repository wired by that `coord init`: its edit of a file another agent holds is denied, then
# allowed once released, and its lock is gone when the session ends.
#
#   tests/npm/check.sh
#
# Skips, saying why (exit 0), without node and npm or off Linux x86-64/ARM64; the Claude Code
# session skips without the client (COORD_TEST_CLAUDE, or ~/.cache/coord-ci-tools as .ci/run
# installs it) or python3. Every step is bounded in time; .ci/run bounds the whole.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)

case "$(uname -s) $(uname -m)" in
  "Linux x86_64") target=x86_64-unknown-linux-musl platform=linux-x64 ;;
  "Linux aarch64") target=aarch64-unknown-linux-musl platform=linux-arm64 ;;
  *) echo "npm check skipped: no prebuilt binary for $(uname -s) $(uname -m)"; exit 0 ;;
esac
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "npm check skipped: $tool is not installed"; exit 0; }
done
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)

step() { printf '== %s\n' "$*"; }
fail() { echo "npm check FAILED: $*" >&2; exit 1; }

step "release build ($target) and npm pack"
timeout 1800 scripts/release-build.sh "$target"
timeout 300 npm/stage.sh
main_tgz=$repo/dist/npm/coord-cli-$version.tgz
platform_tgz=$repo/dist/npm/coord-cli-$platform-$version.tgz
for tgz in "$main_tgz" "$platform_tgz"; do
  [ -f "$tgz" ] || fail "npm/stage.sh did not leave $tgz"
done

scratch=$(mktemp -d)
model_pid=""
session_pid=""
cleanup() {
  [ -z "$session_pid" ] || kill -KILL -- "-$session_pid" 2>/dev/null || true
  [ -z "$model_pid" ] || kill "$model_pid" 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT

# PATH without cargo: every PATH entry that holds cargo or rustc is left out.
clean_path=""
IFS=: read -r -a entries <<<"$PATH"
for dir in "${entries[@]}"; do
  [ -n "$dir" ] || continue
  [ -x "$dir/cargo" ] || [ -x "$dir/rustc" ] && continue
  clean_path=${clean_path:+$clean_path:}$dir
done
# The npm cache stays in the scratch folder: the packages come from the tarballs only.
export npm_config_cache=$scratch/npm-cache npm_config_update_notifier=false
run_clean() { env PATH="$1:$clean_path" HOME="$scratch/home" "${@:2}"; }
mkdir -p "$scratch/home"
run_clean /nonexistent sh -c '! command -v cargo >/dev/null && ! command -v rustc >/dev/null' \
  || fail "cargo is still on PATH: $clean_path"

# $1: prefix; the rest: extra npm options.
install() {
  local prefix=$1
  shift
  local start end
  start=$(date +%s%N)
  run_clean /nonexistent timeout 300 npm i -g --prefix "$prefix" --offline --no-audit --no-fund \
    --loglevel=error "$@" "$main_tgz" "$platform_tgz"
  end=$(date +%s%N)
  echo "installed into $prefix in $(((end - start) / 1000000)) ms"
}

# $1: prefix. --version, demo, init --dry-run through the installed coord.
exercise() {
  local bin=$1/bin
  local out
  out=$(run_clean "$bin" timeout 30 coord --version) || fail "coord --version: $out"
  echo "$out"
  [ "$out" = "coord $version" ] || [[ $out == "coord $version "* ]] || fail "coord --version says '$out', not $version"
  mkdir -p "$scratch/demo"
  out=$(cd "$scratch/demo" && run_clean "$bin" timeout 120 coord demo 2>&1) || fail "coord demo: $out"
  echo "$out" | head -n 8
  echo "... ($(echo "$out" | wc -l) lines)"
  local wired
  wired=$scratch/wired-$(basename "$1")
  mkdir -p "$wired"
  git -C "$wired" init -q
  out=$(cd "$wired" && run_clean "$bin" timeout 30 coord init --client claude --dry-run 2>&1) \
    || fail "coord init --dry-run: $out"
  echo "$out" | head -n 5
  local made
  made=$(find "$wired" -mindepth 1 -maxdepth 1 ! -name .git)
  [ -z "$made" ] || fail "coord init --dry-run wrote files: $made"
}

step "npm i -g (install scripts run): the native binary in place of the launcher"
install "$scratch/g"
native=$(readlink -f "$scratch/g/bin/coord")
head -c 4 "$native" | grep -q 'ELF' || fail "$native is not the native binary: $(head -c 40 "$native")"
exercise "$scratch/g"

step "npm i -g --ignore-scripts: the JS launcher runs the platform package's binary"
install "$scratch/js" --ignore-scripts
launcher=$(readlink -f "$scratch/js/bin/coord")
head -n 1 "$launcher" | grep -q node || fail "$launcher is not the JS launcher"
exercise "$scratch/js"

step "Claude Code session through the installed coord"
tools=${COORD_CI_TOOLS:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/coord-ci-tools}
claude=${COORD_TEST_CLAUDE:-$tools/node_modules/.bin/claude}
if [ ! -x "$claude" ]; then
  echo "Claude Code session skipped: Claude Code is not installed (set COORD_TEST_CLAUDE; .ci/run installs it with npm)"
  exit 0
fi
command -v python3 >/dev/null || { echo "Claude Code session skipped: python3 is not installed"; exit 0; }
command -v git >/dev/null || { echo "Claude Code session skipped: git is not installed"; exit 0; }
python3 tests/e2e/fake_anthropic.py "$scratch/model.port" "$scratch/model.log" </dev/null >/dev/null 2>&1 &
model_pid=$!
for _ in $(seq 200); do [ -s "$scratch/model.port" ] && break; sleep 0.1; done
[ -s "$scratch/model.port" ] || fail "the scripted model did not start"
port=$(cat "$scratch/model.port")

# $1: the session's name, $2: its script (tests/e2e/scripted.py). One `claude -p` run, in its
# own process group (killed with it), at most 120 s; only the variables it needs, offline.
session() {
  local prompt
  prompt="coord-e2e: $(echo "$2" | tr -d '\n')"
  (
    cd "$work"
    exec setsid env -i PATH="$bin:$clean_path" HOME="$home" NO_COLOR=1 \
      ANTHROPIC_BASE_URL="http://127.0.0.1:$port" ANTHROPIC_API_KEY=sk-ant-coord-e2e \
      DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
      HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 ALL_PROXY=http://127.0.0.1:9 \
      http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 all_proxy=http://127.0.0.1:9 \
      NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost \
      "$claude" -p "$prompt" --allowedTools Read Write Edit Bash mcp__coord
  ) >"$scratch/$1.stdout" 2>"$scratch/$1.stderr" </dev/null &
  session_pid=$!
  local start=$SECONDS
  while kill -0 "$session_pid" 2>/dev/null; do
    ((SECONDS - start < 120)) || { cat "$scratch/$1".std*; fail "$1: Claude Code did not finish within 120 s"; }
    sleep 0.2
  done
  local code=0
  wait "$session_pid" || code=$?
  kill -KILL -- "-$session_pid" 2>/dev/null || true
  session_pid=""
  echo "$1: claude exited $code in $((SECONDS - start)) s"
}
# The tool results the model was sent, one per line (see tests/e2e/scripted.py).
results() {
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("script"):
        for res in r.get("results") or []:
            print(json.dumps(res.get("text", "")))
' "$scratch/model.log" | sort -u
}

# $1: the prefix of an install. A repository wired by its `coord init`, a file alice holds, a
# session denied its edit, alice's release, a session allowed it.
claude_check() {
  bin=$1/bin work=$1-repo home=$1-home
  mkdir -p "$work" "$home/.claude"
  echo '{"enableAllProjectMcpServers": true}' >"$home/.claude/settings.json"
  git -C "$work" init -q
  (cd "$work" && run_clean "$bin" timeout 30 coord init --client claude -q)
  grep -q 'coord hook claude' "$work/.claude/settings.json" || fail "coord init did not wire Claude Code's hooks"
  printf 'original\n' >"$work/target.txt"
  (cd "$work" && run_clean "$bin" timeout 30 coord -a alice lock target.txt -q)
  : >"$scratch/model.log"
  session denied "[{\"write\": [\"$work/target.txt\", \"from the session\"]}, {\"say\": \"done\"}]"
  [ "$(cat "$work/target.txt")" = original ] || fail "the edit of a file alice holds happened: $(cat "$work/target.txt")"
  results | grep 'alice' | grep -q 'target.txt' \
    || { results; cat "$scratch"/denied.std*; fail "the model was not told that alice holds target.txt"; }
  echo "denied: target.txt untouched; the model was told: $(results | grep alice | head -n 1 | cut -c1-160)"

  (cd "$work" && run_clean "$bin" timeout 30 coord -a alice unlock target.txt -q)
  : >"$scratch/model.log"
  # Then `coord` from the session's shell acts as the session: its lock does not block the
  # session's own edit, and `coord whoami` names a Claude Code session's agent.
  session allowed "[{\"write\": [\"$work/target.txt\", \"from the session\"]},
    {\"shell\": \"coord lock shell.txt\"}, {\"write\": [\"$work/shell.txt\", \"from the session\"]},
    {\"shell\": \"coord whoami\"}, {\"say\": \"done\"}]"
  [ "$(cat "$work/target.txt")" = "from the session" ] \
    || { results; cat "$scratch"/allowed.std*; fail "the edit after the release did not happen: $(cat "$work/target.txt")"; }
  [ "$(cat "$work/shell.txt" 2>/dev/null)" = "from the session" ] \
    || { results; fail "the session's edit of the file its shell's coord locked did not happen"; }
  whoami=$(results | grep -o 'claude-[A-Za-z0-9-]*' | head -n 1)
  [ -n "$whoami" ] || { results; fail "coord whoami in the session's shell did not name a claude session"; }
  locks=$(find "$work" -maxdepth 1 -name '*.lock.*')
  [ -z "$locks" ] || fail "the session's locks outlived it: $locks"
  echo "allowed: target.txt and shell.txt written by the session ($whoami), no lock left"
}

step "Claude Code session, coord installed by npm i -g"
claude_check "$scratch/g"
step "Claude Code session, coord installed by npm i -g --ignore-scripts"
claude_check "$scratch/js"
echo "npm check passed"
