//! One room per agent client: everything coord knows about Claude Code, Codex CLI, Gemini CLI
//! and Copilot CLI, each in its own module behind the [`Adapter`] trait.
//!
//! An adapter says how its client names events ([`Adapter::kind`]), which of its tools edit
//! which files ([`Adapter::edited`]), how a reply is written back ([`Adapter::render`]), what
//! `coord init` registers for it ([`Adapter::hooks`], [`Adapter::wire`]), its plugin
//! ([`Adapter::plugin`]), and what makes the client run those
//! hooks at all ([`Adapter::trust_step`], [`Adapter::trust`]). The core ([`crate::hook`],
//! [`crate::init`], `coord doctor`) only ever goes through the trait: a fifth client is one
//! new module and one line in the [`clients!`] list below.

pub mod claude;
pub mod cline;
pub mod codex;
pub mod copilot;
pub mod cursor;
pub mod gemini;
pub mod opencode;
pub mod qwen;
pub mod windsurf;

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::error::Result;
use crate::hook::{Kind, Reply};
use crate::init::{HookSet, Wiring};

/// Everything coord knows about one agent client.
pub trait Adapter: Sync {
    /// The name used on the command line and in agent ids (`claude`).
    fn name(&self) -> &'static str;

    /// The client's product name (`Claude Code`).
    fn product(&self) -> &'static str;

    /// What an event, as the client names it, is about.
    fn kind(&self, event: &str) -> Kind;

    /// The files a tool call edits, as written in the payload's tool arguments (`input` is the
    /// payload's `tool_input`/`toolArgs` as sent, string or object); `None` for a tool that
    /// edits nothing.
    fn edited(&self, tool: &str, input: &Value) -> Option<Vec<String>>;

    /// The command a shell tool call runs, and the folder it runs in when the call names one;
    /// `None` for a tool that is not the client's shell.
    fn shell(&self, tool: &str, input: &Value) -> Option<Shell> {
        let _ = (tool, input);
        None
    }

    /// The reply as the client's JSON; `None` when nothing is printed.
    fn render(&self, reply: &Reply) -> Option<Value>;

    /// Whether a client process started with `args` (its command line after the program,
    /// whose standard input is a terminal when `stdin_terminal` says so) runs without anyone
    /// at it: one prompt, then it exits (`claude -p`, `codex exec`). The end of its turn then
    /// waits for no user.
    fn headless(&self, args: &[String], stdin_terminal: Option<bool>) -> bool {
        let _ = (args, stdin_terminal);
        false
    }

    /// The payload in the shape [`crate::hook::parse`] reads (`hook_event_name`, `session_id`,
    /// `cwd`, `tool_name`, `tool_input`, `stop_hook_active`), for a client whose payload is
    /// shaped otherwise (Cursor, Windsurf); as sent by default.
    fn normalize(&self, payload: Value) -> Value {
        payload
    }

    /// Whether the client is told "no" by exit status 2 with the reason on stderr (Windsurf)
    /// rather than by JSON on stdout.
    fn denies_by_exit_status(&self) -> bool {
        false
    }

    /// coord's hook registrations for this client: event, matcher, `coord hook NAME ...`.
    /// `coord init` ([`Adapter::wire`]) and the plugin ([`Adapter::plugin`]) both register
    /// exactly these. Empty for a client whose hooks are a plugin file of coord's own
    /// (OpenCode, Cline: `coord init` writes the file).
    fn hooks(&self) -> HookSet;

    /// This client's plugin (or extension): the files of its folder, and the client's own
    /// commands that install it from there and remove it; `None` for a client coord writes no
    /// plugin for (`coord init --client NAME` wires it per repository).
    fn plugin(&self, spec: &crate::plugin::Spec) -> Option<crate::plugin::Bundle>;

    /// Register coord's hooks (every event) and MCP server with this client in `w`.
    ///
    /// # Errors
    ///
    /// A file that exists but cannot be parsed or merged.
    fn wire(&self, w: &mut Wiring) -> Result<()>;

    /// The instructions file the client reads besides `AGENTS.md` (`CLAUDE.md`), if any.
    fn instruction_file(&self) -> Option<&'static str> {
        None
    }

    /// The one step that makes the client run this folder's hooks (its own trust gate), said
    /// to the user by `coord init` and `coord doctor`.
    fn trust_step(&self, root: &Path) -> String;

    /// Whether the client will run the hooks of `root`, as far as its own config files (and
    /// environment) show.
    fn trust(&self, root: &Path) -> Trust;

    /// Whether git runs its hooks (coord's pre-commit / pre-push guard) for a commit made
    /// through the client's shell tool, and why; coord's pre-tool hook checks such commits
    /// either way.
    fn shell_git_hooks(&self) -> (bool, &'static str) {
        (
            true,
            "its shell tool runs git with the repository's own config",
        )
    }

    /// The file holding coord's hook registration, relative to the workspace root.
    fn hook_file(&self) -> &'static str;

    /// Whether `coord init` wired this client in `root` (its hook file runs `coord hook NAME`).
    fn wired(&self, root: &Path) -> bool {
        crate::fsutil::read_capped(&root.join(self.hook_file()), 16 * 1024 * 1024)
            .ok()
            .is_some_and(|b| {
                String::from_utf8_lossy(&b).contains(&format!("coord hook {}", self.name()))
            })
    }
}

/// Whether `args` hold one of the options `short` and `long` (`--long=VALUE` too).
fn has_option(args: &[String], short: &str, long: &str) -> bool {
    args.iter().any(|a| {
        a == short || a == long || a.strip_prefix(long).is_some_and(|r| r.starts_with('='))
    })
}

/// A shell tool call: the command line, and the folder it runs in when the call says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shell {
    /// The command line as the model wrote it.
    pub command: String,
    /// The folder, when the call names one (relative to the payload's `cwd`).
    pub dir: Option<String>,
}

/// The shell call of a tool named `name` whose arguments hold the command under `command`
/// (and the folder under `dir_key`).
fn shell_call(tool: &str, name: &str, input: &Value, dir_key: Option<&str>) -> Option<Shell> {
    if tool != name {
        return None;
    }
    let args = args_object(input);
    let command = match &args["command"] {
        Value::String(s) => s.clone(),
        // An argv: `["bash", "-lc", "script"]` runs its last word.
        Value::Array(words) => words.last()?.as_str()?.to_string(),
        _ => return None,
    };
    Some(Shell {
        command,
        dir: dir_key.and_then(|k| str_field(&args, &[k])),
    })
}

/// Whether a client runs a folder's hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HooksRun {
    /// Its config trusts the folder (or trust is off).
    Yes,
    /// Its config does not: the hooks are skipped, edits go through unlocked.
    No,
    /// Its config cannot be read.
    Unknown,
}

/// What a client's own config says about running a folder's hooks.
#[derive(Debug, Clone, Serialize)]
pub struct Trust {
    /// The verdict.
    pub hooks_run: HooksRun,
    /// Which file or variable says so.
    pub why: String,
}

impl Trust {
    fn new(hooks_run: HooksRun, why: impl Into<String>) -> Trust {
        Trust {
            hooks_run,
            why: why.into(),
        }
    }
}

/// The user's home folder (`HOME`).
fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// `VAR` when set and not empty, else `default` under the home folder.
fn dir_from_env(var: &str, under_home: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| home().map(|h| h.join(under_home)))
}

/// Outcome of reading a client's config file.
enum Config {
    /// The file is not there.
    Missing,
    /// It is there but cannot be read or parsed (why).
    Bad(String),
    /// Its value.
    Value(Value),
}

/// Read a client's JSON config file (`comments`: JSON with `//` and `/* */` comments).
fn read_config(path: &Path, comments: bool) -> Config {
    let bytes = match crate::fsutil::read_capped(path, 256 * 1024 * 1024) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Config::Missing,
        Err(e) => return Config::Bad(format!("cannot read {}: {e}", path.display())),
    };
    let text = String::from_utf8_lossy(&bytes);
    let parsed = if comments {
        let opts = jsonc_parser::ParseOptions {
            allow_comments: true,
            ..Default::default()
        };
        jsonc_parser::cst::CstRootNode::parse(&text, &opts)
            .map_err(|e| e.to_string())
            .and_then(|root| root.to_serde_value().ok_or_else(|| "empty".to_string()))
    } else {
        serde_json::from_str(&text).map_err(|e| e.to_string())
    };
    match parsed {
        Ok(v) => Config::Value(v),
        Err(e) => Config::Bad(format!("{} cannot be parsed: {e}", path.display())),
    }
}

/// `path` and each folder above it, nearest first, as strings.
fn self_and_ancestors(path: &Path) -> impl Iterator<Item = String> + '_ {
    path.ancestors().map(|p| p.to_string_lossy().into_owned())
}

/// Declares the clients: the enum [`Client`], [`Client::ALL`] and the adapter of each.
macro_rules! clients {
    ($($variant:ident => $adapter:expr),+ $(,)?) => {
        /// The agent clients coord has adapters for.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Client {
            $(
                #[doc = concat!("The `", stringify!($variant), "` client.")]
                $variant,
            )+
        }

        impl Client {
            /// Every client, in the order `coord init --client all` wires them.
            pub const ALL: &'static [Client] = &[$(Client::$variant),+];

            /// Everything coord knows about this client.
            pub fn adapter(self) -> &'static dyn Adapter {
                match self {
                    $(Client::$variant => &$adapter,)+
                }
            }
        }
    };
}

clients! {
    Claude => claude::Claude,
    Codex => codex::Codex,
    Gemini => gemini::Gemini,
    Copilot => copilot::Copilot,
    Qwen => qwen::Qwen,
    Opencode => opencode::Opencode,
    Cline => cline::Cline,
    Cursor => cursor::Cursor,
    Windsurf => windsurf::Windsurf,
}

impl Client {
    /// The name used on the command line and in agent ids.
    pub fn as_str(self) -> &'static str {
        self.adapter().name()
    }

    /// The client's product name.
    pub fn product(self) -> &'static str {
        self.adapter().product()
    }

    /// The client named `name`.
    pub fn parse(name: &str) -> Option<Client> {
        Client::ALL.iter().copied().find(|c| c.as_str() == name)
    }

    /// Every client's name, for command-line choices.
    pub fn names() -> Vec<&'static str> {
        Client::ALL.iter().map(|c| c.as_str()).collect()
    }
}

/// A tool's arguments as an object: clients that send them as a JSON string (Copilot CLI)
/// are decoded, as the payload itself is ([`crate::hook::payload`]: as far as they can be);
/// anything else undecodable is `Null`.
pub fn args_object(input: &Value) -> Value {
    match input {
        Value::String(s) => crate::hook::payload::read(s.as_bytes())
            .map(|p| p.value)
            .unwrap_or(Value::Null),
        v => v.clone(),
    }
}

/// The first non-empty string among `keys` of `value`.
pub fn str_field(value: &Value, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| value.get(*k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}
