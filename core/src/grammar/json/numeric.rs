//! Regexes for JSON numbers in a range, written in `regex-syntax` syntax.
//!
//! A bound is a finite decimal `D.F` (integer digits `D` without leading zeros, fraction
//! digits `F` without trailing zeros). Comparisons are built over the *magnitude* of a
//! number written without exponent (`(0|[1-9][0-9]*)(\.[0-9]+)?`) and combined with the sign,
//! so every regex here is exact on that syntax.
//!
//! Exponent notation (`m e x`, value `m·10^x`): the set of spellings of the numbers in a
//! range, of the integers or of one value is not regular (comparing the position of `m`'s
//! first or last significant digit with the decimal value `x` needs a counter). The
//! `*_spellings` functions accept every spelling whose exponent lies within
//! ±[`EXP_CASES`] (one exact case per exponent value: the mantissa range is the bound shifted
//! by `-x`), plus every exponent where a whole sign class is in or out of the set (zero, all
//! positives, all negatives). [`spelling_losses`] names the keywords whose valid spellings
//! are then rejected, for the caller to report as subsets.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::cmp::Ordering;

use serde_json::{Map, Value};

use crate::regex::RegexAst;

/// Exponent values `|x| <= EXP_CASES` are spelled exactly under bounds, `integer` and
/// `enum`/`const` numbers (each exponent value is one case of the regex).
pub(crate) const EXP_CASES: i64 = 12;

/// Exponent values `|x| <= BOUND_EXP_CASES` are spelled exactly in a range that holds part
/// of a sign class (`minimum: 1`, `maximum: 5`); none by default. Each case is a
/// range of mantissas in parallel with the others, and a bounded field's first lexer states
/// cost 10-50 ms per first mask with twelve cases each way (1,000-file MaskBench sample: the
/// mean mask 0.30x LLGuidance's became 0.40x, TTFM 0.7x became 2.3x). Exponent notation
/// under a bound is rare in model output; what it loses is reported
/// ([`spelling_losses`]).
pub(crate) const BOUND_EXP_CASES: i64 = 0;

/// A finite decimal bound, split into sign, integer digits and fraction digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decimal {
    /// True for values below zero.
    pub negative: bool,
    /// Integer digits, no leading zeros (`"0"` for zero).
    pub int: String,
    /// Fraction digits, no trailing zeros (empty for integers).
    pub frac: String,
}

impl Decimal {
    /// Parse a JSON number as written by serde_json (`-12.5`, `1e300`, `1.5e-7`).
    pub(crate) fn parse(text: &str) -> Option<Decimal> {
        let (negative, rest) = match text.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, text),
        };
        let (mant, exp) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
            None => (rest, 0),
        };
        let (ip, fp) = match mant.find('.') {
            Some(i) => (&mant[..i], &mant[i + 1..]),
            None => (mant, ""),
        };
        if ip.is_empty() || !ip.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        if !fp.bytes().all(|b| b.is_ascii_digit()) || exp.abs() > 400 {
            return None;
        }
        let mut digits: Vec<u8> = ip.bytes().chain(fp.bytes()).collect();
        // Position of the decimal point within `digits`.
        let mut point = ip.len() as i64 + exp;
        while point < 0 {
            digits.insert(0, b'0');
            point += 1;
        }
        while (digits.len() as i64) < point {
            digits.push(b'0');
        }
        let point = point as usize;
        let int: String = digits[..point].iter().map(|&b| b as char).collect();
        let frac: String = digits[point..].iter().map(|&b| b as char).collect();
        let int = int.trim_start_matches('0');
        let int = if int.is_empty() { "0" } else { int };
        let frac = frac.trim_end_matches('0');
        let zero = int == "0" && frac.is_empty();
        Some(Decimal {
            negative: negative && !zero,
            int: int.to_string(),
            frac: frac.to_string(),
        })
    }

    fn magnitude_is_zero(&self) -> bool {
        self.int == "0" && self.frac.is_empty()
    }

    /// The value times `10^e`.
    pub(crate) fn shift(&self, e: i64) -> Option<Decimal> {
        let frac = if self.frac.is_empty() {
            "0"
        } else {
            &self.frac
        };
        let sign = if self.negative { "-" } else { "" };
        Decimal::parse(&format!("{sign}{}.{frac}e{e}", self.int))
    }

    /// Every plain (no exponent) spelling of this value: `-?int` with any run of fraction
    /// zeros (`2`, `2.0`, `2.00`; `-0` for zero).
    pub(crate) fn plain_spellings(&self) -> String {
        let sign = if self.negative {
            "-"
        } else if self.magnitude_is_zero() {
            "-?"
        } else {
            ""
        };
        if self.frac.is_empty() {
            format!(r"{sign}{}(?:\.0+)?", self.int)
        } else {
            format!(r"{sign}{}\.{}0*", self.int, self.frac)
        }
    }
}

/// A nonzero mantissa (integer digits and optional fraction, no sign).
const NONZERO_MANT: &str = r"(?:[1-9][0-9]*(?:\.[0-9]+)?|0\.[0-9]*[1-9][0-9]*)";
/// A zero mantissa.
const ZERO_MANT: &str = r"0(?:\.0+)?";
/// An exponent part of any value.
const EXP_ANY: &str = r"[eE][+-]?[0-9]+";

/// The exponent part (`e`, sign, digits with leading zeros) of the value `x`.
fn exp_of(x: i64) -> String {
    match x.cmp(&0) {
        Ordering::Greater => format!(r"[eE]\+?0*{x}"),
        Ordering::Equal => String::from("[eE][+-]?0+"),
        Ordering::Less => format!("[eE]-0*{}", x.unsigned_abs()),
    }
}

/// The exponent parts whose value is above `EXP_CASES` (`sign`: `\+?` or `-`).
fn exp_big(sign: &str) -> String {
    format!("[eE]{sign}0*{}", int_gt(&EXP_CASES.to_string()))
}

/// Every spelling of every integer (a number with zero fractional part), except those in
/// exponent notation beyond the cases: an exponent `x > EXP_CASES` with more than
/// `EXP_CASES` significant fraction digits (`1.0000000000001e20`), or `x < -EXP_CASES`
/// with a nonzero mantissa (`1000000000000000e-15`).
pub(crate) fn integer_spellings() -> String {
    let k = EXP_CASES;
    // The cases share their prefixes (the sign, then the integer digits), so that reading a
    // run of digits derives one expression per shape instead of one per exponent case: the
    // first lexer states of an integer field cost a few derivatives, not dozens. The same
    // language as the union of `integer_mantissa(x) exp_of(x)` over the cases (test
    // `integer_spellings_are_factored_exactly`).
    // Exponent `x >= 0`: at most `x` significant fraction digits (`x = 0`: plain notation
    // with a zero fraction, with or without an exponent part).
    let mut nonneg = alloc::vec![String::from(r"(?:\.0+)?(?:[eE][+-]?0+)?")];
    for x in 1..=k {
        nonneg.push(format!(r"(?:\.[0-9]{{1,{x}}}0*)?{}", exp_of(x)));
    }
    nonneg.push(format!(r"(?:\.[0-9]{{1,{k}}}0*)?{}", exp_big(r"\+?")));
    // Exponent `x < 0`: a nonzero integer part ending in at least `-x` zeros.
    let neg: Vec<String> = (1..=k)
        .map(|x| format!(r"0{{{x}}}(?:\.0+)?{}", exp_of(-x)))
        .collect();
    format!(
        r"-?(?:(?:0|[1-9][0-9]*)(?:{})|[1-9][0-9]*(?:{})|{ZERO_MANT}{EXP_ANY})",
        nonneg.join("|"),
        neg.join("|")
    )
}

/// An integer in plain notation (a zero fraction allowed).
pub(crate) const INTEGER_PLAIN: &str = r"-?(?:0|[1-9][0-9]*)(?:\.0+)?";

/// The mantissas `m` (signed, plain notation) for which `m·10^x` is an integer: at most `x`
/// significant fraction digits for `x >= 0`; for `x < 0`, a nonzero integer part ending in
/// at least `-x` zeros and a zero fraction (a zero mantissa is spelled by the caller).
pub(crate) fn integer_mantissa(x: i64) -> String {
    match x {
        0 => String::from(INTEGER_PLAIN),
        x if x > 0 => format!(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]{{1,{x}}}0*)?"),
        x => format!(r"-?[1-9][0-9]*0{{{}}}(?:\.0+)?", x.unsigned_abs()),
    }
}

/// Every spelling of the value `d`: plain, and in exponent notation with `|x| <=
/// EXP_CASES` (any exponent for zero).
pub(crate) fn value_spellings(d: &Decimal) -> String {
    let mut parts = alloc::vec![d.plain_spellings()];
    if d.magnitude_is_zero() {
        parts.push(format!(r"-?{ZERO_MANT}{EXP_ANY}"));
        return alt(&parts);
    }
    for x in -EXP_CASES..=EXP_CASES {
        if let Some(m) = d.shift(-x) {
            parts.push(format!("{}{}", m.plain_spellings(), exp_of(x)));
        }
    }
    alt(&parts)
}

/// Does the range (bounds as `(value, strict)`) hold zero, all positives, some positives,
/// all negatives, some negatives?
struct SignClasses {
    zero: bool,
    all_pos: bool,
    some_pos: bool,
    all_neg: bool,
    some_neg: bool,
}

fn sign_classes(lo: Option<(&Decimal, bool)>, hi: Option<(&Decimal, bool)>) -> SignClasses {
    // lo <= 0 (lo < 0 for `> lo` to hold at zero when strict).
    let lo_le0 = lo.is_none_or(|(d, _)| d.negative || d.magnitude_is_zero());
    let lo_below0 = lo.is_none_or(|(d, _)| d.negative);
    let hi_ge0 = hi.is_none_or(|(d, _)| !d.negative || d.magnitude_is_zero());
    let hi_above0 = hi.is_none_or(|(d, _)| !d.negative && !d.magnitude_is_zero());
    let zero = lo.is_none_or(|(d, s)| d.negative || (d.magnitude_is_zero() && !s))
        && hi.is_none_or(|(d, s)| !(d.negative || (d.magnitude_is_zero() && s)));
    SignClasses {
        zero,
        all_pos: hi.is_none() && lo_le0,
        some_pos: hi_above0,
        all_neg: lo.is_none() && hi_ge0,
        some_neg: lo_below0,
    }
}

/// The spellings in exponent notation of the numbers in the range (each bound optional,
/// with its strictness), of the integers only with `integer`: exact for `|x| <=
/// EXP_CASES`, and for every exponent within a sign class that is wholly in the range
/// (zero, positives, negatives).
pub(crate) fn exponent_spellings(
    lo: Option<(&Decimal, bool)>,
    hi: Option<(&Decimal, bool)>,
    integer: bool,
) -> RegexAst {
    let pat = |s: String| RegexAst::Pattern(s, Default::default());
    let c = sign_classes(lo, hi);
    let mut parts = Vec::new();
    if c.zero {
        parts.push(pat(format!(r"-?{ZERO_MANT}{EXP_ANY}")));
    }
    // A whole sign class: with `integer`, the integers' own spellings bound it.
    let whole = |sign: &str| {
        let any = pat(format!("{sign}{NONZERO_MANT}{EXP_ANY}"));
        if integer {
            RegexAst::And(alloc::vec![any, pat(integer_spellings())])
        } else {
            any
        }
    };
    if c.all_pos {
        parts.push(whole(""));
    }
    if c.all_neg {
        parts.push(whole("-"));
    }
    let partial = (c.some_pos && !c.all_pos) || (c.some_neg && !c.all_neg);
    if partial && BOUND_EXP_CASES > 0 {
        for x in -BOUND_EXP_CASES..=BOUND_EXP_CASES {
            let mut mant = alloc::vec![pat(format!("-?{NONZERO_MANT}"))];
            if integer {
                // Each exponent carries its own integrality test (one And per case, not
                // one intersection of the whole union with every integer spelling: the
                // lexer states of that product cost tens of ms per first mask).
                mant.push(pat(integer_mantissa(x)));
            }
            if let Some((d, strict)) = lo {
                match d.shift(-x) {
                    Some(d) => mant.push(pat(ge(&d, strict))),
                    None => continue,
                }
            }
            if let Some((d, strict)) = hi {
                match d.shift(-x) {
                    Some(d) => mant.push(pat(le(&d, strict))),
                    None => continue,
                }
            }
            parts.push(RegexAst::Concat(alloc::vec![
                RegexAst::And(mant),
                pat(exp_of(x))
            ]));
        }
    }
    RegexAst::Or(parts)
}

/// The number keywords of `m` under which valid spellings are rejected, with why (the
/// caller reports them as subsets). `integer`: the schema's type is `integer`; `negated`:
/// the schema holds negated number keywords (matched over canonical spellings).
pub(crate) fn spelling_losses(
    m: &Map<String, Value>,
    integer: bool,
    negated: bool,
) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if integer {
        out.push((
            "type",
            format!(
                "integers in exponent notation are accepted with an exponent within ±{EXP_CASES} \
                 or with at most {EXP_CASES} significant fraction digits (`{{m e x : m·10^x \
                 integral}}` is not regular): e.g. `1.0000000000001e20` is rejected"
            ),
        ));
    }
    for k in ["minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"] {
        if let Some(Value::Number(n)) = m.get(k)
            && Decimal::parse(&n.to_string()).is_some_and(|d| !d.magnitude_is_zero())
        {
            out.push((
                k,
                if BOUND_EXP_CASES > 0 {
                    format!(
                        "a number in exponent notation is accepted under a nonzero bound only \
                         with an exponent within ±{BOUND_EXP_CASES} (`{{m e x : lo <= m·10^x <= \
                         hi}}` is not regular)"
                    )
                } else {
                    String::from(
                        "under a nonzero bound, numbers are accepted in plain decimal notation \
                         (`5`, `5.0`, `-0.5`), and in exponent notation only where a whole sign \
                         class is in range (`minimum: 0` takes every positive): `1e1` is \
                         rejected under `maximum: 100`",
                    )
                },
            ));
        }
    }
    if m.get("multipleOf")
        .and_then(Value::as_f64)
        .is_some_and(|d| d > 0.0)
    {
        out.push((
            "multipleOf",
            String::from(
                "multiples are accepted in plain decimal notation only (`4.0` is accepted \
                 for an integer divisor only as `4`; no exponent notation)",
            ),
        ));
    }
    if negated {
        out.push((
            "not",
            String::from(
                "numbers under a negated number keyword are accepted in canonical plain \
                 decimals only (no `-0`, trailing fraction zeros or exponent)",
            ),
        ));
    }
    out
}

/// Does `v` hold a nonzero number (at any depth)? Such an `enum`/`const` value keeps only its
/// spellings with small exponents ([`value_spellings`]).
pub(crate) fn has_nonzero_number(v: &Value) -> bool {
    let mut stack = alloc::vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Number(n)
                if Decimal::parse(&n.to_string()).is_some_and(|d| !d.magnitude_is_zero()) =>
            {
                return true;
            }
            Value::Array(a) => stack.extend(a.iter()),
            Value::Object(o) => stack.extend(o.values()),
            _ => {}
        }
    }
    false
}

const ANY_FRAC: &str = r"(?:\.[0-9]+)?";
/// Any number written without exponent.
pub(crate) const ANY_MAG_SIGNED: &str = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?";
/// Any magnitude written without exponent.
pub(crate) const ANY_MAG: &str = r"(?:0|[1-9][0-9]*)(?:\.[0-9]+)?";

fn alt(parts: &[String]) -> String {
    let parts: Vec<&String> = parts.iter().filter(|p| !p.is_empty()).collect();
    match parts.len() {
        0 => String::new(),
        _ => {
            let mut s = String::from("(?:");
            for (i, p) in parts.iter().enumerate() {
                if i > 0 {
                    s.push('|');
                }
                s.push_str(p);
            }
            s.push(')');
            s
        }
    }
}

fn digit_class(lo: u8, hi: u8) -> String {
    if lo == hi {
        (lo as char).to_string()
    } else {
        format!("[{}-{}]", lo as char, hi as char)
    }
}

/// Canonical integers (no leading zeros) strictly greater than `a`.
fn int_gt(a: &str) -> String {
    let n = a.len();
    let b = a.as_bytes();
    let mut parts = Vec::new();
    // Longer numbers.
    parts.push(format!("[1-9][0-9]{{{n},}}"));
    for i in 0..n {
        if b[i] < b'9' {
            let rest = n - i - 1;
            parts.push(format!(
                "{}{}[0-9]{{{rest}}}",
                &a[..i],
                digit_class(b[i] + 1, b'9')
            ));
        }
    }
    alt(&parts)
}

/// Canonical integers strictly less than `a` (possibly none: empty string).
fn int_lt(a: &str) -> String {
    let n = a.len();
    let b = a.as_bytes();
    let mut parts = Vec::new();
    if n > 1 {
        parts.push(String::from("0"));
        if n > 2 {
            parts.push(format!("[1-9][0-9]{{0,{}}}", n - 2));
        } else {
            parts.push(String::from("[1-9]"));
        }
    }
    for i in 0..n {
        let low = if i == 0 && n > 1 { b'1' } else { b'0' };
        if b[i] > low {
            let rest = n - i - 1;
            parts.push(format!(
                "{}{}[0-9]{{{rest}}}",
                &a[..i],
                digit_class(low, b[i] - 1)
            ));
        }
    }
    alt(&parts)
}

/// Optional fraction part `(\.digits)?` whose value is `>= 0.f` (`strict`: `>`).
fn frac_ge(f: &str, strict: bool) -> String {
    let b = f.as_bytes();
    let mut parts = Vec::new();
    for i in 0..b.len() {
        if b[i] < b'9' {
            parts.push(format!("{}{}[0-9]*", &f[..i], digit_class(b[i] + 1, b'9')));
        }
    }
    if strict {
        parts.push(format!("{f}[0-9]*[1-9][0-9]*"));
    } else {
        parts.push(format!("{f}[0-9]*"));
    }
    let digits = alt(&parts);
    if f.is_empty() && !strict {
        return String::from(ANY_FRAC);
    }
    format!(r"\.{digits}")
}

/// Optional fraction part whose value is `<= 0.f` (`strict`: `<`); `None` if impossible.
fn frac_le(f: &str, strict: bool) -> Option<String> {
    if f.is_empty() {
        // Only zero fractions.
        return if strict {
            None
        } else {
            Some(String::from(r"(?:\.0+)?"))
        };
    }
    let b = f.as_bytes();
    let mut parts = Vec::new();
    for i in 0..b.len() {
        if b[i] > b'0' {
            parts.push(format!("{}{}[0-9]*", &f[..i], digit_class(b'0', b[i] - 1)));
        }
        if i > 0 {
            // A proper prefix of `f` (followed by nothing) is smaller.
            parts.push(f[..i].to_string());
        }
    }
    if !strict {
        parts.push(format!("{f}0*"));
    }
    Some(format!(r"(?:\.{})?", alt(&parts)))
}

/// Magnitudes `>= d` (`strict`: `>`), `d` taken without its sign.
fn mag_ge(d: &Decimal, strict: bool) -> String {
    let mut parts = Vec::new();
    parts.push(format!("{}{ANY_FRAC}", int_gt(&d.int)));
    parts.push(format!("{}{}", d.int, frac_ge(&d.frac, strict)));
    alt(&parts)
}

/// Magnitudes `<= d` (`strict`: `<`); empty string if none.
fn mag_le(d: &Decimal, strict: bool) -> String {
    let mut parts = Vec::new();
    let lt = int_lt(&d.int);
    if !lt.is_empty() {
        parts.push(format!("{lt}{ANY_FRAC}"));
    }
    if let Some(f) = frac_le(&d.frac, strict) {
        parts.push(format!("{}{f}", d.int));
    }
    alt(&parts)
}

/// Numbers (without exponent, optional `-`) that are `>= lo` (`strict`: `>`).
pub(crate) fn ge(lo: &Decimal, strict: bool) -> String {
    if lo.negative {
        // Every non-negative number, and negatives whose magnitude is <= |lo|.
        let neg = mag_le(lo, strict);
        let mut parts = alloc::vec![String::from(ANY_MAG)];
        if !neg.is_empty() {
            parts.push(format!("-{neg}"));
        }
        alt(&parts)
    } else {
        let mut parts = alloc::vec![mag_ge(lo, strict)];
        if lo.magnitude_is_zero() && !strict {
            // `-0`, `-0.0` equal zero.
            parts.push(String::from(r"-0(?:\.0+)?"));
        }
        alt(&parts)
    }
}

/// Numbers (without exponent, optional `-`) that are `<= hi` (`strict`: `<`).
pub(crate) fn le(hi: &Decimal, strict: bool) -> String {
    if hi.negative {
        format!("-{}", mag_ge(hi, strict))
    } else if hi.magnitude_is_zero() {
        let mut parts = alloc::vec![format!("-{}", mag_ge(hi, true))];
        if !strict {
            parts.push(String::from(r"-?0(?:\.0+)?"));
        }
        alt(&parts)
    } else {
        let mut parts = alloc::vec![format!("-{ANY_MAG}")];
        let m = mag_le(hi, strict);
        if !m.is_empty() {
            parts.push(m);
        }
        alt(&parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(pattern: &str, text: &str) -> bool {
        let limits = crate::Limits::default();
        let mut set = crate::regex::ExprSet::new(&limits);
        let ast = crate::regex::RegexAst::Pattern(pattern.into(), Default::default());
        let e = set.compile(&ast).unwrap();
        let d = set.derivative_bytes(e, text.as_bytes()).unwrap();
        set.is_nullable(d)
    }

    fn dec(s: &str) -> Decimal {
        Decimal::parse(s).unwrap()
    }

    #[test]
    fn parse_decimal() {
        assert_eq!(dec("12.50").int, "12");
        assert_eq!(dec("12.50").frac, "5");
        assert_eq!(dec("1e3").int, "1000");
        assert_eq!(dec("1.5e-3").frac, "0015");
        assert!(!dec("-0.0").negative);
        assert!(dec("-0.5").negative);
    }

    #[test]
    fn ranges_agree_with_arithmetic() {
        let bounds = [
            "0", "1", "-1", "10", "-10", "0.5", "-0.5", "2.25", "-2.25", "99", "100",
        ];
        let values = [
            "0", "-0", "1", "-1", "2", "9", "10", "11", "99", "100", "101", "1000", "-2", "-9",
            "-10", "-11", "-100", "0.5", "0.25", "0.51", "0.49", "-0.5", "-0.49", "-0.51", "2.25",
            "2.2", "2.3", "2.250", "-2.25", "-2.26", "-2.24", "1.0", "0.0", "99.9", "100.0",
            "100.01",
        ];
        for b in bounds {
            let bv: f64 = b.parse().unwrap();
            let bd = dec(b);
            for strict in [false, true] {
                let g = ge(&bd, strict);
                let l = le(&bd, strict);
                for v in values {
                    let x: f64 = v.parse().unwrap();
                    let want_ge = if strict { x > bv } else { x >= bv };
                    let want_le = if strict { x < bv } else { x <= bv };
                    assert_eq!(check(&g, v), want_ge, "{v} >{} {b}: {g}", strict);
                    assert_eq!(check(&l, v), want_le, "{v} <{} {b}: {l}", strict);
                }
            }
        }
    }

    /// The factored `integer_spellings` has the language of the union of its cases (the form
    /// it had before it was factored), and within the cases that language is the integers:
    /// checked on structured numbers (runs of zeros, fractions, every exponent shape around
    /// the case limits) and on every string of up to 5 characters over a number alphabet.
    #[test]
    fn integer_spellings_are_factored_exactly() {
        let k = EXP_CASES;
        let mut cases = alloc::vec![
            String::from(INTEGER_PLAIN),
            format!(r"-?{ZERO_MANT}{EXP_ANY}")
        ];
        for x in 0..=k {
            cases.push(format!("{}{}", integer_mantissa(x), exp_of(x)));
        }
        cases.push(format!(
            r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]{{1,{k}}}0*)?{}",
            exp_big(r"\+?")
        ));
        for x in 1..=k {
            cases.push(format!("{}{}", integer_mantissa(-x), exp_of(-x)));
        }
        let limits = crate::Limits::default();
        let mut set = crate::regex::ExprSet::new(&limits);
        let mut compile = |p: String| {
            set.compile(&crate::regex::RegexAst::Pattern(p, Default::default()))
                .unwrap()
        };
        let old = compile(alt(&cases));
        let new = compile(integer_spellings());
        let mut texts: Vec<String> = Vec::new();
        let ints = [
            "0",
            "7",
            "10",
            "120",
            "1000",
            "50000",
            "1000000000000",
            "10000000000000",
            "12000",
        ];
        let fracs = [
            "",
            ".0",
            ".00",
            ".5",
            ".50",
            ".05",
            ".25",
            ".123456789012",
            ".1234567890123",
            ".0000000000001",
            ".100",
        ];
        let mut exps: Vec<String> = alloc::vec![String::new()];
        for x in [0, 1, 2, 3, 4, 11, 12, 13, 14, 99] {
            for sign in ["", "+", "-"] {
                for e in ["e", "E"] {
                    exps.push(format!("{e}{sign}{x}"));
                    exps.push(format!("{e}{sign}0{x}"));
                }
            }
        }
        for sign in ["", "-"] {
            for i in ints {
                for f in fracs {
                    for e in &exps {
                        texts.push(format!("{sign}{i}{f}{e}"));
                    }
                }
            }
        }
        let alphabet = b"0159.eE+-";
        let mut short: Vec<Vec<u8>> = alloc::vec![Vec::new()];
        for _ in 0..5 {
            let grown: Vec<Vec<u8>> = short
                .iter()
                .filter(|t| t.len() == short.last().map_or(0, Vec::len))
                .flat_map(|t| {
                    alphabet.iter().map(move |&b| {
                        let mut t = t.clone();
                        t.push(b);
                        t
                    })
                })
                .collect();
            short.extend(grown);
        }
        texts.extend(short.into_iter().filter_map(|t| String::from_utf8(t).ok()));
        let number = compile(String::from(
            r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?",
        ));
        let mut matched = 0;
        let mut matches = |e, t: &str| {
            let d = set.derivative_bytes(e, t.as_bytes()).unwrap();
            set.is_nullable(d)
        };
        for t in &texts {
            let in_new = matches(new, t);
            let in_old = matches(old, t);
            assert_eq!(in_new, in_old, "{t}");
            // Within the cases (|exponent| <= 12, at most 12 fraction digits), by arithmetic.
            let is_number = matches(number, t);
            let exp = t
                .find(['e', 'E'])
                .map_or(Some(0), |i| t[i + 1..].parse::<i64>().ok());
            let frac_digits = t.find('.').map_or(0, |i| {
                t[i + 1..].bytes().take_while(u8::is_ascii_digit).count()
            });
            if is_number && exp.is_some_and(|x| x.abs() <= k) && frac_digits <= 12 {
                let integral = Decimal::parse(t).is_some_and(|d| d.frac.is_empty());
                assert_eq!(in_new, integral, "{t}");
            } else if !is_number {
                assert!(!in_new, "{t}");
            }
            matched += usize::from(in_new);
        }
        assert!(matched > 1000, "{matched} of {} texts matched", texts.len());
    }
}
