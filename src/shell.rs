//! Commands coord suggests in hints, written so that they run as printed when pasted into a
//! POSIX shell: every interpolated word is quoted when it needs to be.

pub use crate::error::quote::{agent, arg};

/// The path of one file as a coord FILE argument in a suggested command: a `\` before each
/// wildcard character (`a\[1\].md`, else it would be a claim, see
/// [`crate::pattern::literal_name`]), then [`arg`].
pub fn file(rel: &str) -> String {
    arg(&crate::pattern::escape_name(rel))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_file_keeps_its_wildcards_literal() {
        assert_eq!(super::file("src/lib.rs"), "src/lib.rs");
        assert_eq!(super::file("a[1].md"), r"'a\[1\].md'");
    }
}
