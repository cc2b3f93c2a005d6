//! What the importer prepares before it reads: the writer's plan of every record kind it
//! writes (its own `import_*` records, the string tables', each rule's), how each rule's
//! values land in its record, and the table of rules by a unit's first byte.

use super::super::error::{ImportError, ImportErrorKind};
use super::super::mapping::{Mapping, Part, Rule, Units};
use super::super::pattern::FieldKind;
use super::super::records;
use super::super::sink::{FieldType, PlanId, Sink, SinkError, WriterSink};
use crate::dtd::Schema;

/// How one rule's values land in the record's plan: every rule of a record type in a part
/// writes the union of their fields (fields a rule does not read are 0 or the empty string).
pub(super) struct RulePlan {
    pub(super) plan: PlanId,
    /// Kinds of the union's fields.
    pub(super) types: Vec<FieldKind>,
    /// Union names (for `when` conditions).
    pub(super) names: Vec<String>,
    /// Pattern field index → union index.
    pub(super) slot_of: Vec<usize>,
    /// `set` constants: (union index, value).
    pub(super) set: Vec<(usize, u64)>,
    /// Indexes of the earlier rules of the same record type in the part.
    pub(super) earlier: Vec<usize>,
    /// Lines a unit of this rule spans.
    pub(super) lines: usize,
    /// The routed section the records go to (index into `Importer::routed`), if not the part's.
    pub(super) route: Option<usize>,
    /// `ref` fields: (union index, routed section the index points into).
    pub(super) refs: Vec<(usize, usize)>,
    /// `keep` fields: (union index, index into the part's kept values).
    pub(super) keep_in: Vec<(usize, usize)>,
    /// Integer fields named like a `keep` field of the part: (union index, index into the
    /// kept values), whose value is kept when the record is written.
    pub(super) keep_out: Vec<(usize, usize)>,
    /// A head rule's union index of the part's `limit` field.
    pub(super) limit: Option<usize>,
}

/// The plans of the importer's own records (`records::*`); those a DTD need not declare are
/// `None` when it does not.
pub(super) struct OwnPlans {
    pub(super) origin: PlanId,
    pub(super) part: PlanId,
    pub(super) raw: PlanId,
    pub(super) noeol: PlanId,
    pub(super) chunk: PlanId,
    /// Only for a mapping that routes records.
    pub(super) routed: Option<PlanId>,
    pub(super) entry: Option<PlanId>,
    pub(super) archive: Option<PlanId>,
}

impl OwnPlans {
    /// Plan the importer's own records; `routes`: whether the mapping routes records.
    pub(super) fn new(sink: &mut WriterSink<'_>, routes: bool) -> Result<OwnPlans, SinkError> {
        use FieldType::{Bytes, Int};
        let origin = sink.plan(
            None,
            records::ORIGIN,
            &[
                ("version", Int),
                ("container", Int),
                ("files", Int),
                ("format", Bytes),
                ("mapping", Bytes),
            ],
        )?;
        let part_fields = [
            ("kind", Int),
            ("part", Int),
            ("eol", Int),
            ("method", Int),
            ("name", Bytes),
        ];
        let part = sink.plan(None, records::PART, &part_fields)?;
        let raw = sink.plan(None, records::RAW, &[("line", Bytes)])?;
        let noeol = sink.plan(None, records::NOEOL, &[])?;
        let chunk = sink.plan(None, records::CHUNK, &[("data", Bytes)])?;
        // ZIP entry metadata (version 2): written when the DTD declares the records (an older
        // DTD that does not still imports, and its ZIP entries come back with the 1980 date).
        let entry_fields = [
            ("time", Int),
            ("attrs", Int),
            ("madeby", Int),
            ("extra", Bytes),
            ("central", Bytes),
            ("comment", Bytes),
        ];
        let entry = optional(sink, records::ENTRY, &entry_fields)?;
        let archive = optional(sink, records::ARCHIVE, &[("comment", Bytes)])?;
        let routed = match routes {
            true => Some(sink.plan(None, records::ROUTED, &[("target", Int), ("count", Int)])?),
            false => None,
        };
        Ok(OwnPlans {
            origin,
            part,
            raw,
            noeol,
            chunk,
            routed,
            entry,
            archive,
        })
    }
}

/// The plan of global record `record` when the DTD declares it.
fn optional(
    sink: &mut WriterSink<'_>,
    record: &str,
    fields: &[(&str, FieldType)],
) -> Result<Option<PlanId>, SinkError> {
    match sink.has_record(record) {
        true => sink.plan(None, record, fields).map(Some),
        false => Ok(None),
    }
}

/// The plans of every rule of every part, per part and rule; `routed`: the mapping's routed
/// sections ([`Mapping::routed`]).
pub(super) fn rule_plans(
    sink: &mut WriterSink<'_>,
    m: &Mapping,
    schema: &Schema,
    routed: &[String],
) -> Result<Vec<Vec<RulePlan>>, ImportError> {
    let mut rules = Vec::new();
    for part in &m.parts {
        let mut rp: Vec<RulePlan> = Vec::new();
        for (ri, r) in part.rules.iter().enumerate() {
            let plan = rule_plan(sink, m, part, &rp, ri, routed).map_err(|e| {
                ImportError::at(
                    "",
                    ImportErrorKind::Dtd(format!(
                        "DTD {} does not fit the rule at line {} of mapping `{}`: {e}",
                        schema.name, r.line, m.name
                    )),
                )
            })?;
            rp.push(plan);
        }
        rules.push(rp);
    }
    Ok(rules)
}

/// The plan of rule `ri` of `part`, whose earlier rules' plans are `before`.
fn rule_plan(
    sink: &mut WriterSink<'_>,
    m: &Mapping,
    part: &Part,
    before: &[RulePlan],
    ri: usize,
    routed: &[String],
) -> Result<RulePlan, SinkError> {
    let r = &part.rules[ri];
    let route_of = |s: &str| routed.iter().position(|x| x == s).unwrap_or(0);
    let same: Vec<usize> = (0..part.rules.len())
        .filter(|&j| part.rules[j].record == r.record)
        .collect();
    // The union of the fields of every rule of this record type, in order (their kinds agree:
    // checked when the mapping was parsed).
    let (names, types) = part.fields_of(&r.record);
    let pos = |n: &str| names.iter().position(|x| x == n).unwrap_or(0);
    let kept = part.kept();
    let keep_in = r
        .keep
        .iter()
        .filter_map(|f| Some((pos(f), kept.iter().position(|x| x == f)?)))
        .collect();
    let keep_out = names
        .iter()
        .zip(&types)
        .enumerate()
        .filter(|(_, (_, t))| **t == FieldKind::Int)
        .filter_map(|(k, (n, _))| Some((k, kept.iter().position(|x| x == n)?)))
        .collect();
    let limit = match &part.limit {
        Some(f) if r.head => names.iter().position(|x| x == f),
        _ => None,
    };
    let plan = match same.iter().position(|&j| j < ri) {
        Some(k) => before[same[k]].plan,
        None => {
            let fields = union_fields(part, &names, &types, &same);
            let section = r.section.as_ref().unwrap_or(&part.section);
            let rep = part.repeat_of(&r.record);
            let item: Vec<&str> = rep
                .map(|x| x.fields.iter().map(|f| f.name.as_str()).collect())
                .unwrap_or_default();
            let repeat = rep.map(|x| (x.name.as_str(), item.as_slice()));
            sink.plan_repeat(Some(section), &r.record, &fields, repeat)?
        }
    };
    Ok(RulePlan {
        plan,
        slot_of: r.pattern.fields.iter().map(|f| pos(&f.name)).collect(),
        set: r.set.iter().map(|(f, v)| (pos(f), *v)).collect(),
        earlier: same.into_iter().filter(|&j| j < ri).collect(),
        lines: if m.units == Units::Xml {
            1
        } else {
            r.pattern.lines
        },
        route: r.section.as_deref().map(route_of),
        refs: r.refs.iter().map(|(f, s)| (pos(f), route_of(s))).collect(),
        keep_in,
        keep_out,
        limit,
        types,
        names,
    })
}

/// The union's fields as the sink takes them: `ref` fields (of any rule `same` of the record
/// type) and interned strings are section offsets.
fn union_fields<'n>(
    part: &Part,
    names: &'n [String],
    types: &[FieldKind],
    same: &[usize],
) -> Vec<(&'n str, FieldType)> {
    let ref_fields: Vec<&String> = same
        .iter()
        .flat_map(|&j| part.rules[j].refs.iter().map(|(f, _)| f))
        .collect();
    names
        .iter()
        .zip(types)
        .map(|(n, k)| {
            let ty = match k {
                FieldKind::Int if ref_fields.contains(&n) => FieldType::Offset,
                FieldKind::Int => FieldType::Int,
                FieldKind::Interned(_) => FieldType::Offset,
                FieldKind::Inline => FieldType::Bytes,
            };
            (n.as_str(), ty)
        })
        .collect()
}

/// Per part, by the first byte of a unit (256: an empty unit), the rules that may match it, in
/// the mapping's order: those whose literal lead starts with that byte, and those without a
/// lead.
pub(super) fn dispatch(m: &Mapping, rules: &[Vec<RulePlan>]) -> Vec<Vec<Vec<u32>>> {
    m.parts
        .iter()
        .zip(rules)
        .map(|(part, plans)| {
            let mut by_byte = vec![Vec::new(); 257];
            for (ri, (rule, rp)) in part.rules.iter().zip(plans).enumerate() {
                if rule.implied {
                    continue; // written from `emit` lines, never from input
                }
                // What `try_rules` compares the first line with.
                let key = first_line_lead(rule, rp.lines);
                match key.first() {
                    Some(&b) => by_byte[b as usize].push(ri as u32),
                    None => by_byte.iter_mut().for_each(|l| l.push(ri as u32)),
                }
            }
            by_byte
        })
        .collect()
}

/// The literal text a unit of `rule` (of `lines` lines) starts with on its first line.
pub(super) fn first_line_lead(rule: &Rule, lines: usize) -> &[u8] {
    let lead = rule.pattern.lead();
    if lines == 1 {
        lead
    } else {
        &lead[..lead.iter().position(|&c| c == b'\n').unwrap_or(lead.len())]
    }
}
