//! The seed's naming conventions for the files of a review: review files, response files and
//! changelogs, with `YYYY_MM_DD` dates and snake_case parts.
//!
//! The names themselves are built in [`crate::layout`]; this module fills in their parts:
//! agent ids, the step number and action, a snake_case description, and today's date from
//! [`crate::clock::now`].

use std::path::{Path, PathBuf};

use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::layout;

/// Which kind of file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `reviews/llms/{llm}/{topic}_review_{date}.md`.
    Review,
    /// `review-responses/llms/{llm}/{topic}-review/{NN}_{action}_to_{other}_{description}_{date}.md`.
    Response,
    /// `changelog/{llm1}_{llm2}_{topic}_{description}_{date}.md`.
    Changelog,
}

impl Kind {
    /// Every kind's name.
    pub const NAMES: [&'static str; 3] = ["review", "response", "changelog"];

    /// Read a kind name.
    pub fn parse(text: &str) -> Option<Kind> {
        match text {
            "review" => Some(Kind::Review),
            "response" => Some(Kind::Response),
            "changelog" => Some(Kind::Changelog),
            _ => None,
        }
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

/// `YYYY_MM_DD`.
pub fn file_date(now: &Timestamp) -> String {
    now.format("%Y_%m_%d").to_string()
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
    while out.ends_with('_') {
        out.pop();
    }
    out
}

/// The conventional path of a file, under the metadata folder `meta`.
///
/// # Errors
///
/// [`Error::BadInput`] when a part the kind needs is missing or empty once snake_cased.
pub fn conventional(meta: &Path, parts: &NameParts<'_>, now: &Timestamp) -> Result<PathBuf> {
    let date = file_date(now);
    let need = |v: Option<&str>, flag: &str| -> Result<String> {
        v.map(snake_case).filter(|s| !s.is_empty()).ok_or_else(|| {
            Error::bad_input(format!(
                "a {} file name needs `{flag}`",
                kind_name(parts.kind)
            ))
        })
    };
    Ok(match parts.kind {
        Kind::Review => layout::review_file(meta, parts.llm, parts.topic, &date),
        Kind::Response => {
            let step = parts
                .step
                .ok_or_else(|| Error::bad_input("a response file name needs `--step NN`"))?;
            layout::review_response(
                meta,
                parts.llm,
                parts.topic,
                step,
                &need(parts.action, "--action X")?,
                &need(parts.to, "--to B")?,
                &need(parts.description, "--description D")?,
                &date,
            )
        }
        Kind::Changelog => layout::review_changelog(
            meta,
            parts.llm,
            &need(parts.to, "--to B")?,
            parts.topic,
            &need(parts.description, "--description D")?,
            &date,
        ),
    })
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Review => "review",
        Kind::Response => "response",
        Kind::Changelog => "changelog",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_names() {
        let now = crate::clock::parse_timestamp("2026-01-28T10:00:00+01:00").unwrap();
        let meta = Path::new(".metadata");
        let mut p = NameParts {
            kind: Kind::Review,
            topic: "regional-federalism-design",
            llm: "claude",
            to: Some("codex"),
            step: Some(2),
            action: Some("response"),
            description: Some("Agree with most points!"),
        };
        assert_eq!(
            conventional(meta, &p, &now).unwrap(),
            Path::new(
                ".metadata/reviews/llms/claude/regional-federalism-design_review_2026_01_28.md"
            )
        );
        p.kind = Kind::Response;
        assert_eq!(
            conventional(meta, &p, &now).unwrap(),
            Path::new(
                ".metadata/review-responses/llms/claude/regional-federalism-design-review/02_response_to_codex_agree_with_most_points_2026_01_28.md"
            )
        );
        p.kind = Kind::Changelog;
        assert_eq!(
            conventional(meta, &p, &now).unwrap(),
            Path::new(
                ".metadata/changelog/claude_codex_regional-federalism-design_agree_with_most_points_2026_01_28.md"
            )
        );
        p.description = Some("!!!");
        assert!(conventional(meta, &p, &now).is_err());
    }

    #[test]
    fn snake() {
        assert_eq!(snake_case("Align design-docs, v2"), "align_design_docs_v2");
        assert_eq!(snake_case("__x__"), "x");
        assert_eq!(snake_case("../.."), "");
    }
}
