#!/usr/bin/env python3
"""A scripted stand-in for the OpenAI Chat Completions API, for end-to-end tests of coord's hooks
with the real GitHub Copilot CLI on 127.0.0.1 (`COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:PORT/v1`).

Usage: fake_openai_chat.py PORT_FILE LOG_FILE

It listens on a free port of 127.0.0.1 and writes the port to PORT_FILE. The script of a session
is in its prompt, one line:

    coord-e2e: {"calls": [[TOOL, ARGS], ...], "hold": FLAG}
    coord-e2e: {"calls": [[TOOL, ARGS], ...], "holds": [FLAG, ...]}

(TOOL `mcp:NAME` is the tool coord's MCP server offers as NAME, as the client prefixed it.)

ARGS is an object (a function tool: its JSON arguments) or a string (a freeform tool such as
Copilot's `apply_patch` for GPT-5-family models: the raw input). Every `POST .../chat/completions`
(streamed as server-sent events, or JSON) whose user text holds that line is answered by where the
conversation stands: with N `tool` messages so far, the answer is call N while N < len(calls);
after the last one, the text "done" — first waiting until the file FLAG exists when `hold` is given
(the session then stays inside its turn, holding its locks, for as long as the test wants). With
`holds`, the K-th "done" of the conversation (a turn a hook continued) waits for the K-th flag. Each
request is logged to LOG_FILE as one JSON line `{"method", "path", "body"}`; any other request (a
side request: titles, summaries) is answered with the text "ok". `GET .../models` lists the model
asked for, so a client that checks its catalogue finds it.
"""

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MARK = "coord-e2e:"
LOG = None
LOG_LOCK = threading.Lock()
COUNTER = [0]


def texts(message):
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    out = []
    for block in content or []:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            out.append(block["text"])
    return out


def find_script(messages):
    for message in messages:
        if message.get("role") != "user":
            continue
        for text in texts(message):
            for line in text.splitlines():
                at = line.find(MARK)
                if at >= 0:
                    try:
                        return json.loads(line[at + len(MARK):].strip())
                    except ValueError:
                        continue
    return None


def tool_kind(tools, name):
    """`function` or `custom` (a freeform tool), as the request declared `name`."""
    for tool in tools or []:
        if not isinstance(tool, dict):
            continue
        kind = tool.get("type", "function")
        spec = tool.get(kind) or {}
        if spec.get("name") == name:
            return kind
    return None


def resolve(name, names):
    """The tool `name` names: itself, or for `mcp:NAME` the tool coord's MCP server offers as
    NAME, however the client prefixes it (`mcp_coord_lock`, `coord-lock`)."""
    if not name.startswith("mcp:"):
        return name
    suffix = name[4:]
    for candidate in names:
        if "coord" in candidate and candidate.endswith(suffix) \
                and candidate[-len(suffix) - 1:-len(suffix)] in ("_", "-", ".", "/"):
            return candidate
    return name


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def log_request_body(self, method, body):
        with LOG_LOCK, open(LOG, "a") as log:
            log.write(json.dumps({"method": method, "path": self.path, "body": body}) + "\n")

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self.log_request_body("GET", None)
        if self.path.rstrip("/").endswith("/models"):
            model = os.environ.get("FAKE_MODEL", "gpt-4.1")
            self.reply_json({"object": "list", "data": [{"id": model, "object": "model", "owned_by": "coord"}]})
            return
        self.reply_json({})

    def reply_json(self, obj):
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            req = json.loads(raw or b"{}")
        except ValueError:
            req = {}
        self.log_request_body("POST", req)
        messages = req.get("messages") or []
        script = find_script(messages)
        tools = req.get("tools") or []
        if script is None or not tools:
            self.answer(req, text="ok")
            return
        calls = script.get("calls") or []
        n = sum(1 for m in messages if m.get("role") == "tool")
        if n < len(calls):
            name, args = calls[n]
            names = [(t.get(t.get("type", "function")) or {}).get("name") or "" for t in tools if isinstance(t, dict)]
            name = resolve(name, names)
            self.answer(req, call=(name, args, tool_kind(tools, name) or "function"))
            return
        holds = script.get("holds") or ([script["hold"]] if script.get("hold") else [])
        k = sum(1 for m in messages if m.get("role") == "assistant" and m.get("content") == "done")
        flag = holds[k] if k < len(holds) else None
        deadline = time.time() + 150
        while flag and not os.path.exists(flag) and time.time() < deadline:
            time.sleep(0.05)
        self.answer(req, text="done")

    def answer(self, req, text=None, call=None):
        COUNTER[0] += 1
        ident = "chatcmpl-%d" % COUNTER[0]
        model = req.get("model") or "gpt-4.1"
        created = int(time.time())
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        message = {"role": "assistant", "content": text}
        finish = "stop"
        if call is not None:
            name, args, kind = call
            call_id = "call_%d" % COUNTER[0]
            if kind == "custom":
                entry = {"id": call_id, "type": "custom",
                         "custom": {"name": name, "input": args if isinstance(args, str) else json.dumps(args)}}
            else:
                entry = {"id": call_id, "type": "function",
                         "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
            message = {"role": "assistant", "content": None, "tool_calls": [entry]}
            finish = "tool_calls"
        if not req.get("stream"):
            self.reply_json({"id": ident, "object": "chat.completion", "created": created, "model": model,
                             "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                             "usage": usage})
            return
        delta = {"role": "assistant", "content": text}
        if call is not None:
            entry = dict(message["tool_calls"][0])
            entry["index"] = 0
            delta = {"role": "assistant", "content": None, "tool_calls": [entry]}
        chunks = [
            {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model,
             "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model,
             "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model,
             "choices": [], "usage": usage},
        ]
        body = "".join("data: %s\n\n" % json.dumps(c) for c in chunks) + "data: [DONE]\n\n"
        body = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main():
    global LOG
    port_file, LOG = sys.argv[1], sys.argv[2]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
