#!/usr/bin/env bash
# Not a benchmark: remakes docs/ui.png, the page of `coord ui` over a workspace with a little of
# everything (agents, one waiting for its user, locks, a claim, a waiter, a deadlock refused, a
# dialogue, a review), shot by headless Chromium (Debian's `chromium` and `chromium-driver`)
# once the page's scripts have drawn it (through chromedriver: `chromium --screenshot` shoots at
# the load event, before the page has fetched anything).
#
#   bench/ui_screenshot.sh [COORD]      # COORD: target/release/coord
set -euo pipefail
coord=$(realpath "${1:-target/release/coord}")
out=$(realpath "$(dirname "$0")/../docs")/ui.png
ws=$(mktemp -d /tmp/coord-ui-shot-XXXXXX)
profile=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$ws" "$profile"
}
trap cleanup EXIT
export COORD_DIR=$ws
c() { "$coord" -q "$@"; }
cd "$ws"
mkdir -p src/auth docs
touch README.md src/auth/login.rs src/cache.rs docs/api.md

c -a alice presence . "Task_12: cache eviction"
c -a bob presence . "Task_15: auth refactor"
c -a carol presence . "Task_16: README"
c -a alice lock src/cache.rs --reason "LRU eviction" --no-backup
c -a bob lock 'src/auth/**' --reason "auth refactor"
c -a carol lock README.md --reason "install section" --no-backup
sleep 2
c -a carol unlock README.md
c -a alice lock README.md --reason "cache docs" --no-backup
sleep 1
"$coord" -q -a carol lock README.md --wait 10m --no-backup & pids+=($!)
sleep 1
# A deadlock refused: dave and erin each hold what the other asks for.
c -a dave lock docs/api.md --no-backup
c -a erin lock Cargo.toml --no-backup
"$coord" -q -a dave lock Cargo.toml --wait 10m --no-backup & pids+=($!)
sleep 1
c -a erin lock docs/api.md --wait 10m --no-backup 2>/dev/null || true
# A client waiting for its user (Claude Code's permission prompt, through its hook).
sid=7684f1ed-55e2-4a19-be34-6aa5a64f4b50
echo "{\"session_id\":\"$sid\",\"cwd\":\"$ws\",\"hook_event_name\":\"SessionStart\",\"source\":\"startup\"}" | "$coord" hook claude >/dev/null
echo "{\"session_id\":\"$sid\",\"cwd\":\"$ws\",\"hook_event_name\":\"Notification\",\"message\":\"Claude needs your permission to use Bash\",\"notification_type\":\"permission_prompt\"}" | "$coord" hook claude >/dev/null
c dialogue init --topic "Cache design" --agents alice,bob --first bob
c -a bob review new cache --target src/cache.rs --reviewer bob --implementer alice
sleep 2

"$coord" ui -q > "$ws/.url" & pids+=($!)
while [ ! -s "$ws/.url" ]; do sleep 0.1; done
url=$(head -1 "$ws/.url")
rm "$ws/.url"
python3 - "$url" "$out" "$profile" <<'PY'
import base64, json, socket, subprocess, sys, time, urllib.request
url, out, profile = sys.argv[1:]
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
driver = subprocess.Popen(["chromedriver", f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method, headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=60))["value"]
try:
    for _ in range(100):
        try:
            call("GET", "/status"); break
        except OSError:
            time.sleep(0.1)
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", "--hide-scrollbars", "--window-size=1400,1500", f"--user-data-dir={profile}"]
    sid = call("POST", "/session", {"capabilities": {"alwaysMatch": {"goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args}}}})["sessionId"]
    call("POST", f"/session/{sid}/url", {"url": url})
    time.sleep(3)
    open(out, "wb").write(base64.b64decode(call("GET", f"/session/{sid}/screenshot")))
    call("DELETE", f"/session/{sid}")
finally:
    driver.terminate()
PY
echo "wrote $out"
