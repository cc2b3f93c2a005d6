use super::spool::SPOOL_CHUNK;
use super::*;
use crate::io::testutil::TestDir;
use std::io::Write;

fn sample(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 % 251) as u8).collect()
}

#[test]
fn regular_files_are_mapped_exactly() {
    let dir = TestDir::new("in-map");
    let path = dir.0.join("t.bin");
    let data = sample(10_000);
    std::fs::write(&path, &data).unwrap();
    let input = Input::open(&path).unwrap();
    assert!(input.is_mapped());
    assert!(!input.is_stdin());
    assert_eq!(input.bytes(), &data[..]);
    assert_eq!(input.compression(), None);
    assert_eq!(input.path(), path);
    assert!(matches!(
        TraceData::from(input.into_data()),
        TraceData::Mmap(_)
    ));
}

#[test]
fn empty_files_are_not_mapped() {
    let dir = TestDir::new("in-empty");
    let path = dir.0.join("empty");
    std::fs::write(&path, b"").unwrap();
    let input = Input::open(&path).unwrap();
    assert!(!input.is_mapped());
    assert!(input.bytes().is_empty());
}

#[cfg(target_os = "linux")]
#[test]
fn proc_files_of_size_zero_are_read() {
    let input = Input::open("/proc/self/status").unwrap();
    assert!(!input.is_mapped());
    assert!(input.bytes().starts_with(b"Name:"));
}

#[cfg(unix)]
#[test]
fn fifos_and_devices_are_read_with_a_cap() {
    let dir = TestDir::new("in-fifo");
    let fifo = dir.0.join("fifo");
    crate::io::testutil::mkfifo(&fifo);
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, sample(5000)).unwrap())
    };
    let input = Input::open(&fifo).unwrap();
    writer.join().unwrap();
    assert!(!input.is_mapped());
    assert_eq!(input.bytes(), &sample(5000)[..]);

    // /dev/zero never ends: the cap stops it, and the error names the path and the cap.
    let err = Input::open_with_cap("/dev/zero", 1 << 20).unwrap_err();
    assert!(matches!(err, IoError::InputTooLarge { cap, .. } if cap == 1 << 20));
    let msg = err.to_string();
    assert!(
        msg.contains("/dev/zero") && msg.contains("1048576"),
        "{msg}"
    );
    // Exactly at the cap is fine, in memory and spooled.
    let f = Path::new("f");
    for spool_above in [0, 10, 1000] {
        let options = InputOptions::new().cap(100).spool_above(spool_above);
        let (data, _) = drain(&sample(100)[..], f, None, &options).unwrap();
        assert_eq!(data.bytes(), &sample(100)[..]);
        assert_eq!(
            matches!(data, InputData::Spooled(_)),
            cfg!(unix) && spool_above < 100
        );
        let err = drain(&sample(101)[..], f, None, &options).unwrap_err();
        assert!(matches!(err, IoError::InputTooLarge { cap: 100, .. }));
    }
}

/// Gives `len` bytes of [`sample`]'s pattern without holding them.
struct Pattern {
    at: usize,
    len: usize,
}

impl Read for Pattern {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.len - self.at).min(100_000);
        for (i, b) in buf[..n].iter_mut().enumerate() {
            *b = ((self.at + i) * 7 % 251) as u8;
        }
        self.at += n;
        Ok(n)
    }
}

#[cfg(unix)]
#[test]
fn long_streams_are_spooled_to_an_unlinked_file() {
    let dir = TestDir::new("in-spool");
    let options = InputOptions::new().spool_above(4096).spool_dir(&dir.0);
    let f = Path::new("f");
    // Short: in memory, no file.
    let (data, _) = drain(Pattern { at: 0, len: 4096 }, f, None, &options).unwrap();
    assert!(matches!(data, InputData::Owned(_)));
    // Long: mapped from a file that is already gone from the folder.
    let len = 3 * SPOOL_CHUNK + 5;
    let (data, fault) = drain(Pattern { at: 0, len }, f, None, &options).unwrap();
    assert!(fault.is_none());
    assert!(matches!(data, InputData::Spooled(_)));
    assert_eq!(data.bytes(), &sample(len)[..]);
    assert!(dir.entries().is_empty(), "{:?}", dir.entries());
    // The trace releases its pages as a mapped file's.
    assert!(matches!(TraceData::from(data), TraceData::Mmap(_)));
    // Over the cap while spooling: an error, and nothing left behind.
    let capped = options.clone().cap(SPOOL_CHUNK as u64 + 1);
    let err = drain(Pattern { at: 0, len }, f, None, &capped).unwrap_err();
    assert!(matches!(err, IoError::InputTooLarge { .. }), "{err:?}");
    assert!(dir.entries().is_empty());
    // No temporary folder: a typed error naming it.
    let missing = options.clone().spool_dir(dir.0.join("nope"));
    let err = drain(Pattern { at: 0, len }, f, None, &missing).unwrap_err();
    assert!(matches!(err, IoError::TempFile { .. }), "{err:?}");
    assert!(err.to_string().contains("nope"), "{err}");
}

/// The file system refuses to grow the spool (as when the disk fills): `IoError::Spool`,
/// naming the input and the folder, with the disk use in its help.
#[cfg(unix)]
#[test]
#[ignore = "run in a child process by a_full_disk_is_a_spool_error"]
fn child_spool_fsize() {
    if !crate::io::testutil::is_child() {
        return;
    }
    let dir = PathBuf::from(std::env::var_os(crate::io::testutil::CHILD_VAR).unwrap());
    // SAFETY: plain libc calls with valid arguments; the child runs this test alone.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let limit = libc::rlimit {
            rlim_cur: 1 << 20,
            rlim_max: 1 << 20,
        };
        libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
    }
    let options = InputOptions::new().spool_above(0).spool_dir(&dir);
    let err = drain(
        Pattern {
            at: 0,
            len: 3 << 20,
        },
        Path::new("in.zst"),
        None,
        &options,
    )
    .unwrap_err();
    let help = miette::Diagnostic::help(&err).map(|h| h.to_string());
    let ok = matches!(err, IoError::Spool { written, .. } if written > 0)
        && err.to_string().contains("in.zst")
        && help.is_some_and(|h| h.contains("TMPDIR") && h.contains("free space"));
    let left = std::fs::read_dir(&dir).unwrap().count();
    std::process::exit(if ok && left == 0 { 3 } else { 4 });
}

#[cfg(unix)]
#[test]
fn a_full_disk_is_a_spool_error() {
    let dir = TestDir::new("in-spool-full");
    crate::io::testutil::child_leaves_folder_empty("io::input::tests::child_spool_fsize", &dir);
}

#[test]
fn errors_name_the_path() {
    let dir = TestDir::new("in-errors");
    let missing = dir.0.join("missing.mtf");
    let err = Input::open(&missing).unwrap_err();
    assert!(matches!(err, IoError::Open { .. }), "{err:?}");
    assert!(err.to_string().contains("missing.mtf"), "{err}");
    let err = Input::open(&dir.0).unwrap_err();
    assert!(matches!(err, IoError::IsFolder { .. }), "{err:?}");
    assert!(matches!(
        Input::reader(&missing).err().unwrap(),
        IoError::Open { .. }
    ));
}

#[test]
fn shipped_trace_converts_into_a_trace() {
    let input = Input::open("traces/hatf-le32.mtf").unwrap();
    let trace = input.into_trace().unwrap();
    assert!(trace.bytes().starts_with(b"\x7fMTF"));
}

#[test]
fn detection_needs_the_full_magic() {
    assert_eq!(
        Compression::detect(b"\x1f\x8b\x08\0"),
        Some(Compression::Gzip)
    );
    assert_eq!(Compression::detect(b"\x1f\x8b\x07\0"), None);
    assert_eq!(Compression::detect(b"BZh is a word"), None);
    assert_eq!(Compression::detect(b"BZh9"), None);
    assert_eq!(
        Compression::detect(b"BZh91AY&SY..."),
        Some(Compression::Bzip2)
    );
    assert_eq!(Compression::detect(b"\x7fMTF"), None);
    assert_eq!(Compression::detect(b""), None);
}

#[test]
fn plain_text_streams_line_by_line() {
    let dir = TestDir::new("in-text");
    let path = dir.0.join("lines.txt");
    std::fs::write(&path, "a\nBZh\nc").unwrap();
    let lines: Vec<String> = Input::reader(&path)
        .unwrap()
        .lines()
        .map(Result::unwrap)
        .collect();
    assert_eq!(lines, ["a", "BZh", "c"]);
    let short = dir.0.join("short.txt");
    std::fs::write(&short, "x").unwrap();
    let mut s = String::new();
    Input::reader(&short)
        .unwrap()
        .read_to_string(&mut s)
        .unwrap();
    assert_eq!(s, "x");
}

#[cfg(feature = "compression")]
mod compressed {
    use super::*;

    fn compress(format: Compression, data: &[u8]) -> Vec<u8> {
        match format {
            Compression::Gzip => {
                let mut e =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
            Compression::Zstd => zstd::stream::encode_all(data, 3).unwrap(),
            Compression::Xz => {
                let mut e = xz2::write::XzEncoder::new(Vec::new(), 6);
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
            Compression::Bzip2 => {
                let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
                e.write_all(data).unwrap();
                e.finish().unwrap()
            }
        }
    }

    const ALL: [Compression; 4] = [
        Compression::Gzip,
        Compression::Zstd,
        Compression::Xz,
        Compression::Bzip2,
    ];

    #[test]
    fn each_format_is_detected_and_decompressed() {
        let dir = TestDir::new("in-compressed");
        let text: Vec<u8> = (0..2000)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        for format in ALL {
            for (name, data) in [("text", text.clone()), ("empty", Vec::new())] {
                let packed = compress(format, &data);
                assert_eq!(Compression::detect(&packed), Some(format), "{format}");
                // A misleading name: detection is by content.
                let path = dir.0.join(format!("{name}-{format}.txt"));
                std::fs::write(&path, &packed).unwrap();
                let input = Input::open(&path).unwrap();
                assert_eq!(input.compression(), Some(format));
                assert!(!input.is_mapped());
                assert_eq!(input.bytes(), &data[..], "{format} {name}");
                let mut streamed = Vec::new();
                Input::reader(&path)
                    .unwrap()
                    .read_to_end(&mut streamed)
                    .unwrap();
                assert_eq!(streamed, data, "{format} {name} streamed");
            }
        }
    }

    #[test]
    fn concatenated_streams_are_read_whole() {
        let dir = TestDir::new("in-concat");
        for format in ALL {
            let mut packed = compress(format, b"first\n");
            packed.extend(compress(format, b"second\n"));
            let path = dir.0.join(format.name());
            std::fs::write(&path, &packed).unwrap();
            assert_eq!(Input::open(&path).unwrap().bytes(), b"first\nsecond\n");
            let lines: Vec<String> = Input::reader(&path)
                .unwrap()
                .lines()
                .map(Result::unwrap)
                .collect();
            assert_eq!(lines, ["first", "second"], "{format}");
        }
    }

    #[test]
    fn compressed_streams_spool_and_salvage_alike() {
        let dir = TestDir::new("in-spool-compressed");
        let spool = dir.0.join("spool");
        std::fs::create_dir(&spool).unwrap();
        // Little redundancy, so that a stream cut at two thirds has given some output.
        let data: Vec<u8> = (0..300_000u64)
            .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 59) as u8)
            .collect();
        for format in ALL {
            let packed = compress(format, &data);
            let path = dir.0.join(format!("whole.{}", format.name()));
            std::fs::write(&path, &packed).unwrap();
            let spooled = InputOptions::new().spool_above(1000).spool_dir(&spool);
            let (input, fault) = Input::open_with(&path, &spooled).unwrap();
            assert!(fault.is_none());
            assert_eq!(input.compression(), Some(format));
            assert_eq!(input.is_spooled(), cfg!(unix), "{format}");
            assert_eq!(input.bytes(), &data[..], "{format}");
            // Cut short: the same error, or with salvage the same bytes, spooled or not.
            let cut = dir.0.join(format!("cut.{}", format.name()));
            std::fs::write(&cut, &packed[..packed.len() * 2 / 3]).unwrap();
            let in_memory = InputOptions::new().spool_above(u64::MAX);
            let a = Input::open_with(&cut, &in_memory).unwrap_err();
            let b = Input::open_with(&cut, &spooled).unwrap_err();
            assert_eq!(a.to_string(), b.to_string(), "{format}");
            let a = Input::open_with(&cut, &in_memory.salvage(true));
            let b = Input::open_with(&cut, &spooled.clone().salvage(true));
            match (a, b) {
                (Ok((a, fa)), Ok((b, fb))) => {
                    assert!(!a.bytes().is_empty() && data.starts_with(a.bytes()));
                    assert_eq!(a.bytes(), b.bytes(), "{format}");
                    assert!(matches!(fb, Some(IoError::Decompress { .. })), "{format}");
                    assert_eq!(fa.map(|e| e.to_string()), fb.map(|e| e.to_string()));
                }
                // Nothing came out before the fault (bzip2 decodes 900 kB blocks; the zstd
                // reader gives nothing from a read that ends in a fault): the same error.
                (Err(a), Err(b)) if format != Compression::Gzip => {
                    assert_eq!(a.to_string(), b.to_string())
                }
                (a, b) => panic!("{format}: {a:?} / {b:?}"),
            }
        }
        assert!(dir.entries().iter().all(|e| !e.starts_with(".mtf")));
        assert_eq!(std::fs::read_dir(&spool).unwrap().count(), 0);
    }

    #[test]
    fn decompression_is_capped() {
        let dir = TestDir::new("in-bomb");
        let path = dir.0.join("bomb");
        std::fs::write(&path, compress(Compression::Zstd, &vec![0; 1 << 20])).unwrap();
        let err = Input::open_with_cap(&path, 1000).unwrap_err();
        assert!(
            matches!(err, IoError::InputTooLarge { cap: 1000, .. }),
            "{err:?}"
        );
    }

    #[test]
    fn corrupt_streams_name_the_path_and_format() {
        let dir = TestDir::new("in-corrupt");
        for format in ALL {
            let mut packed = compress(format, &sample(50_000));
            let n = packed.len();
            packed.truncate(n / 2);
            let path = dir.0.join(format!("cut.{}", format.name()));
            std::fs::write(&path, &packed).unwrap();
            let err = Input::open(&path).unwrap_err();
            assert!(
                matches!(err, IoError::Decompress { format: f, .. } if f == format),
                "{format}: {err:?}"
            );
            assert!(err.to_string().contains(format.name()), "{err}");
            let mut sink = Vec::new();
            let e = Input::reader(&path)
                .unwrap()
                .read_to_end(&mut sink)
                .unwrap_err();
            let inner = e.get_ref().and_then(|e| e.downcast_ref::<IoError>());
            assert!(
                matches!(inner, Some(IoError::Decompress { .. })),
                "{format}: {e:?}"
            );
        }
    }
}

#[cfg(not(feature = "compression"))]
#[test]
fn without_the_feature_compressed_inputs_are_refused() {
    let dir = TestDir::new("in-nofeature");
    let path = dir.0.join("x.gz");
    std::fs::write(&path, b"\x1f\x8b\x08\0\0\0\0\0\0\x03").unwrap();
    let err = Input::open(&path).unwrap_err();
    assert!(
        matches!(err, IoError::NoCompressionSupport { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("without compression support"));
    assert!(Input::reader(&path).is_err());
}

/// In a child: maps the file named by the child variable, truncates it, touches a lost page.
#[cfg(unix)]
#[test]
#[ignore = "run in a child process by sigbus_guard_reports_a_shrunk_file"]
fn child_sigbus() {
    if !crate::io::testutil::is_child() {
        return;
    }
    let path = PathBuf::from(std::env::var_os(crate::io::testutil::CHILD_VAR).unwrap());
    install_sigbus_guard().unwrap();
    let input = Input::open(&path).unwrap();
    assert!(input.is_mapped());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(0)
        .unwrap();
    // SAFETY: in bounds of the map; the page behind it is gone, which is the point.
    let byte = unsafe { std::ptr::read_volatile(&input.bytes()[3 * 4096]) };
    // Not reached: SIGBUS exits with status 2.
    std::process::exit(i32::from(byte) + 10);
}

#[cfg(unix)]
#[test]
fn sigbus_guard_reports_a_shrunk_file() {
    let dir = TestDir::new("in-sigbus");
    let path = dir.0.join("shrinks.mtf");
    std::fs::write(&path, vec![1u8; 4 * 65536]).unwrap();
    let out = crate::io::testutil::run_child(
        "io::input::tests::child_sigbus",
        path.to_str().unwrap(),
        std::process::Stdio::null(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{:?} {stderr}", out.status);
    assert!(
        stderr.contains("mtf: error: the input file shrank while it was being read (SIGBUS)"),
        "{stderr}"
    );
}
