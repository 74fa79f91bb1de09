//! Rewrites of keywords the grammar cannot express directly into ones it can.
//!
//! - `not` is pushed down: `not (k1 ∧ k2 ∧ …)` is `not k1 ∨ not k2 ∨ …`, and each keyword
//!   applies to one type only, so its negation is a schema of that type (`not minimum: 5` is
//!   a number below 5). Scalar groups become the private keywords
//!   [`PrivateKeys::not_number`] and [`PrivateKeys::not_string`], compiled as regex
//!   complements over one canonical spelling per value (so that complementing spellings
//!   complements values). Subschemas are negated lazily (`{"not": S}` inside `properties`
//!   becomes its own memoized job), so recursive schemas stay finite; `not anyOf` is
//!   negated eagerly, branch by branch, on an explicit stack (a cycle through `anyOf` is not
//!   negated: reported).
//! - `if`/`then`/`else` is `(if ∧ then) ∨ (not if ∧ else)`.
//! - `dependentRequired` `{a: [b]}` is `(a absent) ∨ (a, b required)`; `dependentSchemas`
//!   `{a: S}` is `(a absent) ∨ (a required ∧ S)`; draft-7 `dependencies` is either.
//! - A `oneOf` whose branches are not provably disjoint is `∨ᵢ (Bᵢ ∧ not ∨ⱼ≠ᵢ Bⱼ)`.
//!
//! What cannot be negated (`uniqueItems`, `additionalProperties`, `patternProperties`,
//! `propertyNames`, `enum` members that are arrays or objects, `unevaluated*`) makes
//! [`Compiler::negate`] return `None`; the caller reports the `not` as unsupported.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::mem::size_of;

use serde_json::{Map, Value};

use super::{
    Compiler, MAX_ONE_OF_REWRITE, MAX_UNEVALUATED_DEPTH, PrivateKeys, R, T_ALL, T_ARR, T_BOOL,
    T_INT, T_NULL, T_NUM, T_OBJ, T_STR,
};
use super::{type_bit, value_type};

/// Keywords [`Compiler::rewrite_conditionals`] turns into `anyOf`s.
pub(super) const CONDITIONAL_KEYS: [&str; 6] = [
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
];

pub(super) const NUMBER_KEYS: [&str; 5] = [
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];
pub(super) const STRING_KEYS: [&str; 4] = ["minLength", "maxLength", "pattern", "format"];

pub(super) fn obj(pairs: Vec<(&str, Value)>) -> Value {
    let mut m = Map::new();
    for (k, v) in pairs {
        m.insert(k.into(), v);
    }
    Value::Object(m)
}

pub(super) fn any_of(mut alts: Vec<Value>) -> Value {
    alts.retain(|a| *a != Value::Bool(false));
    if alts.iter().any(|a| *a == Value::Bool(true)) {
        return Value::Bool(true);
    }
    match alts.len() {
        0 => Value::Bool(false),
        1 => alts.pop().unwrap_or(Value::Bool(false)),
        _ => obj(vec![("anyOf", Value::Array(alts))]),
    }
}

/// `oneOf` as `anyOf`: each branch, and none of the others.
pub(super) fn exactly_one(branches: &[Value]) -> Vec<Value> {
    (0..branches.len())
        .map(|i| {
            let others: Vec<Value> = (0..branches.len())
                .filter(|&j| j != i)
                .map(|j| branches[j].clone())
                .collect();
            let none = obj(vec![("not", obj(vec![("anyOf", Value::Array(others))]))]);
            obj(vec![(
                "allOf",
                Value::Array(vec![branches[i].clone(), none]),
            )])
        })
        .collect()
}

fn not_of(s: Value) -> Value {
    match s {
        Value::Bool(b) => Value::Bool(!b),
        // `not not S` is `S` (keeps the depth of built values that of their parts).
        Value::Object(mut m) if m.len() == 1 && m.contains_key("not") => {
            m.remove("not").unwrap_or(Value::Bool(true))
        }
        s => obj(vec![("not", s)]),
    }
}

/// The type bits a `type` keyword allows, or `None` when malformed.
pub(super) fn type_bits(t: &Value) -> Option<u8> {
    match t {
        Value::String(s) => type_bit(s),
        Value::Array(a) => {
            let mut bits = 0;
            for x in a {
                bits |= x.as_str().and_then(type_bit)?;
            }
            Some(bits)
        }
        _ => None,
    }
}

/// The `type` names for `bits`: `number` when both numeric bits are set, `integer` for
/// integers alone, nothing for non-integral numbers alone.
pub(super) fn type_names(bits: u8) -> Vec<Value> {
    let mut names = Vec::new();
    for (bit, name) in [
        (T_NULL, "null"),
        (T_BOOL, "boolean"),
        (T_STR, "string"),
        (T_ARR, "array"),
        (T_OBJ, "object"),
    ] {
        if bits & bit != 0 {
            names.push(Value::String(name.into()));
        }
    }
    match (bits & T_INT != 0, bits & T_NUM != 0) {
        (true, true) => names.push("number".into()),
        (true, false) => names.push("integer".into()),
        _ => {}
    }
    names
}

/// A schema allowing exactly the types in `bits` (non-integral numbers through
/// [`PrivateKeys::not_number`]).
pub(super) fn types_schema(bits: u8, keys: &PrivateKeys) -> Value {
    let names = type_names(bits);
    let mut alts = Vec::new();
    if bits & T_NUM != 0 && bits & T_INT == 0 {
        alts.push(obj(vec![
            ("type", "number".into()),
            (
                &keys.not_number,
                Value::Array(vec![obj(vec![("type", "integer".into())])]),
            ),
        ]));
    }
    if bits & T_ALL == T_ALL {
        return Value::Bool(true);
    }
    if !names.is_empty() {
        alts.push(obj(vec![("type", Value::Array(names))]));
    }
    any_of(alts)
}

/// A node of [`Compiler::negate`]: its own alternatives, and its `anyOf` branches whose
/// negations are still to be intersected (popped from the end).
struct NegFrame {
    key: String,
    alts: Vec<Value>,
    branches: Vec<(Value, String)>,
    acc: Value,
    ptr: String,
    base: String,
}

enum NegOpen {
    Unsupported,
    Done(Value),
    Frame(NegFrame),
}

impl Compiler<'_> {
    /// A schema accepting exactly the instances `s` rejects, or `None` when this compiler
    /// cannot express it. `not (B1 ∨ B2 …)` = `not B1 ∧ not B2 …` is computed on an
    /// explicit stack; subschemas below keywords are negated lazily (`{"not": S}`).
    pub(super) fn negate(&mut self, s: &Value, ptr: &str, base: &str) -> R<Option<Value>> {
        let mut stack: Vec<NegFrame> = Vec::new();
        match self.negate_open(s, ptr.into(), base, &stack)? {
            NegOpen::Unsupported => return Ok(None),
            NegOpen::Done(v) => return Ok(Some(v)),
            NegOpen::Frame(f) => stack.push(f),
        }
        let mut result: Option<Value> = None;
        loop {
            let Some(top) = stack.last_mut() else {
                return Ok(result);
            };
            if let Some(nb) = result.take() {
                let acc = core::mem::replace(&mut top.acc, Value::Bool(true));
                top.acc = self.merge(acc, nb, &top.ptr)?;
            }
            if let Some((b, bp)) = top.branches.pop() {
                let base = top.base.clone();
                match self.negate_open(&b, bp, &base, &stack)? {
                    NegOpen::Unsupported => return Ok(None),
                    NegOpen::Done(v) => result = Some(v),
                    NegOpen::Frame(f) => stack.push(f),
                }
            } else if let Some(mut f) = stack.pop() {
                f.alts.push(f.acc);
                result = Some(any_of(f.alts));
            }
        }
    }

    /// One node of [`Self::negate`]: its negation when it has no `anyOf`, else a frame.
    fn negate_open(&mut self, s: &Value, ptr: String, base: &str, path: &[NegFrame]) -> R<NegOpen> {
        let key = format!("{}:{base}|{s}", base.len());
        self.spend(1 + key.len() as u64 / 8)?;
        // The key is kept by the frame; printing it cost about as much as `s` itself.
        self.alloc(3 * key.len() + size_of::<NegFrame>())?;
        // The alternatives clone parts of the flattened schema (the `oneOf` pairs twice; the
        // flattened copy once more).
        self.spend_on_times(s, 3)?;
        if path.iter().any(|f| f.key == key) {
            return Ok(NegOpen::Unsupported);
        }
        let f = self.flatten(s, &ptr, base)?;
        let m = match f {
            Value::Bool(b) => return Ok(NegOpen::Done(Value::Bool(!b))),
            Value::Object(m) => m,
            _ => return Ok(NegOpen::Unsupported),
        };
        self.spend(m.len() as u64)?;
        let mut alts: Vec<Value> = Vec::new();
        if !self.negate_scalar_keywords(&m, &mut alts)
            || !self.negate_array_keywords(&m, &mut alts)
            || !Self::negate_object_keywords(&m, &mut alts)
            || !Self::negate_applicators(&m, &mut alts)
        {
            return Ok(NegOpen::Unsupported);
        }
        if let Some(Value::Array(bs)) = m.get("anyOf") {
            let branches = bs
                .iter()
                .enumerate()
                .rev()
                .map(|(i, b)| (b.clone(), format!("{ptr}/anyOf/{i}")))
                .collect();
            return Ok(NegOpen::Frame(NegFrame {
                key,
                alts,
                branches,
                acc: Value::Bool(true),
                ptr,
                base: base.into(),
            }));
        }
        Ok(NegOpen::Done(any_of(alts)))
    }

    /// Pushes the negations of `type`, `const`/`enum` and the number, string and size keywords
    /// of `m` onto `alts`; `false` when one of them cannot be negated.
    fn negate_scalar_keywords(&self, m: &Map<String, Value>, alts: &mut Vec<Value>) -> bool {
        if let Some(t) = m.get("type") {
            let Some(bits) = type_bits(t) else {
                return false;
            };
            alts.push(types_schema(T_ALL & !bits, &self.keys));
        }
        let mut values: Option<Vec<Value>> = m.get("const").map(|c| vec![c.clone()]);
        if let Some(Value::Array(e)) = m.get("enum") {
            values = Some(match values {
                Some(c) => c.into_iter().filter(|x| e.contains(x)).collect(),
                None => e.clone(),
            });
        }
        if let Some(vals) = values {
            match negate_values(&vals, &self.keys) {
                Some(v) => alts.push(v),
                None => return false,
            }
        }
        let group = |keys: &[&str]| -> Map<String, Value> {
            let mut g = Map::new();
            for k in keys {
                if let Some(v) = m.get(*k) {
                    g.insert((*k).into(), v.clone());
                }
            }
            g
        };
        let num = group(&NUMBER_KEYS);
        if !num.is_empty() {
            alts.push(obj(vec![
                ("type", "number".into()),
                (
                    &self.keys.not_number,
                    Value::Array(vec![Value::Object(num)]),
                ),
            ]));
        }
        let mut st = group(&STRING_KEYS);
        if let Some(f) = st.get("format").and_then(Value::as_str)
            && (super::formats::format_regex(f).is_none() || !self.opts.assert_formats)
        {
            // Unasserted formats are annotations; their negation is nothing.
            st.remove("format");
        }
        if !st.is_empty() {
            alts.push(obj(vec![
                ("type", "string".into()),
                (&self.keys.not_string, Value::Array(vec![Value::Object(st)])),
            ]));
        }
        let private = [
            (self.keys.not_number.clone(), "number"),
            (self.keys.not_string.clone(), "string"),
        ];
        for (k, ty) in private {
            if let Some(Value::Array(gs)) = m.get(k.as_str()) {
                for g in gs {
                    let mut g = g.clone();
                    if let Value::Object(gm) = &mut g
                        && !gm.contains_key("type")
                    {
                        gm.insert("type".into(), ty.into());
                    }
                    alts.push(Self::all_of(obj(vec![("type", ty.into())]), g));
                }
            }
        }
        let count = |k: &str| m.get(k).and_then(super::as_count);
        for (k, other, ty) in [
            ("minItems", "maxItems", "array"),
            ("minProperties", "maxProperties", "object"),
        ] {
            if let Some(n) = count(k)
                && n > 0
            {
                alts.push(obj(vec![("type", ty.into()), (other, (n - 1).into())]));
            }
            if let Some(n) = count(other) {
                alts.push(obj(vec![("type", ty.into()), (k, (n + 1).into())]));
            }
        }
        true
    }

    /// Pushes the negations of the item and `contains` keywords of `m` onto `alts`; `false`
    /// when one of them cannot be negated (`uniqueItems`).
    fn negate_array_keywords(&self, m: &Map<String, Value>, alts: &mut Vec<Value>) -> bool {
        if !negate_items(m, alts, &self.keys) {
            return false;
        }
        // Each `contains` condition fails on its own (an `allOf` of several lists the others
        // under `contains_more`).
        let cf = self.keys.contains_from.as_str();
        for g in self.contains_groups(m) {
            if g.min > 0 {
                alts.push(obj(vec![
                    ("type", "array".into()),
                    ("contains", g.schema.clone()),
                    ("minContains", 0.into()),
                    ("maxContains", (g.min - 1).into()),
                    (cf, g.from.into()),
                ]));
            }
            if let Some(hi) = g.max {
                alts.push(obj(vec![
                    ("type", "array".into()),
                    ("contains", g.schema),
                    ("minContains", (hi + 1).into()),
                    (cf, g.from.into()),
                ]));
            }
        }
        m.get("uniqueItems") != Some(&Value::Bool(true))
    }

    /// Pushes the negations of the property and dependency keywords of `m` onto `alts`;
    /// `false` when one of them cannot be negated.
    fn negate_object_keywords(m: &Map<String, Value>, alts: &mut Vec<Value>) -> bool {
        if let Some(Value::Array(req)) = m.get("required") {
            for r in req {
                if let Some(r) = r.as_str() {
                    alts.push(obj(vec![
                        ("type", "object".into()),
                        ("properties", obj(vec![(r, Value::Bool(false))])),
                    ]));
                }
            }
        }
        if let Some(Value::Object(props)) = m.get("properties") {
            for (p, s) in props {
                if *s == Value::Bool(true) {
                    continue;
                }
                alts.push(obj(vec![
                    ("type", "object".into()),
                    ("required", Value::Array(vec![p.as_str().into()])),
                    ("properties", obj(vec![(p, not_of(s.clone()))])),
                ]));
            }
        }
        for k in [
            "additionalProperties",
            "patternProperties",
            "propertyNames",
            "unevaluatedProperties",
            "unevaluatedItems",
            "$dynamicRef",
            "$recursiveRef",
        ] {
            match m.get(k) {
                None | Some(Value::Bool(true)) => {}
                Some(Value::Object(o)) if o.is_empty() => {}
                Some(_) => return false,
            }
        }
        let mut deps: Vec<(String, Value)> = Vec::new();
        for k in ["dependentRequired", "dependentSchemas", "dependencies"] {
            if let Some(Value::Object(d)) = m.get(k) {
                deps.extend(d.iter().map(|(a, v)| (a.clone(), v.clone())));
            }
        }
        for (a, dep) in deps {
            match dep {
                Value::Array(names) => {
                    for b in names {
                        if let Some(b) = b.as_str() {
                            alts.push(obj(vec![
                                ("type", "object".into()),
                                ("required", Value::Array(vec![a.as_str().into()])),
                                ("properties", obj(vec![(b, Value::Bool(false))])),
                            ]));
                        }
                    }
                }
                s => alts.push(obj(vec![
                    ("type", "object".into()),
                    ("required", Value::Array(vec![a.as_str().into()])),
                    ("not", s),
                ])),
            }
        }
        true
    }

    /// Pushes the negations of `oneOf`, `not` and `if`/`then`/`else` in `m` onto `alts`;
    /// `false` when a `oneOf` is too wide to rewrite.
    fn negate_applicators(m: &Map<String, Value>, alts: &mut Vec<Value>) -> bool {
        if let Some(Value::Array(bs)) = m.get("oneOf") {
            // None valid, or two valid.
            alts.push(not_of(obj(vec![("anyOf", Value::Array(bs.clone()))])));
            if bs.len() > MAX_ONE_OF_REWRITE {
                return false;
            }
            for i in 0..bs.len() {
                for j in i + 1..bs.len() {
                    alts.push(obj(vec![(
                        "allOf",
                        Value::Array(vec![bs[i].clone(), bs[j].clone()]),
                    )]));
                }
            }
        }
        if let Some(n) = m.get("not") {
            alts.push(n.clone());
        }
        if let Some(i) = m.get("if") {
            let t = m.get("then").cloned().unwrap_or(Value::Bool(true));
            let e = m.get("else").cloned().unwrap_or(Value::Bool(true));
            if t != Value::Bool(true) {
                alts.push(obj(vec![(
                    "allOf",
                    Value::Array(vec![i.clone(), not_of(t)]),
                )]));
            }
            if e != Value::Bool(true) {
                alts.push(not_of(obj(vec![(
                    "anyOf",
                    Value::Array(vec![i.clone(), e]),
                )])));
            }
        }
        true
    }
}

impl Compiler<'_> {
    /// `if`/`then`/`else` and the dependency keywords as `anyOf`s (merged into `acc`).
    pub(super) fn rewrite_conditionals(
        &mut self,
        mut acc: Map<String, Value>,
        ptr: &str,
    ) -> R<Value> {
        if !CONDITIONAL_KEYS.iter().any(|k| acc.contains_key(*k)) {
            return Ok(Value::Object(acc));
        }
        let mut extra: Vec<Value> = Vec::new();
        if self.before_7 {
            // Not keywords before draft 7: ignored like any unknown keyword.
            for k in ["if", "then", "else"] {
                if acc.remove(k).is_some() {
                    self.note(ptr, k, super::CoverageStatus::Unknown)?;
                }
            }
        }
        if let Some(i) = acc.remove("if") {
            let t = acc.remove("then").unwrap_or(Value::Bool(true));
            let e = acc.remove("else").unwrap_or(Value::Bool(true));
            // A lone `if` validates nothing, but when it holds it evaluates keys and items
            // (for `unevaluated*`), so keep it when it names any.
            let evaluates = ["properties", "patternProperties", "additionalProperties"]
                .iter()
                .chain(&["prefixItems", "items", "contains", "unevaluatedProperties"])
                .chain(&["unevaluatedItems", "$ref", "allOf", "anyOf", "oneOf"])
                .any(|k| i.get(*k).is_some());
            if t != Value::Bool(true) || e != Value::Bool(true) || evaluates {
                // `if` is copied once (the rest is moved).
                self.spend_on(&i)?;
                extra.push(any_of(vec![
                    obj(vec![("allOf", Value::Array(vec![i.clone(), t]))]),
                    obj(vec![("allOf", Value::Array(vec![not_of(i), e]))]),
                ]));
            }
        } else {
            acc.remove("then");
            acc.remove("else");
        }
        for k in ["dependentRequired", "dependentSchemas", "dependencies"] {
            let Some(Value::Object(d)) = acc.remove(k) else {
                continue;
            };
            for (a, dep) in d {
                let absent = obj(vec![("properties", obj(vec![(&a, Value::Bool(false))]))]);
                let present = match dep {
                    Value::Array(names) => {
                        let mut req = vec![Value::String(a.clone())];
                        req.extend(names);
                        obj(vec![("required", Value::Array(req))])
                    }
                    s => obj(vec![(
                        "allOf",
                        Value::Array(vec![
                            obj(vec![("required", Value::Array(vec![a.as_str().into()]))]),
                            s,
                        ]),
                    )]),
                };
                extra.push(any_of(vec![absent, present]));
            }
        }
        let mut out = Value::Object(acc);
        for e in extra {
            out = self.merge(out, e, ptr)?;
        }
        Ok(out)
    }
}

/// Alternatives violating `items`/`prefixItems`/`additionalItems`; false when one cannot
/// be expressed.
fn negate_items(m: &Map<String, Value>, alts: &mut Vec<Value>, keys: &PrivateKeys) -> bool {
    let (prefix, rest): (&[Value], Option<&Value>) = match (m.get("prefixItems"), m.get("items")) {
        (Some(Value::Array(p)), items) => (p, items),
        (None, Some(Value::Array(p))) => (p, m.get("additionalItems")),
        (None, items) => (&[], items),
        (Some(_), _) => return false,
    };
    for (i, s) in prefix.iter().enumerate() {
        if *s == Value::Bool(true) {
            continue;
        }
        let mut p = vec![Value::Bool(true); i];
        p.push(not_of(s.clone()));
        alts.push(obj(vec![
            ("type", "array".into()),
            ("minItems", (i as u64 + 1).into()),
            ("prefixItems", Value::Array(p)),
        ]));
    }
    if let Some(r) = rest
        && *r != Value::Bool(true)
    {
        alts.push(obj(vec![
            ("type", "array".into()),
            ("contains", not_of(r.clone())),
            (&keys.contains_from, (prefix.len() as u64).into()),
        ]));
    }
    true
}

/// Alternatives to a list of values: other types, other scalars of the same types.
fn negate_values(vals: &[Value], keys: &PrivateKeys) -> Option<Value> {
    let mut present = 0u8;
    let mut nums = Vec::new();
    let mut strs = Vec::new();
    let mut bools = Vec::new();
    for v in vals {
        match v {
            Value::Null => present |= T_NULL,
            Value::Bool(b) => {
                present |= T_BOOL;
                bools.push(*b);
            }
            Value::Number(_) => {
                present |= T_INT | T_NUM;
                nums.push(v.clone());
            }
            Value::String(_) => {
                present |= T_STR;
                strs.push(v.clone());
            }
            Value::Array(_) | Value::Object(_) => return None,
        }
        let _ = value_type(v);
    }
    let mut alts = vec![types_schema(T_ALL & !present, keys)];
    if present & T_BOOL != 0 {
        for b in [true, false] {
            if !bools.contains(&b) {
                alts.push(obj(vec![("enum", Value::Array(vec![b.into()]))]));
            }
        }
    }
    if !nums.is_empty() {
        alts.push(obj(vec![
            ("type", "number".into()),
            (
                &keys.not_number,
                Value::Array(vec![obj(vec![("enum", Value::Array(nums))])]),
            ),
        ]));
    }
    if !strs.is_empty() {
        alts.push(obj(vec![
            ("type", "string".into()),
            (
                &keys.not_string,
                Value::Array(vec![obj(vec![("enum", Value::Array(strs))])]),
            ),
        ]));
    }
    Some(any_of(alts))
}

/// Most `anyOf` branches expanded (into all their non-empty subsets) for `unevaluated*`.
const MAX_UNEVALUATED_BRANCHES: usize = 4;

impl Compiler<'_> {
    /// A `$dynamicRef`/`$recursiveRef` beside `unevaluated*` is not compiled (ignored,
    /// reported): which keys or items its target evaluates is unknown, so `unevaluated*` is
    /// removed too, reported at `ptr` (a superset; treating them as evaluating nothing would
    /// reject valid instances).
    pub(super) fn unevaluated_beside_dynamic(
        &mut self,
        acc: &mut Map<String, Value>,
        ptr: &str,
    ) -> R<()> {
        let Some(r) = ["$dynamicRef", "$recursiveRef"]
            .into_iter()
            .find(|r| acc.contains_key(*r))
        else {
            return Ok(());
        };
        let why = format!("what `{r}` evaluates is not tracked; ignored");
        for k in ["unevaluatedProperties", "unevaluatedItems"] {
            if acc.remove(k).is_some() {
                self.approx(ptr, k, super::Direction::Superset, &why)?;
            }
        }
        Ok(())
    }

    /// `unevaluatedProperties`/`unevaluatedItems` of a flattened schema (its own subtree
    /// already merged in) as `additionalProperties`/`items`.
    ///
    /// The keys (items) a successful validation evaluates are those named by the applied
    /// subschemas. Without `anyOf`/`oneOf` that is the merged `properties`/
    /// `patternProperties` (`prefixItems`, `contains`), so `unevaluatedProperties: U` is
    /// `additionalProperties: U` (and nothing once an `additionalProperties` is there). An
    /// `anyOf` is expanded into the conjunctions of its non-empty branch subsets (the keys
    /// evaluated grow with the set of valid branches, so some subset's conjunction holds
    /// exactly when the schema does); a `oneOf` keeps its exclusivity and gains an `anyOf`
    /// of its branches with the rest. `not` and failed `if`s evaluate nothing: their
    /// keywords are pushed down later and then meet the `additionalProperties`.
    pub(super) fn apply_unevaluated(
        &mut self,
        mut acc: Map<String, Value>,
        ptr: &str,
        base: &str,
        depth: usize,
    ) -> R<Value> {
        self.unevaluated_beside_dynamic(&mut acc, ptr)?;
        let up = acc.remove("unevaluatedProperties");
        let ui = acc.remove("unevaluatedItems");
        if up.is_none() && ui.is_none() {
            return Ok(Value::Object(acc));
        }
        if depth >= MAX_UNEVALUATED_DEPTH {
            let k = if up.is_some() {
                "unevaluatedProperties"
            } else {
                "unevaluatedItems"
            };
            self.approx(
                ptr,
                k,
                super::Direction::Superset,
                "anyOf/oneOf nested too deeply to track evaluated keys; ignored",
            )?;
            return Ok(Value::Object(acc));
        }
        let put_back = |m: &mut Map<String, Value>| {
            if let Some(u) = &up {
                m.insert("unevaluatedProperties".into(), u.clone());
            }
            if let Some(u) = &ui {
                m.insert("unevaluatedItems".into(), u.clone());
            }
        };
        for key in ["anyOf", "oneOf"] {
            let Some(Value::Array(branches)) = acc.get(key).cloned() else {
                continue;
            };
            if key == "anyOf" && branches.len() > MAX_UNEVALUATED_BRANCHES {
                self.approx(
                    ptr,
                    "unevaluatedProperties",
                    super::Direction::Superset,
                    "too many anyOf branches to track evaluated keys; ignored",
                )?;
                acc.remove(key);
                acc.insert(key.into(), Value::Array(branches));
                return Ok(Value::Object(acc));
            }
            let mut rest = acc.clone();
            rest.remove(key);
            let n = branches.len();
            let subsets: Vec<Vec<usize>> = if key == "anyOf" {
                (1u32..(1 << n))
                    .map(|bits| (0..n).filter(|i| bits & (1 << i) != 0).collect())
                    .collect()
            } else {
                (0..n).map(|i| vec![i]).collect()
            };
            let mut alts = Vec::with_capacity(subsets.len());
            for set in subsets {
                let mut conj = Value::Object(rest.clone());
                for i in set {
                    let bp = format!("{ptr}/{key}/{i}");
                    let fb = self.flatten(&branches[i], &bp, base)?;
                    conj = self.merge(conj, fb, ptr)?;
                }
                let Value::Object(mut cm) = conj else {
                    alts.push(conj);
                    continue;
                };
                put_back(&mut cm);
                alts.push(self.apply_unevaluated(cm, ptr, base, depth + 1)?);
            }
            if key == "anyOf" {
                return Ok(any_of(alts));
            }
            // oneOf: keep the exclusivity, add the evaluated-key view of each branch.
            let mut out = rest;
            out.insert("oneOf".into(), Value::Array(branches));
            out.insert("anyOf".into(), Value::Array(alts));
            return Ok(Value::Object(out));
        }
        // `true` evaluates every key too: recorded as `additionalProperties: true`, which
        // changes nothing here but tells an enclosing `unevaluatedProperties` so.
        if let Some(u) = up
            && !acc.contains_key("additionalProperties")
        {
            acc.insert("additionalProperties".into(), u);
        }
        if let Some(u) = ui {
            let list_items = matches!(acc.get("items"), Some(v) if !v.is_array());
            if !list_items {
                // Items any `contains` condition matches are evaluated.
                let mut evaluated: Vec<Value> = acc.get("contains").cloned().into_iter().collect();
                if let Some(Value::Array(more)) = acc.get(self.keys.contains_more.as_str()) {
                    evaluated.extend(more.iter().filter_map(|g| g.get("contains").cloned()));
                }
                let u = if evaluated.is_empty() {
                    u
                } else {
                    evaluated.push(u);
                    any_of(evaluated)
                };
                if matches!(acc.get("items"), Some(Value::Array(_))) {
                    // Draft-7 tuple `items`: the rest is `additionalItems`.
                    if !acc.contains_key("additionalItems") {
                        acc.insert("additionalItems".into(), u);
                    }
                } else {
                    acc.insert("items".into(), u);
                }
            }
        }
        Ok(Value::Object(acc))
    }
}
