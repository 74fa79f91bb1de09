//! Flattening: `$ref` with siblings, `allOf`: a schema's top-level `$ref` target and
//! `allOf` members merged into one schema object (the intersection of two schemas).

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use alloc::{format, vec};
use core::mem::size_of;

use serde_json::{Map, Value};

use crate::grammar::json::{Direction, ELEMENT_BYTES, MEMBER_BYTES, OBJECT_BYTES};
use crate::regex::RegexAst;

use super::{
    Compiler, ContainsGroup, MAX_BRANCH_PRODUCT, R, T_ALL, as_count, is_annotation, is_handled,
    is_unsupported, negate, type_bit, weigh,
};

/// A `$ref`/`allOf` node being flattened: its keywords so far and the subschemas still to
/// merge (popped from the end), each with its pointer, base and the `$ref` target it is.
struct FlatFrame<'v> {
    acc: Value,
    kids: Vec<(&'v Value, String, String, Option<String>)>,
    ptr: String,
    base: String,
    /// The `$ref` target this node is (for cycle detection).
    via: Option<String>,
}

enum Opened<'v> {
    Done(Value),
    Frame(FlatFrame<'v>),
}

/// Rewrite `const` as a one-value `enum` (intersected with an `enum` already there).
fn const_to_enum(m: &mut Map<String, Value>) {
    if let Some(c) = m.remove("const") {
        let list = match m.get("enum") {
            Some(Value::Array(e)) if !e.contains(&c) => Vec::new(),
            _ => vec![c],
        };
        m.insert("enum".into(), Value::Array(list));
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

impl<'a> Compiler<'a> {
    /// The schema with top-level `$ref` and `allOf` merged in: a post-order walk of the
    /// `$ref`/`allOf` tree on an explicit stack (each node's own keywords, then its `$ref`
    /// target and `allOf` members merged in order). A `$ref` back to a schema being
    /// flattened on the current path (a cycle with no structure in between) adds nothing.
    pub(super) fn flatten<'v>(&mut self, s: &'v Value, ptr: &str, base: &str) -> R<Value>
    where
        'a: 'v,
    {
        let mut stack: Vec<FlatFrame<'v>> = Vec::new();
        let mut pending = Some((s, ptr.to_string(), base.to_string(), None));
        let mut result: Option<Value> = None;
        loop {
            if let Some((v, p, b, via)) = pending.take() {
                match self.flatten_open(v, (p, b, via), base, &stack)? {
                    Opened::Done(x) => result = Some(x),
                    Opened::Frame(f) => stack.push(f),
                }
            }
            let Some(top) = stack.last_mut() else {
                return Ok(result.unwrap_or(Value::Bool(true)));
            };
            if let Some(x) = result.take() {
                let acc = core::mem::replace(&mut top.acc, Value::Bool(true));
                top.acc = self.merge(acc, x, &top.ptr)?;
            }
            if let Some(kid) = top.kids.pop() {
                pending = Some(kid);
            } else if let Some(f) = stack.pop() {
                result = Some(match f.acc {
                    Value::Object(am) => self.apply_unevaluated(am, &f.ptr, &f.base, 0)?,
                    acc => acc,
                });
            }
        }
    }

    /// One node of [`Self::flatten`]: a finished value, or a frame whose `$ref` target and
    /// `allOf` members are still to be merged into its own keywords. `outer` is the base
    /// URI the flattened schema is compiled under: a node under another base (a `$ref`
    /// target in another resource) has its relative references made absolute first.
    fn flatten_open<'v>(
        &mut self,
        v: &'v Value,
        (ptr, base, via): (String, String, Option<String>),
        outer: &str,
        path: &[FlatFrame<'v>],
    ) -> R<Opened<'v>>
    where
        'a: 'v,
    {
        let (mut v, mut ptr, mut base, mut via) = (v, ptr, base, via);
        let mut hops = 0usize;
        loop {
            self.spend(1)?;
            let Value::Object(m) = v else {
                self.spend_on(v)?;
                return Ok(Opened::Done(v.clone()));
            };
            base = self.base_of(m, &base);
            if let Some(r) = m.get("$ref").and_then(Value::as_str)
                && self.old_ref
            {
                // Draft 4–7: the target replaces the schema (a chain is followed in place).
                let (t, tp, tb) = self.ref_target(r, &base, &ptr)?;
                hops += 1;
                if hops > self.resources.len() + self.anchors.len() + 64
                    || path.iter().any(|f| f.via.as_deref() == Some(tp.as_str()))
                    || via.as_deref() == Some(tp.as_str())
                {
                    return Ok(Opened::Done(Value::Bool(true)));
                }
                (v, ptr, base, via) = (t, tp.clone(), tb, Some(tp));
                continue;
            }
            let mut acc = Map::new();
            for (k, x) in m {
                if k != "$ref" && k != "allOf" {
                    self.spend_on(x)?;
                    acc.insert(k.clone(), x.clone());
                }
            }
            if base != outer {
                self.absolutize_refs(&mut acc, &base)?;
            }
            // Reported where both are written, before merging moves them elsewhere.
            self.unevaluated_beside_dynamic(&mut acc, &ptr)?;
            let acc = self.rewrite_conditionals(acc, &ptr)?;
            // Popped from the end: the `$ref` target first, then `allOf` in order.
            let mut kids = Vec::new();
            if let Some(Value::Array(subs)) = m.get("allOf") {
                self.alloc(subs.len().saturating_mul(
                    2 * (ptr.len() + base.len() + 16) + size_of::<(&Value, String, String)>(),
                ))?;
                for (i, sub) in subs.iter().enumerate().rev() {
                    kids.push((sub, format!("{ptr}/allOf/{i}"), base.clone(), None));
                }
            }
            if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                let (t, tp, tb) = self.ref_target(r, &base, &ptr)?;
                let cycle = path.iter().any(|f| f.via.as_deref() == Some(tp.as_str()))
                    || via.as_deref() == Some(tp.as_str());
                if !cycle {
                    kids.push((t, tp.clone(), tb, Some(tp)));
                }
            }
            if kids.is_empty() {
                return Ok(Opened::Done(match acc {
                    Value::Object(am) => self.apply_unevaluated(am, &ptr, &base, 0)?,
                    acc => acc,
                }));
            }
            return Ok(Opened::Frame(FlatFrame {
                acc,
                kids,
                ptr,
                base,
                via,
            }));
        }
    }

    pub(super) fn all_of(a: Value, b: Value) -> Value {
        if a == Value::Bool(true) {
            return b;
        }
        if b == Value::Bool(true) || a == b {
            return a;
        }
        // Repeated merges append to one `allOf` instead of nesting them (the depth of the
        // values built stays that of their parts).
        if let Value::Object(mut am) = a {
            if am.len() == 1
                && let Some(Value::Array(list)) = am.get_mut("allOf")
            {
                list.push(b);
                return Value::Object(am);
            }
            let mut m = Map::new();
            m.insert("allOf".into(), Value::Array(vec![Value::Object(am), b]));
            return Value::Object(m);
        }
        let mut m = Map::new();
        m.insert("allOf".into(), Value::Array(vec![a, b]));
        Value::Object(m)
    }

    /// Intersection of two flattened schemas.
    pub(super) fn merge(&mut self, a: Value, b: Value, ptr: &str) -> R<Value> {
        // Merging walks, clones and drops its operands: paid by their node counts. Their
        // bytes were charged where they were built; merging moves them, and what it copies
        // is charged below.
        self.spend_walk(&a)?;
        self.spend_walk(&b)?;
        // Constructed schemas (negations, rewrites) may still hold a `$ref` or `allOf`.
        let unflat = |v: &Value| matches!(v, Value::Object(m) if m.contains_key("$ref") || m.contains_key("allOf"));
        let a = if unflat(&a) {
            self.flatten(&a, ptr, "")?
        } else {
            a
        };
        let b = if unflat(&b) {
            self.flatten(&b, ptr, "")?
        } else {
            b
        };
        let (mut am, mut bm) = match (a, b) {
            (Value::Bool(false), _) | (_, Value::Bool(false)) => return Ok(Value::Bool(false)),
            (Value::Bool(true), x) | (x, Value::Bool(true)) => return Ok(x),
            (Value::Object(am), Value::Object(bm)) => (am, bm),
            (x, _) => return Ok(x),
        };
        self.spend((1 + am.len() + bm.len()) as u64)?;
        // Each of `b`'s keywords moved into `a`, and per keyword of both a new
        // `allOf`/`anyOf` wrapper or merged list.
        let both = bm.keys().filter(|k| am.contains_key(*k)).count();
        self.alloc(
            bm.len().saturating_mul(MEMBER_BYTES)
                + both.saturating_mul(OBJECT_BYTES + MEMBER_BYTES + 2 * ELEMENT_BYTES),
        )?;
        const_to_enum(&mut am);
        const_to_enum(&mut bm);
        // `merge_positions` copies each side's schema for later items into every tuple
        // position of the other side.
        let tuple_len = |m: &Map<String, Value>| match (m.get("prefixItems"), m.get("items")) {
            (Some(Value::Array(p)), _) | (None, Some(Value::Array(p))) => p.len(),
            _ => 0,
        };
        let n = tuple_len(&am).max(tuple_len(&bm));
        if n > 0 {
            for m in [&am, &bm] {
                let rest = m.get("items").filter(|v| !v.is_array());
                if let Some(r) = rest.or_else(|| m.get("additionalItems")) {
                    self.spend_on_times(r, n)?;
                }
            }
            self.alloc(n.saturating_mul(2 * ELEMENT_BYTES + OBJECT_BYTES + MEMBER_BYTES))?;
        }
        Self::merge_positions(&mut am, &mut bm);
        // `additionalProperties` of one side constrains the other side's extra properties.
        // Only then are both sides' `properties` copied (and charged).
        let restricts = |m: &Map<String, Value>| matches!(m.get("additionalProperties"), Some(v) if *v != Value::Bool(true));
        let (b_extra, a_extra) = if restricts(&am) || restricts(&bm) {
            for m in [&am, &bm] {
                for k in ["properties", "additionalProperties"] {
                    if let Some(v) = m.get(k) {
                        let bytes = weigh(v, u64::MAX).1;
                        self.alloc(bytes)?;
                    }
                }
            }
            let a_add = am.get("additionalProperties").cloned();
            let b_add = bm.get("additionalProperties").cloned();
            let a_props = am.get("properties").cloned();
            let b_props = bm.get("properties").cloned();
            let a_pat = am.get("patternProperties");
            let b_pat = bm.get("patternProperties");
            (
                self.cross_additional(&b_props, &a_props, &a_add, a_pat, ptr)?,
                self.cross_additional(&a_props, &b_props, &b_add, b_pat, ptr)?,
            )
        } else {
            (Map::new(), Map::new())
        };
        if let Some(Value::Object(pm)) = am.get_mut("properties") {
            for (k, v) in a_extra {
                pm.insert(k, v);
            }
        }
        self.merge_contains(&mut am, &mut bm);
        for (k, vb) in bm {
            let Some(va) = am.remove(&k) else {
                if k == "properties" {
                    let mut pm = match vb {
                        Value::Object(pm) => pm,
                        other => {
                            am.insert(k, other);
                            continue;
                        }
                    };
                    for (kk, v) in &b_extra {
                        pm.insert(kk.clone(), v.clone());
                    }
                    am.insert(k, Value::Object(pm));
                } else {
                    am.insert(k, vb);
                }
                continue;
            };
            let merged = self.merge_keyword(&k, va, vb, &b_extra, ptr)?;
            am.insert(k, merged);
        }
        Ok(Value::Object(am))
    }

    /// The `contains` conditions of both sides of an `allOf`, all kept: `b`'s condition
    /// (and the ones it already carries) join `a`'s list under `contains_more`. A
    /// `minContains`/`maxContains` without a `contains` beside it means nothing and is
    /// dropped, so it cannot attach to the other side's `contains`.
    fn merge_contains(&self, am: &mut Map<String, Value>, bm: &mut Map<String, Value>) {
        let (cf, more) = (&self.keys.contains_from, &self.keys.contains_more);
        for m in [&mut *am, &mut *bm] {
            if !m.contains_key("contains") {
                for k in ["minContains", "maxContains", cf.as_str(), more.as_str()] {
                    m.remove(k);
                }
            }
        }
        if !(am.contains_key("contains") && bm.contains_key("contains")) {
            return;
        }
        let group_keys = ["contains", "minContains", "maxContains", cf.as_str()];
        let ga: Map<String, Value> = group_keys
            .iter()
            .filter_map(|k| am.get(*k).map(|v| (k.to_string(), v.clone())))
            .collect();
        let gb: Map<String, Value> = group_keys
            .iter()
            .filter_map(|k| bm.remove(*k).map(|v| (k.to_string(), v)))
            .collect();
        let listed = |m: &mut Map<String, Value>| match m.remove(more.as_str()) {
            Some(Value::Array(a)) => a,
            _ => Vec::new(),
        };
        let mut list = listed(am);
        let ga = Value::Object(ga);
        for g in core::iter::once(Value::Object(gb)).chain(listed(bm)) {
            if g != ga && !list.contains(&g) {
                list.push(g);
            }
        }
        if !list.is_empty() {
            am.insert(more.clone(), Value::Array(list));
        }
    }

    /// The `contains` conditions of a flattened array schema that constrain something
    /// (`minContains: 0` without `maxContains` does not): its own, then `contains_more`'s.
    pub(super) fn contains_groups(&self, m: &Map<String, Value>) -> Vec<ContainsGroup> {
        let group = |g: &Map<String, Value>| {
            let schema = g.get("contains")?.clone();
            let min = g.get("minContains").and_then(as_count).unwrap_or(1);
            let max = g.get("maxContains").and_then(as_count);
            let from = g
                .get(self.keys.contains_from.as_str())
                .and_then(as_count)
                .unwrap_or(0);
            (min > 0 || max.is_some()).then_some(ContainsGroup {
                schema,
                min,
                max,
                from,
            })
        };
        let mut out: Vec<ContainsGroup> = group(m).into_iter().collect();
        if let Some(Value::Array(list)) = m.get(self.keys.contains_more.as_str()) {
            for g in list {
                if let Value::Object(g) = g
                    && let Some(g) = group(g)
                    && !out.contains(&g)
                {
                    out.push(g);
                }
            }
        }
        out
    }

    /// Array item schemas by position: each side's tuple part (`prefixItems`, or draft-7
    /// `items` as an array) and the schema of the items after it are combined position by
    /// position into `am` (a side's list `items` applies to the other side's tuple
    /// positions too; `additionalItems` without a tuple `items` applies to nothing).
    fn merge_positions(am: &mut Map<String, Value>, bm: &mut Map<String, Value>) {
        let tuple = |m: &Map<String, Value>| {
            m.contains_key("prefixItems") || matches!(m.get("items"), Some(Value::Array(_)))
        };
        if !tuple(am) && !tuple(bm) {
            for m in [&mut *am, &mut *bm] {
                m.remove("additionalItems");
            }
            return;
        }
        let new_style = am.contains_key("prefixItems") || bm.contains_key("prefixItems");
        let split = |m: &mut Map<String, Value>| -> (Vec<Value>, Value) {
            let add = m.remove("additionalItems");
            match (m.remove("prefixItems"), m.remove("items")) {
                (Some(Value::Array(p)), items) => (p, items.unwrap_or(Value::Bool(true))),
                (None, Some(Value::Array(p))) => (p, add.unwrap_or(Value::Bool(true))),
                (_, items) => (Vec::new(), items.unwrap_or(Value::Bool(true))),
            }
        };
        let explicit = |m: &Map<String, Value>| {
            matches!(m.get("items"), Some(v) if !v.is_array())
                || (m.contains_key("additionalItems")
                    && matches!(m.get("items"), Some(Value::Array(_))))
        };
        // An explicit `items: true` still evaluates every item (`unevaluatedItems`).
        let keep_rest = explicit(am) || explicit(bm);
        let (pa, ra) = split(am);
        let (pb, rb) = split(bm);
        let n = pa.len().max(pb.len());
        let prefix: Vec<Value> = (0..n)
            .map(|i| {
                let x = pa.get(i).cloned().unwrap_or_else(|| ra.clone());
                let y = pb.get(i).cloned().unwrap_or_else(|| rb.clone());
                Self::all_of(x, y)
            })
            .collect();
        let rest = Self::all_of(ra, rb);
        if new_style {
            am.insert("prefixItems".into(), Value::Array(prefix));
            if rest != Value::Bool(true) || keep_rest {
                am.insert("items".into(), rest);
            }
        } else {
            am.insert("items".into(), Value::Array(prefix));
            if rest != Value::Bool(true) || keep_rest {
                am.insert("additionalItems".into(), rest);
            }
        }
    }

    /// The properties of one side of an `allOf` that the other side's
    /// `additionalProperties` constrains: those it neither names nor matches by pattern.
    fn cross_additional(
        &mut self,
        props: &Option<Value>,
        other_props: &Option<Value>,
        add: &Option<Value>,
        other_patterns: Option<&Value>,
        ptr: &str,
    ) -> R<Map<String, Value>> {
        let mut extra = Map::new();
        let (Some(Value::Object(pm)), Some(add)) = (props, add) else {
            return Ok(extra);
        };
        if *add == Value::Bool(true) {
            return Ok(extra);
        }
        let mut pattern_keys = Vec::new();
        if let Some(Value::Object(pp)) = other_patterns {
            for pat in pp.keys() {
                match self.pattern(pat, ptr, "patternProperties")? {
                    Some(r) => {
                        pattern_keys.push(Self::quoted(RegexAst::And(vec![self.string_any(), r])))
                    }
                    None => pattern_keys.push(Self::quoted(self.string_any())),
                }
            }
        }
        for (k, v) in pm {
            if matches!(other_props, Some(Value::Object(o)) if o.contains_key(k)) {
                continue;
            }
            let lit = super::pydumps::string(k);
            let mut matched = false;
            for pk in &pattern_keys {
                if self.key_matches(&lit, pk)? {
                    matched = true;
                    break;
                }
            }
            if !matched {
                self.spend_on(v)?;
                self.spend_on(add)?;
                self.alloc(MEMBER_BYTES + k.len() + OBJECT_BYTES + 2 * ELEMENT_BYTES)?;
                extra.insert(k.clone(), Self::all_of(v.clone(), add.clone()));
            }
        }
        Ok(extra)
    }

    /// `allOf`: keyword `k` of two members, `va` and `vb`, as one value (`b_extra`: the
    /// second member's properties matched by the first's `patternProperties` or
    /// `additionalProperties`, already merged with them).
    fn merge_keyword(
        &mut self,
        k: &str,
        va: Value,
        vb: Value,
        b_extra: &Map<String, Value>,
        ptr: &str,
    ) -> R<Value> {
        if va == vb && k != "properties" {
            return Ok(va);
        }
        Ok(match k {
            "type" => merge_types(&va, &vb),
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                merge_schema_maps(k, va, vb, b_extra)
            }
            "required" => {
                let n = va.as_array().map_or(0, Vec::len) * vb.as_array().map_or(0, Vec::len);
                self.spend(n as u64)?;
                let mut out: Vec<Value> = va.as_array().cloned().unwrap_or_default();
                for x in vb.as_array().cloned().unwrap_or_default() {
                    if !out.contains(&x) {
                        out.push(x);
                    }
                }
                Value::Array(out)
            }
            "dependentRequired" | "dependencies" => match (va, vb) {
                (Value::Object(mut ma), Value::Object(mb)) => {
                    for (kk, v) in mb {
                        ma.entry(kk).or_insert(v);
                    }
                    Value::Object(ma)
                }
                (va, _) => va,
            },
            _ if k == self.keys.not_number || k == self.keys.not_string => {
                let mut out = va.as_array().cloned().unwrap_or_default();
                out.extend(vb.as_array().cloned().unwrap_or_default());
                Value::Array(out)
            }
            "not" => merge_nots(va, vb),
            "additionalProperties"
            | "additionalItems"
            | "propertyNames"
            | "unevaluatedProperties"
            | "unevaluatedItems" => Self::all_of(va, vb),
            "items" | "prefixItems" => self.merge_items(k, va, vb, ptr)?,
            "enum" => {
                let n = va.as_array().map_or(0, Vec::len) * vb.as_array().map_or(0, Vec::len);
                self.spend(n as u64)?;
                let a = va.as_array().cloned().unwrap_or_default();
                let b = vb.as_array().cloned().unwrap_or_default();
                Value::Array(a.into_iter().filter(|x| b.contains(x)).collect())
            }
            "minimum" | "minLength" | "minItems" | "minProperties" | "exclusiveMinimum" => {
                self.merge_bound(k, va, vb, ptr, |x, y| x >= y)?
            }
            "maximum" | "maxLength" | "maxItems" | "maxProperties" | "exclusiveMaximum" => {
                self.merge_bound(k, va, vb, ptr, |x, y| x <= y)?
            }
            "pattern" => {
                let mut out = Vec::new();
                for v in [va, vb] {
                    match v {
                        Value::Array(a) => out.extend(a),
                        other => out.push(other),
                    }
                }
                Value::Array(out)
            }
            "multipleOf" => match (va.as_u64(), vb.as_u64()) {
                (Some(x), Some(y)) if x > 0 && y > 0 => {
                    let l = (x / gcd(x, y)).saturating_mul(y);
                    Value::from(l)
                }
                _ => {
                    self.approx(ptr, k, Direction::Superset, "two different multipleOf")?;
                    va
                }
            },
            "anyOf" | "oneOf" => self.merge_branches(k, va, vb, ptr)?,
            _ if is_annotation(k) => va,
            _ => {
                if is_handled(k) || is_unsupported(k) {
                    self.approx(
                        ptr,
                        k,
                        Direction::Superset,
                        "allOf with two different values; the first is kept",
                    )?;
                }
                va
            }
        })
    }

    /// `items`/`prefixItems` of two `allOf` members: tuples position by position, a tuple
    /// and a list as the tuple (a superset, reported), lists as one `allOf`.
    fn merge_items(&mut self, k: &str, va: Value, vb: Value, ptr: &str) -> R<Value> {
        Ok(match (va, vb) {
            (Value::Array(a), Value::Array(b)) => {
                let n = a.len().max(b.len());
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    match (a.get(i), b.get(i)) {
                        (Some(x), Some(y)) => out.push(Self::all_of(x.clone(), y.clone())),
                        (Some(x), None) | (None, Some(x)) => out.push(x.clone()),
                        (None, None) => {}
                    }
                }
                Value::Array(out)
            }
            (Value::Array(a), _) | (_, Value::Array(a)) => {
                self.approx(ptr, k, Direction::Superset, "tuple and list items merged")?;
                Value::Array(a)
            }
            (va, vb) => Self::all_of(va, vb),
        })
    }

    /// A lower or upper bound of two `allOf` members: the one `keep_first(a, b)` prefers
    /// (the tighter), or the first when either is not a number (reported).
    fn merge_bound(
        &mut self,
        k: &str,
        va: Value,
        vb: Value,
        ptr: &str,
        keep_first: fn(f64, f64) -> bool,
    ) -> R<Value> {
        Ok(match (va.as_f64(), vb.as_f64()) {
            (Some(x), Some(y)) => {
                if keep_first(x, y) {
                    va
                } else {
                    vb
                }
            }
            _ => {
                self.approx(ptr, k, Direction::Superset, "could not merge bounds")?;
                va
            }
        })
    }

    /// `anyOf`s (or `oneOf`s) of two `allOf` members: one branch per pair, up to
    /// `MAX_BRANCH_PRODUCT` (else the first is kept, reported).
    fn merge_branches(&mut self, k: &str, va: Value, vb: Value, ptr: &str) -> R<Value> {
        Ok(match (va, vb) {
            (Value::Array(a), Value::Array(b)) if a.len() * b.len() <= MAX_BRANCH_PRODUCT => {
                let mut out = Vec::with_capacity(a.len() * b.len());
                // Every branch is cloned once per branch of the other side.
                for x in &a {
                    self.spend_on_times(x, b.len())?;
                }
                for y in &b {
                    self.spend_on_times(y, a.len())?;
                }
                for x in &a {
                    for y in &b {
                        out.push(Self::all_of(x.clone(), y.clone()));
                    }
                }
                Value::Array(out)
            }
            (va, _) => {
                self.approx(ptr, k, Direction::Superset, "too many combined branches")?;
                va
            }
        })
    }
}

/// `type` of two `allOf` members: the types both allow.
fn merge_types(va: &Value, vb: &Value) -> Value {
    let set = |v: &Value| -> u8 {
        match v {
            Value::String(s) => type_bit(s).unwrap_or(0),
            Value::Array(a) => a
                .iter()
                .filter_map(|x| x.as_str().and_then(type_bit))
                .fold(0, |x, y| x | y),
            _ => T_ALL,
        }
    };
    let both = set(va) & set(vb);
    // Parsed names set `T_NUM` only together with `T_INT`.
    Value::Array(negate::type_names(both))
}

/// A keyword whose value maps names to schemas (`properties`, `$defs`, ...) of two `allOf`
/// members: a name in both maps to both schemas' `allOf`; for `properties`, the second
/// member's `b_extra` replaces its own entries and adds the names only it has.
fn merge_schema_maps(k: &str, va: Value, vb: Value, b_extra: &Map<String, Value>) -> Value {
    match (va, vb) {
        (Value::Object(mut ma), Value::Object(mb)) => {
            for (kk, v) in mb {
                let v = if k == "properties" {
                    b_extra.get(&kk).cloned().unwrap_or(v)
                } else {
                    v
                };
                let nv = match ma.remove(&kk) {
                    Some(old) => Compiler::all_of(old, v),
                    None => v,
                };
                ma.insert(kk, nv);
            }
            if k == "properties" {
                for (kk, v) in b_extra {
                    if !ma.contains_key(kk) {
                        ma.insert(kk.clone(), v.clone());
                    }
                }
            }
            Value::Object(ma)
        }
        (va, _) => va,
    }
}

/// `not` of two `allOf` members: one `not` of an `anyOf` of both (appended to when merged
/// again, no nesting).
fn merge_nots(va: Value, vb: Value) -> Value {
    match va {
        Value::Object(mut ma)
            if ma.len() == 1 && matches!(ma.get("anyOf"), Some(Value::Array(_))) =>
        {
            if let Some(Value::Array(list)) = ma.get_mut("anyOf") {
                list.push(vb);
            }
            Value::Object(ma)
        }
        va => {
            let mut m = Map::new();
            m.insert("anyOf".into(), Value::Array(vec![va, vb]));
            Value::Object(m)
        }
    }
}
