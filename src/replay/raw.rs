//! The one place where `replay` touches raw memory: blocks from an allocator chosen at run time.
//!
// Unsafe code (docs/architecture.md, *Unsafe code*): calls into allocators, page touching,
// `sysconf` and `getrusage`.
#![allow(unsafe_code)]

// Design: a Rust program's `#[global_allocator]` is fixed when it is compiled, so `mtf` does
// not swap its own allocator. Each allocator is instead called directly through its
// `GlobalAlloc` implementation (`std::alloc::System`, `tikv_jemallocator::Jemalloc`,
// `mimalloc::MiMalloc`): the replayed blocks come from the allocator under test, while `mtf`'s
// own bookkeeping (the map of live blocks, the histograms) stays on the system allocator.
// Every call goes through the fallible `GlobalAlloc` methods, which return null instead of
// aborting, after `Layout` has checked the size; nothing here calls `handle_alloc_error`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr::NonNull;

use super::library::{Library, LibraryError};

/// An allocator that `replay` can measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allocator {
    /// The C library's `malloc` (Rust's `std::alloc::System`).
    System,
    /// jemalloc (the `tikv-jemallocator` crate; feature `jemalloc`).
    #[cfg(feature = "jemalloc")]
    Jemalloc,
    /// mimalloc (the `mimalloc` crate; feature `mimalloc`).
    #[cfg(feature = "mimalloc")]
    Mimalloc,
    /// A library named by its path, loaded with `dlopen` in the measuring child
    /// ([`Library`]; one per command line, so it lives as long as the process).
    Library(&'static Library),
}

impl Allocator {
    /// The allocators this build of `mtf` has.
    pub fn available() -> Vec<Allocator> {
        vec![
            Allocator::System,
            #[cfg(feature = "jemalloc")]
            Allocator::Jemalloc,
            #[cfg(feature = "mimalloc")]
            Allocator::Mimalloc,
        ]
    }

    /// Its name on the command line (a library's file name).
    pub fn name(self) -> &'static str {
        match self {
            Allocator::Library(l) => l.name(),
            Allocator::System => "system",
            #[cfg(feature = "jemalloc")]
            Allocator::Jemalloc => "jemalloc",
            #[cfg(feature = "mimalloc")]
            Allocator::Mimalloc => "mimalloc",
        }
    }

    /// The allocator named `name`, if this build has it.
    pub fn from_name(name: &str) -> Option<Allocator> {
        Allocator::available()
            .into_iter()
            .find(|a| a.name() == name)
    }

    /// The allocator library at `path`, not loaded: the parent's name for it (kept for the
    /// life of the process).
    pub fn library(path: &std::path::Path) -> Allocator {
        Allocator::Library(Box::leak(Box::new(Library::new(path))))
    }

    /// The allocator library at `path`, loaded (in the measuring child).
    pub fn load_library(path: &std::path::Path) -> Result<Allocator, LibraryError> {
        Ok(Allocator::Library(Box::leak(Box::new(Library::load(
            path,
        )?))))
    }

    /// The command line's text for it: a built-in name, or a library's path.
    pub fn spec(self) -> std::borrow::Cow<'static, str> {
        match self {
            Allocator::Library(l) => l.path().to_string_lossy(),
            a => a.name().into(),
        }
    }

    /// The library's path, for a library.
    pub fn path(self) -> Option<&'static std::path::Path> {
        match self {
            Allocator::Library(l) => Some(l.path()),
            _ => None,
        }
    }

    fn global(self) -> &'static dyn GlobalAlloc {
        match self {
            // Never used: every call handles a library before asking for this.
            Allocator::Library(_) => &System,
            Allocator::System => &System,
            #[cfg(feature = "jemalloc")]
            Allocator::Jemalloc => &tikv_jemallocator::Jemalloc,
            #[cfg(feature = "mimalloc")]
            Allocator::Mimalloc => &mimalloc::MiMalloc,
        }
    }

    /// A new block for `layout` (whose size is not 0), or `None` when the allocator has none.
    pub fn alloc(self, layout: Layout) -> Option<Block> {
        debug_assert!(layout.size() > 0);
        if let Allocator::Library(l) = self {
            let ptr = l.alloc(layout.size(), layout.align());
            return NonNull::new(ptr).map(|ptr| Block { ptr, layout });
        }
        // SAFETY: `layout` has a non-zero size (the caller makes every size at least 1), as
        // `GlobalAlloc::alloc` requires; a null result is handled, not dereferenced.
        let ptr = unsafe { self.global().alloc(layout) };
        NonNull::new(ptr).map(|ptr| Block { ptr, layout })
    }

    /// Gives `block` back to this allocator (the one that made it).
    pub fn free(self, block: Block) {
        if let Allocator::Library(l) = self {
            // SAFETY: `block` came from this library's `alloc` or `realloc` (a `Block` is made
            // only there and consumed here), so it is live.
            return unsafe { l.free(block.ptr.as_ptr()) };
        }
        // SAFETY: `block` came from `alloc` or `realloc` of this same allocator with exactly
        // this layout (a `Block` is only made there and is consumed here), so it is live.
        unsafe { self.global().dealloc(block.ptr.as_ptr(), block.layout) }
    }

    /// Resizes `block` to `size` bytes (not 0): the new block, or the old one back when the
    /// size is impossible for its alignment or the allocator has no memory.
    pub fn realloc(self, block: Block, size: usize) -> Result<Block, Block> {
        let Ok(layout) = Layout::from_size_align(size, block.layout.align()) else {
            return Err(block);
        };
        debug_assert!(size > 0);
        if let Allocator::Library(l) = self {
            let (old, align) = (block.layout.size(), block.layout.align());
            // SAFETY: `block` is live and was made by this library with `old` bytes and
            // alignment `align`; on null it is still valid and returned.
            let ptr = unsafe { l.realloc(block.ptr.as_ptr(), old, align, size) };
            return match NonNull::new(ptr) {
                Some(ptr) => Ok(Block { ptr, layout }),
                None => Err(block),
            };
        }
        // SAFETY: `block` is live and was made by this allocator with `block.layout`; `size`
        // is non-zero and, rounded up to the alignment, does not overflow `isize` (checked by
        // `Layout::from_size_align` above). On null the old block is still valid and returned.
        let ptr = unsafe {
            self.global()
                .realloc(block.ptr.as_ptr(), block.layout, size)
        };
        match NonNull::new(ptr) {
            Some(ptr) => Ok(Block { ptr, layout }),
            None => Err(block),
        }
    }
}

/// A live block of the allocator under test.
#[derive(Debug)]
pub struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: a `Block` is the only handle to its memory (it is neither `Copy` nor `Clone`), and
// every allocator here may free a block on a thread other than the one that made it.
unsafe impl Send for Block {}

impl Block {
    /// Its size in bytes.
    pub fn size(&self) -> usize {
        self.layout.size()
    }

    /// The address the allocator returned.
    pub fn addr(&self) -> u64 {
        self.ptr.as_ptr() as usize as u64
    }

    /// Writes one byte in each page of the block from byte `from` on, so that the pages are
    /// really mapped (memory_replay's touching), and the last byte.
    pub fn touch(&self, from: usize, page: usize) {
        let size = self.layout.size();
        let mut at = from;
        while at < size {
            // SAFETY: `at < size`, inside the block this handle owns.
            unsafe { self.ptr.as_ptr().add(at).write_volatile(1) };
            at += page;
        }
        if from < size {
            // SAFETY: `size > from >= 0`, so `size - 1` is inside the block.
            unsafe { self.ptr.as_ptr().add(size - 1).write_volatile(1) };
        }
    }
}

impl Block {
    /// Writes one byte in each page of bytes `from..to` of the block (`to` at most its size),
    /// and the last of them: the pages a program that used those bytes made resident.
    pub fn touch_within(&self, from: usize, to: usize, page: usize) {
        let to = to.min(self.layout.size());
        let mut at = from;
        while at < to {
            // SAFETY: `at < to <= size`, inside the block this handle owns.
            unsafe { self.ptr.as_ptr().add(at).write_volatile(1) };
            at += page;
        }
        if from < to {
            // SAFETY: `to > from >= 0` and `to <= size`, so `to - 1` is inside the block.
            unsafe { self.ptr.as_ptr().add(to - 1).write_volatile(1) };
        }
    }
}

/// The size of a memory page (4096 where the system does not say).
pub(crate) fn page_size() -> usize {
    #[cfg(unix)]
    {
        // SAFETY: sysconf reads a configuration value; it has no preconditions.
        let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if p > 0 {
            return p as usize;
        }
    }
    4096
}

/// Which of the `out.len()` pages from the page-aligned address `addr` are resident (bit 0 of
/// each byte, as `mincore` says); false where the system cannot tell (a range not mapped).
pub(crate) fn resident_pages(addr: u64, out: &mut [u8]) -> bool {
    #[cfg(target_os = "linux")]
    {
        let page = page_size();
        let Ok(start) = usize::try_from(addr) else {
            return false;
        };
        // SAFETY: mincore only reads the page tables of the range and writes one byte per
        // page into `out`, which has a byte for each of the `out.len()` pages asked about; an
        // unmapped range is an error (ENOMEM), not undefined behaviour.
        let r = unsafe {
            libc::mincore(
                start as *mut libc::c_void,
                out.len().saturating_mul(page),
                out.as_mut_ptr(),
            )
        };
        r == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (addr, out);
        false
    }
}

/// The process's resident set size in bytes (Linux: `/proc/self/statm`).
pub(crate) fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page_size() as u64)
}

/// The process's page faults and high-water RSS so far.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Usage {
    pub(crate) max_rss: u64,
    pub(crate) minor_faults: u64,
    pub(crate) major_faults: u64,
}

/// `getrusage(RUSAGE_SELF)` (zeros where there is none).
pub(crate) fn usage() -> Usage {
    #[cfg(unix)]
    {
        // SAFETY: `getrusage` fills the zeroed struct it is given and touches nothing else.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: as above; `ru` is a valid, writable `rusage`.
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } == 0 {
            // ru_maxrss is in KiB on Linux (bytes on macOS).
            let unit = if cfg!(target_os = "macos") { 1 } else { 1024 };
            return Usage {
                max_rss: (ru.ru_maxrss.max(0) as u64) * unit,
                minor_faults: ru.ru_minflt.max(0) as u64,
                major_faults: ru.ru_majflt.max(0) as u64,
            };
        }
    }
    Usage::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_allocator_allocates_resizes_and_frees() {
        for a in Allocator::available() {
            assert_eq!(Allocator::from_name(a.name()), Some(a));
            let b = a.alloc(Layout::from_size_align(100, 16).unwrap()).unwrap();
            b.touch(0, 4096);
            let b = a.realloc(b, 100_000).unwrap();
            assert_eq!(b.size(), 100_000);
            b.touch(100, 4096);
            a.free(b);
            // An impossible size is refused, not an abort.
            let huge = Layout::from_size_align(1 << 62, 16).unwrap();
            assert!(a.alloc(huge).is_none(), "{}", a.name());
        }
    }
}
