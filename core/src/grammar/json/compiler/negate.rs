//! Rewrites of keywords the grammar cannot express directly into ones it can.
//!
//! - `not` is pushed down: `not (k1 ∧ k2 ∧ …)` is `not k1 ∨ not k2 ∨ …`, and each keyword
//!   applies to one type only, so its negation is a schema of that type (`not minimum: 5` is
//!   a number below 5). Scalar groups become the internal keywords [`NOT_NUMBER`] and
//!   [`NOT_STRING`], compiled as regex complements over one canonical spelling per value
//!   (so that complementing spellings complements values). Subschemas are negated lazily
//!   (`{"not": S}` inside `properties`), so recursive schemas stay finite.
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

use serde_json::{Map, Value};

use super::{
    Compiler, MAX_ONE_OF_REWRITE, R, T_ALL, T_ARR, T_BOOL, T_INT, T_NULL, T_NUM, T_OBJ, T_STR,
};
use super::{is_annotation, type_bit, value_type};

/// Internal keyword: a number must satisfy none of these keyword groups.
pub(super) const NOT_NUMBER: &str = "$sieve:notNumber";
/// Internal keyword: a string must satisfy none of these keyword groups.
pub(super) const NOT_STRING: &str = "$sieve:notString";
/// Internal keyword: `contains` counts only the items from this index on.
pub(super) const CONTAINS_FROM: &str = "$sieve:containsFrom";

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
/// [`NOT_NUMBER`]).
pub(super) fn types_schema(bits: u8) -> Value {
    let names = type_names(bits);
    let mut alts = Vec::new();
    if bits & T_NUM != 0 && bits & T_INT == 0 {
        alts.push(obj(vec![
            ("type", "number".into()),
            (
                NOT_NUMBER,
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

impl Compiler<'_> {
    /// A schema accepting exactly the instances `s` rejects, or `None` when this compiler
    /// cannot express it.
    pub(super) fn negate(&mut self, s: &Value, ptr: &str, base: &str) -> R<Option<Value>> {
        let key = format!("{base}|{s}");
        if self.negating.contains(&key) {
            return Ok(None);
        }
        self.negating.push(key);
        self.enter(ptr)?;
        let r = self.negate_inner(s, ptr, base);
        self.depth -= 1;
        self.negating.pop();
        r
    }

    fn negate_inner(&mut self, s: &Value, ptr: &str, base: &str) -> R<Option<Value>> {
        let f = self.flatten(s, ptr, base, 0)?;
        let m = match f {
            Value::Bool(b) => return Ok(Some(Value::Bool(!b))),
            Value::Object(m) => m,
            _ => return Ok(None),
        };
        let mut alts: Vec<Value> = Vec::new();
        if let Some(t) = m.get("type") {
            let Some(bits) = type_bits(t) else {
                return Ok(None);
            };
            alts.push(types_schema(T_ALL & !bits));
        }
        let mut values: Option<Vec<Value>> = m.get("const").map(|c| vec![c.clone()]);
        if let Some(Value::Array(e)) = m.get("enum") {
            values = Some(match values {
                Some(c) => c.into_iter().filter(|x| e.contains(x)).collect(),
                None => e.clone(),
            });
        }
        if let Some(vals) = values {
            match negate_values(&vals) {
                Some(v) => alts.push(v),
                None => return Ok(None),
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
                (NOT_NUMBER, Value::Array(vec![Value::Object(num)])),
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
                (NOT_STRING, Value::Array(vec![Value::Object(st)])),
            ]));
        }
        for (k, ty) in [(NOT_NUMBER, "number"), (NOT_STRING, "string")] {
            if let Some(Value::Array(gs)) = m.get(k) {
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
        if !self.negate_items(&m, &mut alts) {
            return Ok(None);
        }
        if let Some(c) = m.get("contains") {
            let from = m.get(CONTAINS_FROM).cloned().unwrap_or(0.into());
            let lo = count("minContains").unwrap_or(1);
            if lo > 0 {
                alts.push(obj(vec![
                    ("type", "array".into()),
                    ("contains", c.clone()),
                    ("minContains", 0.into()),
                    ("maxContains", (lo - 1).into()),
                    (CONTAINS_FROM, from.clone()),
                ]));
            }
            if let Some(hi) = count("maxContains") {
                alts.push(obj(vec![
                    ("type", "array".into()),
                    ("contains", c.clone()),
                    ("minContains", (hi + 1).into()),
                    (CONTAINS_FROM, from),
                ]));
            }
        }
        if m.get("uniqueItems") == Some(&Value::Bool(true)) {
            return Ok(None);
        }
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
                Some(_) => return Ok(None),
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
        if let Some(Value::Array(bs)) = m.get("anyOf") {
            // not (B1 ∨ B2 …) = not B1 ∧ not B2 …
            let mut acc = Value::Bool(true);
            for (i, b) in bs.iter().enumerate() {
                let Some(nb) = self.negate(b, &format!("{ptr}/anyOf/{i}"), base)? else {
                    return Ok(None);
                };
                acc = self.merge(acc, nb, ptr)?;
            }
            alts.push(acc);
        }
        if let Some(Value::Array(bs)) = m.get("oneOf") {
            // None valid, or two valid.
            alts.push(not_of(obj(vec![("anyOf", Value::Array(bs.clone()))])));
            if bs.len() > MAX_ONE_OF_REWRITE {
                return Ok(None);
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
        for k in m.keys() {
            if k.starts_with("$sieve:") && k != NOT_NUMBER && k != NOT_STRING && k != CONTAINS_FROM
            {
                return Ok(None);
            }
        }
        let _ = is_annotation;
        Ok(Some(any_of(alts)))
    }

    /// Alternatives violating `items`/`prefixItems`/`additionalItems`; false when one cannot
    /// be expressed.
    fn negate_items(&mut self, m: &Map<String, Value>, alts: &mut Vec<Value>) -> bool {
        let (prefix, rest): (&[Value], Option<&Value>) =
            match (m.get("prefixItems"), m.get("items")) {
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
                (CONTAINS_FROM, (prefix.len() as u64).into()),
            ]));
        }
        true
    }

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

/// Alternatives to a list of values: other types, other scalars of the same types.
fn negate_values(vals: &[Value]) -> Option<Value> {
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
    let mut alts = vec![types_schema(T_ALL & !present)];
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
                NOT_NUMBER,
                Value::Array(vec![obj(vec![("enum", Value::Array(nums))])]),
            ),
        ]));
    }
    if !strs.is_empty() {
        alts.push(obj(vec![
            ("type", "string".into()),
            (
                NOT_STRING,
                Value::Array(vec![obj(vec![("enum", Value::Array(strs))])]),
            ),
        ]));
    }
    Some(any_of(alts))
}

/// Most `anyOf` branches expanded (into all their non-empty subsets) for `unevaluated*`.
const MAX_UNEVALUATED_BRANCHES: usize = 4;

impl Compiler<'_> {
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
    ) -> R<Value> {
        let up = acc.remove("unevaluatedProperties");
        let ui = acc.remove("unevaluatedItems");
        if up.is_none() && ui.is_none() {
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
                    let fb = self.flatten(&branches[i], &bp, base, 0)?;
                    conj = self.merge(conj, fb, ptr)?;
                }
                let Value::Object(mut cm) = conj else {
                    alts.push(conj);
                    continue;
                };
                put_back(&mut cm);
                self.enter(ptr)?;
                let r = self.apply_unevaluated(cm, ptr, base);
                self.depth -= 1;
                alts.push(r?);
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
                let u = match acc.get("contains") {
                    Some(c) => any_of(vec![c.clone(), u]),
                    None => u,
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
