//! The analysis state beside a seek index (docs/format.md §15.4): `INDEX.state`, one blob per
//! checkpoint of the index (the state of the heap analysis there) and one for the end of the
//! trace. This module holds the file (header, binding to its index, checksum) and the byte
//! encoding the blobs are written in ([`Enc`], [`Dec`]); what a blob holds is
//! `analysis::stats` ' business (`stats/pass/resume.rs`).

// Design: a file of its own, not a new version of the index. A version-1 reader refuses an
// index of another version, non-zero flag bits and entries that do not cover the file (§15.1),
// so any change to `TRACE.idx` would make the index unreadable to it; a sidecar of the index it
// never opens is ignored by construction. The state is bound to its index by the index's
// checksum (and so to the trace through the index's fingerprint) and to the DTD by a hash of
// its record types and namespaces: a state of another index or DTD is refused, never used.

use std::ops::Range;
use std::path::{Path, PathBuf};

use super::{fnv1a, Index, IndexError};
use crate::dtd::Schema;
use crate::io::{IoError, Output};

/// The first bytes of an analysis-state file: `\x7fMTS`.
pub const STATE_MAGIC: [u8; 4] = [0x7F, b'M', b'T', b'S'];
/// The version of the analysis-state format this library writes: 3, whose checksum is CRC-32.
/// It reads births files of versions 1 (the same layout, its checksum FNV-1a 64) and 2 too,
/// and analysis states of version 3 only (docs/format.md §15.4).
pub const STATE_VERSION: u8 = 3;
/// The first version of the analysis-state format, its checksum FNV-1a 64.
const STATE_VERSION_FNV: u8 = 1;
/// The first version of the analysis states this library reads: before it, the input lines of
/// an imported trace counted the records its mapping writes (`emit`) as lines of the input.
const STATE_VERSION_LINES: u8 = 3;
/// The first bytes of a births file (`INDEX.births`, docs/format.md §15.5): `\x7fMTB`. Its
/// layout is the analysis state's (and its version), its entries what
/// `columnar::HeapRows::save_births` writes and its end empty.
pub const BIRTHS_MAGIC: [u8; 4] = [0x7F, b'M', b'T', b'B'];
/// Bytes of the fixed header: magic, version, 3 reserved, index checksum, DTD hash, count.
const STATE_HEADER: usize = 4 + 4 + 8 + 8 + 8;

/// The analysis-state file of an index file: `INDEX.state` (`None` for standard input).
pub fn state_path(index: &Path) -> Option<PathBuf> {
    if index.as_os_str() == "-" {
        return None;
    }
    let mut s = index.as_os_str().to_owned();
    s.push(".state");
    Some(PathBuf::from(s))
}

/// The births file of an index file: `INDEX.births` (`None` for standard input).
pub fn births_path(index: &Path) -> Option<PathBuf> {
    if index.as_os_str() == "-" {
        return None;
    }
    let mut s = index.as_os_str().to_owned();
    s.push(".births");
    Some(PathBuf::from(s))
}

/// The hash that binds a state to a DTD: FNV-1a of the record types' names, then the
/// namespaces' names and kinds, each name followed by a zero byte.
pub fn schema_hash(schema: &Schema) -> u64 {
    let mut b = Vec::new();
    for r in &schema.records {
        b.extend_from_slice(r.name.as_bytes());
        b.push(0);
    }
    for n in &schema.analysis.namespaces {
        b.extend_from_slice(n.name.as_bytes());
        b.push(0);
        b.push(n.kind as u8);
        b.push(n.shared as u8);
        b.push(n.sized as u8);
    }
    fnv1a(&b)
}

/// The analysis state at an index's checkpoints and at the end of its trace.
// Design: the states live in one buffer (the file as read, or the blobs of a fresh pass laid
// end to end) and each checkpoint keeps a range of it: a state file as large as its trace is
// held once while a pass reads from it, not once as read and once more in pieces.
#[derive(Debug, Clone)]
pub struct AnalysisState {
    name: String,
    /// [`STATE_MAGIC`], or [`BIRTHS_MAGIC`] for a births file.
    magic: [u8; 4],
    /// The checksum of the index it belongs to.
    index_sum: u64,
    /// [`schema_hash`] of the DTD it was made with.
    schema: u64,
    /// The bytes the entries and the end are ranges of.
    blob: std::sync::Arc<Blob>,
    /// Per checkpoint of the index: its state's range in `blob`, or `None` where none was
    /// stored.
    entries: Vec<Option<Range<usize>>>,
    /// Where each stored entry starts in the file (for messages).
    at: Vec<u64>,
    /// The state at the end of the trace (a range of `blob`).
    end: Range<usize>,
    end_at: u64,
}

impl PartialEq for AnalysisState {
    fn eq(&self, other: &AnalysisState) -> bool {
        self.name == other.name
            && self.index_sum == other.index_sum
            && self.schema == other.schema
            && self.at == other.at
            && self.end_at == other.end_at
            && self.entries.len() == other.entries.len()
            && (0..self.entries.len()).all(|i| self.entry(i) == other.entry(i))
            && self.end().0 == other.end().0
    }
}

impl Eq for AnalysisState {}

/// The bytes of a state file: as read, or mapped.
// Design: a state file is about as large as its trace, and a pass reads only the few states it
// starts from. The file is mapped, its checksum read through the map, and the map's pages then
// given back (they stay in the page cache): the process holds only the states it reads, as it
// does with the trace itself (`container::trace`), not a second copy of the trace's size.
#[derive(Debug)]
enum Blob {
    Owned(Vec<u8>),
    Mapped(memmap2::Mmap),
}

impl std::ops::Deref for Blob {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Blob::Owned(v) => v,
            Blob::Mapped(m) => m,
        }
    }
}

/// A checksum of a state file being computed (docs/format.md §15.4): CRC-32 (versions 2 and 3),
/// FNV-1a 64 (version 1).
// Design: the checksum reads the whole file, about as large as the trace, and `stats -j N` and
// `check -j N` compute it beside their workers (on a third thread of two cores). FNV-1a takes a
// multiplication per byte, one after the other: on the generator's 10 M trace (a 134 MB state
// file) it was 160 ms of CPU and 0.2 s of `check -j 2`'s 1.3 s. CRC-32 (crc32fast, with the
// processor's carry-less multiplication where it has it) reads gigabytes a second, and detects
// the damage a checksum is there for as well; version 1's files, whose checksum is FNV-1a, are
// read as before.
enum StateSum {
    Fnv(u64),
    Crc(crc32fast::Hasher),
}

impl StateSum {
    fn new(version: u8) -> StateSum {
        if version == STATE_VERSION_FNV {
            StateSum::Fnv(super::FNV1A_START)
        } else {
            StateSum::Crc(crc32fast::Hasher::new())
        }
    }
    fn update(&mut self, bytes: &[u8]) {
        match self {
            StateSum::Fnv(h) => *h = super::fnv1a_on(*h, bytes),
            StateSum::Crc(c) => c.update(bytes),
        }
    }
    fn value(self) -> u64 {
        match self {
            StateSum::Fnv(h) => h,
            StateSum::Crc(c) => u64::from(c.finalize()),
        }
    }
}

/// The checksum a state or births file of `version` ends with, of `bytes` (every byte before
/// it): CRC-32 for versions 2 and 3, FNV-1a 64 for version 1 (docs/format.md §15.4).
pub fn state_checksum(version: u8, bytes: &[u8]) -> u64 {
    let mut h = StateSum::new(version);
    h.update(bytes);
    h.value()
}

impl Blob {
    /// The checksum (of a file of `version`) of the first `n` bytes; a mapped file's pages
    /// given back as they are read, so that its whole length is never resident at once.
    fn sum(&self, version: u8, n: usize) -> u64 {
        const STEP: usize = 4 << 20;
        let bytes: &[u8] = self;
        let mut h = StateSum::new(version);
        let mut at = 0;
        while at < n {
            let end = (at + STEP).min(n);
            h.update(&bytes[at..end]);
            if let (Blob::Mapped(m), true) = (self, end - at == STEP) {
                crate::io::release_mapped(m, at, STEP);
            }
            at = end;
        }
        h.value()
    }

    /// Give back the pages of a mapped file (a read after this reads them again).
    fn release(&self) {
        if let Blob::Mapped(m) = self {
            crate::io::release_mapped(m, 0, m.len());
        }
    }
}

/// The checksum an index file ends with (its last 8 bytes).
pub fn index_sum(index: &Index) -> u64 {
    let b = index.to_bytes();
    let n = b.len();
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[n - 8..]);
    u64::from_le_bytes(a)
}

impl AnalysisState {
    /// A state for `index` and `schema`: per checkpoint a blob (or none), and the end's.
    pub fn new(
        index: &Index,
        schema: &Schema,
        entries: Vec<Option<Vec<u8>>>,
        end: Vec<u8>,
    ) -> AnalysisState {
        let total = entries.iter().flatten().map(Vec::len).sum::<usize>() + end.len();
        let mut blob = Vec::with_capacity(total);
        let mut ranges = Vec::with_capacity(entries.len());
        for e in entries {
            ranges.push(e.map(|b| {
                let start = blob.len();
                blob.extend_from_slice(&b);
                start..blob.len()
            }));
        }
        let start = blob.len();
        blob.extend_from_slice(&end);
        AnalysisState::with_blob(
            index,
            schema,
            Blob::Owned(blob),
            ranges,
            start..start + end.len(),
        )
    }

    /// A state for `index` and `schema` whose checkpoints' states (`entries`: where each is, if
    /// it has one) and end state (`end`) are in `map`, a scratch file's.
    #[cfg_attr(not(feature = "parallel"), allow(dead_code))]
    pub(crate) fn from_map(
        index: &Index,
        schema: &Schema,
        map: memmap2::Mmap,
        entries: Vec<Option<std::ops::Range<usize>>>,
        end: std::ops::Range<usize>,
    ) -> AnalysisState {
        AnalysisState::with_blob(index, schema, Blob::Mapped(map), entries, end)
    }

    /// A state for `index` and `schema` whose states are at `entries` and `end` in `blob`.
    fn with_blob(
        index: &Index,
        schema: &Schema,
        blob: Blob,
        entries: Vec<Option<std::ops::Range<usize>>>,
        end: std::ops::Range<usize>,
    ) -> AnalysisState {
        AnalysisState {
            name: String::new(),
            magic: STATE_MAGIC,
            index_sum: index_sum(index),
            schema: schema_hash(schema),
            at: vec![0; entries.len()],
            entries,
            end,
            blob: std::sync::Arc::new(blob),
            end_at: 0,
        }
    }

    /// The births file for `index` and `schema`: per checkpoint the births of its live blocks
    /// (or none), in the analysis state's layout with the magic [`BIRTHS_MAGIC`].
    pub fn births(index: &Index, schema: &Schema, entries: Vec<Option<Vec<u8>>>) -> AnalysisState {
        let mut s = AnalysisState::new(index, schema, entries, Vec::new());
        s.magic = BIRTHS_MAGIC;
        s
    }

    /// Name it (for messages).
    pub fn set_name(&mut self, name: impl Into<String>) {
        self.name = name.into();
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Per checkpoint: its state, if one is stored.
    pub fn entry(&self, i: usize) -> Option<&[u8]> {
        let r = self.entries.get(i)?.as_ref()?;
        self.blob.get(r.clone())
    }

    /// Where checkpoint `i`'s state starts in the file.
    pub fn entry_at(&self, i: usize) -> u64 {
        self.at.get(i).copied().unwrap_or(0)
    }

    /// The state at the end of the trace, and where it starts in the file.
    pub fn end(&self) -> (&[u8], u64) {
        (self.blob.get(self.end.clone()).unwrap_or(&[]), self.end_at)
    }

    /// How many checkpoints carry a state.
    pub fn stored(&self) -> usize {
        self.entries.iter().filter(|e| e.is_some()).count()
    }

    /// Whether it belongs to `index` and `schema`.
    pub fn fits(&self, index: &Index, schema: &Schema) -> Result<(), IndexError> {
        let why = if self.index_sum != index_sum(index) {
            "it was made for another index: the index was rebuilt since"
        } else if self.schema != schema_hash(schema) {
            "it was made with another DTD"
        } else if self.entries.len() != index.entries().len() {
            "its checkpoints are not the index's"
        } else {
            return Ok(());
        };
        Err(IndexError::StaleState {
            name: self.name.clone(),
            why: why.into(),
        })
    }

    /// The bytes of [`AnalysisState::to_bytes`], counted without making them: the header,
    /// each checkpoint's length and state, the end's, the checksum.
    pub fn file_len(&self) -> u64 {
        let states: u64 = (0..self.entries.len())
            .map(|i| 8 + self.entry(i).map_or(0, |b| b.len() as u64))
            .sum();
        STATE_HEADER as u64 + states + 8 + self.end().0.len() as u64 + 8
    }

    /// The stored form (docs/format.md §15.4).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(usize::try_from(self.file_len()).unwrap_or(0));
        // A vector takes every write.
        let _ = self.write_to(&mut out);
        out
    }

    /// Writes the stored form to `w`, the checksum computed as it goes.
    // Design: a state file is about as large as the trace, up to 4 GiB; made whole in memory
    // before it was written, it was there twice (the states and the file), and `mtf index
    // --state-budget 100000` of a 20 MB trace took 4.2 GB.
    fn write_to(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        let mut sum = StateSum::new(STATE_VERSION);
        let mut put = |b: &[u8]| -> std::io::Result<()> {
            sum.update(b);
            w.write_all(b)
        };
        put(&self.magic)?;
        put(&[STATE_VERSION, 0, 0, 0])?;
        put(&self.index_sum.to_le_bytes())?;
        put(&self.schema.to_le_bytes())?;
        put(&(self.entries.len() as u64).to_le_bytes())?;
        for i in 0..self.entries.len() {
            match self.entry(i) {
                None => put(&0u64.to_le_bytes())?,
                Some(b) => {
                    put(&(b.len() as u64 + 1).to_le_bytes())?;
                    put(b)?;
                    self.release_entry(i);
                }
            }
        }
        let end = self.end().0;
        put(&(end.len() as u64).to_le_bytes())?;
        put(end)?;
        w.write_all(&sum.value().to_le_bytes())
    }

    /// Gives back the pages of checkpoint `i`'s state where it is in a mapped file (a scratch
    /// file's: written out, they need not stay in memory; a later read reads them again).
    fn release_entry(&self, i: usize) {
        // A multiple of every page size in use (4, 16 or 64 KiB), as `madvise` needs.
        const PAGE: usize = 64 << 10;
        if let (Blob::Mapped(m), Some(Some(r))) = (&*self.blob, self.entries.get(i)) {
            let start = r.start.div_ceil(PAGE) * PAGE;
            let end = r.end / PAGE * PAGE;
            if end > start {
                crate::io::release_mapped(m, start, end - start);
            }
        }
    }

    /// Write it to `path` atomically.
    pub fn write(&self, path: &Path) -> Result<(), IndexError> {
        use std::io::Write;
        let mut out = Output::create(path)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, &mut out);
        let done = self.write_to(&mut w).and_then(|()| w.flush());
        drop(w);
        done.map_err(|e| out.error(e))?;
        out.commit()?;
        Ok(())
    }

    /// Read a state file (a regular file of at most [`super::MAX_INDEX_BYTES`]).
    pub fn load(path: &Path) -> Result<AnalysisState, IndexError> {
        AnalysisState::load_as(path, STATE_MAGIC, true)
    }

    /// [`AnalysisState::load`] but for the file's checksum, which the caller computes with
    /// [`AnalysisState::verify_sum`] before it trusts anything read from the states (a file
    /// that does not read is refused as `load` refuses it: where its checksum fails too, for
    /// the checksum).
    // Design: the checksum reads the whole file, about as large as the trace; `stats -j N` and
    // `check -j N` compute it on the calling thread while the workers read their chunks, and
    // give nothing out before it holds (a damaged state cannot panic a reader of it).
    pub fn load_unverified(path: &Path) -> Result<AnalysisState, IndexError> {
        AnalysisState::load_as(path, STATE_MAGIC, false)
    }

    /// The check of the file's checksum that [`AnalysisState::load_unverified`] left out (a
    /// state made in memory or loaded by [`AnalysisState::load`] passes it too).
    pub fn verify_sum(&self) -> Result<(), IndexError> {
        let bytes: &[u8] = &self.blob;
        let body = bytes.len().saturating_sub(8);
        if bytes.len() >= 8 && self.blob.sum(bytes[4], body) == le64(&bytes[body..]) {
            self.blob.release();
            return Ok(());
        }
        Err(IndexError::Corrupt {
            name: self.name.clone(),
            at: body as u64,
            what: "checksum mismatch (the file is damaged)".into(),
        })
    }

    /// Read a births file ([`BIRTHS_MAGIC`]; [`AnalysisState::load`]'s checks).
    pub fn load_births(path: &Path) -> Result<AnalysisState, IndexError> {
        AnalysisState::load_as(path, BIRTHS_MAGIC, true)
    }

    fn load_as(path: &Path, magic: [u8; 4], verify: bool) -> Result<AnalysisState, IndexError> {
        let name = crate::escape::escape_path(path).to_string();
        let meta = std::fs::metadata(path).map_err(|source| IoError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        if meta.len() > super::MAX_INDEX_BYTES {
            return Err(IndexError::Corrupt {
                name,
                at: super::MAX_INDEX_BYTES,
                what: format!("larger than {} bytes", super::MAX_INDEX_BYTES),
            });
        }
        let file = std::fs::File::open(path).map_err(|source| IoError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let blob = match crate::io::map_file(&file) {
            Some(m) => Blob::Mapped(m),
            None => {
                use std::io::Read;
                let mut bytes = Vec::new();
                (&file)
                    .take(super::MAX_INDEX_BYTES)
                    .read_to_end(&mut bytes)
                    .map_err(|source| IoError::Read {
                        path: path.to_path_buf(),
                        source,
                    })?;
                Blob::Owned(bytes)
            }
        };
        let state = AnalysisState::from_blob(blob, name, magic, verify)?;
        state.blob.release();
        Ok(state)
    }

    /// Read the stored form; everything is checked (a corrupt file is an error naming the
    /// byte, never a panic).
    pub fn from_bytes(bytes: &[u8], name: impl Into<String>) -> Result<AnalysisState, IndexError> {
        AnalysisState::from_vec(bytes.to_vec(), name)
    }

    /// [`AnalysisState::from_bytes`] keeping `bytes` as the buffer its states are read from.
    pub fn from_vec(bytes: Vec<u8>, name: impl Into<String>) -> Result<AnalysisState, IndexError> {
        AnalysisState::from_blob(Blob::Owned(bytes), name, STATE_MAGIC, true)
    }

    fn from_blob(
        blob: Blob,
        name: impl Into<String>,
        magic: [u8; 4],
        verify: bool,
    ) -> Result<AnalysisState, IndexError> {
        let name = name.into();
        let bytes: &[u8] = &blob;
        let bad = |at: usize, what: String| IndexError::Corrupt {
            name: name.clone(),
            at: at as u64,
            what,
        };
        if bytes.len() < STATE_HEADER + 16 {
            return Err(bad(
                bytes.len(),
                format!("{} bytes, too short", bytes.len()),
            ));
        }
        if bytes[..4] != magic {
            let what = if magic == BIRTHS_MAGIC {
                "no births magic (\\x7fMTB)"
            } else {
                "no analysis-state magic (\\x7fMTS)"
            };
            return Err(bad(0, what.into()));
        }
        let version = bytes[4];
        if !(STATE_VERSION_FNV..=STATE_VERSION).contains(&version) {
            return Err(bad(
                4,
                format!(
                    "version {version}; this reader knows versions \
                     {STATE_VERSION_FNV} to {STATE_VERSION}"
                ),
            ));
        }
        if magic == STATE_MAGIC && version < STATE_VERSION_LINES {
            return Err(bad(
                4,
                format!(
                    "version {version}, whose input lines counted the records an import's \
                     mapping writes; this reader takes analysis states of version \
                     {STATE_VERSION_LINES}"
                ),
            ));
        }
        if bytes[5..8] != [0, 0, 0] {
            return Err(bad(5, "reserved bytes are not zero".into()));
        }
        let body = bytes.len() - 8;
        let checksum = || bad(body, "checksum mismatch (the file is damaged)".into());
        if verify && blob.sum(version, body) != le64(&bytes[body..]) {
            return Err(checksum());
        }
        let parts = AnalysisState::parts(bytes, body, &bad);
        let (index_sum, schema, entries, at, end, end_at) = match parts {
            Ok(p) => p,
            // Unverified, a file that does not read is refused for its checksum first, as
            // `load` refuses it.
            Err(_) if !verify && blob.sum(version, body) != le64(&bytes[body..]) => {
                return Err(checksum())
            }
            Err(e) => return Err(e),
        };
        Ok(AnalysisState {
            name,
            magic,
            index_sum,
            schema,
            blob: std::sync::Arc::new(blob),
            entries,
            at,
            end,
            end_at,
        })
    }

    /// The fields of a state file's body (`bytes` up to `body`, the checksum after it).
    #[allow(clippy::type_complexity)]
    fn parts(
        bytes: &[u8],
        body: usize,
        bad: &dyn Fn(usize, String) -> IndexError,
    ) -> Result<
        (
            u64,
            u64,
            Vec<Option<Range<usize>>>,
            Vec<u64>,
            Range<usize>,
            u64,
        ),
        IndexError,
    > {
        let mut d = Dec::new(&bytes[..body]);
        d.pos = 8;
        let lift = |e: StateError| bad(e.at, e.what);
        let index_sum = d.fixed64().map_err(lift)?;
        let schema = d.fixed64().map_err(lift)?;
        let count = d.fixed64().map_err(lift)?;
        if count > (body - d.pos) as u64 / 8 {
            return Err(bad(
                24,
                format!("{count} checkpoints cannot fit in the file"),
            ));
        }
        let count = count as usize;
        let mut entries = Vec::with_capacity(count);
        let mut at = Vec::with_capacity(count);
        for _ in 0..count {
            let len = d.fixed64().map_err(lift)?;
            at.push(d.pos as u64);
            if len == 0 {
                entries.push(None);
                continue;
            }
            let start = d.pos;
            d.bytes((len - 1).min(u64::MAX / 2)).map_err(lift)?;
            entries.push(Some(start..d.pos));
        }
        let len = d.fixed64().map_err(lift)?;
        let end_at = d.pos as u64;
        d.bytes(len).map_err(lift)?;
        let end = end_at as usize..d.pos;
        if d.pos != body {
            return Err(bad(
                d.pos,
                format!("{} bytes after the end state", body - d.pos),
            ));
        }
        Ok((index_sum, schema, entries, at, end, end_at))
    }
}

fn le64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// What is wrong in a state's bytes: the offset in the blob and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateError {
    /// Offset in the bytes read.
    pub at: usize,
    /// What is wrong.
    pub what: String,
}

/// Writes a state blob: integers as LEB128, counts before lists, strings as bytes with their
/// length (docs/format.md §15.4).
#[derive(Debug, Default)]
pub struct Enc {
    /// The bytes written.
    pub out: Vec<u8>,
    /// How many of them hold live blocks (of namespaces of ids): what the writer of the states
    /// estimates the next state's size from (`build_states`).
    pub blocks: u64,
}

impl Enc {
    /// A byte.
    pub fn u8(&mut self, v: u8) {
        self.out.push(v);
    }
    /// An integer of up to 32 bits, as [`Enc::u64`].
    pub fn u32(&mut self, v: u32) {
        self.u64(v.into());
    }
    /// An integer: LEB128, 7 bits a byte, low bits first, the top bit set on every byte but the
    /// last (1 to 10 bytes).
    pub fn u64(&mut self, v: u64) {
        self.u128(v.into());
    }
    /// An integer of up to 128 bits: LEB128 (1 to 19 bytes).
    pub fn u128(&mut self, mut v: u128) {
        loop {
            let b = (v & 0x7F) as u8;
            v >>= 7;
            if v == 0 {
                self.out.push(b);
                return;
            }
            self.out.push(b | 0x80);
        }
    }
    /// A flag byte (0 or 1), then the value if there is one.
    pub fn opt(&mut self, v: Option<u64>) {
        match v {
            None => self.u8(0),
            Some(x) => {
                self.u8(1);
                self.u64(x);
            }
        }
    }
    /// A count (8 bytes).
    pub fn len(&mut self, n: usize) {
        self.u64(n as u64);
    }
    /// A (key, id) pair of a list sorted by them, as the difference from the previous pair
    /// `prev` (0, 0 before the first): the key's increase, then the id's increase when the key
    /// is the same, else the id itself.
    pub fn pair(&mut self, prev: &mut (u64, u64), k: (u64, u64)) {
        let dk = k.0.wrapping_sub(prev.0);
        self.u64(dk);
        self.u64(if dk == 0 {
            k.1.wrapping_sub(prev.1)
        } else {
            k.1
        });
        *prev = k;
    }
    /// A string: its length in bytes, then its UTF-8 bytes.
    pub fn str(&mut self, s: &str) {
        self.len(s.len());
        self.out.extend_from_slice(s.as_bytes());
    }
}

/// Reads what [`Enc`] wrote, every count checked against the bytes left.
#[derive(Debug)]
pub struct Dec<'b> {
    b: &'b [u8],
    /// Where the next read starts.
    pub pos: usize,
}

impl<'b> Dec<'b> {
    /// A reader of `b` from its start.
    pub fn new(b: &'b [u8]) -> Dec<'b> {
        Dec { b, pos: 0 }
    }

    /// An error at the current position.
    pub fn error(&self, what: impl Into<String>) -> StateError {
        StateError {
            at: self.pos,
            what: what.into(),
        }
    }

    /// Whether every byte was read.
    pub fn done(&self) -> bool {
        self.pos == self.b.len()
    }

    /// `n` bytes.
    pub fn bytes(&mut self, n: u64) -> Result<&'b [u8], StateError> {
        let left = (self.b.len() - self.pos) as u64;
        if n > left {
            return Err(self.error(format!("needs {n} bytes, {left} left")));
        }
        let s = &self.b[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }

    /// A byte.
    pub fn u8(&mut self) -> Result<u8, StateError> {
        Ok(self.bytes(1)?[0])
    }
    /// A flag byte: 0 or 1.
    pub fn flag(&mut self) -> Result<bool, StateError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            f => Err(StateError {
                at: self.pos - 1,
                what: format!("flag {f} is neither 0 nor 1"),
            }),
        }
    }
    /// What [`Enc::u32`] wrote.
    pub fn u32(&mut self) -> Result<u32, StateError> {
        let at = self.pos;
        let v = self.u64()?;
        u32::try_from(v).map_err(|_| StateError {
            at,
            what: format!("{v} does not fit 32 bits"),
        })
    }
    /// What [`Enc::u64`] wrote.
    pub fn u64(&mut self) -> Result<u64, StateError> {
        // The usual integer (at most 9 bytes, 63 bits) read in place; a longer one, or one cut
        // short, as [`Dec::u128`] reads it (its errors).
        let mut v = 0u64;
        let rest = self.b.get(self.pos..).unwrap_or_default();
        for (i, &b) in rest.iter().take(9).enumerate() {
            v |= u64::from(b & 0x7F) << (7 * i);
            if b & 0x80 == 0 {
                self.pos += i + 1;
                return Ok(v);
            }
        }
        let at = self.pos;
        let v = self.u128()?;
        u64::try_from(v).map_err(|_| StateError {
            at,
            what: format!("{v} does not fit 64 bits"),
        })
    }
    /// What [`Enc::u128`] wrote: at most 19 bytes, no bits beyond 128.
    pub fn u128(&mut self) -> Result<u128, StateError> {
        let at = self.pos;
        let mut v: u128 = 0;
        for i in 0..19 {
            let b = self.u8()?;
            let bits = u128::from(b & 0x7F);
            if i == 18 && bits > 3 {
                break;
            }
            v |= bits << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(StateError {
            at,
            what: "an integer longer than 128 bits".into(),
        })
    }
    /// 8 bytes, little-endian (the file's own fields).
    pub fn fixed64(&mut self) -> Result<u64, StateError> {
        Ok(le64(self.bytes(8)?))
    }
    /// What [`Enc::opt`] wrote.
    pub fn opt(&mut self) -> Result<Option<u64>, StateError> {
        Ok(if self.flag()? {
            Some(self.u64()?)
        } else {
            None
        })
    }
    /// A count of items of at least `min` bytes each (an integer takes at least one): refused
    /// if they cannot fit in the bytes left (so nothing is allocated for a count the bytes do
    /// not justify).
    pub fn count(&mut self, min: usize) -> Result<usize, StateError> {
        let at = self.pos;
        let n = self.u64()?;
        let left = (self.b.len() - self.pos) as u64;
        if n.saturating_mul(min.max(1) as u64) > left {
            return Err(StateError {
                at,
                what: format!("{n} items cannot fit in the {left} bytes left"),
            });
        }
        Ok(n as usize)
    }
    /// What [`Enc::pair`] wrote; pairs that do not increase are refused.
    pub fn pair(&mut self, prev: &mut (u64, u64), first: bool) -> Result<(u64, u64), StateError> {
        let at = self.pos;
        let dk = self.u64()?;
        let x = self.u64()?;
        let k = if dk == 0 {
            (prev.0, prev.1.wrapping_add(x))
        } else {
            (prev.0.wrapping_add(dk), x)
        };
        if !first && k <= *prev {
            return Err(StateError {
                at,
                what: "ids out of order".into(),
            });
        }
        *prev = k;
        Ok(k)
    }
    /// What [`Enc::str`] wrote.
    pub fn str(&mut self) -> Result<&'b str, StateError> {
        let n = self.u64()?;
        let at = self.pos;
        let b = self.bytes(n)?;
        std::str::from_utf8(b).map_err(|_| StateError {
            at,
            what: "a name that is not UTF-8".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A births file reads back as written, and a state file is not a births file (nor the
    /// other way round): each names the magic it wanted.
    #[test]
    fn births_files_round_trip_and_are_told_from_state_files() {
        let path = format!("{}/traces/android.mtf", env!("CARGO_MANIFEST_DIR"));
        let o = crate::open(&path).expect("a shipped trace");
        let reader = o.reader();
        let idx = crate::index::build(
            &reader,
            &crate::index::BuildOptions {
                every_records: 10,
                every_bytes: 1 << 20,
            },
        );
        let n = idx.entries().len();
        let entries: Vec<Option<Vec<u8>>> = (0..n)
            .map(|i| (i % 2 == 0).then(|| vec![i as u8, 1, 2]))
            .collect();
        let births = AnalysisState::births(&idx, reader.schema(), entries.clone());
        let state = AnalysisState::new(&idx, reader.schema(), entries, vec![9]);
        let dir = tempfile::tempdir().expect("a temporary folder");
        let (bp, sp) = (dir.path().join("t.births"), dir.path().join("t.state"));
        births.write(&bp).expect("written");
        state.write(&sp).expect("written");
        let back = AnalysisState::load_births(&bp).expect("read back");
        assert_eq!(back.stored(), births.stored());
        for i in 0..n {
            assert_eq!(back.entry(i), births.entry(i));
        }
        assert!(back.fits(&idx, reader.schema()).is_ok());
        let e = AnalysisState::load(&bp)
            .expect_err("not a state")
            .to_string();
        assert!(e.contains("analysis-state magic"), "{e}");
        let e = AnalysisState::load_births(&sp)
            .expect_err("not births")
            .to_string();
        assert!(e.contains("births magic"), "{e}");
    }

    #[test]
    fn counts_beyond_the_bytes_are_refused_and_values_round_trip() {
        let mut e = Enc::default();
        e.u8(7);
        e.opt(Some(5));
        e.opt(None);
        e.str("héllo");
        e.u128(1 << 100);
        e.len(3);
        let mut d = Dec::new(&e.out);
        assert_eq!(d.u8(), Ok(7));
        assert_eq!(d.opt(), Ok(Some(5)));
        assert_eq!(d.opt(), Ok(None));
        assert_eq!(d.str(), Ok("héllo"));
        assert_eq!(d.u128(), Ok(1 << 100));
        assert!(d.count(1).is_err(), "3 items in 0 bytes");
        let mut e = Enc::default();
        e.u64(u64::MAX);
        e.u128(u128::MAX);
        assert_eq!(e.out.len(), 10 + 19);
        let mut d = Dec::new(&e.out);
        assert_eq!(d.u64(), Ok(u64::MAX));
        assert_eq!(d.u128(), Ok(u128::MAX));
        assert!(d.done());
        assert!(Dec::new(&e.out).count(8).is_err());
        assert!(
            Dec::new(&[0xFF; 20]).u128().is_err(),
            "longer than 128 bits"
        );
        assert!(Dec::new(&[0xFF; 10]).u64().is_err(), "cut short");
        assert!(Dec::new(&[2]).flag().is_err());
    }
}
