//! Link the `coord` binary for a fast start: coord runs as one short process per lock or unlock,
//! so the dynamic loader's work is a large part of every command.
//!
//! - `-no-pie`: the executable is linked at a fixed address, so the loader has no relocations
//!   to apply to it and no relocated pages to copy (a position-independent build spends about a
//!   third of a `coord lock`'s instructions there).
//! - `-z lazy`: library functions are bound on first call instead of all at start.
//! - The unwinder (`libgcc_eh.a`) is linked into the binary, so the loader opens, maps and
//!   relocates one shared library (libc) instead of two (`libgcc_s.so.1` is then not needed):
//!   about 0.1 ms of every command. Skipped when the C compiler does not know the archive.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    if !target.contains("linux-gnu") {
        return;
    }
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    if features.split(',').any(|f| f == "crt-static") {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-no-pie");
    println!("cargo:rustc-link-arg-bins=-Wl,-z,lazy");
    if let Some(eh) = gcc_archive("libgcc_eh.a") {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--whole-archive,{},--no-whole-archive",
            eh.display()
        );
    }
}

/// The path of one of the C compiler's own archives, when it has it.
fn gcc_archive(name: &str) -> Option<PathBuf> {
    let out = Command::new("cc")
        .arg(format!("-print-file-name={name}"))
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    // An unknown name is printed back as given, not as a path.
    (out.status.success()
        && path.is_absolute()
        && path.is_file()
        && !path.to_string_lossy().contains(','))
    .then_some(path)
}
