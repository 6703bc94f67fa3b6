//! The archive policy: once a tracker holds more than [`MAX_STEPS`] steps, its first
//! [`ARCHIVED_AT_ONCE`] move to `TOPIC-tracker-archive.md` beside it, the rest are renumbered
//! from 01, and the Steps section opens with the note
//! `Note: Steps 01-NN archived to TOPIC-tracker-archive.md`, NN counting every step the archive
//! holds. The archive renumbers what it receives, so it reads 01, 02, … in order.
//!
//! The note is read and written only here ([`Note`]). Invariants: the archive is written before
//! the tracker, so a crash in between leaves steps in both files, never in neither; the next
//! step then sees the archive one batch ahead of the note, finds those very steps at its end,
//! and finishes the move instead of archiving them twice.

use super::Reviews;
use super::store::read_utf8;
use crate::error::Result;
use crate::fsutil;
use crate::layout;
use crate::review::syntax::{fenced, is_step_heading, renumber_heading};
use crate::review::tracker::Tracker;

/// Steps kept in a tracker before the archive policy applies.
pub const MAX_STEPS: usize = 20;

/// Steps moved to the archive at once.
pub const ARCHIVED_AT_ONCE: usize = 10;

/// The `Note: Steps 01-NN archived to NAME` line that opens the Steps section.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Note {
    /// How many steps the archive holds (NN).
    archived: usize,
}

impl Note {
    const PREFIX: &'static str = "Note: Steps 01-";

    /// The note of a tracker: no note, or one coord cannot read, counts nothing archived.
    fn read(line: Option<&str>) -> Note {
        let archived = line
            .and_then(|n| n.strip_prefix(Note::PREFIX))
            .and_then(|n| n.split(' ').next())
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0);
        Note { archived }
    }

    fn render(&self, archive_name: &str) -> String {
        format!(
            "{}{:02} archived to {archive_name}",
            Note::PREFIX,
            self.archived
        )
    }
}

impl Reviews {
    /// Move steps 01–10 to the archive when there are more than 20; the archive, relative to
    /// the root, when steps were moved.
    pub(super) fn apply_archive_policy(
        &self,
        topic: &str,
        t: &mut Tracker,
    ) -> Result<Option<String>> {
        if t.view().steps.len() <= MAX_STEPS {
            return Ok(None);
        }
        let archive = layout::review_archive(&self.active_dir(), topic);
        let existing = read_utf8(&archive)?;
        let before = existing.as_deref().map_or(0, count_archived_steps);
        let mut taken = t.take_first_steps(ARCHIVED_AT_ONCE)?;
        while taken.last().is_some_and(|l| l.trim().is_empty()) {
            taken.pop();
        }
        let name = layout::review_archive_name(topic);
        let noted = Note::read(t.view().steps_note.as_deref());
        if let Some(e) = &existing
            && already_archived(e, &taken, &noted, before)
        {
            t.set_steps_note(&Note { archived: before }.render(&name))?;
            return Ok(Some(self.meta_rel_path(&archive)));
        }
        let first = u32::try_from(before + 1).unwrap_or(u32::MAX);
        let steps = renumber_steps(&taken, first).join("\n");
        let text = match existing {
            None => format!(
                "# Review Tracker Archive: {topic}\n\nSteps archived from `{topic}-tracker.md` (archive policy: more than {MAX_STEPS} steps).\n\n## Steps\n\n{steps}\n"
            ),
            Some(mut e) => {
                if !e.ends_with('\n') {
                    e.push('\n');
                }
                format!("{e}\n{steps}\n")
            }
        };
        // The archive first: a crash in between leaves steps in both files, never in neither,
        // and the next step finishes the move (see `already_archived`).
        fsutil::replace_durable(&archive, text.as_bytes())?;
        let archived = before + ARCHIVED_AT_ONCE;
        t.set_steps_note(&Note { archived }.render(&name))?;
        Ok(Some(self.meta_rel_path(&archive)))
    }
}

/// Whether a step killed between the archive write and the tracker write left these very
/// steps (`taken`) at the archive's end while the tracker still holds them (its note counting
/// one batch fewer than the archive's `before` steps).
fn already_archived(archive: &str, taken: &[String], noted: &Note, before: usize) -> bool {
    if before != noted.archived + ARCHIVED_AT_ONCE {
        return false;
    }
    let first = u32::try_from(noted.archived + 1).unwrap_or(u32::MAX);
    let again = renumber_steps(taken, first).join("\n");
    archive.trim_end().ends_with(again.trim_end())
}

/// The number of `### NN` step entries in an archive file (outside code fences).
fn count_archived_steps(text: &str) -> usize {
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let fence = fenced(&lines);
    lines
        .iter()
        .enumerate()
        .filter(|(i, l)| !fence[*i] && is_step_heading(l))
        .count()
}

/// Renumber the `### NN` headings of archived step lines from `first`.
fn renumber_steps(lines: &[String], first: u32) -> Vec<String> {
    let fence = fenced(lines);
    let mut n = first;
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            if !fence[i] && is_step_heading(l) {
                let out = renumber_heading(l, n);
                n += 1;
                out
            } else {
                l.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn the_note_reads_back() {
        let name = "api-tracker-archive.md";
        for archived in [10, 20, 130] {
            let line = Note { archived }.render(name);
            assert_eq!(Note::read(Some(&line)), Note { archived });
        }
        assert_eq!(
            Note { archived: 10 }.render(name),
            "Note: Steps 01-10 archived to api-tracker-archive.md"
        );
        for unread in [None, Some("Note: see below"), Some("Note: Steps 01-x y")] {
            assert_eq!(Note::read(unread), Note { archived: 0 }, "{unread:?}");
        }
    }

    #[test]
    fn archived_steps_are_counted_and_renumbered_outside_fences() {
        let text = "# Archive\n\n## Steps\n\n### 01\n- **Actor:** A\n```\n### 07 in a fence\n```\n\n### 02 - response\n### For A (step 03)\n";
        assert_eq!(count_archived_steps(text), 2);
        let got = renumber_steps(&lines(text), 11);
        assert_eq!(got[4], "### 11");
        assert_eq!(got[7], "### 07 in a fence");
        assert_eq!(got[10], "### 12 - response");
        assert_eq!(got[11], "### For A (step 03)");
    }

    #[test]
    fn an_interrupted_move_is_recognised() {
        let taken = lines("### 01\n- **Actor:** A\n\n### 02\n- **Actor:** B");
        let archive = "# Archive\n\n## Steps\n\n### 01\n- **Actor:** Z\n\n### 11\n- **Actor:** A\n\n### 12\n- **Actor:** B\n";
        let noted = Note { archived: 10 };
        // The archive holds the ten noted steps and these ones again: the move was interrupted.
        assert!(already_archived(
            archive,
            &taken,
            &noted,
            10 + ARCHIVED_AT_ONCE
        ));
        // The archive is not a batch ahead of the note: archive them.
        assert!(!already_archived(archive, &taken, &noted, 10));
        // A batch ahead, but with other steps at its end: archive them.
        let other = lines("### 01\n- **Actor:** C");
        assert!(!already_archived(archive, &other, &noted, 20));
    }
}
