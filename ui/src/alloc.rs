//! The global allocator: mimalloc for small blocks, the system allocator
//! (glibc) for large ones.
//!
//! Small blocks are most of the allocations: tree nodes, scan facts, records,
//! made on one thread and often freed on another, where glibc's malloc spent
//! 12-16 % of `stats` and `print -V` (docs/performance.md). Large
//! blocks are few: file read buffers, messages copied out of many segments,
//! output buffers. mimalloc keeps freed large blocks in its segments, sized
//! for reuse, and gives their pages back late: on a capture of 1 MB messages
//! in 64 KB loopback segments its resident memory grew with the file (370 MB
//! for `print -V --format jsonl` of a 315 MB capture, where glibc alone held
//! 28 MB). glibc maps such blocks on their own and gives them back when they
//! are freed, so memory follows what is alive.
//!
//! Which allocator a block comes from is decided by its size alone, so the
//! one that made a block is the one that frees or resizes it: Rust's
//! allocator contract hands `dealloc` and `realloc` the layout the block was
//! made with. A block resized across [`LARGE`] moves to the other allocator.

use std::alloc::{GlobalAlloc, Layout, System};

use mimalloc::MiMalloc;

/// Blocks of this many bytes or more come from the system allocator.
pub const LARGE: usize = 256 << 10;

/// mimalloc below [`LARGE`], the system allocator from it on.
pub struct Hybrid;

/// Whether a block of `size` bytes is made by the system allocator.
#[inline(always)]
fn large(size: usize) -> bool {
    size >= LARGE
}

/// `$call` on the allocator a block of `$size` bytes belongs to.
macro_rules! by_size {
    ($size:expr, $call:ident($($arg:expr),*)) => {
        if large($size) {
            System.$call($($arg),*)
        } else {
            MiMalloc.$call($($arg),*)
        }
    };
}

// SAFETY: each call is forwarded to the allocator that the block's size
// selects, with the caller's layout and pointer unchanged, so every block is
// freed and resized by the allocator that made it (the contract of
// `GlobalAlloc` passes `dealloc` and `realloc` the block's own layout). A
// resize across the boundary allocates in the other allocator, copies the
// bytes both sizes have, and frees the old block only when the new one was
// made: on failure the old block stays valid, as `realloc` requires.
unsafe impl GlobalAlloc for Hybrid {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout has a non-zero size (contract of `alloc`).
        unsafe { by_size!(layout.size(), alloc(layout)) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        unsafe { by_size!(layout.size(), alloc_zeroed(layout)) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was made by this allocator with `layout`, so by the
        // allocator its size selects.
        unsafe { by_size!(layout.size(), dealloc(ptr, layout)) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `dealloc` for `ptr` and `layout`; `new_size` is non-zero
        // and, rounded up to the alignment, fits `isize` (contract of
        // `realloc`), so the new layout exists.
        unsafe {
            match (large(layout.size()), large(new_size)) {
                (false, false) => MiMalloc.realloc(ptr, layout, new_size),
                (true, true) => System.realloc(ptr, layout, new_size),
                _ => {
                    let Ok(new) = Layout::from_size_align(new_size, layout.align()) else {
                        return std::ptr::null_mut();
                    };
                    let moved = self.alloc(new);
                    if !moved.is_null() {
                        std::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                    moved
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::LARGE;

    /// Blocks made, grown and shrunk across the boundary keep their bytes
    /// (the test binary allocates through `Hybrid` as the program does).
    #[test]
    fn resizing_across_the_boundary_keeps_the_bytes() {
        let pattern = |n: usize| (0..n).map(|i| (i % 251) as u8).collect::<Vec<u8>>();
        for start in [1, 100, LARGE - 1, LARGE, LARGE + 1, 3 * LARGE] {
            let mut v = pattern(start);
            v.shrink_to_fit();
            // Grow past the boundary (or further past it).
            v.reserve_exact(2 * LARGE);
            assert_eq!(v, pattern(start));
            v.extend(pattern(2 * LARGE).into_iter().skip(start));
            assert_eq!(v.len(), (2 * LARGE).max(start));
            assert_eq!(v[..], pattern((2 * LARGE).max(start))[..]);
            // Shrink back below it.
            v.truncate(start.min(LARGE / 2));
            v.shrink_to_fit();
            assert_eq!(v, pattern(start.min(LARGE / 2)));
        }
    }

    /// Alignments past the usual ones are honoured on both sides.
    #[test]
    fn aligned_blocks_on_both_sides() {
        #[repr(align(4096))]
        struct Page([u8; 4096]);
        for n in [1, LARGE / 4096 + 1] {
            let pages: Vec<Page> = (0..n).map(|_| Page([7; 4096])).collect();
            assert_eq!(pages.as_ptr() as usize % 4096, 0);
            assert!(pages.iter().all(|p| p.0.iter().all(|&b| b == 7)));
        }
        let zeros = vec![0u64; LARGE];
        assert!(zeros.iter().all(|&z| z == 0));
    }
}
