//! Count the records of a trace per record type.
//!
//! ```sh
//! cargo run --example count -- traces/hatf-le32.mtf [DTD]
//! ```
//! Without a DTD argument the DTD named in the trace header is looked up like `mtf` does.

use std::collections::BTreeMap;

use metatf::container::{Located, Trace};
use metatf::decode::Reader;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: count TRACE [DTD]")?;
    let explicit = args.next().map(std::path::PathBuf::from);
    let trace = Trace::open(&path)?;
    let env = std::env::var_os("MTF_DTD_PATH");
    let located = trace.locate_dtd(explicit.as_deref(), env.as_deref());
    if let Located::NotFound(nf) = &located {
        return Err(nf.to_string().into());
    }
    let text = located.read_text()?;
    let schema = metatf::dtd::parse_str(trace.dtd_name(), &text)
        .map_err(|e| metatf::dtd::render_plain(&e))?
        .schema;
    let reader = Reader::from_trace(&trace, &schema);
    // Count by record type id: a view borrows the decoder's buffers until the next record, so
    // nothing is allocated per record and nothing is kept from it but numbers.
    let mut counts = vec![0u64; schema.records.len()];
    let mut records = reader.records();
    while let Some(rec) = records.next() {
        counts[rec?.record_id as usize] += 1;
    }
    let by_name: BTreeMap<&str, u64> = schema
        .records
        .iter()
        .zip(&counts)
        .filter(|(_, &n)| n > 0)
        .map(|(r, &n)| (r.name.as_str(), n))
        .collect();
    for (name, n) in by_name {
        println!("{name:<20} {n:>10}");
    }
    Ok(())
}
