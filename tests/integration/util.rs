//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use metatf::container::{ByteOrder, Class, Header};
use metatf::dtd::Schema;

/// The repository root (these tests belong to crates/mtf, two folders down).
pub fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .canonicalize()
        .unwrap()
}

/// Load and resolve a DTD from the repository, panicking with its diagnostics on failure.
pub fn schema(rel: &str) -> Schema {
    let path = root().join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    match metatf::dtd::parse_str(rel, &text) {
        Ok(l) => l.schema,
        Err(e) => panic!("{rel}: {}", metatf::dtd::render_plain(&e)),
    }
}

/// Assemble a trace: header (class 1, little-endian, DTD `dtd`), global records, then sections
/// given as (id, bytes including the section record).
pub fn assemble(dtd: &str, nrecords: u64, global: &[u8], sections: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let table: Vec<(u8, u64)> = sections
        .iter()
        .map(|(id, b)| (*id, b.len() as u64))
        .collect();
    let mut out = Header::encode(
        Class::Bits32,
        ByteOrder::Little,
        dtd,
        nrecords,
        global.len() as u64,
        &table,
    )
    .unwrap();
    out.extend_from_slice(global);
    for (_, b) in sections {
        out.extend_from_slice(b);
    }
    out
}

/// Run `mtf` with arguments.
pub fn mtf(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mtf"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap()
}

/// Run `mtf` with arguments and standard input.
pub fn mtf_stdin(args: &[&str], stdin: &[u8]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mtf"));
    cmd.args(args).current_dir(root());
    output_with_stdin(&mut cmd, stdin)
}

/// Run `cmd` with `stdin` written to its standard input through a pipe (from a thread, so that
/// a command that writes much before it has read everything does not block), its output
/// collected.
pub fn output_with_stdin(cmd: &mut Command, stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let t = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    t.join().unwrap();
    out
}

/// Run `mtf pack --dtd DTD - -o OUT` on `input`, with OUT in a fresh temporary folder; returns
/// the output and OUT (the folder lives as long as the returned guard).
pub fn pack_stdin(dtd: &str, input: &[u8]) -> (Output, PathBuf, tempfile::TempDir) {
    let dir = tempdir();
    let out_path = dir.path().join("x.mtf");
    let out = mtf_stdin(
        &["pack", "--dtd", dtd, "-", "-o", out_path.to_str().unwrap()],
        input,
    );
    (out, out_path, dir)
}

/// Compare `actual` with the golden file `rel`; rewrite it when `MTF_BLESS=1`.
pub fn golden(rel: &str, actual: &str) {
    let path = root().join(rel);
    if std::env::var_os("MTF_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing golden file {rel}; run with MTF_BLESS=1 to create it"));
    if expected != actual {
        panic!(
            "{rel} differs from the output (run with MTF_BLESS=1 to accept, and review the diff):\n--- expected\n{expected}\n--- actual\n{actual}"
        );
    }
}

/// A temporary directory for a test.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// Text of an output stream.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A small deterministic generator (xorshift64*) for the property tests' random DTDs and traces.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
}

/// `data` compressed as `kind` says: `gz`, `zst`, `xz` or `bz2` (fast levels).
pub fn compress(kind: &str, data: &[u8]) -> Vec<u8> {
    match kind {
        "gz" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            std::io::Write::write_all(&mut e, data).unwrap();
            e.finish().unwrap()
        }
        "zst" => zstd::encode_all(data, 1).unwrap(),
        "xz" => {
            let mut e = xz2::write::XzEncoder::new(Vec::new(), 1);
            std::io::Write::write_all(&mut e, data).unwrap();
            e.finish().unwrap()
        }
        "bz2" => {
            let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
            std::io::Write::write_all(&mut e, data).unwrap();
            e.finish().unwrap()
        }
        _ => unreachable!(),
    }
}

/// Imports `src` into `dir` (as `dir/NAME.mtf`, NAME the source's file name), with the mapping
/// `from` or the one `mtf import` detects; the import must succeed.
pub fn import_into(dir: &Path, src: &Path, from: Option<&str>) -> PathBuf {
    let t = dir.join(format!(
        "{}.mtf",
        src.file_name().unwrap().to_string_lossy()
    ));
    let mut args = vec!["import"];
    if let Some(f) = from {
        args.extend(["--from", f]);
    }
    args.extend([src.to_str().unwrap(), "-o", t.to_str().unwrap()]);
    let o = mtf(&args);
    assert!(o.status.success(), "{}: {}", src.display(), text(&o.stderr));
    t
}
