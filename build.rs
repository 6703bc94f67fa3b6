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
//!
//! In the static build (`.cargo/config.toml`) the loader has nothing left to do, and what is
//! left of a short command's start is mapping the pages of code it runs. So the functions listed
//! in `.cargo/hot-text.txt` (those a lock, an unlock and a hook call run, written by
//! `bench/hot_text.py`) are laid out first and side by side (`--symbol-ordering-file`): a
//! `coord lock` then maps its code in 13 page faults instead of 41. Only when the linker takes
//! such a list (a test link says so: rustc's own LLVM linker, the default on x86-64 Linux, does;
//! GNU `ld` does not); a name the binary does not have is skipped silently. The musl build (the
//! Linux release build, static by default) gets the same, through rustc's LLVM linker.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    let glibc = target.contains("linux-gnu");
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    if features.split(',').any(|f| f == "crt-static") {
        if glibc || target.contains("linux-musl") {
            hot_text_first(&target);
        }
        return;
    }
    if !glibc {
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

/// Lay out the functions of `.cargo/hot-text.txt` first, when the linker takes such a list:
/// rustc's own LLVM linker does, and is the default on x86-64 Linux with glibc; for musl, whose
/// default is the C compiler's linker, rustc's LLVM linker is named through the compiler (`-B`
/// its `gcc-ld` folder, `-fuse-ld=lld`) when the toolchain has it. A build that links with GNU
/// `ld` (another linker named, or a rustc built without its own) is left as it is.
fn hot_text_first(target: &str) {
    let list = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join(".cargo")
        .join("hot-text.txt");
    println!("cargo:rerun-if-changed={}", list.display());
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    if !list.is_file() || list.to_string_lossy().contains(',') {
        return;
    }
    let mut args = Vec::new();
    if target.contains("linux-musl") && std::env::var_os("RUSTC_LINKER").is_none() {
        match rust_lld_dir() {
            Some(dir) => {
                args.push("-fuse-ld=lld".to_string());
                args.push(format!("-B{}", dir.display()));
            }
            None => return,
        }
    }
    args.push(format!(
        "-Wl,--symbol-ordering-file={},--no-warn-symbol-ordering",
        list.display()
    ));
    if links_with(target, &args) {
        for arg in args {
            println!("cargo:rustc-link-arg-bins={arg}");
        }
    }
}

/// The folder in which rustc keeps `ld.lld` for C compilers to find (`gcc-ld`), when the
/// toolchain has one.
fn rust_lld_dir() -> Option<PathBuf> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc)
        .arg("--print")
        .arg("sysroot")
        .output()
        .ok()?;
    let sysroot = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    let dir = sysroot
        .join("lib")
        .join("rustlib")
        .join(std::env::var("HOST").ok()?)
        .join("bin")
        .join("gcc-ld");
    (out.status.success() && dir.join("ld.lld").is_file() && !dir.to_string_lossy().contains(','))
        .then_some(dir)
}

/// Whether a program links for `target`, with the build's own flags and linker, when the link
/// is given `args`.
fn links_with(target: &str, args: &[String]) -> bool {
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        return false;
    };
    let source = out.join("probe.rs");
    #[allow(clippy::disallowed_methods)] // A build's scratch file, not a file of the protocols.
    if std::fs::write(&source, "fn main() {}\n").is_err() {
        return false;
    }
    let mut rustc = Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()));
    rustc
        .arg("--target")
        .arg(target)
        .arg("--crate-type=bin")
        .arg("--out-dir")
        .arg(&out)
        .args(args.iter().map(|arg| format!("-Clink-arg={arg}")));
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    rustc.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    if let Some(linker) = std::env::var_os("RUSTC_LINKER") {
        rustc.arg("-C").arg({
            let mut l = std::ffi::OsString::from("linker=");
            l.push(linker);
            l
        });
    }
    rustc
        .arg(&source)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
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
