//! Every limit of the library in one place, at the bottom of the layering (it uses nothing of
//! the crate, and every module may use it). Each bounds memory or time on input that could
//! otherwise make a reader or writer grow without bound; docs/format.md gives the ones that are
//! part of the format (§6.4, §8, §13).
//!
//! The modules that enforce a limit re-export it under the name they always had (for example
//! `metatf::decode::MAX_REF_HOPS`).

/// How many live sets a scope has (docs/format.md §13): set numbers are 1..=`MAX_LIVE_SETS`.
pub const MAX_LIVE_SETS: u8 = 16;

/// Most values one live set holds; appending to a full set first drops its oldest value.
pub const LIVE_SET_CAPACITY: usize = 1 << 20;

/// Repeat limit for items that may occupy no bytes (docs/format.md §6.4).
pub const MAX_EMPTY_REPEAT: u64 = 65_536;

/// Most field occurrences one record may hold (docs/format.md §6.4): no trace can make a reader
/// allocate without bound, and no writer produces a record a reader refuses.
pub const MAX_FIELDS_PER_RECORD: usize = 1 << 22;

/// Field occurrences a record may hold per byte it occupies, beyond one per field of its type
/// (docs/format.md §6.4), before it draws on the trace's [`SPARSE_RESERVE`]: repeats of items
/// that take no bytes (defaults, empty byte strings, zero-width counts) cannot make every short
/// record cost thousands of walker steps, so the work of decoding a trace stays proportional to
/// its size.
pub const MAX_OCCURRENCES_PER_BYTE: u64 = 64;

/// The field occurrences a whole trace may hold beyond [`sparse_limit`] of each record
/// (docs/format.md §6.4): a few records may be as sparse as they like (a compacted trace whose
/// repeated values all became `default`), not every record. A writer keeps to half of it, so
/// that the order in which it writes sections never matters to a reader.
pub const SPARSE_RESERVE: u64 = 1 << 22;

/// The most field occurrences a record of a type with `fields` fields may hold once it has
/// occupied `bytes` bytes ([`MAX_OCCURRENCES_PER_BYTE`]).
pub fn sparse_limit(fields: usize, bytes: u64) -> u64 {
    (fields as u64).saturating_add(bytes.saturating_mul(MAX_OCCURRENCES_PER_BYTE))
}

/// How many look-ups one reference chain may make (docs/format.md §8).
pub const MAX_REF_HOPS: usize = 16;

/// Most problems kept for one record by the decoder; more are counted.
pub const MAX_PROBLEMS_PER_RECORD: usize = 1024;

/// Maximum number of slots of one expanded record type (docs/format.md §4.4: its scalar fields,
/// `tag` and repeat counts included, each repeated item once), however its fields are grouped
/// (flat, composites, nested types, repeats): slot numbers are 16-bit, 0..=65535.
pub const MAX_FIELDS: usize = 1 << 16;

/// Maximum number of fields expanded over the whole DTD (every record type, every use of a
/// nested type), so that types nesting each other several times cannot take exponential time.
pub const MAX_TOTAL_FIELDS: usize = 1 << 18;

/// The largest DTD read, in bytes (16 MiB). DTDs are small; the cap bounds memory when a wrong
/// path names a huge file, `/dev/zero`, a `/proc` file or a FIFO. It is applied while reading,
/// so files whose metadata length is 0 or wrong are bounded too.
pub const MAX_DTD_BYTES: u64 = 16 << 20;

/// Maximum nesting of field lists, repeats and expression operators in a DTD. Deeper input is
/// an error (it would only serve to exhaust the stack).
pub const MAX_DTD_DEPTH: usize = 64;

/// The longest line of the text form or JSON lines accepted.
pub const MAX_LINE: u64 = 64 << 20;

/// The most bytes of distinct strings one string table of an import holds (1 GiB): the table is
/// kept in memory until its section is written, so an input of ever new names stops with an error
/// rather than exhausting memory.
pub const MAX_STRING_TABLE_BYTES: u64 = 1 << 30;

/// The most items one repeated group of an import pattern reads from one unit
/// (docs/mappings.md, `[*list:…]`): a unit with more is kept as a raw line, and the import
/// names the first such line. heaptrack's longest chains of inlined frames are a few dozen.
pub const MAX_REPEAT_ITEMS: usize = 4096;

/// The largest seek index file read (docs/format.md §15): 4 GiB. An index of `mtf` takes about
/// 300 bytes per 65,536 records, and its live sets at most 1/16 of the trace; its magic is
/// checked before more than its header is read.
pub const MAX_INDEX_BYTES: u64 = 1 << 32;

/// The default cap on an input that cannot be memory-mapped (a pipe, standard input, a
/// decompressed stream): 16 GiB, kept in memory up to 4 MiB and beyond in a temporary file, so
/// the cap bounds the disk it may fill and stops an endless stream.
/// [`crate::OpenOptions::max_input_bytes`] changes it.
pub const DEFAULT_INPUT_CAP: u64 = 16 << 30;

/// The most bytes of a stream read in at once (`metatf::stream`): the window grows past its size
/// (`OpenOptions::stream_window`) only as far as one record needs, and no further than this.
pub const MAX_STREAM_WINDOW: u64 = 1 << 30;

/// The window a trace read as a stream is decoded from by default (`OpenOptions::stream_window`).
pub const DEFAULT_STREAM_WINDOW: usize = 4 << 20;
