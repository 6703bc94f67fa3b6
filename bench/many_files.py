#!/usr/bin/env python3
"""One `coord lock` and one `coord unlock` of N files of one folder (a patch touching many files),
for several N: the cost per file should not grow with N.

    bench/many_files.py                       # 500, 2,000, 4,000, 10,000 files
    bench/many_files.py --sizes 1000,20000
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time


def coord_bin():
    here = os.path.dirname(os.path.abspath(__file__))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(here, "..", "target"))
    found = subprocess.run(["rustc", "-vV"], capture_output=True, text=True).stdout
    host = next(l.split()[1] for l in found.splitlines() if l.startswith("host:"))
    path = os.path.join(target, host, "release", "coord")
    if not os.path.exists(path):
        sys.exit("many-files: build coord first: cargo build --release")
    return os.path.abspath(path)


def timed(argv, cwd, env):
    t = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="500,2000,4000,10000")
    a = ap.parse_args()
    coord = coord_bin()
    print("| files in one folder | `coord lock --no-backup` | `coord unlock` | per file (lock + unlock) |")
    print("|---|---|---|---|")
    for n in (int(s) for s in a.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="coord-many-files-") as d:
            names = [f"big/f{i:05}.txt" for i in range(n)]
            os.makedirs(os.path.join(d, "big"))
            for name in names:
                with open(os.path.join(d, name), "w") as fh:
                    fh.write("x\n")
            env = dict(os.environ, COORD_DIR=d, COORD_AGENT="alice")
            lock = timed([coord, "lock", "--no-backup", "-q", *names], d, env)
            unlock = timed([coord, "unlock", "-q", *names], d, env)
            print(f"| {n:,} | {lock * 1000:.0f} ms | {unlock * 1000:.0f} ms | "
                  f"{(lock + unlock) / n * 1e6:.0f} µs |")


if __name__ == "__main__":
    main()
