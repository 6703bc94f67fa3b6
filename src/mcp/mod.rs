//! The Model Context Protocol server behind `coord mcp`: newline-delimited JSON-RPC 2.0.

pub mod jsonrpc;
pub mod tools;

use serde_json::{Map, Value, json};

use self::jsonrpc::Request;
use self::tools::ToolSpec;

/// The protocol versions of the `initialize` handshake, oldest first.
pub const VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// The stateless revision: no handshake, the version in every request's `_meta`.
pub const STATELESS_VERSION: &str = "2026-07-28";

/// The one revision that allows JSON-RPC batches.
pub const BATCH_VERSION: &str = "2025-03-26";

/// Where a stateless request carries its protocol version.
pub const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// Where a stateless result names the server.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// Every version this server speaks, oldest first.
fn all_versions() -> Vec<&'static str> {
    [VERSIONS, &[STATELESS_VERSION]].concat()
}

/// A `tools/call` result: the text (for a refusal: the CLI's `error:` line and its `hint:`), the
/// object the CLI prints with `--json` when it has one, and whether the call was refused.
pub fn tool_result(text: &str, structured: Option<Value>, is_error: bool) -> Value {
    let mut result = json!({"content": [{"type": "text", "text": text}], "isError": is_error});
    if let Some(s @ Value::Object(_)) = structured {
        result["structuredContent"] = s;
    }
    result
}

/// The protocol state machine; `host` runs a tool with its arguments (an object; unknown tools
/// never reach it).
#[derive(Debug)]
pub struct Server<H> {
    host: H,
    instructions: String,
    negotiated: Option<&'static str>,
}

impl<H: FnMut(&'static ToolSpec, &Map<String, Value>) -> Value> Server<H> {
    /// A server running tools on `host`; `instructions` tell the client how to use them.
    pub fn new(host: H, instructions: String) -> Server<H> {
        Server {
            host,
            instructions,
            negotiated: None,
        }
    }

    /// Handle one input line; the response to write, if any (batches only under
    /// [`BATCH_VERSION`], else -32600).
    pub fn handle_line(&mut self, line: &[u8]) -> Option<Value> {
        if self.negotiated == Some(BATCH_VERSION)
            && line.trim_ascii_start().starts_with(b"[")
            && let Ok(Value::Array(items)) = serde_json::from_slice::<Value>(line)
        {
            if items.is_empty() {
                let why = "an empty batch: send at least one request";
                return Some(jsonrpc::error(&Value::Null, jsonrpc::INVALID_REQUEST, why));
            }
            let answers: Vec<Value> = items
                .iter()
                .filter_map(|item| match item {
                    Value::Array(_) => {
                        let why = "a batch inside a batch";
                        Some(jsonrpc::error(&Value::Null, jsonrpc::INVALID_REQUEST, why))
                    }
                    item => self.handle_one(item.to_string().as_bytes()),
                })
                .collect();
            return (!answers.is_empty()).then_some(Value::Array(answers));
        }
        self.handle_one(line)
    }

    fn handle_one(&mut self, line: &[u8]) -> Option<Value> {
        let answer = jsonrpc::classify(line).map(|req| req.map(|req| self.handle(req)));
        answer.unwrap_or_else(Some)
    }

    fn handle(&mut self, req: Request) -> Value {
        let id = req.id.clone();
        // A request of the stateless revision names its version; one we do not speak is refused
        // the way that revision says, listing the ones we do.
        let stateless = match req.params.get("_meta").and_then(|m| m.get(META_VERSION)) {
            None => false,
            Some(Value::String(v)) if v == STATELESS_VERSION => true,
            Some(Value::String(v)) if VERSIONS.contains(&v.as_str()) => false,
            Some(v) => {
                let code = jsonrpc::UNSUPPORTED_PROTOCOL_VERSION;
                let mut refusal = jsonrpc::error(&id, code, "unsupported protocol version");
                refusal["error"]["data"] = json!({"supported": all_versions(), "requested": v});
                return refusal;
            }
        };
        let outcome = match req.method.as_str() {
            "initialize" => Ok(self.initialize(&req.params)),
            "ping" => Ok(json!({})),
            "server/discover" => Ok(self.discover()),
            "tools/list" => Ok(self.list(stateless)),
            "tools/call" => self.call(&req.params),
            other => Err((
                jsonrpc::METHOD_NOT_FOUND,
                format!(
                    "method `{other}` not found: coord answers initialize, ping, server/discover, tools/list and tools/call"
                ),
            )),
        };
        match outcome {
            Ok(mut result) => {
                if stateless && let Some(obj) = result.as_object_mut() {
                    obj.entry("resultType").or_insert_with(|| json!("complete"));
                    obj.entry("_meta")
                        .or_insert_with(|| json!({ META_SERVER_INFO: self.server_info() }));
                }
                json!({"jsonrpc": "2.0", "id": id, "result": result})
            }
            Err((code, message)) => jsonrpc::error(&id, code, &message),
        }
    }

    fn server_info(&self) -> Value {
        json!({"name": "coord", "title": "coord", "version": env!("CARGO_PKG_VERSION")})
    }

    fn capabilities() -> Value {
        json!({"tools": {"listChanged": false}})
    }

    fn initialize(&mut self, params: &Map<String, Value>) -> Value {
        let requested = params.get("protocolVersion").and_then(Value::as_str);
        let version = (VERSIONS.iter().copied())
            .find(|v| Some(*v) == requested)
            .unwrap_or(VERSIONS[VERSIONS.len() - 1]);
        self.negotiated = Some(version);
        json!({
            "protocolVersion": version,
            "capabilities": Self::capabilities(),
            "serverInfo": self.server_info(),
            "instructions": self.instructions,
        })
    }

    fn discover(&self) -> Value {
        json!({
            "resultType": "complete",
            "supportedVersions": all_versions(),
            "capabilities": Self::capabilities(),
            "instructions": self.instructions,
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": { META_SERVER_INFO: self.server_info() },
        })
    }

    fn list(&self, stateless: bool) -> Value {
        let tools: Vec<Value> = tools::TOOLS.iter().map(ToolSpec::to_json).collect();
        match stateless {
            true => json!({ "tools": tools, "ttlMs": 0, "cacheScope": "private" }),
            false => json!({ "tools": tools }),
        }
    }

    fn call(&mut self, params: &Map<String, Value>) -> Result<Value, (i64, String)> {
        let names = || tools::TOOLS.iter().map(|t| t.name).collect::<Vec<_>>();
        let tool = match params.get("name") {
            Some(Value::String(name)) => (tools::TOOLS.iter().find(|t| t.name == name))
                .ok_or_else(|| format!("unknown tool `{name}` (tools: {})", names().join(", "))),
            Some(other) => Err(format!(
                "`name` must be a string, got {}",
                jsonrpc::kind(other)
            )),
            None => Err("`name` is missing: say which tool to call".into()),
        };
        let tool = tool.map_err(|why| (jsonrpc::INVALID_PARAMS, why))?;
        Ok(match params.get("arguments") {
            None | Some(Value::Null) => (self.host)(tool, &Map::new()),
            Some(Value::Object(args)) => (self.host)(tool, args),
            Some(other) => {
                let (name, kind) = (tool.name, jsonrpc::kind(other));
                let why =
                    format!("error: the arguments of tool `{name}` must be an object, got {kind}");
                tool_result(&why, None, true)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Echo = fn(&'static ToolSpec, &Map<String, Value>) -> Value;

    fn server() -> Server<Echo> {
        Server::new(
            |tool, args| tool_result(tool.name, Some(Value::Object(args.clone())), false),
            "hi".into(),
        )
    }

    fn ask(s: &mut Server<Echo>, v: Value) -> Value {
        s.handle_line(v.to_string().as_bytes())
            .unwrap_or(Value::Null)
    }

    /// A server that negotiated `version`.
    fn at(version: &str) -> Server<Echo> {
        let mut s = server();
        let params = json!({ "protocolVersion": version });
        let initialize = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":params});
        ask(&mut s, initialize);
        s
    }

    #[test]
    fn batches_are_answered_under_the_revision_that_allows_them() {
        let batch = json!([
            {"jsonrpc":"2.0","id":1,"method":"ping"},
            {"jsonrpc":"2.0","method":"notifications/initialized"},
            {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"status"}},
            {"jsonrpc":"2.0","id":3,"method":"nope"}
        ]);
        let code = |r: Value| r["error"]["code"].clone();
        let invalid = jsonrpc::INVALID_REQUEST;
        assert_eq!(code(ask(&mut server(), batch.clone())), invalid);
        let mut s = at("2025-03-26");
        let r = ask(&mut s, batch);
        let r = r.as_array().unwrap_or_else(|| panic!("{r}"));
        assert_eq!(r.len(), 3, "{r:?}");
        assert_eq!(r[0]["id"], 1);
        assert_eq!(r[1]["result"]["content"][0]["text"], "status");
        assert_eq!(r[2]["error"]["code"], jsonrpc::METHOD_NOT_FOUND);
        assert_eq!(code(ask(&mut s, json!([]))), invalid);
        let notifications = br#"[{"jsonrpc":"2.0","method":"notifications/x"}]"#;
        assert_eq!(s.handle_line(notifications), None);
        let ping = json!([{"jsonrpc":"2.0","id":1,"method":"ping"}]);
        assert_eq!(code(ask(&mut at("2025-06-18"), ping)), invalid);
    }
}
