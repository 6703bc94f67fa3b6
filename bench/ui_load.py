#!/usr/bin/env python3
"""`coord ui` under load: AGENTS agents lock and release for SECONDS while PAGES pages are open.

Each agent is a loop of `coord lock FILE` + `coord unlock FILE` on a file of its own (they never
wait for each other: the figure is coord's own cost). A page here does over HTTP what the page's
script does: one `/api/events?since=15m` stream, and a `GET /api/status` after each event (one at
a time: the events that arrive meanwhile are answered by one more, 100 ms later) and every 3 s.
The browser itself is left out: its drawing competes for the same CPU as the agents, and would
measure the browser, not coord.

Runs, alternating so that drift falls on both: no page (and no server), PAGES pages, no page,
PAGES pages. Prints a markdown table: lock + unlock per cycle (mean and median wall time, and
the CPU the agents' processes used per cycle), the ratio to the runs with no page; the server's
resident memory (VmRSS) 5 s in, at the end and at most, and its CPU; and whether every page got
every event written, once and in order (its ids against `coord log --json`).

  bench/ui_load.py [COORD] [SECONDS] [AGENTS] [PAGES]     # COORD: target/release/coord
"""
import http.client
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

coord = sys.argv[1] if len(sys.argv) > 1 else "target/release/coord"
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 60
agents = int(sys.argv[3]) if len(sys.argv) > 3 else 20
pages = int(sys.argv[4]) if len(sys.argv) > 4 else 5


def env_for(d, agent=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("COORD_")}
    e["COORD_DIR"] = d
    # No rotation during a run: every event stays in the log, to check the pages against.
    e["COORD_HISTORY_MAX_SIZE"] = "512M"
    if agent:
        e["COORD_AGENT"] = agent
    return e


def agent_loop(d, name, stop, times):
    e = env_for(d, name)
    f = f"{name}.txt"
    while not stop.is_set():
        t0 = time.perf_counter()
        subprocess.run([coord, "lock", f, "-q", "--no-backup"], env=e, cwd=d, check=True)
        subprocess.run([coord, "unlock", f, "-q"], env=e, cwd=d, check=True)
        times.append(time.perf_counter() - t0)


class Page:
    """One open page: its event stream, and its status fetches."""

    def __init__(self, port, token):
        self.port, self.token = port, token
        self.ids = []
        self.fetches = 0
        self.dirty = threading.Event()
        self.done = threading.Event()
        self.sock = socket.create_connection(("127.0.0.1", port))
        head = f"GET /api/events?since=15m&token={token} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
        self.sock.sendall(head.encode())
        self.threads = [threading.Thread(target=f, daemon=True) for f in (self.stream, self.status)]
        for t in self.threads:
            t.start()

    def stream(self):
        f = self.sock.makefile("rb")
        try:
            for line in f:
                if line.startswith(b"id: "):
                    self.ids.append(line[4:].strip().decode())
                    self.dirty.set()
        except OSError:
            pass

    def status(self):
        while not self.done.is_set():
            self.dirty.wait(3)
            self.dirty.clear()
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            try:
                c.request("GET", f"/api/status?token={self.token}")
                body = c.getresponse().read()
            except (OSError, http.client.HTTPException):
                if self.done.is_set():
                    return
                raise
            assert body.startswith(b"{"), body[:200]
            self.fetches += 1
            c.close()
            if self.dirty.is_set():
                time.sleep(0.1)

    def close(self):
        self.done.set()
        self.dirty.set()
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_s(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(with_pages):
    d = tempfile.mkdtemp(prefix="coord-ui-load-")
    server, opened, memory = None, [], []
    if with_pages:
        server = subprocess.Popen([coord, "ui", "-q"], env=env_for(d), cwd=d, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        url = server.stdout.readline().strip()
        port = int(url.split(":")[2].split("/")[0])
        token = url.split("token=")[1]
        opened = [Page(port, token) for _ in range(pages)]
        time.sleep(0.5)
    stop = threading.Event()
    times = [[] for _ in range(agents)]
    cpu0 = children_cpu()
    loops = [threading.Thread(target=agent_loop, args=(d, f"agent{i}", stop, times[i])) for i in range(agents)]
    start = time.monotonic()
    for t in loops:
        t.start()
    while time.monotonic() - start < seconds:
        time.sleep(1)
        if server:
            memory.append(rss_kib(server.pid))
    stop.set()
    for t in loops:
        t.join()
    cycles = [x for per in times for x in per]
    result = {
        "cycles": len(cycles),
        "mean_ms": statistics.mean(cycles) * 1000,
        "median_ms": statistics.median(cycles) * 1000,
        "cpu_ms": (children_cpu() - cpu0) * 1000 / len(cycles),
    }
    if server:
        # Every event written reaches every page, once, in order.
        out = subprocess.run([coord, "log", "--json"], env=env_for(d), cwd=d, capture_output=True, text=True, check=True)
        written = len(out.stdout.splitlines())
        deadline = time.monotonic() + 60
        while any(len(p.ids) < written for p in opened) and time.monotonic() < deadline:
            time.sleep(0.2)
        got = [p.ids for p in opened]
        result["events"] = written
        result["all_pages_all_events"] = all(len(ids) == written and len(set(ids)) == written for ids in got) and all(ids == got[0] for ids in got)
        result["fetches"] = sum(p.fetches for p in opened)
        result["rss_kib"] = (memory[4] if len(memory) > 4 else memory[0], memory[-1], max(memory))
        result["server_cpu_s"] = cpu_s(server.pid)
        for p in opened:
            p.close()
        server.terminate()
        assert server.wait(10) == 0
    subprocess.run(["rm", "-rf", d])
    return result


def main():
    results = {False: [], True: []}
    for with_pages in (False, True, False, True):
        r = run(with_pages)
        results[with_pages].append(r)
        print(f"  {'pages' if with_pages else 'none '}: {r}", file=sys.stderr)
    base = statistics.mean(r["mean_ms"] for r in results[False])
    base_cpu = statistics.mean(r["cpu_ms"] for r in results[False])
    print(f"{agents} agents locking and releasing for {seconds:.0f} s; {pages} pages (event stream + status fetches) or none\n")
    print("| run | pages | cycles | lock + unlock mean | median | agents' CPU per cycle | ratio (mean) | events | every page got every event | status fetches | server RSS 5 s / end / max | server CPU |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for i, with_pages in enumerate((False, True, False, True)):
        r = results[with_pages][i // 2]
        row = [str(i + 1), str(pages if with_pages else 0), str(r["cycles"]), f"{r['mean_ms']:.1f} ms", f"{r['median_ms']:.1f} ms", f"{r['cpu_ms']:.1f} ms", f"{r['mean_ms'] / base:.3f}"]
        if with_pages:
            a, b, c = r["rss_kib"]
            row += [str(r["events"]), "yes" if r["all_pages_all_events"] else "NO", str(r["fetches"]), f"{a / 1024:.1f} / {b / 1024:.1f} / {c / 1024:.1f} MiB", f"{r['server_cpu_s']:.1f} s"]
        else:
            row += ["", "", "", "", ""]
        print("| " + " | ".join(row) + " |")
    pages_mean = statistics.mean(r["mean_ms"] for r in results[True])
    pages_cpu = statistics.mean(r["cpu_ms"] for r in results[True])
    print(f"\nlock + unlock with pages / without: {pages_mean / base:.3f} (wall), {pages_cpu / base_cpu:.3f} (agents' CPU)")


main()
