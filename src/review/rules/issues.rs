//! The Issues table and the Agreements Log: `coord review issue` and `coord review agree`.
//!
//! Rules: a new issue is `open` and numbered one above the highest `ISSUE-NN` in the table
//! (ids written otherwise are kept and skipped); titles, resolutions and agreements are one
//! line each and never empty; an agreement whose text starts with `[DISPUTED]` is disputed.
//! Each is one edit through [`super::store`].

use super::Reviews;
use crate::clock;
use crate::error::{Error, Result};
use crate::review::model::{Agreement, Issue, View};
use crate::review::{IssueStatus, Severity, one_line};

impl Reviews {
    /// Add an issue; returns its id (`ISSUE-NN`, one above the highest).
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] for an empty title; as [`Reviews::load`] otherwise.
    pub fn add_issue(&self, topic: &str, severity: Severity, title: &str) -> Result<Issue> {
        let title = one_line(title);
        if title.is_empty() {
            return Err(Error::bad_input("the issue title is empty"));
        }
        let (_guard, mut t) = self.begin(topic, None)?;
        let now = clock::now();
        let issue = Issue {
            id: format!("ISSUE-{:02}", next_issue_number(t.view())),
            severity,
            title,
            status: IssueStatus::Open,
            resolution: None,
        };
        t.add_issue(&issue)?;
        self.finish(&mut t, &now)?;
        Ok(issue)
    }

    /// Update an issue's status and resolution.
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] for an unknown id; as [`Reviews::load`] otherwise.
    pub fn set_issue(
        &self,
        topic: &str,
        id: &str,
        status: IssueStatus,
        resolution: Option<&str>,
    ) -> Result<Issue> {
        let resolution = resolution.map(one_line);
        let (_guard, mut t) = self.begin(topic, None)?;
        let now = clock::now();
        t.set_issue(id, status, resolution.as_deref())?;
        let issue = t
            .view()
            .issues
            .iter()
            .find(|i| i.id.eq_ignore_ascii_case(id))
            .cloned()
            .ok_or_else(|| Error::bad_input(format!("no issue `{id}`")))?;
        self.finish(&mut t, &now)?;
        Ok(issue)
    }

    /// Add a line to the Agreements Log: `- TEXT - ADOPTED`, `[DISPUTED] ` first when disputed.
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] for empty text; as [`Reviews::load`] otherwise.
    pub fn agree(
        &self,
        topic: &str,
        text: &str,
        adopted: Option<&str>,
        disputed: bool,
    ) -> Result<Agreement> {
        let mut text = one_line(text);
        let mut disputed = disputed;
        if let Some(rest) = text.strip_prefix("[DISPUTED]") {
            disputed = true;
            text = rest.trim().to_string();
        }
        if text.is_empty() {
            return Err(Error::bad_input("the agreement text is empty"));
        }
        if let Some(a) = adopted.map(one_line).filter(|a| !a.is_empty()) {
            text = format!("{text} - {a}");
        }
        let (_guard, mut t) = self.begin(topic, None)?;
        let now = clock::now();
        t.add_agreement(&text, disputed)?;
        let added = t
            .view()
            .agreements
            .last()
            .cloned()
            .ok_or_else(|| Error::Failed {
                message: "the agreement was not added".into(),
            })?;
        self.finish(&mut t, &now)?;
        Ok(added)
    }
}

/// One above the highest `ISSUE-NN` (case is ignored; other ids do not count).
fn next_issue_number(view: &View) -> u32 {
    view.issues
        .iter()
        .filter_map(|i| {
            i.id.get(..6)
                .filter(|p| p.eq_ignore_ascii_case("ISSUE-"))
                .and(i.id[6..].parse::<u32>().ok())
        })
        .max()
        .unwrap_or(0)
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::fixtures::{issue, view_with};

    #[test]
    fn issues_are_numbered_above_the_highest() {
        let open = IssueStatus::Open;
        assert_eq!(next_issue_number(&view_with(vec![], vec![])), 1);
        let v = view_with(
            vec![
                issue("ISSUE-07", open, None),
                issue("issue-03", open, None),
                issue("BUG-99", open, None),
                issue("ISSUE-x", open, None),
            ],
            vec![],
        );
        assert_eq!(next_issue_number(&v), 8);
    }
}
