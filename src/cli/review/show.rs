//! `coord review show` and `coord review next`: a tracker, and who is next, as text.

use coord::Error;
use coord::error::Refusal;
use coord::review::Action;
use coord::review::rules::{Next, Shown};

use crate::cli::Ctx;
use crate::cli::output::{self, Cell};

pub(super) fn show(s: &Shown, ctx: &Ctx) {
    if ctx.json_or_quiet(s) {
        return;
    }
    let (v, color) = (&s.view, output::color_enabled());
    let title = output::title(&format!("Review {}", s.topic), color);
    let mut out = vec![format!("{title} {}", output::clean(&s.tracker))];
    let participants: Vec<String> = (v.meta.participants.iter())
        .map(|p| p.name.clone() + &(p.role.as_ref()).map_or(String::new(), |r| format!(" ({r})")))
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
        let val = output::clean(val.as_deref().unwrap_or("-"));
        out.push(format!("  {k:<13} {val}"));
    }
    out.extend([String::new(), output::title("Steps", color)]);
    if let Some(note) = &v.steps_note {
        out.push(format!("  {}", output::clean(note)));
    }
    let rows = (v.steps.iter()).map(|st| {
        vec![
            Cell::plain(format!("{:02}", st.number)),
            Cell::plain(&st.actor),
            Cell::plain(st.status.as_str()),
            Cell::opt(st.action.map(Action::as_str)),
            Cell::opt(st.summary.as_deref()),
        ]
    });
    let headers = ["STEP", "ACTOR", "STATUS", "ACTION", "SUMMARY"];
    out.push(output::table(&headers, rows.collect(), color));
    out.extend([String::new(), output::title("Issues", color)]);
    if v.issues.is_empty() {
        out.push("  No issues".into());
    } else {
        let rows = (v.issues.iter()).map(|i| {
            vec![
                Cell::plain(&i.id),
                Cell::plain(i.severity.as_str()),
                Cell::plain(i.status.as_str()),
                Cell::plain(&i.title),
                Cell::opt(i.resolution.as_deref()),
            ]
        });
        let headers = ["ID", "SEVERITY", "STATUS", "TITLE", "RESOLUTION"];
        out.push(output::table(&headers, rows.collect(), color));
    }
    if !v.agreements.is_empty() {
        out.extend([String::new(), output::title("Agreements", color)]);
    }
    for ag in &v.agreements {
        let mark = if ag.disputed { "[DISPUTED] " } else { "" };
        out.push(format!("  - {mark}{}", output::clean(&ag.text)));
    }
    output::line(&out.join("\n"));
}

pub(super) fn next(n: &Next, prompt_only: bool, ctx: &Ctx) -> Result<(), Error> {
    if ctx.json {
        output::json(n);
    } else if prompt_only {
        let Some(p) = &n.prompt else {
            let why = format!("review `{}` has no planned step, so no prompt", n.topic);
            let hint = format!("see `coord review show {}`", n.topic);
            return Err(Error::refused(Refusal::NoOpenStep, why, Some(hint)));
        };
        output::line(&output::clean_block(p.strip_suffix('\n').unwrap_or(p)));
    } else if !ctx.quiet {
        output::line(&next_text(n));
    }
    Ok(())
}

/// Next actor, next action, tracker, output and the handoff prompt, as `review next` prints them.
pub fn next_text(n: &Next) -> String {
    let role = (n.role.as_deref().map(|r| format!(" ({r})"))).unwrap_or_default();
    let action = match (n.action, n.step) {
        (Some(act), Some(step)) => format!("{} (step {step:02})", act.as_str()),
        _ => n.next_action.clone().unwrap_or_else(|| "-".into()),
    };
    let mut out = vec![
        format!("Next actor:  {}{role}", n.next_actor),
        format!("Next action: {action}"),
        format!("Tracker:     {}", n.tracker),
    ];
    if let Some(o) = &n.suggested_output {
        out.push(format!("Output:      {o}"));
    }
    let mut out: Vec<String> = out.iter().map(|l| output::clean(l)).collect();
    match &n.prompt {
        Some(p) => {
            out.push("\nHandoff prompt (paste it to them as is):\n".into());
            out.push(output::clean_block(p.strip_suffix('\n').unwrap_or(p)));
        }
        None => out.push(format!("\nReview `{}` is {}.", n.topic, n.status)),
    }
    out.join("\n")
}
