# What the shared-folder lanes (sshfs.sh, smb.sh) have in common: workspaces of their own, and
# the scenarios run the same way whatever the filesystem: the wake-up across mounts, a stale
# lock taken over from the other mount, a stopped mutex holder overtaken. Sourced by each lane
# after it has set COORD, `work` (its scratch folder, with `out/`) and `real` (the folder the
# mounts show).

now_ms() { date +%s%3N; }
# Every scenario works in a folder of its own: a folder removed from under a mount stays in
# that mount's cache for a while, which is not what the lane measures.
ws_count=0
ws=
new_ws() {
    ws_count=$((ws_count + 1))
    ws=ws$ws_count
    mkdir -p "$real/$ws"
}
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# --- wake-up across mounts -------------------------------------------------------------------
wake() { # label, holder mount, waiter mount, rounds
    local label=$1 mh=$2 mw=$3 rounds=$4 times=() t0 t1
    new_ws; echo x >"$real/$ws/W.txt"
    for r in $(seq "$rounds"); do
        (cd "$mh/$ws" && "$COORD" -q -a holder lock W.txt --no-backup) || { fail "$label: holder lock"; return; }
        rm -f "$work/out/t1"
        (cd "$mw/$ws" && "$COORD" -q -a waiter lock W.txt --no-backup --wait 60s && now_ms >"$work/out/t1") &
        local wp=$!
        sleep 1
        t0=$(now_ms)
        (cd "$mh/$ws" && "$COORD" -q -a holder unlock W.txt)
        wait "$wp"
        t1=$(cat "$work/out/t1" 2>/dev/null) || { fail "$label: the waiter never got the lock"; return; }
        times+=($((t1 - t0)))
        (cd "$mw/$ws" && "$COORD" -q -a waiter unlock W.txt)
    done
    local median
    median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    echo "| $label | ${median} ms | $(printf '%s ' "${times[@]}")|"
}

# --- a stale lock (its process killed) taken over from the other mount -------------------------
stale_takeover() { # holder mount, taker mount
    new_ws; echo x >"$real/$ws/S.txt"
    (cd "$1/$ws" && exec "$COORD" -q -a crashed run S.txt -- sleep 300) &
    local rp=$!
    bg_pids=("$rp")
    for _ in $(seq 100); do [ -e "$real/$ws/S.txt.lock.crashed" ] && break; sleep 0.05; done
    [ -e "$real/$ws/S.txt.lock.crashed" ] || { fail "stale takeover: the holder never locked"; return; }
    local child
    child=$(pgrep -P "$rp" || true)
    kill -KILL "$rp"
    [ -n "$child" ] && kill -KILL $child 2>/dev/null
    wait "$rp" 2>/dev/null
    bg_pids=()
    local t0 t1 msg
    t0=$(now_ms)
    msg=$(cd "$2/$ws" && "$COORD" -a taker lock S.txt --no-backup --wait 30s 2>&1) || { fail "stale takeover: $msg"; return; }
    t1=$(now_ms)
    echo "$msg" | grep -qi "crashed" || fail "stale takeover: did not say from whom: $msg"
    echo "| stale lock (holder killed with SIGKILL) taken over from the other mount | $((t1 - t0)) ms |"
}

# --- a stopped holder of the workspace mutex, overtaken from the other mount -------------------
stopped_holder() { # holder mount, other mount
    new_ws; echo x >"$real/$ws/G.txt"
    (cd "$1/$ws" && exec "$COORD" doctor --hold 3s) >"$work/out/hold.out" 2>"$work/out/hold.err" &
    local hp=$!
    bg_pids=("$hp")
    # Stopped once it holds the mutex (it says so): the lease file appears before its record is
    # written and closed, and SMB lets nobody move a file a stopped process still has open.
    for _ in $(seq 250); do grep -q "^holding" "$work/out/hold.out" 2>/dev/null && break; sleep 0.02; done
    grep -q "^holding" "$work/out/hold.out" || { fail "stopped holder: it never took the mutex"; return; }
    kill -STOP "$hp"
    local t0 t1 msg
    t0=$(now_ms)
    msg=$(cd "$2/$ws" && "$COORD" -a other lock G.txt --no-backup --wait 60s 2>&1) || { fail "stopped holder: the other mount did not get through: $msg"; }
    t1=$(now_ms)
    kill -CONT "$hp"
    local status=0
    wait "$hp" || status=$?
    bg_pids=()
    [ "$status" = 3 ] || fail "stopped holder: after resuming it did not learn it was fenced (exit $status)"
    [ -e "$real/$ws/G.txt.lock.other" ] || fail "stopped holder: the other's lock is gone"
    echo "| holder of the mutex stopped (SIGSTOP) on one mount, overtaken from the other | $((t1 - t0)) ms | resumed holder exit $status (fenced) |"
}
