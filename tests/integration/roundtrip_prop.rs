//! Property tests: random schemas × random record streams × random metadata changes.
//!
//! A random DTD (fields of random widths and interpretations, repeats, composites, vfields, a
//! main section and a table section referred to by sectionOffset/sectionStride) is generated as
//! text and resolved; a random trace is assembled byte by byte under the live metadata state;
//! then decode → dump → pack must give back the identical bytes, through both the text form
//! and JSON lines, and the writer must agree with the decoder on every value.

use std::io::BufReader;

use metatf::__internal::ScopeState;
use metatf::container::{ByteOrder, Class, Header, Trace};
use metatf::decode::{Event, Reader};
use metatf::dtd::{Expr, Interp, Schema, SlotKind};
use metatf::encode::TraceWriter;
use metatf::pack::pack_to_vec;
use metatf::text::{Format, InputFormat, Options, Printer};
use metatf::MetaProperty;
use proptest::prelude::*;

use crate::util::Rng;

fn random_interp(r: &mut Rng) -> (String, bool) {
    match r.below(7) {
        0 => ("none".into(), false),
        1 => (format!("default {}", r.below(1000)), true),
        2 => (format!("baseOffset {}", r.below(1 << 20)), false),
        3 => (format!("delta {}", r.below(1 << 20)), false),
        4 => (
            format!("stride {} {}", r.below(1000), r.below(41) as i64 - 20),
            true,
        ),
        5 => ("sectionOffset table".into(), false),
        _ => (format!("sectionStride table {}", r.below(3)), true),
    }
}

/// A random DTD; returns its text.
pub(crate) fn random_dtd(r: &mut Rng) -> String {
    let tw = 1 + r.below(2);
    let mut defaults = format!("tag.width = {tw};\n");
    let mut main = String::new();
    let nrec = 1 + r.below(4);
    for i in 0..nrec {
        let mut fields = vec!["tag".to_string()];
        for j in 0..1 + r.below(5) {
            let id = format!("{i}_{j}");
            match r.below(10) {
                0 => {
                    fields.push(format!("n{id}*x{id}"));
                    defaults += &format!("n{id}.width = 1; n{id}.interpretation = none;\n");
                    defaults += &format!(
                        "x{id}.width = {}; x{id}.interpretation = none;\n",
                        1 + r.below(2)
                    );
                }
                1 => {
                    fields.push(format!("n{id}*(a{id}, b{id})"));
                    defaults += &format!("n{id}.width = 1; n{id}.interpretation = none;\n");
                    defaults += &format!("a{id}.width = 1; a{id}.interpretation = none;\n");
                    let (interp, zero) = random_interp(r);
                    if zero {
                        defaults += &format!("b{id}.interpretation = {interp};\n");
                    } else {
                        defaults += &format!(
                            "b{id}.width = {}; b{id}.interpretation = {interp};\n",
                            r.below(5)
                        );
                    }
                }
                2 => fields.push("vfield".into()),
                _ => {
                    fields.push(format!("f{id}"));
                    let (interp, zero) = random_interp(r);
                    if zero {
                        defaults += &format!("f{id}.interpretation = {interp};\n");
                    } else {
                        let w = [0, 1, 2, 3, 4, 8][r.below(6) as usize];
                        defaults +=
                            &format!("f{id}.width = {w}; f{id}.interpretation = {interp};\n");
                    }
                }
            }
        }
        main += &format!(
            "    r{i} : ({}) {{ tag.value = {}; }}\n",
            fields.join(", "),
            4 + i
        );
    }
    format!(
        "{defaults}section main 1 {{\n{main}}}\nsection table 2 {{\n    e : (tag, v) {{ tag.value = 4; v.width = {}; v.interpretation = none; }}\n    s : (tag, vfield) {{ tag.value = 5; }}\n}}\n",
        1 + r.below(8)
    )
}

struct Builder<'s> {
    schema: &'s Schema,
    big: bool,
    word: u8,
    out: Vec<u8>,
    nrecords: u64,
}

impl Builder<'_> {
    fn push(&mut self, v: u64, w: usize) {
        for i in 0..w {
            let shift = if self.big { 8 * (w - 1 - i) } else { 8 * i };
            self.out.push((v >> shift) as u8);
        }
    }
    fn tag(&mut self, t: u64) {
        self.push(t, self.schema.tag_width as usize);
    }
    /// One record of type `rid` with random stored bytes under the live state.
    fn record(&mut self, r: &mut Rng, state: &ScopeState, rid: u32) {
        let rt = self.schema.record(rid);
        let base = state.base(rid).unwrap();
        self.tag(rt.tag);
        let mut last = vec![0u64; rt.slots.len()];
        self.nodes(r, state, base, rt, &rt.layout[1..], &mut last);
        self.nrecords += 1;
    }
    /// Random stored bytes for layout nodes, walking the public layout tree (an independent
    /// model of the record structure, not the library's compiled programs).
    fn nodes(
        &mut self,
        r: &mut Rng,
        state: &ScopeState,
        base: usize,
        rt: &metatf::dtd::RecordType,
        nodes: &[metatf::dtd::Node],
        last: &mut Vec<u64>,
    ) {
        use metatf::dtd::Node;
        for n in nodes {
            match n {
                Node::Field(s) => match &rt.slots[*s as usize].kind {
                    SlotKind::Int { .. } => {
                        let w = state.slots[base + *s as usize].width as usize;
                        let name = &rt.slots[*s as usize].name;
                        let is_small = name.starts_with('n') || name.ends_with("length");
                        let v = if is_small {
                            r.below(4)
                        } else if w == 0 {
                            0
                        } else {
                            r.next() & (u64::MAX >> (64 - 8 * w))
                        };
                        self.push(v, w);
                        last[*s as usize] = v;
                    }
                    SlotKind::Bytes {
                        width: Expr::Value(src),
                    } => {
                        for _ in 0..last[*src as usize] {
                            let b = r.below(256) as u8;
                            self.out.push(b);
                        }
                    }
                    SlotKind::Bytes { .. } => {
                        unreachable!("only vfield byte strings are generated")
                    }
                },
                Node::Group { children, .. } => self.nodes(r, state, base, rt, children, last),
                Node::Repeat { count, item, .. } => {
                    for _ in 0..last[*count as usize] {
                        self.nodes(r, state, base, rt, item, last);
                    }
                }
            }
        }
    }
    fn metadata(&mut self, rec_tag: u64, slot: u16, p: MetaProperty) {
        self.tag(3);
        self.tag(rec_tag);
        self.push(slot as u64, 1);
        self.push(p.code() as u64, 1);
        let (words, n) = p.words();
        for w in words.iter().take(n) {
            self.push(*w, self.word as usize);
        }
        self.nrecords += 1;
    }
}

fn random_property(r: &mut Rng) -> MetaProperty {
    match r.below(8) {
        0 => MetaProperty::Width(r.below(9) as u8),
        1 => MetaProperty::Interp(Interp::None),
        2 => MetaProperty::Interp(Interp::BaseOffset(r.below(1 << 31))),
        3 => MetaProperty::Interp(Interp::Delta(r.below(1 << 31))),
        4 => MetaProperty::Interp(Interp::Default(r.below(1 << 31))),
        5 => MetaProperty::Interp(Interp::SectionOffset(2)),
        6 => MetaProperty::Interp(Interp::Stride {
            initial: r.below(1 << 31),
            stride: r.below(201) as i64 - 100,
        }),
        _ => MetaProperty::Interp(Interp::SectionStride {
            section: 2,
            stride: r.below(5) as i64 - 2,
        }),
    }
}

/// Assemble a random trace for the schema; returns its bytes.
pub(crate) fn random_trace(r: &mut Rng, schema: &Schema) -> Vec<u8> {
    let class = if r.chance(50) {
        Class::Bits64
    } else {
        Class::Bits32
    };
    let big = r.chance(50);
    let mut b = Builder {
        schema,
        big,
        word: class.word_size() as u8,
        out: Vec::new(),
        nrecords: 0,
    };
    // Global region: maybe a comment.
    if r.chance(50) {
        b.tag(1);
        b.push(3, 1);
        b.out.extend_from_slice(b"hey");
        b.nrecords += 1;
    }
    let global_len = b.out.len() as u64;
    let mut sections = Vec::new();
    let table_first = r.chance(50);
    for which in if table_first { [2u8, 1] } else { [1u8, 2] } {
        let before = b.out.len();
        b.tag(2);
        b.push(which as u64, 1);
        b.nrecords += 1;
        let mut state = ScopeState::new(schema, which);
        let scope = schema.scope_for(which).unwrap();
        let users: Vec<u32> = scope
            .records
            .iter()
            .copied()
            .filter(|&id| schema.record(id).builtin.is_none())
            .collect();
        for _ in 0..r.below(12) {
            let rid = users[r.below(users.len() as u64) as usize];
            if which == 1 && r.chance(30) {
                // A metadata change on an integer slot that is not a count or a length.
                let rt = schema.record(rid);
                let candidates: Vec<u16> = (1..rt.slots.len() as u16)
                    .filter(|&s| {
                        let sl = &rt.slots[s as usize];
                        matches!(sl.kind, SlotKind::Int { .. })
                            && !sl.name.starts_with('n')
                            && !sl.name.ends_with("length")
                    })
                    .collect();
                if let Some(&slot) =
                    candidates.get(r.below(candidates.len().max(1) as u64) as usize)
                {
                    let p = random_property(r);
                    if state.apply(schema, rid, slot, p).is_ok() {
                        b.metadata(rt.tag, slot, p);
                    }
                }
                continue;
            }
            b.record(r, &state, rid);
            // Stride/delta state does not affect stored bytes; widths do, and `state` tracks them.
        }
        sections.push((which, (b.out.len() - before) as u64));
    }
    let mut out = Header::encode(
        class,
        if big {
            ByteOrder::Big
        } else {
            ByteOrder::Little
        },
        "random.dtd",
        b.nrecords,
        global_len,
        &sections,
    )
    .unwrap();
    out.extend_from_slice(&b.out);
    out
}

/// The dump of a trace and whether the decoder found it valid.
fn dump(schema: &Schema, trace: &Trace<'_>, format: Format) -> (Vec<u8>, bool) {
    let reader = Reader::new(trace, schema);
    let mut p = Printer::new(
        &reader,
        Options {
            format,
            ..Options::default()
        },
    );
    let h = trace.header();
    let mut out = Vec::new();
    p.header(
        &mut out,
        &metatf::text::DumpHeader {
            dtd: &h.dtd_name,
            class: h.class,
            order: h.byte_order,
        },
    )
    .unwrap();
    let mut records = reader.records();
    let mut valid = true;
    while let Some(event) = records.next() {
        match event {
            Event::Record(rec) => p.record(&mut out, &rec).unwrap(),
            _ => valid = false,
        }
    }
    (out, valid)
}

fn pack(schema: &Schema, text: &[u8], format: InputFormat) -> Vec<u8> {
    pack_to_vec(schema, BufReader::new(text), format)
        .unwrap_or_else(|e| panic!("pack failed: {e}\n{}", String::from_utf8_lossy(text)))
}

fn run(seed: u64) {
    let mut r = Rng(seed | 1);
    let dtd = random_dtd(&mut r);
    let schema = match metatf::dtd::parse_str("random.dtd", &dtd) {
        Ok(l) => l.schema,
        Err(e) => panic!(
            "generated DTD is invalid:\n{dtd}\n{}",
            metatf::dtd::render_plain(&e)
        ),
    };
    let bytes = random_trace(&mut r, &schema);
    let trace = Trace::from_bytes(bytes.clone()).unwrap();
    for (format, input) in [
        (Format::Text, InputFormat::Text),
        (Format::Jsonl, InputFormat::Jsonl),
    ] {
        let (text, valid) = dump(&schema, &trace, format);
        if valid {
            let again = pack(&schema, &text, input);
            assert!(
                again == bytes,
                "{format:?} round trip differs\n{dtd}\n{}",
                String::from_utf8_lossy(&text)
            );
        } else {
            // The generator writes random section offsets; a trace the decoder rejects (one
            // that points between elements) must be refused by the writer too.
            assert!(
                pack_to_vec(&schema, BufReader::new(&text[..]), input).is_err(),
                "pack accepted a trace the decoder rejects\n{dtd}\n{}",
                String::from_utf8_lossy(&text)
            );
        }
    }
}

proptest! {
    // PROPTEST_CASES overrides the number of cases (e.g. 5000 for a long run).
    #![proptest_config(ProptestConfig { cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200), ..ProptestConfig::default() })]
    #[test]
    fn dump_pack_round_trip_random_schemas(seed in any::<u64>()) {
        run(seed);
    }
}

#[test]
fn round_trip_regressions() {
    // Seeds that once failed are kept here.
    for seed in [1u64, 2, 3, 42] {
        run(seed);
    }
}

/// Write every record of `trace` again through the `TraceWriter` API, from its decoded values.
fn rewrite(schema: &Schema, trace: &Trace<'_>) -> Option<Vec<u8>> {
    use metatf::decode::{ElementRef, Value};
    use metatf::dtd::Builtin;
    use metatf::encode::In;
    let h = trace.header();
    let mut w = TraceWriter::in_memory(schema, h.class, h.byte_order, &h.dtd_name);
    let reader = Reader::new(trace, schema);
    let mut records = reader.records();
    while let Some(event) = records.next() {
        let Event::Record(rec) = event else {
            return None;
        };
        match rec.record().builtin {
            Some(Builtin::Section) => w.section(rec.section()).unwrap(),
            Some(Builtin::Metadata) => {
                let m = rec.metadata().expect("generated metadata is valid");
                w.metadata(m.record, m.slot, m.property).unwrap();
            }
            _ => {
                let values: Vec<In> = rec
                    .fields()
                    .skip(1)
                    .map(|f| match f.value() {
                        Value::Int(i) => In::Int(i),
                        Value::Bytes(b) => In::Bytes(b.to_vec()),
                        Value::Ref(ElementRef::Offset { offset, .. }) => In::Offset(offset),
                        Value::Ref(ElementRef::Index { index, .. }) => In::Index(index),
                    })
                    .collect();
                w.record(rec.record_id(), &values).ok()?;
            }
        }
    }
    w.finish_to_vec().ok()
}

/// Every decoded value of a trace, in order, in the text form.
fn all_values(schema: &Schema, bytes: &[u8]) -> Vec<(u32, Vec<String>)> {
    let trace = Trace::from_slice(bytes).unwrap();
    let reader = Reader::new(&trace, schema);
    let mut records = reader.records();
    let mut out = Vec::new();
    while let Some(event) = records.next() {
        let Event::Record(rec) = event else {
            panic!("{event:?}")
        };
        out.push((
            rec.record_id(),
            rec.fields().map(|f| f.value().to_string()).collect(),
        ));
    }
    out
}

fn run_writer(seed: u64) {
    let mut r = Rng(seed | 1);
    let dtd = random_dtd(&mut r);
    let schema = metatf::dtd::parse_str("random.dtd", &dtd).unwrap().schema;
    let bytes = random_trace(&mut r, &schema);
    let trace = Trace::from_bytes(bytes.clone()).unwrap();
    let (_, valid) = dump(&schema, &trace, Format::Text);
    match (rewrite(&schema, &trace), valid) {
        (Some(written), true) => {
            assert!(written == bytes, "writer output differs\n{dtd}");
            assert_eq!(all_values(&schema, &written), all_values(&schema, &bytes));
        }
        // The decoder rejects the trace (a random section offset): so does the writer.
        (None, false) => {}
        (w, v) => panic!(
            "writer wrote: {}, decoder found valid: {v}\n{dtd}",
            w.is_some()
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200), ..ProptestConfig::default() })]
    /// Values decoded from a random trace, written again with the writer API, give the same
    /// bytes, and decoding those gives the same values.
    #[test]
    fn writer_and_decoder_agree_on_random_schemas(seed in any::<u64>()) {
        run_writer(seed);
    }

    /// Corrupted sample traces never make the reader panic or read out of bounds.
    #[test]
    fn corrupted_traces_never_panic(which in 0usize..5, flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8), cut in any::<usize>()) {
        // The last two use live sets (extension live/1), from the independent reader's cases.
        let names = ["traces/hatf-le32", "traces/hatf-be64", "traces/hatf-split-le64", "tests/independent/t/t12", "tests/independent/t/t13"];
        let dtds = ["dtds/hatf10.dtd", "dtds/hatf10.dtd", "dtds/hatf10-split.dtd", "tests/independent/t/t12.dtd", "tests/independent/t/t13.dtd"];
        let mut bytes = std::fs::read(crate::util::root().join(format!("{}.mtf", names[which]))).unwrap();
        for (at, x) in flips {
            let n = bytes.len();
            bytes[at % n] ^= x;
        }
        if cut % 4 == 0 {
            let n = bytes.len();
            bytes.truncate(cut % n);
        }
        let schema = crate::util::schema(dtds[which]);
        // Salvaged as `mtf dump` does, so the lenient reading of a damaged container is covered.
        if let Ok(trace) = Trace::salvage(metatf::container::TraceData::Owned(bytes), None) {
            let reader = Reader::new(&trace, &schema);
            let mut p = Printer::new(&reader, Options::default());
            let mut pj = Printer::new(&reader, Options { format: Format::Jsonl, ..Options::default() });
            let mut sink = Vec::new();
            let mut records = reader.records();
            while let Some(event) = records.next() {
                if let Event::Record(rec) = event {
                    p.record(&mut sink, &rec).unwrap();
                    pj.record(&mut sink, &rec).unwrap();
                }
            }
        }
    }
}

proptest! {
    /// Any text given to `pack` gives a trace or an error with a position, never a panic.
    #[test]
    fn pack_input_never_panics(lines in proptest::collection::vec("[ -~é\"\\\\x@#{}\\[\\]=:.0-9a-z]{0,40}", 0..6)) {
        let schema = crate::util::schema("dtds/hatf10-split.dtd");
        let mut text = String::from("%mtf 1 dtd=\"hatf10-split.dtd\" class=64 order=little\nsection 1\n");
        for l in &lines {
            text.push_str(l);
            text.push('\n');
        }
        let _ = pack_to_vec(&schema, &mut text.as_bytes(), InputFormat::Text);
        let _ = pack_to_vec(&schema, &mut text.as_bytes(), InputFormat::Jsonl);
    }
}
