#!/usr/bin/env python3
"""A scripted stand-in for the Gemini API (v1beta), for end-to-end tests of coord's hooks with
the real Gemini CLI on 127.0.0.1 (`GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT`).

Usage: fake_gemini.py PORT_FILE LOG_FILE

It listens on a free port of 127.0.0.1 and writes the port to PORT_FILE. The script of a session
is in its prompt, one line:

    coord-e2e: {"calls": [[TOOL, ARGS], ...], "hold": FLAG}
    coord-e2e: {"calls": [[TOOL, ARGS], ...], "holds": [FLAG, ...]}

(TOOL `mcp:NAME` is the tool coord's MCP server offers as NAME, as the client prefixed it.)

Every `POST .../models/MODEL:streamGenerateContent` (server-sent events, `alt=sse`) or
`:generateContent` (JSON) whose user text holds that line is answered by where the conversation
stands: with N `functionResponse` parts so far, the answer is call N (a `functionCall` part) while
N < len(calls); after the last one, the text "done" — first waiting until the file FLAG exists when
`hold` is given (the session then stays inside its turn, holding its locks, for as long as the test
wants). With `holds`, the K-th "done" of the conversation (a turn a hook continued) waits for
the K-th flag. Each request is logged to LOG_FILE as one JSON line `{"path", "body"}` (its
`functionResponse` parts are what coord's hooks made the client tell the model); any other request
(a side request: routing, next-speaker, titles) is answered with a JSON text that fits every one of
them.
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
SIDE_TEXT = json.dumps({"reasoning": "ok", "next_speaker": "user", "model_choice": "flash",
                        "complexity_reasoning": "ok", "complexity_score": 1})


def user_texts(contents):
    for content in contents:
        if content.get("role", "user") != "user":
            continue
        for part in content.get("parts") or []:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                yield part["text"]


def find_script(contents):
    for text in user_texts(contents):
        for line in text.splitlines():
            at = line.find(MARK)
            if at >= 0:
                try:
                    return json.loads(line[at + len(MARK):].strip())
                except ValueError:
                    continue
    return None


def responses_so_far(contents):
    n = 0
    for content in contents:
        for part in content.get("parts") or []:
            if isinstance(part, dict) and "functionResponse" in part:
                n += 1
    return n


def answers_so_far(contents):
    """How many times the model already answered "done" (a turn continued by a hook)."""
    n = 0
    for content in contents:
        if content.get("role") != "model":
            continue
        for part in content.get("parts") or []:
            if isinstance(part, dict) and part.get("text") == "done":
                n += 1
    return n


def hold_for(script, k):
    holds = script.get("holds") or ([script["hold"]] if script.get("hold") else [])
    return holds[k] if k < len(holds) else None


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

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
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
        with LOG_LOCK, open(LOG, "a") as log:
            log.write(json.dumps({"path": self.path, "body": req}) + "\n")
        if ":countTokens" in self.path:
            self.reply_json({"totalTokens": 10})
            return
        if ":embedContent" in self.path or ":batchEmbedContents" in self.path:
            self.reply_json({"embeddings": []})
            return
        contents = req.get("contents") or []
        script = find_script(contents)
        tools = set()
        for tool in req.get("tools") or []:
            for decl in tool.get("functionDeclarations") or []:
                tools.add(decl.get("name"))
        if script is None or not tools:
            self.answer([{"text": SIDE_TEXT}])
            return
        calls = script.get("calls") or []
        n = responses_so_far(contents)
        if n < len(calls):
            name, args = calls[n]
            name = resolve(name, tools)
            self.answer([{"functionCall": {"name": name, "args": args}}])
            return
        flag = hold_for(script, answers_so_far(contents))
        deadline = time.time() + 150
        while flag and not os.path.exists(flag) and time.time() < deadline:
            time.sleep(0.05)
        self.answer([{"text": "done"}])

    def answer(self, parts):
        chunk = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                            "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": "gemini-2.5-pro",
        }
        if ":streamGenerateContent" not in self.path:
            self.reply_json(chunk)
            return
        body = ("data: %s\n\n" % json.dumps(chunk)).encode()
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
