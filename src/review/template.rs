//! The text of a new tracker, and the seed's template with its placeholders.
//!
//! Invariant: [`new_tracker_text`] is a tracker [`super::tracker::Tracker::parse`] reads back
//! (coord checks that before writing one); [`TEMPLATE`] is the seed's text as is, and is not.

use super::syntax::{PROMPT_POINTER, fence_for};

/// What a new tracker is made of.
#[derive(Debug, Clone)]
pub struct NewTracker<'a> {
    /// The topic.
    pub topic: &'a str,
    /// The reviewed path, relative to the root.
    pub target: &'a str,
    /// Today, `YYYY-MM-DD`.
    pub date: &'a str,
    /// The reviewer's display name.
    pub reviewer: &'a str,
    /// The implementer's display name.
    pub implementer: &'a str,
    /// The prompt for the reviewer's step 01.
    pub prompt: &'a str,
}

/// The text of a new tracker: Meta, Current State (next actor the reviewer, action review),
/// step 01 planned for the reviewer, an empty Issues table, the Agreements Log, and the
/// reviewer's prompt under Handoff Prompts.
pub fn new_tracker_text(n: &NewTracker<'_>) -> String {
    let fence = fence_for(n.prompt);
    format!(
        "# Review Tracker: {topic}\n\
\n\
## Meta\n\
- **Topic:** {topic}\n\
- **Target:** {target}\n\
- **Created:** {date}\n\
- **Last updated:** {date}\n\
- **Status:** in_progress\n\
- **Participants:** {reviewer} (reviewer), {implementer} (implementer)\n\
\n\
## Current State\n\
- **Next actor:** {reviewer}\n\
- **Next action:** review (step 01)\n\
- **Prompt for next actor:** {PROMPT_POINTER}\n\
\n\
## Steps\n\
\n\
### 01\n\
- **Actor:** {reviewer}\n\
- **Status:** planned\n\
- **Action:** review\n\
- **Input:** {target}\n\
- **Output:**\n\
- **Summary:**\n\
- **Next:**\n\
\n\
## Issues\n\
| ID | Severity | Title | Status | Resolution |\n\
|----|----------|-------|--------|------------|\n\
\n\
## Agreements Log\n\
Key positions agreed between LLMs:\n\
\n\
## Handoff Prompts\n\
\n\
### For {reviewer} (step 01)\n\
{fence}text\n\
{prompt}\n\
{fence}\n",
        topic = n.topic,
        target = n.target,
        date = n.date,
        reviewer = n.reviewer,
        implementer = n.implementer,
        prompt = n.prompt,
    )
}

/// The seed's tracker template (`templates/review-tracker-template.md`), placeholders and all.
pub const TEMPLATE: &str = "# Review Tracker: {topic_name}

## Meta
- **Topic:** {topic_name}
- **Target:** {path/to/target/}
- **Created:** {YYYY-MM-DD}
- **Last updated:** {YYYY-MM-DD}
- **Status:** {in_progress|closed}
- **Participants:** {llm_a} (reviewer), {llm_b} (implementer)

## Current State
- **Next actor:** {llm_name}
- **Next action:** {description}
- **Prompt for next actor:** See Handoff Prompts section below

## Steps

### {NN}
- **Actor:** {llm_name}
- **Status:** {planned|in_progress|done|blocked|no_action}
- **Action:** {action_type}
- **Input:** {file_path}
- **Output:** {file_path}
- **Summary:** {brief description}
- **Next:** {next_llm_name}

## Issues
| ID | Severity | Title | Status | Resolution |
|----|----------|-------|--------|------------|

## Agreements Log
Key positions agreed between LLMs:
- {Decision 1} - {which LLM's position was adopted}
- [DISPUTED] {Decision 2} - {escalated to user, resolved as X}

## Handoff Prompts

### For {llm_name} (step {NN})
```text
{prompt to paste to the next LLM}
```
";
