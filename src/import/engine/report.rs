//! What an import did: counts of units mapped and kept raw, and why units were kept raw.

/// What an import did.
#[derive(Debug, Default, Clone)]
pub struct ImportReport {
    /// Units read (lines, or XML tags and text runs).
    pub units: u64,
    /// Units written as records of the format.
    pub mapped: u64,
    /// Units kept verbatim in raw-line records.
    pub raw: u64,
    /// The first few raw units: (file, line, column).
    pub first_raw: Vec<(String, u64, u64)>,
    /// Input bytes (uncompressed).
    pub bytes_in: u64,
    /// Per string table: (section, distinct strings, bytes of text held).
    pub tables: Vec<(String, usize, u64)>,
    /// ZIP entries kept verbatim.
    pub verbatim_entries: Vec<String>,
    /// Per routed section: (section, records).
    pub routed: Vec<(String, u64)>,
    /// Raw units that a rule matched but whose values could not be stored (counted in
    /// `raw`), with the first one's position and why.
    pub unfit: u64,
    /// The first unit of `unfit`: (file, line, why).
    pub first_unfit: Option<(String, u64, String)>,
    /// Units after as many as the header announces (`limit`; counted in `raw`), with the
    /// field that says how many.
    pub beyond: u64,
    /// The `limit` field and its value, for the first part that had one.
    pub limit: Option<(String, u64)>,
}

impl ImportReport {
    /// The share of units kept raw, in percent (rounded down; 0 without units).
    pub fn raw_percent(&self) -> u64 {
        (self.raw * 100).checked_div(self.units).unwrap_or(0)
    }

    /// Whether most units match no rule (more than half kept raw).
    pub fn mostly_unmatched(&self) -> bool {
        self.raw * 2 > self.units
    }

    /// Why units were kept raw, when some were not for want of a matching rule: values that
    /// cannot be stored, units after the count the header gives. `None` otherwise.
    pub fn cause(&self) -> Option<String> {
        if self.unfit == 0 && self.beyond == 0 {
            return None;
        }
        let mut parts = Vec::new();
        let none = self.raw.saturating_sub(self.unfit + self.beyond);
        if none > 0 {
            parts.push(format!("{none} match no rule"));
        }
        if let Some((f, l, why)) = &self.first_unfit {
            parts.push(format!(
                "{} match a rule but hold a value that cannot be stored (the first at {f}:{l}: {why})",
                self.unfit
            ));
        }
        if self.beyond > 0 {
            let (field, n) = self.limit.clone().unwrap_or_default();
            parts.push(format!(
                "{} come after the {n} the header announces (`{field}`), which the format's reader does not read",
                self.beyond
            ));
        }
        Some(parts.join("; "))
    }
}
