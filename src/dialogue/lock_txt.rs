//! `lock.txt`: the seed's lock on a dialogue folder, held (with the kernel mutex) by every write.

use std::time::Duration;

use crate::arbiter::Guard as MutexGuard;
use crate::clock::{self, Timestamp};
use crate::error::{Error, Refusal, Result};
use crate::fsutil;
use crate::layout;
use crate::wait::{Deadline, FolderWatch};

use super::Dialogue;
use super::files::LockInfo;

/// A held `lock.txt` (with the dialogue's kernel lock). Dropping it removes `lock.txt`.
pub struct LockTxt<'a> {
    d: &'a Dialogue,
    _mutex: MutexGuard,
    /// The stale lock that was taken over, if any.
    pub took_over: Option<LockInfo>,
    released: bool,
}

impl LockTxt<'_> {
    /// After a takeover, once any interrupted write is completed: rewrite `lock.txt` without
    /// its `interrupted:` line, so that from now on only this holder's own message can be
    /// the one a crash leaves uncounted.
    pub(super) fn settle(&self, holder: &str, now: &Timestamp) -> Result<()> {
        if self.took_over.is_none() {
            return Ok(());
        }
        fsutil::replace(
            &self.d.path(layout::DIALOGUE_LOCK),
            LockInfo::render(holder, now, None).as_bytes(),
        )
    }

    /// Leave `lock.txt` in place (a committed write whose completion failed): the next `say`
    /// finds it stale, this process being gone, and completes the write.
    pub fn keep(mut self) {
        self.released = true;
    }

    /// Remove `lock.txt` (the last step of a write).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when it cannot be removed.
    pub fn release(mut self) -> Result<()> {
        self.released = true;
        fsutil::remove(&self.d.path(layout::DIALOGUE_LOCK)).map(|_| ())
    }
}

impl Drop for LockTxt<'_> {
    fn drop(&mut self) {
        if !self.released {
            let _ = fsutil::remove(&self.d.path(layout::DIALOGUE_LOCK));
        }
    }
}

impl Dialogue {
    /// Take `lock.txt` for `holder`, starting with the kernel lock `mutex` already held. A stale
    /// `lock.txt` is taken over; a fresh one is waited for (without the kernel lock) up to `wait`.
    ///
    /// # Errors
    ///
    /// Refused when `lock.txt` stays held; [`Error::Io`].
    pub(super) fn take_lock_txt(
        &self,
        mutex: MutexGuard,
        holder: &str,
        wait: Duration,
    ) -> Result<LockTxt<'_>> {
        let d = self;
        let deadline = Deadline::after(Some(wait));
        let path = d.path(layout::DIALOGUE_LOCK);
        // Every write in the folder starts here: sweep what killed writers left (the temporary
        // files of `current-turn.txt` and `status.json` replacements); nothing else would.
        fsutil::sweep_temps(&d.folder);
        let mut held = Some(mutex);
        let mut watch: Option<FolderWatch> = None;
        loop {
            let guard = match held.take() {
                Some(g) => g,
                None => d.lock_mutex()?,
            };
            let now = clock::now();
            let record = LockInfo::render(holder, &now, None);
            if fsutil::create_new(&path, record.as_bytes())? {
                return Ok(LockTxt {
                    d,
                    _mutex: guard,
                    took_over: None,
                    released: false,
                });
            }
            let info = match d.read_small(layout::DIALOGUE_LOCK) {
                Ok(Some((text, mtime))) => LockInfo::parse(&text, mtime, &now),
                Ok(None) => {
                    held = Some(guard);
                    continue;
                }
                Err(_) => {
                    LockInfo::parse("", fsutil::mtime(&path).map(clock::from_system_time), &now)
                }
            };
            if info.stale {
                // Replaced in one rename, never removed first: a crash in between would leave an
                // interrupted write without the stale `lock.txt` that lets the next `say` complete
                // it. The new record carries whose write that may be, so that this process being
                // killed before completing it does not hide it from the next one.
                let origin = info.interrupted.as_deref().unwrap_or(&info.holder);
                fsutil::replace(
                    &path,
                    LockInfo::render(holder, &now, Some(origin)).as_bytes(),
                )?;
                return Ok(LockTxt {
                    d,
                    _mutex: guard,
                    took_over: Some(info),
                    released: false,
                });
            }
            drop(guard);
            if deadline.passed() {
                return Err(Error::refused(Refusal::DialogueBusy,
                    format!(
                        "`{}` is held by {} since {} (a write in progress)",
                        d.shown(layout::DIALOGUE_LOCK),
                        info.holder,
                        info.since.as_deref().unwrap_or("an unknown time")
                    ),
                    Some(
                        "try again in a moment; a lock.txt older than 60 seconds is stale and taken over"
                            .into(),
                    ),
                ));
            }
            match &watch {
                // Subscribe first, then look again, then wait.
                None => watch = Some(FolderWatch::new(std::slice::from_ref(&d.folder))),
                Some(w) => {
                    w.wait(deadline.next_sleep(crate::wait::recheck_for(&d.folder)));
                }
            }
        }
    }
}
