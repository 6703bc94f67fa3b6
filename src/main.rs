//! The `coord` binary: parse the command line, run it, turn the outcome into an exit code.

mod cli;

fn main() -> std::process::ExitCode {
    let code = cli::run();
    std::process::ExitCode::from(code.code() as u8)
}
