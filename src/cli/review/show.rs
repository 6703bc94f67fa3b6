//! `coord review show`: the tracker, as a table or JSON.

use clap::Args;

use coord::ExitCode;
use coord::review::Action;
use coord::review::rules::{Reviews, Shown};

use crate::cli::Ctx;
use crate::cli::output::{self, Cell};

/// Show a tracker: meta, current state, steps, issues, agreements
///
///   coord review show api
///   coord review show api --json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub(super) struct ShowArgs {
    /// The topic
    topic: String,
}

pub(super) fn show(a: ShowArgs, ctx: &Ctx, reviews: &Reviews) -> anyhow::Result<ExitCode> {
    let shown = reviews.show(&a.topic)?;
    if ctx.json {
        output::json(&shown);
    } else if !ctx.quiet {
        output::line(&render_show(&shown, output::color_enabled()));
    }
    Ok(ExitCode::Success)
}

fn render_show(s: &Shown, color: bool) -> String {
    let v = &s.view;
    let mut out = Vec::new();
    out.push(format!(
        "{} {}",
        output::title(&format!("Review {}", s.topic), color),
        output::clean(&s.tracker)
    ));
    let participants: Vec<String> = v
        .meta
        .participants
        .iter()
        .map(|p| match &p.role {
            Some(r) => format!("{} ({r})", p.name),
            None => p.name.clone(),
        })
        .collect();
    for (k, val) in [
        ("Target", v.meta.target.clone()),
        ("Status", Some(v.meta.status.clone())),
        ("Participants", Some(participants.join(", "))),
        ("Created", v.meta.created.clone()),
        ("Last updated", v.meta.last_updated.clone()),
        ("Next actor", Some(v.current.next_actor.clone())),
        ("Next action", v.current.next_action.clone()),
    ] {
        out.push(format!(
            "  {k:<13} {}",
            output::clean(val.as_deref().unwrap_or("-"))
        ));
    }
    out.push(String::new());
    out.push(output::title("Steps", color));
    if let Some(note) = &v.steps_note {
        out.push(format!("  {}", output::clean(note)));
    }
    let rows = v
        .steps
        .iter()
        .map(|st| {
            vec![
                Cell::plain(format!("{:02}", st.number)),
                Cell::plain(&st.actor),
                Cell::plain(st.status.as_str()),
                Cell::opt(st.action.map(Action::as_str)),
                Cell::opt(st.summary.as_deref()),
            ]
        })
        .collect();
    out.push(output::table(
        &["STEP", "ACTOR", "STATUS", "ACTION", "SUMMARY"],
        rows,
        color,
    ));
    out.push(String::new());
    out.push(output::title("Issues", color));
    if v.issues.is_empty() {
        out.push("  No issues".into());
    } else {
        let rows = v
            .issues
            .iter()
            .map(|i| {
                vec![
                    Cell::plain(&i.id),
                    Cell::plain(i.severity.as_str()),
                    Cell::plain(i.status.as_str()),
                    Cell::plain(&i.title),
                    Cell::opt(i.resolution.as_deref()),
                ]
            })
            .collect();
        out.push(output::table(
            &["ID", "SEVERITY", "STATUS", "TITLE", "RESOLUTION"],
            rows,
            color,
        ));
    }
    if !v.agreements.is_empty() {
        out.push(String::new());
        out.push(output::title("Agreements", color));
        for ag in &v.agreements {
            let mark = if ag.disputed { "[DISPUTED] " } else { "" };
            out.push(format!("  - {mark}{}", output::clean(&ag.text)));
        }
    }
    out.join("\n")
}
