//! The agent clients: hooks fed real payloads, identity, init and its removal, the MCP server,
//! plugins, the git guard, and end to end with the real clients.

mod claude_e2e;
mod codex_e2e;
pub(crate) mod copilot_e2e;
pub(crate) mod gemini_e2e;
mod git_status_clean;
mod guard;
mod hook_git;
mod hook_payload_faults;
mod hook_payloads;
mod hook_rivals;
pub(crate) mod hooks;
mod identity;
pub(crate) mod init;
mod init_checks;
pub(crate) mod init_remove;
mod init_remove_all;
pub(crate) mod mcp;
mod mcp_files;
mod mcp_lifetime;
mod mcp_tools;
mod moreclients;
mod moreclients_e2e;
mod moreclients_editors;
pub(crate) mod plugin;
mod plugin_clients;
mod plugin_sessions;
pub(crate) mod shelledit;
