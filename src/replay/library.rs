//! An allocator library named by its path (`mtf replay -a ./libX.so`), loaded with `dlopen` in
//! the measuring child and called through the `malloc`, `free`, `realloc` and aligned entry
//! points it exports.
//!
// Unsafe code (docs/architecture.md, *Unsafe code*): `dlopen`, `dlsym`, and calls through the
// function pointers they give.
#![allow(unsafe_code)]

// Design: the library is loaded with `dlopen(RTLD_NOW | RTLD_LOCAL)` and only the replayed
// operations call its functions, rather than preloading it into the child (`LD_PRELOAD`). With
// `LD_PRELOAD` the library would serve every allocation of the process — the live-block map,
// the histograms, the operations' buffers — so its RSS, page faults and latencies would mix
// `mtf`'s own work with the trace's, and a library that fails would crash the child before it
// could say why. Called through `dlsym`'s pointers it is measured exactly as the built-in
// allocators are (`raw.rs`), and a library without `malloc` and `free` is refused by name before
// any run. `RTLD_LOCAL` keeps its symbols out of the process's global scope, so the C library's
// `malloc` stays the process's (tcmalloc, jemalloc and mimalloc as Debian builds them all run
// this way, tested in tests/integration/replay.rs). The handle is never closed: a child process
// replays with one library and exits. No `libloading` crate: `libc`, already a dependency, has
// `dlopen`, `dlsym` and `dlerror`.

use std::ffi::{c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};

use crate::io::escape_path;

type Malloc = unsafe extern "C" fn(usize) -> *mut c_void;
type Free = unsafe extern "C" fn(*mut c_void);
type Realloc = unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void;
type PosixMemalign = unsafe extern "C" fn(*mut *mut c_void, usize, usize) -> c_int;
type AlignedAlloc = unsafe extern "C" fn(usize, usize) -> *mut c_void;

/// The alignment `malloc` guarantees on this machine (as `std::alloc::System` assumes it).
#[cfg(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "riscv64"
))]
const MIN_ALIGN: usize = 16;
#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "riscv64"
)))]
const MIN_ALIGN: usize = 8;

/// How a library gives aligned blocks: the first of these it exports.
#[derive(Debug, Clone, Copy)]
enum Aligned {
    PosixMemalign(PosixMemalign),
    AlignedAlloc(AlignedAlloc),
    Memalign(AlignedAlloc),
}

/// The entry points of a loaded library.
#[derive(Debug, Clone, Copy)]
struct Functions {
    malloc: Malloc,
    free: Free,
    realloc: Option<Realloc>,
    aligned: Option<Aligned>,
}

/// An allocator library: named by the path given, loaded in the measuring child.
#[derive(Debug)]
pub struct Library {
    path: PathBuf,
    name: String,
    functions: Option<Functions>,
}

impl PartialEq for Library {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path
    }
}

impl Eq for Library {}

/// Why an allocator library cannot be used.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum LibraryError {
    /// The path names no file.
    #[error("{path}: no such allocator library: {source}")]
    #[diagnostic(code(mtf::replay::library))]
    Missing {
        /// The path (escaped for a terminal).
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// `dlopen` refused it.
    #[error("{path}: cannot be loaded as a shared library: {reason}")]
    #[diagnostic(code(mtf::replay::library))]
    NotLoadable {
        /// The path (escaped for a terminal).
        path: String,
        /// `dlerror`'s message.
        reason: String,
    },
    /// It does not export a function an allocator needs.
    #[error("{path}: not an allocator library: it defines no `{symbol}` of its own")]
    #[diagnostic(
        code(mtf::replay::library),
        help("an allocator library exports at least malloc and free (and realloc, posix_memalign, aligned_alloc or memalign where it has them)")
    )]
    NoSymbol {
        /// The path (escaped for a terminal).
        path: String,
        /// The missing function.
        symbol: &'static str,
    },
    /// This system has no `dlopen`.
    #[error("{path}: allocator libraries can only be loaded on Unix")]
    #[diagnostic(code(mtf::replay::library))]
    Unsupported {
        /// The path (escaped for a terminal).
        path: String,
    },
}

/// Whether `-a NAME` names a library rather than a built-in allocator: a path (with a `/`) or a
/// file name ending in `.so` or `.so.N…`.
pub fn is_library_name(name: &str) -> bool {
    name.contains('/') || name.ends_with(".so") || name.contains(".so.")
}

impl Library {
    /// The library at `path`, not loaded (the parent process names it; [`Library::load`] loads
    /// it in the child). A file name without a `/` that is not in the current folder is left to
    /// `dlopen`'s search of the system's library folders.
    pub fn new(path: &Path) -> Library {
        let path = if path.components().count() == 1 && path.exists() {
            Path::new(".").join(path)
        } else {
            path.to_path_buf()
        };
        // Absolute, so that the report names it wherever it is read; symbolic links are kept
        // (the name given, `libtcmalloc_minimal.so.4`, not the file it links to).
        let path = if path.is_file() {
            std::path::absolute(&path).unwrap_or(path)
        } else {
            path
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.to_string_lossy().into_owned());
        Library {
            path,
            name,
            functions: None,
        }
    }

    /// Its file name (the report's name for it).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The path it is loaded from (absolute when the file was found).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The entry points it is called through, once loaded (`malloc`, `free`, and `realloc` and
    /// an aligned allocation where it exports them).
    pub fn entry_points(&self) -> Vec<&'static str> {
        let Some(f) = &self.functions else {
            return Vec::new();
        };
        let mut v = vec!["malloc", "free"];
        if f.realloc.is_some() {
            v.push("realloc");
        }
        match f.aligned {
            Some(Aligned::PosixMemalign(_)) => v.push("posix_memalign"),
            Some(Aligned::AlignedAlloc(_)) => v.push("aligned_alloc"),
            Some(Aligned::Memalign(_)) => v.push("memalign"),
            None => {}
        }
        v
    }

    /// Loads the library and finds its entry points.
    pub fn load(path: &Path) -> Result<Library, LibraryError> {
        let mut lib = Library::new(path);
        let shown = || escape_path(&lib.path).to_string();
        if lib.path.components().count() > 1 {
            if let Err(source) = std::fs::metadata(&lib.path) {
                return Err(LibraryError::Missing {
                    path: shown(),
                    source,
                });
            }
        }
        lib.functions = Some(open(&lib.path, &shown())?);
        Ok(lib)
    }

    /// A block of `size` bytes (not 0) aligned to `align` (a power of two), or null.
    pub(crate) fn alloc(&self, size: usize, align: usize) -> *mut u8 {
        let Some(f) = &self.functions else {
            return std::ptr::null_mut();
        };
        // SAFETY: the pointers were found by `dlsym` under these C names, whose signatures are
        // the C library's; a size and an alignment are valid arguments to each, and a null
        // result is the caller's to handle.
        unsafe {
            if align <= MIN_ALIGN && align <= size {
                return (f.malloc)(size).cast();
            }
            match f.aligned {
                Some(Aligned::PosixMemalign(p)) => {
                    let mut out: *mut c_void = std::ptr::null_mut();
                    let a = align.max(std::mem::size_of::<usize>());
                    if p(&mut out, a, size) == 0 {
                        out.cast()
                    } else {
                        std::ptr::null_mut()
                    }
                }
                Some(Aligned::AlignedAlloc(p)) | Some(Aligned::Memalign(p)) => {
                    p(align, size).cast()
                }
                // A library without an aligned allocation: malloc's block when it happens to be
                // aligned enough, else none (counted as an allocation that failed).
                None => {
                    let p = (f.malloc)(size);
                    if (p as usize).is_multiple_of(align) {
                        p.cast()
                    } else {
                        (f.free)(p);
                        std::ptr::null_mut()
                    }
                }
            }
        }
    }

    /// Frees a block this library made.
    ///
    /// # Safety
    /// `ptr` came from [`Library::alloc`] or [`Library::realloc`] of this library and is live.
    pub(crate) unsafe fn free(&self, ptr: *mut u8) {
        if let Some(f) = &self.functions {
            // SAFETY: the caller's contract: a live block of this library.
            unsafe { (f.free)(ptr.cast()) }
        }
    }

    /// Resizes a block of `old` bytes aligned to `align` to `size` bytes (not 0): the new block,
    /// or null (the old block then stays). Without a `realloc` of the library's own: a new block
    /// of the same alignment, the bytes copied, the old one freed.
    ///
    /// # Safety
    /// `ptr` came from this library with `old` bytes and alignment `align`, and is live.
    pub(crate) unsafe fn realloc(
        &self,
        ptr: *mut u8,
        old: usize,
        align: usize,
        size: usize,
    ) -> *mut u8 {
        let Some(f) = &self.functions else {
            return std::ptr::null_mut();
        };
        // The traced program called realloc, so the library's realloc is called whatever the
        // block's alignment (as C's realloc, the new block then has malloc's).
        if let Some(r) = f.realloc {
            // SAFETY: the caller's contract: a live block of this library; a null result
            // leaves it as it was.
            return unsafe { r(ptr.cast(), size).cast() };
        }
        // As `GlobalAlloc::realloc` does without a realloc of its own: a new block, the bytes
        // copied, the old one freed.
        let new = self.alloc(size, align);
        if !new.is_null() {
            // SAFETY: both blocks are live and distinct, each at least `old.min(size)` bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, new, old.min(size));
                (f.free)(ptr.cast());
            }
        }
        new
    }
}

#[cfg(unix)]
fn open(path: &Path, shown: &str) -> Result<Functions, LibraryError> {
    use std::os::unix::ffi::OsStrExt;
    let not_loadable = |reason: String| LibraryError::NotLoadable {
        path: shown.to_string(),
        reason,
    };
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| not_loadable("the path holds a NUL byte".into()))?;
    // SAFETY: `c` is a NUL-terminated path; `dlopen` runs the library's constructors, which is
    // what loading an allocator means.
    let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return Err(not_loadable(dl_error()));
    }
    // Design: `dlsym` on a handle searches the library and then its dependencies, so a
    // library that defines no `malloc` would get the C library's (found by testing libz): a
    // symbol is taken only when the object that defines it is the library itself (`dladdr`
    // names the object; opening that name with `RTLD_NOLOAD` gives its handle, the same as ours
    // only for the library). Taking the C library's `posix_memalign` beside the library's `free`
    // would free blocks in the wrong heap.
    let find = |name: &CStr| -> Option<*mut c_void> {
        // SAFETY: `handle` is a live handle from `dlopen`, `name` a NUL-terminated symbol.
        let p = unsafe { libc::dlsym(handle, name.as_ptr()) };
        (!p.is_null() && defined_in(handle, p)).then_some(p)
    };
    let need = |name: &CStr, symbol: &'static str| {
        find(name).ok_or(LibraryError::NoSymbol {
            path: shown.to_string(),
            symbol,
        })
    };
    let malloc = need(c"malloc", "malloc")?;
    let free = need(c"free", "free")?;
    // SAFETY (each transmute below): `dlsym` found the symbol under the C library's name of
    // that function, so it is that function, with the C signature its type here spells.
    unsafe {
        let aligned = if let Some(p) = find(c"posix_memalign") {
            Some(Aligned::PosixMemalign(std::mem::transmute::<
                *mut c_void,
                PosixMemalign,
            >(p)))
        } else if let Some(p) = find(c"aligned_alloc") {
            Some(Aligned::AlignedAlloc(std::mem::transmute::<
                *mut c_void,
                AlignedAlloc,
            >(p)))
        } else {
            find(c"memalign")
                .map(|p| Aligned::Memalign(std::mem::transmute::<*mut c_void, AlignedAlloc>(p)))
        };
        Ok(Functions {
            malloc: std::mem::transmute::<*mut c_void, Malloc>(malloc),
            free: std::mem::transmute::<*mut c_void, Free>(free),
            realloc: find(c"realloc").map(|p| std::mem::transmute::<*mut c_void, Realloc>(p)),
            aligned,
        })
    }
}

/// Whether the symbol at `p` is defined in the object `handle` names (not in a dependency).
#[cfg(unix)]
fn defined_in(handle: *mut c_void, p: *mut c_void) -> bool {
    // SAFETY: `dladdr` fills the zeroed `Dl_info` for an address; it reads nothing else.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above; `info` is valid and writable.
    if unsafe { libc::dladdr(p, &mut info) } == 0 || info.dli_fname.is_null() {
        // No object is known for it: it cannot be told apart, so it is taken as the library's.
        return true;
    }
    // SAFETY: `dli_fname` is the NUL-terminated name of a loaded object; `RTLD_NOLOAD` only
    // looks it up (a new reference, closed at once), never loads anything.
    unsafe {
        let other = libc::dlopen(info.dli_fname, libc::RTLD_LAZY | libc::RTLD_NOLOAD);
        if other.is_null() {
            return false;
        }
        libc::dlclose(other);
        other == handle
    }
}

#[cfg(unix)]
fn dl_error() -> String {
    // SAFETY: `dlerror` returns null or a NUL-terminated message valid until the next dl call
    // on this thread; it is copied at once.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "dlopen failed".to_string()
    } else {
        // SAFETY: as above, a valid C string.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

#[cfg(not(unix))]
fn open(_path: &Path, shown: &str) -> Result<Functions, LibraryError> {
    Err(LibraryError::Unsupported {
        path: shown.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_names_are_paths_or_shared_object_names() {
        assert!(is_library_name("./libx.so"));
        assert!(is_library_name("libtcmalloc_minimal.so.4"));
        assert!(is_library_name("/usr/lib/x.so"));
        assert!(!is_library_name("jemalloc"));
        assert!(!is_library_name("system"));
    }

    #[test]
    fn a_missing_or_unloadable_library_is_a_typed_error() {
        let e = Library::load(Path::new("/nonexistent/libnone.so")).unwrap_err();
        assert!(matches!(e, LibraryError::Missing { .. }), "{e}");
        assert!(e.to_string().contains("/nonexistent/libnone.so"), "{e}");
        let e = Library::load(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/Cargo.toml"
        )))
        .unwrap_err();
        assert!(matches!(e, LibraryError::NotLoadable { .. }), "{e}");
    }

    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn the_c_library_loads_as_an_allocator_library() {
        // glibc's libc.so.6, loaded again by name: it has every entry point.
        let lib = Library::load(Path::new("libc.so.6")).expect("libc loads");
        assert_eq!(lib.name(), "libc.so.6");
        assert!(lib.entry_points().contains(&"posix_memalign"));
        let p = lib.alloc(100, 64);
        assert!(!p.is_null() && (p as usize).is_multiple_of(64));
        // SAFETY: inside the live block of 100 bytes.
        unsafe { p.add(99).write(7) };
        // SAFETY: a live block of 100 bytes aligned to 64, from this library. Its realloc is
        // C's: the new block has malloc's alignment, and the bytes.
        let q = unsafe { lib.realloc(p, 100, 64, 5000) };
        assert!(!q.is_null() && (q as usize).is_multiple_of(16));
        // SAFETY: inside the live block of 5000 bytes, of which the first 100 were copied.
        assert_eq!(unsafe { q.add(99).read() }, 7);
        // SAFETY: live, from this library.
        unsafe { lib.free(q) };
    }
}
