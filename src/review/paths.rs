//! The seed's naming conventions for the files of a review: review files, response files and
//! changelogs, with `YYYY_MM_DD` dates and snake_case parts.

use std::path::{Path, PathBuf};

use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::layout;

crate::record::names! {
    /// Which kind of file.
    Kind {
        Review = "review": "`reviews/llms/{llm}/{topic}_review_{date}.md`.",
        Response = "response": "`review-responses/llms/{llm}/{topic}-review/{NN}_{action}_to_{other}_{description}_{date}.md`.",
        Changelog = "changelog": "`changelog/{llm1}_{llm2}_{topic}_{description}_{date}.md`.",
    }
}

/// The parts of a conventional file name; ids already validated and lower-case.
#[derive(Debug, Clone)]
pub struct NameParts<'a> {
    /// Which kind.
    pub kind: Kind,
    /// The review topic.
    pub topic: &'a str,
    /// The agent writing the file.
    pub llm: &'a str,
    /// The other agent (responses, changelogs).
    pub to: Option<&'a str>,
    /// The step number (responses).
    pub step: Option<u32>,
    /// The action (responses).
    pub action: Option<&'a str>,
    /// A few words (responses, changelogs), snake_cased here.
    pub description: Option<&'a str>,
}

/// Lower-case, with every run of characters other than `a-z` and `0-9` turned into one `_`.
pub fn snake_case(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_string()
}

/// The conventional path of a file under the metadata folder `meta`, dated `now`.
pub fn conventional(meta: &Path, p: &NameParts<'_>, now: &Timestamp) -> Result<PathBuf> {
    let date = now.format("%Y_%m_%d").to_string();
    let need = |v: Option<&str>, flag: &str| {
        v.map(snake_case).filter(|s| !s.is_empty()).ok_or_else(|| {
            Error::bad_input(format!("a {} file name needs `{flag}`", p.kind.as_str()))
        })
    };
    let (to, description) = (need(p.to, "--to B"), need(p.description, "--description D"));
    Ok(match p.kind {
        Kind::Review => layout::review_file(meta, p.llm, p.topic, &date),
        Kind::Response => {
            let need_step = || Error::bad_input("a response file name needs `--step NN`");
            let (step, action) = (p.step.ok_or_else(need_step)?, need(p.action, "--action X")?);
            let (to, d) = (to?, description?);
            layout::review_response(meta, p.llm, p.topic, step, &action, &to, &d, &date)
        }
        Kind::Changelog => {
            let (to, d) = (to?, description?);
            layout::review_changelog(meta, p.llm, &to, p.topic, &d, &date)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changelog_names_and_snake_case() {
        let now = crate::clock::parse_timestamp("2026-01-28T10:00:00+01:00").unwrap();
        let mut p = NameParts {
            kind: Kind::Changelog,
            topic: "rfd",
            llm: "claude",
            to: Some("codex"),
            step: None,
            action: None,
            description: Some("Agree with most points!"),
        };
        let want = "m/changelog/claude_codex_rfd_agree_with_most_points_2026_01_28.md";
        let got = conventional(Path::new("m"), &p, &now).unwrap();
        assert_eq!(got, Path::new(want));
        p.description = Some("!!!");
        assert!(conventional(Path::new("m"), &p, &now).is_err());
        let snaked = ["Align design-docs, v2", "__x__", "../.."].map(snake_case);
        assert_eq!(snaked, ["align_design_docs_v2", "x", ""]);
    }
}
