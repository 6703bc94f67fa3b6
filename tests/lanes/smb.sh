#!/usr/bin/env bash
# Lane: one SMB share mounted twice on one machine, served by a private Samba on 127.0.0.1. Two
# mounts are two SMB clients: they share no kernel lock and no filesystem events, like two
# machines. The client is the kernel's CIFS (`mount -t cifs`) when the kernel has it, else
# smbnetfs (a userspace SMB client on FUSE; containers and VMs without kernel modules).
#
#   tests/lanes/smb.sh [COORD_BINARY]
#
# Needs root (for the throwaway smbd, on 127.0.0.1:445: smbnetfs's client only speaks to that
# port) and /dev/fuse; installs samba and smbnetfs with apt-get when they are missing. Prints
# why and exits 0 when it cannot run here.
#
# Measures, as the sshfs lane does: 4 + 4 agents x ROUNDS (default 20) `coord run COUNTER.txt -- increment` with
# an O_EXCL witness on the real folder (double holders) and the counter (lost updates), the same
# race without coord, wake-up across mounts, a stale lock taken over from the other mount, and a
# stopped holder of the workspace mutex overtaken and fenced. Exits 1 when exclusion failed.
set -uo pipefail
ROUNDS=${ROUNDS:-20}

skip() {
    echo "smb lane skipped: $*" >&2
    exit 0
}

here=$(cd "$(dirname "$0")/../.." && pwd)
COORD=${1:-${COORD:-${CARGO_TARGET_DIR:-$here/target}/debug/coord}}
[ -x "$COORD" ] || skip "no coord binary at $COORD (build it first)"
COORD=$(cd "$(dirname "$COORD")" && pwd)/$(basename "$COORD")
[ "$(id -u)" = 0 ] || skip "needs root (it runs its own smbd)"
[ -c /dev/fuse ] || skip "needs /dev/fuse"
if [ ! -x /usr/sbin/smbd ] || ! command -v smbnetfs >/dev/null; then
    command -v apt-get >/dev/null || skip "samba/smbnetfs missing and no apt-get"
    DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq samba smbnetfs >/dev/null 2>&1 ||
        { timeout 120 apt-get update -qq >/dev/null 2>&1 &&
            DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq samba smbnetfs >/dev/null 2>&1; } ||
        skip "cannot install samba and smbnetfs"
fi
[ -x /usr/sbin/smbd ] && command -v smbnetfs >/dev/null && command -v smbpasswd >/dev/null ||
    skip "smbd, smbpasswd or smbnetfs not available"
UMOUNT=$(command -v fusermount3 || command -v fusermount) || skip "no fusermount"
if command -v ss >/dev/null && ss -ltn 2>/dev/null | grep -Eq '[:.]445[[:space:]]'; then
    skip "port 445 is taken (another SMB server runs here)"
fi

work=$(mktemp -d /tmp/coord-smb-lane.XXXXXX)
real=$work/real
mkdir -p "$real" "$work/m1" "$work/m2" "$work/out" "$work/home/.smb" \
    "$work/samba/priv" "$work/samba/lock" "$work/samba/state" "$work/samba/cache" "$work/samba/run" "$work/samba/log"
smbd_pid=
mount_pids=()
mounts=()
bg_pids=()

cleanup() {
    for p in "${bg_pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
    for m in "${mounts[@]}"; do "$UMOUNT" -u "$m" 2>/dev/null || "$UMOUNT" -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
    for p in "${mount_pids[@]}"; do kill "$p" 2>/dev/null; done
    [ -n "$smbd_pid" ] && kill "$smbd_pid" 2>/dev/null
    sleep 0.2
    rm -rf "$work"
}
trap cleanup EXIT
trap "exit 1" INT TERM

# --- a private smbd: its own folders and password database, 127.0.0.1 only -------------------
printf '%s\n' "[global]" \
    "server role = standalone server" "smb ports = 445" "interfaces = 127.0.0.1" \
    "bind interfaces only = yes" "private dir = $work/samba/priv" "lock directory = $work/samba/lock" \
    "state directory = $work/samba/state" "cache directory = $work/samba/cache" \
    "pid directory = $work/samba/run" "log file = $work/samba/log/smbd.log" \
    "map to guest = never" "disable spoolss = yes" "load printers = no" "server min protocol = SMB2" \
    "[share]" "path = $real" "read only = no" "force user = root" >"$work/smb.conf"
password=pw$RANDOM$RANDOM
printf '%s\n%s\n' "$password" "$password" | smbpasswd -c "$work/smb.conf" -s -a root >/dev/null 2>&1 ||
    skip "smbpasswd failed"
/usr/sbin/smbd -s "$work/smb.conf" -D || skip "smbd did not start"
for _ in $(seq 50); do [ -s "$work/samba/run/smbd.pid" ] && break; sleep 0.1; done
smbd_pid=$(cat "$work/samba/run/smbd.pid" 2>/dev/null) || skip "smbd wrote no pid file"

printf '%s\n' "[global]" "client min protocol = SMB2" "workgroup = WORKGROUP" >"$work/home/.smb/smb.conf"
printf '%s\n' "auth \"127.0.0.1\" \"root\" \"$password\"" "smb_query_browsers false" \
    "show_hidden_hosts true" "host 127.0.0.1 visible=true" >"$work/home/.smb/smbnetfs.conf"
chmod 600 "$work/home/.smb/"*

client=smbnetfs
if grep -qw cifs /proc/filesystems 2>/dev/null && command -v mount.cifs >/dev/null; then client=cifs; fi
share_of() { # mount point -> the share's folder in it
    if [ $client = cifs ]; then echo "$1"; else echo "$1/127.0.0.1/share"; fi
}
mount_one() { # index (0, 1): mounts the share on $work/m1 or $work/m2
    local i=$1 m=$work/m$(($1 + 1))
    mounts[$i]=$m
    if [ $client = cifs ]; then
        mount -t cifs //127.0.0.1/share "$m" -o "username=root,password=$password,vers=3.0,actimeo=1" \
            2>>"$work/mount.log" || skip "mount -t cifs failed: $(cat "$work/mount.log")"
        return
    fi
    (cd "$work" && HOME=$work/home exec smbnetfs -f "$m") 2>>"$work/mount.log" &
    mount_pids[$i]=$!
    for _ in $(seq 100); do
        ls "$m/127.0.0.1/share" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    skip "smbnetfs could not mount $m: $(cat "$work/mount.log")"
}
mount_one 0
mount_one 1
s1=$(share_of "$work/m1")
s2=$(share_of "$work/m2")
echo "smbd pid $smbd_pid on 127.0.0.1:445; $client mounts: $s1 $s2" >&2

. "$here/tests/lanes/common.sh"

# smbnetfs keeps one SMB connection per mount; under load that connection can fail for good, and
# from then on every path of the mount answers EIO (`cd` included) until it is mounted again.
# Before each scenario, both mounts must show a folder made on the real side a moment ago; a
# smbnetfs mount that does not is mounted again, saying so. A scenario that meets the error
# half-way still fails: this only keeps one broken mount from failing every scenario after it.
probes=0
check_mounts() {
    local i s err
    probes=$((probes + 1))
    mkdir -p "$real/probe$probes"
    for i in 0 1; do
        s=$(share_of "${mounts[$i]}")
        for _ in $(seq 20); do ls "$s/probe$probes" >/dev/null 2>&1 && continue 2; sleep 0.1; done
        err=$(ls "$s/probe$probes" 2>&1 >/dev/null | head -1)
        [ $client = smbnetfs ] || { fail "mount $((i + 1)) stopped answering: $err"; continue; }
        echo "note: smbnetfs mount $((i + 1)) stopped answering ($err); mounted again" >&2
        "$UMOUNT" -u "${mounts[$i]}" 2>/dev/null || "$UMOUNT" -uz "${mounts[$i]}" 2>/dev/null
        kill "${mount_pids[$i]}" 2>/dev/null
        wait "${mount_pids[$i]}" 2>/dev/null
        mount_one "$i"
        ls "$s/probe$probes" >/dev/null 2>&1 || fail "mount $((i + 1)) still fails after mounting it again: $err"
    done
}

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
    local label=$1 ma=$2 mb=$3 with=$4 pids=() start end n coll
    new_ws
    echo 0 >"$real/$ws/COUNTER.txt"
    rm -f "$work/out/collisions" "$work/out/errors" "$work/out/stderr"
    start=$(now_ms)
    for side in a b; do
        local m=$ma
        [ $side = b ] && m=$mb
        for i in 1 2 3 4; do
            (
                cd "$m/$ws" || exit 1
                export COORD_AGENT=$side$i
                for _ in $(seq "$ROUNDS"); do
                    if [ "$with" = 1 ]; then
                        "$COORD" -q run --wait 2m COUNTER.txt -- "$work/increment" 2>>"$work/out/stderr" ||
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
    local lost=$((8 * ROUNDS - n))
    local wall
    wall=$(awk -v ms=$((end - start)) 'BEGIN { printf "%.1f s", ms / 1000 }')
    [ $ok = 1 ] || wall="over 240 s (stopped)"
    echo "| $label | $coll | $lost | $n of $((8 * ROUNDS)) | $wall |"
    if [ "$with" = 1 ]; then
        [ "$coll" = 0 ] || fail "$label: $coll double holders"
        # smbnetfs answers EIO for a while under load (its own SMB connection failing: the
        # increment script's own `cat` gets it too). A run that failed on such an I/O error of the
        # filesystem is reported, not failed; an update lost beyond the failed runs, or a run
        # failed for any other reason, fails the lane.
        local failed=0 other=0
        [ -f "$work/out/errors" ] && failed=$(wc -l <"$work/out/errors" | tr -d ' ')
        [ -f "$work/out/stderr" ] &&
            other=$(grep '^error:' "$work/out/stderr" | grep -cv 'Input/output error\|the workspace folder is gone\|cannot read the current directory')
        [ "$lost" -le "$failed" ] || fail "$label: $lost lost updates, $failed failed runs"
        [ "$other" = 0 ] || { fail "$label: coord run failed"; grep '^error:' "$work/out/stderr" | head -5 >&2; }
        [ "$failed" = 0 ] ||
            echo "note: $label: $failed runs failed on the filesystem's I/O errors ($(grep -c 'Input/output error' "$work/out/stderr" 2>/dev/null || echo 0) EIO); no update lost beyond them" >&2
        [ $ok = 1 ] || fail "$label: did not finish in 240 s"
        # Every backup that replaced a different COUNTER.txt.bak kept the one it replaced under
        # .coord/backups/ (no hard links here: an exclusive create, then a rename) and left no
        # temporary file behind (it used to leave one per race and keep none).
        local tmps gens
        tmps=$(find "$real/$ws" -name '.coord-*.tmp' 2>/dev/null | wc -l | tr -d ' ')
        gens=$(find "$real/$ws/.coord/backups" -type f -name '[0-9]*' 2>/dev/null | wc -l | tr -d ' ')
        echo "| $label: backups | $gens older generations kept | $tmps temporary files left | |"
        [ "$tmps" -le "$failed" ] || fail "$label: $tmps temporary files left behind"
        [ "$gens" -gt 0 ] || fail "$label: no older backup generation kept"
    fi
}

echo
echo "### Two $client mounts of one SMB share (4 + 4 agents x $ROUNDS \`coord run COUNTER.txt -- increment\`)"
echo
echo "| | double holders | lost | runs | wall |"
echo "|---|---|---|---|---|"
check_mounts
race "two $client mounts" "$s1" "$s2" 1
check_mounts
race "the same race without coord" "$s1" "$s2" 0
echo
echo "| wake-up after a release, across mounts | median | all |"
echo "|---|---|---|"
check_mounts
wake "mount 1 -> mount 2" "$s1" "$s2" 7
echo
echo "| takeover | time | |"
echo "|---|---|---|"
check_mounts
stale_takeover "$s1" "$s2"
check_mounts
stopped_holder "$s1" "$s2"
echo
if [ "$failures" -gt 0 ]; then
    echo "smb lane: $failures failure(s)" >&2
    exit 1
fi
echo "smb lane: exclusion held" >&2
