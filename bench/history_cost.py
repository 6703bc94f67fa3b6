#!/usr/bin/env python3
"""What recording the history costs a lock + unlock, measured in CPU time (user + system).

CPU time, not wall-clock time: on a shared, loaded machine the wall clock mostly measures the
other processes, while the CPU a process uses is its own. History on and off are measured in
alternating blocks in the same folder, so drift (page cache, load) falls on both alike.

  bench/history_cost.py [COORD] [PAIRS]     # COORD defaults to the release build

Prints a markdown table: CLI lock + unlock (two processes), and lock + unlock as two
`tools/call` to one running `coord mcp`.
"""
import json
import os
import resource
import subprocess
import sys
import tempfile

coord = sys.argv[1] if len(sys.argv) > 1 else "target/release/coord"
pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 600


def env(history):
    e = {k: v for k, v in os.environ.items() if not k.startswith("COORD_")}
    e["COORD_AGENT"] = "bench"
    if not history:
        e["COORD_HISTORY"] = "off"
    return e


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cli(d, history, n):
    e = env(history)
    e["COORD_DIR"] = d
    before = children_cpu()
    for _ in range(n):
        subprocess.run([coord, "lock", "SHARED.txt", "-q", "--no-backup"], env=e, cwd=d, check=True)
        subprocess.run([coord, "unlock", "SHARED.txt", "-q"], env=e, cwd=d, check=True)
    return children_cpu() - before


def proc_cpu(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def mcp(d, history, n):
    e = env(history)
    e["COORD_DIR"] = d
    p = subprocess.Popen([coord, "mcp"], env=e, cwd=d, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def call(i, method, params):
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
        p.stdin.flush()
        return json.loads(p.stdout.readline())

    call(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}})
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    for i in range(20):
        call(1, "tools/call", {"name": "lock", "arguments": {"files": ["SHARED.txt"]}})
        call(2, "tools/call", {"name": "unlock", "arguments": {"files": ["SHARED.txt"]}})
    start = proc_cpu(p.pid)
    for i in range(n):
        r = call(3 + 2 * i, "tools/call", {"name": "lock", "arguments": {"files": ["SHARED.txt"]}})
        assert not r["result"].get("isError"), r
        call(4 + 2 * i, "tools/call", {"name": "unlock", "arguments": {"files": ["SHARED.txt"]}})
    used = proc_cpu(p.pid) - start
    p.stdin.close()
    p.wait()
    return used


def measure(fn, n, block):
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, "SHARED.txt"), "w").write("shared\n")
        fn(d, True, 20)
        fn(d, False, 20)
        on = off = 0.0
        for _ in range(n // block):
            off += fn(d, False, block)
            on += fn(d, True, block)
        return off / n * 1000, on / n * 1000


rows = []
off, on = measure(cli, pairs, 50)
rows.append(("`coord lock --no-backup` + `coord unlock` (CPU of both processes)", off, on, pairs))
# The server's CPU time is read from /proc in clock ticks (10 ms): long blocks.
off, on = measure(mcp, pairs * 8, 1000)
rows.append(("two `tools/call` to one `coord mcp` (CPU of the server)", off, on, pairs * 8))
print("| lock + unlock | history off | history on | cost | pairs |")
print("|---|---|---|---|---|")
for name, off, on, n in rows:
    print(f"| {name} | {off:.3f} ms | {on:.3f} ms | {100 * (on - off) / off:+.1f}% | {n} |")
