//! The `coord` binary: parse the command line, run it, turn the outcome into an exit code.

mod cli;

/// On musl (the static Linux release build), Rust's port of dlmalloc instead of musl's allocator,
/// which unmaps freed small blocks at once: see `docs/performance.md`.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(cli::run().code() as u8)
}
