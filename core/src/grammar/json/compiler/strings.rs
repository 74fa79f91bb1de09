//! Strings: the regex of a string's body (lengths, `pattern`, `format`, excluded groups)
//! and whether a scalar `enum` value satisfies its type's keywords.

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use alloc::{format, vec};

use serde_json::{Map, Value};

use crate::error::LimitKind;
use crate::grammar::json::ecma::{self, PatternError};
use crate::grammar::json::numeric::Decimal;
use crate::grammar::json::{CoverageStatus, Direction, formats};
use crate::regex::RegexAst;

use super::{CANON_NUMBER, Compiler, R, T_INT, as_count, child, negate};

impl Compiler<'_> {
    /// The body (between quotes) of a string satisfying the string keywords of `m`.
    pub(super) fn string_body(&mut self, m: &Map<String, Value>, ptr: &str) -> R<RegexAst> {
        let mut parts = Vec::new();
        let min = m.get("minLength").and_then(as_count).unwrap_or(0);
        let max = m.get("maxLength").and_then(as_count);
        let max_repeat = u64::from(self.limits.max_repeat);
        if min > max_repeat {
            return Err(self.limit_error(LimitKind::RepeatCount, &child(ptr, "minLength")));
        }
        let mut max = max;
        if max.is_some_and(|x| x > max_repeat) {
            self.approx(
                ptr,
                "maxLength",
                Direction::Superset,
                "above the max_repeat limit; not enforced",
            )?;
            max = None;
        }
        if max.is_some_and(|x| x < min) {
            return Ok(RegexAst::Nothing);
        }
        let char_re = RegexAst::Pattern(self.str_char().into(), Default::default());
        parts.push(RegexAst::Repeat(
            Box::new(char_re),
            min as u32,
            max.map(|x| x as u32),
        ));
        let patterns: Vec<String> = match m.get("pattern") {
            Some(Value::String(p)) => vec![p.clone()],
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect(),
            _ => Vec::new(),
        };
        for p in patterns {
            if let Some(r) = self.pattern(&p, ptr, "pattern")? {
                parts.push(r)
            }
        }
        if let Some(f) = m.get("format").and_then(Value::as_str)
            && self.opts.assert_formats
        {
            match formats::format_regex(f) {
                // Every spelling of the matching texts (`\u0040` for `@`).
                Some(r) => parts.push(ecma::spell_regex(&r, 100).unwrap_or(RegexAst::Nothing)),
                None if formats::is_spec_format(f) => {
                    self.note(ptr, "format", CoverageStatus::Unsupported)?;
                }
                None => self.note(ptr, "format", CoverageStatus::Unknown)?,
            }
        }
        if let Some(Value::Array(groups)) = m.get(self.keys.not_string.as_str()) {
            parts.push(RegexAst::Repeat(
                Box::new(RegexAst::Pattern(
                    self.str_char().into(),
                    Default::default(),
                )),
                0,
                None,
            ));
            let mut excluded = Vec::new();
            for g in groups {
                let r = self.excluded_regex(g, ptr, true)?;
                excluded.push(r);
            }
            parts.push(RegexAst::Not(Box::new(RegexAst::Or(excluded))));
        }
        Ok(if parts.len() == 1 {
            parts.pop().unwrap_or(RegexAst::Nothing)
        } else {
            RegexAst::And(parts)
        })
    }

    /// The string bodies satisfying one keyword group (string keywords, `enum`).
    pub(super) fn string_group_regex(&mut self, g: &Value, ptr: &str) -> R<RegexAst> {
        let Value::Object(g) = g else {
            return Ok(if *g == Value::Bool(false) {
                RegexAst::Nothing
            } else {
                self.string_any()
            });
        };
        let mut parts = vec![self.string_body(g, ptr)?];
        let mut values: Option<Vec<Value>> = g.get("const").map(|c| vec![c.clone()]);
        if let Some(Value::Array(e)) = g.get("enum") {
            values = Some(match values {
                Some(c) => c.into_iter().filter(|x| e.contains(x)).collect(),
                None => e.clone(),
            });
        }
        if let Some(vals) = values {
            let alts: Vec<RegexAst> = vals
                .iter()
                .filter_map(|v| v.as_str())
                .map(|v| {
                    ecma::literal_spellings(v).unwrap_or_else(|| {
                        let q = super::pydumps::string(v);
                        RegexAst::Literal(q.as_bytes()[1..q.len() - 1].to_vec())
                    })
                })
                .collect();
            if vals.iter().any(ecma::has_long_string) {
                // Complemented over every spelling, a canonical-only literal would exclude
                // too little: nothing is excluded instead (the caller reports it).
                self.approx(ptr, "enum", Direction::Superset, "string too long to spell")?;
            }
            parts.push(RegexAst::Or(alts));
        }
        Ok(RegexAst::And(parts))
    }

    /// Does a scalar `enum` value satisfy the other keywords of its type in `m`?
    pub(super) fn scalar_allowed(
        &mut self,
        m: &Map<String, Value>,
        v: &Value,
        ptr: &str,
    ) -> R<bool> {
        let has = |keys: &[&str], internal: &str| {
            keys.iter().any(|k| m.contains_key(*k)) || m.contains_key(internal)
        };
        match v {
            Value::String(text) if has(&negate::STRING_KEYS, &self.keys.not_string) => {
                let body = self.string_body(m, ptr)?;
                self.key_matches(&super::pydumps::string(text), &Self::quoted(body))
            }
            Value::Number(n) if has(&negate::NUMBER_KEYS, &self.keys.not_number) => {
                let Some(d) = Decimal::parse(&n.to_string()) else {
                    return Ok(true);
                };
                let mut text = String::new();
                if d.negative {
                    text.push('-');
                }
                text.push_str(&d.int);
                if !d.frac.is_empty() {
                    text.push('.');
                    text.push_str(&d.frac);
                }
                let integer = m.get("type").and_then(negate::type_bits) == Some(T_INT);
                let r = self.number_full_regex(m, integer, ptr)?;
                let r = RegexAst::And(vec![
                    r,
                    RegexAst::Pattern(CANON_NUMBER.into(), Default::default()),
                ]);
                self.key_matches(&text, &r)
            }
            _ => Ok(true),
        }
    }

    /// An ECMA pattern over the encoded body, or `None` (reported) when unsupported.
    pub(super) fn pattern(&mut self, p: &str, ptr: &str, keyword: &str) -> R<Option<RegexAst>> {
        let nest = u32::try_from(self.limits.max_nesting_depth).unwrap_or(u32::MAX);
        match ecma::pattern_regex(p, nest) {
            Ok(r) => {
                // Check it compiles (repetition limits, size) before using it.
                match self.exprs.compile(&r) {
                    Ok(_) => Ok(Some(r)),
                    Err(e) => {
                        self.approx(
                            ptr,
                            keyword,
                            Direction::Superset,
                            &format!("pattern {p:?} not compiled: {e}"),
                        )?;
                        Ok(None)
                    }
                }
            }
            Err(PatternError::Unsupported(why)) | Err(PatternError::Invalid(why)) => {
                self.approx(
                    ptr,
                    keyword,
                    Direction::Superset,
                    &format!("pattern {p:?} ignored: {why}"),
                )?;
                Ok(None)
            }
        }
    }
}
