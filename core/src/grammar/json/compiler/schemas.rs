//! Schemas: one queued subschema compiled to a nonterminal (`anyOf`/`oneOf` branches,
//! rewrites, types, `not`, and `enum`/`const` values).

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use alloc::{format, vec};
use core::mem::size_of;

use serde_json::{Map, Value};

use crate::error::{GrammarError, GrammarErrorKind};
use crate::grammar::json::numeric::{self, Decimal};
use crate::grammar::json::{CoverageStatus, Direction, ELEMENT_BYTES, PropertyOrder, ecma};
use crate::ir::IrSymbol;
use crate::regex::RegexAst;

use super::{
    Compiler, MAX_ONE_OF_REWRITE, MAX_ONE_OF_REWRITE_DEFAULT, R, SET_CHAR_BYTES, T_ALL, T_ARR,
    T_BOOL, T_INT, T_NULL, T_NUM, T_OBJ, T_STR, child, has_validation, is_annotation, is_handled,
    is_known_draft, is_unsupported, key_spellings, negate, regex_bytes, type_bit, value_type,
};

/// An array or object `const` value being emitted: its nonterminal, its right-hand side so
/// far and the members still to emit.
struct ConstFrame<'v> {
    nt: u32,
    rhs: Vec<IrSymbol>,
    members: Members<'v>,
    first: bool,
}

enum Members<'v> {
    Array(core::slice::Iter<'v, Value>),
    Object(serde_json::map::Iter<'v>),
}

impl Compiler<'_> {
    /// The nonterminal of one queued subschema (only called from the work loop: everything
    /// below it reaches other subschemas through [`Self::sub`]).
    pub(super) fn schema(&mut self, s: &Value, ptr: &str, base: &str) -> R<u32> {
        let m = match s {
            Value::Bool(true) => return self.any(),
            Value::Bool(false) => return self.nothing(),
            Value::Object(m) => m,
            _ => {
                return Err(self.error(
                    GrammarErrorKind::Syntax,
                    ptr,
                    "a schema must be an object or a boolean",
                ));
            }
        };
        let base = self.base_of(m, base);
        if let Some(r) = m.get("$ref") {
            let Some(r) = r.as_str() else {
                return Err(self.error(GrammarErrorKind::Syntax, ptr, "$ref must be a string"));
            };
            if self.old_ref || !has_validation(m, &["$ref"], &self.keys) {
                return self.ref_nt(r, &base, ptr);
            }
        }
        if m.contains_key("$ref") || m.contains_key("allOf") {
            // The job itself is memoized ([`Self::sub`]): recursive structures that repeat
            // `{"$ref": X, <siblings>}` or `{"allOf": [{"$ref": X}, ...]}` meet the same
            // memo entry again, so the recursion becomes a cycle of nonterminals.
            let flat = self.flatten(s, ptr, &base)?;
            return self.schema_flat(&flat, ptr, &base);
        }
        self.schema_flat(s, ptr, &base)
    }

    /// A schema without top-level `$ref`/`allOf`.
    fn schema_flat(&mut self, s: &Value, ptr: &str, base: &str) -> R<u32> {
        let m = match s {
            Value::Bool(true) => return self.any(),
            Value::Bool(false) => return self.nothing(),
            Value::Object(m) => m,
            _ => return self.nothing(),
        };
        if let Some(nt) = self.schema_rewrite(m, ptr, base)? {
            return Ok(nt);
        }
        if m.contains_key("anyOf") || m.contains_key("oneOf") {
            return self.schema_branches(m, ptr, base);
        }
        self.plain(m, ptr, base)
    }

    /// `anyOf`/`oneOf` with the sibling keywords merged into every branch (out of line to
    /// keep the recursive frame of [`Self::schema_flat`] small).
    #[inline(never)]
    fn schema_branches(&mut self, m: &Map<String, Value>, ptr: &str, base: &str) -> R<u32> {
        for key in ["anyOf", "oneOf"] {
            let Some(branches) = m.get(key) else { continue };
            let Value::Array(branches) = branches else {
                return Err(self.error(
                    GrammarErrorKind::Syntax,
                    ptr,
                    &format!("{key} must be an array"),
                ));
            };
            self.spend_on_map(m)?;
            let mut rest = m.clone();
            rest.remove(key);
            let rest_empty = !has_validation(&rest, &[], &self.keys);
            let rewritten;
            let mut branches = branches;
            if key == "oneOf" && !self.one_of_disjoint(branches, &rest, base, ptr)? {
                if self.opts.coerce_one_of {
                    self.approx(
                        ptr,
                        "oneOf",
                        Direction::Superset,
                        "coerce_one_of: compiled as anyOf",
                    )?;
                } else {
                    // Default mode keeps big overlapping `oneOf`s as (reported) `anyOf`s: the
                    // exact form grows with the square of the branches and its negations can
                    // make masks expensive.
                    // Default mode also keeps `oneOf`s that reach `$ref`s: negating recursive
                    // definitions inlines them, which can grow without bound.
                    let most = if self.opts.strict {
                        MAX_ONE_OF_REWRITE
                    } else if branches.iter().any(|b| b.to_string().contains("\"$ref\"")) {
                        0
                    } else {
                        MAX_ONE_OF_REWRITE_DEFAULT
                    };
                    if branches.len() <= most {
                        // Each branch is copied once per branch.
                        for b in branches {
                            self.spend_on_times(b, branches.len())?;
                        }
                        rewritten = negate::exactly_one(branches);
                        branches = &rewritten;
                    } else {
                        self.approx(
                            ptr,
                            "oneOf",
                            Direction::Superset,
                            "branches not provably disjoint; compiled as anyOf",
                        )?;
                    }
                }
            }
            let nt = self.nt(&format!("{key}:{ptr}"))?;
            for (i, b) in branches.iter().enumerate() {
                let bp = format!("{ptr}/{key}/{i}");
                let inner = if rest_empty {
                    self.sub(b, &bp, base)?
                } else {
                    let fb = self.flatten(b, &bp, base)?;
                    self.spend((1 + rest.len()) as u64)?;
                    let merged = self.merge(Value::Object(rest.clone()), fb, &bp)?;
                    self.sub_owned(merged, &bp, base)?
                };
                self.rule(nt, vec![IrSymbol::Nonterminal(inner)])?;
            }
            return Ok(nt);
        }
        self.plain(m, ptr, base)
    }

    /// The rewrites of [`Self::schema_flat`] (conditionals, `unevaluated*`, `not`), out of
    /// line to keep the recursive frames small.
    #[inline(never)]
    fn schema_rewrite(&mut self, m: &Map<String, Value>, ptr: &str, base: &str) -> R<Option<u32>> {
        if negate::CONDITIONAL_KEYS.iter().any(|k| m.contains_key(*k))
            || m.contains_key("unevaluatedProperties")
            || m.contains_key("unevaluatedItems")
            || m.contains_key("not")
        {
            self.spend_on_map(m)?;
        }
        if negate::CONDITIONAL_KEYS.iter().any(|k| m.contains_key(*k)) {
            let rewritten = self.rewrite_conditionals(m.clone(), ptr)?;
            return self.sub_owned(rewritten, ptr, base).map(Some);
        }
        if m.contains_key("unevaluatedProperties") || m.contains_key("unevaluatedItems") {
            let converted = self.apply_unevaluated(m.clone(), ptr, base, 0)?;
            return self.sub_owned(converted, ptr, base).map(Some);
        }
        if let Some(n) = m.get("not")
            && let Some(neg) = self.negate(n, &child(ptr, "not"), base)?
        {
            let mut rest = m.clone();
            rest.remove("not");
            let merged = self.merge(Value::Object(rest), neg, ptr)?;
            return self.sub_owned(merged, ptr, base).map(Some);
        }
        Ok(None)
    }

    /// Types and literal values a flattened branch can take, for disjointness proofs.
    fn branch_summary(
        &mut self,
        b: &Value,
        base: &str,
        ptr: &str,
    ) -> R<(u8, Option<Vec<Value>>, Value)> {
        let fb = self.flatten(b, ptr, base)?;
        let Value::Object(m) = &fb else {
            return Ok((if fb == Value::Bool(true) { T_ALL } else { 0 }, None, fb));
        };
        let mut types = match m.get("type") {
            Some(Value::String(s)) => type_bit(s).unwrap_or(T_ALL),
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|x| x.as_str().and_then(type_bit))
                .fold(0, |x, y| x | y),
            _ => T_ALL,
        };
        let mut values = None;
        if let Some(c) = m.get("const") {
            values = Some(vec![c.clone()]);
        } else if let Some(Value::Array(e)) = m.get("enum") {
            values = Some(e.clone());
        }
        if let Some(vs) = &values {
            types &= vs.iter().fold(0, |acc, v| acc | value_type(v));
        }
        if m.contains_key("anyOf") || m.contains_key("oneOf") {
            types = T_ALL;
        }
        Ok((types, values, fb))
    }

    /// Can we prove that no instance matches two of the `oneOf` branches?
    fn one_of_disjoint(
        &mut self,
        branches: &[Value],
        rest: &Map<String, Value>,
        base: &str,
        ptr: &str,
    ) -> R<bool> {
        let _ = rest;
        let mut sums = Vec::with_capacity(branches.len());
        for (i, b) in branches.iter().enumerate() {
            sums.push(self.branch_summary(b, base, &format!("{ptr}/oneOf/{i}"))?);
        }
        for i in 0..sums.len() {
            for j in i + 1..sums.len() {
                let na = sums[i].1.as_ref().map_or(1, Vec::len) as u64;
                let nb = sums[j].1.as_ref().map_or(1, Vec::len) as u64;
                self.spend(1 + na.saturating_mul(nb))?;
                if !self.pair_disjoint(&sums[i], &sums[j]) {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    fn pair_disjoint(
        &self,
        a: &(u8, Option<Vec<Value>>, Value),
        b: &(u8, Option<Vec<Value>>, Value),
    ) -> bool {
        // `number` sets both numeric bits, `integer` only T_INT.
        if a.0 & b.0 == 0 {
            return true;
        }
        if let (Some(va), Some(vb)) = (&a.1, &b.1)
            && va.iter().all(|x| !vb.contains(x))
        {
            return true;
        }
        // A discriminator: a property required in both whose values are disjoint literals.
        if let (Value::Object(ma), Value::Object(mb)) = (&a.2, &b.2)
            && (a.0 & !T_OBJ == 0 || b.0 & !T_OBJ == 0)
        {
            let req = |m: &Map<String, Value>| -> Vec<String> {
                m.get("required")
                    .and_then(Value::as_array)
                    .map(|r| {
                        r.iter()
                            .filter_map(|x| x.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let lits = |m: &Map<String, Value>, k: &str| -> Option<Vec<Value>> {
                let p = m.get("properties")?.get(k)?;
                if let Some(c) = p.get("const") {
                    return Some(vec![c.clone()]);
                }
                p.get("enum").and_then(Value::as_array).cloned()
            };
            let ra = req(ma);
            let rb = req(mb);
            for k in ra.iter().filter(|k| rb.contains(k)) {
                if let (Some(x), Some(y)) = (lits(ma, k), lits(mb, k))
                    && x.iter().all(|v| !y.contains(v))
                {
                    return true;
                }
            }
        }
        false
    }

    fn report_keywords(&mut self, m: &Map<String, Value>, ptr: &str) -> R<()> {
        for (k, v) in m {
            if k == "$schema" && !v.as_str().is_some_and(is_known_draft) {
                // A metaschema of its own may turn vocabularies off (validation keywords then
                // apply to nothing) or on (format assertions): compiled as the drafts know them,
                // wrong either way.
                let why = "not a known draft's metaschema: keywords compiled as a draft's";
                self.approx(ptr, k, Direction::Subset, why)?;
                self.approx(ptr, k, Direction::Superset, why)?;
                continue;
            }
            if is_handled(k) || is_annotation(k) || self.keys.is_private(k) {
                continue;
            }
            if is_unsupported(k) {
                if k == "uniqueItems" && *v != Value::Bool(true) {
                    continue;
                }
                self.note(ptr, k, CoverageStatus::Unsupported)?;
            } else {
                self.note(ptr, k, CoverageStatus::Unknown)?;
            }
        }
        Ok(())
    }

    /// A schema without `$ref`/`allOf`/`anyOf`/`oneOf`.
    fn plain(&mut self, m: &Map<String, Value>, ptr: &str, base: &str) -> R<u32> {
        // The recursion goes through here (arrays, objects): the rest is out of line so
        // this frame stays small.
        let (types, values) = self.plain_types(m, ptr)?;
        if let Some(values) = values {
            return self.plain_values(m, types, &values, ptr);
        }
        let nt = self.plain_scalars(m, types, ptr)?;
        if types & T_ARR != 0 {
            let a = self.array(m, ptr, base)?;
            self.rule(nt, vec![IrSymbol::Nonterminal(a)])?;
        }
        if types & T_OBJ != 0 {
            let o = self.object(m, ptr, base)?;
            self.rule(nt, vec![IrSymbol::Nonterminal(o)])?;
        }
        if types == 0 {
            let n = self.nothing()?;
            self.rule(nt, vec![IrSymbol::Nonterminal(n)])?;
        }
        Ok(nt)
    }

    /// The types a plain schema allows (after a simple `not`) and its `const`/`enum` list.
    #[inline(never)]
    fn plain_types(&mut self, m: &Map<String, Value>, ptr: &str) -> R<(u8, Option<Vec<Value>>)> {
        self.report_keywords(m, ptr)?;
        let mut types = match m.get("type") {
            None => T_ALL,
            Some(Value::String(s)) => match type_bit(s) {
                Some(t) => t,
                None => {
                    return Err(self.error(
                        GrammarErrorKind::Syntax,
                        ptr,
                        &format!("unknown type {s:?}"),
                    ));
                }
            },
            Some(Value::Array(a)) => {
                let mut t = 0;
                for x in a {
                    match x.as_str().and_then(type_bit) {
                        Some(b) => t |= b,
                        None => {
                            return Err(self.error(
                                GrammarErrorKind::Syntax,
                                ptr,
                                &format!("unknown type {x}"),
                            ));
                        }
                    }
                }
                t
            }
            Some(_) => {
                return Err(self.error(GrammarErrorKind::Syntax, ptr, "bad \"type\""));
            }
        };
        if let Some(not) = m.get("not") {
            types = self.apply_not(not, types, ptr)?;
        }
        let mut values: Option<Vec<Value>> = None;
        if let Some(c) = m.get("const") {
            self.spend_on(c)?;
            values = Some(vec![c.clone()]);
        }
        if let Some(e) = m.get("enum") {
            let Value::Array(e) = e else {
                return Err(self.error(GrammarErrorKind::Syntax, ptr, "enum must be an array"));
            };
            self.alloc(e.len().saturating_mul(ELEMENT_BYTES))?;
            for x in e {
                self.spend_on(x)?;
            }
            values = Some(match values {
                Some(c) => c.into_iter().filter(|x| e.contains(x)).collect(),
                None => e.clone(),
            });
        }
        Ok((types, values))
    }

    /// A plain schema with `const`/`enum`.
    #[inline(never)]
    fn plain_values(
        &mut self,
        m: &Map<String, Value>,
        types: u8,
        values: &[Value],
        ptr: &str,
    ) -> R<u32> {
        let nt = self.nt(ptr)?;
        {
            let mut scalars = Vec::new();
            // Strings spelled every way, as one prefix-sharing tree (`ecma::quoted_set_spellings`).
            let mut strings: Vec<&str> = Vec::new();
            let mut alternatives = 0;
            // The string keywords' regex, compiled once for all string values (a long `enum`
            // under a negation would rebuild its exclusions per value).
            let mut string_check: Option<crate::regex::ExprId> = None;
            let string_keys = negate::STRING_KEYS.iter().any(|k| m.contains_key(*k))
                || m.contains_key(self.keys.not_string.as_str());
            for v in values {
                if types & value_type(v) == 0 {
                    continue;
                }
                let allowed = match v {
                    Value::String(text) if string_keys => {
                        let e = match string_check {
                            Some(e) => e,
                            None => {
                                let body = self.string_body(m, ptr)?;
                                let e = self.exprs.compile(&Self::quoted(body)).map_err(|e| {
                                    GrammarError::new(GrammarErrorKind::InvalidRegex, e.message)
                                })?;
                                string_check = Some(e);
                                e
                            }
                        };
                        let lit = super::pydumps::string(text);
                        let d = self.exprs.derivative_bytes(e, lit.as_bytes())?;
                        self.exprs.is_nullable(d)
                    }
                    _ => self.scalar_allowed(m, v, ptr)?,
                };
                if !allowed {
                    continue;
                }
                self.report_value_spellings(m, v, ptr)?;
                match v {
                    Value::Array(_) | Value::Object(_) => {
                        let c = self.const_value(v, ptr)?;
                        self.rule(nt, vec![IrSymbol::Nonterminal(c)])?;
                        alternatives += 1;
                    }
                    Value::String(text) if ecma::is_spelled(text) => {
                        // Its entry here and its characters' trie nodes and spelling nodes in
                        // `ecma::quoted_set_spellings`.
                        self.alloc(
                            size_of::<&str>() + (text.len() + 1).saturating_mul(SET_CHAR_BYTES),
                        )?;
                        strings.push(text.as_str());
                    }
                    _ => {
                        let r = self.scalar_regex(v);
                        self.alloc(regex_bytes(&r))?;
                        scalars.push(r);
                    }
                }
            }
            if !strings.is_empty() {
                scalars.push(ecma::quoted_set_spellings(&strings));
            }
            if !scalars.is_empty() {
                let l = self.lexeme("ENUM", RegexAst::Or(scalars))?;
                self.rule(nt, vec![IrSymbol::Lexeme(l)])?;
                alternatives += 1;
            }
            if alternatives == 0 {
                let n = self.nothing()?;
                self.rule(nt, vec![IrSymbol::Nonterminal(n)])?;
            }
        }
        Ok(nt)
    }

    /// The nonterminal of a plain schema with its scalar alternatives.
    #[inline(never)]
    fn plain_scalars(&mut self, m: &Map<String, Value>, types: u8, ptr: &str) -> R<u32> {
        let nt = self.nt(ptr)?;
        if types & T_NULL != 0 {
            let l = self.lexeme("null", RegexAst::literal("null"))?;
            self.rule(nt, vec![IrSymbol::Lexeme(l)])?;
        }
        if types & T_BOOL != 0 {
            let l = self.lexeme(
                "true|false",
                RegexAst::Or(vec![RegexAst::literal("true"), RegexAst::literal("false")]),
            )?;
            self.rule(nt, vec![IrSymbol::Lexeme(l)])?;
        }
        if types & (T_INT | T_NUM) != 0 {
            let l = self.number(m, types & T_NUM == 0, ptr)?;
            self.rule(nt, vec![IrSymbol::Lexeme(l)])?;
        }
        if types & T_STR != 0 {
            let body = self.string_body(m, ptr)?;
            let l = self.lexeme(&format!("string:{ptr}"), Self::quoted(body))?;
            self.rule(nt, vec![IrSymbol::Lexeme(l)])?;
        }
        Ok(nt)
    }

    /// `not`: exact for `{}`, `true`, `false` and a bare `type`; otherwise ignored.
    fn apply_not(&mut self, not: &Value, types: u8, ptr: &str) -> R<u8> {
        match not {
            Value::Bool(true) => Ok(0),
            Value::Bool(false) => Ok(types),
            Value::Object(n) => {
                let keys: Vec<&str> = n
                    .keys()
                    .map(String::as_str)
                    .filter(|k| !is_annotation(k))
                    .collect();
                if keys.is_empty() {
                    return Ok(0);
                }
                if keys == ["type"] {
                    let t = match &n["type"] {
                        Value::String(s) => type_bit(s),
                        Value::Array(a) => Some(
                            a.iter()
                                .filter_map(|x| x.as_str().and_then(type_bit))
                                .fold(0, |x, y| x | y),
                        ),
                        _ => None,
                    };
                    if let Some(t) = t {
                        // `not: {type: integer}` leaves non-integral numbers, which the
                        // number lexeme cannot separate: keep numbers (superset) then.
                        if t & T_INT != 0 && t & T_NUM == 0 && types & T_NUM != 0 {
                            self.note(ptr, "not", CoverageStatus::Unsupported)?;
                            return Ok(types & !(t & !T_INT));
                        }
                        return Ok(types & !t);
                    }
                }
                self.note(ptr, "not", CoverageStatus::Unsupported)?;
                Ok(types)
            }
            _ => Ok(types),
        }
    }

    /// A scalar literal in every spelling: numbers as `numeric::value_spellings` (`2`, `2.0`,
    /// `2e0`, `0.2e1`; exponents beyond its cases are reported by the caller), strings with
    /// any escapes (`ecma::quoted_spellings`; canonical only when too long, reported).
    pub(super) fn scalar_regex(&self, v: &Value) -> RegexAst {
        if self.opts.llguidance_spellings {
            return RegexAst::Literal(self.scalar_text(v).into_bytes());
        }
        if let Value::Number(n) = v
            && let Some(d) = Decimal::parse(&n.to_string())
        {
            return RegexAst::Pattern(numeric::value_spellings(&d), Default::default());
        }
        if let Value::String(s) = v
            && let Some(r) = ecma::quoted_spellings(s)
        {
            return r;
        }
        RegexAst::Literal(self.scalar_text(v).into_bytes())
    }

    /// Report the spellings of `enum`/`const` values that [`Self::scalar_regex`] and
    /// [`Self::const_value`] do not accept (a subset).
    fn report_value_spellings(&mut self, m: &Map<String, Value>, v: &Value, ptr: &str) -> R<()> {
        let keyword = if m.contains_key("enum") {
            "enum"
        } else {
            "const"
        };
        if numeric::has_nonzero_number(v) {
            let why = format!(
                "a number is accepted in exponent notation only with an exponent within ±{} \
                 (the spellings `m e x` of one value are not regular)",
                numeric::EXP_CASES
            );
            self.spelling(ptr, keyword, &why)?;
        }
        if ecma::has_long_string(v) {
            let why = format!(
                "a string or key longer than {} characters is accepted in its canonical \
                 (`json.dumps`) spelling only",
                ecma::MAX_SPELLED_LITERAL
            );
            self.spelling(ptr, keyword, &why)?;
        }
        Ok(())
    }

    fn scalar_text(&self, v: &Value) -> String {
        match v {
            Value::Null => "null".into(),
            Value::Bool(b) => if *b { "true" } else { "false" }.into(),
            Value::Number(n) => super::pydumps::number(n),
            Value::String(s) => super::pydumps::string(s),
            _ => String::new(),
        }
    }

    /// A nonterminal matching exactly one JSON value (for `const`/`enum`): arrays and
    /// objects are emitted from an explicit stack of open containers.
    fn const_value(&mut self, v: &Value, ptr: &str) -> R<u32> {
        let mut stack: Vec<ConstFrame<'_>> = Vec::new();
        let mut pending = Some(v);
        let mut done: Option<u32> = None;
        loop {
            if let Some(x) = pending.take() {
                self.spend(1)?;
                let nt = self.nt("const")?;
                match x {
                    Value::Array(a) => {
                        let p = self.punct()?;
                        stack.push(ConstFrame {
                            nt,
                            rhs: vec![IrSymbol::Lexeme(p.lbrack)],
                            members: Members::Array(a.iter()),
                            first: true,
                        });
                    }
                    Value::Object(o)
                        if o.len() > 1 && self.opts.property_order == PropertyOrder::AnyOrder =>
                    {
                        // Key order is not part of the value: any order of the same members.
                        let mut props = Map::new();
                        for (k, x) in o {
                            props.insert(k.clone(), negate::obj(vec![("const", x.clone())]));
                        }
                        let keys: Vec<Value> = o.keys().map(|k| Value::String(k.clone())).collect();
                        let s = negate::obj(vec![
                            ("type", "object".into()),
                            ("properties", Value::Object(props)),
                            ("required", Value::Array(keys)),
                            ("additionalProperties", Value::Bool(false)),
                        ]);
                        let inner = self.sub_owned(s, ptr, "")?;
                        self.rule(nt, vec![IrSymbol::Nonterminal(inner)])?;
                        done = Some(nt);
                    }
                    Value::Object(o) => {
                        let p = self.punct()?;
                        stack.push(ConstFrame {
                            nt,
                            rhs: vec![IrSymbol::Lexeme(p.lbrace)],
                            members: Members::Object(o.iter()),
                            first: true,
                        });
                    }
                    _ => {
                        let t = self.scalar_text(x);
                        let r = self.scalar_regex(x);
                        let l = self.lexeme(&t, r)?;
                        self.rule(nt, vec![IrSymbol::Lexeme(l)])?;
                        done = Some(nt);
                    }
                }
            }
            let Some(top) = stack.last_mut() else {
                return match done {
                    Some(nt) => Ok(nt),
                    None => self.nothing(),
                };
            };
            if let Some(c) = done.take() {
                top.rhs.push(IrSymbol::Nonterminal(c));
            }
            let p = self.punct()?;
            let sep = !top.first;
            top.first = false;
            match &mut top.members {
                Members::Array(it) => {
                    if let Some(x) = it.next() {
                        if sep {
                            top.rhs.push(IrSymbol::Lexeme(p.comma));
                        }
                        pending = Some(x);
                        continue;
                    }
                    top.rhs.push(IrSymbol::Lexeme(p.rbrack));
                }
                Members::Object(it) => {
                    if let Some((k, x)) = it.next() {
                        if sep {
                            top.rhs.push(IrSymbol::Lexeme(p.comma));
                        }
                        let kl = self.lexeme(
                            &super::pydumps::string(k),
                            key_spellings(k, self.opts.llguidance_spellings),
                        )?;
                        top.rhs.push(IrSymbol::Lexeme(kl));
                        top.rhs.push(IrSymbol::Lexeme(p.colon));
                        pending = Some(x);
                        continue;
                    }
                    top.rhs.push(IrSymbol::Lexeme(p.rbrace));
                }
            }
            if let Some(f) = stack.pop() {
                self.rule(f.nt, f.rhs)?;
                done = Some(f.nt);
            }
        }
    }
}
