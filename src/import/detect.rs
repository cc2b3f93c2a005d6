//! Choosing a mapping from an input's content: every candidate is tried on the input's first
//! units (read once, see [`ImportInput`]); the one that matches a clear majority of them wins.

// Design: a format is detected only when more than half of the sampled units match one of its
// rules. Prose, a README or another tool's log may well hold a third of lines that look like
// some format's (`24 of 71` for the Android README.format and et_merlin); a majority keeps
// them out. When another format comes close (within a tenth of the units), it is named, so a
// user who meant that one knows to say `--from`.

use std::io::Read;

use super::error::{ImportError, ImportErrorKind};
use super::input::{Body, ImportInput, SAMPLE_BYTES};
use super::mapping::{glob, Mapping, Units};
use super::units::UnitReader;
use super::zipio;

/// How many units of the sample are tried.
pub const SAMPLE_UNITS: usize = 200;

/// How well one mapping fits an input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Score {
    /// The format's name.
    pub format: String,
    /// Units of the sample some rule of the mapping matches.
    pub matched: usize,
    /// Units in the sample.
    pub sampled: usize,
}

impl Score {
    /// Whether more than half of the sampled units match.
    pub fn is_majority(&self) -> bool {
        self.matched * 2 > self.sampled
    }

    fn share_cmp(&self, o: &Score) -> std::cmp::Ordering {
        // matched/sampled, compared without division (an empty sample scores 0).
        let a = self.matched as u128 * o.sampled.max(1) as u128;
        let b = o.matched as u128 * self.sampled.max(1) as u128;
        a.cmp(&b)
    }
}

impl std::fmt::Display for Score {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({} of the first {} units match)",
            self.format, self.matched, self.sampled
        )
    }
}

/// The outcome of [`detect`]: the chosen mapping and the scores of all.
#[derive(Debug, Clone)]
pub struct Detection {
    /// Index of the chosen mapping among the candidates.
    pub chosen: usize,
    /// Its score.
    pub best: Score,
    /// The next best, when it comes close (within a tenth of the units).
    pub runner_up: Option<Score>,
}

/// Choose among `candidates` the mapping that fits the input: the one matching the largest
/// share of its first [`SAMPLE_UNITS`] units (the first in order on a tie), if that share is
/// more than half. What is read is kept in `input` and imported as well.
pub fn detect(input: &mut ImportInput, candidates: &[Mapping]) -> Result<Detection, ImportError> {
    let mut scores = Vec::with_capacity(candidates.len());
    for m in candidates {
        scores.push(score(input, m)?);
    }
    let mut order: Vec<usize> = (0..scores.len()).collect();
    // Stable: on a tie the earlier candidate stays first.
    order.sort_by(|&a, &b| scores[b].share_cmp(&scores[a]));
    let name = input.name.clone();
    let Some(&chosen) = order.first() else {
        return Err(ImportError::at(
            &name,
            ImportErrorKind::Undetected("no format to choose from".into()),
        ));
    };
    let best = scores[chosen].clone();
    let runner_up = order.get(1).map(|&i| scores[i].clone()).filter(|r| {
        r.matched > 0
            && (r.matched as u128 * 10 * best.sampled.max(1) as u128)
                >= (best.matched as u128 * 9 * r.sampled.max(1) as u128)
    });
    if best.sampled == 0 {
        return Err(ImportError::at(
            &name,
            ImportErrorKind::Undetected(
                "the input has no line to tell its format by (it is empty or blank)".into(),
            ),
        ));
    }
    if !best.is_majority() {
        let how = if best.matched == 0 {
            "no shipped format matches any of its first units".to_string()
        } else {
            format!("no shipped format matches most of its first units (best: {best})")
        };
        return Err(ImportError::at(&name, ImportErrorKind::Undetected(how)));
    }
    Ok(Detection {
        chosen,
        best,
        runner_up,
    })
}

/// How well `m` fits the input: its first units (of the first mapped entry of a ZIP).
pub fn score(input: &mut ImportInput, m: &Mapping) -> Result<Score, ImportError> {
    let base = input.base.clone();
    let name = input.name.clone();
    let (matched, sampled) = match &mut input.body {
        Body::Zip(z, _) => {
            score_zip(z, m).map_err(|e| ImportError::at(&name, ImportErrorKind::Input(e)))?
        }
        Body::Text { .. } => match input.sample()? {
            Some((sample, eof)) => score_units(m, &base, sample, eof),
            None => (0, 0),
        },
    };
    Ok(Score {
        format: m.name.clone(),
        matched,
        sampled,
    })
}

fn score_zip(z: &mut zipio::Reader, m: &Mapping) -> Result<(usize, usize), String> {
    for i in 0..z.len() {
        let meta = z.meta(i)?;
        if !meta.is_file || !glob(&m.zip_entry, &meta.name) {
            continue;
        }
        let mut sample = Vec::new();
        let got = z
            .entry(i)?
            .take(SAMPLE_BYTES as u64 + 1)
            .read_to_end(&mut sample)
            .map_err(|e| format!("{}: {e}", meta.name))?;
        let eof = got <= SAMPLE_BYTES;
        sample.truncate(SAMPLE_BYTES);
        return Ok(score_units(m, &meta.name, &sample, eof));
    }
    Ok((0, 0))
}

/// (units matched, units tried) over the first units of `sample` that are not blank; a last
/// unit cut by the end of a sample that is not the whole input is not tried.
fn score_units(m: &Mapping, name: &str, sample: &[u8], eof: bool) -> (usize, usize) {
    let Some(pi) = m.part_for(name) else {
        return (0, 0);
    };
    let xml = m.units == Units::Xml;
    let sample = if eof || xml {
        sample
    } else {
        match sample.iter().rposition(|&c| c == b'\n') {
            Some(i) => &sample[..=i],
            None => sample,
        }
    };
    let part = &m.parts[pi];
    let mut u = UnitReader::new(sample, xml);
    // The sampled units (blank ones left out: they say nothing about the format), so that a
    // pattern of several lines (malloc-lab's header) is tried on the lines it spans.
    let mut units: Vec<Vec<u8>> = Vec::new();
    while units.len() < SAMPLE_UNITS && matches!(u.next_unit(), Ok(true)) {
        let content = if xml { &u.buf[..] } else { u.split_line().0 };
        if !content.iter().all(|c| c.is_ascii_whitespace()) {
            units.push(content.to_vec());
        }
    }
    let seen = units.len();
    let (mut matched, mut i) = (0, 0);
    let mut vals = Vec::new();
    let mut joined = Vec::new();
    while i < seen {
        let mut took = 0;
        for r in part.rules.iter().filter(|r| !r.implied) {
            let lines = r.pattern.lines;
            if lines == 1 || xml {
                if r.pattern.matches(&units[i], &mut vals).is_some() {
                    took = 1;
                    break;
                }
            } else if i + lines <= seen {
                joined.clear();
                for (k, unit) in units[i..i + lines].iter().enumerate() {
                    if k > 0 {
                        joined.push(b'\n');
                    }
                    joined.extend_from_slice(unit);
                }
                if r.pattern.matches(&joined, &mut vals).is_some() {
                    took = lines;
                    break;
                }
            }
        }
        matched += took;
        i += took.max(1);
    }
    (matched, seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapping() -> Mapping {
        Mapping::parse(
            "t.map",
            "format t\ndtd t.dtd\npart p section s\nrecord a 'A {n:dec}'\n",
        )
        .unwrap()
    }

    #[test]
    fn a_cut_last_line_is_not_scored() {
        let m = mapping();
        assert_eq!(score_units(&m, "x", b"A 1\nA 2\nA 3", false), (2, 2));
        assert_eq!(score_units(&m, "x", b"A 1\nA 2\nA 3", true), (3, 3));
        assert_eq!(score_units(&m, "x", b"A 1\nhello\nworld\n", true), (1, 3));
        assert_eq!(score_units(&m, "x", b"A 1\n\n  \nhello\n", true), (1, 2));
    }

    fn input(text: &'static str) -> ImportInput {
        ImportInput::from_reader("in.txt", std::io::Cursor::new(text.as_bytes()))
    }

    #[test]
    fn a_clear_majority_wins_and_a_close_second_is_named() {
        let a = mapping();
        let b = Mapping::parse(
            "u.map",
            "format u\ndtd u.dtd\npart p section s\nrecord a 'A {n:dec}'\nrecord b 'B'\n",
        )
        .unwrap();
        let d = detect(&mut input("A 1\nA 2\nB\n"), &[a.clone(), b.clone()]).unwrap();
        assert_eq!((d.chosen, d.best.matched, d.best.sampled), (1, 3, 3));
        assert_eq!(d.runner_up.as_ref().map(|r| r.matched), None); // 2 of 3: not close
        let d = detect(&mut input("A 1\nA 2\nA 3\n"), &[a.clone(), b.clone()]).unwrap();
        assert_eq!(d.chosen, 0, "a tie goes to the first candidate");
        assert_eq!(d.runner_up.map(|r| r.format), Some("u".to_string()));
        let e = detect(
            &mut input("A 1\nprose\nmore prose\n"),
            std::slice::from_ref(&a),
        )
        .unwrap_err();
        assert!(matches!(e.kind, ImportErrorKind::Undetected(_)), "{e}");
        let e = detect(&mut input("\n\n"), &[a]).unwrap_err();
        assert!(matches!(e.kind, ImportErrorKind::Undetected(_)), "{e}");
    }

    #[test]
    fn scores_compare_by_share() {
        let s = |matched, sampled| Score {
            format: "f".into(),
            matched,
            sampled,
        };
        assert!(s(3, 4).share_cmp(&s(2, 4)).is_gt());
        assert!(s(1, 2).share_cmp(&s(100, 200)).is_eq());
        assert!(!s(1, 2).is_majority() && s(2, 3).is_majority());
    }
}
