//! `coord guard`: git hooks that refuse a commit or a push touching a file another agent holds.
//! Shell commands slip past tool hooks; `pre-commit` checks the staged paths, `pre-push` the
//! paths of the pushed commits. Renames count under both names (git runs with `--no-renames`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::clock;
use crate::error::Refusal;
use crate::error::{Error, Result};
use crate::fsutil;
use crate::lock::{self, LockState};
use crate::presence::StateCache;
use crate::workspace::{AgentId, Workspace};

/// The line that marks a hook script as coord's.
pub const MARKER: &str = "# coord guard:";

const HOOKS: [&str; 2] = ["pre-commit", "pre-push"];

/// The suffix an existing hook is renamed with; coord's hook runs it after its own check.
const CHAINED_SUFFIX: &str = ".chained";

/// The most bytes of a hook read to tell whether it is coord's.
const HOOK_CAP: u64 = 1024 * 1024;

/// A file that another agent holds.
#[derive(Debug, Clone, Serialize)]
pub struct Held {
    /// The file, relative to the workspace root.
    pub file: String,
    /// The holder's display name.
    pub holder: String,
    /// `LIVE` or `CONFLICT`.
    pub state: LockState,
    /// When it was locked (RFC 3339), when known.
    pub since: Option<String>,
    /// When it goes, in words after "released" (see `LockEntry::released_when`).
    #[serde(skip)]
    pub released: &'static str,
}

impl Held {
    /// `locked by HOLDER (STATE since WHEN), released WHEN`, as a refusal lists it.
    pub fn locked_by(&self, now: &clock::Timestamp) -> String {
        let since = lock::since_text(self.since.as_deref(), now);
        let (holder, state, released) = (&self.holder, self.state.as_str(), self.released);
        format!("locked by {holder} ({state} since {since}), released {released}")
    }
}

/// How long a push's check waits for the remote's claims before it judges by the last read.
pub const REMOTE_BUDGET: std::time::Duration = std::time::Duration::from_secs(10);

fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>> {
    let shown = args.join(" ");
    let failed = Error::failed;
    let out = Command::new("git").args(args).current_dir(dir).output();
    let out = out.map_err(|e| failed(format!("cannot run `git {shown}`: {e}")))?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        return Err(failed(format!("`git {shown}` failed: {}", why.trim())));
    }
    Ok(out.stdout)
}

fn git_line(dir: &Path, args: &[&str]) -> Result<String> {
    Ok(String::from_utf8_lossy(&git(dir, args)?).trim().to_string())
}

/// The top folder of the work tree `dir` is in.
pub fn toplevel(dir: &Path) -> Result<PathBuf> {
    git_line(dir, &["rev-parse", "--show-toplevel"]).map(PathBuf::from)
}

/// Where git looks for hooks: `core.hooksPath` (relative to the top folder), else `hooks` of
/// the common git dir.
pub fn hooks_dir(dir: &Path) -> Result<PathBuf> {
    let top = toplevel(dir)?;
    if let Ok(path) = git_line(dir, &["config", "--get", "core.hooksPath"])
        && !path.is_empty()
    {
        return Ok(top.join(crate::gitconfig::expand_home(&path)));
    }
    // Relative to `dir` (an absolute path replaces it whole).
    let common = git_line(dir, &["rev-parse", "--git-common-dir"])?;
    Ok(dir.join(common).join("hooks"))
}

/// What `install` did with one hook.
#[derive(Debug, Clone, Serialize)]
pub struct Installed {
    /// `pre-commit` or `pre-push`.
    pub hook: String,
    /// The script.
    pub path: String,
    /// `installed`, `updated` (an older coord hook rewritten), `already installed`.
    pub outcome: &'static str,
    /// An earlier hook now run after coord's check, renamed to this.
    pub chained: Option<String>,
}

/// Install the pre-commit and pre-push hooks in the hooks folder of the repository at `dir`.
/// `coord` names the binary the hooks run when `coord` is not on their `PATH`.
pub fn install(dir: &Path, coord: &Path) -> Result<Vec<Installed>> {
    let hooks = hooks_dir(dir)?;
    fsutil::ensure_dir(&hooks)?;
    let install = |name: &str| {
        let path = hooks.join(name);
        let script = script(name, coord);
        let mut chained = None;
        // Read as `uninstall_in` reads it: never through a link, never blocking on a FIFO, and
        // never a large file whole (none of those is coord's hook, so it is chained).
        let outcome = match fsutil::read_capped(&path, HOOK_CAP) {
            Ok(b) if b == script.as_bytes() => "already installed",
            // An older coord hook is rewritten in place; its chained hook stays.
            Ok(b) if String::from_utf8_lossy(&b).contains(MARKER) => "updated",
            _ if fs::symlink_metadata(&path).is_err() => "installed",
            _ => {
                let aside = hooks.join(format!("{name}{CHAINED_SUFFIX}"));
                if fs::symlink_metadata(&aside).is_ok() {
                    let (p, a) = (path.display(), aside.display());
                    let why =
                        format!("both `{p}` and `{a}` exist; coord does not know which to keep");
                    let hint = Some(format!("merge them into `{a}` by hand"));
                    return Err(Error::refused(Refusal::Conflict, why, hint));
                }
                fsutil::rename(&path, &aside)?;
                chained = Some(aside.display().to_string());
                "installed"
            }
        };
        if outcome != "already installed" {
            fsutil::replace_durable(&path, script.as_bytes())?;
            fsutil::make_executable(&path)?;
        }
        Ok(Installed {
            hook: name.into(),
            path: path.display().to_string(),
            outcome,
            chained,
        })
    };
    HOOKS.into_iter().map(install).collect()
}

/// What `uninstall` did with one hook.
#[derive(Debug, Clone, Serialize)]
pub struct Uninstalled {
    /// `pre-commit` or `pre-push`.
    pub hook: String,
    /// The script.
    pub path: String,
    /// `removed`, `restored` (coord's hook removed and the chained one back in its place),
    /// `not installed`, or `not coord's` (a hook coord did not write, left alone).
    pub outcome: &'static str,
}

/// Remove coord's hooks from `hooks` ([`hooks_dir`]), putting back a hook `install` chained; a
/// hook that is not coord's is left alone. With `dry_run`, only say what it would do.
pub fn uninstall_in(hooks: &Path, dry_run: bool) -> Result<Vec<Uninstalled>> {
    let uninstall = |name: &str| {
        let path = hooks.join(name);
        let aside = hooks.join(format!("{name}{CHAINED_SUFFIX}"));
        let ours = fs::symlink_metadata(&path).is_ok_and(|m| m.is_file())
            && fsutil::read_capped(&path, HOOK_CAP)
                .is_ok_and(|b| String::from_utf8_lossy(&b).contains(MARKER));
        let outcome = match (ours, fs::symlink_metadata(&aside).is_ok()) {
            (true, true) => "restored",
            (true, false) => "removed",
            _ if fs::symlink_metadata(&path).is_ok() => "not coord's",
            _ => "not installed",
        };
        match outcome {
            // The rename puts the chained hook back in one step: never a moment without it.
            "restored" if !dry_run => fsutil::rename(&aside, &path)?,
            "removed" if !dry_run => _ = fsutil::remove(&path)?,
            _ => {}
        }
        Ok(Uninstalled {
            hook: name.into(),
            path: path.display().to_string(),
            outcome,
        })
    };
    HOOKS.into_iter().map(uninstall).collect()
}

/// The hook script: coord's check, then the chained hook with the same arguments and input.
fn script(name: &str, coord: &Path) -> String {
    let head = format!(
        "#!/bin/sh\n\
         {MARKER} refuse a {what} touching a file another agent holds (COORD_GUARD=warn|off).\n\
         # An earlier hook, if any, was renamed {name}{CHAINED_SUFFIX} and runs after the check.\n\
         coord=coord\n\
         command -v coord >/dev/null 2>&1 || coord='{bin}'\n\
         if ! command -v \"$coord\" >/dev/null 2>&1; then\n\
         \x20 echo \"warning: coord guard: coord not found; not checked\" >&2\n\
         \x20 coord=true\n\
         fi\n\
         chained=\"$(dirname \"$0\")/{name}{CHAINED_SUFFIX}\"\n",
        what = if name == "pre-push" { "push" } else { "commit" },
        bin = coord.display().to_string().replace('\'', r"'\''"),
    );
    if name == "pre-commit" {
        return format!(
            "{head}\"$coord\" -q guard check --staged\n\
             [ $? -eq 4 ] && exit 4\n\
             if [ -x \"$chained\" ]; then exec \"$chained\" \"$@\"; fi\n\
             exit 0\n"
        );
    }
    format!(
        "{head}input=$(mktemp) || exit 1\n\
         trap 'rm -f \"$input\"' EXIT\n\
         cat >\"$input\"\n\
         refused=0\n\
         while read -r local_ref local_sha remote_ref remote_sha; do\n\
         \x20 case \"$local_sha\" in *[!0]*) ;; *) continue ;; esac\n\
         \x20 case \"$remote_sha\" in\n\
         \x20   *[!0]*) \"$coord\" -q guard check \"$remote_sha..$local_sha\" ;;\n\
         \x20   *) \"$coord\" -q guard check \"$local_sha\" --not --remotes=\"$1\" ;;\n\
         \x20 esac\n\
         \x20 [ $? -eq 4 ] && refused=1\n\
         done <\"$input\"\n\
         [ $refused -eq 1 ] && exit 4\n\
         if [ -x \"$chained\" ]; then \"$chained\" \"$@\" <\"$input\"; exit $?; fi\n\
         exit 0\n"
    )
}

/// The files git tracks in the work tree at `dir`, relative to its top folder.
pub fn tracked(dir: &Path) -> Result<Vec<String>> {
    git_names(dir, &["ls-files", "-z", "--full-name"])
}

/// The staged paths (old and new names of renames), relative to the top folder.
pub fn staged(dir: &Path) -> Result<Vec<String>> {
    let args = ["diff", "--cached", "--name-only", "--no-renames", "-z"];
    git_names(dir, &args)
}

/// The paths with changes not staged (tracked files; untracked ones too when `untracked`),
/// relative to the top folder: what `git commit -a` (or a `git add` first) would take.
pub fn unstaged(dir: &Path, untracked: bool) -> Result<Vec<String>> {
    let mut args = vec!["ls-files", "-z", "--full-name", "--modified", "--deleted"];
    if untracked {
        args.extend(["--others", "--exclude-standard"]);
    }
    git_names(dir, &args)
}

/// The paths changed by the commits `revs` name (`A..B`, or `B --not --remotes=origin`), old
/// and new names of renames, relative to the top folder.
pub fn changed(dir: &Path, revs: &[String]) -> Result<Vec<String>> {
    let mut args = vec!["log", "--format=", "--name-only", "--no-renames", "-z"];
    args.extend(revs.iter().map(String::as_str));
    args.push("--");
    git_names(dir, &args)
}

/// The names git's `-z` output lists, each exactly as it is (a name may begin or end with a
/// newline), once.
fn git_names(dir: &Path, args: &[&str]) -> Result<Vec<String>> {
    let mut seen = std::collections::HashSet::new();
    let out = git(dir, args)?;
    let names = out
        .split(|b| *b == 0)
        .map(|n| String::from_utf8_lossy(n).into_owned());
    Ok(names
        .filter(|n| !n.is_empty() && seen.insert(n.clone()))
        .collect())
}

/// Of `paths` (relative to the git top folder `top`), those locked `LIVE` (or in conflict) by
/// an agent other than `me` (by anyone when `me` is `None`); for a `push`, also those another
/// clone's agent claims through the remote (contract §13), as last synced and within their lease.
/// Claims that cannot be read are an error: they still hold.
pub fn held(
    ws: &Workspace,
    top: &Path,
    paths: &[String],
    me: Option<&AgentId>,
    push: bool,
) -> Result<Vec<Held>> {
    let top = fs::canonicalize(top).unwrap_or_else(|_| top.to_path_buf());
    // Each path is judged in its own workspace (a repository may hold one in `repo/sub/.coord`,
    // whose holders' presence lies there). Group 0 is `ws`.
    let mut groups: Vec<(Workspace, Vec<crate::workspace::Target>)> =
        vec![(ws.clone(), Vec::new())];
    let mut group_of_dir = std::collections::HashMap::new();
    for p in paths {
        let abs = top.join(p);
        let mut above = abs.ancestors().skip(1);
        let Some(dir) = above.find(|d| d.is_dir()).map(Path::to_path_buf) else {
            continue;
        };
        let g = *group_of_dir.entry(dir).or_insert_with_key(|dir| {
            let w = Workspace::discover(None, dir)
                .ok()
                .filter(|w| w.root().starts_with(&top))
                .unwrap_or_else(|| ws.clone());
            let at = groups.iter().position(|(x, _)| x.root() == w.root());
            at.unwrap_or_else(|| {
                groups.push((w, Vec::new()));
                groups.len() - 1
            })
        });
        let w = &groups[g].0;
        if let Some(target) = w.rel(&abs).and_then(|rel| w.target_from_rel(&rel).ok()) {
            groups[g].1.push(target);
        }
    }
    let mut out = Vec::new();
    for (w, targets) in &groups {
        out.extend(held_in(w, targets, me)?);
    }
    if push && let Some(cfg) = crate::remote::config(ws) {
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let claims = crate::remote::claims_on(ws, &refs);
        for p in paths {
            for c in claims.iter().filter(|c| !c.stale && c.pattern.matches(p)) {
                out.push(Held {
                    file: p.clone(),
                    holder: format!(
                        "{} ({} `{}` through remote `{}`)",
                        c.holder.describe(),
                        c.kind.word(),
                        c.pattern,
                        cfg.remote
                    ),
                    state: LockState::Live,
                    since: Some(clock::format_timestamp(&c.since)),
                    released: "when its holder releases it or stops renewing its lease",
                });
            }
        }
    }
    Ok(out)
}

/// Of `targets` in `w`, those locked `LIVE` (or in conflict) or claimed by an agent other than
/// `me` (by anyone when `me` is `None`). Claims that cannot be read are an error.
pub fn held_in(
    w: &Workspace,
    targets: &[crate::workspace::Target],
    me: Option<&AgentId>,
) -> Result<Vec<Held>> {
    let now = clock::now();
    let mut out = Vec::new();
    let mut add = |file: &String, holder: String, e: &lock::LockEntry| {
        if e.excludes(me) {
            out.push(Held {
                file: file.clone(),
                holder,
                state: e.state,
                since: e.locked_at().map(str::to_string),
                released: e.released_when(),
            })
        }
    };
    let cache = &mut StateCache::default();
    let claims = lock::claim::judged_patterns(w.root(), cache, &now)?;
    for target in targets {
        for c in claims.iter().filter(|c| c.pattern.matches(&target.rel)) {
            add(
                &target.rel,
                lock::claim::holder_text(w.root(), &c.entry),
                &c.entry,
            );
        }
    }
    for (target, mut entries) in targets.iter().zip(lock::locks_of_each(targets)) {
        lock::classify(w.root(), &mut entries, cache, &now);
        for e in entries {
            add(&target.rel, e.holder().to_string(), &e);
        }
    }
    Ok(out)
}
