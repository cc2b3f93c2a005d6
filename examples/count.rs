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
        .map_err(|e| metatf::dtd::render(&e))?
        .schema;
    let reader = Reader::from_trace(&trace, &schema);
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    let mut records = reader.records();
    while let Some(rec) = records.next() {
        // Views borrow the decoder's buffers: nothing is allocated per record.
        *counts.entry(rec?.name()).or_default() += 1;
    }
    for (name, n) in counts {
        println!("{name:<20} {n:>10}");
    }
    Ok(())
}
