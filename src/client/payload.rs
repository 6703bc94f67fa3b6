//! Reading a hook payload: whole when it is JSON, and as far as it can be read when it is not.
//! Reading deep nesting, a lone surrogate or a cut payload as "not JSON" would let an edit
//! through unjudged; [`Reader`] keeps what it can and says why ([`Payload::fault`]).

use serde_json::{Map, Number, Value};

/// How deep [`Reader`] builds containers; anything deeper is skipped. Every path a client's
/// tool names sits within 4 levels; serde_json itself stops at 128.
pub const MAX_DEPTH: usize = 64;

/// A payload as read.
#[derive(Debug, Clone, PartialEq)]
pub struct Payload {
    pub value: Value,
    /// Why the input is not JSON (`None`: it is, and `value` is all of it, bar containers
    /// deeper than [`MAX_DEPTH`]).
    pub fault: Option<String>,
}

/// Read a payload.
pub fn read(bytes: &[u8]) -> Result<Payload, String> {
    let mut r = Reader { b: bytes, i: 0 };
    if r.b.starts_with(b"\xEF\xBB\xBF") {
        r.i = 3;
    }
    r.ws();
    if r.peek() != Some(b'{') {
        return serde_json::from_slice(bytes)
            .map(|value| Payload { value, fault: None })
            .map_err(|e| e.to_string());
    }
    let (value, whole) = match r.value(0) {
        Ok(value) => {
            r.ws();
            (value, r.i == r.b.len())
        }
        Err(cut) => (cut.unwrap_or_else(|| Value::Object(Map::new())), false),
    };
    // Why not, in serde_json's words (read without building anything, nor a limit on nesting).
    let fault = (!whole).then(|| {
        let read = serde_json::from_slice::<serde::de::IgnoredAny>(bytes);
        read.map_or_else(|e| e.to_string(), |_| "it is not JSON".to_string())
    });
    Ok(Payload { value, fault })
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

/// Reading stopped at a fault: the container read so far, with its members read whole.
type Cut = Option<Value>;

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while self
            .peek()
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.i += 1;
        }
    }

    /// The value at the current position, `depth` containers deep.
    fn value(&mut self, depth: usize) -> Result<Value, Cut> {
        match self.peek() {
            Some(b'{' | b'[') if depth >= MAX_DEPTH => {
                self.skip().map_err(|()| None)?;
                Ok(Value::Null)
            }
            Some(b'{' | b'[') => self.container(depth + 1),
            Some(b'"') => self.string().map(Value::String).map_err(|()| None),
            Some(b't') => self.word(b"true", Value::Bool(true)),
            Some(b'f') => self.word(b"false", Value::Bool(false)),
            Some(b'n') => self.word(b"null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(None),
        }
    }

    /// The object or array at `{` or `[`, its members read at `depth`.
    fn container(&mut self, depth: usize) -> Result<Value, Cut> {
        let object = self.peek() == Some(b'{');
        let (close, mut out) = match object {
            true => (b'}', Value::Object(Map::new())),
            false => (b']', Value::Array(Vec::new())),
        };
        self.i += 1;
        self.ws();
        if self.peek() == Some(close) {
            self.i += 1;
            return Ok(out);
        }
        loop {
            self.ws();
            let key = if object {
                let key = (self.peek() == Some(b'"')).then(|| self.string().ok());
                self.ws();
                match key.flatten() {
                    Some(key) if self.peek() == Some(b':') => {
                        self.i += 1;
                        self.ws();
                        Some(key)
                    }
                    _ => return Err(Some(out)),
                }
            } else {
                None
            };
            let read = self.value(depth);
            let cut = read.is_err();
            if let Ok(v) | Err(Some(v)) = read {
                match (&mut out, key) {
                    (Value::Object(map), Some(key)) => drop(map.insert(key, v)),
                    (Value::Array(items), _) => items.push(v),
                    _ => {}
                }
            }
            self.ws();
            match self.peek() {
                _ if cut => return Err(Some(out)),
                Some(b',') => self.i += 1,
                Some(c) if c == close => {
                    self.i += 1;
                    return Ok(out);
                }
                _ => return Err(Some(out)),
            }
        }
    }

    /// A container too deep to keep, skipped whole without recursion (strings inside are
    /// passed over, so a bracket in one does not count).
    fn skip(&mut self) -> Result<(), ()> {
        let mut open = 0usize;
        loop {
            match self.peek().ok_or(())? {
                b'"' => {
                    self.string()?;
                    continue;
                }
                b'{' | b'[' => open += 1,
                b'}' | b']' => {
                    open -= 1;
                    if open == 0 {
                        self.i += 1;
                        return Ok(());
                    }
                }
                _ => {}
            }
            self.i += 1;
        }
    }

    fn word(&mut self, word: &[u8], v: Value) -> Result<Value, Cut> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(None)
        }
    }

    fn number(&mut self) -> Result<Value, Cut> {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
        {
            self.i += 1;
        }
        // A number that runs into the end of the input may be cut short.
        if self.i == self.b.len() {
            return Err(None);
        }
        std::str::from_utf8(&self.b[start..self.i])
            .ok()
            .and_then(|t| t.parse::<Number>().ok())
            .map(Value::Number)
            .ok_or(None)
    }

    /// The string at `"`; `Err` when the input ends inside it or an escape is not JSON's.
    fn string(&mut self) -> Result<String, ()> {
        self.i += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let rest = &self.b[self.i..];
            let n = memchr::memchr2(b'"', b'\\', rest).ok_or(())?;
            out.extend_from_slice(&rest[..n]);
            self.i += n + 1;
            if rest[n] == b'"' {
                return Ok(String::from_utf8_lossy(&out).into_owned());
            }
            let esc = self.peek().ok_or(())?;
            self.i += 1;
            let c = match esc {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => self.unicode()?,
                _ => return Err(()),
            };
            out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        }
    }

    /// The character of a `\uXXXX` escape (the `\u` read), with the low half of a surrogate
    /// pair that follows; a lone surrogate is U+FFFD.
    fn unicode(&mut self) -> Result<char, ()> {
        let high = self.hex4()?;
        if !(0xD800..0xDC00).contains(&high) {
            return Ok(char::from_u32(high).unwrap_or(char::REPLACEMENT_CHARACTER));
        }
        if self.b[self.i..].starts_with(b"\\u") {
            let at = self.i;
            self.i += 2;
            let low = self.hex4()?;
            if (0xDC00..0xE000).contains(&low) {
                let c = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                return Ok(char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
            // Not a pair: the next escape is read on its own.
            self.i = at;
        }
        Ok(char::REPLACEMENT_CHARACTER)
    }

    fn hex4(&mut self) -> Result<u32, ()> {
        let digits = self.b.get(self.i..self.i + 4).ok_or(())?;
        let text = std::str::from_utf8(digits).map_err(|_| ())?;
        let v = u32::from_str_radix(text, 16).map_err(|_| ())?;
        self.i += 4;
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn nested(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn a_field_nested_past_the_parsers_limit_is_skipped_and_the_rest_read() {
        let text = format!(
            r#"{{"deep":{},"tool_name":"Write","tool_input":{{"file_path":"a.md","extra":{}}}}}"#,
            nested(300),
            nested(100_000)
        );
        assert!(serde_json::from_str::<Value>(&text).is_err());
        let p = read(text.as_bytes()).unwrap();
        assert_eq!(p.fault, None);
        assert_eq!(p.value["tool_name"], "Write");
        assert_eq!(p.value["tool_input"]["file_path"], "a.md");
    }

    #[test]
    fn numbers_and_escapes_read_as_serde_json_reads_them() {
        let text = r#"{"n":[0,-0,-0.0,18446744073709551615,-9223372036854775808,1.5e-7,1E5,2.5E+3],
            "s":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "t":true, "f":false, "z":null, "e":{}, "a":[]}"#;
        let want: Value = serde_json::from_str(text).unwrap();
        let read_whole = read(text.as_bytes()).map(|p| (p.value, p.fault));
        assert_eq!(read_whole, Ok((want, None)));
        for bad in [
            r#"{"n":01}"#,
            r#"{"n":1.}"#,
            r#"{"n":--1}"#,
            r#"{"s":"\x"}"#,
            r#"{"a":[1,]}"#,
        ] {
            assert!(serde_json::from_str::<Value>(bad).is_err(), "{bad}");
            assert!(read(bad.as_bytes()).unwrap().fault.is_some(), "{bad}");
        }
    }

    /// What is read, and whether it is a fault: lone surrogates and stray bytes are read; a
    /// payload cut short keeps what was read whole, and never a string or number in part.
    #[test]
    fn what_can_be_read_is_kept() {
        let rows: [(&[u8], Value, bool); 5] = [
            (
                b"{\"a\":\"x\\ud800y\",\"b\":\"\\udc00\",\"c\":\"\\ud83d\\ude00\",\"d\":\"\xff\"}",
                json!({"a": "x\u{FFFD}y", "b": "\u{FFFD}", "c": "\u{1F600}", "d": "\u{FFFD}"}),
                false,
            ),
            (
                br#"{"hook_event_name":"PreToolUse","tool_input":{"file_path":"a.md","content":"abc"#,
                json!({"hook_event_name": "PreToolUse", "tool_input": {"file_path": "a.md"}}),
                true,
            ),
            (br#"{"tool_input":{"file_path":"src/ver"#, json!({"tool_input": {}}), true),
            (br#"{"n":12"#, json!({}), true),
            // Garbage after a whole object is a fault too.
            (br#"{"a":1} x"#, json!({"a": 1}), true),
        ];
        for (input, value, fault) in rows {
            let p = read(input).unwrap();
            assert_eq!((p.value, p.fault.is_some()), (value, fault), "{input:?}");
        }
    }

    #[test]
    fn what_is_no_object_is_not_read() {
        for bad in [&b""[..], b"x", b"not json at all", b"[1,2", b" \"{"] {
            assert!(read(bad).is_err(), "{bad:?}");
        }
        // JSON, but no object: read (the caller refuses it).
        assert_eq!(read(b"[1]").unwrap().value, json!([1]));
    }

    proptest! {
        /// Whatever serde_json reads, the reader reads alike: it only ever reads more.
        #[test]
        fn reads_what_serde_json_reads(v in json_value(), pretty: bool) {
            let doc = json!({"v": v});
            let text = if pretty {
                serde_json::to_string_pretty(&doc).unwrap()
            } else {
                serde_json::to_string(&doc).unwrap()
            };
            prop_assert_eq!(read(text.as_bytes()), Ok(Payload { value: doc, fault: None }));
        }

        /// Any bytes: never a panic, and a fault unless serde_json reads them.
        #[test]
        fn any_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256), cut in 0usize..256) {
            let mut input = b"{\"a\":".to_vec();
            input.extend(&bytes);
            input.truncate(cut.max(1));
            if let Ok(v) = serde_json::from_slice::<Value>(&input) {
                prop_assert_eq!(read(&input), Ok(Payload { value: v, fault: None }));
            } else if let Ok(p) = read(&input) {
                prop_assert!(p.value.is_object());
            }
        }
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| json!(f)),
            any::<String>().prop_map(Value::String),
        ];
        leaf.prop_recursive(6, 64, 8, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                proptest::collection::btree_map(any::<String>(), inner, 0..8)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }
}
