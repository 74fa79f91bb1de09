//! Numbers: bounds, `multipleOf` and the excluded keyword groups as number regexes.

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use alloc::{format, vec};

use serde_json::{Map, Value};

use crate::grammar::json::Direction;
use crate::grammar::json::numeric::{self, Decimal};
use crate::regex::RegexAst;

use super::{CANON_NUMBER, Compiler, INTEGER_CANONICAL, NUMBER, R, T_INT, negate};

/// A numeric bound: value and whether it is exclusive.
#[derive(Clone)]
struct Bound {
    value: f64,
    dec: Decimal,
    strict: bool,
}

impl Compiler<'_> {
    fn bound(&mut self, m: &Map<String, Value>, lower: bool, ptr: &str) -> R<Option<Bound>> {
        let (incl, excl) = if lower {
            ("minimum", "exclusiveMinimum")
        } else {
            ("maximum", "exclusiveMaximum")
        };
        let parse = |v: &Value| -> Option<(f64, Decimal)> {
            let Value::Number(n) = v else { return None };
            Some((n.as_f64()?, Decimal::parse(&n.to_string())?))
        };
        let mut best: Option<Bound> = None;
        let mut consider = |b: Bound| {
            let better = match &best {
                None => true,
                Some(old) => {
                    if lower {
                        b.value > old.value || (b.value == old.value && b.strict)
                    } else {
                        b.value < old.value || (b.value == old.value && b.strict)
                    }
                }
            };
            if better {
                best = Some(b);
            }
        };
        let draft4_excl = m.get(excl) == Some(&Value::Bool(true));
        if let Some(v) = m.get(incl) {
            match parse(v) {
                Some((value, dec)) => consider(Bound {
                    value,
                    dec,
                    strict: draft4_excl,
                }),
                None => self.approx(ptr, incl, Direction::Superset, "not a finite number")?,
            }
        }
        if let Some(v) = m.get(excl)
            && !v.is_boolean()
        {
            match parse(v) {
                Some((value, dec)) => consider(Bound {
                    value,
                    dec,
                    strict: true,
                }),
                None => self.approx(ptr, excl, Direction::Superset, "not a finite number")?,
            }
        }
        Ok(best)
    }

    pub(super) fn number(&mut self, m: &Map<String, Value>, integer: bool, ptr: &str) -> R<u32> {
        let regex = self.number_full_regex(m, integer, ptr)?;
        // Draft 3–4 integers are plain digits: no spelling of one is lost.
        let lossy_integer = integer && !self.old_id;
        let negated = m.contains_key(self.keys.not_number.as_str());
        for (keyword, why) in numeric::spelling_losses(m, lossy_integer, negated) {
            self.spelling(ptr, keyword, &why)?;
        }
        self.lexeme(&format!("number:{ptr}"), regex)
    }

    /// The number regex of `m` including its [`super::PrivateKeys::not_number`] exclusions.
    pub(super) fn number_full_regex(
        &mut self,
        m: &Map<String, Value>,
        integer: bool,
        ptr: &str,
    ) -> R<RegexAst> {
        let r = self.number_regex(m, integer, ptr)?;
        let Some(Value::Array(groups)) = m.get(self.keys.not_number.as_str()) else {
            return Ok(r);
        };
        let mut parts = vec![
            r,
            RegexAst::Pattern(CANON_NUMBER.into(), Default::default()),
        ];
        let mut excluded = Vec::new();
        for g in groups {
            let r = self.excluded_regex(g, ptr, false)?;
            excluded.push(r);
        }
        parts.push(RegexAst::Not(Box::new(RegexAst::Or(excluded))));
        Ok(RegexAst::And(parts))
    }

    /// The regex of a keyword group excluded by [`super::PrivateKeys::not_number`] or
    /// [`super::PrivateKeys::not_string`]; when it is
    /// not exact, nothing is excluded (a superset, reported).
    pub(super) fn excluded_regex(&mut self, g: &Value, ptr: &str, string: bool) -> R<RegexAst> {
        let (saved_flip, saved_inexact) = (self.flip, self.inexact);
        self.flip = true;
        self.inexact = false;
        let r = if string {
            self.string_group_regex(g, ptr)
        } else {
            self.number_group_regex(g, ptr)
        };
        let inexact = self.inexact;
        self.flip = saved_flip;
        self.inexact = saved_inexact || inexact;
        let r = r?;
        if inexact {
            if self.flip {
                return Ok(RegexAst::Nothing);
            }
            self.approx(
                ptr,
                "not",
                Direction::Superset,
                "a negated keyword is not compiled exactly; nothing is excluded for it",
            )?;
            return Ok(RegexAst::Nothing);
        }
        Ok(r)
    }

    /// The numbers satisfying one keyword group (numeric keywords, `enum`, `type`).
    fn number_group_regex(&mut self, g: &Value, ptr: &str) -> R<RegexAst> {
        let Value::Object(g) = g else {
            return Ok(if *g == Value::Bool(false) {
                RegexAst::Nothing
            } else {
                RegexAst::Pattern(NUMBER.into(), Default::default())
            });
        };
        let integer = g.get("type").and_then(negate::type_bits) == Some(T_INT);
        let mut parts = vec![self.number_full_regex(g, integer, ptr)?];
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
                .filter(|v| v.is_number())
                .map(|v| self.scalar_regex(v))
                .collect();
            parts.push(RegexAst::Or(alts));
        }
        Ok(RegexAst::And(parts))
    }

    fn number_regex(&mut self, m: &Map<String, Value>, integer: bool, ptr: &str) -> R<RegexAst> {
        let lo = self.bound(m, true, ptr)?;
        let hi = self.bound(m, false, ptr)?;
        let mut parts: Vec<RegexAst> = Vec::new();
        let pat = |s: String| RegexAst::Pattern(s, Default::default());
        let bounded = lo.is_some() || hi.is_some();
        // Plain digits only: LLGuidance's spelling, and drafts 3–4's `integer` type (there a
        // value spelled `1.0` is a number, not an integer; `multipleOf: 1` still accepts it).
        let canonical = self.opts.llguidance_spellings || (integer && self.old_id);
        let mut integer = integer;
        let mut frac_digits: Option<usize> = None;
        let mut int_step: Option<u64> = None;
        if let Some(mo) = m.get("multipleOf") {
            let d = mo.as_f64().unwrap_or(0.0);
            let dec = Value::as_number(mo).and_then(|n| Decimal::parse(&n.to_string()));
            match dec {
                Some(dec) if d > 0.0 && dec.int == "1" && !dec.frac.is_empty() => {
                    self.approx(
                        ptr,
                        "multipleOf",
                        Direction::Superset,
                        "divisor not supported",
                    )?;
                }
                Some(dec) if d > 0.0 && dec.frac.is_empty() => {
                    integer = true;
                    let n: u64 = dec.int.parse().unwrap_or(0);
                    if n > 1 {
                        int_step = Some(n);
                    }
                }
                Some(dec)
                    if d > 0.0
                        && dec.int == "0"
                        && dec.frac.ends_with('1')
                        && dec.frac[..dec.frac.len() - 1].bytes().all(|b| b == b'0') =>
                {
                    frac_digits = Some(dec.frac.len());
                }
                _ => {
                    self.approx(
                        ptr,
                        "multipleOf",
                        Direction::Superset,
                        "divisor not supported",
                    )?;
                }
            }
        }
        // The value set in every spelling (exponent notation: see `numeric::exponent_spellings`).
        if bounded {
            let mut plain = vec![pat(numeric::ANY_MAG_SIGNED.into())];
            if let Some(b) = &lo {
                plain.push(pat(numeric::ge(&b.dec, b.strict)));
            }
            if let Some(b) = &hi {
                plain.push(pat(numeric::le(&b.dec, b.strict)));
            }
            if integer && canonical {
                plain.push(pat(INTEGER_CANONICAL.into()));
            } else if integer {
                plain.push(pat(numeric::INTEGER_PLAIN.into()));
            }
            let lo_b = lo.as_ref().map(|b| (&b.dec, b.strict));
            let hi_b = hi.as_ref().map(|b| (&b.dec, b.strict));
            // Integrality is tested inside each notation's case (see
            // `numeric::exponent_spellings`).
            if integer && canonical {
                // LLGuidance writes integers in plain notation only.
                parts.push(RegexAst::And(plain));
            } else {
                parts.push(RegexAst::Or(vec![
                    RegexAst::And(plain),
                    numeric::exponent_spellings(lo_b, hi_b, integer),
                ]));
            }
        } else if integer && canonical {
            parts.push(pat(INTEGER_CANONICAL.into()));
        } else if integer {
            // Every integer spelling is a JSON number: no `NUMBER &` around it (an
            // intersection makes every cold lexer transition of the lexeme run an
            // emptiness check).
            parts.push(pat(numeric::integer_spellings()));
        } else {
            parts.push(pat(NUMBER.into()));
        }
        if let Some(k) = frac_digits {
            // Plain decimal notation only (reported by `numeric::spelling_losses`).
            parts.push(pat(format!(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]{{1,{k}}}0*)?")));
        }
        if let Some(n) = int_step {
            match self.multiple_regex(n) {
                Some(r) => parts.push(pat(r)),
                None => self.approx(
                    ptr,
                    "multipleOf",
                    Direction::Superset,
                    "divisor not supported",
                )?,
            }
        }
        Ok(if parts.len() == 1 {
            parts.pop().unwrap_or(RegexAst::Nothing)
        } else {
            RegexAst::And(parts)
        })
    }

    /// Integers (optional `-`) divisible by `n`, for `n = 2^a 5^b` (checked on the last
    /// digits) and small `n` (a digit automaton unrolled into a regex is too large, so
    /// other divisors are unsupported).
    fn multiple_regex(&self, n: u64) -> Option<String> {
        let mut a = 0;
        let mut b = 0;
        let mut x = n;
        while x.is_multiple_of(2) {
            x /= 2;
            a += 1;
        }
        while x.is_multiple_of(5) {
            x /= 5;
            b += 1;
        }
        if x != 1 {
            return None;
        }
        let k = a.max(b) as u32;
        if k > 4 {
            return None;
        }
        let modulus = 10u64.pow(k);
        // All k-digit endings (with leading zeros) divisible by n.
        let mut ends = Vec::new();
        let mut v = 0;
        while v < modulus {
            ends.push(format!("{:0width$}", v, width = k as usize));
            v += n;
        }
        // Shorter numbers: the values below 10^(k-1)... handled by listing them directly.
        let mut short = Vec::new();
        let mut v = n;
        while v < modulus / 10 {
            short.push(v.to_string());
            v += n;
        }
        let mut alts = vec![String::from("0")];
        alts.extend(short.iter().map(|s| format!("-?{s}")));
        alts.push(format!("-?[1-9][0-9]*(?:{})", ends.join("|")));
        // Numbers with exactly k digits whose value is a multiple: covered when the leading
        // part is empty only if they start with a non-zero digit.
        let full: Vec<&String> = ends.iter().filter(|e| !e.starts_with('0')).collect();
        if !full.is_empty() {
            let f: Vec<&str> = full.iter().map(|s| s.as_str()).collect();
            alts.push(format!("-?(?:{})", f.join("|")));
        }
        Some(format!("(?:{})", alts.join("|")))
    }
}
