//! `coord init`: wire a folder for agent clients — each client's hook and MCP registration, an
//! instructions block for agents, `.gitignore` lines for coord's state files.
//!
//! [`plan`] reads every file first and computes every change; only then does [`apply`] write.
//! So a file that cannot be parsed stops everything before a byte is written. Existing files
//! are merged: other keys and hooks keep their place, text outside coord's marked blocks stays
//! byte for byte, and a second run finds nothing to change.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::error::{Error, IoResultExt, Result};
use crate::fsutil;
use crate::hook::Client;
use crate::workspace::Workspace;

/// The first line of coord's block in Markdown files.
pub const BLOCK_BEGIN: &str = "<!-- coord:begin -->";
/// The last line of coord's block in Markdown files.
pub const BLOCK_END: &str = "<!-- coord:end -->";
/// The first line of coord's block in `.gitignore`.
pub const IGNORE_BEGIN: &str = "# coord:begin";
/// The last line of coord's block in `.gitignore`.
pub const IGNORE_END: &str = "# coord:end";

/// The command the registrations run.
pub const COORD: &str = "coord";

/// coord's state files, as `.gitignore` patterns.
pub const IGNORED: [&str; 6] = [
    ".coord/",
    ".*_presence",
    ".handshake_*",
    "*.lock.*",
    "*.bak",
    "*.rejected.*",
];

/// One file `init` creates or changes.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// The file, relative to the root.
    pub file: String,
    /// `create` or `update`.
    pub action: &'static str,
    /// The new content.
    #[serde(skip)]
    pub content: Vec<u8>,
    #[serde(skip)]
    path: PathBuf,
}

/// What `init` would do (or did).
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The workspace root.
    pub root: String,
    /// The clients wired.
    pub clients: Vec<&'static str>,
    /// Whether `.coord/` has to be created.
    pub create_state_dir: bool,
    /// Files created or changed, in order; empty when everything is in place.
    pub changes: Vec<Change>,
}

/// Compute every change for `clients`, reading each file once; nothing is written.
///
/// # Errors
///
/// [`Error::BadInput`] naming a file that exists but cannot be parsed or merged;
/// [`Error::Io`] when a file cannot be read.
pub fn plan(ws: &Workspace, clients: &[Client]) -> Result<Plan> {
    let root = ws.root();
    let mut files = Files::default();
    for &client in clients {
        match client {
            Client::Claude => {
                files.json(root, ".claude/settings.json", |v, f| {
                    merge_hooks(v, f, &claude_hooks())
                })?;
                files.json(root, ".mcp.json", |v, f| merge_mcp(v, f, "mcpServers"))?;
            }
            Client::Codex => {
                files.json(root, ".codex/hooks.json", |v, f| {
                    merge_hooks(v, f, &codex_hooks())
                })?;
                files.toml(root, ".codex/config.toml")?;
            }
            Client::Gemini => {
                files.json(root, ".gemini/settings.json", |v, f| {
                    merge_hooks(v, f, &gemini_hooks())?;
                    merge_mcp(v, f, "mcpServers")
                })?;
            }
            Client::Copilot => {
                files.json(root, ".github/hooks/coord.json", merge_copilot)?;
            }
        }
    }
    let mut docs = vec!["AGENTS.md"];
    if clients.contains(&Client::Claude) {
        docs.push("CLAUDE.md");
    }
    if clients.contains(&Client::Gemini) {
        docs.push("GEMINI.md");
    }
    for doc in docs {
        files.text(root, doc, |old| {
            whole_blocks(doc, old, BLOCK_BEGIN, BLOCK_END)?;
            Ok(with_block(old, BLOCK_BEGIN, BLOCK_END, &instructions()))
        })?;
    }
    files.text(root, ".gitignore", |old| {
        whole_blocks(".gitignore", old, IGNORE_BEGIN, IGNORE_END)?;
        Ok(with_block(
            old,
            IGNORE_BEGIN,
            IGNORE_END,
            &IGNORED.join("\n"),
        ))
    })?;
    Ok(Plan {
        root: root.display().to_string(),
        clients: clients.iter().map(|c| c.as_str()).collect(),
        create_state_dir: !crate::layout::state_dir(root).is_dir(),
        changes: files.changes,
    })
}

/// Write what `plan` computed: `.coord/`, then every file (folders created as needed).
///
/// # Errors
///
/// [`Error::Io`] naming the file that could not be written.
pub fn apply(ws: &Workspace, plan: &Plan) -> Result<()> {
    ws.ensure_state_dir()?;
    for change in &plan.changes {
        if let Some(dir) = change.path.parent() {
            fsutil::ensure_dir(dir)?;
        }
        fsutil::replace_durable(&change.path, &change.content)?;
    }
    Ok(())
}

/// The instructions block: the protocol in a few lines.
pub fn instructions() -> String {
    "## Working with other agents in this folder (coord)\n\
     \n\
     Several agents may edit this folder at once; coord keeps them from overwriting each other.\n\
     \n\
     - Your client's hooks lock each file you edit (`FILE.lock.<agent>` beside it) and release \
     your locks when your turn ends. If an edit is refused because another agent holds the file, \
     do not work around it (no shell redirection, no copy): work on something else and come back later, \
     or message the holder.\n\
     - See who is here and what is locked: `coord status`. Your messages: `coord msg list`, \
     `coord msg read ID`; write with `coord msg send AGENT \"text\"`.\n\
     - Editing outside your client's edit tools (a script, a shell command): take the lock first, \
     `coord lock FILE`, and `coord unlock FILE` after.\n\
     - Through MCP the same is available as the `coord` server's tools (`status`, `lock`, `unlock`, \
     `msg_send`, ...)."
        .to_string()
}

fn command(client: Client, event: Option<&str>) -> String {
    match event {
        Some(e) => format!("{COORD} hook {} --event {e}", client.as_str()),
        None => format!("{COORD} hook {}", client.as_str()),
    }
}

/// One client's hook registrations: event → (matcher, command).
type HookSet = Vec<(&'static str, Option<&'static str>, String)>;

fn claude_hooks() -> HookSet {
    let edit = Some("Edit|Write|MultiEdit|NotebookEdit");
    let cmd = command(Client::Claude, None);
    vec![
        ("SessionStart", None, cmd.clone()),
        ("PreToolUse", edit, cmd.clone()),
        ("PostToolUse", edit, cmd.clone()),
        ("Stop", None, cmd.clone()),
        ("SessionEnd", None, cmd),
    ]
}

fn codex_hooks() -> HookSet {
    let edit = Some("apply_patch|Edit|Write");
    let cmd = command(Client::Codex, None);
    vec![
        ("SessionStart", None, cmd.clone()),
        ("PreToolUse", edit, cmd.clone()),
        ("PostToolUse", edit, cmd.clone()),
        ("Stop", None, cmd),
    ]
}

fn gemini_hooks() -> HookSet {
    let edit = Some("write_file|replace");
    let cmd = command(Client::Gemini, None);
    vec![
        ("SessionStart", None, cmd.clone()),
        ("BeforeTool", edit, cmd.clone()),
        ("AfterTool", edit, cmd.clone()),
        ("AfterAgent", None, cmd.clone()),
        ("SessionEnd", None, cmd),
    ]
}

/// Whether a hook group already runs `coord hook CLIENT` (any flags after it).
fn runs(group: &Value, cmd: &str) -> bool {
    let is_ours = |h: &Value| {
        ["command", "bash"].iter().any(|k| {
            h.get(*k)
                .and_then(Value::as_str)
                .is_some_and(|c| c.trim() == cmd || c.trim().starts_with(&format!("{cmd} ")))
        })
    };
    is_ours(group)
        || group
            .get("hooks")
            .and_then(Value::as_array)
            .is_some_and(|hs| hs.iter().any(is_ours))
}

/// Claude-shaped `hooks`: `{EVENT: [{matcher?, hooks: [{type, command}]}]}`; a group is added
/// for each event that has none running coord's command.
fn merge_hooks(doc: &mut Map<String, Value>, file: &str, set: &HookSet) -> Result<()> {
    let hooks = object_at(doc, "hooks", file)?;
    for (event, matcher, cmd) in set {
        let groups = array_at(hooks, event, file, "hooks")?;
        let base = cmd.as_str();
        if groups.iter().any(|g| runs(g, base)) {
            continue;
        }
        let mut group = Map::new();
        if let Some(m) = matcher {
            group.insert("matcher".into(), json!(m));
        }
        let mut hook = Map::new();
        if file.starts_with(".gemini") {
            hook.insert("name".into(), json!("coord"));
        }
        hook.insert("type".into(), json!("command"));
        hook.insert("command".into(), json!(cmd));
        group.insert("hooks".into(), Value::Array(vec![Value::Object(hook)]));
        groups.push(Value::Object(group));
    }
    Ok(())
}

/// `.github/hooks/coord.json`: Copilot's `{version: 1, hooks: {event: [{type, bash, ...}]}}`.
fn merge_copilot(doc: &mut Map<String, Value>, file: &str) -> Result<()> {
    if !doc.contains_key("version") {
        doc.insert("version".into(), json!(1));
    }
    let hooks = object_at(doc, "hooks", file)?;
    for event in ["sessionStart", "preToolUse", "postToolUse", "sessionEnd"] {
        let cmd = command(Client::Copilot, Some(event));
        let groups = array_at(hooks, event, file, "hooks")?;
        if groups.iter().any(|g| runs(g, &cmd)) {
            continue;
        }
        groups.push(json!({
            "type": "command",
            "bash": cmd,
            "powershell": cmd,
            "timeoutSec": 30,
        }));
    }
    Ok(())
}

/// `{key: {coord: {command, args}}}`, unless a `coord` server is already registered.
fn merge_mcp(doc: &mut Map<String, Value>, file: &str, key: &str) -> Result<()> {
    let servers = object_at(doc, key, file)?;
    if !servers.contains_key("coord") {
        servers.insert("coord".into(), json!({"command": COORD, "args": ["mcp"]}));
    }
    Ok(())
}

fn object_at<'a>(
    doc: &'a mut Map<String, Value>,
    key: &str,
    file: &str,
) -> Result<&'a mut Map<String, Value>> {
    let v = doc
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    v.as_object_mut().ok_or_else(|| {
        Error::bad_input(format!(
            "`{file}`: `{key}` is not a JSON object; coord cannot merge into it (nothing was written)"
        ))
    })
}

fn array_at<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
    file: &str,
    parent: &str,
) -> Result<&'a mut Vec<Value>> {
    let v = map
        .entry(key.to_string())
        .or_insert_with(|| Value::Array(Vec::new()));
    v.as_array_mut().ok_or_else(|| {
        Error::bad_input(format!(
            "`{file}`: `{parent}.{key}` is not a JSON array; coord cannot merge into it (nothing was written)"
        ))
    })
}

/// Refuse a text whose coord block is broken: a `begin` without its `end` (or an `end`
/// without its `begin`, or two blocks). Replacing up to some later marker, or appending a
/// second block, would touch the user's text; nothing is written instead.
///
/// # Errors
///
/// [`Error::BadInput`] naming the file and what is wrong.
fn whole_blocks(file: &str, text: &str, begin: &str, end: &str) -> Result<()> {
    let begins = text.matches(begin).count();
    let ends = text.matches(end).count();
    let why = match (text.find(begin), text.find(end)) {
        (None, None) => return Ok(()),
        (Some(_), None) => format!("it has `{begin}` without `{end}`"),
        (None, Some(_)) => format!("it has `{end}` without `{begin}`"),
        (Some(b), Some(e)) if e < b => format!("it has `{end}` before `{begin}`"),
        _ if begins > 1 || ends > 1 => "it has more than one coord block".to_string(),
        _ => return Ok(()),
    };
    Err(Error::bad_input(format!(
        "`{file}`: {why}; fix the block by hand (or remove it), then run `coord init` again (nothing was written)"
    )))
}

/// The largest file `init` reads to merge into.
const MERGE_CAP: u64 = 16 * 1024 * 1024;

/// `text` with coord's block (between `begin` and `end`) set to `body`: replaced in place when
/// present, appended otherwise. Everything outside the block is kept byte for byte.
pub fn with_block(text: &str, begin: &str, end: &str, body: &str) -> String {
    let block = format!("{begin}\n{body}\n{end}");
    if let Some(start) = text.find(begin)
        && let Some(len) = text[start..].find(end)
    {
        let stop = start + len + end.len();
        return format!("{}{block}{}", &text[..start], &text[stop..]);
    }
    if text.is_empty() {
        return format!("{block}\n");
    }
    let sep = if text.ends_with("\n\n") {
        ""
    } else if text.ends_with('\n') {
        "\n"
    } else {
        "\n\n"
    };
    format!("{text}{sep}{block}\n")
}

/// The changes found so far, one per real file.
#[derive(Default)]
struct Files {
    changes: Vec<Change>,
}

impl Files {
    /// The file to write for `rel` (a link inside the root is written through), its current
    /// bytes, and whether it exists; `None` for a link that leaves the root (left alone).
    fn read(&self, root: &Path, rel: &str) -> Result<Option<(PathBuf, Option<Vec<u8>>)>> {
        let mut path = root.join(rel);
        if fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink()) {
            match fs::canonicalize(&path) {
                Ok(real) if real.starts_with(root) => path = real,
                _ => return Ok(None),
            }
        }
        // A file already changed by this plan (a link to it): build on the planned bytes.
        if let Some(c) = self.changes.iter().find(|c| c.path == path) {
            return Ok(Some((path, Some(c.content.clone()))));
        }
        // Never blocking on a FIFO (or a device) planted where a settings file belongs.
        match fsutil::read_capped(&path, MERGE_CAP) {
            Ok(bytes) => Ok(Some((path, Some(bytes)))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Some((path, None))),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                Err(Error::bad_input(format!(
                    "`{rel}` {e}; move it out of the way, then run `coord init` again (nothing was written)"
                )))
            }
            Err(e) => Err(e).at("read", &path),
        }
    }

    fn record(&mut self, root: &Path, path: PathBuf, old: Option<Vec<u8>>, new: Vec<u8>) {
        if old.as_deref() == Some(new.as_slice()) {
            return;
        }
        let file = path
            .strip_prefix(root)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| path.display().to_string());
        let action = if old.is_some() { "update" } else { "create" };
        if let Some(c) = self.changes.iter_mut().find(|c| c.path == path) {
            c.content = new;
            return;
        }
        self.changes.push(Change {
            file,
            action,
            content: new,
            path,
        });
    }

    fn json(
        &mut self,
        root: &Path,
        rel: &str,
        merge: impl FnOnce(&mut Map<String, Value>, &str) -> Result<()>,
    ) -> Result<()> {
        let Some((path, old)) = self.read(root, rel)? else {
            return Ok(());
        };
        let parsed: Value = match &old {
            Some(bytes) if !bytes.iter().all(u8::is_ascii_whitespace) => {
                serde_json::from_slice(bytes).map_err(|e| {
                    Error::bad_input(format!(
                        "`{rel}` is not valid JSON ({e}); fix or move it, then run `coord init` again (nothing was written)"
                    ))
                })?
            }
            _ => Value::Object(Map::new()),
        };
        let Value::Object(mut doc) = parsed.clone() else {
            return Err(Error::bad_input(format!(
                "`{rel}` is not a JSON object; coord cannot merge into it (nothing was written)"
            )));
        };
        merge(&mut doc, rel)?;
        let doc = Value::Object(doc);
        if old.is_some() && doc == parsed {
            return Ok(());
        }
        let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        text.push('\n');
        self.record(root, path, old, text.into_bytes());
        Ok(())
    }

    fn toml(&mut self, root: &Path, rel: &str) -> Result<()> {
        let Some((path, old)) = self.read(root, rel)? else {
            return Ok(());
        };
        let text = match &old {
            Some(bytes) => String::from_utf8(bytes.clone()).map_err(|_| {
                Error::bad_input(format!("`{rel}` is not UTF-8 text (nothing was written)"))
            })?,
            None => String::new(),
        };
        let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| {
            Error::bad_input(format!(
                "`{rel}` is not valid TOML ({e}); fix or move it, then run `coord init` again (nothing was written)"
            ))
        })?;
        let servers = doc
            .entry("mcp_servers")
            .or_insert_with(|| {
                let mut t = toml_edit::Table::new();
                t.set_implicit(true);
                toml_edit::Item::Table(t)
            })
            .as_table_like_mut()
            .ok_or_else(|| {
                Error::bad_input(format!(
                    "`{rel}`: `mcp_servers` is not a table; coord cannot merge into it (nothing was written)"
                ))
            })?;
        if !servers.contains_key("coord") {
            let mut t = toml_edit::Table::new();
            t.insert("command", toml_edit::value(COORD));
            let mut args = toml_edit::Array::new();
            args.push("mcp");
            t.insert("args", toml_edit::value(args));
            servers.insert("coord", toml_edit::Item::Table(t));
        }
        let features = doc
            .entry("features")
            .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
            .as_table_like_mut()
            .ok_or_else(|| {
                Error::bad_input(format!(
                    "`{rel}`: `features` is not a table; coord cannot merge into it (nothing was written)"
                ))
            })?;
        if !features.contains_key("codex_hooks") {
            features.insert("codex_hooks", toml_edit::value(true));
        }
        self.record(root, path, old, doc.to_string().into_bytes());
        Ok(())
    }

    fn text(
        &mut self,
        root: &Path,
        rel: &str,
        edit: impl FnOnce(&str) -> Result<String>,
    ) -> Result<()> {
        let Some((path, old)) = self.read(root, rel)? else {
            return Ok(());
        };
        let text = match &old {
            Some(bytes) => String::from_utf8(bytes.clone()).map_err(|_| {
                Error::bad_input(format!("`{rel}` is not UTF-8 text (nothing was written)"))
            })?,
            None => String::new(),
        };
        let new = edit(&text)?;
        self.record(root, path, old, new.into_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn blocks_are_appended_then_replaced_in_place() {
        let once = with_block("# Title\r\nkeep me", "<b>", "<e>", "one");
        assert_eq!(once, "# Title\r\nkeep me\n\n<b>\none\n<e>\n");
        let twice = with_block(&once, "<b>", "<e>", "two");
        assert_eq!(twice, "# Title\r\nkeep me\n\n<b>\ntwo\n<e>\n");
        assert_eq!(with_block(&twice, "<b>", "<e>", "two"), twice);
    }

    proptest! {
        /// Text before and after the block survives byte for byte, and a second run is a no-op.
        #[test]
        fn text_outside_the_block_is_kept(before in "(?s)[^<]{0,80}", after in "(?s)[^<]{0,80}", body in "[a-z \n]{0,40}") {
            let text = format!("{before}{BLOCK_BEGIN}\nold\n{BLOCK_END}{after}");
            let new = with_block(&text, BLOCK_BEGIN, BLOCK_END, &body);
            prop_assert!(new.starts_with(&before));
            prop_assert!(new.ends_with(&after));
            prop_assert_eq!(with_block(&new, BLOCK_BEGIN, BLOCK_END, &body), new.clone());
            let fresh = with_block(&before, BLOCK_BEGIN, BLOCK_END, &body);
            prop_assert!(fresh.starts_with(&before));
            prop_assert_eq!(with_block(&fresh, BLOCK_BEGIN, BLOCK_END, &body), fresh);
        }
    }
}
