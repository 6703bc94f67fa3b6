//! The paths a Codex `apply_patch` envelope touches.

/// The header lines that name a path (`Move to:`: the new name of the file updated before).
const HEADERS: [&str; 4] = [
    "*** Add File:",
    "*** Update File:",
    "*** Delete File:",
    "*** Move to:",
];

/// Every path named by a header line, in order (duplicates kept).
fn headers(patch: &str) -> impl Iterator<Item = &str> {
    patch.split('\n').filter_map(|line| {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let line = line.trim_start_matches([' ', '\t']);
        let rest = HEADERS.iter().find_map(|h| line.strip_prefix(h))?;
        Some(rest.trim_matches([' ', '\t', '\r'])).filter(|p| !p.is_empty())
    })
}

/// The distinct paths a patch touches, old and new names alike, in first-seen order.
pub fn paths(patch: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in headers(patch) {
        if !out.iter().any(|o| o == p) {
            out.push(p.to_string());
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
        let got: Vec<&str> = headers(patch).collect();
        assert_eq!(got, ["a.txt", "b.rs", "c.rs", "d.md"]);
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
                        expected.push(a.as_str());
                        lines.extend(body.iter().map(|l| format!("+{l}")));
                    }
                    1 => {
                        lines.push(format!("*** Update File: {a}"));
                        expected.push(a.as_str());
                        lines.push("@@".into());
                        lines.extend(body.iter().map(|l| format!("-{l}")));
                        lines.extend(body.iter().map(|l| format!(" {l}").trim_end_matches([' ', '\t']).to_string()).filter(|l| !l.trim_start().starts_with("***")));
                    }
                    2 => {
                        lines.push(format!("*** Update File: {a}"));
                        lines.push(format!("*** Move to: {b}"));
                        expected.push(a.as_str());
                        expected.push(b.as_str());
                        lines.extend(body.iter().map(|l| format!("+{l}")));
                    }
                    _ => {
                        lines.push(format!("*** Delete File: {a}"));
                        expected.push(a.as_str());
                    }
                }
            }
            lines.push("*** End Patch".into());
            let sep = if crlf { "\r\n" } else { "\n" };
            let patch = lines.join(sep);
            prop_assert_eq!(headers(&patch).collect::<Vec<_>>(), expected);
        }

        /// Any text at all: never a panic, never an empty or padded path.
        #[test]
        fn arbitrary_text_never_panics(text in "(?s).{0,400}") {
            for p in headers(&text) {
                prop_assert!(!p.is_empty());
                prop_assert_eq!(p.trim_matches([' ', '\t']), p);
                prop_assert!(!p.contains('\n'));
                prop_assert!(!p.ends_with('\r'));
            }
        }
    }
}
