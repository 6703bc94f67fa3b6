#!/usr/bin/env python3
"""What the file operations coord builds on cost on one filesystem: making a file (and removing
it), naming a file twice (a hard link), replacing a file by a rename over it and by an exchange
of two names, and emptying a file against cutting it short after rewriting it.

coord publishes every record through a temporary file; on ext4 without a journal (the disk of
many virtual machines) each file made costs more the more files were removed in the last half
minute, which is why coord reuses files (`.coord/recycled/`, see docs/performance.md).

Usage: bench/fs_ops.py [DIR] [N]   (default: a new folder under the system's temporary folder;
N = 1000 rounds). Prints microseconds per operation (Python's own cost included: about 1 µs).
"""

import ctypes
import os
import sys
import tempfile
import time

RENAME_EXCHANGE = 2
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100


def exchange(a, b):
    if libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")


def per_op(n, f):
    t = time.perf_counter()
    for i in range(n):
        f(i)
    return (time.perf_counter() - t) / n * 1e6


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else None
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    d = tempfile.mkdtemp(prefix="coord-fs-ops-", dir=base)
    tmp, dst = os.path.join(d, "tmp"), os.path.join(d, "dst")
    body = b"a" * 150
    with open(dst, "wb") as f:
        f.write(body)

    def make_remove(_):
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, body)
        os.close(fd)
        os.unlink(tmp)

    def link_remove(_):
        os.link(dst, tmp)
        os.unlink(tmp)

    def made_renamed_over(_):
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, body)
        os.close(fd)
        os.rename(tmp, dst)

    def made_exchanged(_):
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, body)
        os.close(fd)
        exchange(tmp, dst)
        os.unlink(tmp)

    def emptied(_):
        fd = os.open(dst, os.O_RDWR)
        os.ftruncate(fd, 0)
        os.write(fd, body)
        os.close(fd)

    def cut_short(i):
        fd = os.open(dst, os.O_RDWR)
        size = 140 + (i % 2) * 10
        os.pwrite(fd, body[:size], 0)
        os.ftruncate(fd, size)
        os.close(fd)

    def renamed_twice(_):
        os.rename(dst, tmp)
        os.rename(tmp, dst)

    rows = [
        ("make a file (150 bytes), remove it", make_remove),
        ("a hard link, removed", link_remove),
        ("a rename of a file and back", renamed_twice),
        ("make a file, rename it over another", made_renamed_over),
        ("make a file, exchange it with another, remove the old", made_exchanged),
        ("empty a file, write 150 bytes", emptied),
        ("rewrite 140-150 bytes, cut after them", cut_short),
    ]
    st = os.statvfs(d)
    print(f"folder {d} ({st.f_bsize}-byte blocks), {n} rounds each")
    print("| operation | µs |\n|---|---|")
    for name, f in rows:
        print(f"| {name} | {per_op(n, f):.1f} |")
    # Where the filesystem remembers files removed lately (ext4 without a journal skips each
    # inode freed in the last minutes when it hands one out), making files costs more the more
    # were made and removed before: the same operation after 20 times as many.
    per_op(19 * n, make_remove)
    print(f"| make a file, remove it, after {19 * n} such | {per_op(n, make_remove):.1f} |")
    for p in (tmp, dst):
        if os.path.exists(p):
            os.unlink(p)
    os.rmdir(d)


if __name__ == "__main__":
    main()
