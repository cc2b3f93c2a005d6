//! The slice of a trace the figures cover (`--from`/`--to`).

/// One end of a [`Window`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// A record index (0-based, as `mtf dump` numbers records).
    Record(u64),
    /// A declared time, in the trace's declared unit.
    Time(u64),
}

impl std::str::FromStr for Bound {
    type Err = String;
    /// `1234` or `r1234` is a record index; `t5000` or `@5000` a declared time.
    fn from_str(s: &str) -> Result<Bound, String> {
        let s = s.trim();
        let (time, digits) = if let Some(d) = s.strip_prefix('t').or_else(|| s.strip_prefix('@')) {
            (true, d)
        } else {
            (false, s.strip_prefix('r').unwrap_or(s))
        };
        let digits = digits.replace('_', "");
        let n: u64 = digits.parse().map_err(|e: std::num::ParseIntError| {
            if *e.kind() == std::num::IntErrorKind::PosOverflow {
                format!(
                    "`{s}` is larger than {} (the largest record index or time)",
                    u64::MAX
                )
            } else {
                format!("`{s}` is neither a record index (1234, r1234) nor a time (t1234, @1234)")
            }
        })?;
        Ok(if time {
            Bound::Time(n)
        } else {
            Bound::Record(n)
        })
    }
}

/// A slice of a trace: records with index (or declared time) ≥ `from` and < `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Window {
    /// Where the slice starts (inclusive); `None` for the start of the trace.
    pub from: Option<Bound>,
    /// Where it ends (exclusive); `None` for the end of the trace.
    pub to: Option<Bound>,
}

/// Where a record stands relative to a [`Window`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Before the slice.
    Before,
    /// Inside it.
    Inside,
    /// After it (reading can stop).
    After,
}

impl Window {
    /// The whole trace.
    pub fn all() -> Window {
        Window::default()
    }

    /// Whether this is the whole trace.
    pub fn is_all(&self) -> bool {
        self.from.is_none() && self.to.is_none()
    }

    /// Where a record with this index and declared time (or, for a record without one, the
    /// last declared time before it) stands. A record without any time yet is before a
    /// time-bounded start.
    pub fn place(&self, record: u64, time: Option<u64>) -> Place {
        let reached = |b: Bound| match b {
            Bound::Record(r) => record >= r,
            Bound::Time(t) => time.is_some_and(|x| x >= t),
        };
        if let Some(to) = self.to {
            if reached(to) {
                return Place::After;
            }
        }
        match self.from {
            Some(from) if !reached(from) => Place::Before,
            _ => Place::Inside,
        }
    }
}
