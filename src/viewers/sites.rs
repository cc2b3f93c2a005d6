//! A stack profile for a trace without stacks: one frame per allocation site, or one frame for
//! every allocation when the trace declares no sites, so that a viewer shows where the bytes
//! come from as far as the trace says.

use crate::analysis::stats::{SpaceSummary, Stats};
use crate::stacks::{Costs, Frame, Leaf, Node, StackProfile};

use super::heaptrack::NO_SITE;

/// The name of the frame of allocations outside every stack the trace has.
pub const NO_STACK: &str = "(no stack)";
use super::error::SpaceTraits;
use super::ViewerError;

/// The profile of one namespace's sites: a root node of one frame per site (named as the trace
/// names it, `site N` where it gives no name, [`NO_SITE`] for allocations without one), with
/// the site's figures as its leaf's costs.
pub fn site_profile(space: &SpaceSummary) -> StackProfile {
    let mut p = StackProfile {
        space: space.name.clone(),
        sized: space.sized,
        contexts: false,
        ..StackProfile::default()
    };
    for s in &space.sites {
        let name = match (&s.name, s.site) {
            (Some(n), _) if !n.is_empty() => n.clone(),
            (_, Some(id)) => format!("site {id}"),
            (_, None) => NO_SITE.to_string(),
        };
        p.frames.push(Frame {
            function: Some(name),
            ..Frame::default()
        });
        p.nodes.push(Node {
            parent: None,
            frames: vec![(p.frames.len() - 1) as u32],
        });
        p.leaves.push(Leaf {
            node: Some((p.nodes.len() - 1) as u32),
            site: None,
            suppressed: false,
            costs: Costs {
                allocations: s.allocations,
                bytes: s.bytes_allocated,
                temporary: s.temporary,
                peak: s.peak_bytes,
                peak_blocks: s.peak_blocks,
                leaked: s.leaked_bytes,
                leaked_blocks: s.leaked_blocks,
            },
        });
    }
    p
}

/// The profile a viewer's export shows of a statistics run: the namespace asked for, else the
/// one every viewer's export shows (`choose_space`), by stack where
/// the trace has stacks for it, else by site ([`site_profile`]); and whether it is by stack.
pub fn profile_of(
    stats: &mut Stats,
    space: Option<&str>,
) -> Result<(StackProfile, bool), ViewerError> {
    let traits: Vec<SpaceTraits<'_>> = stats
        .spaces
        .iter()
        .map(|s| SpaceTraits {
            name: &s.name,
            ids: true,
            sized: s.sized,
            stacks: s.stacks.is_some(),
            busy: s.allocations > 0,
        })
        .collect();
    let i = super::error::choose_space(&traits, space)?;
    let s = &mut stats.spaces[i];
    Ok(match s.stacks.take() {
        Some(mut p) => {
            rest_without_stack(&mut p, s);
            (p, true)
        }
        None => (site_profile(s), false),
    })
}

/// A leaf for the allocations of a namespace that no stack holds (a Java trace's allocations
/// outside any method: its calling contexts cover what happened inside them), so that a
/// profile's totals are the namespace's.
fn rest_without_stack(p: &mut StackProfile, s: &SpaceSummary) {
    let mut have = Costs::default();
    for l in &p.leaves {
        let c = &l.costs;
        have.allocations += c.allocations;
        have.bytes += c.bytes;
        have.temporary += c.temporary;
        have.peak += c.peak;
        have.peak_blocks += c.peak_blocks;
        have.leaked += c.leaked;
        have.leaked_blocks += c.leaked_blocks;
    }
    let rest = Costs {
        allocations: s.allocations.saturating_sub(have.allocations),
        bytes: s.bytes_allocated.saturating_sub(have.bytes),
        temporary: s.temporary.saturating_sub(have.temporary),
        peak: s.peak_bytes.saturating_sub(have.peak),
        peak_blocks: s.peak_blocks.saturating_sub(have.peak_blocks),
        leaked: s.live_bytes.saturating_sub(have.leaked),
        leaked_blocks: s.live_blocks.saturating_sub(have.leaked_blocks),
    };
    if rest != Costs::default() {
        p.leaves.push(Leaf {
            node: None,
            site: Some(NO_STACK.to_string()),
            suppressed: false,
            costs: rest,
        });
    }
}
