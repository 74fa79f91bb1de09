//! Interning [`RegexAst`] trees and lowering `regex-syntax` patterns.
//!
//! Both walks use explicit stacks, so input depth never becomes Rust stack depth; textual
//! patterns are additionally limited to [`crate::Limits::max_nesting_depth`] by the parser.
//! A pattern is an implicitly anchored full match: `^`/`\A` where nothing can have been
//! matched yet and `$`/`\z` where nothing can follow are accepted and ignored, every other
//! look-around is [`RegexCompileErrorKind::Unsupported`]. Unicode classes become UTF-8 byte
//! automata (a prefix trie of [`Utf8Sequences`]), so no pattern matches invalid UTF-8 unless
//! it spells out non-ASCII bytes itself.

use crate::sync::Arc;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use regex_syntax::ParserBuilder;
use regex_syntax::hir::{Class, Hir, HirKind, Look};
use regex_syntax::utf8::Utf8Sequences;

use super::ast::{PatternFlags, RegexAst};
use super::exprset::{ExprId, ExprSet};
use crate::error::LimitKind;
use crate::limits::Limits;

/// A pattern that does not parse, with the byte range inside the pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegexSyntaxError {
    /// What is wrong.
    pub message: String,
    /// Byte range within the pattern text.
    pub start: usize,
    /// End of that range.
    pub end: usize,
}

impl fmt::Display for RegexSyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at {}..{})", self.message, self.start, self.end)
    }
}

impl core::error::Error for RegexSyntaxError {}

/// What went wrong in [`ExprSet::compile`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegexCompileErrorKind {
    /// The pattern does not parse; byte offsets within the pattern text.
    Syntax {
        /// First byte of the offending range.
        start: usize,
        /// One past its last byte.
        end: usize,
    },
    /// A feature the engine does not support (look-around, inner anchors, ...).
    Unsupported,
    /// A budget of [`crate::Limits`] was exceeded.
    Limit(LimitKind),
}

/// An error from [`ExprSet::compile`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegexCompileError {
    /// Human-readable detail.
    pub message: String,
    /// What went wrong.
    pub kind: RegexCompileErrorKind,
}

impl RegexCompileError {
    fn unsupported(message: impl Into<String>) -> Self {
        RegexCompileError {
            message: message.into(),
            kind: RegexCompileErrorKind::Unsupported,
        }
    }
}

impl From<LimitKind> for RegexCompileError {
    fn from(kind: LimitKind) -> Self {
        RegexCompileError {
            message: kind.to_string(),
            kind: RegexCompileErrorKind::Limit(kind),
        }
    }
}

impl fmt::Display for RegexCompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl core::error::Error for RegexCompileError {}

/// Check that a pattern parses and uses only supported features (with default limits).
pub fn check_pattern(pattern: &str, flags: PatternFlags) -> Result<(), RegexSyntaxError> {
    let limits = Limits::default();
    let to_syntax = |e: RegexCompileError| {
        let (start, end) = match e.kind {
            RegexCompileErrorKind::Syntax { start, end } => (start, end),
            _ => (0, pattern.len()),
        };
        RegexSyntaxError {
            message: e.message,
            start,
            end,
        }
    };
    let hir = parse_hir(pattern, flags, limits.max_nesting_depth).map_err(to_syntax)?;
    validate_hir(&hir, limits.max_repeat).map_err(to_syntax)
}

/// [`check_pattern`] under `limits`, keeping the error's kind: exceeding
/// `max_nesting_depth` or `max_repeat` is [`RegexCompileErrorKind::Limit`], and a pattern
/// whose syntax tree may not fit in `room` bytes ([`parse_cost`]) is [`LimitKind::Memory`]
/// before it is parsed.
pub(crate) fn check_pattern_within(
    pattern: &str,
    flags: PatternFlags,
    limits: &Limits,
    room: usize,
) -> Result<(), RegexCompileError> {
    check_pattern_len(pattern, limits.max_expr_nodes)?;
    check_parse_cost(pattern, room)?;
    let hir = parse_hir(pattern, flags, limits.max_nesting_depth)?;
    validate_hir(&hir, limits.max_repeat)
}

/// Peak heap of regex-syntax's AST and HIR per pattern byte, rounded up from the worst
/// shapes measured (release build, 2026-11-24; bytes per pattern byte): 10k-deep `[[..]]` 260,
/// `.` 324, `((..))` 198, `a|a|..` 175, `(a)*` 216, `a**..` 150, literals 90.
const PARSE_BYTES_PER_BYTE: usize = 400;

/// Extra peak heap per Unicode class escape, whose class regex-syntax expands in the HIR
/// (measured, same build: `\W` 25.8 KB, `\w` 6.7 KB, `\pL` 5.8 KB, `\d` 0.9 KB, `\s`
/// 0.4 KB per occurrence); rounded up, a negated class (`\W`, `\P`) the most.
fn class_escape_cost(letter: u8) -> usize {
    match letter {
        b'W' | b'P' => 32 << 10,
        b'w' | b'p' => 12 << 10,
        b'd' | b'D' | b's' | b'S' => 2 << 10,
        _ => 0,
    }
}

/// An upper-bound estimate of the heap regex-syntax takes to parse `pattern` (its AST and
/// HIR, which we cannot instrument): [`PARSE_BYTES_PER_BYTE`] per byte plus
/// [`class_escape_cost`] per Unicode class escape.
pub(crate) fn parse_cost(pattern: &str) -> usize {
    let bytes = pattern.as_bytes();
    let mut escapes = 0usize;
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == b'\\' {
            escapes = escapes.saturating_add(class_escape_cost(bytes[i + 1]));
            i += 2;
        } else {
            i += 1;
        }
    }
    pattern
        .len()
        .saturating_mul(PARSE_BYTES_PER_BYTE)
        .saturating_add(escapes)
}

/// [`LimitKind::Memory`] when parsing `pattern` may take more than `room` bytes.
fn check_parse_cost(pattern: &str, room: usize) -> Result<(), RegexCompileError> {
    if parse_cost(pattern) > room {
        return Err(LimitKind::Memory.into());
    }
    Ok(())
}

/// A pattern longer than `max_nodes` bytes is [`LimitKind::ExprNodes`] before it is parsed:
/// regex-syntax's tree for it would take about a hundred bytes per pattern byte, and its
/// literals alone would need a node per byte (a 1 MB pattern took 1.2 s and 124 MB to
/// reach the same error).
fn check_pattern_len(pattern: &str, max_nodes: usize) -> Result<(), RegexCompileError> {
    if pattern.len() > max_nodes {
        return Err(LimitKind::ExprNodes.into());
    }
    Ok(())
}

/// Parse `pattern` with regex-syntax (UTF-8 mode, Unicode on).
fn parse_hir(
    pattern: &str,
    flags: PatternFlags,
    max_depth: usize,
) -> Result<Hir, RegexCompileError> {
    let nest = u32::try_from(max_depth).unwrap_or(u32::MAX);
    let mut parser = ParserBuilder::new()
        .utf8(true)
        .unicode(true)
        .nest_limit(nest)
        .case_insensitive(flags.case_insensitive)
        .dot_matches_new_line(flags.dot_matches_new_line)
        .ignore_whitespace(flags.ignore_whitespace)
        .multi_line(flags.multi_line)
        .build();
    parser.parse(pattern).map_err(|e| {
        let (start, end) = match &e {
            regex_syntax::Error::Parse(x) => (x.span().start.offset, x.span().end.offset),
            regex_syntax::Error::Translate(x) => (x.span().start.offset, x.span().end.offset),
            _ => (0, pattern.len()),
        };
        let message = match &e {
            regex_syntax::Error::Parse(x) => x.kind().to_string(),
            regex_syntax::Error::Translate(x) => x.kind().to_string(),
            _ => e.to_string(),
        };
        let nesting = matches!(
            &e,
            regex_syntax::Error::Parse(x)
                if matches!(x.kind(), regex_syntax::ast::ErrorKind::NestLimitExceeded(_))
        );
        if nesting {
            RegexCompileError {
                message,
                kind: RegexCompileErrorKind::Limit(LimitKind::NestingDepth),
            }
        } else {
            RegexCompileError {
                message,
                kind: RegexCompileErrorKind::Syntax { start, end },
            }
        }
    })
}

/// Is `h` zero-width only (an assertion or empty)?
fn zero_width(h: &Hir) -> bool {
    matches!(h.kind(), HirKind::Look(_) | HirKind::Empty)
}

/// Walk `hir` checking repetition counts and anchor positions. `at_start`: nothing can have
/// been matched before this node; `at_end`: nothing can be matched after it.
fn validate_hir(hir: &Hir, max_repeat: u32) -> Result<(), RegexCompileError> {
    let mut stack: Vec<(&Hir, bool, bool)> = alloc::vec![(hir, true, true)];
    while let Some((h, at_start, at_end)) = stack.pop() {
        match h.kind() {
            HirKind::Empty | HirKind::Literal(_) | HirKind::Class(_) => {}
            HirKind::Look(look) => {
                let ok = match look {
                    Look::Start | Look::StartLF | Look::StartCRLF => at_start,
                    Look::End | Look::EndLF | Look::EndCRLF => at_end,
                    _ => false,
                };
                if !ok {
                    return Err(RegexCompileError::unsupported(alloc::format!(
                        "unsupported look-around or anchor {look:?} (only a leading ^ and a \
                         trailing $ are allowed; patterns always match the whole lexeme)"
                    )));
                }
            }
            HirKind::Repetition(rep) => {
                if rep.min > max_repeat || rep.max.is_some_and(|m| m > max_repeat) {
                    return Err(RegexCompileError {
                        message: alloc::format!(
                            "repetition count above the limit max_repeat = {max_repeat}"
                        ),
                        kind: RegexCompileErrorKind::Limit(LimitKind::RepeatCount),
                    });
                }
                stack.push((&rep.sub, false, false));
            }
            HirKind::Capture(cap) => stack.push((&cap.sub, at_start, at_end)),
            HirKind::Concat(subs) => {
                let lead = subs.iter().take_while(|s| zero_width(s)).count();
                let trail = subs.iter().rev().take_while(|s| zero_width(s)).count();
                let n = subs.len();
                for (i, s) in subs.iter().enumerate() {
                    let st = at_start && i <= lead;
                    let en = at_end && i + 1 + trail >= n;
                    stack.push((s, st, en));
                }
            }
            HirKind::Alternation(subs) => {
                for s in subs {
                    stack.push((s, at_start, at_end));
                }
            }
        }
    }
    Ok(())
}

impl ExprSet {
    /// Intern an AST. Iterative: input depth never becomes stack depth. Textual patterns are
    /// parsed with `regex-syntax`.
    pub fn compile(&mut self, ast: &RegexAst) -> Result<ExprId, RegexCompileError> {
        self.compile_cached(ast, &mut hashbrown::HashMap::new())
    }

    /// [`ExprSet::compile`], with the shared nodes compiled by earlier calls in `shared`
    /// (by address; each entry keeps its `Arc`, so the address is not reused) and the ones
    /// this call compiles added to it. A DAG compiled piece by piece costs its size once.
    pub(crate) fn compile_cached(
        &mut self,
        ast: &RegexAst,
        shared: &mut hashbrown::HashMap<usize, (Arc<RegexAst>, ExprId)>,
    ) -> Result<ExprId, RegexCompileError> {
        enum Frame<'a> {
            Enter(&'a RegexAst),
            Exit(&'a RegexAst, usize),
        }
        let mut stack = alloc::vec![Frame::Enter(ast)];
        let mut results: Vec<ExprId> = Vec::new();
        while let Some(f) = stack.pop() {
            match f {
                Frame::Enter(node) => match node {
                    RegexAst::Shared(x) => match shared.get(&(Arc::as_ptr(x) as usize)) {
                        Some(&(_, e)) => results.push(e),
                        None => {
                            stack.push(Frame::Exit(node, results.len()));
                            stack.push(Frame::Enter(x));
                        }
                    },
                    RegexAst::Nothing => results.push(ExprId::NOTHING),
                    RegexAst::Epsilon => results.push(ExprId::EPSILON),
                    RegexAst::Literal(bytes) => results.push(self.mk_literal(bytes)?),
                    RegexAst::ByteSet(set) => results.push(self.mk_byte_set(set)?),
                    RegexAst::Pattern(p, flags) => {
                        let e = self.compile_pattern(p, *flags)?;
                        results.push(e);
                    }
                    RegexAst::Concat(xs) | RegexAst::Or(xs) | RegexAst::And(xs) => {
                        stack.push(Frame::Exit(node, results.len()));
                        stack.extend(xs.iter().rev().map(Frame::Enter));
                    }
                    RegexAst::Not(x) | RegexAst::Repeat(x, _, _) => {
                        stack.push(Frame::Exit(node, results.len()));
                        stack.push(Frame::Enter(x));
                    }
                },
                Frame::Exit(node, base) => {
                    let base = base.min(results.len());
                    // The arguments are read in place (no vector per node).
                    let args = &results[base..];
                    let e = match node {
                        RegexAst::Concat(_) => self.concat_all(args)?,
                        RegexAst::Or(_) => self.mk_or(args)?,
                        RegexAst::And(_) => self.mk_and(args)?,
                        RegexAst::Not(_) => {
                            let x = args.first().copied().unwrap_or(ExprId::NOTHING);
                            self.mk_not(x)?
                        }
                        RegexAst::Repeat(_, min, max) => {
                            let x = args.first().copied().unwrap_or(ExprId::NOTHING);
                            self.mk_repeat(x, *min, *max)
                                .map_err(|k| repeat_error(k, *min, *max))?
                        }
                        RegexAst::Shared(x) => {
                            let e = args.first().copied().unwrap_or(ExprId::NOTHING);
                            shared.insert(Arc::as_ptr(x) as usize, (Arc::clone(x), e));
                            e
                        }
                        _ => ExprId::NOTHING,
                    };
                    results.truncate(base);
                    results.push(e);
                }
            }
        }
        Ok(results.pop().unwrap_or(ExprId::NOTHING))
    }

    /// Concatenation of `items`, left to right.
    fn concat_all(&mut self, items: &[ExprId]) -> Result<ExprId, LimitKind> {
        let mut r = ExprId::EPSILON;
        for &x in items.iter().rev() {
            r = self.mk_concat(x, r)?;
        }
        Ok(r)
    }

    /// Parse, check and lower one textual pattern.
    pub fn compile_pattern(
        &mut self,
        pattern: &str,
        flags: PatternFlags,
    ) -> Result<ExprId, RegexCompileError> {
        check_pattern_len(pattern, self.max_nodes)?;
        // regex-syntax's tree is transient: it must fit beside the store, within its budget.
        check_parse_cost(pattern, self.max_memory.saturating_sub(self.bytes_used()))?;
        let hir = parse_hir(pattern, flags, self.max_nesting_depth)?;
        validate_hir(&hir, self.max_repeat)?;
        self.lower_hir(&hir)
    }

    /// Lower a validated HIR (assertions become ε).
    fn lower_hir(&mut self, hir: &Hir) -> Result<ExprId, RegexCompileError> {
        enum Frame<'a> {
            Enter(&'a Hir),
            Exit(&'a Hir, usize),
        }
        let mut stack = alloc::vec![Frame::Enter(hir)];
        let mut results: Vec<ExprId> = Vec::new();
        while let Some(f) = stack.pop() {
            match f {
                Frame::Enter(h) => match h.kind() {
                    HirKind::Empty | HirKind::Look(_) => results.push(ExprId::EPSILON),
                    HirKind::Literal(lit) => results.push(self.mk_literal(&lit.0)?),
                    HirKind::Class(Class::Bytes(cls)) => {
                        let mut set = [0u32; 8];
                        for r in cls.ranges() {
                            for b in r.start()..=r.end() {
                                set[(b >> 5) as usize] |= 1 << (b & 31);
                            }
                        }
                        results.push(self.mk_byte_set(&set)?);
                    }
                    HirKind::Class(Class::Unicode(cls)) => {
                        let e =
                            self.unicode_class(cls.ranges().iter().map(|r| (r.start(), r.end())))?;
                        results.push(e);
                    }
                    HirKind::Repetition(rep) => {
                        stack.push(Frame::Exit(h, results.len()));
                        stack.push(Frame::Enter(&rep.sub));
                    }
                    HirKind::Capture(cap) => stack.push(Frame::Enter(&cap.sub)),
                    HirKind::Concat(subs) | HirKind::Alternation(subs) => {
                        stack.push(Frame::Exit(h, results.len()));
                        stack.extend(subs.iter().rev().map(Frame::Enter));
                    }
                },
                Frame::Exit(h, base) => {
                    let args = results.split_off(base.min(results.len()));
                    let e = match h.kind() {
                        HirKind::Concat(_) => self.concat_all(&args)?,
                        HirKind::Alternation(_) => self.mk_or(&args)?,
                        HirKind::Repetition(rep) => {
                            let x = args.first().copied().unwrap_or(ExprId::NOTHING);
                            self.mk_repeat(x, rep.min, rep.max)
                                .map_err(|k| repeat_error(k, rep.min, rep.max))?
                        }
                        _ => ExprId::NOTHING,
                    };
                    results.push(e);
                }
            }
        }
        Ok(results.pop().unwrap_or(ExprId::NOTHING))
    }

    /// The UTF-8 encodings of the scalar values in `ranges`, built as a prefix trie (shared
    /// leading byte ranges are factored out; siblings with the same continuation are merged
    /// into one byte set).
    pub fn unicode_class(
        &mut self,
        ranges: impl Iterator<Item = (char, char)>,
    ) -> Result<ExprId, LimitKind> {
        // Trie node: list of (lo, hi, child); child == usize::MAX marks "end of sequence".
        let mut trie: Vec<Vec<(u8, u8, usize)>> = alloc::vec![Vec::new()];
        for (lo, hi) in ranges {
            for seq in Utf8Sequences::new(lo, hi) {
                let rs = seq.as_slice();
                let mut node = 0usize;
                for (i, r) in rs.iter().enumerate() {
                    let last = i + 1 == rs.len();
                    let Some(children) = trie.get(node) else {
                        break;
                    };
                    if last {
                        if let Some(children) = trie.get_mut(node) {
                            children.push((r.start, r.end, usize::MAX));
                        }
                        break;
                    }
                    let found = children
                        .iter()
                        .find(|&&(a, b, c)| a == r.start && b == r.end && c != usize::MAX)
                        .map(|&(_, _, c)| c);
                    node = match found {
                        Some(c) => c,
                        None => {
                            let c = trie.len();
                            trie.push(Vec::new());
                            if let Some(children) = trie.get_mut(node) {
                                children.push((r.start, r.end, c));
                            }
                            c
                        }
                    };
                }
            }
        }
        // Children have larger indices than parents: build bottom-up.
        let mut built = alloc::vec![ExprId::NOTHING; trie.len()];
        for idx in (0..trie.len()).rev() {
            let mut groups: Vec<(ExprId, [u32; 8])> = Vec::new();
            for &(lo, hi, child) in trie.get(idx).map(|v| v.as_slice()).unwrap_or(&[]) {
                let tail = if child == usize::MAX {
                    ExprId::EPSILON
                } else {
                    built.get(child).copied().unwrap_or(ExprId::NOTHING)
                };
                let pos = match groups.iter().position(|g| g.0 == tail) {
                    Some(p) => p,
                    None => {
                        groups.push((tail, [0; 8]));
                        groups.len() - 1
                    }
                };
                if let Some(g) = groups.get_mut(pos) {
                    for b in lo..=hi {
                        g.1[(b >> 5) as usize] |= 1 << (b & 31);
                    }
                }
            }
            let mut alts = Vec::with_capacity(groups.len());
            for (tail, set) in &groups {
                let head = self.mk_byte_set(set)?;
                alts.push(self.mk_concat(head, *tail)?);
            }
            let e = self.mk_or(&alts)?;
            if let Some(slot) = built.get_mut(idx) {
                *slot = e;
            }
        }
        Ok(built.first().copied().unwrap_or(ExprId::NOTHING))
    }
}

fn repeat_error(kind: LimitKind, min: u32, max: Option<u32>) -> RegexCompileError {
    let message = match max {
        Some(m) => alloc::format!("repetition {{{min},{m}}}: {kind}"),
        None => alloc::format!("repetition {{{min},}}: {kind}"),
    };
    RegexCompileError {
        message,
        kind: RegexCompileErrorKind::Limit(kind),
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use alloc::boxed::Box;
    use alloc::vec;
    use proptest::prelude::*;

    fn pat(p: &str) -> RegexAst {
        RegexAst::Pattern(p.into(), PatternFlags::default())
    }

    fn compile(s: &mut ExprSet, p: &str) -> ExprId {
        match s.compile(&pat(p)) {
            Ok(e) => e,
            Err(err) => panic!("{p}: {err:?}"),
        }
    }

    #[test]
    fn simple_patterns() {
        let mut s = ExprSet::new(&Limits::default());
        let e = compile(&mut s, "ab+c?|x{2,3}");
        for (input, ok) in [
            (&b"ab"[..], true),
            (b"abbbc", true),
            (b"a", false),
            (b"xx", true),
            (b"xxx", true),
            (b"xxxx", false),
            (b"", false),
        ] {
            assert_eq!(s.matches(e, input).unwrap(), ok, "{input:?}");
        }
        let e = compile(&mut s, "^[0-9]+(\\.[0-9]*)?$");
        assert!(s.matches(e, b"12.5").unwrap());
        assert!(s.matches(e, b"12.").unwrap());
        assert!(!s.matches(e, b".5").unwrap());
        let e = compile(&mut s, "");
        assert_eq!(e, ExprId::EPSILON);
        let e = compile(&mut s, "[^\\x00-\\x{10FFFF}]");
        assert_eq!(e, ExprId::NOTHING);
    }

    #[test]
    fn unicode_classes() {
        let mut s = ExprSet::new(&Limits::default());
        let e = compile(&mut s, "\\p{L}+");
        assert!(s.matches(e, "héllo".as_bytes()).unwrap());
        assert!(s.matches(e, "日本語".as_bytes()).unwrap());
        assert!(!s.matches(e, b"h\xffllo").unwrap());
        assert!(!s.matches(e, b"1").unwrap());
        let fb = s.first_bytes(e).unwrap();
        assert_eq!(fb[7] & (1 << 31), 0, "0xFF is never a first byte");
        // `.` excludes \n, invalid UTF-8, surrogates and overlong forms.
        let dot = compile(&mut s, ".");
        assert!(s.matches(dot, b"a").unwrap());
        assert!(s.matches(dot, "é".as_bytes()).unwrap());
        assert!(s.matches(dot, "😀".as_bytes()).unwrap());
        assert!(!s.matches(dot, b"\n").unwrap());
        assert!(!s.matches(dot, b"\xff").unwrap());
        assert!(!s.matches(dot, b"\xc0\x80").unwrap());
        assert!(!s.matches(dot, b"\xed\xa0\x80").unwrap());
        assert!(!s.matches(dot, b"\x80").unwrap());
        let flags = PatternFlags {
            dot_matches_new_line: true,
            ..PatternFlags::default()
        };
        let sdot = s.compile(&RegexAst::Pattern(".".into(), flags)).unwrap();
        assert!(s.matches(sdot, b"\n").unwrap());
        assert!(!s.matches(sdot, b"\xff").unwrap());
        let flags = PatternFlags {
            case_insensitive: true,
            ..PatternFlags::default()
        };
        let ci = s
            .compile(&RegexAst::Pattern("straße".into(), flags))
            .unwrap();
        assert!(s.matches(ci, "STRAßE".as_bytes()).unwrap());
        assert!(s.matches(ci, "StRaSSe".as_bytes()).is_ok());
        // Negated class stays valid UTF-8.
        let neg = compile(&mut s, "[^a]");
        assert!(s.matches(neg, "é".as_bytes()).unwrap());
        assert!(!s.matches(neg, b"a").unwrap());
        assert!(!s.matches(neg, b"\xff").unwrap());
        let w = compile(&mut s, "\\w+\\s\\d");
        assert!(s.matches(w, "naïve 7".as_bytes()).unwrap());
    }

    #[test]
    fn anchors_and_unsupported() {
        let mut s = ExprSet::new(&Limits::default());
        let a = compile(&mut s, "abc");
        for p in ["^abc$", "\\Aabc\\z", "(^abc)$", "^(?:abc$)", "^^abc$$"] {
            assert_eq!(compile(&mut s, p), a, "{p}");
        }
        let e = compile(&mut s, "^a|^b$");
        assert!(s.matches(e, b"b").unwrap());
        for p in ["a^b", "a$b", "\\bfoo", "(^a)*", "a\\B"] {
            let err = s.compile(&pat(p)).unwrap_err();
            assert_eq!(err.kind, RegexCompileErrorKind::Unsupported, "{p}");
            let err = check_pattern(p, PatternFlags::default()).unwrap_err();
            assert_eq!((err.start, err.end), (0, p.len()));
        }
        // Multi-line anchors at the ends are fine too.
        let flags = PatternFlags {
            multi_line: true,
            ..PatternFlags::default()
        };
        let m = s
            .compile(&RegexAst::Pattern("^abc$".into(), flags))
            .unwrap();
        assert_eq!(m, a);
        assert!(check_pattern("^abc$", flags).is_ok());
    }

    #[test]
    fn syntax_errors_carry_spans() {
        let mut s = ExprSet::new(&Limits::default());
        let err = s.compile(&pat("ab(c")).unwrap_err();
        assert!(matches!(err.kind, RegexCompileErrorKind::Syntax { .. }));
        let err = check_pattern("ab[z-a]", PatternFlags::default()).unwrap_err();
        assert_eq!((err.start, err.end), (3, 6));
        assert!(check_pattern("a(?=b)", PatternFlags::default()).is_err());
        assert!(check_pattern("(a)\\1", PatternFlags::default()).is_err());
        assert!(check_pattern("[a-z]+@\\w+", PatternFlags::default()).is_ok());
        // Invalid UTF-8 byte escapes are rejected by regex-syntax in UTF-8 mode.
        assert!(check_pattern("(?-u:\\xFF)", PatternFlags::default()).is_err());
    }

    #[test]
    fn limits() {
        let mut s = ExprSet::new(&Limits::default());
        let err = s.compile(&pat("a{1000000}")).unwrap_err();
        assert_eq!(
            err.kind,
            RegexCompileErrorKind::Limit(LimitKind::RepeatCount)
        );
        let err = s.compile(&pat("a{2,1000000}")).unwrap_err();
        assert_eq!(
            err.kind,
            RegexCompileErrorKind::Limit(LimitKind::RepeatCount)
        );
        let err = check_pattern("a{1000000}", PatternFlags::default()).unwrap_err();
        assert!(err.message.contains("max_repeat"), "{}", err.message);
        let ast = RegexAst::Repeat(Box::new(RegexAst::literal("a")), 0, Some(20_000));
        let err = s.compile(&ast).unwrap_err();
        assert_eq!(
            err.kind,
            RegexCompileErrorKind::Limit(LimitKind::RepeatCount)
        );
        // Nested stars collapse.
        let e = compile(&mut s, "((((a)*)*)*)*");
        let a = compile(&mut s, "a*");
        assert_eq!(e, a);
        let e = compile(&mut s, "((a|a)*|a+)*");
        assert_eq!(e, a);
        // Nesting limit.
        let deep = "(".repeat(300) + "a" + &")".repeat(300);
        let err = s.compile(&pat(&deep)).unwrap_err();
        assert_eq!(
            err.kind,
            RegexCompileErrorKind::Limit(LimitKind::NestingDepth)
        );
        // a{10000} is symbolic: few nodes, derivatives are cheap.
        let before = s.num_nodes();
        let e = compile(&mut s, "(ab){10000}");
        assert!(s.num_nodes() - before < 10);
        let mut input = Vec::new();
        for _ in 0..10_000 {
            input.extend_from_slice(b"ab");
        }
        assert!(s.matches(e, &input).unwrap());
        assert!(!s.matches(e, &input[1..]).unwrap());
        // Exponential-looking families stay bounded.
        let e = compile(&mut s, "(a|aa|aaa)*(a|ab|b)*b{0,50}");
        s.set_fuel(5_000_000);
        let r = s.matches(e, &[b'a'; 200]);
        assert!(matches!(r, Ok(true) | Err(LimitKind::Fuel)));
    }

    #[test]
    fn deep_ast_is_iterative() {
        let mut s = ExprSet::new(&Limits::default());
        let mut ast = RegexAst::literal("x");
        for i in 0..50_000 {
            ast = if i % 2 == 0 {
                RegexAst::Concat(vec![RegexAst::literal("a"), ast])
            } else {
                RegexAst::Or(vec![RegexAst::literal("b"), ast])
            };
        }
        let e = s.compile(&ast).unwrap();
        assert!(s.matches(e, b"ab").unwrap());
        assert!(s.matches(e, b"b").unwrap());
        assert!(!s.matches(e, b"aax").unwrap());
        // `RegexAst`'s drop is flat: dropping the 50k-deep tree on a 64 KiB stack is fine.
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || drop(ast))
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn star_covered_intersections_are_nonempty_without_search() {
        let mut s = ExprSet::new(&Limits::default());
        // `X* & P` with P over X's one-byte members: a million-byte witness, shown
        // non-empty from the shape after the two short search rounds (at most 64
        // expansions each), on a hundredth of the fuel a search for it would need (a unit
        // a byte at least).
        let short = 10_000;
        let ast = RegexAst::And(vec![pat("([a-z]|\\\\.|\u{e9})*"), pat("(a{1000}){1000}")]);
        let e = s.compile(&ast).unwrap();
        s.set_fuel(short);
        assert_eq!(s.is_empty_language(e), Ok(false));
        // Not covered (a byte outside the star's members): searched, and found empty.
        let ast = RegexAst::And(vec![pat("[a-z]*"), pat("(a|B)B")]);
        let e = s.compile(&ast).unwrap();
        s.set_fuel(1_000_000);
        assert_eq!(s.is_empty_language(e), Ok(true));
        let ast = RegexAst::And(vec![pat("[a-z]*"), pat("(ab){3}"), pat("[a-c]*")]);
        let e = s.compile(&ast).unwrap();
        assert_eq!(s.is_empty_language(e), Ok(false));
        let ast = RegexAst::And(vec![pat("[a-z]*"), pat("(ab){3}"), pat("[a]*")]);
        let e = s.compile(&ast).unwrap();
        assert_eq!(s.is_empty_language(e), Ok(true));
        // Length windows: shown when every string of P fits, searched otherwise.
        s.set_fuel(short);
        let ast = RegexAst::And(vec![pat("[a-z]{5,}"), pat("(a{1000}){1000}")]);
        let e = s.compile(&ast).unwrap();
        assert_eq!(s.is_empty_language(e), Ok(false));
        let ast = RegexAst::And(vec![pat("[a-z]{0,6}"), pat("(ab|c){1,2}x")]);
        let e = s.compile(&ast).unwrap();
        assert_eq!(s.is_empty_language(e), Ok(false));
        s.set_fuel(1_000_000);
        let ast = RegexAst::And(vec![pat("[a-z]{0,4}"), pat("(ab|c){2}x")]);
        let e = s.compile(&ast).unwrap();
        assert_eq!(s.is_empty_language(e), Ok(false));
        let ast = RegexAst::And(vec![pat("[a-z]{0,4}"), pat("(ab){2}x")]);
        let e = s.compile(&ast).unwrap();
        assert_eq!(s.is_empty_language(e), Ok(true));
        let ast = RegexAst::And(vec![pat("[a-z]{6,}"), pat("(ab){2}x")]);
        let e = s.compile(&ast).unwrap();
        assert_eq!(s.is_empty_language(e), Ok(true));
    }

    #[test]
    fn and_not_via_ast() {
        let mut s = ExprSet::new(&Limits::default());
        // Identifiers that are not keywords.
        let ast = RegexAst::And(vec![
            pat("[a-z]+"),
            RegexAst::Not(Box::new(RegexAst::Or(vec![
                RegexAst::literal("if"),
                RegexAst::literal("else"),
            ]))),
        ]);
        let e = s.compile(&ast).unwrap();
        assert!(s.matches(e, b"iff").unwrap());
        assert!(!s.matches(e, b"if").unwrap());
        assert!(!s.matches(e, b"else").unwrap());
        assert!(!s.is_empty_language(e).unwrap());
        let kw = compile(&mut s, "if|else");
        let id = compile(&mut s, "[a-z]+");
        assert!(s.is_contained_in(kw, id).unwrap());
        assert!(!s.is_contained_in(id, kw).unwrap());
        assert!(!s.is_contained_in(e, kw).unwrap());
        assert!(s.is_contained_in(e, id).unwrap());
        // Strings of a's whose length is a multiple of 2 and 3, minus multiples of 6: empty.
        let six = compile(&mut s, "(aaaaaa)*");
        let two = compile(&mut s, "(aa)*");
        let three = compile(&mut s, "(aaa)*");
        let both = s.mk_and(&[two, three]).unwrap();
        let ns = s.mk_not(six).unwrap();
        let diff = s.mk_and(&[both, ns]).unwrap();
        assert!(s.is_empty_language(diff).unwrap());
        assert!(s.is_contained_in(both, six).unwrap());
        assert!(s.is_contained_in(six, both).unwrap());
        // Emptiness under a tiny fuel budget errors instead of lying.
        let hard = compile(&mut s, "[ab]*a[ab]{12}");
        let nh = s.mk_not(hard).unwrap();
        let x = s.mk_and(&[nh, hard]).unwrap();
        assert_eq!(x, ExprId::NOTHING);
        let y = compile(&mut s, "[ab]*b[ab]{12}");
        let z = s.mk_and(&[hard, y]).unwrap();
        s.set_fuel(10);
        assert_eq!(s.is_empty_language(z), Err(LimitKind::Fuel));
        s.set_fuel(100_000_000);
        assert!(s.is_empty_language(z).unwrap());
    }

    // ---- Differential test against a brute-force reference over a test AST. ----

    #[derive(Debug, Clone)]
    enum T {
        Lit(Vec<u8>),
        Class(Vec<u8>),
        Cat(Vec<T>),
        Alt(Vec<T>),
        Rep(Box<T>, u32, Option<u32>),
        And(Vec<T>),
        Not(Box<T>),
    }

    /// `m[i][j]`: does `t` match `s[i..j]`?
    fn reference(t: &T, s: &[u8]) -> Vec<Vec<bool>> {
        let n = s.len() + 1;
        let mut m = vec![vec![false; n]; n];
        match t {
            T::Lit(l) => {
                for i in 0..n {
                    if s[i..].starts_with(l) {
                        m[i][i + l.len()] = true;
                    }
                }
            }
            T::Class(c) => {
                for i in 0..s.len() {
                    m[i][i + 1] = c.contains(&s[i]);
                }
            }
            T::Cat(xs) => {
                for (i, row) in m.iter_mut().enumerate() {
                    row[i] = true;
                }
                for x in xs {
                    m = compose(&m, &reference(x, s));
                }
            }
            T::Alt(xs) => {
                for x in xs {
                    let r = reference(x, s);
                    for i in 0..n {
                        for j in 0..n {
                            m[i][j] |= r[i][j];
                        }
                    }
                }
            }
            T::And(xs) => {
                for (i, row) in m.iter_mut().enumerate() {
                    for x in row.iter_mut().skip(i) {
                        *x = true;
                    }
                }
                for x in xs {
                    let r = reference(x, s);
                    for i in 0..n {
                        for j in 0..n {
                            m[i][j] &= r[i][j];
                        }
                    }
                }
            }
            T::Not(x) => {
                let r = reference(x, s);
                for i in 0..n {
                    for j in i..n {
                        m[i][j] = !r[i][j];
                    }
                }
            }
            T::Rep(x, min, max) => {
                let r = reference(x, s);
                let mut power = vec![vec![false; n]; n];
                for (i, row) in power.iter_mut().enumerate() {
                    row[i] = true;
                }
                let limit = max.unwrap_or(*min + n as u32 + 1);
                for k in 0..=limit {
                    if k >= *min {
                        for i in 0..n {
                            for j in 0..n {
                                m[i][j] |= power[i][j];
                            }
                        }
                    }
                    power = compose(&power, &r);
                }
            }
        }
        m
    }

    fn compose(a: &[Vec<bool>], b: &[Vec<bool>]) -> Vec<Vec<bool>> {
        let n = a.len();
        let mut c = vec![vec![false; n]; n];
        for i in 0..n {
            for k in 0..n {
                if a[i][k] {
                    for j in 0..n {
                        c[i][j] |= b[k][j];
                    }
                }
            }
        }
        c
    }

    fn to_pattern(t: &T, out: &mut String) {
        match t {
            T::Lit(l) => {
                out.push_str("(?:");
                for &b in l {
                    out.push(b as char);
                }
                out.push(')');
            }
            T::Class(c) => {
                out.push('[');
                for &b in c {
                    out.push(b as char);
                }
                out.push(']');
            }
            T::Cat(xs) => {
                out.push_str("(?:");
                for x in xs {
                    to_pattern(x, out);
                }
                out.push(')');
            }
            T::Alt(xs) => {
                out.push('(');
                for (i, x) in xs.iter().enumerate() {
                    if i > 0 {
                        out.push('|');
                    }
                    to_pattern(x, out);
                }
                out.push(')');
            }
            T::Rep(x, min, max) => {
                out.push_str("(?:");
                to_pattern(x, out);
                out.push(')');
                match (min, max) {
                    (0, None) => out.push('*'),
                    (1, None) => out.push('+'),
                    (0, Some(1)) => out.push('?'),
                    (m, None) => out.push_str(&alloc::format!("{{{m},}}")),
                    (m, Some(n)) => out.push_str(&alloc::format!("{{{m},{n}}}")),
                }
            }
            T::And(_) | T::Not(_) => unreachable!(),
        }
    }

    fn to_ast(t: &T) -> RegexAst {
        match t {
            T::Lit(l) => RegexAst::Literal(l.clone()),
            T::Class(c) => {
                let mut set = [0u32; 8];
                for &b in c {
                    set[(b >> 5) as usize] |= 1 << (b & 31);
                }
                RegexAst::ByteSet(set)
            }
            T::Cat(xs) => RegexAst::Concat(xs.iter().map(to_ast).collect()),
            T::Alt(xs) => RegexAst::Or(xs.iter().map(to_ast).collect()),
            T::And(xs) => RegexAst::And(xs.iter().map(to_ast).collect()),
            T::Not(x) => RegexAst::Not(Box::new(to_ast(x))),
            T::Rep(x, min, max) => RegexAst::Repeat(Box::new(to_ast(x)), *min, *max),
        }
    }

    fn arb_t(with_and_not: bool) -> impl Strategy<Value = T> {
        let leaf = prop_oneof![
            proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c')], 0..3)
                .prop_map(T::Lit),
            proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c')], 1..3)
                .prop_map(T::Class),
        ];
        leaf.prop_recursive(4, 24, 3, move |inner| {
            let rep = (
                inner.clone(),
                0u32..3,
                prop_oneof![Just(None), (0u32..4).prop_map(Some)],
            )
                .prop_map(|(x, min, extra)| T::Rep(Box::new(x), min, extra.map(|e| min + e)));
            if with_and_not {
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 1..4).prop_map(T::Cat),
                    proptest::collection::vec(inner.clone(), 1..4).prop_map(T::Alt),
                    rep,
                    proptest::collection::vec(inner.clone(), 1..3).prop_map(T::And),
                    inner.prop_map(|x| T::Not(Box::new(x))),
                ]
                .boxed()
            } else {
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 1..4).prop_map(T::Cat),
                    proptest::collection::vec(inner.clone(), 1..4).prop_map(T::Alt),
                    rep,
                ]
                .boxed()
            }
        })
    }

    fn arb_input() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c')], 0..7)
    }

    /// All strings over {a,b,c} of length <= 4.
    fn all_short() -> Vec<Vec<u8>> {
        let mut out = vec![Vec::new()];
        let mut frontier = vec![Vec::new()];
        for _ in 0..4 {
            let mut next = Vec::new();
            for s in &frontier {
                for b in [b'a', b'b', b'c'] {
                    let mut t: Vec<u8> = s.clone();
                    t.push(b);
                    next.push(t);
                }
            }
            out.extend(next.iter().cloned());
            frontier = next;
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn pattern_matches_reference(t in arb_t(false), inputs in proptest::collection::vec(arb_input(), 8)) {
            let mut p = String::new();
            to_pattern(&t, &mut p);
            let mut s = ExprSet::new(&Limits::default());
            let e = s.compile(&pat(&p)).unwrap();
            let direct = s.compile(&to_ast(&t)).unwrap();
            // Both routes yield the same canonical node most of the time; the language is
            // what must agree.
            for input in &inputs {
                let want = reference(&t, input)[0][input.len()];
                prop_assert_eq!(s.matches(e, input).unwrap(), want, "{} on {:?}", p, input);
                prop_assert_eq!(s.matches(direct, input).unwrap(), want);
            }
            // Without And/Not: empty iff NOTHING.
            let nonempty = all_short().iter().any(|w| reference(&t, w)[0][w.len()]);
            if nonempty {
                prop_assert_ne!(e, ExprId::NOTHING);
            }
            prop_assert_eq!(s.is_empty_language(e).unwrap(), e == ExprId::NOTHING);
        }

        #[test]
        fn syntactic_inclusion_and_common_parts_are_sound(t1 in arb_t(true), t2 in arb_t(true)) {
            let mut s = ExprSet::new(&Limits::default());
            let a = s.compile(&to_ast(&t1)).unwrap();
            let b = s.compile(&to_ast(&t2)).unwrap();
            let u = s.mk_or(&[a, b]).unwrap();
            let i = s.mk_and(&[a, b]).unwrap();
            let da = s.derivative(a, b'a').unwrap();
            let ab = s.mk_concat(a, b).unwrap();
            let uu = s.mk_concat(u, u).unwrap();
            let shorts = all_short();
            let pairs = [(a, b), (b, a), (a, u), (u, a), (i, a), (i, b), (da, a), (a, da), (ab, uu), (uu, ab)];
            for (x, y) in pairs {
                if s.is_syntactic_subset(x, y) {
                    for w in &shorts {
                        prop_assert!(!s.matches(x, w).unwrap() || s.matches(y, w).unwrap(),
                            "{} ⊆ {} fails on {:?}", s.display(x), s.display(y), w);
                    }
                }
                if let Some(c) = s.common_part(x, y).unwrap() {
                    for w in &shorts {
                        if s.matches(c, w).unwrap() {
                            prop_assert!(s.matches(x, w).unwrap() && s.matches(y, w).unwrap(),
                                "common {} of {} and {} on {:?}", s.display(c), s.display(x), s.display(y), w);
                        }
                    }
                }
            }
            prop_assert!(s.is_syntactic_subset(a, a) && s.is_syntactic_subset(ExprId::NOTHING, a));
        }

        #[test]
        fn surely_nonempty_is_sound(t1 in arb_t(true), t2 in arb_t(true)) {
            let mut s = ExprSet::new(&Limits::default());
            let a = s.compile(&to_ast(&t1)).unwrap();
            let b = s.compile(&to_ast(&t2)).unwrap();
            let and = s.mk_and(&[a, b]).unwrap();
            let not_b = s.mk_not(b).unwrap();
            let cat = s.mk_concat(and, b).unwrap();
            let or = s.mk_or(&[and, not_b]).unwrap();
            let rep = s.mk_repeat(and, 1, Some(3)).unwrap();
            for e in [a, and, not_b, cat, or, rep] {
                if !s.is_surely_nonempty(e, 0) {
                    continue;
                }
                // Breadth-first over the derivative automaton (finite): some state is
                // nullable.
                let found = crate::regex::deriv::nonempty_by_bfs(&mut s, e, 100_000);
                prop_assert!(found, "{} claimed non-empty", s.display(e));
            }
        }

        #[test]
        fn and_not_matches_reference(t in arb_t(true), inputs in proptest::collection::vec(arb_input(), 8)) {
            let mut s = ExprSet::new(&Limits::default());
            let e = s.compile(&to_ast(&t)).unwrap();
            for input in &inputs {
                let want = reference(&t, input)[0][input.len()];
                prop_assert_eq!(s.matches(e, input).unwrap(), want, "{} on {:?}", s.display(e), input);
            }
            let shorts = all_short();
            let witness = shorts.iter().find(|w| reference(&t, w)[0][w.len()]);
            let empty = s.is_empty_language(e).unwrap();
            if witness.is_some() {
                prop_assert!(!empty, "{}", s.display(e));
            }
            let fb = s.first_bytes(e).unwrap();
            for w in &shorts {
                if let Some(&b) = w.first()
                    && reference(&t, w)[0][w.len()]
                {
                    prop_assert!(fb[(b >> 5) as usize] & (1 << (b & 31)) != 0);
                }
            }
            if empty {
                prop_assert_eq!(fb, [0u32; 8]);
            }
            // Containment agrees with the reference on short strings.
            let ab = s.compile(&pat("[ab]*")).unwrap();
            let contained = s.is_contained_in(e, ab).unwrap();
            let violates = shorts.iter().any(|w| {
                reference(&t, w)[0][w.len()] && w.contains(&b'c')
            });
            if violates {
                prop_assert!(!contained);
            }
            // Byte classes: bytes of one class have equal derivatives.
            let classes = s.byte_classes(&[e]);
            for b in [b'a', b'b', b'c', b'd', 0, 0xff] {
                let rep = classes.representative(classes.class_of(b));
                prop_assert_eq!(s.derivative(e, b).unwrap(), s.derivative(e, rep).unwrap());
            }
        }
    }
}
