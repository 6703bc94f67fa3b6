//! `coord whoami`: the agent coord would act as here, and how it knows.

use clap::Args;
use serde::Serialize;

use coord::ExitCode;
use coord::identity::ClientProcess;

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

/// `coord whoami --json`.
#[derive(Debug, Default, Serialize)]
struct Whoami {
    agent: Option<String>,
    /// `flag`, `env`, `session` or `none`.
    source: &'static str,
    /// The client, its session id, which signal named it (`process tree`, `env VAR`) and the
    /// process locks taken here follow: for `session`.
    client: Option<&'static str>,
    session_id: Option<String>,
    via: Option<String>,
    client_process: Option<ClientProcess>,
}

pub fn run(_args: WhoamiArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let me = match (ctx.agent_explicit()?, ctx.session()) {
        (Some(a), _) => Whoami {
            agent: Some(a.id().to_string()),
            source: if ctx.agent_flag { "flag" } else { "env" },
            ..Default::default()
        },
        (None, Some(s)) => Whoami {
            agent: Some(s.agent.id().to_string()),
            source: "session",
            client: Some(s.client.as_str()),
            session_id: Some(s.id.clone()),
            via: Some(s.via.clone()),
            client_process: s.process,
        },
        (None, None) => Whoami {
            source: "none",
            ..Default::default()
        },
    };
    ctx.emit(&me, || match (me.source, &me.agent) {
        ("flag", Some(a)) => format!("{a} (from -a)"),
        ("env", Some(a)) => format!("{a} (from COORD_AGENT)"),
        ("session", Some(a)) => {
            let process = me.client_process.map(|p| p.pid);
            let process = process.map(|p| format!("; its locks follow client process {p}"));
            format!(
                "{a} (session {} of {}, from the {}{})",
                me.session_id.as_deref().unwrap_or("?"),
                me.client.unwrap_or("?"),
                me.via.as_deref().unwrap_or("?"),
                process.unwrap_or_default(),
            )
        }
        _ => "no agent: give one with `-a NAME` or `COORD_AGENT=NAME`, or run coord inside an agent client's session".to_string(),
    });
    Ok(ExitCode::Success)
}
