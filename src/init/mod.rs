//! `coord init`: wire a folder for agent clients — each client's hook and MCP registration, an
//! instructions block for agents, `.gitignore` lines for coord's state files.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::client::{COORD, Client, HookSet, HookStyle, MARKER, Wire};
use crate::error::{Error, IoResultExt, Result};
use crate::fsutil;
use crate::workspace::Workspace;

mod jsonc;
pub mod leave;
mod record;
mod remove;

pub use remove::{Removal, apply_removal, plan_removal};

use crate::layout::{IGNORE_BEGIN, IGNORE_END};
use crate::textblock::{find_block, with_block};

/// coord's block in Markdown files lies between these two lines.
const BLOCK_BEGIN: &str = "<!-- coord:begin -->";
const BLOCK_END: &str = "<!-- coord:end -->";

/// One file `init` (or `init --remove`) creates, changes or deletes.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// The file, relative to the root.
    pub file: String,
    /// `create` or `update`; for `--remove`, `restore` (back to its bytes before init),
    /// `update` (coord's entries cut out) or `delete`.
    pub action: &'static str,
    /// The new content (`None`: the file goes).
    #[serde(skip)]
    pub content: Option<Vec<u8>>,
    #[serde(skip)]
    path: PathBuf,
    /// Init's record says init created the file: the folders it made for it are in the record
    /// too, and no other folder above it is init's to remove.
    #[serde(skip)]
    created_by_init: bool,
}

/// A file `init` left alone: a symlink to a file outside the workspace.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    /// The file, relative to the root.
    pub file: String,
    /// The client it was for (`None`: the instructions or `.gitignore`).
    pub client: Option<&'static str>,
    /// Why.
    pub why: String,
}

/// What `init` would do (or did).
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The workspace root.
    pub root: String,
    /// The clients wired (a client one of whose files was skipped is not).
    pub clients: Vec<&'static str>,
    /// Files left alone, and why.
    pub skipped: Vec<Skipped>,
    /// Whether `.coord/` has to be created.
    pub create_state_dir: bool,
    /// Files created or changed, in order; empty when everything is in place.
    pub changes: Vec<Change>,
}

/// Compute every change for `clients`, reading each file once; nothing is written.
pub fn plan(ws: &Workspace, clients: &[Client]) -> Result<Plan> {
    let root = ws.root();
    let mut files = Wiring {
        root: root.to_path_buf(),
        ..Wiring::default()
    };
    for &client in clients {
        files.client = Some(client.as_str());
        wire(&mut files, client)?;
    }
    files.client = None;
    for (rel, begin, end, body) in texts(clients) {
        files.edit_text(rel, |text| {
            with_block(text, begin, end, &body).map_err(|line| unterminated(rel, begin, end, line))
        })?;
    }
    let wired = |c: &&Client| !files.skipped.iter().any(|s| s.client == Some(c.as_str()));
    Ok(Plan {
        root: root.display().to_string(),
        clients: clients.iter().filter(wired).map(|c| c.as_str()).collect(),
        skipped: files.skipped,
        create_state_dir: !crate::layout::state_dir(&crate::worktree::shared_root(root)).is_dir(),
        changes: files.changes,
    })
}

/// The text files `clients` get coord's block in (file, begin, end, block), `.gitignore` last.
fn texts(clients: &[Client]) -> Vec<(&'static str, &'static str, &'static str, String)> {
    let docs = clients.iter().filter_map(|c| c.adapter().instruction_file);
    let docs = std::iter::once("AGENTS.md").chain(docs);
    let docs = docs.map(|doc| (doc, BLOCK_BEGIN, BLOCK_END, INSTRUCTIONS.into()));
    let ignore = crate::layout::GITIGNORE_LINES.join("\n");
    docs.chain([(".gitignore", IGNORE_BEGIN, IGNORE_END, ignore)])
        .collect()
}

/// The workspace `init` makes at `dir` itself, even inside another workspace.
pub fn workspace_at(dir: &Path) -> Result<Workspace> {
    let why = match fs::canonicalize(dir) {
        Ok(canon) if canon.is_dir() => return Ok(Workspace::at(canon)),
        Ok(_) => "the workspace must be a folder".into(),
        Err(e) => format!("the workspace folder cannot be used ({e})"),
    };
    Err(Error::bad_path(dir.display().to_string(), why))
}

/// Write what `plan` computed: `.coord/`, then every file (folders created as needed).
pub fn apply(ws: &Workspace, plan: &Plan) -> Result<()> {
    let root = ws.root();
    let mut record = record::Record::load(root);
    record.state_dir |= plan.create_state_dir;
    for change in &plan.changes {
        let dir = fsutil::parent_of(&change.path);
        record.note_dirs(root, dir);
        fsutil::ensure_dir(dir)?;
        let before = read_regular(&change.path)?;
        let content = change.content.as_deref().unwrap_or_default();
        fsutil::replace_durable(&change.path, content)?;
        record.note_write(&change.file, before, content);
    }
    // After `.gitignore`: a repository `init` wires is not adopted as one nobody set up.
    ws.ensure_state_dir()?;
    record.save(root)
}

/// The bytes of the regular file at `path` (`None` when missing), without blocking on a FIFO
/// or reading through a device.
fn read_regular(path: &Path) -> Result<Option<Vec<u8>>> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).at("read", path),
        Ok(m) if !m.is_file() => {
            return Err(Error::bad_input(format!(
                "`{}` is not a regular file (a FIFO, a device or a folder); coord only merges into files (nothing was written)",
                path.display()
            )));
        }
        Ok(_) => {}
    }
    match fsutil::if_found(fsutil::read_capped(path, 64 * 1024 * 1024)) {
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => Err(Error::bad_input(format!(
            "`{}` {e}; coord only merges into regular files (nothing was written)",
            path.display()
        ))),
        read => read.at("read", path),
    }
}

/// The instructions block: the protocol in a few lines.
pub const INSTRUCTIONS: &str = "## Working with other agents in this folder (coord)\n\
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
     `msg_send`, ...).";

/// Whether the command line `line` is `cmd` (any flags after it).
fn is_command(line: &str, cmd: &str) -> bool {
    let line = line.trim();
    line == cmd || line.starts_with(&format!("{cmd} "))
}

/// Whether a hook entry has a `command` or `bash` line that `test` accepts.
fn has_command(hook: &Value, test: impl Fn(&str) -> bool) -> bool {
    ["command", "bash"]
        .iter()
        .any(|k| hook.get(*k).and_then(Value::as_str).is_some_and(&test))
}

/// Whether a hook group (or entry), or a hook in it, has a `command` or `bash` `test` accepts.
fn any_command(group: &Value, test: impl Fn(&str) -> bool) -> bool {
    let hooks = group.get("hooks").and_then(Value::as_array);
    has_command(group, &test) || hooks.is_some_and(|hs| hs.iter().any(|h| has_command(h, &test)))
}

/// Whether a hook group (or a Copilot hook entry) already runs coord's hook for the client of
/// `cmd` in a form of the user's own: coord by a path (`/usr/local/bin/coord`), with options
/// (`coord -q hook claude --wait 5s`), behind `env VAR=...`. init then adds no second one.
fn runs_own(group: &Value, cmd: &str) -> bool {
    let Some(client) = cmd.split_whitespace().nth(2) else {
        return false;
    };
    let calls_coord = |line: &str| {
        let words: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || c == ';' || c == '&' || c == '|')
            .map(|w| w.trim_matches(|c| c == '"' || c == '\''))
            .filter(|w| !w.is_empty())
            .collect();
        words.iter().enumerate().any(|(i, w)| {
            let base = w.rsplit(['/', '\\']).next().unwrap_or(w);
            (base == COORD || base == "coord.exe")
                && words[i + 1..]
                    .windows(2)
                    .any(|p| p[0] == "hook" && p[1] == client)
        })
    };
    any_command(group, calls_coord)
}

/// Write `client`'s files (its [`Wire`]s) into `w`: coord's hooks, its MCP server, its plugin.
fn wire(w: &mut Wiring, client: Client) -> Result<()> {
    let hooks = client.adapter().hooks();
    for wire in client.adapter().wiring {
        match *wire {
            Wire::Json(file, comments, style, mcp) => w.json(file, comments, |v| {
                if let Some(style) = style {
                    merge_hooks(v, file, &hooks, style)?;
                }
                // `{key: {coord: server}}`, unless a `coord` server is already registered.
                if let Some((key, server)) = mcp.map(|m| m.server(&[COORD, "mcp"])) {
                    object_at(v, key, file)?.entry("coord").or_insert(server);
                }
                Ok(())
            })?,
            // Comments and layout are kept.
            Wire::CodexToml(file) => w.edit_text(file, |text| {
                let mut doc: toml_edit::DocumentMut = text
                    .parse()
                    .map_err(|e| invalid(file, "TOML", e, "coord init"))?;
                codex_toml(&mut doc, file)?;
                Ok(doc.to_string())
            })?,
            // Created, or replaced when it is coord's (it holds MARKER); another file is refused.
            Wire::Generated(file, content) => w.edit_text(file, |old| {
                if !old.is_empty() && !old.contains(MARKER) {
                    return Err(Error::bad_input(format!(
                        "`{file}` exists and was not written by coord; move it away, then run `coord init` again (nothing was written)"
                    )));
                }
                Ok(content.to_string())
            })?,
        }
    }
    Ok(())
}

/// `[mcp_servers.coord]` in Codex's config, and `[features].codex_hooks = true` taken back:
/// hooks are on by default, and earlier versions of `coord init` wrote that deprecated alias,
/// which Codex warns about on every run.
fn codex_toml(doc: &mut toml_edit::DocumentMut, rel: &str) -> Result<()> {
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            toml_edit::Item::Table(t)
        })
        .as_table_like_mut()
        .ok_or_else(|| cannot_merge(&format!("`{rel}`: `mcp_servers` is not a table")))?;
    if !servers.contains_key("coord") {
        let mut t = toml_edit::table();
        t["command"] = toml_edit::value(COORD);
        t["args"] = toml_edit::value(toml_edit::Array::from_iter(["mcp"]));
        servers.insert("coord", t);
    }
    if let Some(features) = doc.get_mut("features").and_then(|f| f.as_table_like_mut())
        && features.get("codex_hooks").and_then(|v| v.as_bool()) == Some(true)
    {
        features.remove("codex_hooks");
        if features.is_empty() {
            doc.remove("features");
        }
    }
    Ok(())
}

fn hook_entry(style: HookStyle, matcher: Option<&str>, cmd: &str) -> Value {
    match style {
        HookStyle::Claude { named } => {
            let hook = match named {
                true => json!({"name": "coord", "type": "command", "command": cmd}),
                false => json!({"type": "command", "command": cmd}),
            };
            match matcher {
                Some(m) => json!({"matcher": m, "hooks": [hook]}),
                None => json!({"hooks": [hook]}),
            }
        }
        HookStyle::Copilot => json!({
            "type": "command",
            "bash": cmd,
            // PowerShell has no `exec`.
            "powershell": cmd.strip_prefix("exec ").unwrap_or(cmd),
            "timeoutSec": 30,
        }),
        HookStyle::Flat { .. } => json!({ "command": cmd }),
    }
}

/// coord's registrations `set` merged into `doc` in `style`: an entry for each event that has
/// none running coord's command (and `version: 1` where the style has one).
pub(crate) fn merge_hooks(
    doc: &mut Map<String, Value>,
    file: &str,
    set: &HookSet,
    style: HookStyle,
) -> Result<()> {
    if matches!(
        style,
        HookStyle::Copilot | HookStyle::Flat { version: true }
    ) {
        doc.entry("version").or_insert(json!(1));
    }
    let hooks = object_at(doc, "hooks", file)?;
    for (event, matcher, cmd) in set {
        let groups = hooks.entry(*event).or_insert_with(|| json!([]));
        let groups = groups.as_array_mut().ok_or_else(|| {
            cannot_merge(&format!("`{file}`: `hooks.{event}` is not a JSON array"))
        })?;
        // Whether a group already runs `coord hook CLIENT` (any flags after it).
        let runs = |g: &Value| any_command(g, |c| is_command(c, cmd));
        if let HookStyle::Claude { .. } = style
            && let Some(group) = groups.iter_mut().find(|g| runs(g))
        {
            // coord's own group (coord's hook alone in it) follows coord's matcher, so a
            // tool coord learned to watch is added on the next run.
            let hooks = group.get("hooks").and_then(Value::as_array);
            let alone = hooks.is_some_and(|hs| hs.len() == 1);
            if let (Some(m), true, Some(g)) = (matcher, alone, group.as_object_mut())
                && g.get("matcher").and_then(Value::as_str) != Some(m)
            {
                g.insert("matcher".into(), json!(m));
            }
            continue;
        }
        if !groups.iter().any(|g| runs(g) || runs_own(g, cmd)) {
            groups.push(hook_entry(style, *matcher, cmd));
        }
    }
    Ok(())
}

/// The object at `doc[key]`, created empty when missing.
fn object_at<'a>(
    doc: &'a mut Map<String, Value>,
    key: &str,
    file: &str,
) -> Result<&'a mut Map<String, Value>> {
    let v = doc.entry(key).or_insert_with(|| json!({}));
    v.as_object_mut()
        .ok_or_else(|| cannot_merge(&format!("`{file}`: `{key}` is not a JSON object")))
}

/// The refusal of a file (or part of one, `what`) coord cannot merge into.
fn cannot_merge(what: &str) -> Error {
    Error::bad_input(format!(
        "{what}; coord cannot merge into it (nothing was written)"
    ))
}

/// The refusal of a file coord cannot parse as `what`; `run`: the command to run again.
fn invalid(file: &str, what: &str, why: impl std::fmt::Display, run: &str) -> Error {
    Error::bad_input(format!(
        "`{file}` is not valid {what} ({why}); fix or move it, then run `{run}` again (nothing was written)"
    ))
}

fn not_utf8(file: &str) -> Error {
    Error::bad_input(format!("`{file}` is not UTF-8 text (nothing was written)"))
}

/// `value` as pretty JSON ending in a line break, as coord writes its JSON files.
pub(crate) fn pretty_json(value: &impl Serialize) -> Vec<u8> {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text.into_bytes()
}

/// The real file behind `rel`, a link inside the root followed; `Err(why)`: a link leaving it.
fn resolve(root: &Path, rel: &str) -> std::result::Result<PathBuf, String> {
    let path = root.join(rel);
    if !fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink()) {
        return Ok(path);
    }
    match fs::canonicalize(&path) {
        Ok(real) if real.starts_with(root) => Ok(real),
        Ok(real) => Err(format!(
            "a symlink to {}, outside the workspace; coord does not write there",
            real.display()
        )),
        Err(e) => Err(format!("a symlink that cannot be followed ({e})")),
    }
}

/// `path` relative to `root` (whole when outside it).
fn rel_of(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).map(|p| p.to_string_lossy());
    rel.map_or_else(|_| path.display().to_string(), |p| p.into_owned())
}

/// The changes `init` plans, one per real file: what a client's [`Wire`]s write into. Every
/// file is read once; a second change to one file builds on the first.
#[derive(Default)]
struct Wiring {
    root: PathBuf,
    changes: Vec<Change>,
    skipped: Vec<Skipped>,
    /// The client being wired.
    client: Option<&'static str>,
}

impl Wiring {
    /// The file to write for `rel` (through a link inside the root) and its bytes; `None` for a
    /// link that leaves the root (noted as skipped).
    fn read(&mut self, rel: &str) -> Result<Option<(PathBuf, Option<Vec<u8>>)>> {
        let path = match resolve(&self.root, rel) {
            Ok(p) => p,
            Err(why) => {
                self.skipped.push(Skipped {
                    file: rel.to_string(),
                    client: self.client,
                    why,
                });
                return Ok(None);
            }
        };
        // A file already changed by this plan (a link to it): build on the planned bytes.
        if let Some(c) = self.changes.iter().find(|c| c.path == path) {
            return Ok(Some((path, c.content.clone())));
        }
        Ok(Some((path.clone(), read_regular(&path)?)))
    }

    fn record(&mut self, path: PathBuf, old: Option<Vec<u8>>, new: Vec<u8>) {
        if old.as_deref() == Some(new.as_slice()) {
            return;
        }
        if let Some(c) = self.changes.iter_mut().find(|c| c.path == path) {
            c.content = Some(new);
            return;
        }
        self.changes.push(Change {
            file: rel_of(&self.root, &path),
            action: if old.is_some() { "update" } else { "create" },
            content: Some(new),
            path,
            created_by_init: false,
        });
    }

    /// Merge into the JSON object in `rel` (created when missing) with `merge`. `comments`:
    /// the client reads the file as JSON with comments, and so does coord (they are kept).
    fn json(
        &mut self,
        rel: &str,
        comments: bool,
        merge: impl FnOnce(&mut Map<String, Value>) -> Result<()>,
    ) -> Result<()> {
        let Some((path, old)) = self.read(rel)? else {
            return Ok(());
        };
        let bytes = old.as_deref().unwrap_or_default();
        let parsed: Value = match serde_json::from_slice(bytes) {
            _ if bytes.iter().all(u8::is_ascii_whitespace) => Value::Object(Map::new()),
            Ok(v) => v,
            Err(e) if comments => {
                // Not plain JSON: JSON with comments, as the client reads it.
                let text = std::str::from_utf8(bytes).map_err(|_| not_utf8(rel))?;
                let new = jsonc::merge(text, merge).map_err(|why| {
                    let why = format!("{e}; {why}");
                    invalid(rel, "JSON, even allowing comments", why, "coord init")
                })?;
                self.record(path, old, new.into_bytes());
                return Ok(());
            }
            Err(e) => return Err(invalid(rel, "JSON", e, "coord init")),
        };
        let Value::Object(mut doc) = parsed.clone() else {
            return Err(cannot_merge(&format!("`{rel}` is not a JSON object")));
        };
        merge(&mut doc)?;
        if old.is_none() || parsed.as_object() != Some(&doc) {
            self.record(path, old, pretty_json(&doc));
        }
        Ok(())
    }

    /// Set the text file `rel` to what `edit` makes of its old text (empty when missing).
    fn edit_text(&mut self, rel: &str, edit: impl FnOnce(&str) -> Result<String>) -> Result<()> {
        let Some((path, old)) = self.read(rel)? else {
            return Ok(());
        };
        let bytes = old.as_deref().unwrap_or_default();
        let text = std::str::from_utf8(bytes).map_err(|_| not_utf8(rel))?;
        let new = edit(text)?;
        self.record(path, old, new.into_bytes());
        Ok(())
    }
}

/// The error for a `begin` marker without its `end`.
fn unterminated(rel: &str, begin: &str, end: &str, line: usize) -> Error {
    Error::bad_input(format!(
        "`{rel}`: coord's block starts at line {line} (`{begin}`) but has no `{end}`; add the end line where coord's text stops, or delete the begin line, then run coord again (nothing was written)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn blocks_are_appended_then_replaced_in_place() {
        let once = with_block("# Title\r\nkeep me", "<b>", "<e>", "one").unwrap();
        assert_eq!(once, "# Title\r\nkeep me\n\n<b>\none\n<e>\n");
        let twice = with_block(&once, "<b>", "<e>", "two").unwrap();
        assert_eq!(twice, "# Title\r\nkeep me\n\n<b>\ntwo\n<e>\n");
        assert_eq!(with_block(&twice, "<b>", "<e>", "two").unwrap(), twice);
    }

    #[test]
    fn an_unterminated_block_is_reported_with_its_line() {
        assert_eq!(find_block("a\n<b>\nmine\n", "<b>", "<e>"), Err(2));
        assert_eq!(find_block("<b>\n<b>\nx\n<e>\n", "<b>", "<e>"), Err(1));
        assert!(with_block("a\n<b>\nmine\n", "<b>", "<e>", "x").is_err());
        assert_eq!(find_block("<b>\nx\n<e>\n", "<b>", "<e>"), Ok(Some((0, 9))));
    }

    proptest! {
        /// Text before and after the block survives byte for byte, and a second run is a no-op.
        #[test]
        fn text_outside_the_block_is_kept(before in "(?s)[^<]{0,80}", after in "(?s)[^<]{0,80}", body in "[a-z \n]{0,40}") {
            let text = format!("{before}{BLOCK_BEGIN}\nold\n{BLOCK_END}{after}");
            let new = with_block(&text, BLOCK_BEGIN, BLOCK_END, &body).unwrap();
            prop_assert!(new.starts_with(&before));
            prop_assert!(new.ends_with(&after));
            prop_assert_eq!(with_block(&new, BLOCK_BEGIN, BLOCK_END, &body).unwrap(), new.clone());
            let fresh = with_block(&before, BLOCK_BEGIN, BLOCK_END, &body).unwrap();
            prop_assert!(fresh.starts_with(&before));
            prop_assert_eq!(with_block(&fresh, BLOCK_BEGIN, BLOCK_END, &body).unwrap(), fresh);
        }
    }
}
