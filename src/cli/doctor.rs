//! `coord doctor [DIR] [--json] [--hold DUR]`: what the folder is on and how coord keeps
//! mutual exclusion there.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde::Serialize;

use coord::arbiter::doctor::{self, Diagnosis};
use coord::client::Client;
use coord::error::Refusal;
use coord::workspace::Workspace;
use coord::{Error, ExitCode, clock};

use super::init::ClientTrust;
use super::{Ctx, output};

/// Report what the folder is on and how coord keeps exclusion there
///
/// The filesystem, whether kernel locks and folder events cross machines, the arbitration
/// coord uses, its re-check interval, the clock skew between this machine and the folder, a sync tool or
/// conflict copies in the folder, and whether each wired client runs coord's hooks here.
///
///   coord doctor
///   coord doctor --json | jq .arbitration
///
/// --hold DUR takes the workspace mutex and keeps it for DUR, as a stalled process would
/// (for testing a shared folder: others overtake it after its lease, and it learns so).
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct DoctorArgs {
    /// The workspace folder (like `--dir`)
    #[arg(id = "workdir", value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Hold the workspace mutex for DUR, then say whether it was kept (exit 3 if it was lost)
    #[arg(long, value_name = "DUR")]
    hold: Option<String>,
}

/// The diagnosis and, per wired client, whether it runs the hooks.
#[derive(Serialize)]
struct Report<'a> {
    #[serde(flatten)]
    diag: &'a Diagnosis,
    clients: Vec<ClientTrust>,
}

pub fn run(args: DoctorArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let ws = ctx.workspace(args.dir.as_deref())?;
    if let Some(hold) = &args.hold {
        let d = clock::parse_duration(hold)?;
        return hold_mutex(&ws, d, ctx);
    }
    let diag = doctor::diagnose(ws.root(), &ws.ensure_state_dir()?)?;
    let wired = Client::ALL.iter().filter(|c| c.adapter().wired(ws.root()));
    let clients = wired.map(|c| ClientTrust::of(*c, ws.root())).collect();
    let report = Report {
        diag: &diag,
        clients,
    };
    ctx.emit(&report, || {
        let mut lines = vec![render(&diag)];
        for c in &report.clients {
            lines.push(format!("client:        {}", c.line()));
            lines.push(format!("git in shell:  {}", c.git_line()));
        }
        lines.join("\n")
    });
    Ok(ExitCode::Success)
}

fn render(d: &Diagnosis) -> String {
    let local = d.class == coord::arbiter::FsClass::Local;
    let crossing = |yes: bool| match (yes, local) {
        (true, true) => "reach every process (a local disk: one kernel)",
        (true, false) => "cross machines",
        (false, _) => "do not cross machines",
    };
    // How coord finds the lock files of a folder (`exact_lookups` in `--json`), in words.
    let lookups = if d.exact_lookups {
        "by the folder's listing and by each known agent's lock file name (a listing here may \
         lag a lock another machine just made; nothing to do)"
    } else {
        "by the folder's listing, which is always current here (nothing to do)"
    };
    let reads = match (d.reads_past_cache, local) {
        (true, true) => "as the disk has them (one kernel)",
        (true, false) => "past this machine's cache, as the server has them",
        (false, _) => "from this machine's cache (it cannot be bypassed here)",
    };
    let lease = (d.lease_ms).map_or(String::new(), |l| format!(", lease {l} ms"));
    let (arbitration, source) = (d.arbitration.as_str(), &d.arbitration_source);
    let arbitration = format!("{arbitration} ({source}){lease}");
    let fs = format!("{} ({:?}, magic {})", d.filesystem, d.class, d.magic).to_lowercase();
    let recheck = format!("every {} ms", d.recheck_ms);
    let skew = d.clock_skew_ms.map_or_else(
        || "unknown (the folder cannot be written)".into(),
        |ms| format!("{ms:+} ms (this clock minus the folder's)"),
    );
    let sync = (d.sync_tool.as_ref()).map_or_else(
        || "none found".into(),
        |s| format!("{} ({})", s.tool, s.marker),
    );
    let fields = [
        ("folder", d.root.as_str()),
        ("filesystem", &fs),
        ("kernel locks", crossing(d.kernel_locks_cross_machines)),
        ("events", crossing(d.events_cross_machines)),
        ("arbitration", &arbitration),
        ("re-check", &recheck),
        ("lock lookups", lookups),
        ("record reads", reads),
        ("clock skew", &skew),
        ("sync tool", &sync),
    ];
    let conflicts = (d.conflict_copies.iter()).map(|c| ("conflict copy", c.as_str()));
    let mut out: Vec<String> = (fields.into_iter().chain(conflicts))
        .map(|(name, value)| format!("{:15}{value}", format!("{name}:")))
        .collect();
    out.extend(d.warnings.iter().map(|w| format!("warning: {w}")));
    out.join("\n")
}

fn hold_mutex(ws: &Workspace, d: Duration, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let started = std::time::Instant::now();
    let guard = ws.lock_mutex()?;
    if !ctx.quiet && !ctx.json {
        let (how, d) = (ws.policy()?.arbitration.as_str(), clock::format_duration(d));
        output::line(&format!("holding the workspace mutex ({how}) for {d}"));
    }
    std::thread::sleep(d);
    let kept = guard.still_held();
    drop(guard);
    let held_ms = started.elapsed().as_millis() as u64;
    let doc = serde_json::json!({ "held_ms": held_ms, "kept": kept });
    if !kept {
        if ctx.json {
            output::json(&doc);
        }
        return Err(Error::refused(Refusal::MutexFenced,
            "the workspace mutex was taken over while this process held it past its lease (fenced: nothing it decided counts)",
            None,
        )
        .into());
    }
    ctx.emit(&doc, || "kept it to the end".into());
    Ok(ExitCode::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lookups_line_says_what_coord_does_in_words() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = doctor::diagnose(dir.path(), dir.path()).unwrap();
        for (exact, says) in [(false, "always current here"), (true, "may lag a lock")] {
            d.exact_lookups = exact;
            let text = render(&d);
            let line = text
                .lines()
                .find(|l| l.starts_with("lock lookups:"))
                .unwrap();
            assert!(line.contains(says), "{line}");
            assert!(line.ends_with("nothing to do)"), "{line}");
            assert!(!text.contains("exact lookups"), "{text}");
        }
    }
}
