//! Installed once per user: coord as a plugin (or extension) of each agent client.
//!
//! [`write`] lays out, for each client, the folder its own install command takes: coord's hooks
//! for every event `coord init` wires (the same [`Adapter::hooks`] list), the `coord mcp` server
//! and the instructions for the agent, all calling the `coord` binary that wrote them, with
//! `--plugin`.
//!
//! A plugin's hooks run in every repository the user opens, set up or not. [`gate`] decides,
//! before anything is written, what a `--plugin` call does there:
//!
//! - the repository turned coord off (`git config coord.enabled false`): nothing at all;
//! - a folder that is neither a git work tree nor a coord workspace (a home folder, `/tmp`):
//!   nothing, so no state is left where nobody works on code;
//! - a repository whose own files wire this client (`coord init`): nothing, the repository's
//!   hooks handle the event (each event handled once);
//! - otherwise coord acts; in a repository nobody set up its state is kept out of `git status`
//!   without touching the user's `.gitignore` ([`crate::adopt`], which the hook asks for first
//!   thing, as every command's first write does).
//!
//! [`Adapter::hooks`]: crate::client::Adapter::hooks

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::adopt;
use crate::client::Client;
use crate::error::{Error, IoResultExt, Result};
use crate::fsutil;
use crate::init::{self, HookSet};
use crate::layout;
use crate::workspace::Workspace;

/// The plugin's name in every client (and its marketplace's).
pub const NAME: &str = "coord";

/// The flag every plugin command carries.
pub const FLAG: &str = "--plugin";

/// The git config key that turns the plugin off for one repository (`false`, `no`, `off`, `0`).
pub const SWITCH: &str = "coord.enabled";

/// The one-line description shown by the clients.
pub const DESCRIPTION: &str = "Coordinate AI coding agents in one repository: files locked while an agent edits them, presence, messages (coord)";

/// What a plugin needs to know: the `coord` binary its commands call.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The absolute path of the `coord` binary.
    pub coord: PathBuf,
}

impl Spec {
    /// The path as one shell word.
    pub fn coord_word(&self) -> String {
        shell_word(&self.coord.to_string_lossy())
    }

    /// The path as an argv entry (MCP `command`).
    pub fn coord_path(&self) -> String {
        self.coord.to_string_lossy().into_owned()
    }

    /// `coord hook NAME ...` (as `coord init` registers it) as the plugin runs it: the absolute
    /// binary, and `--plugin`, behind `exec`. Clients run a hook command through a shell
    /// (`sh -c`, `bash -c`); `exec` has the shell become coord instead of starting it as a
    /// child and waiting for it, which dash, the `sh` of Debian and Ubuntu, otherwise does: a
    /// process less per hook call (about 0.15 ms of the 1.5 ms a client spends running a hook
    /// that does nothing).
    pub fn command(&self, init_command: &str) -> String {
        let rest = init_command
            .strip_prefix(init::COORD)
            .map(str::trim_start)
            .unwrap_or(init_command);
        format!("exec {} {rest} {FLAG}", self.coord_word())
    }

    /// The hook list of `init` with the plugin's commands.
    pub fn hooks(&self, set: &HookSet) -> HookSet {
        set.iter()
            .map(|(event, matcher, cmd)| (*event, *matcher, self.command(cmd)))
            .collect()
    }

    /// `{"mcpServers": {"coord": {command, args}}}`.
    pub fn mcp_servers(&self) -> Value {
        json!({"coord": {"command": self.coord_path(), "args": ["mcp", FLAG]}})
    }

    /// Claude-shaped `{"hooks": {...}}` for `set` (`named`: each hook has a `name`).
    pub fn claude_hooks(&self, set: &HookSet, named: bool) -> Value {
        let mut doc = Map::new();
        // A fresh document always merges.
        let _ = init::merge_hooks(&mut doc, "hooks/hooks.json", &self.hooks(set), named);
        Value::Object(doc)
    }
}

/// One file of a plugin.
#[derive(Debug, Clone)]
pub struct File {
    /// Relative to the client's plugin folder.
    pub rel: String,
    /// Its content.
    pub content: Vec<u8>,
}

impl File {
    /// A JSON file, pretty-printed with a final newline.
    pub fn json(rel: &str, value: &Value) -> File {
        let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
        text.push('\n');
        File {
            rel: rel.to_string(),
            content: text.into_bytes(),
        }
    }

    /// A text file.
    pub fn text(rel: &str, text: &str) -> File {
        File {
            rel: rel.to_string(),
            content: text.as_bytes().to_vec(),
        }
    }
}

/// One client's plugin: its files and the client's own commands that install and remove it.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// The files, relative to the client's folder.
    pub files: Vec<File>,
    /// The commands that install it from the folder (`{dir}` stands for the folder).
    pub install: Vec<String>,
    /// The commands that remove it again.
    pub uninstall: Vec<String>,
}

/// What `coord plugin write` wrote for one client.
#[derive(Debug, Clone, Serialize)]
pub struct Written {
    /// The client's name.
    pub client: &'static str,
    /// The client's product name.
    pub product: &'static str,
    /// The client's plugin folder.
    pub dir: String,
    /// The files, relative to `dir`.
    pub files: Vec<String>,
    /// The client's commands that install it.
    pub install: Vec<String>,
    /// The client's commands that remove it.
    pub uninstall: Vec<String>,
}

/// The instructions for the agent, as a skill (`SKILL.md` with its front matter).
pub fn skill() -> String {
    format!(
        "---\nname: {NAME}\ndescription: \"How to work beside other agents in this repository with coord (locks on edited files, who is here, messages). Read when an edit is refused because another agent holds the file, or before editing files outside the edit tools.\"\n---\n\n{}\n",
        init::instructions()
    )
}

/// The instructions for the agent, as a context file.
pub fn context() -> String {
    format!("{}\n", init::instructions())
}

/// Claude-style marketplace file listing the one plugin in `./coord`.
pub fn marketplace() -> Value {
    json!({
        "name": NAME,
        "description": DESCRIPTION,
        "owner": {"name": NAME},
        "plugins": [{
            "name": NAME,
            "source": format!("./{NAME}"),
            "description": DESCRIPTION,
            "version": env!("CARGO_PKG_VERSION"),
        }],
    })
}

/// A JS plugin `coord init` writes into a repository (`template`, for `client`), as the
/// user-level plugin runs it: the absolute `coord` with `--plugin`, the instructions for the
/// agent (`const INSTRUCTIONS`) and, with `mcp`, the MCP server the plugin adds to the client's
/// configuration (`const MCP`).
pub fn script(template: &str, client: &str, spec: &Spec, mcp: Option<&Value>) -> String {
    let quoted = |v: &Value| serde_json::to_string(v).unwrap_or_default();
    let mut text = template.to_string();
    let edits = [
        (
            format!(
                "// coord:generated by `coord init --client {client}`; it runs `coord hook {client}`."
            ),
            format!(
                "// coord:generated by `coord plugin write --client {client}`; it runs `coord hook {client} {FLAG}`."
            ),
        ),
        (
            "const COORD = process.env.COORD_BIN || \"coord\";".to_string(),
            format!(
                "const COORD = process.env.COORD_BIN || {};",
                quoted(&json!(spec.coord_path()))
            ),
        ),
        (
            format!("[\"hook\", \"{client}\"]"),
            format!("[\"hook\", \"{client}\", \"{FLAG}\"]"),
        ),
        (
            "const INSTRUCTIONS = \"\";".to_string(),
            format!(
                "const INSTRUCTIONS = {};",
                quoted(&json!(init::instructions()))
            ),
        ),
        (
            "const MCP = null;".to_string(),
            format!("const MCP = {};", mcp.map_or("null".to_string(), quoted)),
        ),
    ];
    for (from, to) in edits {
        text = text.replacen(&from, &to, 1);
    }
    text
}

/// A `package.json` naming the plugin `coord`, an ES module, with `extra` keys.
pub fn package_json(extra: Value) -> Value {
    let mut doc = json!({
        "name": NAME,
        "version": env!("CARGO_PKG_VERSION"),
        "description": DESCRIPTION,
        "private": true,
        "type": "module",
    });
    if let (Some(doc), Value::Object(extra)) = (doc.as_object_mut(), extra) {
        doc.extend(extra);
    }
    doc
}

/// Write the plugin of each of `clients` into `dir/<client>/`.
///
/// # Errors
///
/// [`Error::Io`] naming the file or folder that could not be written.
pub fn write(dir: &Path, clients: &[Client], spec: &Spec) -> Result<Vec<Written>> {
    let mut out = Vec::new();
    for &client in clients {
        let adapter = client.adapter();
        let folder = dir.join(adapter.name());
        let Some(bundle) = adapter.plugin(spec) else {
            continue;
        };
        for file in &bundle.files {
            let path = folder.join(&file.rel);
            if let Some(parent) = path.parent() {
                fsutil::ensure_dir(parent)?;
            }
            fsutil::replace_durable(&path, &file.content)?;
        }
        let shown = folder.display().to_string();
        let fill = |cmds: &[String]| -> Vec<String> {
            cmds.iter()
                .map(|c| c.replace("{dir}", &shell_word(&shown)))
                .collect()
        };
        out.push(Written {
            client: adapter.name(),
            product: adapter.product(),
            dir: shown.clone(),
            files: bundle.files.iter().map(|f| f.rel.clone()).collect(),
            install: fill(&bundle.install),
            uninstall: fill(&bundle.uninstall),
        });
    }
    Ok(out)
}

/// What a plugin's call does in a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Act (the workspace is set up, or was adopted now).
    Go,
    /// Do nothing: the repository turned coord off.
    Off,
    /// Do nothing: not a git work tree, not a coord workspace.
    Elsewhere,
    /// Do nothing: the repository's own files wire this client (`coord init`).
    Wired,
}

/// Decide what a `--plugin` call does in `ws` (for `client`'s hooks; `None` for the MCP
/// server), reading only: nothing is written.
pub fn gate(ws: &Workspace, client: Option<Client>) -> Gate {
    let root = ws.root();
    let repository = crate::worktree::repository_dir(root);
    if repository.as_deref().is_some_and(adopt::switched_off) {
        return Gate::Off;
    }
    let set_up = std::fs::symlink_metadata(layout::state_dir(&crate::worktree::shared_root(root)))
        .is_ok_and(|m| m.is_dir());
    if repository.is_none() && !set_up {
        return Gate::Elsewhere;
    }
    if let Some(c) = client
        && c.adapter().wired(root)
    {
        return Gate::Wired;
    }
    Gate::Go
}

/// `s` as one shell word: as is when it is plain, else single-quoted.
pub fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The absolute path of the running `coord`.
///
/// # Errors
///
/// [`Error::Io`] when the system cannot say.
pub fn current_coord() -> Result<PathBuf> {
    let exe = std::env::current_exe().at("find the running binary", Path::new("coord"))?;
    Ok(std::fs::canonicalize(&exe).unwrap_or(exe))
}

/// A clear refusal for a plugin folder that cannot be used.
pub fn bad_dir(dir: &Path, why: &str) -> Error {
    Error::BadPath {
        path: dir.display().to_string(),
        why: why.to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn a_js_plugin_runs_the_binary_with_the_flag_and_the_instructions() {
        let spec = Spec {
            coord: PathBuf::from("/opt/my \"tools\"/coord"),
        };
        let mcp = json!({"type": "local"});
        for (template, client, mcp) in [
            (crate::client::opencode::PLUGIN, "opencode", Some(&mcp)),
            (crate::client::cline::PLUGIN, "cline", None),
        ] {
            let js = script(template, client, &spec, mcp);
            assert!(js.starts_with(&format!(
                "// coord:generated by `coord plugin write --client {client}`"
            )));
            assert!(js.contains(r#"process.env.COORD_BIN || "/opt/my \"tools\"/coord";"#));
            assert!(js.contains(&format!(r#"["hook", "{client}", "--plugin"]"#)));
            assert!(!js.contains("const INSTRUCTIONS = \"\";"), "{client}");
            assert!(js.contains("do not work around it"));
            assert_eq!(
                js.contains(r#"const MCP = {"type":"local"};"#),
                mcp.is_some()
            );
            // Everything else is the plugin `coord init` writes.
            assert_eq!(js.lines().count(), template.lines().count());
        }
    }

    #[test]
    fn commands_run_the_binary_with_the_flag() {
        let spec = Spec {
            coord: PathBuf::from("/opt/my tools/coord"),
        };
        assert_eq!(
            spec.command("coord hook copilot --event preToolUse"),
            "exec '/opt/my tools/coord' hook copilot --event preToolUse --plugin"
        );
        assert_eq!(shell_word("/usr/bin/coord"), "/usr/bin/coord");
    }
}
