#!/usr/bin/env python3
"""Measure how fast `coord msg wait` wakes up after `coord msg send`.

Each round starts `coord msg wait` for agent `reader` in a fresh workspace, gives it time to
subscribe, then runs `coord msg send reader ...` and records how long after the send finished
(the message file is published when `send` exits) the waiter exits. Prints median and p95.

    cargo build --release
    bench/msg_wait.py [--rounds 50] [--bin target/release/coord]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time


def built_coord():
    """`cargo build --release`'s coord."""
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(os.path.dirname(__file__), "..", "target"))
    return os.path.join(target, "release", "coord")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--bin", default=None)
    args = ap.parse_args()
    coord = os.path.abspath(args.bin or built_coord())
    after_send, from_start = [], []
    for _ in range(args.rounds):
        root = tempfile.mkdtemp(prefix="coord-bench-")
        env = dict(os.environ, COORD_DIR=root)
        try:
            subprocess.run([coord, "-a", "reader", "presence", root, "bench"], env=env, check=True,
                           stdout=subprocess.DEVNULL)
            waiter = subprocess.Popen(
                [coord, "-a", "reader", "msg", "wait", "--timeout", "30s"],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            )
            time.sleep(0.3)  # let it subscribe and find the inbox empty
            t0 = time.perf_counter()
            subprocess.run([coord, "-a", "writer", "msg", "send", "reader", "ping"],
                           env=env, check=True, stdout=subprocess.DEVNULL)
            t1 = time.perf_counter()
            rc = waiter.wait(timeout=30)
            t2 = time.perf_counter()
            if rc != 0:
                raise SystemExit(f"msg wait exited {rc}: {waiter.stderr.read().decode()}")
            after_send.append((t2 - t1) * 1000)
            from_start.append((t2 - t0) * 1000)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def p95(xs):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]

    print(f"rounds: {args.rounds}")
    print(f"send finished -> wait returned: median {statistics.median(after_send):.1f} ms, p95 {p95(after_send):.1f} ms, max {max(after_send):.1f} ms")
    print(f"send started  -> wait returned: median {statistics.median(from_start):.1f} ms, p95 {p95(from_start):.1f} ms")


if __name__ == "__main__":
    main()
