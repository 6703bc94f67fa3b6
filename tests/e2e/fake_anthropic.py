#!/usr/bin/env python3
"""A scripted stand-in for the Anthropic Messages API, for end-to-end tests of coord's hooks
with the real Claude Code client on 127.0.0.1.

Usage: fake_anthropic.py PORT_FILE LOG_FILE

It listens on a free port of 127.0.0.1 and writes the port to PORT_FILE. Every request is
answered (POST /v1/messages, with or without `stream`, as server-sent events or JSON):

- the last user message holds a `tool_result`: the result is logged to LOG_FILE (one JSON line)
  and the answer is the text "done". If the prompt said `hold=FLAG`, the answer waits until the
  file FLAG exists (so a session stays inside its turn, holding its locks, for as long as the
  test wants);
- a user message says `coord-e2e: write PATH :: CONTENT` and the request offers the `Write`
  tool: a `tool_use` of `Read` of PATH first when PATH exists (Claude Code refuses to overwrite
  a file it has not read), then a `tool_use` of `Write` with that path and content
  (stop_reason `tool_use`);
- anything else (titles, side requests): the text "ok".
"""

import json
import os
import re
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PATTERN = re.compile(r"coord-e2e: write (\S+) :: (.*?)(?: :: hold=(\S+))?$", re.S)
LOG = None
COUNTER = [0]


def texts(message):
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    out = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") == "text":
            out.append(block.get("text", ""))
    return out


def tool_results(message):
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def find_prompt(messages):
    for message in messages:
        if message.get("role") != "user":
            continue
        for text in texts(message):
            for line in text.splitlines():
                m = PATTERN.search(line.strip())
                if m:
                    return m
    return None


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
        if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
            self.reply_json({"input_tokens": 10})
            return
        messages = req.get("messages") or []
        last = messages[-1] if messages else {}
        tools = [t.get("name") for t in req.get("tools") or [] if isinstance(t, dict)]
        prompt = find_prompt(messages)
        results = tool_results(last) if last.get("role") == "user" else []
        read_done = any(str(r.get("tool_use_id", "")).startswith("toolu_read") for r in results)
        if prompt and "Write" in tools and (read_done or (not results and not os.path.exists(prompt.group(1)))):
            tool_input = {"file_path": prompt.group(1), "content": prompt.group(2)}
            self.answer(req, [("Write", tool_input)], "tool_use")
        elif prompt and "Write" in tools and not results:
            self.answer(req, [("Read", {"file_path": prompt.group(1)})], "tool_use")
        elif results:
            with open(LOG, "a") as log:
                for r in results:
                    log.write(json.dumps({"tool_result": r}) + "\n")
            flag = prompt.group(3) if prompt else None
            deadline = time.time() + 120
            while flag and not os.path.exists(flag) and time.time() < deadline:
                time.sleep(0.05)
            self.answer(req, [("text", "done")], "end_turn")
        else:
            self.answer(req, [("text", "ok")], "end_turn")

    def answer(self, req, blocks, stop_reason):
        COUNTER[0] += 1
        msg_id = "msg_%d" % COUNTER[0]
        model = req.get("model") or "claude-sonnet-4-5"
        usage = {"input_tokens": 10, "output_tokens": 5}
        if not req.get("stream"):
            content = []
            for kind, value in blocks:
                if kind == "text":
                    content.append({"type": "text", "text": value})
                else:
                    content.append({"type": "tool_use", "id": "toolu_%s_%d" % (kind.lower(), COUNTER[0]),
                                    "name": kind, "input": value})
            self.reply_json({"id": msg_id, "type": "message", "role": "assistant", "model": model,
                             "content": content, "stop_reason": stop_reason, "stop_sequence": None,
                             "usage": usage})
            return
        events = [("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}})]
        for index, (kind, value) in enumerate(blocks):
            if kind == "text":
                events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                        "content_block": {"type": "text", "text": ""}}))
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                        "delta": {"type": "text_delta", "text": value}}))
            else:
                events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                        "content_block": {"type": "tool_use",
                                                                          "id": "toolu_%s_%d" % (kind.lower(), COUNTER[0]),
                                                                          "name": kind, "input": {}}}))
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                        "delta": {"type": "input_json_delta",
                                                                  "partial_json": json.dumps(value)}}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        events.append(("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                         "usage": {"output_tokens": 5}}))
        events.append(("message_stop", {"type": "message_stop"}))
        body = "".join("event: %s\ndata: %s\n\n" % (name, json.dumps(data)) for name, data in events).encode()
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
