//! Installed once per user: coord as a plugin (or extension) of each agent client. Its hooks run
//! in every repository; [`gate`] decides what a `--plugin` call does there.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::adopt;
use crate::client::{COORD, Client, HookSet, HookStyle, PluginKind};
use crate::error::{Error, IoResultExt, Result};
use crate::fsutil;
use crate::init;
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
    /// The path as an argv entry (MCP `command`).
    pub fn coord_path(&self) -> String {
        self.coord.to_string_lossy().into_owned()
    }

    /// `coord hook NAME ...` (as `coord init` registers it) as the plugin runs it: the absolute
    /// binary, and `--plugin`, behind `exec` (the shell a client runs hooks through becomes
    /// coord rather than waiting for it as a child).
    pub fn command(&self, init_command: &str) -> String {
        let rest = init_command
            .strip_prefix(COORD)
            .map(str::trim_start)
            .unwrap_or(init_command);
        format!(
            "exec {} {rest} {FLAG}",
            crate::shell::arg(&self.coord_path())
        )
    }

    /// `{"mcpServers": {"coord": {command, args}}}`.
    pub fn mcp_servers(&self) -> Value {
        json!({"coord": {"command": self.coord_path(), "args": ["mcp", FLAG]}})
    }

    /// `{"hooks": {...}}` (with `version` in Copilot's style) for `set`, run by the plugin.
    pub(crate) fn hooks_json(&self, set: &HookSet, style: HookStyle) -> Value {
        let mut doc = Map::new();
        // A fresh document always merges.
        let set: HookSet = set
            .iter()
            .map(|(event, matcher, cmd)| (*event, *matcher, self.command(cmd)))
            .collect();
        let _ = init::merge_hooks(&mut doc, "hooks/hooks.json", &set, style);
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

/// The plugin of `client`, when coord writes one: its files and its install commands.
pub fn bundle(client: Client, spec: &Spec) -> Option<Bundle> {
    let adapter = client.adapter();
    let plugin = adapter.plugin?;
    let hooks = adapter.hooks();
    let version = env!("CARGO_PKG_VERSION");
    let files = match plugin.kind {
        PluginKind::Marketplace {
            marketplace,
            codex,
            manifest,
            paths,
            hooks: style,
        } => {
            let market = if codex {
                json!({
                    "name": NAME,
                    "plugins": [{
                        "name": NAME,
                        "source": {"source": "local", "path": format!("./{NAME}")},
                    }],
                })
            } else {
                json!({
                    "name": NAME,
                    "description": DESCRIPTION,
                    "owner": {"name": NAME},
                    "plugins": [{
                        "name": NAME,
                        "source": format!("./{NAME}"),
                        "description": DESCRIPTION,
                        "version": version,
                    }],
                })
            };
            let mut man = json!({
                "name": NAME,
                "version": version,
                "description": DESCRIPTION,
                "author": {"name": NAME},
                "license": env!("CARGO_PKG_LICENSE"),
            });
            if let (Some([h, m, s]), Some(obj)) = (paths, man.as_object_mut()) {
                obj.extend([
                    ("hooks".into(), json!(h)),
                    ("mcpServers".into(), json!(m)),
                    ("skills".into(), json!(s)),
                ]);
            }
            vec![
                File::json(marketplace, &market),
                File::json(manifest, &man),
                File::json("coord/hooks/hooks.json", &spec.hooks_json(&hooks, style)),
                File::json(
                    "coord/.mcp.json",
                    &json!({"mcpServers": spec.mcp_servers()}),
                ),
                File::text("coord/skills/coord/SKILL.md", &skill()),
            ]
        }
        PluginKind::Extension { manifest, context } => {
            let man = json!({
                "name": NAME,
                "version": version,
                "description": DESCRIPTION,
                "contextFileName": context,
                "mcpServers": spec.mcp_servers(),
            });
            let style = HookStyle::Claude { named: true };
            vec![
                File::json(manifest, &man),
                File::json("hooks/hooks.json", &spec.hooks_json(&hooks, style)),
                File::text(context, &format!("{}\n", init::instructions())),
            ]
        }
        PluginKind::Js { package, mcp } => {
            let mut doc = json!({
                "name": NAME,
                "version": version,
                "description": DESCRIPTION,
                "private": true,
                "type": "module",
            });
            if let (Some(doc), Ok(Value::Object(extra))) =
                (doc.as_object_mut(), serde_json::from_str(package))
            {
                doc.extend(extra);
            }
            let mcp = mcp.then(|| {
                json!({
                    "type": "local",
                    "command": [spec.coord_path(), "mcp", FLAG],
                    "enabled": true,
                })
            });
            let template = adapter.wiring.iter().find_map(|w| match w {
                crate::client::Wire::Generated(_, content) => Some(*content),
                _ => None,
            })?;
            vec![
                File::json("package.json", &doc),
                File::text(
                    "coord.js",
                    &script(template, adapter.name, spec, mcp.as_ref()),
                ),
            ]
        }
    };
    let strings = |cmds: &[&str]| cmds.iter().map(|c| c.to_string()).collect();
    Some(Bundle {
        files,
        install: strings(plugin.install),
        uninstall: strings(plugin.uninstall),
    })
}

/// Write the plugin of each of `clients` into `dir/<client>/`.
pub fn write(dir: &Path, clients: &[Client], spec: &Spec) -> Result<Vec<Written>> {
    let mut out = Vec::new();
    for &client in clients {
        let adapter = client.adapter();
        let folder = dir.join(adapter.name());
        let Some(bundle) = bundle(client, spec) else {
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
                .map(|c| c.replace("{dir}", &crate::shell::arg(&shown)))
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

/// The absolute path of the running `coord`.
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
            (crate::client::OPENCODE_PLUGIN, "opencode", Some(&mcp)),
            (crate::client::CLINE_PLUGIN, "cline", None),
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
    }
}
