//! `coord init`: wire a folder for agent clients.

use std::path::{Path, PathBuf};

use clap::Args;
use clap::builder::TypedValueParser;

use coord::ExitCode;
use coord::client::Client;
use coord::client::HooksRun;
use coord::init;
use coord::workspace::Workspace;

use super::{Ctx, output};

/// Wire this folder for agent clients: hooks, MCP server, instructions for agents
///
/// Without `--client`, wires the clients installed here (their command on PATH), or, when none
/// is, Claude Code, Codex, Gemini and Copilot. Registers `coord hook CLIENT` and the `coord mcp`
/// server in each client's own files:
///   Claude Code   .claude/settings.json, .mcp.json
///   Codex CLI     .codex/hooks.json, .codex/config.toml
///   Gemini CLI    .gemini/settings.json
///   Copilot CLI   .github/hooks/coord.json, .mcp.json
///   Qwen Code     .qwen/settings.json
///   OpenCode      the plugin .opencode/plugin/coord.js, opencode.json
///   Cline CLI     the plugin .cline/plugins/coord.js
///   Cursor        .cursor/hooks.json, .cursor/mcp.json
///   Windsurf      .windsurf/hooks.json (its MCP servers are the user's own)
/// and prints, per client, whether it runs these hooks here or the step that makes it (the
/// client's own folder trust). Also creates `.coord/`, writes an instructions block for agents
/// into AGENTS.md (and CLAUDE.md, GEMINI.md, QWEN.md) between `<!-- coord:begin -->` and
/// `<!-- coord:end -->`, and coord's lines into .gitignore.
///
/// Existing files are merged, never clobbered; running it twice changes nothing. `--remove`
/// takes back exactly what init added (a file nobody changed since is put back byte for byte;
/// a file init created goes again); entries another wired client still uses stay.
/// `--remove --all` takes coord out of the repository and every worktree of it, as `git status`
/// saw it before coord (a backup that differs from its file is kept unless `--yes`).
///
///   coord init                       # the clients installed here (on PATH)
///   coord init --client claude --dry-run
///   coord init --remove              # take it all out again
///   coord init --remove --all        # leave: nothing of coord's left in the repository
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct InitArgs {
    /// The clients to wire (repeat or separate with commas, or `all`; default: those whose
    /// command is on PATH, else claude, codex, gemini and copilot)
    #[arg(long, value_parser = client_choice(), value_delimiter = ',', value_name = "CLIENT")]
    client: Vec<Option<Client>>,
    /// Print what would change and write nothing
    #[arg(long)]
    dry_run: bool,
    /// Take back what `coord init` added for these clients (default: all)
    #[arg(long)]
    remove: bool,
    /// With --remove: take coord out of the repository, every worktree of it (the wiring, the
    /// guard's hooks, .coord/, locks, presences, backups equal to their file, coord's block in
    /// .git/info/exclude); refused (exit 3) while another agent holds a live lock
    #[arg(long, requires = "remove", conflicts_with = "client")]
    all: bool,
    /// With --all: remove backups and refused writes that differ from their file too
    #[arg(long, requires = "all")]
    yes: bool,
}

/// A client's name, or `all` (`None`).
pub(super) fn client_choice() -> impl clap::builder::TypedValueParser<Value = Option<Client>> {
    let mut names = Client::names();
    names.push("all");
    clap::builder::PossibleValuesParser::new(names).map(|name| Client::parse(&name))
}

/// The clients `--client` names (`all`, or none given: every one), and whether that is all.
pub(super) fn chosen(named: &[Option<Client>]) -> (bool, Vec<Client>) {
    let all = named.is_empty() || named.contains(&None);
    let wanted = |c: &Client| all || named.contains(&Some(*c));
    (all, Client::ALL.iter().copied().filter(wanted).collect())
}

pub fn run(args: InitArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    // A folder given with `-C` (or `COORD_DIR`) is the workspace init makes, even inside
    // another one: that is how a nested workspace is made on purpose.
    let ws = match &ctx.dir {
        Some(dir) => init::workspace_at(&ctx.cwd().join(dir))?,
        None => ctx.workspace(None)?,
    };
    let (_, clients) = chosen(&args.client);
    if args.all {
        return leave(&ws, args.dry_run, args.yes, ctx);
    }
    if args.remove {
        return remove(&ws, &clients, args.dry_run, ctx);
    }
    // Without `--client`: the clients installed here (their command on PATH), else the four
    // the contract names.
    let path = std::env::var_os("PATH").unwrap_or_default();
    let on_path = |c: &Client| c.find_on(&path).map(|p| (*c, p));
    let found: Vec<(Client, PathBuf)> = Client::ALL.iter().filter_map(on_path).collect();
    let (clients, chosen_by) = match (args.client.is_empty(), found.is_empty()) {
        (false, _) => (clients, "flag"),
        (true, false) => (found.iter().map(|(c, _)| *c).collect(), "found"),
        (true, true) => (Client::DEFAULT.to_vec(), "default"),
    };
    let plan = init::plan(&ws, &clients)?;
    if !args.dry_run {
        init::apply(&ws, &plan)?;
    }
    let trust: Vec<ClientTrust> = clients
        .iter()
        .map(|c| ClientTrust::of(*c, ws.root()))
        .collect();
    let entry = |(c, p): &(Client, PathBuf)| serde_json::json!({"client": c.as_str(), "path": p});
    let found_json: Vec<_> = found.iter().map(entry).collect();
    let doc = serde_json::json!({
        "dry_run": args.dry_run,
        "plan": plan,
        "trust": trust,
        "chosen_by": chosen_by,
        "found": found_json,
    });
    if ctx.json_or_quiet(&doc) {
        return Ok(ExitCode::Success);
    }
    let verb = |action: &str| change_verb(args.dry_run, action);
    match chosen_by {
        "found" => {
            let entry = |(c, p): &(Client, PathBuf)| format!("{} ({})", c.as_str(), p.display());
            let found: Vec<String> = found.iter().map(entry).collect();
            output::line(&format!("Found on PATH: {}.", found.join(", ")));
        }
        "default" => output::line(&format!(
            "No agent client found on PATH: wiring {}, the clients coord wires by default.",
            names(Client::DEFAULT)
        )),
        _ => {}
    }
    if plan.create_state_dir {
        output::line(&format!("{} .coord/", verb("create")));
    }
    for c in &plan.changes {
        output::line(&format!("{}: {}", verb(c.action), c.file));
        if args.dry_run {
            for l in String::from_utf8_lossy(c.content.as_deref().unwrap_or_default()).lines() {
                output::line(&format!("  | {l}"));
            }
        }
    }
    for s in &plan.skipped {
        let (file, why) = (output::clean(&s.file), &s.why);
        let unwired = (s.client.map(|c| format!("; {c} is not wired"))).unwrap_or_default();
        output::diag(&format!("warning: skipped `{file}`: {why}{unwired}"));
    }
    if plan.clients.is_empty() {
        // Every client skipped: nothing to say it is wired for.
    } else if plan.changes.is_empty() && !plan.create_state_dir {
        output::line("Nothing to change: coord is already wired here");
    } else if !args.dry_run {
        output::line(&format!(
            "Wired for {}. Check with `coord status`; `coord docs agents` shows each client's setup.",
            plan.clients.join(", ")
        ));
    }
    trust.iter().for_each(|t| output::line(&t.line()));
    // `git worktree add` checks out the branch's commits: files init just wrote reach a new
    // worktree only once they are committed.
    if !args.dry_run && !plan.changes.is_empty() && coord::worktree::common_dir(ws.root()).is_some()
    {
        output::line(
            "Worktrees made from now on get these files only once they are committed: commit them, run `coord init` in each new worktree, or install the plugin instead, which needs no file in the repository (`coord docs agents`).",
        );
    }
    if chosen_by != "flag" {
        let others = names(Client::ALL.iter().filter(|c| !clients.contains(c)));
        output::line(&format!(
            "Add another client with `coord init --client NAME` ({others}), or every one with `--client all`."
        ));
    }
    Ok(ExitCode::Success)
}

fn names<'a>(clients: impl IntoIterator<Item = &'a Client>) -> String {
    let names: Vec<&str> = clients.into_iter().map(|c| c.as_str()).collect();
    names.join(", ")
}

fn remove(ws: &Workspace, named: &[Client], dry_run: bool, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let removal = init::plan_removal(ws.root(), named)?;
    if !dry_run {
        init::apply_removal(ws.root(), &removal)?;
    }
    if ctx.json_or_quiet(&serde_json::json!({ "dry_run": dry_run, "removal": removal })) {
        return Ok(ExitCode::Success);
    }
    for u in &removal.changes {
        let verb = change_verb(dry_run, u.action);
        output::line(&format!("{verb}: {}", output::clean(&u.file)));
    }
    let state_dir = output::clean(&removal.state_dir);
    if removal.remove_state_dir {
        output::line(&format!("{} {state_dir}", change_verb(dry_run, "delete")));
    }
    if removal.changes.is_empty() {
        output::line(&format!(
            "Nothing to remove: coord is not wired here for {}",
            removal.clients.join(", ")
        ));
    } else if !dry_run && removal.unwired.is_empty() {
        output::line("Took back coord's instructions and ignore lines.");
    } else if !dry_run {
        output::line(&format!("Unwired {}.", removal.unwired.join(", ")));
    }
    if !removal.remaining.is_empty() {
        output::line(&format!(
            "Still wired: {} (the entries they share stay)",
            removal.remaining.join(", ")
        ));
    }
    if removal.state_dir_kept {
        output::line(&format!(
            "Kept {state_dir}: it holds this workspace's state (locks' queues, messages, history); `coord init --remove --all` takes it too once no agent works here"
        ));
    }
    Ok(ExitCode::Success)
}

fn leave(ws: &Workspace, dry_run: bool, yes: bool, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let leaving = init::leave::plan(ws, ctx.agent_opt()?.as_ref(), yes)?;
    if !dry_run && let Some(warning) = init::leave::apply(ws, &leaving)? {
        output::diag(&format!("warning: {warning}"));
    }
    let mut doc = serde_json::to_value(&leaving).unwrap_or_default();
    doc["dry_run"] = dry_run.into();
    if ctx.json_or_quiet(&doc) {
        return Ok(ExitCode::Success);
    }
    // A path inside this tree relative to it, one elsewhere (another worktree) as it is.
    let shown = |p: &Path| {
        let p = p.strip_prefix(ws.root()).unwrap_or(p);
        output::clean(&p.display().to_string())
    };
    // What was (or would be) done, by action.
    let mut done: Vec<(&str, String)> = Vec::new();
    for tree in &leaving.trees {
        let top = Path::new(&tree.root);
        let changes = tree.removal.changes.iter();
        done.extend(changes.map(|u| (u.action, shown(&top.join(&u.file)))));
    }
    for g in &leaving.removed {
        let slash = if g.what.contains("folder") { "/" } else { "" };
        done.push(("delete", format!("{}{slash}", shown(Path::new(&g.path)))));
    }
    for h in &leaving.hooks {
        let (hook, path) = (&h.hook, output::clean(&h.path));
        let back = match h.outcome == "restored" {
            true => " (the hook it chained back in its place)",
            false => "",
        };
        done.push(("remove", format!("coord's {hook} hook {path}{back}")));
    }
    let excludes = leaving.exclude.iter().chain(&leaving.submodule_excludes);
    done.extend(excludes.map(|p| ("remove", format!("coord's block in {}", output::clean(p)))));
    if let Some(remote) = &leaving.remote {
        let what = format!(
            "claims shared through remote `{remote}` (this clone's records there released)"
        );
        done.push(("stop", what));
    }
    for (action, what) in &done {
        output::line(&format!("{}: {what}", change_verb(dry_run, action)));
    }
    for k in &leaving.kept {
        output::line(&format!(
            "Kept {}: it differs from {}, and may hold the only copy of what it saved; delete it yourself, or run `coord init --remove --all --yes`",
            shown(Path::new(&k.path)),
            shown(Path::new(&k.differs_from)),
        ));
    }
    if done.is_empty() && leaving.kept.is_empty() {
        output::line("Nothing to remove: coord left nothing in this repository");
    } else if !dry_run {
        let n = leaving.trees.len();
        let s = if n == 1 { "" } else { "s" };
        let but = match leaving.kept.is_empty() {
            true => "",
            false => ", but for the files kept above",
        };
        output::line(&format!(
            "coord is out of this repository ({n} work tree{s}){but}."
        ));
    }
    Ok(ExitCode::Success)
}

/// The past of `action` (`create` → `Created`), or `Would create` with `--dry-run`.
fn change_verb(dry_run: bool, action: &str) -> String {
    if dry_run {
        return format!("Would {action}");
    }
    match action {
        "create" => "Created",
        "restore" => "Restored",
        "delete" => "Deleted",
        "remove" => "Removed",
        "stop" => "Stopped",
        _ => "Updated",
    }
    .to_string()
}

/// Whether a client runs this folder's hooks, and the step that makes it (for `init` and
/// `doctor`).
#[derive(Debug, serde::Serialize)]
pub(super) struct ClientTrust {
    client: &'static str,
    product: &'static str,
    hooks_run: HooksRun,
    why: String,
    step: String,
    /// What the client does per mode where its trust gate is for interactive sessions only.
    #[serde(skip_serializing_if = "Option::is_none")]
    modes: Option<&'static str>,
    /// Whether git hooks run for commits made through the client's shell tool.
    shell_git_hooks: bool,
    shell_git_hooks_why: &'static str,
}

impl ClientTrust {
    pub(super) fn of(client: Client, root: &Path) -> ClientTrust {
        let a = client.adapter();
        let (t, step) = a.trust(root);
        let (shell_git_hooks, shell_git_hooks_why) = a.shell_git_hooks;
        ClientTrust {
            shell_git_hooks,
            shell_git_hooks_why,
            client: a.name,
            product: a.product,
            hooks_run: t.hooks_run,
            why: t.why,
            step,
            modes: a.trust_modes,
        }
    }

    /// Whether git hooks run for the client's shell commits, in one line.
    pub(super) fn git_line(&self) -> String {
        let yes = if self.shell_git_hooks { "yes" } else { "no" };
        let (product, why) = (self.product, self.shell_git_hooks_why);
        format!("{product}: git hooks for commits through its shell: {yes} ({why})")
    }

    /// One line: the client runs the hooks (and why), or the step that makes it.
    pub(super) fn line(&self) -> String {
        let (product, why, step) = (self.product, &self.why, &self.step);
        match (self.hooks_run, self.modes) {
            (HooksRun::Yes, None) => format!("{product}: runs these hooks ({why})"),
            (HooksRun::Yes, Some(modes)) => format!("{product}: runs these hooks ({why}); {modes}"),
            (_, None) => {
                format!("{product}: runs these hooks only in a folder it trusts ({why}): {step}")
            }
            (_, Some(modes)) => format!(
                "{product}: an interactive session runs these hooks only in a folder it trusts ({why}): {step}; {modes}"
            ),
        }
    }
}
