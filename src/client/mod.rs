//! Everything coord knows about each agent client, as one table ([`Client::adapter`]): how it
//! names events, which tools edit which files, how a reply is written back, what `coord init`
//! registers for it (`Wire`) and its plugin (`PluginKind`), and what makes it run a folder's
//! hooks at all. The doors ([`crate::hook`], [`crate::init`], [`crate::plugin`], `coord doctor`)
//! read this table; nothing here imports them. A new client is one entry in `clients!`.

pub(crate) mod patch;
pub(crate) mod payload;
mod tools;
mod trust;

use tools::Edit;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::{Error, Result};

/// What an event is about, whatever the client calls it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A tool is about to run.
    BeforeTool,
    /// A tool ran.
    AfterTool,
    /// A session starts.
    SessionStart,
    /// The agent stops answering (its turn is over).
    Stop,
    /// The session ends.
    SessionEnd,
    /// The user's prompt reached the agent (its `prompt` field holds it): the user answered.
    Prompt,
    /// The client tells its user something, and may wait for them.
    Notification,
    /// The client asks its user for a permission.
    Permission,
    /// Anything else: nothing to do.
    Other,
}

/// What coord answers the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Go ahead (nothing printed).
    Allow,
    /// Refuse the tool call, with why.
    Deny(String),
    /// Do not stop yet, with why.
    Block(String),
    /// Tell the agent this at the start of its session.
    Context(String),
    /// Tell the agent this right after a tool ran (a shell command changed files others hold):
    /// the event as the client named it (`PostToolUse`, `PostToolUseFailure`), and the text.
    Notice(String, String),
}

/// A shell tool call: the command line, and the folder it runs in when the call says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shell {
    /// The command line as the model wrote it.
    pub command: String,
    /// The folder, when the call names one (relative to the payload's `cwd`).
    pub dir: Option<String>,
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

/// The command registrations run.
pub const COORD: &str = "coord";

/// One client's hook registrations: event, matcher, command.
pub type HookSet = Vec<(&'static str, Option<&'static str>, String)>;

/// `coord hook CLIENT`, with `--event NAME` for clients whose payload does not name its event.
pub fn command(client: &str, event: Option<&str>) -> String {
    let event = event.map(|e| format!(" --event {e}")).unwrap_or_default();
    format!("{COORD} hook {client}{event}")
}

/// How hook registrations are laid out in a JSON file: Claude's
/// `{hooks: {EVENT: [{matcher?, hooks: [{name?, type, command}]}]}}` (`named`: each hook has a
/// `name`, which Gemini CLI shows), Copilot's `{version: 1, hooks: {event: [{type, bash,
/// powershell, timeoutSec}]}}`, or a flat `{hooks: {event: [{command}]}}` (with `version: 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HookStyle {
    Claude { named: bool },
    Copilot,
    Flat { version: bool },
}

/// How the `coord mcp` server is registered in a JSON file: `mcpServers: {coord: {command,
/// args}}`, or OpenCode's `mcp: {coord: {type: local, command: [...], enabled}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum McpStyle {
    Servers,
    Opencode,
}

impl McpStyle {
    /// The key servers are listed under, and the entry of the server that runs `argv`.
    pub(crate) fn server(self, argv: &[&str]) -> (&'static str, Value) {
        match self {
            McpStyle::Servers => ("mcpServers", json!({"command": argv[0], "args": argv[1..]})),
            McpStyle::Opencode => (
                "mcp",
                json!({"type": "local", "command": argv, "enabled": true}),
            ),
        }
    }
}

/// One file `coord init` writes for a client: JSON (file, with comments, hooks, MCP server),
/// Codex's TOML config, or a plugin file written whole (file, content) holding [`MARKER`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wire {
    Json(&'static str, bool, Option<HookStyle>, Option<McpStyle>),
    CodexToml(&'static str),
    Generated(&'static str, &'static str),
}

const CLAUDE_STYLE: HookStyle = HookStyle::Claude { named: false };

impl Wire {
    /// Hooks alone, in plain JSON.
    const fn hooks(file: &'static str, style: HookStyle) -> Wire {
        Wire::Json(file, false, Some(style), None)
    }

    /// The file it writes, relative to the root.
    pub(crate) fn file(self) -> &'static str {
        let (Wire::Json(file, ..) | Wire::CodexToml(file) | Wire::Generated(file, _)) = self;
        file
    }

    /// Named hooks and the MCP server, in JSON with comments (Gemini CLI, Qwen Code).
    const fn settings(file: &'static str) -> Wire {
        let named = HookStyle::Claude { named: true };
        Wire::Json(file, true, Some(named), Some(McpStyle::Servers))
    }
}

/// The line that marks a generated plugin file as coord's.
pub const MARKER: &str = "coord:generated";

/// What a client's user-level plugin (`coord plugin write`) is: a marketplace folder holding
/// `coord/` (`codex`: Codex's layout; `paths`: named in the manifest), an extension folder (its
/// manifest; the instructions file is its context), or a JS plugin package (`package` keys;
/// `mcp`: it adds the MCP server; the client's own commands that install it from its folder,
/// `{dir}`, and remove it).
#[derive(Debug, Clone, Copy)]
pub(crate) enum PluginKind {
    Marketplace {
        marketplace: &'static str,
        codex: bool,
        manifest: &'static str,
        paths: Option<[&'static str; 3]>,
    },
    Extension(&'static str),
    Js {
        package: &'static str,
        mcp: bool,
        install: &'static str,
        uninstall: &'static str,
    },
}

/// Everything coord knows about one agent client (see the module doc). `event_flag`: each
/// registration passes `--event`; `approvals`: the project file where the client keeps its
/// user's answers about coord (coord never writes it; `init --remove` takes coord's entries out).
pub struct Adapter {
    /// The name used on the command line and in agent ids (`claude`).
    pub name: &'static str,
    /// The client's product name (`Claude Code`).
    pub product: &'static str,
    /// The events the client names, what each is about, and coord's hook for it, in this order.
    pub(crate) events: &'static [(&'static str, Kind, Hook)],
    pub(crate) event_flag: bool,
    pub(crate) edits: &'static [(&'static str, Edit)],
    pub(crate) shell: fn(&str, &Value) -> Option<Shell>,
    pub(crate) render: fn(&Reply) -> Option<Value>,
    pub(crate) normalize: fn(Value) -> Value,
    /// Whether the client is told "no" by its exit status.
    pub denies_by_exit_status: bool,
    pub(crate) instruction_file: Option<&'static str>,
    /// Whether git runs its hooks for a commit made through the client's shell tool, and why.
    pub shell_git_hooks: (bool, &'static str),
    pub(crate) wiring: &'static [Wire],
    pub(crate) approvals: Option<&'static str>,
    /// What other modes do where the trust gate applies only to interactive sessions.
    pub trust_modes: Option<&'static str>,
    /// Whether a client process started with `args` (after the program; and whether its input
    /// is a terminal) runs without anyone at it: one prompt, then it exits (`claude -p`).
    pub(crate) headless: fn(&[String], Option<bool>) -> bool,
    /// The command's names on `PATH`, when not just [`Adapter::name`].
    pub(crate) executables: &'static [&'static str],
    pub(crate) plugin: Option<PluginKind>,
    gate: Gate,
    /// The one step that opens the gate: `{root}` the folder, `{config}` the gate's file.
    step: &'static str,
}

/// Whether `coord init` registers a hook for an event: no, for every tool, or for the tools of a
/// matcher.
#[derive(Clone, Copy)]
pub(crate) enum Hook {
    No,
    Every,
    Tools(&'static str),
}

/// What makes a client run a folder's hooks: nothing (why), or its config, read by the function
/// (`Err`: a verdict reached early), with the file its step names (`{config}`) and its default.
enum Gate {
    Open(&'static str),
    Config(
        fn(&Path) -> Result<Trust, Trust>,
        fn() -> Option<PathBuf>,
        &'static str,
    ),
}

impl Adapter {
    /// coord's hook registrations for this client: event, matcher, `coord hook NAME ...`.
    pub fn hooks(&self) -> HookSet {
        let command = |e| command(self.name, self.event_flag.then_some(e));
        (self.events.iter())
            .filter_map(|&(e, _, hook)| match hook {
                Hook::No => None,
                Hook::Every => Some((e, None, command(e))),
                Hook::Tools(m) => Some((e, Some(m), command(e))),
            })
            .collect()
    }

    /// Whether the client will run the hooks of `root`, as far as its config shows, and the one
    /// step that makes it.
    pub fn trust(&self, root: &Path) -> (Trust, String) {
        let (trust, config) = match self.gate {
            Gate::Open(why) => (Trust::new(HooksRun::Yes, why), String::new()),
            Gate::Config(trust, file, default) => (
                trust(root).unwrap_or_else(|early| early),
                file().map_or(default.into(), |p| p.display().to_string()),
            ),
        };
        let root = root.display().to_string();
        let fill = |part: &str| part.replace("{config}", &config);
        let step: Vec<_> = self.step.split("{root}").map(fill).collect();
        (trust, step.join(&root))
    }

    /// Whether coord writes a user-level plugin for it (`coord plugin write`).
    pub fn has_plugin(&self) -> bool {
        self.plugin.is_some()
    }

    /// Whether `coord init` wired this client in `root`: its first file runs `coord hook NAME`.
    pub fn wired(&self, root: &Path) -> bool {
        crate::fsutil::read_capped(&root.join(self.wiring[0].file()), 16 * 1024 * 1024)
            .is_ok_and(|b| String::from_utf8_lossy(&b).contains(&command(self.name, None)))
    }
}

/// The environment variables that carry a client's session id, in the order they are asked.
pub const SESSION_VARS: [(&str, Client); 5] = [
    ("CLAUDE_CODE_SESSION_ID", Client::Claude),
    ("CODEX_SESSION_ID", Client::Codex),
    ("CODEX_THREAD_ID", Client::Codex),
    ("COPILOT_AGENT_SESSION_ID", Client::Copilot),
    ("GEMINI_SESSION_ID", Client::Gemini),
];

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
            pub fn adapter(self) -> &'static Adapter {
                match self {
                    $(Client::$variant => &$adapter,)+
                }
            }
        }
    };
}

clients! {
    Claude => CLAUDE,
    Codex => CODEX,
    Gemini => GEMINI,
    Copilot => COPILOT,
    Qwen => QWEN,
    Opencode => OPENCODE,
    Cline => CLINE,
    Cursor => CURSOR,
    Windsurf => WINDSURF,
}

impl Client {
    /// What plain `coord init` wires where no client is found on `PATH`: the contract's four.
    pub const DEFAULT: &'static [Client] = &[
        Client::Claude,
        Client::Codex,
        Client::Gemini,
        Client::Copilot,
    ];

    /// The name used on the command line and in agent ids.
    pub fn as_str(self) -> &'static str {
        self.adapter().name
    }

    /// Where the client's command is on `path` (a `PATH` value): the first executable file of
    /// one of its names (its own; Cursor's `cursor-agent` or `cursor`), folder by folder.
    pub fn find_on(self, path: &std::ffi::OsStr) -> Option<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        let a = self.adapter();
        let names = if a.executables.is_empty() {
            &[a.name][..]
        } else {
            a.executables
        };
        std::env::split_paths(path)
            .filter(|dir| dir.is_absolute())
            .find_map(|dir| {
                names.iter().map(|name| dir.join(name)).find(|p| {
                    std::fs::metadata(p)
                        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                })
            })
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

const EDITOR_GIT: (bool, &str) = (
    true,
    "its terminal runs git with the repository's own config, as far as its docs show (not run here)",
);

/// What most clients share; each adapter below says where it differs.
const BASE: Adapter = Adapter {
    name: "",
    product: "",
    events: &[],
    event_flag: false,
    edits: &[],
    shell: |_, _| None,
    render: render_claude,
    normalize: |payload| payload,
    denies_by_exit_status: false,
    instruction_file: None,
    shell_git_hooks: (
        true,
        "its shell tool runs git with the repository's own config",
    ),
    wiring: &[],
    approvals: None,
    trust_modes: None,
    headless: |_, _| false,
    executables: &[],
    plugin: None,
    gate: Gate::Config(|_| Ok(Trust::new(HooksRun::Unknown, "")), || None, ""),
    step: "",
};

const MCP_JSON: Wire = Wire::Json(".mcp.json", false, None, Some(McpStyle::Servers));

const CLAUDE_TOOLS: Hook = Hook::Tools("Edit|Write|MultiEdit|NotebookEdit|Bash");

/// Claude Code: hooks in `.claude/settings.json`, the MCP server in `.mcp.json`.
const CLAUDE: Adapter = Adapter {
    name: "claude",
    product: "Claude Code",
    events: &[
        ("SessionStart", Kind::SessionStart, Hook::Every),
        // The shell too: a `git commit` through it is checked like the pre-commit guard, and
        // files others hold that a command changed are reported after it.
        ("PreToolUse", Kind::BeforeTool, CLAUDE_TOOLS),
        ("PostToolUse", Kind::AfterTool, CLAUDE_TOOLS),
        // A tool call that failed (Claude Code, Qwen Code): it may still have changed files.
        ("PostToolUseFailure", Kind::AfterTool, Hook::No),
        // Waiting for the user (a permission prompt, an idle prompt) and answered.
        ("Notification", Kind::Notification, Hook::Every),
        ("PermissionRequest", Kind::Permission, Hook::No),
        ("UserPromptSubmit", Kind::Prompt, Hook::Every),
        ("Stop", Kind::Stop, Hook::Every),
        ("SessionEnd", Kind::SessionEnd, Hook::Every),
    ],
    edits: &[
        ("Edit|Write|MultiEdit", Edit::Path(&["file_path"])),
        ("NotebookEdit", Edit::Path(&["notebook_path"])),
    ],
    shell: |t, i| tools::shell_call(t, "Bash", i, None),
    instruction_file: Some("CLAUDE.md"),
    wiring: &[Wire::hooks(".claude/settings.json", CLAUDE_STYLE), MCP_JSON],
    // Its answer to "use this project's MCP server?" (`enabledMcpjsonServers`), and a tool
    // allowed for good (`permissions.allow`: `mcp__coord__lock`).
    approvals: Some(".claude/settings.local.json"),
    // `claude -p` (`--print`): one prompt, the answer printed, and it exits.
    headless: |args, _| has_option(args, "-p", "--print"),
    trust_modes: Some(
        "`claude -p` runs them in any folder, trusted or not; an interactive session also asks once whether to use the project's MCP server `coord` (.mcp.json): answer yes",
    ),
    plugin: Some(PluginKind::Marketplace {
        marketplace: ".claude-plugin/marketplace.json",
        codex: false,
        manifest: "coord/.claude-plugin/plugin.json",
        paths: None,
    }),
    gate: Gate::Config(trust::claude, trust::claude_config, "~/.claude.json"),
    step: "run `claude` in {root} once and accept the trust dialog (or set `projects[\"{root}\"].hasTrustDialogAccepted: true` in {config})",
    ..BASE
};

const CODEX_TOOLS: Hook = Hook::Tools("apply_patch|Edit|Write|Bash");

/// Codex CLI: Claude-shaped events; edits arrive as `apply_patch`. Hooks in
/// `.codex/hooks.json`, the MCP server in `.codex/config.toml`.
const CODEX: Adapter = Adapter {
    name: "codex",
    product: "Codex CLI",
    events: &[
        ("SessionStart", Kind::SessionStart, Hook::Every),
        ("PreToolUse", Kind::BeforeTool, CODEX_TOOLS),
        ("PostToolUse", Kind::AfterTool, CODEX_TOOLS),
        ("PostToolUseFailure", Kind::AfterTool, Hook::No),
        // Waiting for the user's approval, and the user's answer.
        ("PermissionRequest", Kind::Permission, Hook::Every),
        ("UserPromptSubmit", Kind::Prompt, Hook::Every),
        ("Stop", Kind::Stop, Hook::Every),
        ("SessionEnd", Kind::SessionEnd, Hook::Every),
    ],
    // Edits arrive as `apply_patch`; Claude's edit tools too, for builds that expose them.
    edits: &[
        ("apply_patch", Edit::PatchLines(&["command", "patch"])),
        ("Edit|Write|MultiEdit", Edit::Path(&["file_path"])),
        ("NotebookEdit", Edit::Path(&["notebook_path"])),
    ],
    shell: |t, i| tools::shell_call(t, "Bash", i, Some("workdir")),
    wiring: &[
        Wire::hooks(".codex/hooks.json", CLAUDE_STYLE),
        Wire::CodexToml(".codex/config.toml"),
    ],
    // `codex exec` (or its alias, `codex e …`): one task, then it exits.
    headless: |args, _| args.iter().any(|a| a == "exec") || args.first().is_some_and(|a| a == "e"),
    plugin: Some(PluginKind::Marketplace {
        marketplace: ".agents/plugins/marketplace.json",
        codex: true,
        manifest: "coord/.codex-plugin/plugin.json",
        paths: Some(["./hooks/hooks.json", "./.mcp.json", "./skills/"]),
    }),
    gate: Gate::Config(trust::codex, || None, ""),
    step: "run `codex` in {root} once, trust the folder, and at \"Hooks need review\" choose \"Trust all and continue\" (or trust them with `/hooks`); `codex exec` skips untrusted hooks",
    ..BASE
};

/// Where Gemini CLI's and Qwen Code's edit tools name their file.
const GEMINI_PATH: &[&str] = &["file_path", "absolute_path", "path"];

const GEMINI_TOOLS: Hook = Hook::Tools("write_file|replace|run_shell_command");

/// Gemini CLI: hooks and the MCP server in `.gemini/settings.json` (JSON with comments).
const GEMINI: Adapter = Adapter {
    name: "gemini",
    product: "Gemini CLI",
    events: &[
        ("SessionStart", Kind::SessionStart, Hook::Every),
        ("BeforeTool", Kind::BeforeTool, GEMINI_TOOLS),
        ("AfterTool", Kind::AfterTool, GEMINI_TOOLS),
        // Waiting for the user's approval, and the user's next prompt.
        ("Notification", Kind::Notification, Hook::Every),
        ("BeforeAgent", Kind::Prompt, Hook::Every),
        ("AfterAgent", Kind::Stop, Hook::Every),
        ("SessionEnd", Kind::SessionEnd, Hook::Every),
    ],
    edits: &[("write_file|replace", Edit::Path(GEMINI_PATH))],
    shell: |t, i| tools::shell_call(t, "run_shell_command", i, Some("dir_path")),
    render: render_gemini,
    instruction_file: Some("GEMINI.md"),
    shell_git_hooks: (
        false,
        "its shell tool runs git with core.hooksPath empty (GIT_CONFIG_COUNT): no git hook runs; coord's BeforeTool hook checks those commits instead",
    ),
    wiring: &[Wire::settings(".gemini/settings.json")],
    // `gemini -p` (`--prompt`), or its input not a terminal (`echo … | gemini`): one prompt,
    // then it exits; `-i` (`--prompt-interactive`) stays at the terminal.
    headless: |args, stdin_terminal| {
        !has_option(args, "-i", "--prompt-interactive")
            && (has_option(args, "-p", "--prompt") || stdin_terminal == Some(false))
    },
    plugin: Some(PluginKind::Extension("gemini-extension.json")),
    gate: Gate::Config(
        trust::gemini,
        trust::gemini_folders,
        "~/.gemini/trustedFolders.json",
    ),
    step: "run `gemini` in {root} and choose \"Trust folder\" (or add `\"{root}\": \"TRUST_FOLDER\"` to {config})",
    ..BASE
};

/// Where Copilot CLI's and Cline's edit tools name their file.
const PATH_FIRST: &[&str] = &["path", "file_path", "filePath"];

/// GitHub Copilot CLI: the payload does not name its event (`--event`). Hooks in
/// `.github/hooks/coord.json`; MCP servers from `.mcp.json`.
const COPILOT: Adapter = Adapter {
    name: "copilot",
    product: "Copilot CLI",
    events: &[
        ("sessionStart", Kind::SessionStart, Hook::Every),
        ("preToolUse", Kind::BeforeTool, Hook::Every),
        ("postToolUse", Kind::AfterTool, Hook::Every),
        // The user's prompt: the session's label, and its user answered. Its `notification` also
        // fires after a shell command, so it cannot say the user is awaited: not registered.
        ("userPromptSubmitted", Kind::Prompt, Hook::Every),
        ("notification", Kind::Notification, Hook::No),
        ("permissionRequest", Kind::Permission, Hook::No),
        // The main agent stopped: its turn is over.
        ("agentStop", Kind::Stop, Hook::Every),
        ("sessionEnd", Kind::SessionEnd, Hook::Every),
    ],
    event_flag: true,
    // `str_replace_editor` writes but for `view`.
    edits: &[
        ("edit|create", Edit::Path(PATH_FIRST)),
        ("str_replace_editor", Edit::Viewable(PATH_FIRST)),
        ("apply_patch", Edit::Patch(&["input", "patch", "command"])),
    ],
    shell: |t, i| tools::shell_call(t, "bash", i, None),
    render: |reply| match reply {
        Reply::Deny(reason) => Some(json!({
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        })),
        Reply::Context(text) | Reply::Notice(_, text) => Some(json!({"additionalContext": text})),
        other => render_claude(other),
    },
    shell_git_hooks: (
        true,
        "its shell tool sets only safe.bareRepository and core.fsmonitor through GIT_CONFIG_*; git hooks run",
    ),
    wiring: &[
        Wire::hooks(".github/hooks/coord.json", HookStyle::Copilot),
        MCP_JSON,
    ],
    // `copilot -p` (`--prompt`): one prompt, then it exits.
    headless: |args, _| has_option(args, "-p", "--prompt"),
    // Copilot loads it live from this folder: keep the folder.
    plugin: Some(PluginKind::Marketplace {
        marketplace: ".github/plugin/marketplace.json",
        codex: false,
        manifest: "coord/.github/plugin/plugin.json",
        paths: Some(["hooks/hooks.json", ".mcp.json", "skills"]),
    }),
    gate: Gate::Config(
        trust::copilot,
        trust::copilot_config,
        "~/.copilot/config.json",
    ),
    step: "run `copilot` in {root} and trust the folder for future sessions (or add `\"{root}\"` to `trustedFolders` in {config}; `copilot -p --trust-folder` trusts it for one run)",
    ..BASE
};

/// Qwen Code's matchers are unanchored regular expressions.
const QWEN_TOOLS: Hook = Hook::Tools("^(write_file|edit|run_shell_command)$");

/// Qwen Code (a Gemini CLI fork): Claude-shaped hooks and replies; hooks and the MCP server in
/// `.qwen/settings.json`. It exports no session variable; the process tree names the session.
const QWEN: Adapter = Adapter {
    name: "qwen",
    product: "Qwen Code",
    events: &[
        ("SessionStart", Kind::SessionStart, Hook::Every),
        ("PreToolUse", Kind::BeforeTool, QWEN_TOOLS),
        ("PostToolUse", Kind::AfterTool, QWEN_TOOLS),
        ("PostToolUseFailure", Kind::AfterTool, Hook::No),
        ("Stop", Kind::Stop, Hook::Every),
        ("SessionEnd", Kind::SessionEnd, Hook::Every),
    ],
    // `replace` is the old name of `edit`, still accepted by Qwen Code.
    edits: &[("write_file|edit|replace", Edit::Path(GEMINI_PATH))],
    shell: |t, i| tools::shell_call(t, "run_shell_command", i, Some("directory")),
    instruction_file: Some("QWEN.md"),
    wiring: &[Wire::settings(".qwen/settings.json")],
    plugin: Some(PluginKind::Extension("qwen-extension.json")),
    gate: Gate::Config(
        trust::qwen,
        trust::qwen_folders,
        "~/.qwen/trustedFolders.json",
    ),
    step: "folder trust is off by default in Qwen Code; where it is on, run `qwen` in {root} and trust the folder (or add `\"{root}\": \"TRUST_FOLDER\"` to {config})",
    ..BASE
};

/// The JS plugin `coord init` writes for OpenCode: it runs `coord hook opencode` from its plugin
/// hooks and bus events, and throws on a denial (the model reads the message).
pub const OPENCODE_PLUGIN: &str = include_str!("opencode.js");

/// The JS plugin `coord init` writes for Cline: its hook files can only cancel a whole run, a
/// plugin's `beforeTool` skips one tool call with a reason the model reads.
pub const CLINE_PLUGIN: &str = include_str!("cline.js");

/// OpenCode: no command hooks; `coord init` writes its plugin, and the MCP server into
/// `opencode.json`.
const OPENCODE: Adapter = Adapter {
    name: "opencode",
    product: "OpenCode",
    events: &[
        ("tool.execute.before", Kind::BeforeTool, Hook::No),
        ("tool.execute.after", Kind::AfterTool, Hook::No),
        ("session.start", Kind::SessionStart, Hook::No),
        ("session.created", Kind::SessionStart, Hook::No),
        ("session.idle", Kind::Stop, Hook::No),
        ("session.deleted", Kind::SessionEnd, Hook::No),
    ],
    edits: &[
        ("write|edit", Edit::Path(&["filePath", "file_path", "path"])),
        ("apply_patch", Edit::Patch(&["patchText", "patch", "input"])),
    ],
    shell: |t, i| tools::shell_call(t, "bash", i, Some("workdir")),
    render: render_plugin,
    wiring: &[
        Wire::Generated(".opencode/plugin/coord.js", OPENCODE_PLUGIN),
        Wire::Json("opencode.json", true, None, Some(McpStyle::Opencode)),
    ],
    plugin: Some(PluginKind::Js {
        package: r#"{"main": "coord.js"}"#,
        mcp: true,
        install: "opencode plugin -g {dir}",
        uninstall: "# OpenCode has no command for it: delete {dir} from \"plugin\" in ~/.config/opencode/opencode.jsonc",
    }),
    gate: Gate::Open("OpenCode loads .opencode/plugin/ in every folder (it has no folder trust)"),
    step: "none: OpenCode loads the plugins of `.opencode/plugin/` in every folder",
    ..BASE
};

/// Cline CLI: `coord init` writes its plugin, and no MCP server (Cline starts those outside the
/// process tree where plugins run: `coord mcp` there would be an agent of its own).
const CLINE: Adapter = Adapter {
    name: "cline",
    product: "Cline CLI",
    events: &[
        ("beforeTool", Kind::BeforeTool, Hook::No),
        ("afterTool", Kind::AfterTool, Hook::No),
        ("beforeRun", Kind::SessionStart, Hook::No),
        ("afterRun", Kind::Stop, Hook::No),
        ("sessionShutdown", Kind::SessionEnd, Hook::No),
    ],
    edits: &[
        ("editor", Edit::Path(PATH_FIRST)),
        ("apply_patch", Edit::Patch(&["input", "patch", "patchText"])),
    ],
    shell: tools::cline_shell,
    render: render_plugin,
    wiring: &[Wire::Generated(".cline/plugins/coord.js", CLINE_PLUGIN)],
    plugin: Some(PluginKind::Js {
        package: r#"{"cline": {"plugins": [{"paths": ["./coord.js"]}]}}"#,
        mcp: false,
        install: "cline plugin install {dir}",
        uninstall: "cline plugin uninstall coord",
    }),
    gate: Gate::Open("Cline CLI loads .cline/plugins/ in every workspace (it has no folder trust)"),
    step: "none: Cline CLI loads the plugins of `.cline/plugins/` in every workspace",
    ..BASE
};

/// Cursor (the editor; not run end to end here), from its published hook format:
/// `.cursor/hooks.json`, the MCP server in `.cursor/mcp.json`.
const CURSOR: Adapter = Adapter {
    name: "cursor",
    product: "Cursor",
    events: &[
        ("sessionStart", Kind::SessionStart, Hook::Every),
        // Every tool: Cursor's matcher syntax is not published precisely enough to rely on.
        ("preToolUse", Kind::BeforeTool, Hook::Every),
        // The shell's door in Cursor versions whose `preToolUse` does not see the shell.
        ("beforeShellExecution", Kind::BeforeTool, Hook::Every),
        ("postToolUse", Kind::AfterTool, Hook::Every),
        ("postToolUseFailure", Kind::AfterTool, Hook::No),
        ("afterShellExecution", Kind::AfterTool, Hook::No),
        ("afterFileEdit", Kind::AfterTool, Hook::No),
        ("stop", Kind::Stop, Hook::Every),
        ("sessionEnd", Kind::SessionEnd, Hook::Every),
    ],
    edits: &[(
        "Write|Edit|StrReplace|MultiEdit|Delete|EditNotebook|NotebookEdit",
        Edit::Path(&[
            "file_path",
            "path",
            "target_file",
            "target_notebook",
            "notebook_path",
        ]),
    )],
    shell: |t, i| tools::shell_call(t, tools::CURSOR_SHELL, i, Some("working_directory")),
    // Cursor reads JSON from every hook; `{}` changes nothing.
    render: |reply| {
        Some(match reply {
            Reply::Allow => json!({}),
            Reply::Deny(reason) => json!({
                "permission": "deny",
                "user_message": reason,
                "agent_message": reason,
            }),
            Reply::Block(reason) => json!({"followup_message": reason}),
            Reply::Context(text) | Reply::Notice(_, text) => json!({"additional_context": text}),
        })
    },
    normalize: tools::cursor_normalize,
    shell_git_hooks: EDITOR_GIT,
    wiring: &[
        Wire::hooks(".cursor/hooks.json", HookStyle::Flat { version: true }),
        Wire::Json(".cursor/mcp.json", false, None, Some(McpStyle::Servers)),
    ],
    executables: &["cursor-agent", "cursor"],
    gate: Gate::Open(
        "Cursor loads a project's .cursor/hooks.json and its docs name no trust gate; from the published format, not run end to end here",
    ),
    step: "open {root} in Cursor and check that Cursor's Hooks settings list the hooks of `.cursor/hooks.json`",
    ..BASE
};

/// Windsurf (Cascade; not run end to end here), from its published hook format: a pre-hook
/// blocks by exit status 2; no session-start event, no project MCP file.
const WINDSURF: Adapter = Adapter {
    name: "windsurf",
    product: "Windsurf",
    events: &[
        ("pre_write_code", Kind::BeforeTool, Hook::Every),
        ("pre_run_command", Kind::BeforeTool, Hook::Every),
        ("post_write_code", Kind::AfterTool, Hook::Every),
        ("post_run_command", Kind::AfterTool, Hook::Every),
        ("post_cascade_response", Kind::Stop, Hook::Every),
    ],
    edits: &[(tools::WINDSURF_WRITE, Edit::Path(&["file_path"]))],
    shell: |t, i| tools::shell_call(t, tools::WINDSURF_RUN, i, None),
    // Cascade reads no JSON: a denial is exit status 2 with the reason on stderr.
    render: |_| None,
    normalize: tools::windsurf_normalize,
    denies_by_exit_status: true,
    shell_git_hooks: EDITOR_GIT,
    wiring: &[Wire::hooks(
        ".windsurf/hooks.json",
        HookStyle::Flat { version: false },
    )],
    gate: Gate::Open(
        "Windsurf loads a workspace's .windsurf/hooks.json and its docs name no trust gate; from the published format, not run end to end here",
    ),
    step: "open {root} in Windsurf; Cascade loads the workspace's `.windsurf/hooks.json`",
    ..BASE
};

/// The JSON Claude Code (and Codex and Qwen Code, which read the same shapes) understands.
fn render_claude(reply: &Reply) -> Option<Value> {
    match reply {
        Reply::Allow => None,
        Reply::Deny(reason) => Some(json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        })),
        Reply::Block(reason) => Some(json!({"decision": "block", "reason": reason})),
        Reply::Context(text) => Some(json!({
            "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}
        })),
        // The agent reads `additionalContext`; the user sees `systemMessage`.
        Reply::Notice(event, text) => Some(notice(event, text)),
    }
}

/// Gemini CLI's replies: the notice is appended to the tool's result for the model.
fn render_gemini(reply: &Reply) -> Option<Value> {
    match reply {
        Reply::Deny(reason) => Some(json!({"decision": "deny", "reason": reason})),
        Reply::Notice(_, text) => Some(notice("AfterTool", text)),
        other => render_claude(other),
    }
}

/// The reply a coord JS plugin reads: `{"decision": "deny"|"block", "reason"}` or `{"context"}`.
fn render_plugin(reply: &Reply) -> Option<Value> {
    match reply {
        Reply::Context(text) | Reply::Notice(_, text) => Some(json!({"context": text})),
        other => render_gemini(other),
    }
}

fn notice(event: &str, text: &str) -> Value {
    json!({
        "systemMessage": text,
        "hookSpecificOutput": {"hookEventName": event, "additionalContext": text}
    })
}

impl Trust {
    fn new(hooks_run: HooksRun, why: impl Into<String>) -> Trust {
        Trust {
            hooks_run,
            why: why.into(),
        }
    }
}

/// One hook call, as read from the client's payload.
#[derive(Debug, Clone)]
pub struct HookCall {
    /// Which client.
    pub client: Client,
    /// The event name as the client wrote it (or as given with `--event`).
    pub event: String,
    /// What the event is about.
    pub kind: Kind,
    /// The client's session id, when the payload has one.
    pub session_id: Option<String>,
    /// The client's working folder.
    pub cwd: Option<PathBuf>,
    /// The tool, for tool events.
    pub tool: Option<String>,
    /// The files the tool edits, as written in the payload; `None` when the tool edits nothing.
    pub files: Option<Vec<String>>,
    /// The command, when the tool is the client's shell.
    pub shell: Option<Shell>,
    /// The client runs with nobody at it (`claude -p`, `codex exec`: see
    /// [`crate::identity::headless`]; set by the caller): the end of its turn asks no one.
    pub headless: bool,
    /// Why the payload is not JSON, when it is not: it was read only in part (see
    /// `payload`), and is judged on what it names without anything being written.
    pub fault: Option<String>,
    /// The payload as read (in the shape coord reads, for clients shaped otherwise).
    pub payload: Value,
}

/// Whether `args` hold one of the options `short` and `long` (`--long=VALUE` too).
fn has_option(args: &[String], short: &str, long: &str) -> bool {
    args.iter().any(|a| {
        a == short || a == long || a.strip_prefix(long).is_some_and(|r| r.starts_with('='))
    })
}

/// The largest payload read (a `Write` carries the whole file).
pub const PAYLOAD_CAP: u64 = 64 * 1024 * 1024;

/// Read one payload; `event` (from `--event`) wins over its `hook_event_name`. One that is not
/// JSON but names its event is read as far as it can be, with [`HookCall::fault`] saying why.
pub fn parse(client: Client, input: &[u8], event: Option<&str>) -> Result<HookCall> {
    let not_json = |why: &str| Error::bad_input(format!("the hook payload is not JSON: {why}"));
    let read = payload::read(input).map_err(|why| not_json(&why))?;
    let Value::Object(_) = read.value else {
        return Err(Error::bad_input("the hook payload is not a JSON object"));
    };
    let adapter = client.adapter();
    let value = (adapter.normalize)(read.value);
    let event = event
        .map(str::to_string)
        .or_else(|| str_field(&value, &["hook_event_name", "hookEventName"]))
        .ok_or_else(|| match &read.fault {
            Some(why) => not_json(why),
            None => Error::bad_input(
                "the hook payload names no event (`hook_event_name`); pass `--event`",
            ),
        })?;
    let kind = adapter.events.iter().find(|(e, ..)| *e == event);
    let kind = kind.map_or(Kind::Other, |(_, k, _)| *k);
    let tool = str_field(&value, &["tool_name", "toolName"]);
    // As sent: an object, or a string (Copilot's JSON-encoded arguments, or a raw patch).
    let input = value
        .get("tool_input")
        .or_else(|| value.get("toolArgs"))
        .unwrap_or(&Value::Null);
    let (files, shell) = match (kind, &tool) {
        (Kind::BeforeTool | Kind::AfterTool, Some(t)) => {
            // The arguments as an object: a JSON string decoded once; a raw patch is `Null`.
            let args = match input {
                Value::String(s) => {
                    Cow::Owned(payload::read(s.as_bytes()).map_or(Value::Null, |p| p.value))
                }
                v => Cow::Borrowed(v),
            };
            let files = tools::edited(adapter.edits, t, &args, input);
            (files, (adapter.shell)(t, &args))
        }
        _ => (None, None),
    };
    Ok(HookCall {
        client,
        kind,
        session_id: str_field(&value, &["session_id", "sessionId"]),
        cwd: str_field(&value, &["cwd"]).map(PathBuf::from),
        tool,
        files,
        shell,
        headless: false,
        event,
        fault: read.fault,
        payload: value,
    })
}

/// The reply as the client's JSON, `None` when there is nothing to print.
pub fn render(client: Client, reply: &Reply) -> Option<String> {
    serde_json::to_string(&(client.adapter().render)(reply)?).ok()
}

/// The first non-empty string among `keys` of `value`.
fn str_field(value: &Value, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| value.get(*k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_payloads_are_bad_input() {
        for bad in [&b""[..], b"[]", b"{", b"{\"cwd\":\"/\"}", b"\xff"] {
            assert!(matches!(
                parse(Client::Claude, bad, None),
                Err(Error::BadInput { .. })
            ));
        }
    }

    #[test]
    fn every_client_reads_an_object_without_cwd() {
        for &client in Client::ALL {
            let _ = parse(client, b"{}", None);
        }
    }
}
