//! Test helper: hand-assembled container bytes, field by field, with no validation, so tests can
//! break any one rule.

/// A trace header and section table as raw integers; `bytes()` lays them out literally.
#[derive(Debug, Clone)]
pub struct Raw {
    pub magic: [u8; 4],
    pub class: u8,
    pub order: u8,
    /// `None`: the actual name length.
    pub dtdlength: Option<u8>,
    pub intwidth: u8,
    pub reserved: [u8; 8],
    /// `None`: the number of `sections`.
    pub nsections: Option<u64>,
    /// `None`: the end of the section table.
    pub start: Option<u64>,
    pub nrecords: u64,
    pub dtd: Vec<u8>,
    /// `(sh_number, sh_start, sh_size)`; `sh_start` relative to the computed start when
    /// `relative` is set.
    pub sections: Vec<(u64, u64, u64)>,
    pub relative: bool,
    /// Bytes of records appended after the table.
    pub body_len: usize,
}

impl Default for Raw {
    fn default() -> Raw {
        Raw {
            magic: *b"\x7FMTF",
            class: 1,
            order: 1,
            dtdlength: None,
            intwidth: 0,
            reserved: [0; 8],
            nsections: None,
            start: None,
            nrecords: 0,
            dtd: b"t.dtd".to_vec(),
            sections: Vec::new(),
            relative: true,
            body_len: 0,
        }
    }
}

impl Raw {
    /// W for the header integers (4 unless intwidth is 8).
    pub fn w(&self) -> usize {
        if self.intwidth == 8 {
            8
        } else {
            4
        }
    }

    /// Offset of the section header table.
    pub fn header_len(&self) -> u64 {
        16 + 3 * self.w() as u64 + self.dtd.len() as u64
    }

    /// End of the section header table.
    pub fn table_end(&self) -> u64 {
        self.header_len() + (self.sections.len() * 3 * self.w()) as u64
    }

    pub fn bytes(&self) -> Vec<u8> {
        let w = self.w();
        let big = self.order == 2;
        let put = |out: &mut Vec<u8>, v: u64| {
            let b = if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            };
            if big {
                out.extend_from_slice(&b[8 - w..]);
            } else {
                out.extend_from_slice(&b[..w]);
            }
        };
        let start = self.start.unwrap_or(self.table_end());
        let mut out = Vec::new();
        out.extend_from_slice(&self.magic);
        out.push(self.class);
        out.push(self.order);
        out.push(self.dtdlength.unwrap_or(self.dtd.len() as u8));
        out.push(self.intwidth);
        out.extend_from_slice(&self.reserved);
        put(
            &mut out,
            self.nsections.unwrap_or(self.sections.len() as u64),
        );
        put(&mut out, start);
        put(&mut out, self.nrecords);
        out.extend_from_slice(&self.dtd);
        let base = if self.relative { self.table_end() } else { 0 };
        for &(n, s, z) in &self.sections {
            put(&mut out, n);
            put(&mut out, base + s);
            put(&mut out, z);
        }
        out.resize(out.len() + self.body_len, 0xAA);
        out
    }
}
