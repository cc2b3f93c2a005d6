//! The private spool format of routed records (docs/mappings.md, `record R section S …`):
//! records routed to a section of their own are written here while importing and read back,
//! in order, when the section is written after the data sections.
//!
//! A record is its plan (u32), the number of values (u16), then each value: a kind byte
//! (0 integer, 1 section offset: a u64 follows; 2 byte string: a u32 length and the bytes);
//! everything little endian. The format lives only in a temporary file of one import, so it
//! has no version; a reader still checks every length, so a damaged spool is an error, not a
//! panic.

use std::io::{self, Read, Write};

use super::sink::{PlanId, Value};

const INT: u8 = 0;
const OFFSET: u8 = 1;
const BYTES: u8 = 2;

/// Append one record to a spool.
pub(crate) fn write(w: &mut impl Write, plan: PlanId, values: &[Value<'_>]) -> io::Result<()> {
    let plan = u32::try_from(plan).map_err(|_| invalid("plan number out of range"))?;
    let n = u16::try_from(values.len()).map_err(|_| invalid("too many values"))?;
    w.write_all(&plan.to_le_bytes())?;
    w.write_all(&n.to_le_bytes())?;
    for v in values {
        match v {
            Value::Int(x) => {
                w.write_all(&[INT])?;
                w.write_all(&x.to_le_bytes())?;
            }
            Value::Offset(x) => {
                w.write_all(&[OFFSET])?;
                w.write_all(&x.to_le_bytes())?;
            }
            Value::Bytes(b) => {
                let len = u32::try_from(b.len()).map_err(|_| invalid("byte string too long"))?;
                w.write_all(&[BYTES])?;
                w.write_all(&len.to_le_bytes())?;
                w.write_all(b)?;
            }
        }
    }
    Ok(())
}

fn invalid(m: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("routed-record spool: {m}"),
    )
}

/// Reads the records of a spool back, one at a time, into a buffer it reuses.
pub(crate) struct SpoolReader<R> {
    r: R,
    /// The values of the current record, still encoded (kind byte, then the value).
    data: Vec<u8>,
    n: usize,
}

impl<R: Read> SpoolReader<R> {
    /// Read a spool from its start.
    pub(crate) fn new(r: R) -> SpoolReader<R> {
        SpoolReader {
            r,
            data: Vec::new(),
            n: 0,
        }
    }

    /// Read the next record: its plan, or `None` at the end of the spool.
    pub(crate) fn next_record(&mut self) -> io::Result<Option<PlanId>> {
        let mut first = [0u8; 1];
        loop {
            match self.r.read(&mut first) {
                Ok(0) => return Ok(None),
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let mut head = [0u8; 6];
        head[0] = first[0];
        self.r.read_exact(&mut head[1..])?;
        let plan = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as PlanId;
        self.n = u16::from_le_bytes([head[4], head[5]]) as usize;
        self.data.clear();
        for _ in 0..self.n {
            let mut kind = [0u8; 1];
            self.r.read_exact(&mut kind)?;
            self.data.push(kind[0]);
            match kind[0] {
                INT | OFFSET => {
                    let mut w = [0u8; 8];
                    self.r.read_exact(&mut w)?;
                    self.data.extend_from_slice(&w);
                }
                BYTES => {
                    let mut w = [0u8; 4];
                    self.r.read_exact(&mut w)?;
                    self.data.extend_from_slice(&w);
                    let len = u32::from_le_bytes(w) as u64;
                    let at = self.data.len();
                    let got = (&mut self.r).take(len).read_to_end(&mut self.data)?;
                    if (got as u64) < len {
                        return Err(invalid("a byte string ends early"));
                    }
                    debug_assert_eq!(self.data.len(), at + len as usize);
                }
                _ => return Err(invalid("unknown value kind")),
            }
        }
        Ok(Some(plan))
    }

    /// The values of the record read last (checked when it was read).
    pub(crate) fn values(&self) -> Vec<Value<'_>> {
        let mut out = Vec::with_capacity(self.n);
        let mut d = &self.data[..];
        while let Some((&kind, rest)) = d.split_first() {
            if kind == BYTES {
                let Some((len, rest)) = rest.split_first_chunk::<4>() else {
                    break;
                };
                let len = u32::from_le_bytes(*len) as usize;
                let (b, rest) = rest.split_at(len.min(rest.len()));
                out.push(Value::Bytes(b));
                d = rest;
            } else {
                let Some((x, rest)) = rest.split_first_chunk::<8>() else {
                    break;
                };
                let x = u64::from_le_bytes(*x);
                out.push(if kind == INT {
                    Value::Int(x)
                } else {
                    Value::Offset(x)
                });
                d = rest;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_back_as_written() {
        let recs: Vec<(PlanId, Vec<Value<'_>>)> = vec![
            (
                3,
                vec![Value::Int(7), Value::Bytes(b"abc"), Value::Offset(u64::MAX)],
            ),
            (0, vec![]),
            (70_000, vec![Value::Bytes(b""), Value::Int(0)]),
        ];
        let mut buf = Vec::new();
        for (p, v) in &recs {
            write(&mut buf, *p, v).unwrap();
        }
        let mut r = SpoolReader::new(&buf[..]);
        for (p, v) in &recs {
            assert_eq!(r.next_record().unwrap(), Some(*p));
            assert_eq!(&r.values(), v);
        }
        assert_eq!(r.next_record().unwrap(), None);
    }

    #[test]
    fn a_damaged_spool_is_an_error_not_a_panic() {
        let mut buf = Vec::new();
        write(&mut buf, 1, &[Value::Bytes(b"hello"), Value::Int(5)]).unwrap();
        for cut in 1..buf.len() {
            let mut r = SpoolReader::new(&buf[..cut]);
            assert!(r.next_record().is_err(), "cut at {cut}");
        }
        let mut bad = buf.clone();
        bad[6] = 9; // the first value's kind
        assert!(SpoolReader::new(&bad[..]).next_record().is_err());
        let mut long = buf.clone();
        long[7] = 0xff; // the byte string's length
        assert!(SpoolReader::new(&long[..]).next_record().is_err());
    }
}
