//! The JSON forms of trees, caller/callee figures and differences (feature `json`; the schema
//! is in docs/stacks.md).

use serde_json::{json, Map, Value};

use super::{CallerCallee, Cost, Figures, StackDiff, Symbol, Tree, TreeView};

/// The schema names, one per form; a change that breaks a reader gets a new number.
pub const TREE_SCHEMA: &str = "mtf-stacks-tree/1";
/// See [`TREE_SCHEMA`].
pub const CALLERS_SCHEMA: &str = "mtf-stacks-callers/1";
/// See [`TREE_SCHEMA`].
pub const DIFF_SCHEMA: &str = "mtf-stacks-diff/1";

/// A figure: a number where it fits 64 bits, else a decimal string (as `mtf stats`).
fn big(v: u128) -> Value {
    match u64::try_from(v) {
        Ok(n) => Value::from(n),
        Err(_) => Value::from(v.to_string()),
    }
}

/// A signed figure, likewise.
fn signed(v: i128) -> Value {
    match i64::try_from(v) {
        Ok(n) => Value::from(n),
        Err(_) => Value::from(v.to_string()),
    }
}

/// `{ "allocations": …, "bytes": …, "temporary": …, "peak": …, "leaked": … }`.
fn figures(f: &Figures) -> Value {
    let mut m = Map::new();
    for c in Cost::ALL {
        m.insert(c.name().into(), big(f.get(c)));
    }
    Value::Object(m)
}

fn symbol(s: &Symbol) -> Value {
    json!({
        "text": s.text,
        "function": s.function,
        "owner": s.owner,
        "module": s.module,
        "file": s.file,
        "line": s.line,
        "address": s.address.map(|a| format!("0x{a:x}")),
        "site": s.site,
    })
}

fn view(v: &TreeView) -> Value {
    json!({ "sorted_by": v.cost.name(), "top": v.top, "threshold": v.threshold })
}

impl Tree {
    /// The tree as JSON (`mtf-stacks-tree/1`, docs/stacks.md): the symbols, then the rows the
    /// view shows in pre-order, each with its parent and depth (a flat list: a deep recursion
    /// makes no deeply nested document).
    pub fn to_json(&self, v: &TreeView) -> Value {
        let (rows, left) = self.walk(v);
        // Row ids in the output are positions in `rows`.
        let mut pos = vec![usize::MAX; self.nodes.len()];
        for (i, &(n, _)) in rows.iter().enumerate() {
            pos[n as usize] = i;
        }
        let nodes: Vec<Value> = rows
            .iter()
            .enumerate()
            .map(|(i, &(n, depth))| {
                let node = &self.nodes[n as usize];
                json!({
                    "id": i,
                    "parent": node.parent.map(|p| pos[p as usize]),
                    "depth": depth,
                    "symbol": node.symbol,
                    "inclusive": figures(&node.inclusive),
                    "self": figures(&node.exclusive),
                })
            })
            .collect();
        json!({
            "schema": TREE_SCHEMA,
            "kind": self.kind.name(),
            "merge": self.merge.name(),
            "view": view(v),
            "total": figures(&self.total),
            "stacks": figures(&self.stacks),
            "suppressed_leaked": big(self.suppressed_leaked),
            "symbols": self.symbols.iter().map(symbol).collect::<Vec<_>>(),
            "nodes": nodes,
            "omitted": left,
        })
    }
}

impl CallerCallee {
    /// The caller/callee figures as JSON (`mtf-stacks-callers/1`, docs/stacks.md).
    pub fn to_json(&self, v: &TreeView) -> Value {
        let (rows, left) = self.shown(v);
        let pairs = |list: &[(u32, Figures)]| -> Vec<Value> {
            list.iter()
                .map(|(s, f)| json!({ "symbol": s, "figures": figures(f) }))
                .collect()
        };
        let out: Vec<Value> = rows
            .iter()
            .map(|&r| {
                let row = &self.rows[r as usize];
                json!({
                    "symbol": row.symbol,
                    "inclusive": figures(&row.inclusive),
                    "self": figures(&row.exclusive),
                    "callers": pairs(&row.callers),
                    "callees": pairs(&row.callees),
                })
            })
            .collect();
        json!({
            "schema": CALLERS_SCHEMA,
            "merge": self.merge.name(),
            "view": view(v),
            "total": figures(&self.total),
            "suppressed_leaked": big(self.suppressed_leaked),
            "symbols": self.symbols.iter().map(symbol).collect::<Vec<_>>(),
            "rows": out,
            "omitted": left,
        })
    }
}

impl StackDiff {
    /// The differences as JSON (`mtf-stacks-diff/1`, docs/stacks.md): the totals, then the
    /// `top` stacks (0: all) whose `cost` changed most, each with every figure before, after
    /// and the change.
    pub fn to_json(&self, cost: Cost, top: usize) -> Value {
        let delta = |b: &Figures, a: &Figures| {
            let mut m = Map::new();
            for c in Cost::ALL {
                let d = i128::try_from(a.get(c)).unwrap_or(i128::MAX)
                    - i128::try_from(b.get(c)).unwrap_or(i128::MAX);
                m.insert(c.name().into(), signed(d));
            }
            Value::Object(m)
        };
        let rows = self.changed(cost, top);
        let changed = self.stacks.iter().filter(|s| s.delta(cost) != 0).count();
        json!({
            "schema": DIFF_SCHEMA,
            "sorted_by": cost.name(),
            "before": figures(&self.before),
            "after": figures(&self.after),
            "change": delta(&self.before, &self.after),
            "stacks_total": self.stacks.len(),
            "stacks_changed": changed,
            "stacks": rows.iter().map(|r| json!({
                "frames": r.frames,
                "before": figures(&r.before),
                "after": figures(&r.after),
                "change": delta(&r.before, &r.after),
            })).collect::<Vec<_>>(),
            "omitted": changed - rows.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tree::tests::sample;
    use super::super::{diff, TreeKind, TreeOptions};
    use super::*;

    #[test]
    fn a_tree_is_a_flat_list_in_pre_order() {
        let t = Tree::build(&sample(), TreeKind::TopDown, &TreeOptions::default());
        let j = t.to_json(&TreeView::default());
        assert_eq!(j["schema"], TREE_SCHEMA);
        assert_eq!(j["total"]["allocations"], 11);
        assert_eq!(j["total"]["bytes"], 175);
        let nodes = j["nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 8);
        assert_eq!(nodes[0]["parent"], Value::Null);
        assert_eq!(nodes[1]["parent"], 0);
        assert_eq!(nodes[2]["depth"], 2);
        let sym = nodes[2]["symbol"].as_u64().unwrap() as usize;
        assert_eq!(j["symbols"][sym]["text"], "b");
        assert_eq!(nodes[2]["self"]["bytes"], 100);
        assert_eq!(big(u128::MAX), Value::from(u128::MAX.to_string()));
    }

    #[test]
    fn callers_and_diff_json() {
        let p = sample();
        let cc = CallerCallee::build(&p, &TreeOptions::default());
        let j = cc.to_json(&TreeView {
            top: 2,
            ..TreeView::default()
        });
        assert_eq!(j["rows"].as_array().unwrap().len(), 2);
        assert_eq!(j["omitted"], 3);
        let mut q = p.clone();
        q.leaves[0].costs.allocations = 5;
        let d = diff(&p, &q).to_json(Cost::Allocations, 0);
        assert_eq!(d["change"]["allocations"], 2);
        assert_eq!(d["stacks"][0]["frames"], json!(["main", "a", "b"]));
        assert_eq!(d["stacks"][0]["change"]["bytes"], 0);
        assert_eq!(d["omitted"], 0);
    }
}
