//! `mtf simulate`: every chosen allocator policy modelled in one pass over a trace's block
//! events ([`crate::simulate::Simulator`]), the figures returned for the caller to render.

use std::time::{Duration, Instant};

use super::blocks::{for_each_block_event_resident, name_sites, NoAllocations, Reading};
use crate::simulate::{Options, Policy, Report, Simulator};
use crate::Opened;

pub mod render;

/// What to simulate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimulateOptions {
    /// The policies, each once, in the order their reports come back.
    pub policies: Vec<Policy>,
    /// Block alignment in bytes (a power of two).
    pub align: u64,
    /// Bytes of header per block.
    pub header: u64,
    /// Requests larger than this many bytes are refused (counted, not placed).
    pub max_block_size: u64,
    /// Size classes and sites shown in the tables of waste (the JSON has every class and this
    /// many sites); 0: no tables, and no attribution (faster).
    pub top: usize,
}

impl Default for SimulateOptions {
    /// Every policy, alignment 8, no header, requests up to 1 TiB, 10 classes and sites.
    fn default() -> Self {
        SimulateOptions {
            policies: Policy::ALL.to_vec(),
            align: 8,
            header: 0,
            max_block_size: 1 << 40,
            top: 10,
        }
    }
}

/// Why a simulation did not run.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum SimulateError {
    /// The alignment is not a power of two.
    #[error("alignment {0}: an alignment is a power of two")]
    #[diagnostic(code(mtf::usage::align))]
    Align(u64),
    /// The trace's DTD declares no allocations.
    #[error(transparent)]
    #[diagnostic(transparent)]
    NoAllocations(#[from] NoAllocations),
}

/// The figures of a simulation.
#[derive(Debug, Clone)]
pub struct Simulation {
    /// One report per policy, in the order of [`SimulateOptions::policies`]; frees of blocks
    /// that were not live are counted in each (`counts.unknown_frees`).
    pub reports: Vec<Report>,
    /// What the reading met besides the events.
    pub reading: Reading,
    /// The time the pass took.
    pub elapsed: Duration,
    /// The options it ran with (the renderers of [`render`] state them).
    pub options: SimulateOptions,
}

impl Simulation {
    /// Records not decoded (plus one when the interpreter stopped early): the figures are
    /// then incomplete.
    pub fn problems(&self) -> u64 {
        self.reading.problems()
    }
}

/// Simulates `options.policies` over the block events of `opened`.
pub fn simulate(opened: &Opened, options: &SimulateOptions) -> Result<Simulation, SimulateError> {
    if !options.align.is_power_of_two() {
        return Err(SimulateError::Align(options.align));
    }
    let mut sims: Vec<Simulator> = options
        .policies
        .iter()
        .map(|&policy| {
            Simulator::new(Options {
                policy,
                align: options.align,
                header: options.header,
                max_block_size: options.max_block_size,
                attribute: options.top > 0,
            })
        })
        .collect();
    let start = Instant::now();
    let reader = opened.reader();
    let (reading, interp) = for_each_block_event_resident(&reader, |e, _| {
        for s in sims.iter_mut() {
            s.feed(e);
        }
    })?;
    let mut reports: Vec<Report> = sims.into_iter().map(Simulator::finish).collect();
    for r in reports.iter_mut() {
        // The interpreter saw them (no event): they count as the simulator's own.
        r.counts.unknown_frees += reading.unknown_frees;
        for s in [&mut r.frag.at_peak, &mut r.frag.at_end]
            .into_iter()
            .flatten()
        {
            name_sites(s, &interp, options.top);
        }
    }
    Ok(Simulation {
        reports,
        reading,
        elapsed: start.elapsed(),
        options: options.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_alignment_that_is_not_a_power_of_two_is_refused() {
        let o = crate::open(concat!(env!("CARGO_MANIFEST_DIR"), "/traces/android.mtf"))
            .expect("the sample trace opens");
        let e = simulate(
            &o,
            &SimulateOptions {
                align: 12,
                ..SimulateOptions::default()
            },
        );
        assert!(matches!(e, Err(SimulateError::Align(12))));
        let ok = simulate(&o, &SimulateOptions::default()).expect("simulated");
        assert_eq!(ok.reports.len(), Policy::ALL.len());
        assert!(ok.reports.iter().all(|r| r.peak_heap >= r.peak_live));
    }
}
