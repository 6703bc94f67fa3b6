//! `coord init --remove`: take back exactly what `coord init` added — coord's hook entries, its
//! MCP server, its instructions and `.gitignore` blocks, and a file or folder init created that
//! holds nothing else now — keeping everything else as it is.

use std::path::{Path, PathBuf};

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstNode, CstObject, CstObjectProp, CstRootNode};
use serde::Serialize;
use serde_json::Value;

use super::Change;
use super::record::Record;
use super::unterminated;
use super::{find_block, has_command, is_command, not_utf8, read_regular, rel_of, resolve, texts};
use crate::client::{COORD, Client, MARKER, Wire, command};
use crate::error::{Error, Result};
use crate::fsutil;
use crate::layout;

/// What `init --remove` would do (or did).
#[derive(Debug, Clone, Serialize)]
pub struct Removal {
    /// The workspace root.
    pub root: String,
    /// The clients asked for.
    pub clients: Vec<&'static str>,
    /// Those of them that were wired here (their hook file ran coord's hook): the ones
    /// `--remove` really unwires.
    pub unwired: Vec<&'static str>,
    /// The clients still wired afterwards (their shared entries stay).
    pub remaining: Vec<&'static str>,
    /// Files changed or deleted, in order.
    pub changes: Vec<Change>,
    /// Whether `.coord/` is removed (init made it and nothing else is in it).
    pub remove_state_dir: bool,
    /// Whether `.coord/` is kept though init made it: it holds the workspace's state.
    pub state_dir_kept: bool,
    /// The state folder: `.coord/` in this tree, or the repository's (an absolute path) seen
    /// from a linked worktree, which has none of its own.
    pub state_dir: String,
    /// Another work tree of the repository is still wired: init's record, shared by the trees
    /// (keyed by the path in each), stays as it is for them.
    #[serde(skip)]
    others_wired: bool,
    /// The folders init created, from its record.
    #[serde(skip)]
    dirs: Vec<String>,
}

/// A file coord wires: a client's, as its [`Wire`] writes it, a text with coord's block
/// between two marker lines, or where a client keeps its user's answers about coord.
#[derive(Debug, Clone, Copy)]
enum FileKind {
    Wire(Wire),
    Text(&'static str, &'static str),
    Approvals,
}

/// The files `clients` wire (relative to the root), with their kind: theirs, the texts, then
/// the clients' approvals.
fn files_of(clients: &[Client]) -> Vec<(&'static str, FileKind)> {
    let wires = clients.iter().flat_map(|c| c.adapter().wiring);
    let wires = wires.map(|w| (w.file(), FileKind::Wire(*w)));
    let texts = texts(clients).into_iter();
    let texts = texts.map(|(file, begin, end, _)| (file, FileKind::Text(begin, end)));
    let approvals = clients.iter().filter_map(|c| c.adapter().approvals);
    let approvals = approvals.map(|file| (file, FileKind::Approvals));
    wires.chain(texts).chain(approvals).collect()
}

/// Compute what `init --remove` takes back in the folder `root` for `clients`; nothing is written.
pub fn plan_removal(root: &Path, clients: &[Client]) -> Result<Removal> {
    let record = Record::load(root);
    let left = |c: &&Client| !clients.contains(c) && c.adapter().wired(root);
    let remaining: Vec<Client> = Client::ALL.iter().filter(left).copied().collect();
    let names: Vec<&'static str> = clients.iter().map(|c| c.as_str()).collect();
    let unwired = clients.iter().filter(|c| c.adapter().wired(root));
    let unwired: Vec<&'static str> = unwired.map(|c| c.as_str()).collect();
    // The record and `.coord/` belong to the repository: another tree still wired keeps them.
    let others_wired = crate::worktree::others(root)
        .iter()
        .any(|t| Client::ALL.iter().any(|c| c.adapter().wired(&t.top)));
    // Files a remaining client uses too: its shared entries (the MCP server, the blocks) stay.
    // (None remaining: the texts are no one's.)
    let kept: Vec<PathBuf> = files_of(&remaining)
        .into_iter()
        .filter(|_| !remaining.is_empty())
        .filter_map(|(f, _)| resolve(root, f).ok())
        .collect();
    let mut changes: Vec<Change> = Vec::new();
    let files = files_of(clients).into_iter();
    for (kind, path) in files.filter_map(|(rel, kind)| Some((kind, resolve(root, rel).ok()?))) {
        if changes.iter().any(|u| u.path == path) {
            continue;
        }
        let Some(bytes) = read_regular(&path)? else {
            continue;
        };
        let file = rel_of(root, &path);
        let text = String::from_utf8(bytes).map_err(|_| match kind {
            FileKind::Approvals => invalid(&file, "JSON", "not UTF-8".into()),
            _ => not_utf8(&file),
        })?;
        let shared = kept.contains(&path);
        let stripped = match kind {
            FileKind::Text(..) if shared => continue,
            FileKind::Text(begin, end) => {
                strip_block(&text, begin, end).map_err(|l| unterminated(&file, begin, end, l))?
            }
            FileKind::Wire(Wire::Json(..)) => {
                strip_json(&text, &names, !shared).map_err(|why| invalid(&file, "JSON", why))?
            }
            // A file coord generated whole (a client's plugin) goes whole, if it is still coord's.
            FileKind::Wire(Wire::Generated(..)) if text.contains(MARKER) => None,
            FileKind::Wire(Wire::Generated(..)) => continue,
            FileKind::Wire(Wire::CodexToml(_)) => {
                strip_toml(&text, !shared).map_err(|why| invalid(&file, "TOML", why))?
            }
            // What a client wrote itself because of coord (Claude Code's answer about coord's
            // server): coord's entries go, the user's others stay.
            FileKind::Approvals => strip_approvals(&text, other_project_servers(root))
                .map_err(|why| invalid(&file, "JSON", why))?,
        };
        if stripped.as_deref() == Some(text.as_str()) {
            continue;
        }
        // Unchanged since init wrote it, and nothing of the user's lost: its bytes from before.
        let entry = record.files.get(&file);
        let as_written = entry.filter(|e| {
            e.after == text && equivalent(kind, stripped.as_deref(), e.before.as_deref())
        });
        let content = as_written.map_or(stripped, |e| e.before.clone());
        // What is left is what the file held before init: that outcome is a restore, however
        // it was reached.
        let action = match &content {
            None => "delete",
            Some(_) if entry.is_some_and(|e| e.before == content) => "restore",
            Some(_) => "update",
        };
        changes.push(Change {
            file,
            action,
            content: content.map(String::into_bytes),
            path,
            created_by_init: as_written.is_some_and(|e| e.before.is_none()),
        });
    }
    let all_gone = remaining.is_empty() && !others_wired;
    let shared = crate::worktree::shared_root(root);
    let state = layout::state_dir(&shared);
    let state_dir_only_record = all_gone
        && record.state_dir
        && crate::fsutil::read_dir(&state).is_ok_and(|entries| {
            entries
                .flatten()
                .all(|e| e.path() == layout::init_record(&shared))
        });
    Ok(Removal {
        root: root.display().to_string(),
        clients: names,
        unwired,
        remaining: remaining.iter().map(|c| c.as_str()).collect(),
        remove_state_dir: state_dir_only_record,
        state_dir_kept: all_gone && record.state_dir && !state_dir_only_record,
        state_dir: if shared == root {
            format!("{}/", layout::STATE_DIR)
        } else {
            format!("{}/", state.display())
        },
        others_wired,
        dirs: record.dirs,
        changes,
    })
}

/// The refusal of a file coord cannot parse as `what`.
fn invalid(file: &str, what: &str, why: String) -> Error {
    super::invalid(file, what, why, "coord init --remove")
}

/// Write what [`plan_removal`] computed, then remove the folders init created that are empty
/// now, and update (or drop) the record.
pub fn apply_removal(root: &Path, removal: &Removal) -> Result<()> {
    for u in &removal.changes {
        match &u.content {
            Some(bytes) => fsutil::replace_durable(&u.path, bytes)?,
            None => _ = fsutil::remove(&u.path)?,
        }
    }
    // Folders init created, and those that held a deleted file the record does not know,
    // deepest first, when empty.
    let mut dirs: Vec<PathBuf> = removal.dirs.iter().map(|d| root.join(d)).collect();
    let deleted = removal.changes.iter().filter(|u| u.content.is_none());
    for u in deleted.filter(|u| !u.created_by_init) {
        let above = u.path.ancestors().skip(1);
        let inside = above.take_while(|d| *d != root && d.starts_with(root));
        dirs.extend(inside.map(Path::to_path_buf));
    }
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    dirs.dedup();
    for d in &dirs {
        fsutil::raw::remove_empty_dir(d);
    }
    let shared = crate::worktree::shared_root(root);
    // Nothing is wired any more: the record goes.
    if removal.remaining.is_empty() && !removal.others_wired {
        fsutil::remove(&layout::init_record(&shared))?;
        if removal.remove_state_dir {
            fsutil::raw::remove_empty_dir(&layout::state_dir(&shared));
        }
    } else if !removal.others_wired {
        let mut record = Record::load(root);
        for u in &removal.changes {
            record.files.remove(&u.file);
        }
        record.dirs.retain(|d| root.join(d).is_dir());
        if layout::state_dir(&shared).is_dir() {
            record.save(root)?;
        }
    }
    Ok(())
}

/// Whether the file cut down to `stripped` says what `before` said (`None`: no file).
fn equivalent(kind: FileKind, stripped: Option<&str>, before: Option<&str>) -> bool {
    let (s, b) = (stripped.unwrap_or_default(), before.unwrap_or_default());
    let same = |value: fn(Option<&str>) -> Option<Value>| {
        value(stripped).map(pruned) == value(before).map(pruned)
    };
    match kind {
        FileKind::Text(..) => s.trim_end() == b.trim_end(),
        FileKind::Wire(Wire::Json(..)) => same(json_value),
        FileKind::Wire(Wire::CodexToml(_)) => same(toml_value),
        FileKind::Wire(Wire::Generated(..)) | FileKind::Approvals => stripped == before,
    }
}

/// `value` without empty arrays and objects (at any depth): an event list the user kept
/// empty, which the cut-down file no longer has, says nothing either.
fn pruned(value: Value) -> Value {
    let empty = |v: &Value| {
        v.as_array().is_some_and(Vec::is_empty) || v.as_object().is_some_and(|o| o.is_empty())
    };
    match value {
        Value::Object(o) => {
            let o = o.into_iter().map(|(k, v)| (k, pruned(v)));
            Value::Object(o.filter(|(_, v)| !empty(v)).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(pruned).collect()),
        v => v,
    }
}

/// JSON with comments (and whatever else a client may accept) as a value; blank is `{}`.
fn json_value(text: Option<&str>) -> Option<Value> {
    match text {
        Some(t) if !t.trim().is_empty() => CstRootNode::parse(t, &ParseOptions::default())
            .ok()?
            .to_serde_value(),
        _ => Some(Value::Object(Default::default())),
    }
}

/// A TOML document as JSON, to compare two documents by what they say.
fn toml_value(text: Option<&str>) -> Option<Value> {
    let doc: toml_edit::DocumentMut = text.unwrap_or_default().parse().ok()?;
    let table = doc.as_table().clone().into_inline_table();
    Some(toml_plain(&toml_edit::Value::InlineTable(table)))
}

fn toml_plain(v: &toml_edit::Value) -> Value {
    use toml_edit::Value as T;
    match v {
        T::String(s) => Value::String(s.value().clone()),
        T::Integer(i) => Value::from(*i.value()),
        T::Float(f) => Value::from(*f.value()),
        T::Boolean(b) => Value::Bool(*b.value()),
        T::Datetime(d) => Value::String(d.value().to_string()),
        T::Array(a) => Value::Array(a.iter().map(toml_plain).collect()),
        T::InlineTable(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.to_string(), toml_plain(v)))
                .collect(),
        ),
    }
}

/// A file's text with coord's part cut out (`None`: nothing else was left), or why it cannot be.
type Stripped<E = String> = std::result::Result<Option<String>, E>;

/// `text` without coord's block (and the line break after it; the blank line init put before
/// a block it appended at the end); `None` when nothing but blank space is left.
pub(super) fn strip_block(text: &str, begin: &str, end: &str) -> Stripped<usize> {
    let Some((start, mut stop)) = find_block(text, begin, end)? else {
        return Ok(Some(text.to_string()));
    };
    if text[stop..].starts_with("\r\n") {
        stop += 2;
    } else if text[stop..].starts_with('\n') {
        stop += 1;
    }
    let mut head = &text[..start];
    if stop == text.len() && head.ends_with("\n\n") {
        head = &head[..head.len() - 1];
    }
    let out = format!("{head}{}", &text[stop..]);
    Ok((!out.trim().is_empty()).then_some(out))
}

/// JSON (with comments) without the hook entries `coord init` wrote for `clients` and, with
/// `mcp`, without its `coord` MCP server; containers emptied by that go too. `None` when
/// nothing else is left.
fn strip_json(text: &str, clients: &[&str], mcp: bool) -> Stripped {
    if text.trim().is_empty() {
        return Ok(None);
    }
    // A hook entry whose own `command` or `bash` is the one `coord init` writes for a client.
    let ours = |v: &CstNode| {
        let inits = |c: &str| clients.iter().any(|cl| is_command(c, &command(cl, None)));
        has_command(&v.to_serde_value().unwrap_or(Value::Null), inits)
    };
    let cut = |obj: &CstObject| {
        let mut cut = false;
        let events = obj.object_value("hooks").map(|h| h.properties());
        for prop in events.unwrap_or_default() {
            let Some(groups) = prop.array_value() else {
                continue;
            };
            let mut removed = false;
            for group in groups.elements() {
                let inner = group.as_object().and_then(|o| o.array_value("hooks"));
                let hooks = inner.map(|i| i.elements()).unwrap_or_default();
                let count = hooks.len();
                let mine: Vec<CstNode> = hooks.into_iter().filter(ours).collect();
                removed |= ours(&group) || !mine.is_empty();
                if ours(&group) || (!mine.is_empty() && mine.len() == count) {
                    group.remove();
                } else {
                    mine.into_iter().for_each(CstNode::remove);
                }
            }
            if removed && groups.elements().is_empty() {
                prop.remove();
            }
            cut |= removed;
        }
        if cut {
            drop_empty(obj, "hooks");
        }
        // The server lists: `mcpServers` (most clients; `command` is coord) and OpenCode's
        // `mcp` (`command` is `["coord", "mcp"]`).
        for key in ["mcpServers", "mcp"].into_iter().filter(|_| mcp) {
            let Some(server) = obj.object_value(key).and_then(|s| s.get("coord")) else {
                continue;
            };
            let command = server.value().and_then(|v| v.to_serde_value());
            if command.is_some_and(|v| v["command"] == COORD || v["command"][0] == COORD) {
                server.remove();
                cut = true;
                drop_empty(obj, key);
            }
        }
        cut
    };
    // Nothing but scaffolding left (Copilot's `version`): nothing of anyone's.
    cut_jsonc(text, cut, |obj| {
        obj.properties()
            .iter()
            .all(|p| p.name().and_then(|n| n.decoded_value().ok()).as_deref() == Some("version"))
    })
}

/// `text` (JSON with comments) once `cut` took coord's entries out of its top object (it says
/// whether there were any); `None` when `empty` finds nothing else left.
fn cut_jsonc(
    text: &str,
    cut: impl FnOnce(&CstObject) -> bool,
    empty: impl FnOnce(&CstObject) -> bool,
) -> Stripped {
    let root = CstRootNode::parse(text, &ParseOptions::default()).map_err(|e| e.to_string())?;
    let Some(obj) = root.object_value() else {
        return Err("the top level is not an object".into());
    };
    if !cut(&obj) {
        return Ok(Some(text.to_string()));
    }
    Ok((!empty(&obj)).then(|| root.to_string()))
}

/// Whether the project's `.mcp.json` names a server other than coord's.
fn other_project_servers(root: &std::path::Path) -> bool {
    let text = crate::fsutil::read_capped(&root.join(".mcp.json"), 16 * 1024 * 1024)
        .ok()
        .and_then(|b| String::from_utf8(b).ok());
    json_value(text.as_deref())
        .and_then(|v| v.get("mcpServers")?.as_object().cloned())
        .is_some_and(|servers| servers.keys().any(|k| k != "coord"))
}

/// Claude Code's local settings (JSON with comments) without what its user answered about
/// coord: `coord` in `enabledMcpjsonServers` and `disabledMcpjsonServers`, coord's tools in
/// `permissions` (`mcp__coord`, `mcp__coord__lock`), and `enableAllProjectMcpServers` where
/// coord's was the project's only server (`others`: it has others). Lists and objects emptied
/// by that go too; `None` when nothing else is left.
fn strip_approvals(text: &str, others: bool) -> Stripped {
    if text.trim().is_empty() {
        return Ok(Some(text.to_string()));
    }
    let cut = |obj: &CstObject| {
        let mut cut = cut_coords_names(obj, &["enabledMcpjsonServers", "disabledMcpjsonServers"]);
        if let Some(perms) = obj.object_value("permissions")
            && cut_coords_names(&perms, &["allow", "deny", "ask"])
        {
            drop_empty(obj, "permissions");
            cut = true;
        }
        if !others
            && let Some(p) = obj.get("enableAllProjectMcpServers")
            && p.value().and_then(|v| v.to_serde_value()) == Some(Value::Bool(true))
        {
            p.remove();
            cut = true;
        }
        cut
    };
    cut_jsonc(text, cut, |obj| obj.properties().is_empty())
}

/// Take coord's names (`coord`, `mcp__coord`, `mcp__coord__TOOL`) out of the list `obj[key]`
/// for each of `keys`, and a list that empties; whether any was there.
fn cut_coords_names(obj: &CstObject, keys: &[&str]) -> bool {
    let coords = |e: &CstNode| {
        let name = e.to_serde_value().unwrap_or(Value::Null);
        let name = name.as_str().unwrap_or_default();
        name == "coord" || name == "mcp__coord" || name.starts_with("mcp__coord__")
    };
    let mut removed = false;
    for key in keys {
        let list = obj.array_value(key).map(|l| l.elements());
        let mine: Vec<CstNode> = list.into_iter().flatten().filter(coords).collect();
        if !mine.is_empty() {
            mine.into_iter().for_each(CstNode::remove);
            drop_empty(obj, key);
            removed = true;
        }
    }
    removed
}

/// Remove `obj[key]` when it is an empty object or list (coord's entries were all it held).
fn drop_empty(obj: &CstObject, key: &str) {
    let value = |p: &CstObjectProp| p.value().and_then(|v| v.to_serde_value());
    let empty = |v: Value| v == Value::Object(Default::default()) || v == Value::Array(vec![]);
    if let Some(p) = obj.get(key).filter(|p| value(p).is_some_and(empty)) {
        p.remove();
    }
}

/// TOML without coord's `[mcp_servers.coord]` (with `mcp`); `None` when nothing is left.
fn strip_toml(text: &str, mcp: bool) -> Stripped {
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| e.to_string())?;
    let servers = doc
        .get_mut("mcp_servers")
        .and_then(|i| i.as_table_like_mut());
    let command = |s: &dyn toml_edit::TableLike| {
        let coord = s.get("coord").and_then(|c| c.as_table_like());
        coord.and_then(|c| c.get("command")?.as_str()) == Some(COORD)
    };
    let Some(servers) = servers.filter(|s| mcp && command(&**s)) else {
        return Ok(Some(text.to_string()));
    };
    servers.remove("coord");
    if servers.is_empty() {
        doc.remove("mcp_servers");
    }
    let out = doc.to_string();
    Ok((!out.trim().is_empty()).then_some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_appended_at_the_end_is_cut_with_its_blank_line() {
        let b = |t: &str| strip_block(t, "<b>", "<e>");
        assert_eq!(b("mine\n\n<b>\nx\n<e>\n"), Ok(Some("mine\n".into())));
        assert_eq!(b("<b>\nx\n<e>\n"), Ok(None));
        assert_eq!(b("a\n<b>\nx\n<e>\nafter\n"), Ok(Some("a\nafter\n".into())));
        assert_eq!(b("a\n<b>\nx\n"), Err(2));
    }

    #[test]
    fn only_inits_entries_are_cut_from_json() {
        let text = "{\n  // mine\n  \"hooks\": {\n    \"Stop\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"./mine.sh\"}]},\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"coord hook claude\"}]}\n    ]\n  },\n  \"mcpServers\": {\"coord\": {\"command\": \"coord\", \"args\": [\"mcp\"]}}\n}\n";
        let out = strip_json(text, &["claude"], true).unwrap().unwrap();
        let kept = out.contains("// mine") && out.contains("./mine.sh");
        assert!(
            kept && !out.contains("coord hook") && !out.contains("mcpServers"),
            "{out}"
        );
        assert_eq!(
            strip_json(text, &["codex"], false).unwrap().as_deref(),
            Some(text)
        );
    }

    #[test]
    fn only_coords_answers_are_cut_from_claudes_local_settings() {
        let text = "{\n  // mine\n  \"enabledMcpjsonServers\": [\"docs\", \"coord\"],\n  \"permissions\": {\"allow\": [\"mcp__coord__lock\", \"Bash(npm test)\"], \"deny\": [\"mcp__coord\"]},\n  \"enableAllProjectMcpServers\": true\n}\n";
        let out = strip_approvals(text, true).unwrap().unwrap();
        assert_eq!(
            json_value(Some(&out)).unwrap(),
            serde_json::json!({
                "enabledMcpjsonServers": ["docs"],
                "permissions": {"allow": ["Bash(npm test)"]},
                "enableAllProjectMcpServers": true,
            }),
            "{out}"
        );
        assert!(out.contains("// mine"), "{out}");
        // coord's the project's only server: the answer to "all of them" was about coord.
        let only = "{\"enabledMcpjsonServers\": [\"coord\"], \"enableAllProjectMcpServers\": true}";
        assert_eq!(strip_approvals(only, false), Ok(None));
        let theirs = "{\"enabledMcpjsonServers\": []}";
        assert_eq!(
            strip_approvals(theirs, false).unwrap().as_deref(),
            Some(theirs)
        );
    }
}
