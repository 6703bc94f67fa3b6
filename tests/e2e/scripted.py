"""What the scripted models share: the script a test writes in its prompt, the server, the log.

A test drives a real client with a prompt holding one line

    coord-e2e: [STEP, STEP, ...]

(a JSON list). The model answers each request of the conversation with the next step, as a tool
call in its wire format; the step to take is the number of tool results and of the model's own
text answers the conversation holds after the message carrying the script (so a resumed session,
given a new script, starts afresh).
Steps:

- {"write": [PATH, CONTENT]}: write the file (Claude `Write`, Codex `apply_patch`);
- {"read": PATH}: read it (Claude `Read`; Codex `exec_command` of `cat`);
- {"shell": COMMAND}: run a shell command (Claude `Bash`, Codex `exec_command`);
- {"mcp": [TOOL, ARGS]}: call the tool TOOL of the `coord` MCP server with ARGS;
- {"say": TEXT}: answer TEXT, ending the turn; the steps after it are taken if the client goes on
  (a Stop hook that blocks the stop);
- {"hold": FLAG}: no tool; wait until the file FLAG exists (at most 150 s), then go on with the
  next step: the session stays inside its turn for as long as the test wants.

After the last step the answer is the text "done". A request that offers no tools (a title, a
side question) is answered "ok". A step whose tool the request does not offer is answered with
the text "coord-e2e: no tool for STEP" (the test sees it in the log).

Every request is logged to LOG_FILE as one JSON line: `n`, `path`, `tools` (names offered),
`script` (whether it carried one), `step` (index taken, or null), `results` (the tool results
after the script, as text, with `error`), `body` (the whole request).
"""

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MARK = "coord-e2e:"
HOLD_LIMIT_S = 150
_lock = threading.Lock()
_state = {"n": 0, "log": None}


def parse_script(text):
    """The steps of the last `coord-e2e:` line in `text`, or None."""
    found = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(MARK):
            try:
                steps = json.loads(line[len(MARK):])
            except ValueError:
                continue
            if isinstance(steps, list):
                found = steps
    return found


def next_step(steps, done):
    """(index, step, holds) of the step to take after `done` steps answered (tool results and
    text answers): the holds are the flags to wait for first; (None, None, holds) once the script
    is over."""
    # Holds before the `done`-th acting step were waited for by earlier requests.
    tool_steps = [k for k, s in enumerate(steps) if "hold" not in s]
    if done < len(tool_steps):
        i = tool_steps[done]
        start = tool_steps[done - 1] + 1 if done else 0
    else:
        i = len(steps)
        start = tool_steps[-1] + 1 if tool_steps else 0
    holds = [steps[k]["hold"] for k in range(start, i)]
    if i >= len(steps):
        return None, None, holds
    return i, steps[i], holds


def wait_for(flag):
    deadline = time.time() + HOLD_LIMIT_S
    while not os.path.exists(flag) and time.time() < deadline:
        time.sleep(0.05)


def record(entry):
    with _lock:
        _state["n"] += 1
        entry = dict(entry, n=_state["n"])
        with open(_state["log"], "a") as log:
            log.write(json.dumps(entry) + "\n")
        return _state["n"]


class BaseHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self.reply_json({"data": [], "models": []})

    def read_json(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {}

    def reply_json(self, obj):
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def reply_sse(self, events):
        body = "".join("event: %s\ndata: %s\n\n" % (name, json.dumps(data)) for name, data in events)
        body = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def patch_for(path, content):
    """An apply_patch text that makes PATH hold CONTENT (one line per line of CONTENT)."""
    new = "".join("+%s\n" % line for line in content.split("\n"))
    if not os.path.exists(path):
        return "*** Begin Patch\n*** Add File: %s\n%s*** End Patch\n" % (path, new)
    with open(path) as f:
        old = f.read()
    if old.endswith("\n"):
        old = old[:-1]
    removed = "".join("-%s\n" % line for line in old.split("\n"))
    return "*** Begin Patch\n*** Update File: %s\n@@\n%s%s*** End Patch\n" % (path, removed, new)


def serve(handler, argv):
    """Listen on a free port of 127.0.0.1, write it to PORT_FILE (atomically), serve forever."""
    if len(argv) != 3:
        sys.exit("usage: %s PORT_FILE LOG_FILE" % argv[0])
    port_file, _state["log"] = argv[1], argv[2]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, port_file)
    server.serve_forever()
