//! What must not break exclusion or lose data: crashes under SIGKILL, faults, a full disk, network
//! filesystems, sandboxes, hostile arguments and symlinks.

mod arguments;
mod crashes;
mod crashes_dialogue;
mod crashes_messages;
pub(crate) mod crashes_protocols;
mod crashes_review;
mod extremes;
mod faults;
mod full_disk;
mod netfs;
mod netfs_cache;
mod sandbox;
mod startup;
mod symlinks;
