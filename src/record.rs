//! The seed's `key: value` text, as used by presence, lock and handshake files, and its words.

/// An enum of the seed's names, with `NAMES` in order, `parse`, `as_str` (its JSON) and `expected`.
macro_rules! names {
    ($(#[$doc:meta])* $name:ident { $($var:ident = $s:literal: $vdoc:literal,)+ }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
        pub enum $name { $(#[doc = $vdoc] #[serde(rename = $s)] $var,)+ }

        impl $name {
            /// Every name, in the seed's order.
            pub const NAMES: &'static [&'static str] = &[$($s),+];

            /// Read a name (case is ignored).
            pub fn parse(text: &str) -> Option<$name> {
                let text = text.trim();
                [$($name::$var),+].into_iter().find(|v| v.as_str().eq_ignore_ascii_case(text))
            }

            /// The name written in files.
            pub fn as_str(self) -> &'static str {
                $name::NAMES[self as usize]
            }

            /// Read a name, or say which names were expected.
            pub fn expected(text: &str) -> std::result::Result<$name, String> {
                $name::parse(text).ok_or_else(|| {
                    format!("`{text}`, expected one of {}", $name::NAMES.join(", "))
                })
            }
        }
    };
}
pub(crate) use names;

/// An ordered list of `key: value` entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    entries: Vec<(String, String)>,
}

impl Record {
    /// An empty record.
    pub fn new() -> Record {
        Record::default()
    }

    /// Parse the text of a file. Never fails: what cannot be read as `key: value` is skipped.
    pub fn parse(text: &str) -> Record {
        let entries = text
            .lines()
            .filter_map(|line| {
                let (key, value) = line.split_once(':')?;
                let key = key.trim().trim_start_matches('\u{feff}');
                if key.is_empty() || key.contains(char::is_whitespace) {
                    return None;
                }
                Some((key.to_string(), value.trim().to_string()))
            })
            .collect();
        Record { entries }
    }

    /// The value of the first entry named `key` (case-insensitive), if any.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }

    /// The value of `key` when present and not empty.
    pub fn get_nonempty(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }

    /// Set `key` to `value`: the first entry of that name keeps its place (and its spelling),
    /// otherwise the entry is appended.
    pub fn set(&mut self, key: &str, value: impl AsRef<str>) {
        let value = one_line(value.as_ref());
        match self
            .entries
            .iter_mut()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
        {
            Some(entry) => entry.1 = value,
            None => self.entries.push((key.to_string(), value)),
        }
    }

    /// [`Record::set`] when `value` is given.
    pub fn set_opt(&mut self, key: &str, value: Option<impl std::fmt::Display>) {
        if let Some(value) = value {
            self.set(key, value.to_string());
        }
    }

    /// Remove every entry named `key`.
    pub fn remove(&mut self, key: &str) {
        self.entries.retain(|(k, _)| !k.eq_ignore_ascii_case(key));
    }

    /// The entries, in order.
    pub fn entries(&self) -> &[(String, String)] {
        &self.entries
    }

    /// The file text: `key: value\n` per entry.
    pub fn render(&self) -> String {
        self.entries
            .iter()
            .map(|(k, v)| format!("{k}: {v}\n"))
            .collect()
    }
}

/// Fold a value onto one line and drop control characters.
pub fn one_line(value: &str) -> String {
    let spaced = value.replace(['\n', '\r', '\t'], " ");
    spaced.replace(char::is_control, "").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_seed_example() {
        let r = Record::parse("Agent: Claude\nlocked_at: 2026-01-28T01:00:00\nfile: PROTOKOL.md\n");
        assert_eq!(r.get("agent"), Some("Claude"));
        assert_eq!(r.get("locked_at"), Some("2026-01-28T01:00:00"));
        assert_eq!(r.get("file"), Some("PROTOKOL.md"));
    }

    #[test]
    fn lenient_reading() {
        let r = Record::parse("\u{feff}Agent:Claude\r\ngarbage line\n  status :  ACTIVE  \n: x\n");
        assert_eq!(r.get("Agent"), Some("Claude"));
        assert_eq!(r.get("STATUS"), Some("ACTIVE"));
        assert_eq!(r.entries().len(), 2);
    }

    #[test]
    fn set_keeps_order_and_spelling() {
        let mut r = Record::parse("Agent: A\nstatus: ACTIVE\nextra: 1\n");
        r.set("agent", "B");
        r.set("new", "line1\nkey: injected");
        assert_eq!(
            r.render(),
            "Agent: B\nstatus: ACTIVE\nextra: 1\nnew: line1 key: injected\n"
        );
        r.remove("status");
        assert_eq!(r.get("status"), None);
    }
}
