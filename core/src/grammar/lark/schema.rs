//! Inline JSON Schemas (`name: %json { ... }`): parsing the object text and locating
//! errors in the grammar source.
//!
//! Invalid JSON is a `Syntax` error at the offending byte: serde_json's line and column,
//! which count bytes of the object text, are mapped back into the grammar text. A compile
//! error of [`crate::grammar::json::compile`] names a JSON pointer (`at /properties/x: ...`);
//! it is looked up in the object text, so the error spans the value the pointer names, or
//! the deepest part of the pointer that exists there, or else the whole object. The lookup
//! scans the text with loops (no recursion) and costs one pass over the object.

#[cfg(feature = "json-schema")]
use alloc::{format, string::String};

use serde_json::Value;

use super::span::LineIndex;
use crate::error::{GrammarError, GrammarErrorKind};

/// Parse the object at source bytes `text.0..text.1`. Without the `json-schema` feature a
/// `%json` schema could not be compiled anyway: it is `Unsupported` here, before serde_json's
/// parser is reached (which keeps that parser out of a minimal firmware).
pub(super) fn parse(lines: &LineIndex<'_>, text: (usize, usize)) -> Result<Value, GrammarError> {
    #[cfg(not(feature = "json-schema"))]
    {
        Err(lines.error(
            GrammarErrorKind::Unsupported,
            text.0,
            text.1,
            "`%json` schemas are not compiled in: enable sieve-core's cargo feature `json-schema`",
        ))
    }
    #[cfg(feature = "json-schema")]
    parse_json(lines, text)
}

#[cfg(feature = "json-schema")]
fn parse_json(lines: &LineIndex<'_>, text: (usize, usize)) -> Result<Value, GrammarError> {
    let src = lines.text(text.0, text.1);
    serde_json::from_str(src).map_err(|e| {
        let at = text.0 + offset_of(src, e.line(), e.column()).min(src.len());
        let full = format!("{e}");
        // serde_json appends its own ` at line L column C`, relative to the object text.
        let detail = match full.rsplit_once(" at line ") {
            Some((head, _)) if e.line() > 0 => head,
            _ => full.as_str(),
        };
        let end = (at + 1).min(text.1);
        lines.syntax(at, end, format!("invalid JSON in `%json` schema: {detail}"))
    })
}

/// The byte offset of serde_json's 1-based `line` and byte `column` (the column of the
/// byte just consumed; 0 when that byte is the line break before `line`).
#[cfg(feature = "json-schema")]
fn offset_of(src: &str, line: usize, column: usize) -> usize {
    let mut line_start = 0;
    let mut seen = 1;
    for (i, b) in src.bytes().enumerate() {
        if seen >= line {
            break;
        }
        if b == b'\n' {
            seen += 1;
            line_start = i + 1;
        }
    }
    match column {
        0 => line_start.saturating_sub(1),
        c => line_start + c - 1,
    }
}

/// Locate a compile error of the schema at source bytes `text.0..text.1`.
#[cfg(feature = "json-schema")]
pub(super) fn locate(
    lines: &LineIndex<'_>,
    text: (usize, usize),
    err: GrammarError,
) -> GrammarError {
    let src = lines.text(text.0, text.1);
    let (start, end) = err
        .pointer()
        .map(|p| value_range(src, p))
        .map_or(text, |(s, e)| (text.0 + s, text.0 + e));
    let mut out = GrammarError::new(err.kind, format!("in `%json` schema: {}", err.message));
    out.span = Some(lines.span(start, end));
    out.pointer = err.pointer;
    out
}

/// The byte range, in `src` (a valid JSON text), of the value `pointer` names, or of the
/// deepest value on its path that exists.
#[cfg(feature = "json-schema")]
pub(super) fn value_range(src: &str, pointer: &str) -> (usize, usize) {
    let b = src.as_bytes();
    let mut at = skip_ws(b, 0);
    let path = pointer.strip_prefix('#').unwrap_or(pointer);
    if !path.is_empty() {
        for raw in path.split('/').skip(1) {
            let token = raw.replace("~1", "/").replace("~0", "~");
            match child(src, at, &token) {
                Some(next) => at = next,
                None => break,
            }
        }
    }
    (at, skip_value(b, at))
}

/// The start of member `token` of the object or array starting at `at`. For duplicate
/// keys the last one wins, as in the parsed value.
#[cfg(feature = "json-schema")]
fn child(src: &str, at: usize, token: &str) -> Option<usize> {
    let b = src.as_bytes();
    let open = *b.get(at)?;
    let index = match open {
        b'{' => None,
        b'[' => Some(token.parse::<usize>().ok()?),
        _ => return None,
    };
    let close = if open == b'{' { b'}' } else { b']' };
    let mut i = skip_ws(b, at + 1);
    let mut found = None;
    let mut n = 0usize;
    while b.get(i).is_some_and(|&c| c != close) {
        if index.is_none() {
            let key_end = skip_value(b, i);
            let key: Option<String> = src
                .get(i..key_end)
                .and_then(|k| serde_json::from_str(k).ok());
            i = skip_ws(b, key_end);
            if b.get(i) != Some(&b':') {
                return found;
            }
            i = skip_ws(b, i + 1);
            if key.as_deref() == Some(token) {
                found = Some(i);
            }
        } else if index == Some(n) {
            return Some(i);
        }
        n += 1;
        i = skip_ws(b, skip_value(b, i));
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        } else {
            break;
        }
    }
    found
}

#[cfg(feature = "json-schema")]
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        i += 1;
    }
    i
}

/// One past the end of the value (or key string) starting at `i`.
#[cfg(feature = "json-schema")]
fn skip_value(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0usize;
    let mut in_string = false;
    while let Some(&c) = b.get(i) {
        i += 1;
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => {
                    in_string = false;
                    if depth == 0 {
                        return i;
                    }
                }
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                if depth <= 1 {
                    // A closing bracket at depth 0 ends a scalar before it.
                    return if depth == 1 { i } else { i - 1 };
                }
                depth -= 1;
            }
            b',' | b' ' | b'\t' | b'\r' | b'\n' | b':' if depth == 0 => return i - 1,
            _ => {}
        }
    }
    i.min(b.len())
}

/// A `%json` atom where only terminal expressions are allowed.
pub(super) fn not_a_terminal(lines: &LineIndex<'_>, span: (usize, usize)) -> GrammarError {
    lines.error(
        GrammarErrorKind::Unsupported,
        span.0,
        span.1,
        "`%json` and `@grammar` behave like rules: they cannot be used in a terminal, `%ignore` or a \
         `lazy`/`stop` rule",
    )
}
