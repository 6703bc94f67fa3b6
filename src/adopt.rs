//! A repository nobody set up for coord, kept clean: coord's files never show in `git status`,
//! and the user's `.gitignore` is never written.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::fsutil;
use crate::layout;
use crate::textblock;
use crate::worktree;

/// The most bytes of a `.gitignore` or an exclude file read.
const IGNORE_CAP: u64 = 16 * 1024 * 1024;

/// The most folders looked into for submodules' git folders.
const MODULE_FOLDERS: usize = 2_000;

/// Keep coord's files out of `git status` around `root`: `prepare` (makes `.coord/`), coord's
/// block in the `info/exclude` of the repository and its submodules, then `.coord/.gitignore`.
/// Not when adopted already, outside git, wired by `coord init` (its block in the `.gitignore`
/// of `root` or of the top level), or turned off ([`switched_off`]).
pub fn adopt(root: &Path, prepare: impl FnOnce() -> Result<()>) -> Result<()> {
    let marker = layout::state_gitignore(&worktree::shared_root(root));
    if fs::symlink_metadata(&marker).is_ok() {
        return Ok(());
    }
    let Some((top, repository)) = worktree::enclosing_repository(root) else {
        return Ok(());
    };
    let wired = |dir: &Path| {
        fsutil::read_capped(&dir.join(".gitignore"), IGNORE_CAP)
            .is_ok_and(|b| String::from_utf8_lossy(&b).contains(layout::IGNORE_BEGIN))
    };
    if wired(root) || (top != root && wired(&top)) || switched_off(&repository) {
        return Ok(());
    }
    prepare()?;
    // A file that cannot be written, or holds a block with no end, is left as it is.
    for repository in std::iter::once(&repository).chain(&submodules(&repository)) {
        exclude(repository);
    }
    fsutil::replace_durable(&marker, b"*\n")
}

/// Whether the repository whose git folder is `repository` turned coord off: its `config`
/// sets `coord.enabled` to a git false (`false`, `no`, `off`, `0`, empty).
pub fn switched_off(repository: &Path) -> bool {
    // Not set, or a bare `enabled` (true): on.
    let value = crate::gitconfig::file_value(&repository.join("config"), "coord", "enabled");
    let value = value.flatten().map(|v| v.to_ascii_lowercase());
    matches!(value.as_deref(), Some("false" | "no" | "off" | "0" | ""))
}

/// Add coord's block to `<repository>/info/exclude`, best effort (`None`: left as it is); a git
/// folder that is not there (gone since it was found) is never made.
fn exclude(repository: &Path) -> Option<()> {
    let info = repository.join("info");
    let path = info.join("exclude");
    let old = fsutil::if_found(fsutil::read_capped(&path, IGNORE_CAP)).ok()?;
    let old = old.map_or_else(String::new, |b| String::from_utf8_lossy(&b).into_owned());
    let lines = layout::GITIGNORE_LINES.join("\n");
    let new = textblock::with_block(&old, layout::IGNORE_BEGIN, layout::IGNORE_END, &lines).ok()?;
    if new != old {
        // One `mkdir`, which fails where the git folder itself is gone.
        match fsutil::raw::create_dir(&info) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(()),
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return None,
            _ => {}
        }
        fsutil::replace_durable(&path, new.as_bytes()).ok()?;
    }
    Some(())
}

/// The git folders of the submodules of the repository at `common`, at any depth below its
/// `modules/` and each linked worktree's (a name may hold slashes; submodules nest).
pub(crate) fn submodules(common: &Path) -> Vec<PathBuf> {
    let worktrees = fsutil::read_dir(common.join("worktrees"))
        .into_iter()
        .flatten();
    let mut todo = vec![common.join("modules")];
    todo.extend(worktrees.flatten().map(|e| e.path().join("modules")));
    let mut found = Vec::new();
    let mut looked = 0;
    while looked < MODULE_FOLDERS
        && let Some(dir) = todo.pop()
    {
        looked += 1;
        for entry in fsutil::read_dir(&dir).into_iter().flatten().flatten() {
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = entry.path();
            if fs::symlink_metadata(path.join("HEAD")).is_ok_and(|m| m.is_file()) {
                todo.push(path.join("modules"));
                found.push(path);
            } else {
                todo.push(path);
            }
        }
    }
    found.sort();
    found
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests plant files by hand
mod tests {
    use super::*;

    /// A repository removed between its discovery and the write (a test folder torn down under
    /// a running hook) must not come back as a bare `.git/info/` that makes its parent folder
    /// look like a repository to every later coord.
    #[test]
    fn a_git_folder_that_is_gone_is_not_made_again() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join(".git");
        exclude(&gone).unwrap();
        assert!(
            !gone.exists(),
            "coord made a git folder where there was none"
        );
        std::fs::create_dir(&gone).unwrap();
        exclude(&gone).unwrap();
        let text = std::fs::read_to_string(gone.join("info/exclude")).unwrap();
        assert!(text.contains(layout::IGNORE_BEGIN));
    }

    #[test]
    fn the_switch_reads_git_booleans() {
        for (config, off) in [
            ("[coord]\n\tenabled = false\n", true),
            (
                "[core]\n\tbare = false\n[Coord]\n  Enabled=no ; mine\n",
                true,
            ),
            ("[coord] enabled = off\n", true),
            ("[coord]\n\tenabled = true\n", false),
            ("[coord]\n\tenabled\n", false),
            (
                "[coord]\n\tenabled = false\n[coord]\n\tenabled = yes\n",
                false,
            ),
            ("[core]\n\tenabled = false\n", false),
            ("[coord \"x\"]\n\tenabled = false\n", false),
            ("", false),
        ] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("config"), config).unwrap();
            assert_eq!(switched_off(dir.path()), off, "{config}");
        }
    }

    #[test]
    fn submodules_are_the_git_folders_below_modules() {
        let dir = tempfile::tempdir().unwrap();
        let common = dir.path();
        for git in [
            "modules/a",
            "modules/libs/b",
            "modules/a/modules/c",
            "worktrees/w/modules/d",
        ] {
            std::fs::create_dir_all(common.join(git)).unwrap();
            std::fs::write(common.join(git).join("HEAD"), "ref: refs/heads/x\n").unwrap();
        }
        std::fs::create_dir_all(common.join("modules/empty")).unwrap();
        let found = submodules(common);
        let rel: Vec<_> = found
            .iter()
            .map(|p| p.strip_prefix(common).unwrap())
            .collect();
        let want = [
            "modules/a",
            "modules/a/modules/c",
            "modules/libs/b",
            "worktrees/w/modules/d",
        ];
        assert_eq!(rel, want.map(Path::new));
    }
}
