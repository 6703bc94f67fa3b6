//! coord's block in a text file that is not coord's own (`.gitignore`, `AGENTS.md`,
//! `.git/info/exclude`): the lines between a begin and an end marker line are coord's, the rest
//! is the user's and is kept byte for byte. A begin marker without its end is never guessed
//! at: the caller is told its line.

/// Where coord's block lies in `text`: from its `begin` marker to the end of its `end` marker;
/// `Ok(None)` when there is none.
pub fn find_block(
    text: &str,
    begin: &str,
    end: &str,
) -> std::result::Result<Option<(usize, usize)>, usize> {
    let Some(start) = text.find(begin) else {
        return Ok(None);
    };
    let after = start + begin.len();
    let line = text[..start].matches('\n').count() + 1;
    let Some(len) = text[after..].find(end) else {
        return Err(line);
    };
    if text[after..after + len].contains(begin) {
        return Err(line);
    }
    Ok(Some((start, after + len + end.len())))
}

/// `text` with coord's block (between `begin` and `end`) set to `body`: replaced in place when
/// present, appended otherwise. Everything outside the block is kept byte for byte.
pub fn with_block(
    text: &str,
    begin: &str,
    end: &str,
    body: &str,
) -> std::result::Result<String, usize> {
    let block = format!("{begin}\n{body}\n{end}");
    if let Some((start, stop)) = find_block(text, begin, end)? {
        return Ok(format!("{}{block}{}", &text[..start], &text[stop..]));
    }
    if text.is_empty() {
        return Ok(format!("{block}\n"));
    }
    // A blank line (at least) between the user's text and the block.
    let newlines = text.bytes().rev().take_while(|b| *b == b'\n').count();
    Ok(format!("{text}{}{block}\n", &"\n\n"[newlines.min(2)..]))
}
