//! A trace whose container is damaged — cut short by a crashed tracer — still shows what it
//! holds: `metatf::OpenOptions::salvage` decodes the regions that can be trusted.

use metatf::decode::Event;

use crate::util;

/// Records (names) and the number of problems/damage events of a salvaged trace.
fn salvage(bytes: &[u8]) -> (Vec<String>, usize, bool) {
    let dir = util::tempdir();
    let p = dir.path().join("cut.mtf");
    std::fs::write(&p, bytes).unwrap();
    let dtd = util::root().join("dtds/hatf10-split.dtd");
    let o = metatf::OpenOptions::new()
        .dtd(&dtd)
        .salvage(true)
        .open(&p)
        .unwrap();
    let damaged = o.damage().is_some();
    let reader = o.reader();
    let mut names = Vec::new();
    let mut bad = 0;
    let mut records = reader.records();
    while let Some(e) = records.next() {
        match e {
            Event::Record(r) => names.push(r.name().to_string()),
            _ => bad += 1,
        }
    }
    (names, bad, damaged)
}

#[test]
fn a_truncated_trace_shows_the_records_before_the_cut() {
    let full = std::fs::read(util::root().join("traces/hatf-split-le64.mtf")).unwrap();
    let (all, bad, damaged) = salvage(&full);
    assert_eq!((bad, damaged), (0, false));
    // Cut at every length past the header: never a panic, and what is decoded is a prefix of
    // the whole trace's records (in file order), ending with damage where the cut is.
    let trace = metatf::container::Trace::from_slice(&full).unwrap();
    let start = trace.header().start as usize;
    for cut in start..full.len() {
        let (names, _, damaged) = salvage(&full[..cut]);
        assert!(damaged, "cut at {cut}");
        assert!(all.starts_with(&names), "cut at {cut}: {names:?}");
    }
    // 200 bytes hold the comment, the names table and part of the address stream.
    let (names, bad, _) = salvage(&full[..200]);
    assert!(names.len() >= 3, "{names:?}");
    assert!(bad >= 1);
}

#[test]
fn an_unreadable_header_is_still_an_error() {
    let full = std::fs::read(util::root().join("traces/hatf-split-le64.mtf")).unwrap();
    let dir = util::tempdir();
    let p = dir.path().join("cut.mtf");
    std::fs::write(&p, &full[..10]).unwrap();
    assert!(metatf::OpenOptions::new().salvage(true).open(&p).is_err());
}

/// The reproduction: `head -c 200 traces/hatf-split-le64.mtf > t; mtf dump t` printed
/// no record. Now the container error is reported, the records before the cut are printed, and
/// the exit status is 1 (invalid trace); `check` and `info` count the damage too.
#[test]
fn dump_of_a_trace_cut_at_200_bytes_prints_its_records() {
    let full = std::fs::read(util::root().join("traces/hatf-split-le64.mtf")).unwrap();
    let dir = util::tempdir();
    let p = dir.path().join("t");
    std::fs::write(&p, &full[..200]).unwrap();
    let out = util::mtf(&["dump", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let dump = util::text(&out.stdout);
    assert!(
        dump.contains("name vfield.length=7 vfield.data=\"default\""),
        "{dump}"
    );
    assert!(
        dump.contains("createHeap thread=0 heap=@9:\"scratch arena\""),
        "{dump}"
    );
    let err = util::text(&out.stderr);
    assert!(err.contains("runs past the end of the file"), "{err}");
    assert!(err.contains("truncated"), "{err}");
    let out = util::mtf(&["check", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(util::text(&out.stdout).contains("INVALID, 2 problem(s)"));
    let out = util::mtf(&["info", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
}

/// A compressed trace cut short (tracers write `.gz` directly) shows the records that were
/// decompressed before the cut, as `zcat t.gz | mtf dump -` does, and exits 1.
#[cfg(feature = "compression")]
#[test]
fn a_truncated_gzip_trace_shows_its_records() {
    use std::io::Write;
    let full = std::fs::read(util::root().join("traces/et3.mtf")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&full).unwrap();
    let gz = gz.finish().unwrap();
    let dir = util::tempdir();
    let p = dir.path().join("t.mtf.gz");
    std::fs::write(&p, &gz[..gz.len() * 3 / 4]).unwrap();
    let out = util::mtf(&["dump", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", util::text(&out.stderr));
    assert!(util::text(&out.stderr).contains("cannot decompress"));
    assert!(util::text(&out.stdout).lines().count() > 2);
}

/// docs/format.md §9.2: a compressed trace whose stream ends early is read like the same trace
/// cut short uncompressed; cut inside the header, both are invalid traces (status 1), from a
/// file as from standard input, for every subcommand that reads a trace.
#[cfg(feature = "compression")]
#[test]
fn a_compressed_trace_cut_inside_its_header_exits_like_the_uncompressed_cut_one() {
    use std::io::Write;
    let whole = std::fs::read(util::root().join("traces/android.mtf")).unwrap();
    let dir = util::tempdir();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(9));
    gz.write_all(&whole).unwrap();
    let gz = gz.finish().unwrap();
    let zst = zstd::encode_all(&whole[..], 19).unwrap();
    let cases: [(&str, Vec<u8>); 4] = [
        ("plain.mtf", whole[..20].to_vec()),
        ("cut.mtf.gz", gz[..30].to_vec()),
        ("cut.mtf.zst", zst[..10].to_vec()),
        ("empty.mtf.gz", gz[..12].to_vec()),
    ];
    for (name, bytes) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, &bytes).unwrap();
        for cmd in ["check", "dump", "info"] {
            let out = util::mtf(&[cmd, p.to_str().unwrap()]);
            assert_eq!(
                out.status.code(),
                Some(1),
                "{cmd} {name}: {}",
                util::text(&out.stderr)
            );
            let out = util::mtf_stdin(&[cmd, "-"], &bytes);
            assert_eq!(out.status.code(), Some(1), "{cmd} - < {name}");
        }
    }
}
