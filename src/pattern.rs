//! Claim patterns: a folder (`src/auth/`) or a gitignore-style glob (`src/**/*.sql`), relative
//! to the root, and whether two of them can match one path.

use std::collections::HashSet;
use std::fmt;

/// One character position of a segment.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Tok {
    /// This character.
    Lit(char),
    /// `?`: any one character.
    Any,
    /// `[...]`: one character of the ranges (`negated`: not of them).
    Class {
        ranges: Vec<(char, char)>,
        negated: bool,
    },
    /// `*`: any run of characters.
    Star,
}

/// One segment.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Seg {
    /// `**`.
    Deep,
    /// One path segment.
    One(Vec<Tok>),
}

/// A parsed claim pattern.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pattern {
    text: String,
    segs: Vec<Seg>,
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Whether an argument names a claim (a folder or a pattern) rather than one file: it ends with
/// `/`, or holds an unescaped `*`, `?` or `[`.
pub fn is_claim(arg: &str) -> bool {
    if arg.ends_with('/') {
        return true;
    }
    let mut chars = arg.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '*' | '?' | '[' => return true,
            _ => {}
        }
    }
    false
}

/// The characters a `\` stands before in an argument that names one file.
const ESCAPED: &[char] = &['*', '?', '[', ']', '\\'];

/// The file an argument that is not a claim names: a `\` before `*`, `?`, `[`, `]` or `\`
/// stands for that character (`a\[1\].md` is the file `a[1].md`, as in a pattern); any other
/// `\` is kept.
pub fn literal_name(arg: &str) -> String {
    let mut out = String::with_capacity(arg.len());
    let mut chars = arg.chars().peekable();
    while let Some(c) = chars.next() {
        match chars.peek() {
            Some(&next) if c == '\\' && ESCAPED.contains(&next) => {
                out.push(next);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// `name`, a file's path, written as an argument that names that file (the inverse of
/// [`literal_name`]): a `\` before each `*`, `?`, `[`, `]` and `\`.
pub fn escape_name(name: &str) -> String {
    let escaped = |c: char| ESCAPED.contains(&c).then_some('\\').into_iter().chain([c]);
    name.chars().flat_map(escaped).collect()
}

impl Pattern {
    /// Parse a pattern relative to the root (`/`-separated, no leading `/`, no `.` or `..`
    /// segment; a trailing `/` claims a folder).
    pub fn parse(text: &str) -> Result<Pattern, String> {
        if text.trim().is_empty() {
            return Err("it is empty".into());
        }
        if text.starts_with('/') {
            return Err("it must be relative to the workspace root".into());
        }
        if text.contains('\0') || text.contains('\n') {
            return Err("it holds a control character".into());
        }
        let folder = text.ends_with('/');
        let mut parts: Vec<&str> = text.split('/').filter(|s| !s.is_empty()).collect();
        if folder {
            parts.push("**");
        }
        // `**/**` is `**`: the normalized text drops the repeats as the segments do.
        let (mut segs, mut norm) = (Vec::with_capacity(parts.len()), Vec::new());
        for p in parts {
            if p == "." || p == ".." {
                return Err(format!("`{p}` is not allowed in a pattern"));
            }
            if p != "**" {
                segs.push(Seg::One(parse_segment(p)?));
            } else if segs.last() != Some(&Seg::Deep) {
                segs.push(Seg::Deep);
            } else {
                continue;
            }
            norm.push(p);
        }
        if segs.is_empty() {
            return Err("it names no path".into());
        }
        Ok(Pattern {
            text: norm.join("/"),
            segs,
        })
    }

    /// A pattern matching exactly the path `rel` (its characters taken literally).
    pub fn literal(rel: &str) -> Pattern {
        Pattern {
            text: rel.to_string(),
            segs: rel
                .split('/')
                .filter(|s| !s.is_empty())
                .map(|s| Seg::One(s.chars().map(Tok::Lit).collect()))
                .collect(),
        }
    }

    /// The pattern as text (normalized).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the path `rel` (relative to the root, `/`-separated) is matched.
    pub fn matches(&self, rel: &str) -> bool {
        self.overlaps(&Pattern::literal(rel))
    }

    /// Whether some path is matched by both `self` and `other`.
    pub fn overlaps(&self, other: &Pattern) -> bool {
        // Leading segments without wildcards on both sides must be equal: most pairs of claims
        // (and a claim and a path) part there, without the walk below.
        let literal = |s: &Seg| matches!(s, Seg::One(toks) if is_literal(toks));
        let mut pairs =
            (self.segs.iter().zip(&other.segs)).take_while(|(a, b)| literal(a) && literal(b));
        if pairs.any(|(a, b)| a != b) {
            return false;
        }
        meet(&self.segs, &other.segs, &Seg::Deep, &|x, y| match (x, y) {
            (Seg::One(x), Seg::One(y)) if is_literal(x) && is_literal(y) => x == y,
            (Seg::One(x), Seg::One(y)) => meet(x, y, &Tok::Star, &chars_meet),
            _ => true,
        })
    }

    /// The literal folder every match lies in (`src/auth` for `src/auth/**/*.rs`; empty when
    /// the first segment has a wildcard).
    pub fn literal_prefix(&self) -> String {
        let folders = &self.segs[..self.segs.len().saturating_sub(1)];
        let char = |t: &Tok| match t {
            Tok::Lit(c) => Some(*c),
            _ => None,
        };
        let literal = |s: &Seg| match s {
            Seg::One(toks) => toks.iter().map(char).collect::<Option<String>>(),
            Seg::Deep => None,
        };
        let names: Vec<String> = folders.iter().map_while(literal).collect();
        names.join("/")
    }
}

fn parse_segment(s: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = s.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (tok, next) = match chars[i] {
            '\\' => (
                Tok::Lit(*chars.get(i + 1).ok_or("it ends with a lone `\\`")?),
                i + 2,
            ),
            '[' => parse_class(&chars, i)?,
            '*' => (Tok::Star, i + 1),
            '?' => (Tok::Any, i + 1),
            c => (Tok::Lit(c), i + 1),
        };
        // `**` inside a segment is `*`; runs of stars are one.
        if tok != Tok::Star || toks.last() != Some(&Tok::Star) {
            toks.push(tok);
        }
        i = next;
    }
    Ok(toks)
}

/// Parse the class starting at `chars[start] == '['`; returns it and the index after `]`.
fn parse_class(chars: &[char], start: usize) -> Result<(Tok, usize), String> {
    // The character at `i`, a `\` taking the next one literally; the index after it.
    let one = |i: usize| -> Result<(char, usize), String> {
        match chars.get(i) {
            Some('\\') => chars.get(i + 1).map(|&c| (c, i + 2)),
            other => other.map(|&c| (c, i + 1)),
        }
        .ok_or_else(|| "a `[` is never closed by `]`".to_string())
    };
    let negated = matches!(chars.get(start + 1), Some('!' | '^'));
    let mut i = start + 1 + usize::from(negated);
    let mut ranges = Vec::new();
    loop {
        if chars.get(i) == Some(&']') && !ranges.is_empty() {
            i += 1;
            break;
        }
        let (lo, next) = one(i)?;
        i = next;
        if chars.get(i) == Some(&'-') && chars.get(i + 1).is_some_and(|&n| n != ']') {
            let (hi, next) = one(i + 1)?;
            i = next;
            if hi < lo {
                return Err(format!("the range `{lo}-{hi}` runs backwards"));
            }
            ranges.push((lo, hi));
        } else {
            ranges.push((lo, lo));
        }
    }
    Ok((Tok::Class { ranges, negated }, i))
}

/// Whether some sequence matches both `a` and `b`, where `star` (`**`, `*`) takes any run of
/// items and two others meet where `one` holds (`one(x, star)`: a star may take `x`). No segment
/// is empty, so neither is a match of two.
fn meet<T: PartialEq>(a: &[T], b: &[T], star: &T, one: &dyn Fn(&T, &T) -> bool) -> bool {
    let (mut todo, mut seen) = (vec![(0, 0)], HashSet::new());
    while let Some((i, j)) = todo.pop() {
        if !seen.insert((i, j)) {
            continue;
        }
        let (x, y) = (a.get(i), b.get(j));
        if x == Some(star) {
            todo.push((i + 1, j));
        }
        if y == Some(star) {
            todo.push((i, j + 1));
        }
        let (x_star, y_star) = (x == Some(star), y == Some(star));
        match (x, y) {
            (None, None) => return true,
            // A star takes the other side's next item and stays.
            (Some(x), Some(y)) if x_star && !y_star && one(y, x) => todo.push((i, j + 1)),
            (Some(x), Some(y)) if y_star && !x_star && one(x, y) => todo.push((i + 1, j)),
            (Some(x), Some(y)) if !x_star && !y_star && one(x, y) => todo.push((i + 1, j + 1)),
            _ => {}
        }
    }
    false
}

fn is_literal(toks: &[Tok]) -> bool {
    toks.iter().all(|t| matches!(t, Tok::Lit(_)))
}

/// Whether the one-character token `t` stands for the character `c` (never `/`).
fn takes(t: &Tok, c: u32) -> bool {
    let within = |&(lo, hi): &(char, char)| lo as u32 <= c && c <= hi as u32;
    c != '/' as u32
        && match t {
            Tok::Lit(l) => *l as u32 == c,
            Tok::Any | Tok::Star => true,
            Tok::Class { ranges, negated } => ranges.iter().any(within) != *negated,
        }
}

/// Whether two one-character tokens share a character: the least one they share, if any, starts
/// a range, follows one's end or `/`, or is the first character.
fn chars_meet(a: &Tok, b: &Tok) -> bool {
    let bounds = |t: &Tok| match t {
        Tok::Lit(c) => vec![*c as u32],
        Tok::Class { ranges, .. } => (ranges.iter())
            .flat_map(|&(lo, hi)| [lo as u32, hi as u32 + 1])
            .collect(),
        Tok::Any | Tok::Star => Vec::new(),
    };
    let mut at = [bounds(a), bounds(b)].concat();
    at.extend([0, '0' as u32]);
    at.into_iter().any(|c| takes(a, c) && takes(b, c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Pattern {
        Pattern::parse(s).unwrap()
    }

    #[test]
    fn folders_and_globs_match() {
        assert!(p("src/auth/").matches("src/auth/x.rs"));
        assert!(p("src/auth/").matches("src/auth/deep/x.rs"));
        assert!(!p("src/auth/").matches("src/authz/x.rs"));
        assert!(p("src/**/*.sql").matches("src/a/b/c.sql"));
        assert!(p("src/**/*.sql").matches("src/c.sql"));
        assert!(!p("src/**/*.sql").matches("src/c.rs"));
        assert!(!p("*.sql").matches("src/c.sql"));
        assert!(p("src/[a-c]?.rs").matches("src/b1.rs"));
        assert!(!p("src/[!a-c]?.rs").matches("src/b1.rs"));
        assert_eq!(p("src/auth/").as_str(), "src/auth/**");
    }

    #[test]
    fn overlaps_pattern_against_pattern() {
        assert!(p("src/**/*.sql").overlaps(&p("src/db/")));
        assert!(p("src/*.rs").overlaps(&p("src/a*")));
        assert!(!p("src/*.rs").overlaps(&p("src/*.sql")));
        assert!(!p("src/auth/").overlaps(&p("docs/**")));
        assert!(p("**/x.rs").overlaps(&p("a/b/**")));
        assert!(!p("a/*").overlaps(&p("a/*/b")));
        assert!(p("[!x]").overlaps(&p("[!y]")));
        assert!(!p("[a]").overlaps(&p("[!a]")));
    }

    #[test]
    fn bad_patterns_are_refused() {
        for bad in ["", "/abs/*", "a/../b/*", "src/[a", "x\\"] {
            assert!(Pattern::parse(bad).is_err(), "{bad}");
        }
    }
}
