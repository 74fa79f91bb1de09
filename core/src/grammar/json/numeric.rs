//! Regexes for JSON numbers in a range, written in `regex-syntax` syntax.
//!
//! A bound is a finite decimal `D.F` (integer digits `D` without leading zeros, fraction
//! digits `F` without trailing zeros). Comparisons are built over the *magnitude* of a
//! number written without exponent (`(0|[1-9][0-9]*)(\.[0-9]+)?`) and combined with the sign,
//! so every regex here is exact on that syntax. Exponent forms are handled by the caller.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

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
}
