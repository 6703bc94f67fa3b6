//! The binary's memory allocator: one static block handed out in order, in front of the system's
//! allocator.
//!
//! A coord command is a short process (a lock, an unlock, a client's hook call) that allocates a
//! few hundred kilobytes and exits. Keeping track of what it frees costs more than the memory it
//! would save: with musl's allocator, which maps and unmaps pages as blocks come and go, that
//! bookkeeping was a fifth of a hook call's CPU time. So the first [`SIZE`] bytes come from one
//! static block, in order, aligned as asked; a freed block is given back only when it is the
//! last one handed out (a string built and dropped, a vector grown in place), and a vector that
//! grows at the end stays where it is. Once the block is used up the system allocator serves
//! every request, and frees what it served; a long-running process (`coord mcp`, `coord watch`)
//! thus keeps at most [`SIZE`] bytes it no longer uses. The block is in `.bss`: it costs the
//! binary nothing on disk and the process a page only when one is first touched.

#![allow(unsafe_code)] // A global allocator is an `unsafe` interface; see each block below.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The bytes handed out in order before the system allocator takes over.
pub const SIZE: usize = 8 << 20;

/// The static block.
#[repr(C, align(4096))]
struct Block(UnsafeCell<[u8; SIZE]>);

// SAFETY: the block's bytes are only reached through pointers `Arena::alloc` hands out, each
// range to one owner at a time (the offset moves with a compare-and-swap).
unsafe impl Sync for Block {}

/// A bump allocator over a static block, falling back to [`System`].
pub struct Arena {
    block: Block,
    /// The offset of the first byte not handed out.
    next: AtomicUsize,
}

impl Arena {
    /// An arena with nothing handed out.
    pub const fn new() -> Arena {
        Arena {
            block: Block(UnsafeCell::new([0; SIZE])),
            next: AtomicUsize::new(0),
        }
    }

    fn base(&self) -> *mut u8 {
        self.block.0.get().cast::<u8>()
    }

    /// The offset of `ptr` in the block, when it points into it.
    fn offset_of(&self, ptr: *mut u8) -> Option<usize> {
        let offset = (ptr as usize).wrapping_sub(self.base() as usize);
        (offset < SIZE).then_some(offset)
    }

    /// Hand out `layout` from the block; null when it does not fit in what is left.
    fn bump(&self, layout: Layout) -> *mut u8 {
        let base = self.base() as usize;
        let mut next = self.next.load(Ordering::Acquire);
        loop {
            // The block's base is aligned to 4096, so an aligned offset is an aligned address
            // for every alignment up to that; larger ones are aligned from the address.
            let Some(start) = (base + next)
                .checked_next_multiple_of(layout.align())
                .map(|a| a - base)
            else {
                return ptr::null_mut();
            };
            let Some(end) = start.checked_add(layout.size()).filter(|&e| e <= SIZE) else {
                return ptr::null_mut();
            };
            match self
                .next
                .compare_exchange_weak(next, end, Ordering::AcqRel, Ordering::Acquire)
            {
                // `start + size <= SIZE`: within the block.
                Ok(_) => return self.base().wrapping_add(start),
                Err(now) => next = now,
            }
        }
    }
}

impl Default for Arena {
    fn default() -> Arena {
        Arena::new()
    }
}

// SAFETY: every pointer returned is either a range of the block no one else holds (see `bump`),
// aligned and sized as the layout asks, or the system allocator's own; each is given back to
// the allocator that made it, told apart by its address.
unsafe impl GlobalAlloc for Arena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = self.bump(layout);
        if p.is_null() {
            // SAFETY: the caller's layout, as `GlobalAlloc::alloc` requires.
            unsafe { System.alloc(layout) }
        } else {
            p
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match self.offset_of(ptr) {
            Some(start) => {
                // Given back only when it is the last block handed out.
                let _ = self.next.compare_exchange(
                    start + layout.size(),
                    start,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                );
            }
            // SAFETY: not in the block, so the system allocator made it, with this layout.
            None => unsafe { System.dealloc(ptr, layout) },
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Some(start) = self.offset_of(ptr) else {
            // SAFETY: the system allocator made it, with this layout.
            return unsafe { System.realloc(ptr, layout, new_size) };
        };
        let old_end = start + layout.size();
        // The last block grows or shrinks where it is while it fits.
        if let Some(new_end) = start.checked_add(new_size).filter(|&e| e <= SIZE)
            && self
                .next
                .compare_exchange(old_end, new_end, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            return ptr;
        }
        if new_size <= layout.size() {
            return ptr;
        }
        // SAFETY: `new_size` is not zero (it is larger than the old size) and, as the caller
        // guarantees, does not overflow `isize` once rounded up to the alignment.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: a valid layout of non-zero size.
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks are at least `layout.size()` long and do not overlap (the new
            // one was just handed out, the old one is still held).
            unsafe {
                ptr::copy_nonoverlapping(ptr, new, layout.size());
                self.dealloc(ptr, layout);
            }
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn blocks_are_aligned_apart_and_the_last_one_is_given_back() {
        let a = {
            static A: Arena = Arena::new();
            &A
        };
        unsafe {
            let p = a.alloc(layout(3, 1));
            let q = a.alloc(layout(16, 16));
            assert_eq!(q as usize % 16, 0);
            assert!(q as usize >= p as usize + 3);
            let big = a.alloc(layout(100, 8192));
            assert_eq!(big as usize % 8192, 0);
            // Not the last: nothing given back.
            a.dealloc(q, layout(16, 16));
            let r = a.alloc(layout(1, 1));
            assert!(r as usize >= big as usize + 100);
            // The last: the next block takes its place.
            a.dealloc(r, layout(1, 1));
            assert_eq!(a.alloc(layout(1, 1)), r);
        }
    }

    #[test]
    fn the_last_block_grows_in_place_and_others_move_with_their_bytes() {
        let a = {
            static A: Arena = Arena::new();
            &A
        };
        unsafe {
            let p = a.alloc(layout(4, 1));
            p.copy_from_nonoverlapping(b"abcd".as_ptr(), 4);
            let p2 = a.realloc(p, layout(4, 1), 4096);
            assert_eq!(p2, p, "the last block grows where it is");
            let q = a.alloc(layout(8, 8));
            let p3 = a.realloc(p2, layout(4096, 1), 8192);
            assert_ne!(p3, p2, "a block before another moves");
            assert_eq!(std::slice::from_raw_parts(p3, 4), b"abcd");
            // Shrinking keeps the place.
            assert_eq!(a.realloc(q, layout(8, 8), 2), q);
        }
    }

    #[test]
    fn past_the_block_the_system_allocator_serves_and_frees() {
        let a = {
            static A: Arena = Arena::new();
            &A
        };
        unsafe {
            let most = a.alloc(layout(SIZE - 64, 1));
            assert!(a.offset_of(most).is_some());
            let past = a.alloc(layout(1024, 8));
            assert!(!past.is_null());
            assert!(a.offset_of(past).is_none(), "from the system allocator");
            past.write_bytes(7, 1024);
            let grown = a.realloc(past, layout(1024, 8), 1 << 20);
            assert_eq!(*grown.add(1023), 7);
            a.dealloc(grown, layout(1 << 20, 8));
            // A block of the arena that must move out of it goes to the system allocator too.
            let tail = a.alloc(layout(32, 1));
            assert!(a.offset_of(tail).is_some());
            let _other = a.alloc(layout(8, 1));
            let moved = a.realloc(tail, layout(32, 1), 4096);
            assert!(a.offset_of(moved).is_none());
            a.dealloc(moved, layout(4096, 1));
        }
    }

    #[test]
    fn threads_never_get_the_same_bytes() {
        let a: &'static Arena = {
            static A: Arena = Arena::new();
            &A
        };
        let handles: Vec<_> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    for i in 0..2000 {
                        let p = unsafe { a.alloc(layout(24, 8)) };
                        unsafe { p.write_bytes(t as u8, 24) };
                        mine.push(p as usize);
                        if i % 3 == 0 {
                            // Some given back (when last), some kept.
                            let q = mine.pop().unwrap() as *mut u8;
                            unsafe { a.dealloc(q, layout(24, 8)) };
                        }
                    }
                    for &p in &mine {
                        let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, 24) };
                        assert!(
                            bytes.iter().all(|&b| b == t as u8),
                            "another thread wrote here"
                        );
                    }
                    mine
                })
            })
            .collect();
        let mut all: Vec<usize> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n);
    }
}
