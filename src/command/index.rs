//! `mtf index`, and the seek index `pack`, `compact` and `import` write beside a large output:
//! one decode with a [`Builder`](crate::index::Builder), the index returned with the checkpoint
//! that was due but not taken ([`Waiting`]), so that an index without a single checkpoint is
//! refused or reported rather than written as if it were one.

use std::path::{Path, PathBuf};

use crate::decode::Reader;
use crate::index::{BuildOptions, Builder, Index, IndexError, Waiting};
use crate::open::{OpenError, OpenOptions};

/// An index built, with what stopped its last checkpoint.
#[derive(Debug)]
pub struct Built {
    /// The index.
    pub index: Index,
    /// The checkpoint that was due at the end but waited for its live sets (extension
    /// live/1), if any.
    pub waiting: Option<Waiting>,
}

impl Built {
    /// The live sets left no room for any checkpoint although some were due: the index would
    /// only look like one (readers start from the beginning all the same).
    pub fn no_checkpoint(&self) -> Option<&Waiting> {
        self.waiting
            .as_ref()
            .filter(|_| self.index.entries().is_empty())
    }

    /// The line `mtf index` says once the index of `name` (already escaped for a terminal) is
    /// written: its checkpoints, the intervals of `options`, its size beside the trace's
    /// `trace_len` bytes, and why there are none or one fewer.
    pub fn summary(&self, name: &str, options: &BuildOptions, trace_len: usize) -> String {
        let idx = &self.index;
        let size = idx.to_bytes().len() as u64;
        let trace = trace_len.max(1) as f64;
        let why = if idx.entries().is_empty() {
            " (the trace is shorter than one interval: readers start from its beginning)"
        } else if self.waiting.is_some() {
            " (the last one due was not taken: its live sets were too large)"
        } else {
            ""
        };
        format!(
            "{name}: {} checkpoints (every {} records or {} bytes){}, {} bytes ({:.3} % of \
             the trace){why}",
            idx.entries().len(),
            options.every_records,
            options.every_bytes,
            if idx.time_unit().is_some() {
                ", with declared times"
            } else {
                ""
            },
            size,
            100.0 * size as f64 / trace
        )
    }
}

/// Builds the seek index of `reader`'s trace in one decode, naming it `name`; `progress` is
/// told the byte offset and the records decoded as the decode goes.
pub fn build_index(
    reader: &Reader<'_>,
    options: &BuildOptions,
    name: impl Into<String>,
    progress: &mut dyn FnMut(u64, u64),
) -> Built {
    let mut b = Builder::new(reader, *options);
    b.decode(reader, progress);
    let waiting = b.waiting();
    Built {
        index: b.finish(name),
        waiting,
    }
}

/// Why no index was written beside a trace.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum BesideError {
    /// The trace could not be opened.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Open(#[from] OpenError),
    /// The index could not be written.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Index(#[from] IndexError),
    /// The live sets left no room for any checkpoint (nothing was written).
    #[error(
        "no checkpoint fits: the trace's live sets (extension live/1) hold {} values where the \
         first was due, more than 1/16 of the {} trace bytes there were (docs/format.md §15.3)",
        .0.live_values,
        .0.bytes_there
    )]
    #[diagnostic(code(mtf::index::live_sets))]
    NoCheckpoint(Waiting),
}

/// Builds the seek index of the trace `trace` (read with the DTD `dtd`, else the one its
/// header names) and writes it to `path`, named `name`. An index without a checkpoint,
/// because the trace's live sets leave no room for one, is not written.
pub fn index_beside(
    trace: &Path,
    dtd: Option<&Path>,
    path: &Path,
    name: impl Into<String>,
) -> Result<Built, BesideError> {
    let o = OpenOptions::new()
        .dtd_opt(dtd.map(PathBuf::from))
        .open(trace)?;
    let built = build_index(&o.reader(), &BuildOptions::default(), name, &mut |_, _| {});
    if let Some(w) = built.no_checkpoint() {
        return Err(BesideError::NoCheckpoint(*w));
    }
    built.index.write(path)?;
    Ok(built)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_index_as_index_build() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/traces/android.mtf");
        let o = crate::open(path).expect("the sample trace opens");
        let options = BuildOptions {
            every_records: 100,
            every_bytes: 1 << 20,
        };
        let mut calls = 0u64;
        let built = build_index(&o.reader(), &options, "(index)", &mut |_, _| calls += 1);
        let reference = crate::index::build(&o.reader(), &options);
        assert!(!built.index.entries().is_empty());
        assert_eq!(built.index.to_bytes(), reference.to_bytes());
        assert!(built.no_checkpoint().is_none());
        assert!(calls > 0);
    }

    /// Issue 25, item 18: a `compact --live` trace whose live sets leave no room for any
    /// checkpoint at the default intervals (40,000 blocks allocated before any is freed) gets no
    /// index beside it, and the reason; re-encoded without live sets it gets its checkpoints.
    #[test]
    fn a_live_trace_without_room_for_a_checkpoint_gets_no_index_beside_it() {
        use crate::compact::{compact, CompactOptions};
        use crate::encode::TraceWriter;
        let dtd = concat!(env!("CARGO_MANIFEST_DIR"), "/dtds/hatf10.dtd");
        let text = std::fs::read_to_string(dtd).expect("hatf10.dtd");
        let schema = crate::dtd::parse_str("hatf10.dtd", &text)
            .expect("the DTD")
            .schema;
        let mut w = TraceWriter::in_memory(
            &schema,
            crate::container::Class::Bits32,
            crate::container::ByteOrder::Little,
            "hatf10.dtd",
        );
        w.section_named("heap").expect("section");
        let n = 40_000u64;
        for i in 0..n {
            w.write("alloc")
                .int("size", 16)
                .int("address", 4096 + 32 * i)
                .bytes("vfield.data", "")
                .done()
                .expect("alloc");
        }
        for i in 0..n {
            w.write("free")
                .int("address", 4096 + 32 * ((i * 7919) % n))
                .bytes("vfield.data", "")
                .done()
                .expect("free");
        }
        let plain = w.finish_to_vec().expect("plain");
        let o = OpenOptions::new()
            .dtd(dtd)
            .open_bytes(plain.clone())
            .expect("opens");
        let mut w = TraceWriter::in_memory(
            &schema,
            crate::container::Class::Bits32,
            crate::container::ByteOrder::Little,
            "hatf10.dtd",
        );
        let options = CompactOptions {
            live: true,
            ..CompactOptions::default()
        };
        compact(&o.reader(), &mut w, &options).expect("compacted");
        let dir = std::env::temp_dir().join(format!("mtf-index-beside-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("folder");
        let (live, plain_path) = (dir.join("l.mtf"), dir.join("p.mtf"));
        std::fs::write(&live, w.finish_to_vec().expect("live")).expect("written");
        std::fs::write(&plain_path, plain).expect("written");
        let idx = dir.join("l.mtf.idx");
        let e = index_beside(&live, Some(Path::new(dtd)), &idx, "l.mtf.idx");
        assert!(
            matches!(&e, Err(BesideError::NoCheckpoint(w)) if w.live_values > 0),
            "{e:?}"
        );
        assert!(!idx.exists());
        let pidx = dir.join("p.mtf.idx");
        let built = index_beside(&plain_path, Some(Path::new(dtd)), &pidx, "p.mtf.idx")
            .expect("the plain trace is indexed");
        assert!(!built.index.entries().is_empty());
        assert!(pidx.is_file());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
