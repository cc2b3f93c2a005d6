//! Parquet export (`mtf export --to parquet`) of any trace: raw bytes with the built-in DTD
//! the header names, or the text form packed (first byte odd). An error or one file per record
//! type, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use metatf::columnar::{write_parquet, ParquetOptions};
use metatf::OpenOptions;

fuzz_target!(|data: &[u8]| {
    let Some(bytes) = metatf_fuzz::trace_from_input(data) else {
        return;
    };
    let Ok(opened) = OpenOptions::new()
        .salvage(true)
        .max_input_bytes(1 << 22)
        .open_bytes(bytes)
    else {
        return;
    };
    let dir = metatf_fuzz::scratch_dir().join("parquet");
    let _ = std::fs::remove_dir_all(&dir);
    let reader = opened.reader();
    // Small batches and row groups, so that their boundaries are crossed.
    let opts = ParquetOptions {
        batch_rows: 3,
        row_group_rows: 7,
    };
    if let Err(e) = write_parquet(&reader, &dir, &opts, &mut |_| {}) {
        let _ = e.to_string();
    }
});
