//! The state of extension stacks/1 (nodes, stack-tree ids, calling contexts, frames, rules) in
//! an analysis-state blob (docs/format.md §15.4), in a canonical order.

use crate::dtd::analysis::StackRule;
use crate::index::analysis::{Dec, Enc, StateError};

use super::super::resume::{get_name, put_name, sorted, Digest};
use super::super::Interpreter;
use super::{FrameInfo, Parts, RNode};

fn put_opt_name(e: &mut Enc, n: &Option<super::Name>) {
    match n {
        None => e.u8(0),
        Some(n) => {
            e.u8(1);
            put_name(e, n);
        }
    }
}

fn get_opt_name(d: &mut Dec<'_>) -> Result<Option<super::Name>, StateError> {
    Ok(if d.flag()? { Some(get_name(d)?) } else { None })
}

fn rule_code(r: StackRule) -> u8 {
    match r {
        StackRule::Stop => 0,
        StackRule::Skip => 1,
        StackRule::Suppress => 2,
    }
}

impl Interpreter<'_> {
    pub(in crate::analysis::interpret) fn save_stacks(&self, e: &mut Enc) {
        let st = &self.st;
        e.len(st.nodes.len());
        for n in &st.nodes {
            e.u32(n.parent);
            e.u32(n.space);
            e.u64(n.frame);
        }
        let tree = sorted(st.tree.iter().map(|(k, v)| (*k, *v)));
        e.len(tree.len());
        for ((space, id), node) in tree {
            e.u32(space);
            e.u64(id);
            e.u32(node);
        }
        let at = sorted(st.at_offset.iter().map(|(k, v)| (*k, *v)));
        e.len(at.len());
        for ((space, off), id) in at {
            e.u32(space);
            e.u64(off);
            e.u64(id);
        }
        let children = sorted(st.children.iter().map(|(k, v)| (*k, *v)));
        e.len(children.len());
        for ((parent, space, frame), node) in children {
            e.u32(parent);
            e.u32(space);
            e.u64(frame);
            e.u32(node);
        }
        let frames = sorted(st.frames.iter().map(|(k, v)| (*k, v)));
        e.len(frames.len());
        for ((space, id), info) in frames {
            e.u32(space);
            e.u64(id);
            e.len(info.frames.len());
            for p in &info.frames {
                put_opt_name(e, &p.function);
                put_opt_name(e, &p.owner);
                put_opt_name(e, &p.file);
                put_opt_name(e, &p.module);
                e.opt(p.line);
                e.opt(p.address);
            }
        }
        e.len(st.rules.len());
        for (r, n) in &st.rules {
            e.u8(rule_code(*r));
            put_name(e, n);
        }
    }

    /// What [`Interpreter::save_stacks`] writes, as a [`Digest`]: the maps in any order.
    pub(in crate::analysis::interpret) fn digest_stacks(&self, g: &mut Digest) {
        let st = &self.st;
        let seq = g.seq();
        seq.len(st.nodes.len());
        for n in &st.nodes {
            seq.u32(n.parent);
            seq.u32(n.space);
            seq.u64(n.frame);
        }
        g.bag(11, st.tree.iter(), |e, ((space, id), node)| {
            e.u32(*space);
            e.u64(*id);
            e.u32(*node);
        });
        g.bag(12, st.at_offset.iter(), |e, ((space, off), id)| {
            e.u32(*space);
            e.u64(*off);
            e.u64(*id);
        });
        g.bag(
            13,
            st.children.iter(),
            |e, ((parent, space, frame), node)| {
                e.u32(*parent);
                e.u32(*space);
                e.u64(*frame);
                e.u32(*node);
            },
        );
        g.bag(14, st.frames.iter(), |e, ((space, id), info)| {
            e.u32(*space);
            e.u64(*id);
            e.len(info.frames.len());
            for p in &info.frames {
                put_opt_name(e, &p.function);
                put_opt_name(e, &p.owner);
                put_opt_name(e, &p.file);
                put_opt_name(e, &p.module);
                e.opt(p.line);
                e.opt(p.address);
            }
        });
        let seq = g.seq();
        seq.len(st.rules.len());
        for (r, n) in &st.rules {
            seq.u8(rule_code(*r));
            put_name(seq, n);
        }
    }

    pub(in crate::analysis::interpret) fn restore_stacks(
        &mut self,
        d: &mut Dec<'_>,
    ) -> Result<(), StateError> {
        let spaces = self.decl.namespaces.len() as u32;
        let st = &mut self.st;
        let count = d.count(3)?;
        st.nodes = Vec::with_capacity(count);
        for i in 0..count {
            let n = RNode {
                parent: d.u32()?,
                space: d.u32()?,
                frame: d.u64()?,
            };
            // A node's parent was defined before it: no walk to the root can loop.
            if n.space >= spaces || (n.parent != super::ROOT && n.parent as usize >= i) {
                return Err(
                    d.error("a stack node whose parent or namespace is not defined before it")
                );
            }
            st.nodes.push(n);
        }
        let nodes = st.nodes.len();
        let node_ok = |d: &Dec<'_>, n: u32| {
            if n == super::ROOT || (n as usize) < nodes {
                Ok(n)
            } else {
                Err(d.error(format!("stack node {n} is not defined")))
            }
        };
        let count = d.count(3)?;
        for _ in 0..count {
            let k = (d.u32()?, d.u64()?);
            let n = d.u32()?;
            st.tree.insert(k, node_ok(d, n)?);
        }
        let count = d.count(3)?;
        for _ in 0..count {
            let k = (d.u32()?, d.u64()?);
            st.at_offset.insert(k, d.u64()?);
        }
        let count = d.count(4)?;
        for _ in 0..count {
            let k = (d.u32()?, d.u32()?, d.u64()?);
            let n = d.u32()?;
            st.children.insert(k, node_ok(d, n)?);
        }
        let count = d.count(3)?;
        for _ in 0..count {
            let k = (d.u32()?, d.u64()?);
            let m = d.count(6)?;
            let mut frames = Vec::with_capacity(m);
            for _ in 0..m {
                frames.push(Parts {
                    function: get_opt_name(d)?,
                    owner: get_opt_name(d)?,
                    file: get_opt_name(d)?,
                    module: get_opt_name(d)?,
                    line: d.opt()?,
                    address: d.opt()?,
                });
            }
            st.frames.insert(k, FrameInfo { frames });
        }
        let count = d.count(2)?;
        st.rules = Vec::with_capacity(count);
        for _ in 0..count {
            let r = match d.u8()? {
                0 => StackRule::Stop,
                1 => StackRule::Skip,
                2 => StackRule::Suppress,
                k => return Err(d.error(format!("stack rule {k}"))),
            };
            st.rules.push((r, get_name(d)?));
        }
        Ok(())
    }
}
