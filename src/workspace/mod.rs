//! The workspace: its root, who is acting, and which files may be named.

use std::fs;
use std::path::{Component, Path, PathBuf};

use crate::adopt;
use crate::arbiter;
use crate::error::{Error, IoResultExt, Result};
use crate::fsutil;
use crate::layout;
use crate::pattern::{self, Pattern};
use crate::worktree::shared_root;

pub mod nested;

pub use crate::error::quote::is_valid_agent_id;

/// Who is acting: the id used in file names and the name as given, for display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentId {
    id: String,
    name: String,
}

impl AgentId {
    /// Validate a name as given (`Claude` → id `claude`, display `Claude`).
    pub fn parse(name: &str) -> Result<AgentId> {
        let id = name.to_ascii_lowercase();
        let why = if name.is_empty() {
            "it is empty"
        } else if !name.is_ascii() {
            "only ASCII letters, digits, `_` and `-` are allowed"
        } else if name.len() > 32 {
            "it is longer than 32 characters"
        } else if !is_valid_agent_id(&id) {
            "only letters, digits, `_` and `-` are allowed, starting with a letter or digit"
        } else {
            let name = name.to_string();
            return Ok(AgentId { id, name });
        };
        let (name, why) = (name.to_string(), why.to_string());
        Err(Error::InvalidAgent { name, why })
    }

    /// The id: lower-case, safe in file names.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The name as given, for display inside files.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl std::fmt::Display for AgentId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.id)
    }
}

/// A file inside the workspace: its absolute path and its path relative to the root.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Target {
    /// Relative to the root, `/`-separated. First, so targets sort by it.
    pub rel: String,
    /// Absolute, with symlinks resolved.
    pub abs: PathBuf,
}

impl Target {
    /// Whether the file exists as a regular file (`false`: it does not exist yet).
    pub fn regular_or_absent(&self) -> Result<bool> {
        self.not_coords_own()?;
        let why = match fs::symlink_metadata(&self.abs) {
            Ok(meta) if meta.is_file() => return Ok(true),
            Err(_) => return Ok(false),
            Ok(meta) if meta.is_dir() => format!(
                "it is not a regular file but a folder (`{}/`, with a trailing `/`, claims it with everything below)",
                self.rel
            ),
            Ok(_) => "it is not a regular file".into(),
        };
        Err(Error::bad_path(&self.rel, why))
    }

    /// Refuse one of coord's own files (`F.lock.claude`) as a file to lock or write.
    pub fn not_coords_own(&self) -> Result<()> {
        let name = self.abs.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let Some(kind) = layout::own_file_kind(name) else {
            return Ok(());
        };
        let why = format!("it is {kind} of coord's, not a file to lock or write");
        Err(Error::bad_path(&self.rel, why))
    }
}

/// The shared working folder.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Find the root.
    pub fn discover(explicit: Option<&Path>, cwd: &Path) -> Result<Workspace> {
        let root = match explicit {
            Some(dir) => {
                let canon = canonical_dir(&cwd.join(dir))?;
                enclosing_workspace(&canon).unwrap_or(canon)
            }
            None => {
                let cwd = fs::canonicalize(cwd).at("resolve the current directory", cwd)?;
                enclosing_workspace(&cwd)
                    .or_else(|| git_top_level(&cwd))
                    .unwrap_or(cwd)
            }
        };
        Ok(Workspace { root })
    }

    /// Make `dir` a workspace of its own, even inside another one: create its `.coord/`.
    pub fn init(dir: &Path) -> Result<(Workspace, bool)> {
        let ws = Workspace::at(canonical_dir(dir)?);
        let (_, made) = ws.make_state_dir()?;
        Ok((ws, made))
    }

    /// A workspace at an already resolved root (tests, the demo).
    pub fn at(root: PathBuf) -> Workspace {
        Workspace { root }
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Create `.coord/` when missing, sweep temporary files, learn the policy and adopt the tree.
    pub fn ensure_state_dir(&self) -> Result<PathBuf> {
        let (dir, _) = self.make_state_dir()?;
        self.sweep_temps_once();
        // Detected before the first file is published: a network filesystem needs care from it.
        let _ = self.policy();
        self.adopt()?;
        Ok(dir)
    }

    /// `.coord/`, made when missing (then `true`) and noted by the workspace around this one.
    fn make_state_dir(&self) -> Result<(PathBuf, bool)> {
        let dir = layout::state_dir(&shared_root(&self.root));
        // The root was resolved (no symlink above it), so a real folder at `.coord` is all
        // there is to check; anything else (missing, a symlink, a file) takes the careful path.
        if fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            return Ok((dir, false));
        }
        // Never the root itself: a workspace removed (`rm -rf`) while a coord process still ran
        // in it is not brought back by that process.
        if !fs::symlink_metadata(&self.root).is_ok_and(|m| m.is_dir()) {
            let gone =
                std::io::Error::new(std::io::ErrorKind::NotFound, "the workspace folder is gone");
            return Err(gone).at("create folder", &dir);
        }
        fsutil::ensure_dir(&dir)?;
        // Made now: the workspace around this one, if any, learns that it holds it.
        nested::register(&self.root);
        Ok((dir, true))
    }

    /// Keep coord's files out of `git status` in a git work tree nobody set up ([`adopt`]).
    pub fn adopt(&self) -> Result<()> {
        static LOOKED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
        {
            let mut looked = LOOKED.lock().unwrap_or_else(|e| e.into_inner());
            if looked.contains(&self.root) {
                return Ok(());
            }
            looked.push(self.root.clone());
        }
        // `.coord/` first (its own call here returns at once: looked at already).
        adopt::adopt(&self.root, || self.ensure_state_dir().map(drop))
    }

    /// Remove temporary files killed coord processes left in the root, `.coord/` and the queues.
    fn sweep_temps_once(&self) {
        static SWEPT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if SWEPT.swap(true, std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let shared = shared_root(&self.root);
        fsutil::sweep_temps(&self.root);
        fsutil::sweep_temps(&layout::state_dir(&shared));
        // `.coord/queue/` and its queue folders (a symlink there is not entered), in one listing.
        if let Ok(entries) = fsutil::read_dir(layout::queue_root(&shared)) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    fsutil::sweep_temps(&entry.path());
                } else {
                    fsutil::sweep_entry(&entry);
                }
            }
        }
    }

    /// Take the workspace mutex (creating `.coord/` when needed).
    pub fn lock_mutex(&self) -> Result<arbiter::Guard> {
        self.lock_mutex_within(arbiter::MUTEX_PATIENCE)
    }

    /// [`Workspace::lock_mutex`], waiting at most `patience` for a holder to let go.
    pub fn lock_mutex_within(&self, patience: std::time::Duration) -> Result<arbiter::Guard> {
        // `.coord/` removed (`git clean`) between creating it and opening the mutex: made again.
        self.require_arbitration()?;
        let mutex = layout::mutex(&shared_root(&self.root));
        let mut tries = 0;
        loop {
            self.ensure_state_dir()?;
            match arbiter::Guard::take(&mutex, self.policy()?.arbitration, patience) {
                Err(Error::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound && tries < 100 =>
                {
                    tries += 1;
                }
                other => return other,
            }
        }
    }

    /// Refuse, before anything is written, where no arbitration holds (an rclone mount).
    pub fn require_arbitration(&self) -> Result<()> {
        let policy = self.policy()?;
        if policy.arbitration == arbiter::Arbitration::None {
            let (root, filesystem) = (self.root.clone(), policy.fs.name);
            return Err(Error::NoArbitration { root, filesystem });
        }
        Ok(())
    }

    /// What the folder is on and how coord arbitrates there (detected once per process).
    pub fn policy(&self) -> Result<arbiter::Policy> {
        arbiter::policy(&self.root)
    }

    /// Resolve a path to one file given relative to `cwd`, taken literally (a tool's path).
    pub fn resolve(&self, cwd: &Path, arg: &str) -> Result<Target> {
        let bad = |why: &str| Error::bad_path(arg, why);
        if arg.is_empty() {
            return Err(bad("it is empty"));
        }
        if arg.contains('\0') {
            return Err(bad("it contains a NUL byte"));
        }
        let joined = cwd.join(arg);
        let Some(Component::Normal(name)) = joined.components().next_back() else {
            return Err(bad("it does not name a file"));
        };
        let parent = joined.parent().unwrap_or(Path::new("/"));
        // The root is resolved already: a file right in it (the usual case) needs no lookup.
        let parent = if parent == self.root {
            self.root.clone()
        } else {
            fs::canonicalize(parent).map_err(|_| bad("its folder does not exist"))?
        };
        let mut abs = parent.join(name);
        if fs::symlink_metadata(&abs).is_ok_and(|m| m.is_symlink()) {
            abs = fs::canonicalize(&abs).map_err(|_| bad("it is a dangling symlink"))?;
        }
        if !abs.starts_with(&self.root) {
            let (path, root) = (arg.to_string(), self.root.clone());
            return Err(Error::OutsideRoot { path, root });
        }
        let rel = self.rel(&abs).ok_or_else(|| bad("it is not valid UTF-8"))?;
        if rel.is_empty() {
            return Err(bad("it is the workspace root itself"));
        }
        if rel.split('/').next() == Some(layout::STATE_DIR) {
            return Err(bad("files under `.coord/` belong to coord itself"));
        }
        Ok(Target { rel, abs })
    }

    /// A FILE argument of a command (CLI or MCP), given relative to `cwd`.
    pub fn file_arg(&self, cwd: &Path, arg: &str) -> Result<FileArg> {
        if pattern::is_claim(arg) {
            return self.claim(cwd, arg).map(FileArg::Claim);
        }
        self.resolve(cwd, &pattern::literal_name(arg))
            .map(FileArg::File)
    }

    /// [`Workspace::file_arg`] of each argument: the files and the claims, each in order.
    pub fn file_args(&self, cwd: &Path, args: &[String]) -> Result<(Vec<Target>, Vec<Pattern>)> {
        let (mut files, mut claims) = (Vec::new(), Vec::new());
        for a in args {
            match self.file_arg(cwd, a)? {
                FileArg::File(t) => files.push(t),
                FileArg::Claim(p) => claims.push(p),
            }
        }
        Ok((files, claims))
    }

    /// The FILE argument of `coord COMMAND`, which acts on one file's content: a claim refused.
    pub fn one_file(&self, cwd: &Path, arg: &str, command: &str) -> Result<Target> {
        match self.file_arg(cwd, arg) {
            Ok(FileArg::File(t)) => Ok(t),
            Ok(FileArg::Claim(_)) | Err(Error::BadPattern { .. }) => Err(Error::NotOneFile {
                arg: arg.to_string(),
                command: command.to_string(),
            }),
            Err(e) => Err(e),
        }
    }

    /// A claim argument (a folder with a trailing `/`, or a pattern) as a pattern on the root.
    pub fn claim(&self, cwd: &Path, arg: &str) -> Result<Pattern> {
        let bad = |why: String| Error::BadPattern {
            pattern: arg.to_string(),
            why,
        };
        let root = self.root.display().to_string();
        let (arg, cwd) = match arg.strip_prefix(root.as_str()) {
            Some(rest) if rest.starts_with('/') => (rest.trim_start_matches('/'), self.root()),
            _ => (arg, cwd),
        };
        if arg.starts_with('/') {
            return Err(bad("it must be relative to the current directory".into()));
        }
        // Relative to the current directory, like a FILE: the folder of `cwd` below the root
        // comes first. `..` may climb toward the root, never out of it.
        let cwd = fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        let Some(base) = self.rel(&cwd) else {
            return Err(bad("the current directory is outside the workspace".into()));
        };
        let mut parts: Vec<&str> = base.split('/').filter(|s| !s.is_empty()).collect();
        let trailing = arg.ends_with('/');
        for p in arg.split('/').filter(|s| !s.is_empty() && *s != ".") {
            if p != ".." {
                parts.push(p);
            } else if parts.pop().is_none() {
                return Err(bad("it leaves the workspace".into()));
            }
        }
        let text = parts.join("/") + if trailing { "/" } else { "" };
        Pattern::parse(&text).map_err(bad)
    }

    /// Where a path in a folder not made yet would be once a client's tool made it.
    pub fn resolve_unmade(&self, cwd: &Path, path: &str) -> Option<Target> {
        if path.is_empty() || path.contains('\0') {
            return None;
        }
        let joined = cwd.join(path);
        let parent = joined.parent()?;
        if fs::symlink_metadata(parent).is_ok() {
            return None;
        }
        let parts: Vec<Component<'_>> = joined.components().collect();
        // The longest leading part that exists, resolved.
        let (mut abs, rest) = (1..parts.len()).rev().find_map(|n| {
            let head: PathBuf = parts[..n].iter().collect();
            fs::canonicalize(&head).ok().map(|c| (c, &parts[n..]))
        })?;
        for c in rest {
            match c {
                Component::Normal(name) => abs.push(name),
                Component::ParentDir => _ = abs.pop(),
                _ => {}
            }
        }
        let rel = self.rel(&abs).filter(|r| !r.is_empty())?;
        (rel.split('/').next() != Some(layout::STATE_DIR)).then_some(Target { rel, abs })
    }

    /// The target for a path already relative to the root (as found in a lock record).
    pub fn target_from_rel(&self, rel: &str) -> Result<Target> {
        if Path::new(rel).is_absolute() {
            let why = "expected a path relative to the workspace root";
            return Err(Error::bad_path(rel, why));
        }
        self.resolve(&self.root, rel)
    }

    /// The path of `abs` relative to the root, `/`-separated, when it is inside.
    pub fn rel(&self, abs: &Path) -> Option<String> {
        let rel = abs.strip_prefix(&self.root).ok()?;
        let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
        parts.map(|p| p.join("/"))
    }
}

/// What a FILE argument names (see [`Workspace::file_arg`]).
#[derive(Debug, Clone)]
pub enum FileArg {
    /// One file.
    File(Target),
    /// A claim on a folder or a pattern, relative to the root.
    Claim(Pattern),
}

/// `dir` with symlinks resolved, when it is an existing folder.
fn canonical_dir(dir: &Path) -> Result<PathBuf> {
    let bad = |why: String| Error::bad_path(dir.display().to_string(), why);
    let canon = fs::canonicalize(dir)
        .map_err(|e| bad(format!("the workspace folder cannot be used ({e})")))?;
    if !canon.is_dir() {
        return Err(bad("the workspace must be a folder".into()));
    }
    Ok(canon)
}

/// The nearest of `dir` and its ancestors that holds a `.coord/` folder (not a symlink).
fn enclosing_workspace(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .enumerate()
        .find(|(i, d)| {
            fsutil::real_entry(&layout::state_dir(&shared_root(d)))
                .is_some_and(|m| m.is_dir() && (*i == 0 || trusted_from_below(&m)))
                || crate::worktree::is_linked(d)
        })
        .map(|(_, d)| d.to_path_buf())
}

/// Whether a `.coord/` found above the starting folder may be joined: it is the user's own,
/// or it is shared with one of the user's groups (group-writable).
fn trusted_from_below(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    if meta.uid() == rustix::process::geteuid().as_raw() {
        return true;
    }
    if meta.mode() & 0o020 == 0 {
        return false;
    }
    let gid = meta.gid();
    rustix::process::getegid().as_raw() == gid
        || rustix::process::getgroups().is_ok_and(|groups| groups.iter().any(|g| g.as_raw() == gid))
}

/// The top level of the git work tree holding `dir` (of the outermost superproject's).
fn git_top_level(dir: &Path) -> Option<PathBuf> {
    let has_git = |d: &&Path| fsutil::real_entry(&d.join(".git")).is_some();
    let mut top = dir.ancestors().find(has_git)?.to_path_buf();
    while let Some(outer) = crate::worktree::superproject_of(&top) {
        top = outer;
    }
    Some(top)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests plant files by hand
mod tests {
    use super::*;

    #[test]
    fn agent_names() {
        let a = AgentId::parse("Claude").unwrap();
        assert_eq!((a.id(), a.name()), ("claude", "Claude"));
        assert_eq!(AgentId::parse("AGENT-1").unwrap().id(), "agent-1");
        assert!(AgentId::parse(&"a".repeat(32)).is_ok());
        let long = "a".repeat(33);
        for bad in ["", "../x", "a/b", ".", "-x", "_x", "a b", "ünï", &long] {
            assert!(AgentId::parse(bad).is_err(), "{bad:?} must be refused");
        }
    }

    #[test]
    fn paths_stay_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir(root.join("sub")).unwrap();
        let ws = Workspace::at(root.clone());
        let t = ws.resolve(&root.join("sub"), "../SHARED.txt").unwrap();
        assert_eq!(t.rel, "SHARED.txt");
        assert_eq!(t.abs, root.join("SHARED.txt"));
        assert_eq!(ws.resolve(&root, "sub/x.md").unwrap().rel, "sub/x.md");
        for bad in ["sub/..", ".coord/mutex", "nope/x"] {
            assert!(ws.resolve(&root, bad).is_err(), "{bad}");
        }
        std::os::unix::fs::symlink("/etc/passwd", root.join("evil")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("evildir")).unwrap();
        for outside in ["../outside", "/etc/passwd", "evil", "evildir/passwd"] {
            let got = ws.resolve(&root, outside);
            assert!(matches!(got, Err(Error::OutsideRoot { .. })), "{outside}");
        }
    }

    #[test]
    fn discovery_finds_the_nearest_coord_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir_all(root.join(".coord")).unwrap();
        fs::create_dir_all(root.join("a/b")).unwrap();
        let ws = Workspace::discover(None, &root.join("a/b")).unwrap();
        assert_eq!(ws.root(), root);
        // An explicit folder inside the workspace means the workspace, not a nested one.
        let ws = Workspace::discover(Some(Path::new("a")), &root).unwrap();
        assert_eq!(ws.root(), root);
        assert!(Workspace::discover(Some(Path::new("missing")), &root).is_err());
        // ... until `init` makes it one of its own.
        let (ws, created) = Workspace::init(&root.join("a")).unwrap();
        assert!(created);
        assert_eq!(ws.root(), root.join("a"));
        let ws = Workspace::discover(Some(Path::new("a")), &root).unwrap();
        assert_eq!(ws.root(), root.join("a"));
        assert!(!Workspace::init(&root.join("a")).unwrap().1);
    }

    #[test]
    fn discovery_falls_back_to_the_git_top_level_then_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir_all(root.join("repo/.git")).unwrap();
        fs::create_dir_all(root.join("repo/src/a")).unwrap();
        fs::create_dir_all(root.join("plain/x")).unwrap();
        let ws = Workspace::discover(None, &root.join("repo/src/a")).unwrap();
        assert_eq!(ws.root(), root.join("repo"));
        // An explicit folder is taken as given when no workspace encloses it.
        let ws = Workspace::discover(Some(Path::new("repo/src")), &root).unwrap();
        assert_eq!(ws.root(), root.join("repo/src"));
        // A `.coord/` inside the repository wins over its top level.
        fs::create_dir_all(root.join("repo/src/.coord")).unwrap();
        let ws = Workspace::discover(None, &root.join("repo/src/a")).unwrap();
        assert_eq!(ws.root(), root.join("repo/src"));
    }
}
