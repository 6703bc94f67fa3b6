//! `coord mcp`: the MCP server on stdio, spoken to line by line as a client would, with real
//! CLI agents on the same folder, real disconnects and real kills.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

use crate::support::{Env, coord_bin};

/// A running `coord mcp` and the client end of its stdio.
pub(crate) struct Client {
    pub(crate) child: Child,
    pub(crate) stdin: Option<ChildStdin>,
    pub(crate) stdout: BufReader<ChildStdout>,
    pub(crate) next_id: u64,
}

impl Client {
    /// `coord mcp` in `env`'s root, as `agent` when given.
    pub(crate) fn start(env: &Env, agent: Option<&str>) -> Client {
        Client::start_with(env, agent, &[])
    }

    pub(crate) fn start_with(env: &Env, agent: Option<&str>, vars: &[(&str, &str)]) -> Client {
        let mut cmd = env.cmd();
        if let Some(a) = agent {
            cmd = cmd.env("COORD_AGENT", a);
        }
        for (k, v) in vars {
            cmd = cmd.env(k, v);
        }
        Client::spawn(cmd.arg("mcp").command(), Stdio::piped())
    }

    /// The client end of `command`, an MCP server on stdio, started with `stderr`.
    pub(crate) fn spawn(mut command: Command, stderr: Stdio) -> Client {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr);
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Client {
            child,
            stdin,
            stdout,
            next_id: 0,
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    #[track_caller]
    pub(crate) fn read(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        assert!(
            line.ends_with('\n'),
            "the server wrote no full line: {line:?}"
        );
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
    }

    /// A request; its response (checked to carry the same id).
    #[track_caller]
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send_line(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        let resp = self.read();
        assert_eq!(resp["jsonrpc"], "2.0", "{resp}");
        assert_eq!(resp["id"], id, "{resp}");
        resp
    }

    /// `initialize` then `notifications/initialized`, like every client of the handshake.
    #[track_caller]
    pub(crate) fn initialize(&mut self, version: &str) -> Value {
        let resp = self.request(
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
        );
        self.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        resp["result"].clone()
    }

    /// `tools/call`; the result object.
    #[track_caller]
    pub(crate) fn call(&mut self, tool: &str, args: Value) -> Value {
        let resp = self.request("tools/call", json!({"name": tool, "arguments": args}));
        assert!(resp.get("error").is_none(), "{resp}");
        resp["result"].clone()
    }

    /// Close stdin and wait for the exit; the exit code and stderr.
    pub(crate) fn finish(mut self) -> (i32, String) {
        drop(self.stdin.take());
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut self.stdout, &mut rest);
        assert!(
            rest.is_empty(),
            "nothing but answers on stdout, got {rest:?}"
        );
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
        }
        let status = self.child.wait().unwrap();
        (status.code().unwrap_or(-1), stderr)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[track_caller]
pub(crate) fn assert_ok(result: &Value) {
    assert_eq!(result["isError"], false, "{result}");
}

/// Feed `input` to a fresh server at once and collect every line it writes.
fn raw(env: &Env, input: &[u8]) -> (Vec<Value>, i32) {
    let out = env.agent("raw").arg("mcp").stdin(input).run();
    let lines = out
        .stdout
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("stdout line not JSON ({e}): {l:?}"))
        })
        .collect();
    (lines, out.code.unwrap_or(-1))
}

#[test]
fn initialize_answers_each_supported_version_and_the_newest_otherwise() {
    let env = Env::new();
    for (asked, answered) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2023-01-01", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
    ] {
        let mut c = Client::start(&env, Some("claude"));
        let init = c.initialize(asked);
        assert_eq!(init["protocolVersion"], answered, "asked {asked}");
        assert_eq!(init["serverInfo"]["name"], "coord");
        assert!(init["capabilities"]["tools"].is_object(), "{init}");
        let instructions = init["instructions"].as_str().unwrap();
        assert!(instructions.contains("`claude`"), "{instructions}");
        assert!(instructions.contains("lock"), "{instructions}");
        let pong = c.request("ping", json!({}));
        assert_eq!(pong["result"], json!({}));
        let (code, _) = c.finish();
        assert_eq!(code, 0);
    }
}

#[test]
fn without_an_agent_the_server_picks_mcp_and_six_letters_and_names_it() {
    let env = Env::new();
    let mut c = Client::start(&env, None);
    let init = c.initialize("2025-06-18");
    let instructions = init["instructions"].as_str().unwrap().to_string();
    let at = instructions.find("`mcp-").expect("an mcp- agent named");
    let id: String = instructions[at + 1..].chars().take(10).collect();
    assert!(
        id.len() == 10
            && id[4..]
                .chars()
                .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit()),
        "{id}"
    );
    // An agent from the first tool call on, not before (a client's health check leaves none).
    assert!(
        !env.exists(&format!(".{id}_presence")),
        "no presence before a call"
    );
    let status = c.call("status", json!({}));
    assert!(env.exists(&format!(".{id}_presence")), "presence of {id}");
    assert_eq!(
        status["structuredContent"]["agents"][0]["agent"],
        id.as_str()
    );
    assert_eq!(status["structuredContent"]["agents"][0]["status"], "ACTIVE");
}

#[test]
fn tools_list_has_every_contract_tool_with_a_schema_and_annotations() {
    let env = Env::new();
    let mut c = Client::start(&env, Some("claude"));
    c.initialize("2025-11-25");
    let list = c.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "status",
            "check",
            "presence",
            "lock",
            "unlock",
            "write",
            "note",
            "msg_send",
            "msg_list",
            "msg_read",
            "dialogue_turn",
            "dialogue_say",
            "review_next"
        ]
    );
    let by_name = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap();
    for t in tools {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        assert!(t["description"].as_str().unwrap().len() > 40, "{t}");
    }
    let args = |n: &str| -> Vec<String> {
        let mut v: Vec<String> = by_name(n)["inputSchema"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        v.sort();
        v
    };
    assert_eq!(args("lock"), ["files", "reason", "ttl_s", "wait_s"]);
    assert_eq!(by_name("lock")["inputSchema"]["required"], json!(["files"]));
    assert_eq!(args("unlock"), ["files"]);
    assert_eq!(args("presence"), ["file", "task"]);
    assert_eq!(args("write"), ["content", "file"]);
    assert_eq!(args("note"), ["file", "text", "wait_s"]);
    assert_eq!(args("msg_send"), ["text", "to"]);
    assert_eq!(args("msg_list"), ["unread_only"]);
    assert_eq!(args("msg_read"), ["id"]);
    assert_eq!(args("dialogue_say"), ["as", "markers", "text"]);
    assert_eq!(args("review_next"), ["topic"]);
    for ro in [
        "status",
        "check",
        "msg_list",
        "dialogue_turn",
        "review_next",
    ] {
        assert_eq!(by_name(ro)["annotations"]["readOnlyHint"], true, "{ro}");
    }
    for rw in ["lock", "unlock", "write", "note", "msg_send", "msg_read"] {
        assert_eq!(by_name(rw)["annotations"]["readOnlyHint"], false, "{rw}");
    }
}

#[test]
fn every_error_path_gets_its_code_and_garbage_never_stops_the_server() {
    let env = Env::new();
    let mut input: Vec<u8> = Vec::new();
    let mut line = |l: &[u8]| {
        input.extend_from_slice(l);
        input.push(b'\n');
    };
    line(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}"#);
    line(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    line(b"this is not json"); // -32700, id null
    line(&[0xff, 0xfe, b'{', b'}']); // not UTF-8: -32700
    line(br#"{"jsonrpc":"2.0","id":2,"method":"ping""#); // truncated: -32700
    line(b"42"); // -32600
    line(br#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#); // batch: -32600
    line(br#"{"id":4,"method":"ping"}"#); // no jsonrpc: -32600 with its id
    line(br#"{"jsonrpc":"2.0","id":5}"#); // no method: -32600
    line(br#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#); // bad id: -32600, id null
    line(br#"{"jsonrpc":"2.0","id":6,"method":"resources/list"}"#); // -32601
    line(br#"{"jsonrpc":"2.0","method":"no/such/notification"}"#); // never answered
    line(br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"lock"}}"#); // notification: nothing
    line(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nope"}}"#); // -32602
    line(br#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{}}"#); // -32602
    line(br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":"lock"}"#); // -32602
    line(br#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"lock","arguments":{"files":"a.md","bogus":1}}}"#); // isError
    line(br#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"lock","arguments":[]}}"#); // isError
    line(br#"{"jsonrpc":"2.0","id":12,"result":{}}"#); // a client's response: ignored
    line(b"");
    line(b"\x00\x01\x02");
    line(br#"{"jsonrpc":"2.0","id":"last","method":"ping"}"#);
    let (out, code) = raw(&env, &input);
    assert_eq!(code, 0, "exit 0 at end of input");
    let err = |i: usize| (out[i]["id"].clone(), out[i]["error"]["code"].clone());
    assert_eq!(out[0]["id"], 1);
    assert_eq!(err(1), (Value::Null, json!(-32700)));
    assert_eq!(err(2), (Value::Null, json!(-32700)));
    assert_eq!(err(3), (Value::Null, json!(-32700)));
    assert_eq!(err(4), (Value::Null, json!(-32600)));
    assert_eq!(err(5), (Value::Null, json!(-32600)));
    assert_eq!(err(6), (json!(4), json!(-32600)));
    assert_eq!(err(7), (json!(5), json!(-32600)));
    assert_eq!(err(8), (Value::Null, json!(-32600)));
    assert_eq!(err(9), (json!(6), json!(-32601)));
    assert_eq!(err(10), (json!(7), json!(-32602)));
    assert!(
        out[10]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nope")
    );
    assert_eq!(err(11), (json!(8), json!(-32602)));
    assert_eq!(err(12), (json!(9), json!(-32602)));
    assert_eq!(out[13]["id"], 10);
    assert_eq!(out[13]["result"]["isError"], true);
    assert_eq!(
        out[13]["result"]["content"][0]["text"],
        "error: tool `lock` has no argument `bogus` (its arguments: files, wait_s, ttl_s, reason)"
    );
    assert_eq!(out[14]["id"], 11);
    assert_eq!(out[14]["result"]["isError"], true);
    assert_eq!(err(15), (Value::Null, json!(-32700)));
    assert_eq!(out[16]["id"], "last");
    assert_eq!(out[16]["result"], json!({}));
    assert_eq!(
        out.len(),
        17,
        "notifications and responses are never answered: {out:?}"
    );
    assert!(
        !env.exists("a.md.lock.raw"),
        "the notification locked nothing"
    );
}

#[test]
fn the_stateless_revision_is_answered_too() {
    let env = Env::new();
    let mut c = Client::start(&env, Some("claude"));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let d = c.request("server/discover", json!({"_meta": meta}));
    let versions = d["result"]["supportedVersions"].as_array().unwrap();
    assert!(versions.contains(&json!("2026-07-28")), "{d}");
    assert!(versions.contains(&json!("2025-11-25")), "{d}");
    assert_eq!(d["result"]["resultType"], "complete");
    assert!(
        d["result"]["instructions"]
            .as_str()
            .unwrap()
            .contains("`claude`")
    );
    let list = c.request("tools/list", json!({"_meta": meta}));
    assert_eq!(list["result"]["resultType"], "complete");
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 13);
    let call = c.request(
        "tools/call",
        json!({"_meta": meta, "name": "status", "arguments": {}}),
    );
    assert_eq!(call["result"]["resultType"], "complete");
    assert_eq!(call["result"]["isError"], false);
    let bad = c.request(
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2031-01-01"}}),
    );
    assert_eq!(bad["error"]["code"], -32022);
    assert_eq!(bad["error"]["data"]["requested"], "2031-01-01");
}

/// Whether `python3` can import the official MCP SDK; the reason when not.
fn python_sdk() -> Result<(), String> {
    match Command::new("python3")
        .args(["-c", "import mcp.client.stdio, mcp"])
        .output()
    {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "python3 cannot import the MCP SDK (`pip install mcp`): {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        )),
        Err(e) => Err(format!("no python3: {e}")),
    }
}

#[test]
fn the_official_python_sdk_client_drives_the_server() {
    if let Err(why) = python_sdk() {
        eprintln!("SKIPPED the_official_python_sdk_client_drives_the_server: {why}");
        return;
    }
    let env = Env::new();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_sdk/client_test.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(coord_bin())
        .arg(env.root())
        .env_remove("COORD_AGENT")
        .env_remove("COORD_DIR")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "the SDK client failed\n--- stdout\n{stdout}--- stderr\n{stderr}"
    );
}

/// The Claude Code CLI: `COORD_TEST_CLAUDE`, else `claude` on the PATH.
fn claude_code() -> Result<std::path::PathBuf, String> {
    let candidate = std::env::var_os("COORD_TEST_CLAUDE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "claude".into());
    match Command::new(&candidate).arg("--version").output() {
        Ok(out) if out.status.success() => Ok(candidate),
        Ok(out) => Err(format!(
            "`{} --version` failed: {}",
            candidate.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!(
            "no Claude Code CLI (`{}`: {e}; `npm install @anthropic-ai/claude-code` and set COORD_TEST_CLAUDE)",
            candidate.display()
        )),
    }
}

#[test]
fn claude_code_registers_the_server_and_sees_it_connected() {
    let claude = match claude_code() {
        Ok(c) => c,
        Err(why) => {
            eprintln!("SKIPPED claude_code_registers_the_server_and_sees_it_connected: {why}");
            return;
        }
    };
    let env = Env::new();
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(&claude)
            .args(args)
            .current_dir(env.root())
            .env("HOME", home.path())
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env_remove("COORD_AGENT")
            .env_remove("COORD_DIR")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    let root = env.root().to_str().unwrap();
    let (ok, said) = run(&["mcp", "add", "coord", "--", coord_bin(), "-C", root, "mcp"]);
    assert!(ok, "claude mcp add failed: {said}");
    let (ok, said) = run(&["mcp", "list"]);
    assert!(ok, "claude mcp list failed: {said}");
    let line = said
        .lines()
        .find(|l| l.starts_with("coord: "))
        .unwrap_or_else(|| panic!("no coord line in: {said}"));
    assert!(line.contains("Connected"), "{said}");
    // A health check calls no tool: the server it started leaves no agent behind (issue 25).
    let presences = env.files_ending("_presence");
    assert!(presences.is_empty(), "{presences:?}");
    let rows: Value = env.cmd().args(["partners", "--json"]).ok().json();
    assert_eq!(rows["partners"], json!([]), "{rows}");
}
