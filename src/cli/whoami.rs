//! `coord whoami`: the agent coord would act as here, and how it knows.

use clap::Args;

use coord::ExitCode;

use super::Ctx;

/// Print the agent coord acts as here, and how it knows
///
/// `flag` (-a), `env` (COORD_AGENT), `session` (the agent client session this runs in: its
/// hook registered the client process, or the client's session variable says so), or `none`.
///
///   coord whoami
///   coord whoami --json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct WhoamiArgs {}

pub fn run(_args: WhoamiArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let explicit = ctx.agent_explicit()?;
    // The session is looked up only when no agent is given.
    let s = ctx.session();
    let (agent, source) = match (&explicit, s) {
        (Some(a), _) if ctx.agent_flag => (Some(a.id()), "flag"),
        (Some(a), _) => (Some(a.id()), "env"),
        (None, Some(s)) => (Some(s.agent.id()), "session"),
        (None, None) => (None, "none"),
    };
    let doc = serde_json::json!({
        "agent": agent,
        "source": source,
        "client": s.map(|s| s.client.as_str()),
        "session_id": s.map(|s| &s.id),
        "via": s.map(|s| &s.via),
        "client_process": s.and_then(|s| s.process),
    });
    ctx.emit(&doc, || match (agent, s) {
        (Some(a), None) if ctx.agent_flag => format!("{a} (from -a)"),
        (Some(a), None) => format!("{a} (from COORD_AGENT)"),
        (Some(a), Some(s)) => {
            let process = s.process.map(|p| format!("; its locks follow client process {}", p.pid));
            let (id, client, via) = (&s.id, s.client.as_str(), &s.via);
            let process = process.unwrap_or_default();
            format!("{a} (session {id} of {client}, from the {via}{process})")
        }
        _ => "no agent: give one with `-a NAME` or `COORD_AGENT=NAME`, or run coord inside an agent client's session".to_string(),
    });
    Ok(ExitCode::Success)
}
