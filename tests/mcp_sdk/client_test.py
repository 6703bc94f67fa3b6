"""Drive `coord mcp` with the official MCP Python SDK (PyPI `mcp`): ClientSession over stdio_client.

Usage: client_test.py COORD_BIN WORKSPACE_DIR

Checks, against real `coord` CLI agents on the same folder: the tool list, a lock through MCP
that refuses a CLI agent, a held lock as an isError result naming the holder, messages between
two servers (one on the initialize handshake, one on server/discover when the SDK has it), locks
released when the client disconnects, and locks STALE at once when the server is killed.
Exits 0 when every check passed; prints what failed otherwise.
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

COORD, ROOT = sys.argv[1], sys.argv[2]

TOOLS = [
    "status", "check", "presence", "lock", "unlock", "write", "note",
    "msg_send", "msg_list", "msg_read", "dialogue_turn", "dialogue_say", "review_next",
]


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print(f"ok: {what}", flush=True)


def cli(agent, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("COORD_")}
    return subprocess.run(
        [COORD, "-C", ROOT, "-a", agent, *args],
        capture_output=True, text=True, env=env, timeout=60, cwd=ROOT,
    )


def server(agent):
    env = {k: v for k, v in os.environ.items() if not k.startswith("COORD_")}
    env["COORD_AGENT"] = agent
    return StdioServerParameters(command=COORD, args=["-C", ROOT, "mcp"], env=env, cwd=ROOT)


def text_of(result):
    return "".join(getattr(c, "text", "") for c in result.content)


def structured(result):
    return getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)


def is_error(result):
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


def path(rel):
    return os.path.join(ROOT, rel)


async def connect_modern(session):
    """The stateless revision when this SDK speaks it, else the handshake."""
    if hasattr(session, "discover"):
        result = await session.discover()
        check("2026-07-28" in result.supported_versions, "server/discover lists 2026-07-28")
        return "discover"
    await session.initialize()
    return "initialize"


async def main():
    for name in ("a.md", "b.md", "c.md"):
        with open(path(name), "w") as f:
            f.write(name + "\n")

    async with stdio_client(server("alice")) as (read, write):
        async with ClientSession(read, write) as alice:
            init = await alice.initialize()
            check(init.protocol_version in ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"),
                  f"initialize agreed on {init.protocol_version}")
            check("`alice`" in (init.instructions or ""), "the instructions name the agent")

            listed = await alice.list_tools()
            names = [t.name for t in listed.tools]
            check(names == TOOLS, f"tools/list has the contract's tools: {names}")
            status_tool = next(t for t in listed.tools if t.name == "status")
            check(status_tool.annotations is not None and status_tool.annotations.read_only_hint is True,
                  "status is annotated read-only")
            lock_tool = next(t for t in listed.tools if t.name == "lock")
            check(lock_tool.input_schema["required"] == ["files"], "lock requires files")

            got = await alice.call_tool("lock", {"files": ["a.md"], "reason": "sdk test"})
            check(not is_error(got), f"alice locks a.md through MCP: {text_of(got)}")
            check(structured(got)["acquired"][0]["file"] == "a.md", "structuredContent is lock --json")

            refused = cli("gemini", "lock", "a.md", "--no-wait")
            check(refused.returncode == 3 and "held by alice" in refused.stderr,
                  f"a CLI agent is refused while alice holds it: {refused.stderr.strip()}")

            cli("gemini", "presence", "Task_7")
            took = cli("gemini", "lock", "b.md")
            check(took.returncode == 0, "gemini locks b.md from the CLI")
            held = await alice.call_tool("lock", {"files": ["b.md"]})
            check(is_error(held), "a held lock is an isError result")
            check(text_of(held).startswith("error: lock on `b.md` is held by gemini since"),
                  f"naming the holder: {text_of(held)}")
            check("(working on Task_7)" in text_of(held), "and what they work on")
            check(not os.path.exists(path("b.md.lock.alice")), "and nothing was locked")

            async with stdio_client(server("bob")) as (read2, write2):
                async with ClientSession(read2, write2) as bob:
                    how = await connect_modern(bob)
                    sent = await alice.call_tool("msg_send", {"to": "bob", "text": "a.md is yours after me"})
                    check(not is_error(sent), "alice sends bob a message")
                    msg_id = structured(sent)["id"]
                    inbox = await bob.call_tool("msg_list", {"unread_only": True})
                    msgs = structured(inbox)["messages"]
                    check(len(msgs) == 1 and msgs[0]["from"] == "alice" and msgs[0]["id"] == msg_id,
                          f"bob ({how}) lists it")
                    read_msg = await bob.call_tool("msg_read", {"id": msg_id})
                    check("a.md is yours after me" in text_of(read_msg), "bob reads it")
                    after = await bob.call_tool("msg_list", {"unread_only": True})
                    check(structured(after)["messages"] == [], "and it is read")
                    cli_inbox = json.loads(cli("bob", "msg", "list", "--json").stdout)
                    check(cli_inbox["messages"][0]["unread"] is False, "the CLI sees it read too")

    # alice's client disconnected: the server saw end of input and released its lock.
    deadline = time.time() + 10
    while os.path.exists(path("a.md.lock.alice")) and time.time() < deadline:
        time.sleep(0.05)
    check(not os.path.exists(path("a.md.lock.alice")), "alice's lock is released when her client disconnects")
    check(cli("gemini", "lock", "a.md", "--no-wait").returncode == 0, "and a CLI agent gets it at once")

    try:
        async with stdio_client(server("carol")) as (read, write):
            async with ClientSession(read, write) as carol:
                await carol.initialize()
                got = await carol.call_tool("lock", {"files": ["c.md"], "ttl_s": "1h"})
                check(not is_error(got), "carol locks c.md")
                with open(path("c.md.lock.carol")) as f:
                    pid = int(next(l for l in f if l.startswith("pid: ")).split()[1])
                os.kill(pid, signal.SIGKILL)
                time.sleep(0.3)
                st = json.loads(cli("dave", "status", "--json").stdout)
                lock = next(l for l in st["locks"] if l["file"] == "c.md")
                check(lock["state"] == "STALE", "the lock of a killed server is STALE at once")
                took = cli("dave", "lock", "c.md", "--no-wait")
                check(took.returncode == 0 and "took over the stale lock of carol" in took.stderr,
                      "and is taken over")
    except AssertionError:
        raise
    except BaseException as e:  # the transport may complain that its server died
        if not os.path.exists(path("c.md.lock.dave")):
            raise
        print(f"ok: (the SDK noticed the dead server: {type(e).__name__})")

    print("all checks passed")


asyncio.run(main())
