//! One stream of units through a part's rules: lines read ahead for patterns of several lines,
//! each unit taken by a rule or kept raw, the header's `limit` counted.

use std::collections::VecDeque;
use std::io::BufRead;

use super::super::error::{ImportError, ImportErrorKind};
use super::super::mapping::Units;
use super::super::records::PartKind;
use super::super::sink::{Sink, Value};
use super::super::units::{Eol, UnitReader};
use super::super::zipio;
use super::{fatal, Importer, EARLY_CHECK, RAW_LISTED};

/// One line read ahead.
pub(super) struct Ahead {
    pub(super) buf: Vec<u8>,
    pub(super) line: u64,
    pub(super) col: u64,
}

impl Importer<'_, '_> {
    /// Import one stream of units; `method`: its ZIP compression code (0 for a plain file);
    /// `entry`: the ZIP entry it is, whose metadata is recorded.
    // Design: the entry is passed apart from the method; an entry used to be told from a plain
    // stream by its empty name, so a ZIP entry named "" lost its date and attributes (found by
    // fuzzing the ZIP round trip).
    pub(super) fn stream_part(
        &mut self,
        shown: &str,
        part_name: &str,
        r: impl BufRead,
        method: u64,
        entry: Option<&zipio::EntryMeta>,
    ) -> Result<(), ImportError> {
        let m = self.m;
        let pi = m
            .part_for(part_name)
            .ok_or_else(|| ImportError::at(shown, ImportErrorKind::NoPart(m.name.clone())))?;
        self.enter(&m.parts[pi].section, shown)?;
        let xml = m.units == Units::Xml;
        let mut u = UnitReader::new(r, xml);
        let io_err = |u: &UnitReader<_>, e: std::io::Error| {
            ImportError::new(shown, u.line, u.col, ImportErrorKind::of_read(&e))
        };
        let mut have = u.next_unit().map_err(|e| io_err(&u, e))?;
        let part_eol = match u.split_line().1 {
            Eol::CrLf if !xml && have => Eol::CrLf,
            _ => Eol::Lf,
        };
        let head = [pi as u64, part_eol.code(), method];
        self.part_record(shown, part_name, head, entry)?;
        // Lines read ahead for patterns that span several lines; the first is the current unit.
        let mut ahead: VecDeque<Ahead> = VecDeque::new();
        let mut pool: Vec<Vec<u8>> = Vec::new();
        let need = self.rules[pi].iter().map(|r| r.lines).max().unwrap_or(1);
        let (mut index, mut done) = (0usize, 0u64);
        self.start_part(pi);
        self.emit_implied(pi).map_err(|e| fatal(shown, e))?;
        loop {
            // Fill the window (the first unit was read above to find the part's line end).
            while ahead.len() < need && have {
                let mut b = pool.pop().unwrap_or_default();
                b.clear();
                b.extend_from_slice(&u.buf);
                let (line, col) = (u.line, u.col);
                ahead.push_back(Ahead { buf: b, line, col });
                have = u.next_unit().map_err(|e| io_err(&u, e))?;
            }
            if ahead.is_empty() {
                break;
            }
            let n = self.next_units(pi, index, &ahead, part_eol, shown)?;
            for _ in 0..n {
                if let Some(a) = ahead.pop_front() {
                    done += a.buf.len() as u64;
                    pool.push(a.buf);
                }
            }
            index += n;
            self.after_units(shown, index, n, done)?;
        }
        self.flush_run().map_err(|e| fatal(shown, e))?;
        self.report.bytes_in += u.bytes;
        self.tick();
        Ok(())
    }

    /// The `import_part` record of a mapped part (`[part, line end, method]`), and the
    /// `import_entry` record of the ZIP entry it is.
    fn part_record(
        &mut self,
        shown: &str,
        part_name: &str,
        [pi, eol, method]: [u64; 3],
        entry: Option<&zipio::EntryMeta>,
    ) -> Result<(), ImportError> {
        let values = [
            Value::Int(PartKind::Mapped.code()),
            Value::Int(pi),
            Value::Int(eol),
            Value::Int(method),
            Value::Bytes(part_name.as_bytes()),
        ];
        self.sink
            .write(self.p.part, &values)
            .map_err(|e| fatal(shown, e))?;
        match entry {
            Some(e) => self.entry_record(shown, e),
            None => Ok(()),
        }
    }

    /// Reset what a part counts: its kept values, whether its body began, its `limit`.
    fn start_part(&mut self, pi: usize) {
        self.kept.clear();
        self.kept.resize(self.kept_names[pi].len(), 0);
        self.body_seen = false;
        self.left = None;
    }

    /// Take the units at the front of `ahead` (the `index`th of the part) into a record, or
    /// keep the first raw; how many were taken.
    fn next_units(
        &mut self,
        pi: usize,
        index: usize,
        ahead: &VecDeque<Ahead>,
        part_eol: Eol,
        shown: &str,
    ) -> Result<usize, ImportError> {
        // Past as many units as the header announces (`limit`): kept raw.
        // Design: the count is the format's reader's (malloc-lab's driver reads `ops`
        // operations with fscanf and stops), so every non-blank unit after the header counts,
        // also one no rule took (the driver reads `f  1` as an operation too); blank lines do
        // not (fscanf skips white space). The units after are kept raw, not refused: export
        // gives them back, and the report says why they are raw.
        let beyond = self.left == Some(0);
        let taken = if beyond {
            None
        } else {
            self.try_rules(pi, index, ahead, part_eol, shown)
                .map_err(|e| fatal(shown, e))?
        };
        let Some((n, noeol, head)) = taken else {
            self.keep_raw(pi, &ahead[0], beyond, shown)?;
            return Ok(1);
        };
        if !head {
            self.left = self.left.map(|l| l.saturating_sub(1));
        }
        self.report.units += n as u64;
        self.report.mapped += n as u64;
        if noeol {
            self.flush_run().map_err(|e| fatal(shown, e))?;
            self.sink
                .write(self.p.noeol, &[])
                .map_err(|e| fatal(shown, e))?;
        }
        Ok(n)
    }

    /// Keep unit `a`, which no rule took, in a raw-line record; `beyond`: it comes after the
    /// units the header announces.
    fn keep_raw(
        &mut self,
        pi: usize,
        a: &Ahead,
        beyond: bool,
        shown: &str,
    ) -> Result<(), ImportError> {
        if !beyond && self.too_wide(pi, &a.buf) {
            let why = "a decimal number of more than 64 bits".to_string();
            self.report.unfit += 1;
            if self.report.first_unfit.is_none() {
                self.report.first_unfit = Some((shown.to_string(), a.line, why));
            }
        }
        self.report.units += 1;
        self.report.raw += 1;
        if beyond {
            self.report.beyond += 1;
        } else if !a.buf.iter().all(|c| c.is_ascii_whitespace()) {
            // An operation the format's reader counts, though no rule took it.
            self.left = self.left.map(|l| l.saturating_sub(1));
        }
        if self.report.first_raw.len() < RAW_LISTED {
            self.report
                .first_raw
                .push((shown.to_string(), a.line, a.col));
        }
        self.flush_run().map_err(|e| fatal(shown, e))?;
        self.sink
            .write(self.p.raw, &[Value::Bytes(&a.buf)])
            .map_err(|e| fatal(shown, e))
    }

    /// After `n` more units, `index` in the part and `done` bytes of it: the early check of
    /// the share kept raw, and the progress.
    fn after_units(
        &mut self,
        shown: &str,
        index: usize,
        n: usize,
        done: u64,
    ) -> Result<(), ImportError> {
        if !self.checked_early && self.report.units >= EARLY_CHECK {
            self.checked_early = true;
            self.check_unmatched(shown, true)?;
        }
        if index % 4096 < n {
            // Approximate (line ends are not counted): for a progress bar only.
            if let Some(f) = &mut self.progress {
                f(self.report.bytes_in + done);
            }
        }
        Ok(())
    }

    /// Whether a unit no rule took holds a decimal number wider than 64 bits, without which a
    /// one-line rule of the part would match it: the cause a refusal names (such a value cannot
    /// be stored in any field).
    // Design: only units kept raw are looked at, and only when they hold a run of 20 digits or
    // more, so the common path pays nothing.
    pub(super) fn too_wide(&mut self, pi: usize, unit: &[u8]) -> bool {
        let mut runs = Vec::new();
        let mut i = 0;
        while i < unit.len() {
            if unit[i].is_ascii_digit() {
                let start = i;
                while i < unit.len() && unit[i].is_ascii_digit() {
                    i += 1;
                }
                let digits = &unit[start..i];
                let wide = digits.len() >= 20
                    && std::str::from_utf8(digits).is_ok_and(|d| d.parse::<u64>().is_err());
                if wide {
                    runs.push((start, i));
                }
            } else {
                i += 1;
            }
        }
        if runs.is_empty() {
            return false;
        }
        let mut narrow = Vec::with_capacity(unit.len());
        let mut at = 0;
        for (a, b) in runs {
            narrow.extend_from_slice(&unit[at..a]);
            narrow.push(b'1');
            at = b;
        }
        narrow.extend_from_slice(&unit[at..]);
        while matches!(narrow.last(), Some(b'\n' | b'\r')) {
            narrow.pop();
        }
        let part = &self.m.parts[pi];
        part.rules.iter().zip(&self.rules[pi]).any(|(r, rp)| {
            !r.head
                && !r.implied
                && rp.lines == 1
                && r.pattern.matches(&narrow, &mut self.vals).is_some()
        })
    }
}
