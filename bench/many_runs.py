#!/usr/bin/env python3
"""Many agents on one file: AGENTS processes, each running EACH increments of one counter through
`coord run counter.txt -- sh -c ...` (one agent per process), against `flock counter.txt sh -c ...`
doing the same; alternated rounds, wall clock, and a check that no increment was lost.

    bench/many_runs.py                 # 64 agents x 50 runs, 3 rounds each
    bench/many_runs.py 16 25 --rounds 1
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

SCRIPT = "n=$(cat counter.txt); echo $((n + 1)) > counter.txt"


def coord_bin():
    here = os.path.dirname(os.path.abspath(__file__))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(here, "..", "target"))
    found = subprocess.run(["rustc", "-vV"], capture_output=True, text=True).stdout
    host = next(l.split()[1] for l in found.splitlines() if l.startswith("host:"))
    path = os.path.join(target, host, "release", "coord")
    if not os.path.exists(path):
        sys.exit("many-runs: build coord first: cargo build --release")
    return os.path.abspath(path)


def race(d, agents, each, argv_of):
    with open(os.path.join(d, "counter.txt"), "w") as fh:
        fh.write("0\n")
    failed = []

    def worker(w):
        env = dict(os.environ, COORD_AGENT=f"agent{w:02}", COORD_DIR=d)
        for _ in range(each):
            r = subprocess.run(argv_of(w), cwd=d, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            if r.returncode != 0:
                failed.append(r.returncode)

    t = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(w,)) for w in range(agents)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    took = time.perf_counter() - t
    n = int(open(os.path.join(d, "counter.txt")).read().strip())
    assert not failed, f"{len(failed)} runs failed: {failed[:5]}"
    assert n == agents * each, f"lost updates: {n} of {agents * each}"
    return took


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("agents", nargs="?", type=int, default=64)
    ap.add_argument("each", nargs="?", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    coord = coord_bin()
    with tempfile.TemporaryDirectory(prefix="coord-many-") as d:
        cs, fs = [], []
        for _ in range(a.rounds):
            cs.append(race(d, a.agents, a.each,
                           lambda w: [coord, "run", "counter.txt", "--wait", "10m", "--", "sh", "-c", SCRIPT]))
            fs.append(race(d, a.agents, a.each, lambda w: ["flock", "counter.txt", "sh", "-c", SCRIPT]))
    c, f = statistics.median(cs), statistics.median(fs)
    print(f"| {a.agents} agents × {a.each} increments of one file, median of {a.rounds} alternated rounds | wall clock | rounds |")
    print("|---|---|---|")
    print(f"| `coord run counter.txt -- sh -c …` | {c:.2f} s | {', '.join(f'{x:.2f} s' for x in cs)} |")
    print(f"| `flock counter.txt sh -c …` | {f:.2f} s | {', '.join(f'{x:.2f} s' for x in fs)} |")
    print()
    print(f"Ratio coord / flock (medians): {c / f:.2f}× ({a.agents * a.each} increments each, none lost).")


if __name__ == "__main__":
    main()
