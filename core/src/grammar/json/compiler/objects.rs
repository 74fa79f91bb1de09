//! Objects: keys and `propertyNames`, members, and the automaton of an object's body over
//! the required keys seen and the member count ([`AnyOrderPlan`] for any-order objects).

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use alloc::{format, vec};

use serde_json::{Map, Value};

use crate::error::{GrammarError, GrammarErrorKind};
use crate::grammar::json::{Direction, PropertyOrder};
use crate::ir::IrSymbol;
use crate::regex::RegexAst;

use super::{
    Compiler, MAX_OBJECT_RULES, MAX_OBJECT_RULES_LEAN, MAX_OBJECT_STATES, MAX_PROPERTY_COUNT,
    MAX_TRACKED_KEYS, MAX_TRACKED_REQUIRED, R, as_count, child, is_annotation, key_spellings,
    ptr_token,
};

impl Compiler<'_> {
    /// Does the literal key (encoded, with quotes) match the key regex?
    pub(super) fn key_matches(&mut self, key_lit: &str, regex: &RegexAst) -> R<bool> {
        let e = self
            .exprs
            .compile(regex)
            .map_err(|e| GrammarError::new(GrammarErrorKind::InvalidRegex, e.message))?;
        let d = self.exprs.derivative_bytes(e, key_lit.as_bytes())?;
        Ok(self.exprs.is_nullable(d))
    }

    /// The key regex (whole lexeme, with quotes) for `propertyNames`, if decidable.
    fn property_names(&mut self, v: &Value, ptr: &str, base: &str) -> R<Option<RegexAst>> {
        // A bare `$ref` (beside annotations) is followed, a chain of them too.
        let mut v = v;
        let mut base = base.to_string();
        let mut hops = 0usize;
        while let Value::Object(pm) = v
            && let Some(r) = pm.get("$ref").and_then(Value::as_str)
            && pm.keys().all(|k| k == "$ref" || is_annotation(k))
        {
            hops += 1;
            if hops > self.resources.len() + self.anchors.len() + 64 {
                break;
            }
            let here = self.base_of(pm, &base);
            let (t, _, b) = self.ref_target(r, &here, ptr)?;
            v = t;
            base = b;
        }
        match v {
            Value::Bool(true) => Ok(None),
            Value::Bool(false) => Ok(Some(RegexAst::Nothing)),
            Value::Object(pm) => {
                let string_only = pm.keys().all(|k| {
                    is_annotation(k)
                        || matches!(
                            k.as_str(),
                            "type"
                                | "pattern"
                                | "minLength"
                                | "maxLength"
                                | "format"
                                | "enum"
                                | "const"
                        )
                });
                if !string_only {
                    self.approx(
                        ptr,
                        "propertyNames",
                        Direction::Superset,
                        "only string keywords are enforced on keys",
                    )?;
                    return Ok(None);
                }
                let mut parts = Vec::new();
                let vals = match (pm.get("const"), pm.get("enum")) {
                    (Some(c), _) => Some(vec![c.clone()]),
                    (None, Some(Value::Array(e))) => Some(e.clone()),
                    _ => None,
                };
                if let Some(vals) = vals {
                    let lits = vals
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|k| key_spellings(k, self.opts.llguidance_spellings))
                        .collect();
                    parts.push(RegexAst::Or(lits));
                }
                let body = self.string_body(pm, &child(ptr, "propertyNames"))?;
                parts.push(Self::quoted(body));
                Ok(Some(RegexAst::And(parts)))
            }
            _ => Ok(None),
        }
    }

    fn member(&mut self, key_lex: u32, value: u32) -> R<u32> {
        let p = self.punct()?;
        let nt = self.nt("member")?;
        self.rule(
            nt,
            vec![
                IrSymbol::Lexeme(key_lex),
                IrSymbol::Lexeme(p.colon),
                IrSymbol::Nonterminal(value),
            ],
        )?;
        Ok(nt)
    }

    pub(super) fn object(&mut self, m: &Map<String, Value>, ptr: &str, base: &str) -> R<u32> {
        let p = self.punct()?;
        let empty = Map::new();
        let props = match m.get("properties") {
            Some(Value::Object(pm)) => pm,
            _ => &empty,
        };
        let keys = self.object_keys(m, ptr, base)?;
        let additional = m.get("additionalProperties");
        // Named keys: properties first, then required keys not listed there.
        let mut named: Vec<(String, Option<&Value>)> =
            props.iter().map(|(k, v)| (k.clone(), Some(v))).collect();
        for r in &keys.required {
            if !props.contains_key(r) {
                named.push((r.clone(), None));
            }
        }
        let mut named_members = Vec::with_capacity(named.len());
        let mut literal_keys = Vec::with_capacity(named.len());
        for (k, schema) in &named {
            literal_keys.push(key_spellings(k, self.opts.llguidance_spellings));
            let mem = self.named_member(k, *schema, &keys, additional, ptr, base)?;
            named_members.push((mem, keys.required.iter().any(|r| r == k)));
        }
        let not_named = if literal_keys.is_empty() {
            None
        } else {
            Some(RegexAst::Not(Box::new(RegexAst::Or(literal_keys))))
        };
        let extras = self.extra_members(&keys, not_named, additional, ptr, base)?;
        let min_p = m.get("minProperties").and_then(as_count).unwrap_or(0);
        let max_p = m.get("maxProperties").and_then(as_count);
        let body = self.object_body(&named_members, &extras, min_p, max_p, ptr)?;
        let obj = self.nt(&format!("object:{ptr}"))?;
        self.rule(
            obj,
            vec![
                IrSymbol::Lexeme(p.lbrace),
                IrSymbol::Nonterminal(body),
                IrSymbol::Lexeme(p.rbrace),
            ],
        )?;
        Ok(obj)
    }

    /// What an object's keywords say of its keys: `required` (deduplicated),
    /// `patternProperties` with their key regexes, and `propertyNames`.
    fn object_keys(&mut self, m: &Map<String, Value>, ptr: &str, base: &str) -> R<ObjectKeys> {
        let mut required: Vec<String> = Vec::new();
        if let Some(Value::Array(r)) = m.get("required") {
            for x in r {
                if let Some(s) = x.as_str()
                    && !required.iter().any(|y| y == s)
                {
                    required.push(s.to_string());
                }
            }
        }
        let pattern_props: Vec<(String, Value)> = match m.get("patternProperties") {
            Some(Value::Object(pp)) => pp.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            _ => Vec::new(),
        };
        let key_names = match m.get("propertyNames") {
            Some(v) => self.property_names(v, ptr, base)?,
            None => None,
        };
        // Key regexes for the patterns (whole lexeme with quotes).
        let mut pattern_keys = Vec::new();
        for (pat, _) in &pattern_props {
            let r = self.pattern(pat, &child(ptr, "patternProperties"), "patternProperties")?;
            let body = match r {
                Some(r) => RegexAst::And(vec![self.string_any(), r]),
                None => self.string_any(),
            };
            pattern_keys.push(Self::quoted(body));
        }
        if pattern_props.len() > 1 {
            self.approx(
                ptr,
                "patternProperties",
                Direction::Superset,
                "a key matching several patterns needs to match only one of their schemas",
            )?;
        }
        Ok(ObjectKeys {
            required,
            pattern_props,
            pattern_keys,
            key_names,
        })
    }

    /// The member of named key `k` (of `properties` with `schema`, or only `required`): its
    /// key lexeme and its value, under the schemas of the patterns it matches too.
    fn named_member(
        &mut self,
        k: &str,
        schema: Option<&Value>,
        keys: &ObjectKeys,
        additional: Option<&Value>,
        ptr: &str,
        base: &str,
    ) -> R<u32> {
        let lit = super::pydumps::string(k);
        let kp = child(&child(ptr, "properties"), k);
        // Schemas of matching patterns apply too.
        let mut extra: Vec<Value> = Vec::new();
        for (i, pk) in keys.pattern_keys.iter().enumerate() {
            if self.key_matches(&lit, pk)? {
                extra.push(keys.pattern_props[i].1.clone());
            }
        }
        let value = match schema {
            Some(s) if extra.is_empty() => self.sub(s, &kp, base)?,
            _ => {
                let mut acc = match schema {
                    Some(s) => s.clone(),
                    None if extra.is_empty() => match additional {
                        Some(a) => a.clone(),
                        None => Value::Bool(self.opts.additional_properties_default),
                    },
                    None => Value::Bool(true),
                };
                for e in extra {
                    acc = Self::all_of(acc, e);
                }
                self.sub_owned(acc, &kp, base)?
            }
        };
        let mut key_re = key_spellings(k, self.opts.llguidance_spellings);
        if let Some(kn) = &keys.key_names {
            key_re = RegexAst::And(vec![key_re, kn.clone()]);
        }
        let kl = self.lexeme(&lit, key_re)?;
        self.member(kl, value)
    }

    /// The members of keys not named (`not_named` matches the named ones): one per pattern
    /// of `patternProperties`, then one for `additionalProperties` (or the default).
    fn extra_members(
        &mut self,
        keys: &ObjectKeys,
        not_named: Option<RegexAst>,
        additional: Option<&Value>,
        ptr: &str,
        base: &str,
    ) -> R<Vec<u32>> {
        let mut extras = Vec::new();
        for (i, (_, schema)) in keys.pattern_props.iter().enumerate() {
            let mut parts = vec![keys.pattern_keys[i].clone()];
            parts.extend(not_named.clone());
            parts.extend(keys.key_names.clone());
            let kl = self.lexeme(
                &format!("key:{ptr}/patternProperties/{i}"),
                RegexAst::And(parts),
            )?;
            let sp = format!(
                "{ptr}/patternProperties/{}",
                ptr_token(&keys.pattern_props[i].0)
            );
            let v = self.sub(schema, &sp, base)?;
            extras.push(self.member(kl, v)?);
        }
        let add_value = match additional {
            Some(Value::Bool(false)) => None,
            Some(a) => Some(self.sub(a, &child(ptr, "additionalProperties"), base)?),
            None => {
                if self.opts.additional_properties_default {
                    Some(self.any()?)
                } else {
                    None
                }
            }
        };
        if let Some(v) = add_value {
            let mut parts = vec![Self::quoted(self.string_any())];
            parts.extend(not_named);
            for pk in &keys.pattern_keys {
                parts.push(RegexAst::Not(Box::new(pk.clone())));
            }
            parts.extend(keys.key_names.clone());
            let kl = if parts.len() == 1 {
                self.string_lexeme()?
            } else {
                self.lexeme(
                    &format!("key:{ptr}/additionalProperties"),
                    RegexAst::And(parts),
                )?
            };
            extras.push(self.member(kl, v)?);
        }
        Ok(extras)
    }

    /// The members between the braces: a small automaton over (position or set of required
    /// keys seen, number of members so far).
    fn object_body(
        &mut self,
        named: &[(u32, bool)],
        extras: &[u32],
        min_p: u64,
        max_p: Option<u64>,
        ptr: &str,
    ) -> R<u32> {
        let p = self.punct()?;
        let (mut cap, min_p, mut max_p) = self.member_counts(named, extras, min_p, max_p, ptr)?;
        let order = self.opts.property_order;
        // Any order tracks the set of named keys seen ([`AnyOrderPlan`]), so that none
        // repeats.
        let plan = if order == PropertyOrder::AnyOrder {
            // Past a quarter of the grammar budget, objects track fewer optional keys.
            let lean = self.size > self.limits.max_grammar_size / 4;
            let plan = AnyOrderPlan::new(named, extras.is_empty(), cap, max_p, lean);
            cap = plan.cap;
            max_p = plan.max_p;
            Some(plan)
        } else {
            None
        };
        let start = self.nt(&format!("members:{ptr}"))?;
        let mut states = Members {
            states: BTreeMap::from([((0, 0), start)]),
            todo: vec![(0, 0)],
            cap,
            min_p,
            max_p,
            comma: p.comma,
        };
        match order {
            PropertyOrder::SchemaOrder => self.schema_order_members(&mut states, named, extras)?,
            PropertyOrder::AnyOrder => {
                let plan = plan.unwrap_or_default();
                self.any_order_members(&mut states, named, extras, &plan)?;
            }
        }
        Ok(start)
    }

    /// The member counts an object's automaton tracks: (the cap of its count, the
    /// `minProperties` and `maxProperties` it enforces). Counts are tracked only where the
    /// bounds say more than the keys do, up to `MAX_PROPERTY_COUNT` (past it, not at all:
    /// a superset, reported).
    fn member_counts(
        &mut self,
        named: &[(u32, bool)],
        extras: &[u32],
        min_p: u64,
        max_p: Option<u64>,
        ptr: &str,
    ) -> R<(u64, u64, Option<u64>)> {
        let k = named.iter().filter(|x| x.1).count() as u64;
        let possible = if extras.is_empty() {
            Some(named.len() as u64)
        } else {
            None
        };
        let need_min = min_p > k;
        let need_max = max_p.is_some_and(|mx| possible.is_none_or(|n| mx < n));
        if !(need_min || need_max) {
            return Ok((1, 0, None));
        }
        let cap = min_p.max(max_p.map_or(0, |x| x + 1)).max(1);
        if cap <= MAX_PROPERTY_COUNT {
            return Ok((cap, min_p, max_p));
        }
        self.approx(
            ptr,
            if need_max {
                "maxProperties"
            } else {
                "minProperties"
            },
            Direction::Superset,
            "property count too large to track",
        )?;
        Ok((1, 0, None))
    }

    /// Schema order: state (next named key, count); each named key in turn, present or
    /// (when optional) skipped, then any number of extra members.
    fn schema_order_members(
        &mut self,
        states: &mut Members,
        named: &[(u32, bool)],
        extras: &[u32],
    ) -> R<()> {
        let extra_nt = if extras.is_empty() {
            None
        } else {
            let e = self.nt("extra")?;
            for &x in extras {
                self.rule(e, vec![IrSymbol::Nonterminal(x)])?;
            }
            Some(e)
        };
        let n = named.len() as u64;
        while let Some((i, c)) = states.todo.pop() {
            let here = states.states[&(i, c)];
            if i < n {
                let (mem, req) = named[i as usize];
                if states.can_add(c) {
                    let next = states.goto(self, (i + 1, states.inc(c)))?;
                    self.rule(here, states.step(c, mem, next))?;
                }
                if !req {
                    let next = states.goto(self, (i + 1, c))?;
                    self.rule(here, vec![IrSymbol::Nonterminal(next)])?;
                }
            } else {
                if c >= states.min_p {
                    self.rule(here, vec![])?;
                }
                if let Some(e) = extra_nt
                    && states.can_add(c)
                {
                    let next = states.goto(self, (i, states.inc(c)))?;
                    self.rule(here, states.step(c, e, next))?;
                }
            }
        }
        Ok(())
    }

    /// Any order: state (keys seen, count) as `plan` tracks them (see [`AnyOrderPlan`]).
    fn any_order_members(
        &mut self,
        states: &mut Members,
        named: &[(u32, bool)],
        extras: &[u32],
        plan: &AnyOrderPlan,
    ) -> R<()> {
        // Bit `j` of a state's mask: `named[plan.tracked[j]]` is present; with `counted`,
        // the mask is the number of required members seen instead.
        let need: u64 = if plan.counted {
            plan.required as u64
        } else {
            plan.tracked
                .iter()
                .enumerate()
                .filter(|&(_, &i)| named[i].1)
                .fold(0, |m, (j, _)| m | (1 << j))
        };
        let pool: Vec<u32> = named
            .iter()
            .enumerate()
            .filter(|&(i, x)| !(plan.tracked.contains(&i) || (plan.counted && x.1)))
            .map(|(_, x)| x.0)
            .chain(extras.iter().copied())
            .collect();
        let pool_nt = self.member_group("optional", &pool)?;
        let req_members: Vec<u32> = named.iter().filter(|x| x.1).map(|x| x.0).collect();
        let req_nt = if plan.counted {
            self.member_group("required", &req_members)?
        } else {
            None
        };
        let done = |mask: u64| {
            if plan.counted {
                mask == need
            } else {
                mask & need == need
            }
        };
        while let Some((mask, c)) = states.todo.pop() {
            let here = states.states[&(mask, c)];
            if done(mask) && c >= states.min_p {
                self.rule(here, vec![])?;
            }
            if !states.can_add(c) {
                continue;
            }
            let mut steps: Vec<(u32, u64)> = Vec::new();
            for (j, &i) in plan.tracked.iter().enumerate() {
                if mask & (1 << j) == 0 {
                    steps.push((named[i].0, mask | (1 << j)));
                }
            }
            if let Some(r) = req_nt
                && mask < need
            {
                steps.push((r, mask + 1));
            }
            if let Some(o) = pool_nt {
                steps.push((o, mask));
            }
            for (mem, to) in steps {
                let next = states.goto(self, (to, states.inc(c)))?;
                self.rule(here, states.step(c, mem, next))?;
            }
        }
        Ok(())
    }

    /// One nonterminal for any of `members` (`None` when there are none).
    fn member_group(&mut self, name: &str, members: &[u32]) -> R<Option<u32>> {
        if members.is_empty() {
            return Ok(None);
        }
        let e = self.nt(name)?;
        for &x in members {
            self.rule(e, vec![IrSymbol::Nonterminal(x)])?;
        }
        Ok(Some(e))
    }
}

/// An object's keywords about its keys (see [`Compiler::object_keys`]).
struct ObjectKeys {
    required: Vec<String>,
    pattern_props: Vec<(String, Value)>,
    /// The key lexeme's regex of each pattern (quotes included).
    pattern_keys: Vec<RegexAst>,
    /// `propertyNames` as a key regex.
    key_names: Option<RegexAst>,
}

/// The states of an object's member automaton: by key (position or keys seen, count), the
/// ones not expanded yet, and the count bounds.
struct Members {
    states: BTreeMap<(u64, u64), u32>,
    todo: Vec<(u64, u64)>,
    cap: u64,
    min_p: u64,
    max_p: Option<u64>,
    comma: u32,
}

impl Members {
    /// The count after one more member (counts stop at the cap).
    fn inc(&self, c: u64) -> u64 {
        (c + 1).min(self.cap)
    }

    /// Whether a member may follow `c` members.
    fn can_add(&self, c: u64) -> bool {
        self.max_p.is_none_or(|mx| c < mx)
    }

    /// The state of `key`, made (and queued) on first use.
    fn goto(&mut self, s: &mut Compiler<'_>, key: (u64, u64)) -> R<u32> {
        if let Some(&x) = self.states.get(&key) {
            return Ok(x);
        }
        let x = s.nt("members")?;
        self.states.insert(key, x);
        self.todo.push(key);
        Ok(x)
    }

    /// A member after `c` members (a comma first unless it is the first), then `next`.
    fn step(&self, c: u64, member: u32, next: u32) -> Vec<IrSymbol> {
        let mut rhs = Vec::new();
        if c > 0 {
            rhs.push(IrSymbol::Lexeme(self.comma));
        }
        rhs.push(IrSymbol::Nonterminal(member));
        rhs.push(IrSymbol::Nonterminal(next));
        rhs
    }
}

/// How an any-order object tracks its named keys ([`PropertyOrder::AnyOrder`]).
///
/// Every named key (of `properties` and `required`) is tracked in a set when the object has
/// at most [`MAX_TRACKED_KEYS`] of them and the states fit [`MAX_OBJECT_STATES`] and
/// [`MAX_OBJECT_RULES`] ([`MAX_OBJECT_RULES_LEAN`] in a large grammar): each key appears at
/// most once, exactly. A larger object tracks its required keys and, while the
/// states fit, its first optional ones (schema order); the other optional keys form a pool
/// that may repeat, and a closed object (no `additionalProperties`/`patternProperties`
/// key) is then bounded to as many members as it has named keys, so that a repeated key
/// cannot loop. Beyond 10 required keys (or the state budget) the required keys are counted
/// instead, which is exact for documents without duplicate keys.
#[derive(Debug, Default)]
pub(super) struct AnyOrderPlan {
    /// Indices (into the named members) of the tracked keys: bit `j` of a state's mask is
    /// `tracked[j]`.
    tracked: Vec<usize>,
    /// Required keys are counted, not tracked.
    counted: bool,
    /// Required keys.
    required: usize,
    /// The member counter's cap and the most members (see `object_body`).
    cap: u64,
    max_p: Option<u64>,
}

impl AnyOrderPlan {
    fn new(named: &[(u32, bool)], closed: bool, cap: u64, max_p: Option<u64>, lean: bool) -> Self {
        let rules = if lean {
            MAX_OBJECT_RULES_LEAN
        } else {
            MAX_OBJECT_RULES
        };
        // States of `keys` tracked keys with a counter capped at `cap` (count 0 only with no
        // key), and their rules (one per tracked key, the pool, the end).
        let states = |keys: usize, cap: u64| {
            (1usize << keys)
                .saturating_mul(cap as usize)
                .saturating_add(1)
        };
        let fits = |keys: usize, cap: u64| {
            keys <= MAX_TRACKED_KEYS
                && states(keys, cap) <= MAX_OBJECT_STATES
                && states(keys, cap).saturating_mul(keys + 2) <= rules
        };
        let n = named.len();
        let required = named.iter().filter(|x| x.1).count();
        let plan = |tracked, counted, cap, max_p| AnyOrderPlan {
            tracked,
            counted,
            required,
            cap,
            max_p,
        };
        // An open object takes any number of other keys, so tracking its optional keys
        // cannot stop a loop; it would only multiply lexer states (measured: +4% mask time
        // on MaskBench, where most objects are open). Its required keys are tracked.
        if closed && fits(n, cap) {
            return plan((0..n).collect(), false, cap, max_p);
        }
        // Required keys alone are tracked up to `MAX_TRACKED_REQUIRED` (the state budget
        // only), counted beyond.
        let counted =
            !(required <= MAX_TRACKED_REQUIRED && states(required, cap) <= MAX_OBJECT_STATES);
        // Some optional keys go untracked: bound a closed object's members by its named
        // keys, when the counter fits the budgets.
        let (mut cap, mut max_p) = (cap, max_p);
        let bound = n as u64;
        let bounded_cap = cap.max(bound + 1);
        let base = if counted {
            (required + 1).saturating_mul(bounded_cap as usize + 1)
        } else {
            states(required, bounded_cap)
        };
        if closed
            && max_p.is_none_or(|m| m > bound)
            && base <= MAX_OBJECT_STATES
            && base.saturating_mul(required.min(MAX_TRACKED_REQUIRED) + 2) <= MAX_OBJECT_RULES
        {
            cap = bounded_cap;
            max_p = Some(bound);
        }
        if counted {
            return plan(Vec::new(), true, cap, max_p);
        }
        let mut tracked: Vec<usize> = (0..n).filter(|&i| named[i].1).collect();
        for i in (0..n).filter(|&i| closed && !named[i].1) {
            if !fits(tracked.len() + 1, cap) {
                break;
            }
            tracked.push(i);
        }
        plan(tracked, false, cap, max_p)
    }
}
