//! The `coord` binary: parse the command line, run it, turn the outcome into an exit code.

mod cli;

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(cli::run().code() as u8)
}
