#!/usr/bin/env bash
# Lane: one folder shared through two sshfs mounts on one machine (a private sshd on
# 127.0.0.1). Two mounts share no kernel lock and no filesystem events, like two machines.
#
#   tests/lanes/sshfs.sh [COORD_BINARY]
#
# Needs root (for the throwaway sshd) and /dev/fuse; installs sshfs and openssh-server with
# apt-get when they are missing. Prints why and exits 0 when it cannot run here.
#
# Measures, for two mounts with sshfs's default cache, two `cache=no` mounts, a default-cache
# mount against a `cache=no` one, and two `kernel_cache` mounts:
#   - 4 + 4 agents x 50 `coord run COUNTER.txt -- increment`, with an O_EXCL witness created on
#     the real folder inside the critical section (double holders), and the counter (lost
#     updates); the same race without coord shows that the witness catches overlaps;
#   - wake-up across mounts: one mount releases, a waiter on the other gets the lock;
#   - a stale lock (its process killed with SIGKILL) on one mount taken over from the other;
#   - a holder of the workspace mutex stopped (SIGSTOP) on one mount, overtaken from the other
#     after its lease, and fenced when it resumes;
#   - two `kernel_cache` mounts (a file's contents kept across opens, as fuse-nfs `-k` keeps
#     them): the counter race, and a lock re-taken by its agent within the same second, which
#     the other mount must see live (it used to take it over from under the running command).
# Exits 1 when exclusion failed (a double holder, a lost update between mounts of one cache
# setting, a takeover that did not happen); timings are reported, not asserted. Between a
# default-cache and a `cache=no` mount, lost updates are reported but do not fail the lane: with
# no double holder they are reads of content the default-cache mount cached before the other
# mount's write (sshfs keeps attributes up to 20 s), which no lock can prevent; docs/locking.md
# tells users to mount every side alike.
set -uo pipefail

skip() {
    echo "sshfs lane skipped: $*" >&2
    exit 0
}

here=$(cd "$(dirname "$0")/../.." && pwd)
COORD=${1:-${COORD:-${CARGO_TARGET_DIR:-$here/target}/debug/coord}}
[ -x "$COORD" ] || skip "no coord binary at $COORD (build it first)"
COORD=$(cd "$(dirname "$COORD")" && pwd)/$(basename "$COORD")
[ "$(id -u)" = 0 ] || skip "needs root (it runs its own sshd)"
[ -c /dev/fuse ] || skip "needs /dev/fuse"
if ! command -v sshfs >/dev/null || [ ! -x /usr/sbin/sshd ]; then
    command -v apt-get >/dev/null || skip "sshfs/sshd missing and no apt-get"
    DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq sshfs openssh-server openssh-client >/dev/null 2>&1 ||
        { timeout 120 apt-get update -qq >/dev/null 2>&1 &&
            DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq sshfs openssh-server openssh-client >/dev/null 2>&1; } ||
        skip "cannot install sshfs and openssh-server"
fi
command -v sshfs >/dev/null && [ -x /usr/sbin/sshd ] || skip "sshfs or sshd not available"
UMOUNT=$(command -v fusermount3 || command -v fusermount) || skip "no fusermount"

work=$(mktemp -d /tmp/coord-sshfs-lane.XXXXXX)
real=$work/real
mkdir -p "$real" "$work/m1" "$work/m2" "$work/m3" "$work/m4" "$work/out"
sshd_pid=
mount_pids=()
mounts=()
bg_pids=()

cleanup() {
    for p in "${bg_pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
    for m in "${mounts[@]}"; do "$UMOUNT" -u "$m" 2>/dev/null || "$UMOUNT" -uz "$m" 2>/dev/null; done
    for p in "${mount_pids[@]}"; do kill "$p" 2>/dev/null; done
    [ -n "$sshd_pid" ] && kill "$sshd_pid" 2>/dev/null
    sleep 0.2
    rm -rf "$work"
}
trap cleanup EXIT
trap "exit 1" INT TERM

# --- a private sshd: throwaway keys, its own config, a free port on 127.0.0.1 -----------------
ssh-keygen -q -t ed25519 -N '' -f "$work/host_key" || skip "ssh-keygen failed"
ssh-keygen -q -t ed25519 -N '' -f "$work/user_key" || skip "ssh-keygen failed"
cp "$work/user_key.pub" "$work/authorized_keys"
chmod 600 "$work/authorized_keys"
port=$(( 20000 + RANDOM % 20000 ))
cat >"$work/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $work/host_key
AuthorizedKeysFile $work/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $work/sshd.pid
Subsystem sftp internal-sftp
EOF
mkdir -p /run/sshd
/usr/sbin/sshd -f "$work/sshd_config" -E "$work/sshd.log" || skip "sshd did not start: $(cat "$work/sshd.log")"
for _ in $(seq 50); do [ -s "$work/sshd.pid" ] && break; sleep 0.1; done
sshd_pid=$(cat "$work/sshd.pid" 2>/dev/null) || skip "sshd wrote no pid file"

ssh_opts=(-p "$port" -o "IdentityFile=$work/user_key" -o StrictHostKeyChecking=no
    -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR)
mount_one() { # mount point, extra sshfs options...
    local m=$1
    shift
    sshfs -f "root@127.0.0.1:$real" "$m" "${ssh_opts[@]}" "$@" 2>>"$work/sshfs.log" &
    mount_pids+=($!)
    mounts+=("$m")
    for _ in $(seq 100); do grep -q " $m fuse.sshfs " /proc/mounts && return 0; sleep 0.1; done
    skip "sshfs could not mount $m: $(cat "$work/sshfs.log")"
}
mount_one "$work/m1"              # sshfs's default cache
mount_one "$work/m2" -o cache=no  # no cache
mount_one "$work/m3"              # default cache, a second mount
mount_one "$work/m4" -o cache=no  # no cache, a second mount
mkdir -p "$work/m5" "$work/m6" "$work/m7" "$work/m8"
mount_one "$work/m5" -o negative_timeout=20  # a negative lookup cache, as NFS clients keep
mount_one "$work/m6" -o negative_timeout=20
mount_one "$work/m7" -o kernel_cache  # file contents kept across opens (as fuse-nfs -k)
mount_one "$work/m8" -o kernel_cache
echo "sshd pid $sshd_pid on 127.0.0.1:$port; mounts: ${mounts[*]}" >&2

. "$here/tests/lanes/common.sh"

# --- the contended counter -------------------------------------------------------------------
# One increment, inside the critical section: the witness is created with O_EXCL (`set -C`) on
# the real folder, where no cache stands between two holders.
cat >"$work/increment" <<EOF
#!/bin/sh
if ! ( set -C; : > "$real/witness" ) 2>/dev/null; then echo "\$COORD_AGENT" >> "$work/out/collisions"; fi
n=\$(cat COUNTER.txt)
echo \$((n + 1)) > COUNTER.txt
rm -f "$real/witness"
EOF
chmod +x "$work/increment"

race() { # label, mount A, mount B, with_coord (1/0), lost updates fail (1/0, default 1)
    local label=$1 ma=$2 mb=$3 with=$4 lost_fails=${5:-1} pids=() start end n coll
    new_ws
    echo 0 >"$real/$ws/COUNTER.txt"
    rm -f "$work/out/collisions" "$work/out/errors"
    start=$(now_ms)
    for side in a b; do
        local m=$ma
        [ $side = b ] && m=$mb
        for i in 1 2 3 4; do
            (
                cd "$m/$ws" || exit 1
                export COORD_AGENT=$side$i
                for _ in $(seq 50); do
                    if [ "$with" = 1 ]; then
                        "$COORD" -q run --wait 2m COUNTER.txt -- "$work/increment" ||
                            echo "$COORD_AGENT: coord run exited $?" >>"$work/out/errors"
                    else
                        "$work/increment"
                    fi
                done
            ) &
            pids+=($!)
        done
    done
    bg_pids=("${pids[@]}")
    local ok=1
    for p in "${pids[@]}"; do
        # Bounded: a race that does not finish in 240 s (a stall, not slowness) is stopped and fails.
        local waited=0
        while kill -0 "$p" 2>/dev/null; do
            sleep 0.2
            waited=$((waited + 1))
            if [ $(( $(now_ms) - start )) -gt 240000 ]; then ok=0; break 2; fi
        done
    done
    if [ $ok = 0 ]; then
        for p in "${pids[@]}"; do pkill -KILL -P "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
    fi
    bg_pids=()
    end=$(now_ms)
    n=$(cat "$real/$ws/COUNTER.txt" 2>/dev/null || echo 0)
    coll=0
    [ -f "$work/out/collisions" ] && coll=$(wc -l <"$work/out/collisions" | tr -d ' ')
    local lost=$((400 - n))
    local wall
    wall=$(awk -v ms=$((end - start)) 'BEGIN { printf "%.1f s", ms / 1000 }')
    [ $ok = 1 ] || wall="over 240 s (stopped)"
    echo "| $label | $coll | $lost | $n of 400 | $wall |"
    if [ "$with" = 1 ]; then
        [ "$coll" = 0 ] || fail "$label: $coll double holders"
        if [ "$lost_fails" = 1 ]; then
            [ "$lost" = 0 ] || fail "$label: $lost lost updates"
        elif [ "$lost" != 0 ]; then
            echo "note: $label: $lost updates read stale content through the default-cache mount (no double holder)" >&2
        fi
        [ $ok = 1 ] || fail "$label: did not finish in 240 s"
        [ -s "$work/out/errors" ] && { fail "$label: coord run failed"; head -5 "$work/out/errors" >&2; }
    fi
}

# --- a negative lookup cache -----------------------------------------------------------------
# B's kernel remembers W.txt.lock.holder as absent (it looked before A made it); A locks W.txt;
# B's listing shows A's lock file, but B's open of it is answered "not found" by the cache. B
# must not judge the lock gone: `lock --no-wait` exits 3, saying since when A holds it, and one
# lock file stands.
negative_cache() { # mount A, mount B
    local ma=$1 mb=$2 code n
    new_ws; echo x >"$real/$ws/W.txt"
    (cd "$mb/$ws" && COORD_AGENT=other "$COORD" -q status >/dev/null 2>&1)
    stat "$mb/$ws/W.txt.lock.holder" >/dev/null 2>&1   # caches the name as absent on B
    (cd "$ma/$ws" && COORD_AGENT=holder "$COORD" -q lock W.txt) || { fail "negative cache: A could not lock"; return; }
    (cd "$mb/$ws" && COORD_AGENT=other "$COORD" -q lock --no-wait W.txt 2>"$work/out/neg.err")
    code=$?
    n=$(ls "$real/$ws" | grep -c '^W\.txt\.lock\.')
    echo "| negative lookup cache (\`negative_timeout=20\`) | B exits $code | $n lock file(s) | $(head -1 "$work/out/neg.err") |"
    [ "$code" = 3 ] || { fail "negative cache: B's lock --no-wait exited $code, not 3"; cat "$work/out/neg.err" >&2; }
    # The lock found on the server is read again once the failed create made B's kernel forget
    # the name: B is told since when (it was told "since an unknown time").
    grep -q 'unknown time' "$work/out/neg.err" && fail "negative cache: B was not told since when: $(head -1 "$work/out/neg.err")"
    [ "$n" = 1 ] || fail "negative cache: $n lock files on W.txt"
}

# --- contents kept across opens --------------------------------------------------------------
# Through `-o kernel_cache` a mount keeps a file's old contents for as long as its size and mtime
# look unchanged, and sshfs's times are whole seconds. alice (mount A) runs `coord run F` and B
# looks (caching her record); her run ends and she runs again within the same second: a record
# of the same size, her new pid. B must see the new record, live: `lock --no-wait` exits 3, and
# alice's run keeps its lock. A round counts when both records carry the same second.
cached_relock() { # mount A, mount B, rounds
    local ma=$1 mb=$2 rounds=$3 shown=0 taken=0 r ms first second code lock p1 p2
    for r in $(seq "$rounds"); do
        new_ws; echo x >"$real/$ws/F"
        lock=$real/$ws/F.lock.alice
        ms=$(( $(now_ms) % 1000 ))
        sleep "$(awk -v m="$ms" 'BEGIN { printf "%.3f", (1020 - m) / 1000 }')"
        (cd "$ma/$ws" && exec "$COORD" -q -a alice run F -- sleep 0.2) &
        p1=$!
        bg_pids=("$p1")
        for _ in $(seq 400); do [ -e "$lock" ] && break; sleep 0.01; done
        first=$(grep '^locked_at:' "$lock" 2>/dev/null)
        (cd "$mb/$ws" && "$COORD" -q -a bob lock F --no-wait --no-backup 2>/dev/null)
        wait "$p1"
        # The second run lasts until B has looked (at most a minute), however slow B is.
        rm -f "$work/out/looked"
        (cd "$ma/$ws" && exec "$COORD" -q -a alice run F -- sh -c \
            "for _ in \$(seq 1200); do [ -e '$work/out/looked' ] && exit 0; sleep 0.05; done") 2>"$work/out/alice.err" &
        p2=$!
        bg_pids=("$p2")
        for _ in $(seq 400); do [ -e "$lock" ] && break; sleep 0.01; done
        second=$(grep '^locked_at:' "$lock" 2>/dev/null)
        (cd "$mb/$ws" && "$COORD" -a bob lock F --no-wait --no-backup) >"$work/out/bob.out" 2>&1
        code=$?
        : >"$work/out/looked"
        wait "$p2"
        bg_pids=()
        [ -n "$first" ] && [ "$first" = "$second" ] && shown=$((shown + 1))
        if [ "$code" != 3 ] || grep -q 'taken over' "$work/out/alice.err"; then
            taken=$((taken + 1))
            fail "kernel_cache: round $r: B took the LIVE lock of alice's running command (bob exit $code): $(head -2 "$work/out/bob.out")"
        fi
    done
    echo "| lock re-taken within the second, seen through \`kernel_cache\` | $taken live lock(s) taken over in $rounds rounds | $shown rounds with both records in one second |"
    [ "$shown" -gt 0 ] || echo "note: kernel_cache: no round re-took the lock within one second (a slow machine)" >&2
}

echo
echo "### Two sshfs mounts of one folder (4 + 4 agents x 50 \`coord run COUNTER.txt -- increment\`)"
echo
echo "| | double holders | lost | runs | wall |"
echo "|---|---|---|---|---|"
race "two mounts, sshfs default cache" "$work/m1" "$work/m3" 1
race "two mounts, \`cache=no\`" "$work/m2" "$work/m4" 1
race "default cache + \`cache=no\` (mixed caches)" "$work/m1" "$work/m2" 1 0
race "two mounts, \`kernel_cache\` (contents kept across opens)" "$work/m7" "$work/m8" 1
race "the same race without coord" "$work/m1" "$work/m3" 0
echo
echo "| wake-up after a release, across mounts | median | all |"
echo "|---|---|---|"
wake "default cache -> default cache" "$work/m1" "$work/m3" 7
wake "\`cache=no\` -> default cache" "$work/m2" "$work/m1" 7
echo
echo "| takeover | time | |"
echo "|---|---|---|"
stale_takeover "$work/m1" "$work/m3"
negative_cache "$work/m5" "$work/m6"
cached_relock "$work/m7" "$work/m8" 5
stopped_holder "$work/m1" "$work/m3"
echo
if [ "$failures" -gt 0 ]; then
    echo "sshfs lane: $failures failure(s)" >&2
    exit 1
fi
echo "sshfs lane: exclusion held" >&2
