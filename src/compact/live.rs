//! Which fields `mtf compact` reads through a live set (extension `live/1`, docs/format.md §13),
//! found from the values alone.
//!
//! A field whose values mostly repeat a value that another field carried recently (a free's
//! address, which an allocation carried) is a **consumer**: it is stored as a position in a live
//! set. The fields that carried those values are its **producers**: their values go into the set.
//! Nothing here knows a format: the pairs come from counting, over the whole trace, which field
//! last carried each value; the choice is then priced by simulating the sets over the trace and
//! comparing the bytes a consumer costs as positions (a value that is not in the set is stored as
//! the set's length plus the value) with what it costs as a number.

// Design: two passes over the input, both bounded in memory. The first keeps a map from value to
// the field that last carried it (cleared when it grows past `RECENT_LIMIT`) and counts, for
// each field, the values whose last carrier was another field. The second pass runs the live
// sets as the writer will and prices each consumer. Restrictions keep the writer's positions
// knowable before a record is written: a field in a repeat takes no part, and within one record
// type a consumer comes before every producer of its set, with at most one consumer per set.

use crate::decode::{Event, Reader, RecordView, Value};
use crate::dtd::{Interp, RecordId, Schema, SlotId, SlotKind};
use crate::layout::{FastMap as HashMap, LiveSets, MetaProperty, MAX_LIVE_SETS};

use super::cost::{signed_width, unsigned_width, MetaCost};

/// A field of a scope: (section, record type, slot).
pub(crate) type Key = (u8, RecordId, SlotId);

/// Values remembered by the first pass before the map is cleared.
const RECENT_LIMIT: usize = 1 << 20;

/// The live-set roles chosen for a trace.
#[derive(Debug, Default, Clone)]
pub(crate) struct Roles {
    /// Fields whose values go into a set: the set.
    pub producers: HashMap<Key, u8>,
    /// Fields stored as a position in a set: the set.
    pub consumers: HashMap<Key, u8>,
}

impl Roles {
    pub(crate) fn is_empty(&self) -> bool {
        self.consumers.is_empty()
    }

    /// One line per (section, set): who takes from it and who fills it.
    pub(crate) fn describe(&self, schema: &Schema) -> Vec<String> {
        let name = |k: &Key| {
            let r = schema.record(k.1);
            format!("{}.{}", r.name, r.slots[k.2 as usize].name)
        };
        let mut sets: Vec<(u8, u8)> = self.consumers.iter().map(|(k, &n)| (k.0, n)).collect();
        sets.sort();
        sets.dedup();
        sets.into_iter()
            .map(|(section, n)| {
                let list = |m: &HashMap<Key, u8>| {
                    let mut v: Vec<&Key> = m
                        .iter()
                        .filter(|(k, &kn)| k.0 == section && kn == n)
                        .map(|(k, _)| k)
                        .collect();
                    v.sort();
                    v.iter().map(|k| name(k)).collect::<Vec<_>>().join(", ")
                };
                let scope = schema.scope_for(section).map_or("", |s| s.name.as_str());
                format!(
                    "live set {n}{}: {} take from {}",
                    if scope.is_empty() {
                        String::new()
                    } else {
                        format!(" ({scope})")
                    },
                    list(&self.consumers),
                    list(&self.producers)
                )
            })
            .collect()
    }
}

/// First pass: which field last carried each value.
#[derive(Default)]
pub(crate) struct Discovery {
    recent: HashMap<u64, Key>,
    occurrences: HashMap<Key, u64>,
    /// (producer, consumer) → (values, their bytes).
    pairs: HashMap<(Key, Key), (u64, u64)>,
    /// Set numbers the input or the DTD uses already (left alone).
    pub(crate) used_sets: [bool; MAX_LIVE_SETS as usize + 1],
}

/// Whether a field can take part: a plain integer outside repeats, not a reference.
pub(crate) fn eligible(schema: &Schema, rid: RecordId, slot: SlotId) -> bool {
    let Some(def) = schema.record(rid).slots.get(slot as usize) else {
        return false;
    };
    slot != 0
        && slot <= 255
        && !def.in_repeat
        && matches!(def.kind, SlotKind::Int { .. })
        && !matches!(
            def.interp,
            Interp::SectionOffset(_) | Interp::SectionStride { .. }
        )
}

/// The integer fields of a record that can take part, in slot order (each slot once).
fn fields<'r>(r: &'r RecordView<'_>) -> impl Iterator<Item = (SlotId, u64)> + 'r {
    let schema = r.reader().schema();
    let rid = r.record_id();
    r.fields().skip(1).filter_map(move |f| match f.value() {
        Value::Int(v) if eligible(schema, rid, f.slot()) => Some((f.slot(), v)),
        _ => None,
    })
}

impl Discovery {
    pub(crate) fn new(schema: &Schema) -> Discovery {
        let mut d = Discovery::default();
        for r in &schema.records {
            for s in &r.slots {
                d.used_sets[s.liveset as usize] = true;
                if let Interp::Live(n) = s.interp {
                    d.used_sets[n as usize] = true;
                }
            }
        }
        d
    }

    /// A metadata change of the input.
    pub(crate) fn metadata(&mut self, p: MetaProperty) {
        match p {
            MetaProperty::LiveSet(n) | MetaProperty::Interp(Interp::Live(n)) => {
                self.used_sets[n as usize] = true
            }
            _ => {}
        }
    }

    /// A data record of the input.
    pub(crate) fn record(&mut self, r: &RecordView<'_>) {
        let section = r.section();
        let rid = r.record_id();
        for (slot, v) in fields(r) {
            let key = (section, rid, slot);
            *self.occurrences.entry(key).or_insert(0) += 1;
            if self.recent.len() >= RECENT_LIMIT {
                self.recent.clear();
            }
            if let Some(prev) = self.recent.insert(v, key) {
                // Weighted by the bytes the value takes: coincidences of small numbers (a
                // thread id, a zero) rank below values worth looking up.
                if prev != key && prev.0 == section {
                    let e = self.pairs.entry((prev, key)).or_insert((0, 0));
                    e.0 += 1;
                    e.1 += unsigned_width(v) as u64;
                }
            }
        }
    }

    /// Candidate roles: pairs taken greedily by the bytes their values take; a field takes from
    /// at most one set and fills at most one other.
    pub(crate) fn candidates(&self) -> Roles {
        // Pairs worth a look: repeated often enough, for a share of the consumer's values that
        // counts, with values that are not mostly zeros (numbers worth looking up).
        let mut pairs: Vec<(&(Key, Key), u64)> = self
            .pairs
            .iter()
            .filter(|(&(_, c), &(hits, bytes))| {
                hits >= 16 && hits * 64 >= self.occurrences[&c] && bytes >= hits
            })
            .map(|(k, &(_, bytes))| (k, bytes))
            .collect();
        pairs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        // Each (field, is a consumer): its group. A field may take from one set and fill
        // another (an allocation's address taken from the recently freed, put among the live);
        // groups merge when a pair links two of them.
        let mut role: HashMap<(Key, bool), usize> = HashMap::default();
        let mut ngroups = 0usize;
        for (&(p, c), _) in pairs {
            let mut next = role.clone();
            let g = match (role.get(&(p, false)), role.get(&(c, true))) {
                (Some(&gp), Some(&gc)) => {
                    for g in next.values_mut() {
                        if *g == gc {
                            *g = gp;
                        }
                    }
                    gp
                }
                (Some(&g), None) | (None, Some(&g)) => g,
                (None, None) => {
                    ngroups += 1;
                    ngroups - 1
                }
            };
            next.insert((p, false), g);
            next.insert((c, true), g);
            if valid_group(&next, g) {
                role = next;
            }
        }
        let mut producers: HashMap<Key, usize> = HashMap::default();
        let mut consumers: HashMap<Key, usize> = HashMap::default();
        // Groups renumbered densely in order of their smallest field.
        let mut keys: Vec<(&(Key, bool), &usize)> = role.iter().collect();
        keys.sort();
        let mut dense: HashMap<usize, usize> = HashMap::default();
        for (&(k, is_consumer), &g) in keys {
            let n = dense.len();
            let g = *dense.entry(g).or_insert(n);
            if is_consumer {
                consumers.insert(k, g);
            } else {
                producers.insert(k, g);
            }
        }
        // Number the groups with set numbers the input does not use.
        let free: Vec<u8> = (1..=MAX_LIVE_SETS)
            .filter(|&n| !self.used_sets[n as usize])
            .collect();
        let number = |g: usize| free.get(g).copied();
        Roles {
            producers: producers
                .into_iter()
                .filter_map(|(k, g)| Some((k, number(g)?)))
                .collect(),
            consumers: consumers
                .into_iter()
                .filter_map(|(k, g)| Some((k, number(g)?)))
                .collect(),
        }
    }
}

/// Whether group `g` can be written with positions known before each record: within a record
/// type, at most one consumer, and it comes before every producer.
fn valid_group(role: &HashMap<(Key, bool), usize>, g: usize) -> bool {
    let mut by_type: HashMap<(u8, RecordId), (Vec<SlotId>, Vec<SlotId>)> = HashMap::default();
    for (&(k, is_consumer), &kg) in role {
        if kg == g {
            let e = by_type.entry((k.0, k.1)).or_default();
            if is_consumer {
                e.0.push(k.2);
            } else {
                e.1.push(k.2);
            }
        }
    }
    // `p > c` also keeps a field from taking from and filling the same set.
    by_type
        .values()
        .all(|(cons, prods)| cons.len() <= 1 && cons.iter().all(|c| prods.iter().all(|p| p > c)))
}

/// The bytes one consumer value costs when it is not in its set: the set's length plus the
/// value, with two width changes around it when that is wider than two bytes.
pub(crate) fn escape_cost(m: MetaCost, len: u64, v: u64) -> f64 {
    match len.checked_add(v) {
        Some(u) if unsigned_width(u) <= 2 => unsigned_width(u) as f64,
        Some(u) => unsigned_width(u) as f64 + 2.0 * m.width(),
        None => 2.0 * m.width() + m.interp(Interp::None) + m.interp(Interp::Live(1)) + 8.0,
    }
}

/// Second pass: run the sets as the writer will, price every consumer, and keep those for which
/// positions are cheaper than numbers (by a margin, for the width changes neither count).
pub(crate) fn evaluate(reader: &Reader<'_>, cand: Roles, m: MetaCost, keep_all: bool) -> Roles {
    if cand.is_empty() {
        return Roles::default();
    }
    let mut as_live: HashMap<Key, f64> = HashMap::default();
    let mut as_number: HashMap<Key, f64> = HashMap::default();
    let mut last: HashMap<Key, u64> = HashMap::default();
    let mut sets = LiveSets::indexed();
    let mut section = 0u8;
    let mut records = reader.records();
    while let Some(ev) = records.next() {
        let Event::Record(r) = ev else { break };
        if r.section() != section {
            section = r.section();
            sets = LiveSets::indexed();
        }
        if r.record().builtin.is_some() {
            continue;
        }
        let rid = r.record_id();
        for (slot, v) in fields(&r) {
            let key = (section, rid, slot);
            if let Some(&n) = cand.consumers.get(&key) {
                let cost = match sets.position(n, v) {
                    Some(p) => {
                        sets.take(n, p, None);
                        unsigned_width(p) as f64
                    }
                    None => escape_cost(m, sets.len(n) as u64, v),
                };
                *as_live.entry(key).or_insert(0.0) += cost;
                let l = last.entry(key).or_insert(0);
                let plain = if v == *l {
                    0
                } else {
                    unsigned_width(v).min(signed_width(v.wrapping_sub(*l) as i64))
                };
                *l = v;
                *as_number.entry(key).or_insert(0.0) += plain as f64;
            }
            if let Some(&n) = cand.producers.get(&key) {
                sets.insert(n, v, None);
            }
        }
        sets.compact();
    }
    let consumers: HashMap<Key, u8> = cand
        .consumers
        .into_iter()
        .filter(|(k, _)| {
            let live = as_live.get(k).copied().unwrap_or(0.0);
            let number = as_number.get(k).copied().unwrap_or(0.0);
            // Worth a metadata record or two, and a clear gain.
            keep_all || (live < 0.8 * number && number - live >= 64.0)
        })
        .collect();
    let producers = cand
        .producers
        .into_iter()
        .filter(|(k, n)| consumers.iter().any(|(c, cn)| cn == n && c.0 == k.0))
        .collect();
    Roles {
        producers,
        consumers,
    }
}
