//! The paths a Codex `apply_patch` envelope touches.

/// How a path is touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// `*** Add File:`
    Add,
    /// `*** Update File:`
    Update,
    /// `*** Delete File:`
    Delete,
    /// `*** Move to:` (the new name of the file updated just before)
    MoveTo,
}

const HEADERS: [(&str, Change); 4] = [
    ("*** Add File:", Change::Add),
    ("*** Update File:", Change::Update),
    ("*** Delete File:", Change::Delete),
    ("*** Move to:", Change::MoveTo),
];

/// Every path named by a header line, in order, with how it is touched (duplicates kept).
pub fn changes(patch: &str) -> Vec<(Change, String)> {
    let mut out = Vec::new();
    for line in patch.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let line = line.trim_start_matches([' ', '\t']);
        for (prefix, change) in HEADERS {
            if let Some(rest) = line.strip_prefix(prefix) {
                let path = rest.trim_matches([' ', '\t', '\r']);
                if !path.is_empty() {
                    out.push((change, path.to_string()));
                }
                break;
            }
        }
    }
    out
}

/// The distinct paths a patch touches, old and new names alike, in first-seen order.
pub fn paths(patch: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (_, p) in changes(patch) {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_header_kind_is_read() {
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** Update File: b.rs\n*** Move to: c.rs\n@@\n-x\n+y\n*** Delete File: d.md\n*** End Patch\n";
        assert_eq!(
            changes(patch),
            vec![
                (Change::Add, "a.txt".to_string()),
                (Change::Update, "b.rs".to_string()),
                (Change::MoveTo, "c.rs".to_string()),
                (Change::Delete, "d.md".to_string()),
            ]
        );
    }

    #[test]
    fn added_text_that_looks_like_a_header_is_content() {
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+*** Delete File: b.txt\n *** Update File: c.txt\n*** End Patch";
        // The context line ` *** Update File: c.txt` starts with a blank: hunk context, but
        // leading blanks are tolerated for headers, so it counts; the `+` line never does.
        assert_eq!(paths(patch), vec!["a.txt".to_string(), "c.txt".to_string()]);
    }

    #[test]
    fn crlf_and_padding_are_trimmed() {
        let patch = "*** Begin Patch\r\n*** Update File:   odd name [1].txt  \r\n*** End Patch\r\n";
        assert_eq!(paths(patch), vec!["odd name [1].txt".to_string()]);
    }

    fn path_strategy() -> impl Strategy<Value = String> {
        // Odd but plausible paths: spaces, unicode, dots, dashes, nested folders, `..`.
        "[a-zA-Z0-9 ._\\-é漢/]{0,30}[a-zA-Z0-9_é漢]"
            .prop_map(|s| s.trim_matches([' ', '\t']).to_string())
            .prop_filter("non-empty", |s| !s.is_empty())
    }

    fn op_strategy() -> impl Strategy<Value = (u8, String, String, Vec<String>)> {
        (
            0u8..4,
            path_strategy(),
            path_strategy(),
            prop::collection::vec("[ -~]{0,20}", 0..4),
        )
    }

    proptest! {
        /// A patch built from random operations yields exactly the paths of its headers, with
        /// `\n` or `\r\n` line ends, whatever the hunk lines say.
        #[test]
        fn generated_patches_round_trip(ops in prop::collection::vec(op_strategy(), 0..6), crlf in any::<bool>()) {
            let mut lines = vec!["*** Begin Patch".to_string()];
            let mut expected = Vec::new();
            for (kind, a, b, body) in &ops {
                match kind {
                    0 => {
                        lines.push(format!("*** Add File: {a}"));
                        expected.push((Change::Add, a.clone()));
                        lines.extend(body.iter().map(|l| format!("+{l}")));
                    }
                    1 => {
                        lines.push(format!("*** Update File: {a}"));
                        expected.push((Change::Update, a.clone()));
                        lines.push("@@".into());
                        lines.extend(body.iter().map(|l| format!("-{l}")));
                        lines.extend(body.iter().map(|l| format!(" {l}").trim_end_matches([' ', '\t']).to_string()).filter(|l| !l.trim_start().starts_with("***")));
                    }
                    2 => {
                        lines.push(format!("*** Update File: {a}"));
                        lines.push(format!("*** Move to: {b}"));
                        expected.push((Change::Update, a.clone()));
                        expected.push((Change::MoveTo, b.clone()));
                        lines.extend(body.iter().map(|l| format!("+{l}")));
                    }
                    _ => {
                        lines.push(format!("*** Delete File: {a}"));
                        expected.push((Change::Delete, a.clone()));
                    }
                }
            }
            lines.push("*** End Patch".into());
            let sep = if crlf { "\r\n" } else { "\n" };
            let patch = lines.join(sep);
            prop_assert_eq!(changes(&patch), expected);
        }

        /// Any text at all: never a panic, never an empty or padded path.
        #[test]
        fn arbitrary_text_never_panics(text in "(?s).{0,400}") {
            for (_, p) in changes(&text) {
                prop_assert!(!p.is_empty());
                prop_assert_eq!(p.trim_matches([' ', '\t']), p.as_str());
                prop_assert!(!p.contains('\n'));
                prop_assert!(!p.ends_with('\r'));
            }
        }
    }
}
