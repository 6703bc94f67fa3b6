#!/usr/bin/env python3
"""Remote claims: claim + release through the remote vs bare git, on loopback and through a
proxy that adds 150-300 ms to every round trip.

A bare repository served by `git daemon` on 127.0.0.1; one clone enabled with
`coord remote enable`, claiming and releasing `bench/` (the hidden `coord remote claim` and
`coord remote release` over the library's remote API), then `coord lock bench/` and
`coord unlock bench/` (what a user runs: the claim taken here, published, marked, the renewer
started; released here and there), and a plain clone doing what git alone needs for the same
number of ref updates: one `git push` of a new commit to one ref and one `git ls-remote`, twice
(a claim and a release are two updates). `coord remote sync` (one fetch) is measured against
`git ls-remote`.

The proxy is a TCP relay on 127.0.0.1 that holds every chunk it forwards for 75 ms, then for a
random 75-150 ms, in each direction (order kept), so each round trip costs 150 ms, then 150-300
ms more, as on a link to a hosted remote.

  bench/remote.py [COORD] [PAIRS] [PAIRS_THROUGH_PROXY]   # COORD defaults to the release build

Prints a markdown table: the median wall time of each, and the ratio of coord to git.
"""
import asyncio
import json
import os
import resource
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

coord = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/coord")
pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 30
proxy_pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 8


def env(agent="bench"):
    e = {k: v for k, v in os.environ.items() if not k.startswith("COORD_")}
    e["COORD_AGENT"] = agent
    e["GIT_CONFIG_GLOBAL"] = "/dev/null"
    e["GIT_CONFIG_NOSYSTEM"] = "1"
    e["GIT_AUTHOR_NAME"] = e["GIT_COMMITTER_NAME"] = "b"
    e["GIT_AUTHOR_EMAIL"] = e["GIT_COMMITTER_EMAIL"] = "b@b"
    return e


def run(d, *args, quiet=True):
    out = subprocess.run(list(args), cwd=d, env=env(), check=True, capture_output=True)
    return out.stdout.decode().strip()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_daemon(base):
    port = free_port()
    # A session of its own: `git daemon` runs `git-daemon` as a child, stopped with it (stop_daemon).
    p = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
         "--listen=127.0.0.1", f"--port={port}", f"--base-path={base}"],
        env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    for _ in range(500):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return p, port
        except OSError:
            time.sleep(0.01)
    stop_daemon(p)
    sys.exit("git daemon did not start")


def stop_daemon(p):
    """Stop `git daemon` and its `git-daemon` child (killing `git` alone leaves it serving)."""
    try:
        os.killpg(p.pid, 9)
    except ProcessLookupError:
        pass
    p.wait()


def start_proxy(target_port, rng, lo, hi):
    """A relay on 127.0.0.1 delaying each chunk lo-hi seconds per direction; returns its port."""
    port = free_port()
    loop = asyncio.new_event_loop()

    async def pipe(reader, writer):
        queue = asyncio.Queue()
        last = [0.0]

        async def deliver():
            while True:
                due, data = await queue.get()
                delay = due - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                if data is None:
                    writer.close()
                    return
                writer.write(data)
                await writer.drain()

        task = asyncio.ensure_future(deliver())
        try:
            while True:
                data = await reader.read(65536)
                due = max(last[0], loop.time() + rng.uniform(lo, hi))
                last[0] = due
                queue.put_nowait((due, data or None))
                if not data:
                    break
        except (ConnectionError, OSError):
            queue.put_nowait((loop.time(), None))
        await task

    async def handle(cr, cw):
        try:
            sr, sw = await asyncio.open_connection("127.0.0.1", target_port)
        except OSError:
            cw.close()
            return
        await asyncio.gather(pipe(cr, sw), pipe(sr, cw), return_exceptions=True)

    async def main():
        server = await asyncio.start_server(handle, "127.0.0.1", port)
        async with server:
            await server.serve_forever()

    threading.Thread(target=lambda: loop.run_until_complete(main()), daemon=True).start()
    for _ in range(500):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return port
        except OSError:
            time.sleep(0.01)
    sys.exit("the proxy did not start")


def timed(d, *args):
    t = time.perf_counter()
    subprocess.run(list(args), cwd=d, env=env(), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def measure(work, url, n):
    """n rounds of each, alternating: coord claim + release; 2 x (git push + ls-remote);
    coord remote sync; git ls-remote."""
    a = os.path.join(work, "coord-clone")
    g = os.path.join(work, "git-clone")
    for d in (a, g):
        if os.path.exists(d):
            subprocess.run(["rm", "-rf", d], check=True)
        os.makedirs(d)
        run(d, "git", "init", "-q")
        run(d, "git", "remote", "add", "origin", url)
    run(a, coord, "remote", "enable")
    tree = run(g, "git", "hash-object", "-t", "tree", "-w", "/dev/null")
    commits = [run(g, "git", "commit-tree", "-m", f"c{i}", tree) for i in range(4 * n + 4)]
    rows = {"claim": [], "release": [], "pair": [], "lock": [], "unlock": [], "lock_pair": [],
            "git_pair": [], "sync": [], "ls": []}
    for i in range(n):
        c = timed(a, coord, "-q", "remote", "claim", "bench/")
        r = timed(a, coord, "-q", "remote", "release", "bench/")
        rows["claim"].append(c)
        rows["release"].append(r)
        rows["pair"].append(c + r)
        c = timed(a, coord, "-q", "lock", "bench/")
        r = timed(a, coord, "-q", "unlock", "bench/")
        rows["lock"].append(c)
        rows["unlock"].append(r)
        rows["lock_pair"].append(c + r)
        total = 0.0
        for k in range(2):
            total += timed(g, "git", "push", "-q", "--force", "origin",
                           f"{commits[2 * i + k]}:refs/bench/x")
            total += timed(g, "git", "ls-remote", "origin")
        rows["git_pair"].append(total)
        rows["sync"].append(timed(a, coord, "-q", "remote", "sync"))
        rows["ls"].append(timed(g, "git", "ls-remote", "origin"))
    return {k: statistics.median(v) * 1000 for k, v in rows.items()}


def offline_view(work, url, n):
    """A hook's edit check in an enabled clone whose synced state is fresh (no network, no
    git): Claude Code's PreToolUse of a Write of `src/x.rs` through `coord hook claude`, with no
    claim in the state, then with 100 claims of another clone (none of them on `src/`)."""
    a = os.path.join(work, "view-a")
    b = os.path.join(work, "view-b")
    for d in (a, b):
        os.makedirs(d)
        run(d, "git", "init", "-q")
        run(d, "git", "remote", "add", "origin", url)
        run(d, coord, "remote", "enable")
    e = env()
    e["COORD_REMOTE_MAX_AGE"] = "1h"

    os.makedirs(os.path.join(b, "src"))
    payload = json.dumps({
        "session_id": "b3c4d5e6-0000-4000-8000-000000000047", "cwd": b,
        "hook_event_name": "PreToolUse", "tool_name": "Write",
        "tool_input": {"file_path": os.path.join(b, "src", "x.rs"), "content": "x"},
    }).encode()

    def view():
        """CPU time (user + system) per call: steadier than wall time on a busy machine."""
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        for _ in range(n):
            subprocess.run([coord, "hook", "claude"], cwd=b, env=e, check=True, input=payload,
                           stdout=subprocess.DEVNULL)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) / n * 1000

    run(b, coord, "remote", "sync")
    none = view()
    run(a, coord, "remote", "claim", *[f"area{i}/" for i in range(100)])
    run(b, coord, "remote", "sync")
    hundred = view()
    return none, hundred


def main():
    rng = random.Random(47)
    with tempfile.TemporaryDirectory(prefix="coord-bench-remote-") as work:
        base = os.path.join(work, "srv")
        os.makedirs(base)
        run(base, "git", "init", "-q", "--bare", "r.git")
        daemon, port = start_daemon(base)
        try:
            loop = measure(work, f"git://127.0.0.1:{port}/r.git", pairs)
            proxy = start_proxy(port, rng, 0.075, 0.075)
            fixed = measure(work, f"git://127.0.0.1:{proxy}/r.git", proxy_pairs)
            proxy = start_proxy(port, rng, 0.075, 0.150)
            slow = measure(work, f"git://127.0.0.1:{proxy}/r.git", proxy_pairs)
            run(base, "git", "init", "-q", "--bare", "v.git")
            none, hundred = offline_view(work, f"git://127.0.0.1:{port}/v.git", 10 * pairs)
        finally:
            stop_daemon(daemon)
    print(f"coord: {coord}; {pairs} rounds on loopback, {proxy_pairs} through the proxy; medians, ms\n")
    print("| link | claim | release | claim + release | 2 x (git push + git ls-remote) | ratio | coord remote sync | git ls-remote | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, m in (("loopback", loop), ("+150 ms a round trip", fixed),
                    ("+150-300 ms a round trip", slow)):
        print(f"| {name} | {m['claim']:.0f} | {m['release']:.0f} | {m['pair']:.0f} | {m['git_pair']:.0f} "
              f"| {m['pair'] / m['git_pair']:.2f}x | {m['sync']:.0f} | {m['ls']:.0f} | {m['sync'] / m['ls']:.2f}x |")
    print("\n| link | coord lock | coord unlock | lock + unlock | 2 x (git push + git ls-remote) | ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, m in (("loopback", loop), ("+150 ms a round trip", fixed),
                    ("+150-300 ms a round trip", slow)):
        print(f"| {name} | {m['lock']:.0f} | {m['unlock']:.0f} | {m['lock_pair']:.0f} | {m['git_pair']:.0f} "
              f"| {m['lock_pair'] / m['git_pair']:.2f}x |")
    print(f"\nA hook's edit check (`coord hook claude`, PreToolUse Write of src/x.rs) in a clone whose synced state is fresh (no network, no git), CPU per call over {10 * pairs}: "
          f"no claims {none:.1f} ms, 100 claims {hundred:.1f} ms ({hundred / none:.2f}x)")


if __name__ == "__main__":
    main()
