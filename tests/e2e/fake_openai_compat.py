#!/usr/bin/env python3
"""A scripted stand-in for an OpenAI-compatible Chat Completions server on 127.0.0.1, for the
end-to-end tests of coord with Qwen Code, OpenCode and Cline CLI.

Usage: fake_openai_compat.py PORT_FILE LOG_FILE

It listens on a free port and writes it to PORT_FILE. A session's script is one line of its
prompt:

    coord-e2e: {"calls": [[TOOL, ARGS], ...], "hold": FLAG}

Every `POST .../chat/completions` whose user text holds that line is answered by where the
conversation stands: with N `tool` messages so far, call N (ARGS as its JSON arguments) while
N < len(calls); after that the text "done", first waiting (at most 150 s) until the file FLAG
exists when `hold` is given, so that the session stays inside its turn. Each request is logged
to LOG_FILE as one JSON line `{"path", "body"}`. Other requests (titles, summaries) get "ok";
`GET .../models` lists the model asked for.
"""

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MARK = "coord-e2e:"
LOG = None
LOCK = threading.Lock()
COUNT = [0]


def texts(message):
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [b.get("text") for b in content or [] if isinstance(b, dict) and isinstance(b.get("text"), str)]


def script_of(messages):
    for m in messages:
        if m.get("role") != "user":
            continue
        for text in texts(m):
            # A client may send the prompt JSON-quoted (OpenCode's `run` does).
            if text.startswith('"'):
                try:
                    text = json.loads(text)
                except ValueError:
                    pass
            for line in text.splitlines():
                at = line.find(MARK)
                if at >= 0:
                    try:
                        return json.loads(line[at + len(MARK):].strip())
                    except ValueError:
                        pass
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def log(self, body):
        with LOCK, open(LOG, "a") as f:
            f.write(json.dumps({"path": self.path, "body": body}) + "\n")

    def send(self, obj):
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.log(None)
        model = os.environ.get("FAKE_MODEL", "coord-model")
        if self.path.rstrip("/").endswith("/models"):
            self.send({"object": "list", "data": [{"id": model, "object": "model", "owned_by": "coord"}]})
        else:
            self.send({})

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            req = json.loads(raw or b"{}")
        except ValueError:
            req = {}
        self.log(req)
        messages = req.get("messages") or []
        script = script_of(messages)
        if script is None or not req.get("tools"):
            return self.answer(req, text="ok")
        calls = script.get("calls") or []
        n = sum(1 for m in messages if m.get("role") == "tool")
        if n < len(calls):
            return self.answer(req, call=calls[n])
        flag = script.get("hold")
        deadline = time.time() + 150
        while flag and not os.path.exists(flag) and time.time() < deadline:
            time.sleep(0.05)
        self.answer(req, text=script.get("final", "done"))

    def answer(self, req, text=None, call=None):
        COUNT[0] += 1
        ident = "chatcmpl-%d" % COUNT[0]
        model = req.get("model") or "coord-model"
        now = int(time.time())
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        message = {"role": "assistant", "content": text}
        finish = "stop"
        if call is not None:
            name, args = call
            entry = {"id": "call_%d" % COUNT[0], "type": "function",
                     "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
            message = {"role": "assistant", "content": None, "tool_calls": [entry]}
            finish = "tool_calls"
        if not req.get("stream"):
            return self.send({"id": ident, "object": "chat.completion", "created": now, "model": model,
                              "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                              "usage": usage})
        delta = dict(message)
        if call is not None:
            delta["tool_calls"] = [dict(message["tool_calls"][0], index=0)]
        chunks = [
            {"id": ident, "object": "chat.completion.chunk", "created": now, "model": model,
             "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {"id": ident, "object": "chat.completion.chunk", "created": now, "model": model,
             "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage},
        ]
        body = ("".join("data: %s\n\n" % json.dumps(c) for c in chunks) + "data: [DONE]\n\n").encode()
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
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
