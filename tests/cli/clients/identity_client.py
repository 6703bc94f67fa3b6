"""A stand-in for an agent client (Claude Code, Codex, ...): a long-lived process that runs
coord's hooks (through `sh -c`, as the clients do), its shell tool's commands (`sh -c`, in a
new session) and a `coord mcp` server, all as its children.

Usage: client.py CLIENT SESSION_ID. Reads one JSON step per line on stdin and answers each
with one JSON line on stdout:
  {"hook": EVENT, "payload": {...}}   the hook, with session id, cwd and event filled in
  {"sh": CMD}                          a shell-tool command
  {"mcp": "start"} / {"mcp": "call", "tool": T, "args": {...}} / {"mcp": "stop"}
  {"pid": true}                        this process's pid
"""
import json
import os
import subprocess
import sys

COORD = os.environ["COORD_BIN"]
CLIENT, SESSION = sys.argv[1], sys.argv[2]
mcp = None
next_id = 0


def rpc(method, params):
    global next_id
    next_id += 1
    mcp.stdin.write((json.dumps({"jsonrpc": "2.0", "id": next_id, "method": method,
                                 "params": params}) + "\n").encode())
    mcp.stdin.flush()
    return json.loads(mcp.stdout.readline())


def answer(step):
    global mcp
    if "hook" in step:
        payload = {"session_id": SESSION, "cwd": os.getcwd(), "hook_event_name": step["hook"]}
        payload.update(step.get("payload", {}))
        # "wrap": a command the hook runs under, as a user may wire it (`timeout 30 coord hook ...`).
        wrap = " ".join(step.get("wrap", []))
        r = subprocess.run(["sh", "-c", wrap + ' "$COORD_BIN" hook ' + CLIENT],
                           input=json.dumps(payload).encode(), capture_output=True)
        return {"code": r.returncode, "stdout": r.stdout.decode(), "stderr": r.stderr.decode()}
    if "sh" in step:
        r = subprocess.run(["sh", "-c", step["sh"]], capture_output=True, start_new_session=True)
        return {"code": r.returncode, "stdout": r.stdout.decode(), "stderr": r.stderr.decode()}
    if step.get("mcp") == "start":
        mcp = subprocess.Popen([COORD, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        init = rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "stand-in", "version": "1"}})
        return {"instructions": init["result"]["instructions"]}
    if step.get("mcp") == "call":
        return rpc("tools/call", {"name": step["tool"], "arguments": step.get("args", {})})
    if step.get("mcp") == "list":
        return rpc("tools/list", {})
    if step.get("mcp") == "stop":
        mcp.stdin.close()
        code = mcp.wait()
        err = mcp.stderr.read().decode()
        mcp = None
        return {"code": code, "stderr": err}
    if "pid" in step:
        return {"pid": os.getpid()}
    return {"error": "unknown step"}


for line in sys.stdin:
    sys.stdout.write(json.dumps(answer(json.loads(line))) + "\n")
    sys.stdout.flush()
