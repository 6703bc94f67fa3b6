//! JSON with comments, merged without losing them (Gemini CLI reads its settings this way:
//! `//` and `/* */` comments, nothing else beyond JSON).

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use serde_json::{Map, Value};

use crate::error::Result;

/// What the client accepts: JSON plus comments.
fn options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// `text` with `merge` applied, comments kept; `Err`: why the text is not JSON with comments,
/// or `merge`'s refusal.
pub(super) fn merge(
    text: &str,
    merge: impl FnOnce(&mut Map<String, Value>) -> Result<()>,
) -> std::result::Result<String, String> {
    let root = CstRootNode::parse(text, &options()).map_err(|e| e.to_string())?;
    let (Some(obj), Some(Value::Object(old))) = (root.object_value(), root.to_serde_value()) else {
        return Err("the top level is not an object".into());
    };
    let mut new = old.clone();
    merge(&mut new).map_err(|e| e.to_string())?;
    if new == old {
        return Ok(text.to_string());
    }
    add(&obj, &old, &new);
    Ok(root.to_string())
}

/// Write into `obj` (whose value was `old`) what `new` adds or changes.
fn add(obj: &CstObject, old: &Map<String, Value>, new: &Map<String, Value>) {
    for (key, value) in new {
        let before = old.get(key);
        if before == Some(value) {
            continue;
        }
        match (before, value, obj.object_value(key), obj.array_value(key)) {
            (None, v, ..) => _ = obj.append(key, input(v)),
            (Some(Value::Object(o)), Value::Object(n), Some(child), _) => add(&child, o, n),
            (Some(Value::Array(o)), Value::Array(n), _, Some(array)) if n.starts_with(o) => {
                for v in &n[o.len()..] {
                    array.append(input(v));
                }
            }
            (Some(_), v, ..) => _ = obj.get(key).map(|prop| prop.set_value(input(v))),
        }
    }
}

fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(a) => CstInputValue::Array(a.iter().map(input).collect()),
        Value::Object(o) => {
            CstInputValue::Object(o.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn comments_survive_and_additions_land() {
        let text = "{\n  // my theme\n  \"theme\": \"Dracula\", /* inline */\n  \"hooks\": {\n    \"BeforeTool\": [] // none yet\n  }\n}\n";
        let out = merge(text, |doc| {
            doc["hooks"]["BeforeTool"]
                .as_array_mut()
                .unwrap()
                .push(json!({"matcher": "x"}));
            doc.insert("mcpServers".into(), json!({"coord": {"command": "coord"}}));
            Ok(())
        })
        .unwrap();
        for comment in ["// my theme", "/* inline */", "// none yet"] {
            assert!(out.contains(comment), "{out}");
        }
        let root = CstRootNode::parse(&out, &options()).unwrap();
        let back = root.to_serde_value().expect(&out);
        assert_eq!(back["hooks"]["BeforeTool"][0]["matcher"], "x");
        assert_eq!(back["mcpServers"]["coord"]["command"], "coord");
        assert_eq!(back["theme"], "Dracula");
        assert_eq!(merge(&out, |_| Ok(())).unwrap(), out);
    }

    #[test]
    fn trailing_commas_are_refused_as_the_client_refuses_them() {
        let refused = merge("{\"a\": 1,}", |_| Ok(())).unwrap_err();
        assert!(refused.contains("comma"), "{refused}");
    }
}
