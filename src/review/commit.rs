//! Closing commits: the seed's commit message format, and `git` run as a subprocess in the
//! workspace (never through a library, so the user's git configuration and hooks apply).

use std::path::Path;
use std::process::Command;

use super::IssueStatus;
use super::model::View;
use super::one_line;
use crate::error::{Error, Result};

/// The seed's commit message: `{topic} review: {summary}`, a blank line, one `- ISSUE-NN: …`
/// line per issue, and a `Co-Authored-By:` line per participant whose address is known.
pub fn commit_message(topic: &str, view: &View, summary: Option<&str>) -> String {
    let summary = summary
        .map(one_line)
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| {
            let resolved = view
                .issues
                .iter()
                .filter(|i| i.status == IssueStatus::Resolved)
                .count();
            match (view.issues.len(), resolved) {
                (0, _) => "reviewed, no issues found".to_string(),
                (n, r) if n == r => format!("{r} issue{} resolved", if r == 1 { "" } else { "s" }),
                (n, r) => format!("{r} of {n} issues resolved"),
            }
        });
    let mut msg = format!("{topic} review: {summary}\n");
    if !view.issues.is_empty() {
        msg.push('\n');
        for i in &view.issues {
            let what = i.resolution.clone().unwrap_or_else(|| i.title.clone());
            match i.status {
                IssueStatus::Wontfix => msg.push_str(&format!("- {}: {what} (wontfix)\n", i.id)),
                _ => msg.push_str(&format!("- {}: {what}\n", i.id)),
            }
        }
    }
    let authors: Vec<String> = view
        .meta
        .participants
        .iter()
        .filter_map(|p| co_author(&p.name))
        .collect();
    if !authors.is_empty() {
        msg.push('\n');
        for a in authors {
            msg.push_str(&format!("Co-Authored-By: {a}\n"));
        }
    }
    msg
}

/// `Claude <noreply@anthropic.com>` for the assistants whose vendors publish a no-reply address.
fn co_author(name: &str) -> Option<String> {
    let id = name.to_ascii_lowercase();
    let domain = match id.as_str() {
        n if n.starts_with("claude") => "anthropic.com",
        n if n.starts_with("codex") || n.starts_with("gpt") || n.starts_with("chatgpt") => {
            "openai.com"
        }
        n if n.starts_with("gemini") => "google.com",
        n if n.starts_with("copilot") => "github.com",
        _ => return None,
    };
    let mut display = name.to_string();
    if let Some(first) = display.get(..1) {
        display = first.to_ascii_uppercase() + &display[1..];
    }
    Some(format!("{display} <noreply@{domain}>"))
}

fn git(root: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("-C").arg(root);
    c
}

/// Check that `git` runs and `root` is inside a work tree (before anything is written).
pub(super) fn git_check(root: &Path) -> Result<()> {
    let out = git(root)
        .args(["rev-parse", "--is-inside-work-tree"])
        .output()
        .map_err(|e| Error::Failed {
            message: format!("cannot run `git` for `--commit`: {e}"),
        })?;
    if !out.status.success() {
        return Err(Error::bad_input(format!(
            "`--commit` needs a git work tree, and `{}` is not in one",
            root.display()
        )));
    }
    Ok(())
}

/// Stage `paths` (relative to `root`) and commit with `message`; returns the commit id.
pub(super) fn git_commit(
    root: &Path,
    paths: &[String],
    message: &str,
) -> std::result::Result<String, String> {
    let run = |cmd: &mut Command| -> std::result::Result<String, String> {
        let out = cmd.output().map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    };
    run(git(root).args(["add", "-A", "--"]).args(paths))?;
    run(git(root).args(["commit", "-q", "-m", message]))?;
    run(git(root).args(["rev-parse", "HEAD"]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::fixtures::{issue, view_with};
    use crate::review::model::Participant;

    #[test]
    fn the_seed_commit_message() {
        let mut v = view_with(
            vec![
                issue(
                    "ISSUE-01",
                    IssueStatus::Resolved,
                    Some("Updated elections design for NPV"),
                ),
                issue("ISSUE-02", IssueStatus::Wontfix, None),
            ],
            vec![],
        );
        v.meta.participants = vec![
            Participant {
                name: "claude".into(),
                role: Some("reviewer".into()),
            },
            Participant {
                name: "Codex".into(),
                role: Some("implementer".into()),
            },
            Participant {
                name: "Local".into(),
                role: None,
            },
        ];
        let m = commit_message(
            "regional-federalism-design",
            &v,
            Some("align design docs with constitution"),
        );
        assert_eq!(
            m,
            "regional-federalism-design review: align design docs with constitution\n\n\
- ISSUE-01: Updated elections design for NPV\n\
- ISSUE-02: title of ISSUE-02 (wontfix)\n\n\
Co-Authored-By: Claude <noreply@anthropic.com>\n\
Co-Authored-By: Codex <noreply@openai.com>\n"
        );
        assert!(commit_message("t", &v, None).starts_with("t review: 1 of 2 issues resolved\n"));
    }
}
