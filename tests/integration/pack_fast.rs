//! `pack`'s fast reader (src/pack.rs, `Fast`: records of integers and quoted byte strings, and
//! metadata lines, read without the full parser) gives what the full parser gives: the same trace for random texts, and for texts
//! damaged at random places the same first error at the same line and column, with nothing
//! written; with the lines read ahead on a second thread (`-j 2`) as on one; from the library,
//! and from `mtf pack` reading a file, `-`, a FIFO and a `.gz`.

use std::io::BufReader;

use metatf::encode::TraceWriter;
use metatf::pack::{
    finish_error, pack_lines, pack_lines_ahead, pack_lines_general, pack_lines_shared, read_header,
    LineMap, PackError, Share,
};
use metatf::text::{InputFormat, LineReader};

use crate::util::{self, Rng};

const DTD: &str = "benches/hatf-bench.dtd";

/// How the lines are read: the full parser only, the fast reader, the fast reader a batch
/// ahead on a thread of its own (`-j 2`), and the same with a given share of the record lines
/// (in sixteenths) read by the encoding thread.
#[derive(Clone, Copy, PartialEq)]
enum How {
    General,
    Fast,
    Ahead,
    Shared(u8),
}

/// The shares of lines left to the encoding thread the tests try besides `-j 2`'s own: every
/// line, half of them, one in sixteen.
const SHARES: [u8; 3] = [16, 8, 1];

/// The trace, or the error as `line:column: message` (as `mtf pack` prints it after the file
/// name).
fn pack(text: &[u8], format: InputFormat, how: How) -> Result<Vec<u8>, String> {
    pack_with(DTD, text, format, how)
}

/// [`pack`] with the DTD `dtd`.
fn pack_with(dtd: &str, text: &[u8], format: InputFormat, how: How) -> Result<Vec<u8>, String> {
    let schema = util::schema(dtd);
    let shown = |e: PackError| match e {
        PackError::Text(t) => format!("{}:{}: {}", t.line, t.column, t.kind),
        e => e.to_string(),
    };
    let mut lines = LineReader::new(BufReader::new(text));
    let h = read_header(&mut lines, format).map_err(shown)?;
    let mut w = TraceWriter::in_memory(&schema, h.class, h.order, &h.dtd);
    let mut map = LineMap::default();
    let r = match how {
        How::General => pack_lines_general(&mut lines, format, &mut w, &mut map),
        How::Fast => pack_lines(&mut lines, format, &mut w, &mut map),
        How::Ahead => pack_lines_ahead(&mut lines, format, &mut w, &mut map),
        How::Shared(k) => pack_lines_shared(&mut lines, format, &mut w, &mut map, Share::Fixed(k)),
    };
    r.map_err(shown)?;
    w.finish_to_vec().map_err(|e| shown(finish_error(e, &map)))
}

/// A random text of the benchmark DTD, mostly as `mtf dump` writes it, with the other forms the
/// text format allows here and there (spacing, comments, blank lines, number forms), and now
/// and then a value the encoder refuses (too wide, not the default, a delta too large).
fn random_text(rng: &mut Rng, records: usize) -> String {
    // A third of the texts hold values the encoder refuses, one record in a hundred.
    let refusing = rng.chance(33);
    let odd = move |rng: &mut Rng| refusing && rng.chance(1);
    let mut t = String::from("%mtf 1 dtd=\"hatf-bench.dtd\" class=64 order=little\n");
    t += if rng.chance(50) {
        "section number=1:heap\n"
    } else {
        "section 1\n"
    };
    for r in ["alloc", "free", "realloc"] {
        t += &format!("metadata {r}.time delta 0\nmetadata {r}.time width 2\n");
    }
    let (mut time, mut thread, mut size_width) = (1000u64, 0u64, 4u32);
    let num = |rng: &mut Rng, v: u64, hex: bool| -> String {
        match rng.below(40) {
            0 => format!("0X{v:X}"),
            1 => format!("00{v}"),
            2 => format!("{v:#x}"),
            _ if hex => format!("{v:#x}"),
            _ => v.to_string(),
        }
    };
    for _ in 0..records {
        match rng.below(60) {
            0 => {
                thread = rng.below(8);
                for r in ["alloc", "free", "realloc"] {
                    t += &format!("metadata {r}.thread default {thread}\n");
                }
                continue;
            }
            1 => {
                size_width = if size_width == 4 { 2 } else { 4 };
                for r in ["alloc", "realloc"] {
                    t += &format!("metadata {r}.size width {size_width}\n");
                }
                continue;
            }
            2 => {
                t += if rng.chance(50) {
                    "\n"
                } else {
                    "# a comment\n"
                };
                continue;
            }
            _ => {}
        }
        let step = if odd(rng) { 70_000 } else { 3000 };
        time += rng.below(step);
        let limit = if size_width == 2 { 1 << 16 } else { 1 << 20 };
        let most = if odd(rng) { limit * 2 } else { limit };
        let size = rng.below(most);
        let address = 0x7f00_0000_0000 + rng.below(1 << 30) * 16;
        let th = if odd(rng) { thread + 1 } else { thread };
        let sep = if rng.chance(2) { "  " } else { " " };
        let mut line = match rng.below(3) {
            0 => format!(
                "alloc size={} address={}",
                num(rng, size, false),
                num(rng, address, true)
            ),
            1 => format!("free address={}", num(rng, address, true)),
            _ => format!(
                "realloc size={} old={} address={}",
                num(rng, size, false),
                num(rng, address + 32, true),
                num(rng, address, true)
            ),
        };
        line += &format!(
            "{sep}time={} thread={} heap={}",
            num(rng, time, false),
            num(rng, th, false),
            if rng.chance(1) { "-0" } else { "0" }
        );
        if rng.chance(1) {
            line += " # note";
        }
        t += &line;
        t += "\n";
    }
    t
}

/// `text` with one to three random edits: a character replaced by one that may break a token,
/// deleted or doubled, or a line cut short.
fn damage(rng: &mut Rng, text: &[u8]) -> Vec<u8> {
    let mut t = text.to_vec();
    // Leave the header alone: its errors are not the fast reader's.
    let start = t.iter().position(|&c| c == b'\n').unwrap() + 1;
    for _ in 0..=rng.below(3) {
        let at = start + rng.below((t.len() - start) as u64) as usize;
        let bad: &[u8] = match rng.below(14) {
            0 => b"g",
            1 => b"-",
            2 => b" ",
            3 => b"=",
            4 => b"\xff",
            5 => b"\"",
            6 => b"x",
            7 => b"99999999999999999999",
            8 => b"#",
            9 => b"\xc3\xa9",
            10 => b"",
            11 => b"\n",
            12 => b"@",
            _ => b":",
        };
        match rng.below(3) {
            0 => {
                t.splice(at..at + 1, bad.iter().copied());
            }
            1 => {
                t.splice(at..at, bad.iter().copied());
            }
            _ => {
                let c = t[at];
                t.insert(at, c);
            }
        }
    }
    t
}

/// The JSON lines of the trace `bytes`, as `mtf dump --format jsonl` writes them.
fn jsonl(bytes: &[u8]) -> Vec<u8> {
    jsonl_with(DTD, bytes)
}

/// [`jsonl`] of a trace of the DTD `dtd`.
fn jsonl_with(dtd: &str, bytes: &[u8]) -> Vec<u8> {
    let dir = util::tempdir();
    let p = dir.path().join("t.mtf");
    std::fs::write(&p, bytes).unwrap();
    let out = util::mtf(&[
        "dump",
        "--dtd",
        dtd,
        "--format",
        "jsonl",
        p.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", util::text(&out.stderr));
    out.stdout
}

#[test]
fn fast_and_general_readers_agree_on_random_and_damaged_texts() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let (mut ok, mut refused) = (0, 0);
    for round in 0..60 {
        let n = 20 + rng.below(300) as usize;
        let text = random_text(&mut rng, n);
        let mut cases = vec![text.clone().into_bytes()];
        for _ in 0..6 {
            cases.push(damage(&mut rng, text.as_bytes()));
        }
        for case in &cases {
            let fast = pack(case, InputFormat::Text, How::Fast);
            let general = pack(case, InputFormat::Text, How::General);
            assert_eq!(
                fast,
                general,
                "round {round}:\n{}",
                String::from_utf8_lossy(case)
            );
            let ahead = pack(case, InputFormat::Text, How::Ahead);
            assert_eq!(ahead, fast, "round {round}, -j 2");
            for k in SHARES {
                let shared = pack(case, InputFormat::Text, How::Shared(k));
                assert_eq!(shared, fast, "round {round}, -j 2, {k}/16 left");
            }
            match fast {
                Ok(_) => ok += 1,
                Err(_) => refused += 1,
            }
        }
        // The JSON-lines twin of a trace that packed, damaged the same way.
        if round % 6 == 0 {
            if let Ok(bytes) = pack(text.as_bytes(), InputFormat::Text, How::Fast) {
                let j = jsonl(&bytes);
                let mut cases = vec![j.clone()];
                for _ in 0..6 {
                    cases.push(damage(&mut rng, &j));
                }
                for (i, case) in cases.iter().enumerate() {
                    let fast = pack(case, InputFormat::Jsonl, How::Fast);
                    let general = pack(case, InputFormat::Jsonl, How::General);
                    assert_eq!(fast, general, "round {round}");
                    let ahead = pack(case, InputFormat::Jsonl, How::Ahead);
                    assert_eq!(ahead, fast, "round {round}, -j 2");
                    if i == 0 {
                        assert_eq!(fast.as_ref(), Ok(&bytes), "the JSON lines pack back");
                    }
                }
            }
        }
    }
    // Both outcomes were exercised, many times.
    assert!(ok > 30 && refused > 100, "{ok} packed, {refused} refused");
}

/// The JSON-lines twins of random metadata-heavy traces (byte strings, plain or with an
/// escape, a tab or UTF-8; one line in six a metadata line), whole and damaged: the fast reader
/// (which takes plain strings and metadata lines as `mtf dump` writes them), the full parser
/// and the reading thread give the same trace or the same first error, and the whole lines
/// pack back into the trace.
#[test]
fn json_lines_with_strings_and_metadata_agree() {
    let dtd = "benches/bench-metadata.dtd";
    let mut rng = Rng(0x5eed_1234_abcd_0009);
    let (mut packed, mut refused) = (0, 0);
    for round in 0..16 {
        let text = random_metadata_text(&mut rng, 700);
        let Ok(bytes) = pack_with(dtd, text.as_bytes(), InputFormat::Text, How::Fast) else {
            continue;
        };
        packed += 1;
        let j = jsonl_with(dtd, &bytes);
        let mut cases = vec![j.clone()];
        for _ in 0..6 {
            cases.push(damage(&mut rng, &j));
        }
        for (i, case) in cases.iter().enumerate() {
            let fast = packed_three_ways_from(dtd, case, InputFormat::Jsonl, round);
            if i == 0 {
                assert_eq!(fast.as_ref(), Ok(&bytes), "the JSON lines pack back");
            }
            refused += usize::from(fast.is_err());
        }
    }
    assert!(
        packed >= 4 && refused > 5,
        "{packed} packed, {refused} refused"
    );
}

/// Texts of several batches of the reading thread (4096 lines each), damaged anywhere.
#[test]
fn reading_ahead_agrees_across_batches() {
    let mut rng = Rng(0x5eed_1234_abcd_0003);
    for round in 0..4 {
        let text = random_text(&mut rng, 15_000);
        let mut cases = vec![text.clone().into_bytes()];
        for _ in 0..4 {
            cases.push(damage(&mut rng, text.as_bytes()));
        }
        for case in &cases {
            let fast = pack(case, InputFormat::Text, How::Fast);
            assert_eq!(
                pack(case, InputFormat::Text, How::Ahead),
                fast,
                "round {round}"
            );
            for k in SHARES {
                assert_eq!(
                    pack(case, InputFormat::Text, How::Shared(k)),
                    fast,
                    "round {round}, {k}/16 left"
                );
            }
            assert_eq!(
                pack(case, InputFormat::Text, How::General),
                fast,
                "round {round}"
            );
        }
    }
}

/// `mtf pack` of the same text from a file (with `-j 1`, `-j 2` and the default), `-`, a FIFO
/// and a `.gz` file: the trace the
/// library's full parser gives, or its error with the same line and column and no output.
#[test]
fn every_input_path_gives_the_general_readers_result() {
    let mut rng = Rng(0x5eed_1234_abcd_0002);
    let dir = util::tempdir();
    let dtd = util::root().join(DTD);
    let mut cases = Vec::new();
    while cases.len() < 8 {
        let text = random_text(&mut rng, 2000);
        let case = if cases.len() % 2 == 0 {
            text.into_bytes()
        } else {
            damage(&mut rng, text.as_bytes())
        };
        cases.push(case);
    }
    for (i, case) in cases.iter().enumerate() {
        let want = pack(case, InputFormat::Text, How::General);
        let plain = dir.path().join(format!("c{i}.txt"));
        std::fs::write(&plain, case).unwrap();
        let gz = dir.path().join(format!("c{i}.txt.gz"));
        std::fs::write(&gz, util::compress("gz", case)).unwrap();
        for how in ["file", "file -j 1", "file -j 2", "-", "fifo", "gz"] {
            let out_path = dir
                .path()
                .join(format!("c{i}-{}.mtf", how.replace(' ', "")));
            let o = out_path.to_str().unwrap();
            let d = dtd.to_str().unwrap();
            let (out, name) = match how {
                "file" => (
                    util::mtf(&["pack", "--dtd", d, plain.to_str().unwrap(), "-o", o]),
                    plain.to_str().unwrap().to_string(),
                ),
                "file -j 1" | "file -j 2" => {
                    let j = &how[8..];
                    let args = [
                        "pack",
                        "-j",
                        j,
                        "--dtd",
                        d,
                        plain.to_str().unwrap(),
                        "-o",
                        o,
                    ];
                    (util::mtf(&args), plain.to_str().unwrap().to_string())
                }
                "gz" => (
                    util::mtf(&["pack", "--dtd", d, gz.to_str().unwrap(), "-o", o]),
                    gz.to_str().unwrap().to_string(),
                ),
                "-" => (
                    util::mtf_stdin(&["pack", "--dtd", d, "-", "-o", o], case),
                    "-".to_string(),
                ),
                _ => {
                    let fifo = dir.path().join(format!("c{i}.fifo"));
                    let made = std::process::Command::new("mkfifo")
                        .arg(&fifo)
                        .status()
                        .unwrap();
                    assert!(made.success());
                    let f = fifo.clone();
                    let data = case.clone();
                    let writer = std::thread::spawn(move || {
                        let _ = std::fs::write(&f, &data);
                    });
                    let out = util::mtf(&["pack", "--dtd", d, fifo.to_str().unwrap(), "-o", o]);
                    writer.join().unwrap();
                    (out, fifo.to_str().unwrap().to_string())
                }
            };
            let stderr = util::text(&out.stderr);
            match &want {
                Ok(bytes) => {
                    assert!(out.status.success(), "case {i} from {how}: {stderr}");
                    assert_eq!(
                        &std::fs::read(&out_path).unwrap(),
                        bytes,
                        "case {i} from {how}"
                    );
                }
                Err(e) => {
                    assert_eq!(out.status.code(), Some(1), "case {i} from {how}: {stderr}");
                    assert!(
                        stderr.contains(&format!("{name}:{e}")),
                        "case {i} from {how}: want {name}:{e}, got {stderr}"
                    );
                    assert!(!out_path.exists(), "case {i} from {how}: nothing written");
                }
            }
        }
    }
}

/// A random text of the metadata-heavy DTD (benches/bench-metadata.dtd): records with byte
/// strings (plain, and now and then with an escape, a tab or UTF-8, which the full parser
/// reads), and one line in six a metadata line (`delta`, `default`, `width`, `none`,
/// `baseOffset`, `stride`, in decimal, hex or negative, and now and then one the writer or the
/// parser refuses: a width past 8, an unknown field or record or property, an argument too
/// many or too few).
fn random_metadata_text(rng: &mut Rng, records: usize) -> String {
    let mut t = String::from(
        "%mtf 1 dtd=\"bench-metadata.dtd\" class=64 order=little\nsection number=1:heap\n",
    );
    let base = 0x7f00_0000_0000u64;
    for r in ["alloc", "realloc", "free"] {
        t += &format!("metadata {r}.address delta {base}\n");
    }
    t += &format!("metadata realloc.old delta {base:#x}\n");
    let (mut time, mut thread) = (0u64, 0u64);
    let letters = b"abcdefghijklmnopqrstuvwxyz";
    // A third of the texts hold what the writer or the parser refuses, now and then.
    let refusing = rng.chance(33);
    for _ in 0..records {
        let r = ["alloc", "realloc", "free"][rng.below(3) as usize];
        if rng.chance(17) {
            let kind = if refusing && rng.chance(10) {
                15 + rng.below(9)
            } else {
                rng.below(15)
            };
            let line = match kind {
                0..=5 => {
                    thread = rng.below(4);
                    ["alloc", "realloc", "free"]
                        .map(|r| format!("metadata {r}.thread default {thread}"))
                        .join("\n")
                }
                6..=9 => format!("metadata {r}.time delta {}", time),
                10..=12 => format!(
                    "metadata {r}.address delta {:#x}",
                    base + rng.below(64) * 16
                ),
                13 => format!("metadata {r}.heap default 0"),
                14 => [
                    format!("metadata {r}.heap none"),
                    format!("metadata {r}.heap baseOffset 0"),
                    format!("metadata {r}.heap stride 0 0"),
                    format!("metadata {r}.size width {}", [4, 8][rng.below(2) as usize]),
                ][rng.below(4) as usize]
                    .clone(),
                15 => format!("metadata {r}.size width 9"),
                16 => format!("metadata {r}.nosuch width 2"),
                17 => "metadata nosuch.size width 2".to_string(),
                18 => format!("metadata {r}.time delta -{}", rng.below(3)),
                19 => format!("metadata {r}.size width 1"),
                20 => format!("metadata {r}.heap stride 0 1"),
                21 => format!("metadata {r}.time delta 1 2"),
                22 => format!("metadata {r}.time delta"),
                _ => format!("metadata {r}.time sideways 1"),
            };
            t += &line;
            t += "\n";
            continue;
        }
        time += rng.below(200);
        let address = base + rng.below(1 << 12) * 16;
        let size = rng.below(1 << 15);
        let n = rng.below(12) as usize;
        let mut note: String = (0..n)
            .map(|_| letters[rng.below(26) as usize] as char)
            .collect();
        let mut len = n;
        match rng.below(40) {
            0 => {
                note += "\\x41";
                len += 1;
            }
            1 => {
                note += "\t";
                len += 1;
            }
            2 => {
                note += "\u{e9}";
                len += 2;
            }
            3 => {
                note += "\\\"";
                len += 1;
            }
            4 if refusing => len += 1,
            _ => {}
        }
        let common = format!("time={time} thread={thread} heap=0");
        let line = match r {
            "alloc" => format!(
                "alloc size={size} address={address:#x} {common} note.len={len} note.data=\"{note}\""
            ),
            "free" => {
                format!("free address={address:#x} {common} note.len={len} note.data=\"{note}\"")
            }
            _ => format!(
                "realloc size={size} old={:#x} address={address:#x} {common}",
                address + 16
            ),
        };
        t += &line;
        t += "\n";
    }
    t
}

/// `case` packed with the fast reader, with the full parser alone and with the reading thread
/// (`-j 2`), text of `dtd`: the three must give the same trace or the same first error.
fn packed_three_ways(dtd: &str, case: &[u8], round: usize) -> Result<Vec<u8>, String> {
    packed_three_ways_from(dtd, case, InputFormat::Text, round)
}

/// [`packed_three_ways`] of `case` in `format` (the text form or JSON lines).
fn packed_three_ways_from(
    dtd: &str,
    case: &[u8],
    format: InputFormat,
    round: usize,
) -> Result<Vec<u8>, String> {
    let fast = pack_with(dtd, case, format, How::Fast);
    let general = pack_with(dtd, case, format, How::General);
    assert_eq!(
        fast,
        general,
        "round {round}:\n{}",
        String::from_utf8_lossy(case)
    );
    let ahead = pack_with(dtd, case, format, How::Ahead);
    assert_eq!(ahead, fast, "round {round}, -j 2");
    for k in SHARES {
        let shared = pack_with(dtd, case, format, How::Shared(k));
        assert_eq!(shared, fast, "round {round}, -j 2, {k}/16 left");
    }
    fast
}

/// `text` damaged only after line `line` (one to three edits there).
fn damage_after(rng: &mut Rng, text: &[u8], line: usize) -> Vec<u8> {
    let cut = text
        .iter()
        .enumerate()
        .filter(|&(_, &c)| c == b'\n')
        .nth(line - 1)
        .map_or(text.len(), |(i, _)| i + 1);
    // `damage` leaves its text's first line alone: the line before the cut.
    let keep = text[..cut - 1]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |i| i + 1);
    let mut t = text[..keep].to_vec();
    t.extend(damage(rng, &text[keep..]));
    t
}

/// Texts of several of the reading thread's batches (4096 lines each) with metadata lines
/// changing widths, defaults and deltas throughout (so across the batches' ends, wherever they
/// fall), whole and damaged only in a later batch: the fast reader, the full parser and every
/// share of the parse between the two threads give the same trace or the same first error; an
/// error in a later batch is reported, never one after it.
#[test]
fn sharing_the_parse_agrees_across_batches() {
    let mut rng = Rng(0x5eed_1234_abcd_0006);
    let (mut ok, mut refused) = (0, 0);
    for round in 0..12 {
        let (dtd, mut text) = if round % 2 == 0 {
            (
                "benches/bench-metadata.dtd",
                random_metadata_text(&mut rng, 9_000),
            )
        } else {
            (
                "tests/data/pack-plan.dtd",
                random_plan_text(&mut rng, 9_000),
            )
        };
        // The generators put a refused line here and there: the text up to the first one,
        // which packs whole.
        if let Err(e) = pack_with(dtd, text.as_bytes(), InputFormat::Text, How::Fast) {
            let line: usize = e.split(':').next().unwrap().parse().unwrap();
            text = text
                .lines()
                .take(line - 1)
                .map(|l| format!("{l}\n"))
                .collect();
        }
        if text.lines().count() < 8300 {
            continue;
        }
        assert!(pack_with(dtd, text.as_bytes(), InputFormat::Text, How::Fast).is_ok());
        let mut cases = vec![text.clone().into_bytes()];
        for after in [4096, 4097, 6000, 8192] {
            cases.push(damage_after(&mut rng, text.as_bytes(), after));
        }
        for case in &cases {
            match packed_three_ways(dtd, case, round) {
                Ok(_) => ok += 1,
                Err(e) => {
                    let line: usize = e.split(':').next().unwrap().parse().unwrap_or(0);
                    assert!(line > 4000, "round {round}: {e}");
                    refused += 1
                }
            }
        }
    }
    assert!(ok >= 2 && refused >= 4, "{ok} packed, {refused} refused");
}

/// Records with byte strings and metadata lines: the fast reader, the full parser and the
/// reading thread give the same trace or the same first error, on the texts and damaged.
#[test]
fn fast_strings_and_metadata_lines_read_as_the_full_parser_reads_them() {
    const MDTD: &str = "benches/bench-metadata.dtd";
    let mut rng = Rng(0x5eed_1234_abcd_0004);
    let (mut ok, mut refused) = (0, 0);
    for round in 0..60 {
        let n = 20 + rng.below(200) as usize;
        let text = random_metadata_text(&mut rng, n);
        let mut cases = vec![text.clone().into_bytes()];
        for _ in 0..6 {
            cases.push(damage(&mut rng, text.as_bytes()));
        }
        for case in &cases {
            match packed_three_ways(MDTD, case, round) {
                Ok(_) => ok += 1,
                Err(_) => refused += 1,
            }
        }
    }
    assert!(ok > 20 && refused > 100, "{ok} packed, {refused} refused");
}

/// A random text of tests/data/pack-plan.dtd: records of every interpretation whose values lie
/// at the limits of their fields' current widths (the largest and smallest that fit, signed and
/// unsigned, as a difference from a `delta`'s previous value or a `baseOffset`'s base), metadata
/// lines changing those widths and the `delta`, `baseOffset`, `stride` and `default` values
/// mid-text, byte strings of a given and a constant length, records the encoder's plan declines
/// (a fixed value, a live set), and now and then a value one past a limit (the plan declines it
/// and the general encoder refuses it) or a metadata line making a field something the plan
/// does not take.
fn random_plan_text(rng: &mut Rng, records: usize) -> String {
    let mut t = String::from("%mtf 1 dtd=\"pack-plan.dtd\" class=64 order=little\nsection 1\n");
    // The state of record `r`'s fields as the text sets it: widths of u, s, d, b; the delta's
    // previous value, the base, the stride's next value and step, the default.
    let (mut wu, mut ws, mut wd, mut wb) = (2u32, 1u32, 1u32, 1u32);
    let (mut prev, mut base, mut next, mut step, mut default) = (0u64, 1000u64, 15u64, 5u64, 7u64);
    let refusing = rng.chance(33);
    let odd = move |rng: &mut Rng| refusing && rng.chance(1);
    let letters = b"abcdefghijklmnopqrstuvwxyz";
    let word = |rng: &mut Rng, n: usize| -> String {
        (0..n)
            .map(|_| letters[rng.below(26) as usize] as char)
            .collect()
    };
    // The largest unsigned value of `w` bytes, and the signed range.
    let umax = |w: u32| {
        if w >= 8 {
            u64::MAX
        } else {
            (1u64 << (8 * w)) - 1
        }
    };
    let smin = |w: u32| {
        if w >= 8 {
            i64::MIN
        } else {
            -(1i64 << (8 * w - 1))
        }
    };
    let smax = |w: u32| {
        if w >= 8 {
            i64::MAX
        } else {
            (1i64 << (8 * w - 1)) - 1
        }
    };
    // A signed difference at the limits of `w` bytes (one past them when `past`).
    let diff = |rng: &mut Rng, w: u32, past: bool| -> i64 {
        match (rng.below(5), past && w < 8) {
            (0, true) => smax(w) + 1,
            (_, true) => smin(w) - 1,
            (0, _) => smax(w),
            (1, _) => smin(w),
            (2, _) => 0,
            (3, _) => -1,
            _ => rng.below(smax(w) as u64 / 2 + 1) as i64,
        }
    };
    // A value as the text may write it: decimal, hex, or negative where it is one as i64.
    let num = |rng: &mut Rng, v: u64| -> String {
        match rng.below(4) {
            0 => format!("{v:#x}"),
            1 if (v as i64) < 0 => (v as i64).to_string(),
            _ => v.to_string(),
        }
    };
    for _ in 0..records {
        if rng.chance(15) {
            let w = 1 + rng.below(8) as u32;
            let line = match rng.below(if refusing { 10 } else { 8 }) {
                0 => {
                    wu = w;
                    format!("metadata r.u width {w}")
                }
                1 => {
                    ws = w;
                    format!("metadata r.s width {w}")
                }
                2 => {
                    wd = w;
                    format!("metadata r.d width {w}")
                }
                3 => {
                    wb = w;
                    format!("metadata r.b width {w}")
                }
                4 => {
                    prev = rng.next();
                    format!("metadata r.d delta {prev}")
                }
                5 => {
                    base = rng.below(1 << 40);
                    format!("metadata r.b baseOffset {base}")
                }
                6 => {
                    let initial = rng.below(1000);
                    step = rng.below(100);
                    next = initial + step;
                    format!("metadata r.k stride {initial} {step}")
                }
                7 => {
                    default = rng.next();
                    format!("metadata r.f default {default}")
                }
                // Fields the plan does not take: a live set, a reference to a section.
                8 => "metadata r.u live 1".to_string(),
                _ => "metadata r.s sectionStride 1 1".to_string(),
            };
            t += &line;
            t += "\n";
            continue;
        }
        match rng.below(20) {
            0 => {
                let x = if odd(rng) { 4 } else { 3 };
                t += &format!("fx u={} x={x}\n", rng.below(1 << 16));
                continue;
            }
            1 => {
                t += &format!("ls key={}\n", rng.below(1 << 32));
                continue;
            }
            _ => {}
        }
        let u = match (rng.below(4), odd(rng) && wu < 8) {
            (_, true) => umax(wu) + 1,
            (0, _) => umax(wu),
            (1, _) => 0,
            _ => rng.below(umax(wu).min(1 << 62)),
        };
        let past = [odd(rng), odd(rng), odd(rng)];
        let s = diff(rng, ws, past[0]) as u64;
        let d = prev.wrapping_add(diff(rng, wd, past[1]) as u64);
        prev = d;
        let b = base.wrapping_add(diff(rng, wb, past[2]) as u64);
        let k = if odd(rng) { next + 1 } else { next };
        next += step;
        let f = if odd(rng) { default ^ 1 } else { default };
        let n = rng.below(12) as usize;
        let len = if odd(rng) { n + 1 } else { n };
        let tn = if odd(rng) { 9 } else { 10 };
        t += &format!(
            "r u={} s={} d={} b={} k={} f={} len={len} data=\"{}\" t=\"{}\"\n",
            num(rng, u),
            num(rng, s),
            num(rng, d),
            num(rng, b),
            num(rng, k),
            num(rng, f),
            word(rng, n),
            word(rng, tn)
        );
    }
    t
}

/// The encoder's plan for records of plain fields (src/encode/encoder.rs, `FastPlan`) writes
/// what the general encoder writes, and where it declines (a value one past its width, not the
/// default or the stride's next, a string of another length, a fixed value, a live set, a
/// field switched to an interpretation it does not take) the general encoder reports it, at
/// the same line and column: the fast reader, the full parser and the reading thread give the
/// same trace or the same first error, on the texts and damaged.
#[test]
fn the_encoders_plan_writes_what_the_general_encoder_writes() {
    const PDTD: &str = "tests/data/pack-plan.dtd";
    let mut rng = Rng(0x5eed_1234_abcd_0005);
    let (mut ok, mut refused) = (0, 0);
    let mut lines = 0;
    for round in 0..80 {
        let n = 20 + rng.below(300) as usize;
        let text = random_plan_text(&mut rng, n);
        let mut cases = vec![text.clone().into_bytes()];
        for _ in 0..4 {
            cases.push(damage(&mut rng, text.as_bytes()));
        }
        for case in &cases {
            match packed_three_ways(PDTD, case, round) {
                Ok(_) => {
                    ok += 1;
                    lines += case.iter().filter(|&&c| c == b'\n').count();
                }
                Err(_) => refused += 1,
            }
        }
    }
    // Whole texts packed (every limit written), and refusals met, many times.
    assert!(
        ok > 40 && refused > 100 && lines > 5_000,
        "{ok} packed ({lines} lines), {refused} refused"
    );
}

/// The trace the plan writes decodes to the values written: every limit of every width read
/// back by `mtf dump` as the text gave it.
#[test]
fn values_at_the_limits_of_their_widths_pack_and_dump_back() {
    let dir = util::tempdir();
    let dtd = util::root().join("tests/data/pack-plan.dtd");
    let mut text =
        String::from("%mtf 1 dtd=\"pack-plan.dtd\" class=64 order=little\nsection number=1:plan\n");
    let mut want = Vec::new();
    for w in 1..=8u32 {
        text += &format!("metadata r.u width {w}\nmetadata r.s width {w}\n");
        text += &format!("metadata r.d width {w}\nmetadata r.b width {w}\n");
        let umax = if w == 8 {
            u64::MAX
        } else {
            (1u64 << (8 * w)) - 1
        };
        let (smin, smax) = if w == 8 {
            (i64::MIN, i64::MAX)
        } else {
            (-(1i64 << (8 * w - 1)), (1i64 << (8 * w - 1)) - 1)
        };
        for (u, s) in [(umax, smin), (0, smax), (umax - 1, -1)] {
            want.push((u, s));
            text +=
                &format!("r u={u} s={s} d=0 b=1000 k=15 f=7 len=0 data=\"\" t=\"0123456789\"\n");
            text += "metadata r.k stride 10 5\n";
        }
    }
    let p = dir.path().join("limits.txt");
    std::fs::write(&p, &text).unwrap();
    let o = dir.path().join("limits.mtf");
    let d = dtd.to_str().unwrap();
    let out = util::mtf(&[
        "pack",
        "--dtd",
        d,
        p.to_str().unwrap(),
        "-o",
        o.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", util::text(&out.stderr));
    let back = util::mtf(&["dump", "--dtd", d, o.to_str().unwrap()]);
    assert!(back.status.success(), "{}", util::text(&back.stderr));
    let got: Vec<(u64, i64)> = util::text(&back.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("r "))
        .map(|l| {
            let field = |k: &str| {
                l.split(' ')
                    .find_map(|f| f.strip_prefix(&format!("{k}=")))
                    .unwrap()
                    .to_string()
            };
            (field("u").parse().unwrap(), field("s").parse().unwrap())
        })
        .collect();
    assert_eq!(got, want);
    // One past each limit is refused, naming the line and the field's column.
    let rest = "b=1000 k=15 f=7 len=0 data=\"\" t=\"0123456789\"";
    for (line, col) in [
        (format!("r u=256 s=1 d=0 {rest}"), 3),
        (format!("r u=1 s=128 d=0 {rest}"), 7),
        (format!("r u=1 s=-129 d=0 {rest}"), 7),
        (format!("r u=1 s=1 d=128 {rest}"), 11),
        (format!("r u=1 s=1 d=-129 {rest}"), 11),
    ] {
        let text = format!(
            "%mtf 1 dtd=\"pack-plan.dtd\" class=64 order=little\nsection 1\nmetadata r.u width 1\n{line}\n"
        );
        std::fs::write(&p, &text).unwrap();
        let _ = std::fs::remove_file(&o);
        let out = util::mtf(&[
            "pack",
            "--dtd",
            d,
            p.to_str().unwrap(),
            "-o",
            o.to_str().unwrap(),
        ]);
        let stderr = util::text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{line}: {stderr}");
        assert!(
            stderr.contains(&format!("limits.txt:4:{col}:")),
            "{line}: {stderr}"
        );
        assert!(!o.exists());
    }
}
