//! Link the `coord` binary for a fast start: coord runs as one short process per lock or unlock,
//! so the dynamic loader's work is a large part of every command.
//!
//! - `-no-pie`: the executable is linked at a fixed address, so the loader has no relocations
//!   to apply to it and no relocated pages to copy (a position-independent build spends about a
//!   third of a `coord lock`'s instructions there).
//! - `-z lazy`: library functions are bound on first call instead of all at start.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.contains("linux-gnu") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
        println!("cargo:rustc-link-arg-bins=-Wl,-z,lazy");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
