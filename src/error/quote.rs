//! Words of the commands coord suggests in hints, written so that they run as printed when
//! pasted into a POSIX shell, and the agent-id grammar those commands (and file names) use.

/// Whether `id` is a valid agent id (already lower-case): `^[a-z0-9][a-z0-9_-]{0,31}$`.
pub fn is_valid_agent_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 32
        && (bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_' || *b == b'-')
}

/// `word` as one shell word: unchanged when plain, else in single quotes.
pub fn arg(word: &str) -> String {
    let safe = |b: u8| b.is_ascii_alphanumeric() || b"_-./:@%+=,".contains(&b);
    let plain = !word.is_empty() && word.bytes().all(safe);
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The agent id to address in a suggested command, from a holder as a message shows it.
pub fn agent(holder: &str) -> String {
    let name = holder.split(" (").next().unwrap_or(holder).trim();
    let id = name.to_ascii_lowercase();
    if is_valid_agent_id(&id) {
        id
    } else {
        arg(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_when_needed() {
        assert_eq!(arg("src/lib.rs"), "src/lib.rs");
        assert_eq!(arg("a file (1).txt"), "'a file (1).txt'");
        assert_eq!(arg("it's"), r"'it'\''s'");
        assert_eq!(arg("$HOME"), "'$HOME'");
        assert_eq!(arg(""), "''");
        assert_eq!(agent("Claude (process 3115)"), "claude");
        assert_eq!(agent("gemini"), "gemini");
        assert_eq!(agent("Claude Code"), "'Claude Code'");
    }
}
