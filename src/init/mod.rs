//! `coord init`: wire a folder for agent clients — each client's hook and MCP registration, an
//! instructions block for agents, `.gitignore` lines for coord's state files.
//!
//! [`plan`] reads every file first and computes every change; only then does [`apply`] write.
//! So a file that cannot be parsed stops everything before a byte is written. Existing files
//! are merged: other keys and hooks keep their place, text outside coord's marked blocks stays
//! byte for byte, and a second run finds nothing to change.

use std::fs;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::error::{Error, IoResultExt, Result};
use crate::fsutil;
use crate::hook::Client;
use crate::workspace::Workspace;

mod jsonc;

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

/// coord's state files, as `.gitignore` patterns: the one list, kept in `layout`.
pub const IGNORED: &[&str] = crate::layout::GITIGNORE_LINES;

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
    let mut files = Wiring {
        root: root.to_path_buf(),
        changes: Vec::new(),
    };
    for &client in clients {
        client.adapter().wire(&mut files)?;
    }
    let mut docs = vec!["AGENTS.md"];
    docs.extend(
        clients
            .iter()
            .filter_map(|c| c.adapter().instruction_file()),
    );
    for doc in docs {
        files.text(doc, |old| {
            whole_blocks(doc, old, BLOCK_BEGIN, BLOCK_END)?;
            Ok(with_block(old, BLOCK_BEGIN, BLOCK_END, &instructions()))
        })?;
    }
    files.text(".gitignore", |old| {
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

/// The command a registration runs: `coord hook CLIENT`, with `--event NAME` for clients whose
/// payload does not name its event.
pub fn command(client: &str, event: Option<&str>) -> String {
    match event {
        Some(e) => format!("{COORD} hook {client} --event {e}"),
        None => format!("{COORD} hook {client}"),
    }
}

/// One client's hook registrations: event, matcher, command.
pub type HookSet = Vec<(&'static str, Option<&'static str>, String)>;

/// Whether a hook group already runs `coord hook CLIENT` (any flags after it).
pub fn runs(group: &Value, cmd: &str) -> bool {
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
/// for each event that has none running coord's command. `named` gives each hook a `name`
/// (Gemini CLI shows it).
///
/// # Errors
///
/// [`Error::BadInput`] when `hooks` or one of its events has the wrong type.
pub fn merge_hooks(
    doc: &mut Map<String, Value>,
    file: &str,
    set: &HookSet,
    named: bool,
) -> Result<()> {
    let hooks = object_at(doc, "hooks", file)?;
    for (event, matcher, cmd) in set {
        let groups = array_at(hooks, event, file, "hooks")?;
        let base = cmd.as_str();
        if let Some(group) = groups.iter_mut().find(|g| runs(g, base)) {
            // coord's own group (coord's hook alone in it) follows coord's matcher, so a
            // tool coord learned to watch is added on the next run.
            let alone = group
                .get("hooks")
                .and_then(Value::as_array)
                .is_some_and(|hs| hs.len() == 1);
            if let (Some(m), true, Some(g)) = (matcher, alone, group.as_object_mut())
                && g.get("matcher").and_then(Value::as_str) != Some(m)
            {
                g.insert("matcher".into(), json!(m));
            }
            continue;
        }
        let mut group = Map::new();
        if let Some(m) = matcher {
            group.insert("matcher".into(), json!(m));
        }
        let mut hook = Map::new();
        if named {
            hook.insert("name".into(), json!("coord"));
        }
        hook.insert("type".into(), json!("command"));
        hook.insert("command".into(), json!(cmd));
        group.insert("hooks".into(), Value::Array(vec![Value::Object(hook)]));
        groups.push(Value::Object(group));
    }
    Ok(())
}

/// `{key: {coord: {command, args}}}`, unless a `coord` server is already registered.
///
/// # Errors
///
/// [`Error::BadInput`] when `key` is not an object.
pub fn merge_mcp(doc: &mut Map<String, Value>, file: &str, key: &str) -> Result<()> {
    let servers = object_at(doc, key, file)?;
    if !servers.contains_key("coord") {
        servers.insert("coord".into(), json!({"command": COORD, "args": ["mcp"]}));
    }
    Ok(())
}

/// The object at `doc[key]`, created empty when missing.
///
/// # Errors
///
/// [`Error::BadInput`] when it is not an object.
pub fn object_at<'a>(
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

/// The array at `map[key]` (inside `parent`), created empty when missing.
///
/// # Errors
///
/// [`Error::BadInput`] when it is not an array.
pub fn array_at<'a>(
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

/// The changes `init` plans, one per real file: what a client's [`crate::client::Adapter::wire`]
/// writes into. Every file is read once; a second change to one file builds on the first.
pub struct Wiring {
    root: PathBuf,
    changes: Vec<Change>,
}

impl Wiring {
    /// The file to write for `rel` (a link inside the root is written through), its current
    /// bytes, and whether it exists; `None` for a link that leaves the root (left alone).
    fn read(&self, rel: &str) -> Result<Option<(PathBuf, Option<Vec<u8>>)>> {
        let root = self.root.as_path();
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

    fn record(&mut self, path: PathBuf, old: Option<Vec<u8>>, new: Vec<u8>) {
        if old.as_deref() == Some(new.as_slice()) {
            return;
        }
        let file = path
            .strip_prefix(&self.root)
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

    /// Merge into the JSON object in `rel` (created when missing) with `merge`. `comments`:
    /// the client reads the file as JSON with comments, and so does coord (they are kept).
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] when the file is not a JSON object or `merge` refuses it;
    /// [`Error::Io`] when it cannot be read.
    pub fn json(
        &mut self,
        rel: &str,
        comments: bool,
        merge: impl FnOnce(&mut Map<String, Value>, &str) -> Result<()>,
    ) -> Result<()> {
        let Some((path, old)) = self.read(rel)? else {
            return Ok(());
        };
        let parsed: Value = match &old {
            Some(bytes) if !bytes.iter().all(u8::is_ascii_whitespace) => {
                match serde_json::from_slice(bytes) {
                    Ok(v) => v,
                    Err(e) if comments => {
                        // Not plain JSON: JSON with comments, as the client reads it.
                        let text = std::str::from_utf8(bytes).map_err(|_| {
                            Error::bad_input(format!(
                                "`{rel}` is not UTF-8 text (nothing was written)"
                            ))
                        })?;
                        let new = jsonc::merge(text, rel, merge).map_err(|why| {
                            Error::bad_input(format!(
                                "`{rel}` is not valid JSON, even allowing comments ({e}; {why}); fix or move it, then run `coord init` again (nothing was written)"
                            ))
                        })?;
                        if let Some(new) = new {
                            self.record(path, old, new.into_bytes());
                        }
                        return Ok(());
                    }
                    Err(e) => {
                        return Err(Error::bad_input(format!(
                            "`{rel}` is not valid JSON ({e}); fix or move it, then run `coord init` again (nothing was written)"
                        )));
                    }
                }
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
        self.record(path, old, text.into_bytes());
        Ok(())
    }

    /// Edit the TOML document in `rel` (created when missing) with `edit`; comments and layout
    /// are kept.
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] when the file is not TOML or `edit` refuses it; [`Error::Io`] when
    /// it cannot be read.
    pub fn toml(
        &mut self,
        rel: &str,
        edit: impl FnOnce(&mut toml_edit::DocumentMut, &str) -> Result<()>,
    ) -> Result<()> {
        let Some((path, old)) = self.read(rel)? else {
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
        edit(&mut doc, rel)?;
        self.record(path, old, doc.to_string().into_bytes());
        Ok(())
    }

    /// Write coord's own generated file `rel` (a client plugin): created, or replaced when it is
    /// coord's (it holds `marker`); a file of that name that is not coord's is refused.
    ///
    /// # Errors
    ///
    /// [`Error::BadInput`] when `rel` exists and is not coord's; [`Error::Io`] when it cannot
    /// be read.
    pub fn generated(&mut self, rel: &str, marker: &str, content: &str) -> Result<()> {
        self.text(rel, |old| {
            if !old.is_empty() && !old.contains(marker) {
                return Err(Error::bad_input(format!(
                    "`{rel}` exists and was not written by coord; move it away, then run `coord init` again (nothing was written)"
                )));
            }
            Ok(content.to_string())
        })
    }

    fn text(&mut self, rel: &str, edit: impl FnOnce(&str) -> Result<String>) -> Result<()> {
        let Some((path, old)) = self.read(rel)? else {
            return Ok(());
        };
        let text = match &old {
            Some(bytes) => String::from_utf8(bytes.clone()).map_err(|_| {
                Error::bad_input(format!("`{rel}` is not UTF-8 text (nothing was written)"))
            })?,
            None => String::new(),
        };
        let new = edit(&text)?;
        self.record(path, old, new.into_bytes());
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
