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
    // Looked up in a set: a patch may name hundreds of thousands of files.
    let mut seen = std::collections::HashSet::new();
    (headers(patch).filter(|p| seen.insert(*p)))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_header_names_a_path() {
        for (patch, want) in [
            (
                "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** Update File: b.rs\n*** Move to: c.rs\n@@\n-x\n+y\n*** Delete File: d.md\n*** End Patch\n",
                &["a.txt", "b.rs", "c.rs", "d.md"][..],
            ),
            // The context line ` *** Update File: c.txt` starts with a blank: hunk context, but
            // leading blanks are tolerated for headers, so it counts; the `+` line never does.
            (
                "*** Begin Patch\n*** Add File: a.txt\n+*** Delete File: b.txt\n *** Update File: c.txt\n*** End Patch",
                &["a.txt", "c.txt"],
            ),
            // CRLF and padding are trimmed.
            (
                "*** Begin Patch\r\n*** Update File:   odd name [1].txt  \r\n*** End Patch\r\n",
                &["odd name [1].txt"],
            ),
        ] {
            assert_eq!(paths(patch), want, "{patch:?}");
        }
    }

    /// A patch naming a hundred thousand files (a few MiB, far below the payload cap) is read
    /// at once: the hook must not hang its client for minutes comparing every path with every
    /// other (bounded as the hostile-file tests bound a command, not timed).
    #[test]
    fn a_patch_naming_many_files_is_read_without_comparing_each_pair() {
        let n = 100_000;
        let mut patch = String::from("*** Begin Patch\n");
        for i in 0..n {
            patch.push_str(&format!(
                "*** Add File: d/f{i}\n+x\n*** Update File: d/f{i}\n"
            ));
        }
        patch.push_str("*** End Patch\n");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(paths(&patch)));
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the paths of a large patch were not read within 10 s");
        assert_eq!(got.len(), n);
        assert_eq!(got[n - 1], format!("d/f{}", n - 1));
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
