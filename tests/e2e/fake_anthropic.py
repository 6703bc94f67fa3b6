#!/usr/bin/env python3
"""A scripted stand-in for the Anthropic Messages API (`POST /v1/messages`, with or without
`stream`), the wire format Claude Code speaks, for end-to-end tests of coord with the real client
on 127.0.0.1.

Usage: fake_anthropic.py PORT_FILE LOG_FILE

The script and the log are described in scripted.py. Steps become `tool_use` blocks (`say` a
text answer): `write` a
`Write` (preceded, when the file exists and the conversation has not read it, by a `Read` of it:
Claude Code refuses to overwrite a file it has not read; that `Read` is not a step), `read` a
`Read`, `shell` a `Bash`, `mcp` the offered tool `mcp__coord__TOOL`.
"""

import json
import os
import sys

import scripted

AUTO = "toolu_auto_"


def texts(message):
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


def blocks(message, kind):
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == kind]


def result_text(block):
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(texts({"content": content}))


class Handler(scripted.BaseHandler):
    def do_POST(self):
        req = self.read_json()
        if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
            self.reply_json({"input_tokens": 10})
            return
        messages = [m for m in req.get("messages") or [] if isinstance(m, dict)]
        at, steps = None, None
        for k, message in enumerate(messages):
            if message.get("role") == "user":
                found = scripted.parse_script("\n".join(texts(message)))
                if found is not None:
                    at, steps = k, found
        results, read, said = [], set(), 0
        if at is not None:
            for message in messages[at + 1:]:
                uses = blocks(message, "tool_use")
                if message.get("role") == "assistant" and not uses:
                    said += 1
                for use in uses:
                    if use.get("name") == "Read":
                        read.add((use.get("input") or {}).get("file_path"))
                for block in blocks(message, "tool_result"):
                    if not str(block.get("tool_use_id", "")).startswith(AUTO):
                        results.append({"text": result_text(block), "error": bool(block.get("is_error"))})
        names = [t.get("name") for t in req.get("tools") or [] if isinstance(t, dict)]
        entry = {"path": self.path, "tools": names, "results": results, "body": req, "step": None,
                 "script": steps is not None}
        if steps is None or not names:
            scripted.record(entry)
            self.answer(req, [("text", "ok")], "end_turn", 0)
            return
        index, step, holds = scripted.next_step(steps, len(results) + said)
        entry["step"] = index
        n = scripted.record(entry)
        for flag in holds:
            scripted.wait_for(flag)
        if step is None:
            self.answer(req, [("text", "done")], "end_turn", n)
            return
        use = self.tool_use(step, names, read)
        if "say" in step:
            self.answer(req, [("text", step["say"])], "end_turn", n)
        elif use is None:
            self.answer(req, [("text", "coord-e2e: no tool for %s" % json.dumps(step))], "end_turn", n)
        else:
            self.answer(req, [use], "tool_use", n)

    @staticmethod
    def tool_use(step, names, read):
        """(name, input, id prefix) of the tool_use for `step`, or None."""
        if "write" in step:
            path, content = step["write"]
            if os.path.exists(path) and path not in read:
                return ("Read", {"file_path": path}, AUTO)
            return ("Write", {"file_path": path, "content": content}, "toolu_") if "Write" in names else None
        if "read" in step:
            return ("Read", {"file_path": step["read"]}, "toolu_")
        if "shell" in step:
            return ("Bash", {"command": step["shell"]}, "toolu_") if "Bash" in names else None
        if "mcp" in step:
            tool, args = step["mcp"]
            name = "mcp__coord__" + tool
            return (name, args, "toolu_") if name in names else None
        return None

    def answer(self, req, content, stop_reason, n):
        msg_id = "msg_e2e_%d" % n
        model = req.get("model") or "claude-sonnet-4-5"
        out = []
        for block in content:
            if block[0] == "text":
                out.append({"type": "text", "text": block[1]})
            else:
                name, value, prefix = block
                out.append({"type": "tool_use", "id": "%s%d" % (prefix, n), "name": name, "input": value})
        if not req.get("stream"):
            self.reply_json({"id": msg_id, "type": "message", "role": "assistant", "model": model,
                             "content": out, "stop_reason": stop_reason, "stop_sequence": None,
                             "usage": {"input_tokens": 10, "output_tokens": 5}})
            return
        events = [("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}})]
        for index, block in enumerate(out):
            if block["type"] == "text":
                start, delta = dict(block, text=""), {"type": "text_delta", "text": block["text"]}
            else:
                start = dict(block, input={})
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                    "content_block": start}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                    "delta": delta}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        events.append(("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                         "usage": {"output_tokens": 5}}))
        events.append(("message_stop", {"type": "message_stop"}))
        self.reply_sse(events)


if __name__ == "__main__":
    scripted.serve(Handler, sys.argv)
