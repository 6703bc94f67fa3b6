#!/usr/bin/env python3
"""A scripted stand-in for the OpenAI Responses API (`POST /v1/responses`, streamed as server-sent
events), the wire format Codex CLI speaks, for end-to-end tests of coord with the real client on
127.0.0.1.

Usage: fake_responses.py PORT_FILE LOG_FILE

The script and the log are described in scripted.py. Steps become output items (`say` an
assistant message): `write` a
`custom_tool_call` of the freeform `apply_patch` tool (an `*** Add File:` or, when the file exists,
an `*** Update File:` replacing its lines), `shell` and `read` a `function_call` of `exec_command`
(or `shell`, whichever the request offers), `mcp` a `function_call` of the offered tool named
`mcp__coord__TOOL` (or ending in `TOOL` and naming coord).
"""

import json
import sys

import scripted

OUTPUTS = ("function_call_output", "custom_tool_call_output", "mcp_tool_call_output")


def item_text(item):
    content = item.get("content")
    if isinstance(content, str):
        return content
    out = []
    for part in content or []:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            out.append(part["text"])
    return "\n".join(out)


def output_text(item):
    output = item.get("output")
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        return json.dumps(output)
    if isinstance(output, list):
        return "\n".join(p.get("text", "") for p in output if isinstance(p, dict))
    return ""


def tool_names(req):
    names = []
    for tool in req.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if tool.get("name"):
            names.append(tool["name"])
        elif tool.get("type") == "tool_search":
            names.append("tool_search")
        for sub in tool.get("tools") or []:  # a namespace of tools
            if isinstance(sub, dict) and sub.get("name"):
                names.append("%s%s" % (tool.get("name", ""), sub["name"]))
    return names


def mcp_tool(names, tool):
    for name in names:
        if name == "mcp__coord__" + tool:
            return name
    for name in names:
        if "coord" in name and name.endswith(tool):
            return name
    return None


class Handler(scripted.BaseHandler):
    def do_POST(self):
        req = self.read_json()
        if not self.path.rstrip("/").endswith("/responses"):
            scripted.record({"path": self.path, "body": req, "tools": [], "step": None, "results": []})
            self.reply_json({})
            return
        items = [i for i in req.get("input") or [] if isinstance(i, dict)]
        at, steps = None, None
        for k, item in enumerate(items):
            if item.get("type", "message") == "message" and item.get("role") == "user":
                found = scripted.parse_script(item_text(item))
                if found is not None:
                    at, steps = k, found
        results, found_tools, said = [], {}, 0
        if at is not None:
            for item in items[at + 1:]:
                if item.get("type", "message") == "message" and item.get("role") == "assistant":
                    said += 1
                elif item.get("type") == "tool_search_output":
                    # Searches are how the script reaches MCP tools, not steps of their own.
                    for ns in item.get("tools") or []:
                        for sub in ns.get("tools") or []:
                            found_tools[sub.get("name")] = ns.get("name")
                elif item.get("type") in OUTPUTS:
                    # Codex reports a hook's deny as "Command blocked by PreToolUse hook: …".
                    text = output_text(item)
                    results.append({"text": text, "error": "blocked" in text.lower()})
        names = tool_names(req)
        entry = {"path": self.path, "tools": names, "results": results, "body": req, "step": None,
                 "script": steps is not None}
        if steps is None or not names:
            scripted.record(entry)
            self.answer(req, [self.message("ok")])
            return
        index, step, holds = scripted.next_step(steps, len(results) + said)
        entry["step"] = index
        n = scripted.record(entry)
        for flag in holds:
            scripted.wait_for(flag)
        if step is None:
            self.answer(req, [self.message("done")])
            return
        item = self.message(step["say"]) if "say" in step else self.tool_call(step, names, found_tools, n)
        if item is None:
            self.answer(req, [self.message("coord-e2e: no tool for %s" % json.dumps(step))])
        else:
            self.answer(req, [item])

    @staticmethod
    def message(text):
        return {"type": "message", "role": "assistant", "id": "msg_e2e", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}

    @staticmethod
    def tool_call(step, names, found_tools, n):
        call_id = "call_e2e_%d" % n
        if "write" in step:
            path, content = step["write"]
            if "apply_patch" not in names:
                return None
            return {"type": "custom_tool_call", "id": "ctc_e2e_%d" % n, "status": "completed",
                    "call_id": call_id, "name": "apply_patch", "input": scripted.patch_for(path, content)}
        if "shell" in step or "read" in step:
            command = step["shell"] if "shell" in step else "cat '%s'" % step["read"]
            if "exec_command" in names:
                name, args = "exec_command", {"cmd": command, "login": False, "yield_time_ms": 30000}
            elif "shell" in names:
                name, args = "shell", {"command": ["bash", "-c", command]}
            else:
                return None
        elif "mcp" in step:
            tool, args = step["mcp"]
            name = mcp_tool(names, tool)
            if name is None:
                # Codex offers MCP tools only through `tool_search` (deferred): search first, then
                # call the tool in the namespace the search returned.
                if tool not in found_tools:
                    if "tool_search" not in names:
                        return None
                    return {"type": "tool_search_call", "id": "ts_e2e_%d" % n, "status": "completed",
                            "call_id": call_id, "execution": "client", "arguments": {"query": "coord " + tool}}
                return {"type": "function_call", "id": "fc_e2e_%d" % n, "status": "completed", "call_id": call_id,
                        "namespace": found_tools[tool], "name": tool, "arguments": json.dumps(args)}
        else:
            return None
        return {"type": "function_call", "id": "fc_e2e_%d" % n, "status": "completed",
                "call_id": call_id, "name": name, "arguments": json.dumps(args)}

    def answer(self, req, items):
        response = {"id": "resp_e2e", "object": "response", "model": req.get("model") or "gpt-5.5",
                    "status": "in_progress", "output": []}
        events = [("response.created", {"type": "response.created", "response": response})]
        for index, item in enumerate(items):
            events.append(("response.output_item.added", {"type": "response.output_item.added",
                                                          "output_index": index, "item": item}))
            events.append(("response.output_item.done", {"type": "response.output_item.done",
                                                         "output_index": index, "item": item}))
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
        done = dict(response, status="completed", output=items, usage=usage)
        events.append(("response.completed", {"type": "response.completed", "response": done}))
        self.reply_sse(events)


if __name__ == "__main__":
    scripted.serve(Handler, sys.argv)
