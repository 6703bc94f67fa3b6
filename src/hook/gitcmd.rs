//! The commits and pushes a shell command makes: `git commit`, `git push`, and the forms agents
//! write (`git -C DIR commit`, `git commit -am …`, `cd x && git commit`, `A=b git push`).

/// What a git invocation does that the guard checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitAction {
    Commit {
        /// Takes unstaged changes of tracked files too (`-a`, `-i`, `-o`, or paths).
        all: bool,
        /// A `git add` ran before it in the same command line (what it stages is not staged
        /// yet when the command is read).
        added: bool,
    },
    Push,
}

/// One commit or push, with the folder it runs in: relative to the command's start folder,
/// `cd` and `-C` applied in order (empty: the start folder).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitCall {
    /// The folder, as written (`cd`s then `-C`s joined).
    pub dir: Vec<String>,
    pub action: GitAction,
}

/// Every `git commit` and `git push` in `command`, in order.
pub fn calls(command: &str) -> Vec<GitCall> {
    let mut out = Vec::new();
    let mut dir: Vec<String> = Vec::new();
    let mut added = false;
    for words in commands(command) {
        let mut w = words.iter().map(String::as_str).peekable();
        // Leading `VAR=value` assignments.
        while w.next_if(|s| is_assignment(s)).is_some() {}
        let Some(first) = w.next() else { continue };
        if first == "cd" {
            match w.next() {
                Some(d) => dir.push(d.to_string()),
                None => dir.clear(),
            }
            continue;
        }
        if first != "git" && !first.ends_with("/git") {
            continue;
        }
        let mut here = dir.clone();
        let mut sub = None;
        while let Some(word) = w.next() {
            match word {
                "-C" => here.extend(w.next().map(str::to_string)),
                "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path" => {
                    w.next();
                }
                s if s.starts_with('-') => {}
                s => {
                    sub = Some(s);
                    break;
                }
            }
        }
        let action = match sub {
            Some("commit") => GitAction::Commit {
                all: commit_takes_unstaged(&mut w),
                added,
            },
            Some("push") => GitAction::Push,
            Some("add") => {
                added = true;
                continue;
            }
            _ => continue,
        };
        out.push(GitCall { dir: here, action });
    }
    out
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// Whether the rest of a `git commit` takes changes not yet staged.
fn commit_takes_unstaged<'a>(args: &mut impl Iterator<Item = &'a str>) -> bool {
    // Options whose value is the next word when not attached.
    const VALUED: &str = "-m --message -F --file -C --reuse-message -c --reedit-message --fixup \
        --squash --author --date -t --template --cleanup --trailer --pathspec-from-file";
    let mut paths = false;
    while let Some(a) = args.next() {
        match a {
            "-a" | "--all" | "-i" | "--include" | "-o" | "--only" => return true,
            "--" => return args.next().is_some(),
            a if VALUED.split_whitespace().any(|v| v == a) => {
                args.next();
            }
            a if a.starts_with("--") => {}
            a if a.starts_with('-') => {
                // `-am`: a flag taking a value ends the cluster (`-ma`: `a` is the message;
                // `-qm wip`: the next word); `-S` takes only an attached key.
                let flags = &a[1..];
                for (i, c) in flags.char_indices() {
                    match c {
                        'a' | 'i' | 'o' => return true,
                        'm' | 'F' | 'C' | 'c' | 't' => {
                            if i + c.len_utf8() == flags.len() {
                                args.next();
                            }
                            break;
                        }
                        'S' => break,
                        _ => {}
                    }
                }
            }
            _ => paths = true,
        }
    }
    paths
}

/// The simple commands of a command line, as words (quotes removed).
fn commands(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut words: Vec<String> = Vec::new();
    // The word being read, once anything (even `''`) began it.
    let mut word: Option<String> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let quoted = chars.by_ref().take_while(|&c| c != '\'');
                word.get_or_insert_default().extend(quoted);
            }
            '"' => {
                let w = word.get_or_insert_default();
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => w.extend(chars.next()),
                        c => w.push(c),
                    }
                }
            }
            // A line continuation (or a backslash ending the text): gone, word and all.
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(n) => word.get_or_insert_default().push(n),
            },
            ';' | '&' | '|' | '\n' | '(' | ')' => {
                words.extend(word.take());
                out.push(std::mem::take(&mut words));
            }
            c if c.is_whitespace() => words.extend(word.take()),
            c => word.get_or_insert_default().push(c),
        }
    }
    words.extend(word);
    out.push(words);
    out.retain(|w| !w.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A commit in `dir` (`all`: it takes unstaged changes; `added`: a `git add` ran before).
    fn commit(dir: &[&str], all: bool, added: bool) -> GitCall {
        GitCall {
            dir: dir.iter().map(|s| s.to_string()).collect(),
            action: GitAction::Commit { all, added },
        }
    }

    #[test]
    fn the_forms_agents_write() {
        let c = |all| vec![commit(&[], all, false)];
        let push = GitCall {
            dir: vec![],
            action: GitAction::Push,
        };
        for (command, want) in [
            // Git options before the subcommand are stepped over.
            ("git --no-pager commit -m x", c(false)),
            ("git -p --bare commit -a -m x", c(true)),
            // A word is a variable assignment only with a shell name before `=`: anything else
            // is the command itself, so the git after it is just an argument.
            ("GIT_DIR_2=x git commit -m m", c(false)),
            ("my-var=1 git commit -m m", vec![]),
            ("2X=1 git commit -m m", vec![]),
            ("=1 git commit -m m", vec![]),
            // What `git commit` takes besides the index: options are not paths, and a message
            // is never a path.
            ("git commit --amend -m x", c(false)),
            ("git commit -qm wip", c(false)),
            ("git commit -S -m wip", c(false)),
            ("git commit -SABCD -m wip", c(false)),
            ("git commit -vam wip", c(true)),
            ("git commit -m 'fix a.txt and b.txt'", c(false)),
            ("git commit -m x --", c(false)),
            ("git commit -m x -- --odd.txt", c(true)),
            // A backslash before a newline continues the line: it is no word of its own.
            ("git commit -m x \\\n  --amend", c(false)),
            ("git commit -m x \\\n  b.txt", c(true)),
            ("git comm\\\nit -m x", c(false)),
            ("git commit -m 'wip'", c(false)),
            ("git commit -am \"fix it\"", c(true)),
            ("git commit -ma", c(false)),
            ("git commit --all -m x", c(true)),
            ("git commit -m x a.txt", c(true)),
            (
                "git -C sub commit -m x",
                vec![commit(&["sub"], false, false)],
            ),
            (
                "cd sub && git add . && git commit -m 'x; y'",
                vec![commit(&["sub"], false, true)],
            ),
            (
                "GIT_AUTHOR_NAME=bot /usr/bin/git -c user.name=x commit -q -m m",
                c(false),
            ),
            (
                "git add -A; git commit -m x && git push origin main",
                vec![commit(&[], false, true), push],
            ),
            ("git status && echo 'git commit'", vec![]),
            ("git log --grep commit", vec![]),
            ("", vec![]),
        ] {
            assert_eq!(calls(command), want, "{command:?}");
        }
    }
}
