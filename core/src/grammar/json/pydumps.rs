//! Serialize a [`serde_json::Value`] exactly as Python's `json.dumps(data, ensure_ascii=False)`
//! does: `", "` and `": "` separators, key order kept, short escapes for `"` `\` and
//! `\n \r \t \b \f`, other control characters as `\u00XX`, non-ASCII written raw, integers as
//! written and floats in Python `repr` form (shortest round-trip digits; scientific notation
//! when the decimal exponent is below -4 or at least 16, as in `1e-05` and `1.5e+16`).
//!
//! This is how MaskBench turns a test instance into the text fed to the engine, and how the
//! JSON Schema compiler spells `enum`/`const` values and property names.

use alloc::format;
use alloc::string::String;
use alloc::string::ToString;
use alloc::vec;
use alloc::vec::Vec;

use serde_json::Value;

/// `json.dumps(value, ensure_ascii=False)`.
pub fn dumps(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, None);
    out
}

/// `json.dumps(value, indent=indent, ensure_ascii=False)`: each member and item on its own
/// line, indented by `indent` spaces per level, `,` and `": "` separators, empty arrays and
/// objects as `[]` and `{}` (the same text as `serde_json::to_string_pretty` for
/// `indent = 2`, numbers aside).
pub fn dumps_indent(value: &Value, indent: usize) -> String {
    let mut out = String::new();
    write_value(&mut out, value, Some(indent));
    out
}

fn write_value(out: &mut String, value: &Value, indent: Option<usize>) {
    // Explicit stack: instances can nest deeply.
    enum Step<'a> {
        Value(&'a Value, usize),
        Text(&'static str),
        Key(&'a str),
        /// A line break and the indentation of this depth (with `indent`), else the text.
        Break(usize, &'static str),
    }
    let sep = if indent.is_some() { "," } else { ", " };
    let mut stack = vec![Step::Value(value, 0)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Text(t) => out.push_str(t),
            Step::Break(depth, t) => match indent {
                Some(k) => {
                    out.push('\n');
                    out.extend(core::iter::repeat_n(' ', k * depth));
                }
                None => out.push_str(t),
            },
            Step::Key(k) => {
                write_string(out, k);
                out.push_str(": ");
            }
            Step::Value(v, depth) => match v {
                Value::Null => out.push_str("null"),
                Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                Value::Number(n) => write_number(out, n),
                Value::String(s) => write_string(out, s),
                Value::Array(a) => {
                    out.push('[');
                    stack.push(Step::Text("]"));
                    if !a.is_empty() {
                        stack.push(Step::Break(depth, ""));
                    }
                    for (i, x) in a.iter().enumerate().rev() {
                        stack.push(Step::Value(x, depth + 1));
                        stack.push(Step::Break(depth + 1, ""));
                        if i > 0 {
                            stack.push(Step::Text(sep));
                        }
                    }
                }
                Value::Object(m) => {
                    out.push('{');
                    stack.push(Step::Text("}"));
                    if !m.is_empty() {
                        stack.push(Step::Break(depth, ""));
                    }
                    let entries: Vec<(&String, &Value)> = m.iter().collect();
                    for (i, (k, x)) in entries.into_iter().enumerate().rev() {
                        stack.push(Step::Value(x, depth + 1));
                        stack.push(Step::Key(k));
                        stack.push(Step::Break(depth + 1, ""));
                        if i > 0 {
                            stack.push(Step::Text(sep));
                        }
                    }
                }
            },
        }
    }
}

pub(crate) fn write_number(out: &mut String, n: &serde_json::Number) {
    if n.is_i64() || n.is_u64() {
        out.push_str(&n.to_string());
    } else {
        out.push_str(&float_repr(n.as_f64().unwrap_or(f64::NAN)));
    }
}

/// Python `repr(float)`.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // `{:e}` gives the shortest round-trip digits as `d.ddde<exp>`.
    let sci = format!("{f:e}");
    let (mant, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    if !(-4..16).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mant}e{sign}{:02}", exp.abs());
    }
    // Fixed notation: Rust's `{}` also prints the shortest round-trip digits.
    let s = format!("{f}");
    if s.contains('.') { s } else { format!("{s}.0") }
}

pub(crate) fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A string's `json.dumps` spelling, quotes included.
#[cfg(feature = "json-schema")]
pub(crate) fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_string(&mut out, s);
    out
}

/// A number's `json.dumps` spelling.
#[cfg(feature = "json-schema")]
pub(crate) fn number(n: &serde_json::Number) -> String {
    let mut out = String::new();
    write_number(&mut out, n);
    out
}
