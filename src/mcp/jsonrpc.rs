//! JSON-RPC 2.0 framing for the MCP server: one message per line in, one response per line out.

use serde_json::{Map, Value, json};

/// The line is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// No such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid parameters (also: unknown tool).
pub const INVALID_PARAMS: i64 = -32602;
/// The request names a protocol version the server does not speak (2026-07-28 revision).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// A request: it has an id (a string or a number) and expects exactly one response; `params`
/// are empty when absent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Request {
    pub id: Value,
    pub method: String,
    pub params: Map<String, Value>,
}

/// Classify one line of input (without its line break): a request to answer, `None` for a
/// notification (no id), a response from the client (this server sends no requests) or a blank
/// line, or the error response to send (with the request's id when it could be read, else `null`).
pub(crate) fn classify(line: &[u8]) -> Result<Option<Request>, Value> {
    let invalid = |id, code, why: String| Err(error(&id, code, &why));
    let null = |code, message| invalid(Value::Null, code, message);
    let text = std::str::from_utf8(line).map_err(|e| {
        let why = format!("the line is not UTF-8 (byte {})", e.valid_up_to());
        error(&Value::Null, PARSE_ERROR, &why)
    })?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    let mut obj = match serde_json::from_str(text) {
        Ok(Value::Object(o)) => o,
        Ok(Value::Array(_)) => {
            let why = "batches are not supported: send one JSON-RPC object per line";
            return null(INVALID_REQUEST, why.into());
        }
        Ok(other) => {
            let why = format!("expected a JSON-RPC object, got {}", kind(&other));
            return null(INVALID_REQUEST, why);
        }
        Err(e) => return null(PARSE_ERROR, format!("the line is not JSON: {e}")),
    };
    let id = obj.remove("id");
    let answer_id = match &id {
        Some(v @ (Value::String(_) | Value::Number(_))) => v.clone(),
        _ => Value::Null,
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        let why = "`jsonrpc` must be \"2.0\"".into();
        return invalid(answer_id, INVALID_REQUEST, why);
    }
    let method = match obj.remove("method") {
        Some(Value::String(m)) => m,
        Some(other) => {
            let why = format!("`method` must be a string, got {}", kind(&other));
            return invalid(answer_id, INVALID_REQUEST, why);
        }
        None if obj.contains_key("result") || obj.contains_key("error") => return Ok(None),
        None => return invalid(answer_id, INVALID_REQUEST, "`method` is missing".into()),
    };
    if let Some(bad) = id.as_ref().filter(|_| answer_id.is_null()) {
        let why = format!("`id` must be a string or a number, got {}", kind(bad));
        return null(INVALID_REQUEST, why);
    }
    let params = match obj.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => p,
        Some(_) if id.is_none() => return Ok(None),
        Some(other) => {
            let why = format!("`params` must be an object, got {}", kind(&other));
            return invalid(answer_id, INVALID_PARAMS, why);
        }
    };
    Ok(id.map(|id| Request { id, method, params }))
}

/// The JSON type of a value, for messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An error response.
pub fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}
