//! Interning [`RegexAst`] trees and lowering `regex-syntax` patterns.
//!
//! Both walks use explicit stacks, so input depth never becomes Rust stack depth; textual
//! patterns are additionally limited to [`crate::Limits::max_nesting_depth`] by the parser.
//! A pattern is an implicitly anchored full match: `^`/`\A` where nothing can have been
//! matched yet and `$`/`\z` where nothing can follow are accepted and ignored, every other
//! look-around is [`RegexCompileErrorKind::Unsupported`]. Unicode classes become UTF-8 byte
//! automata (a prefix trie of [`Utf8Sequences`]), so no pattern matches invalid UTF-8 unless
//! it spells out non-ASCII bytes itself.

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
        enum Frame<'a> {
            Enter(&'a RegexAst),
            Exit(&'a RegexAst, usize),
        }
        let mut stack = alloc::vec![Frame::Enter(ast)];
        let mut results: Vec<ExprId> = Vec::new();
        while let Some(f) = stack.pop() {
            match f {
                Frame::Enter(node) => match node {
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
                    let args = results.split_off(base.min(results.len()));
                    let e = match node {
                        RegexAst::Concat(_) => self.concat_all(&args)?,
                        RegexAst::Or(_) => self.mk_or(&args)?,
                        RegexAst::And(_) => self.mk_and(&args)?,
                        RegexAst::Not(_) => {
                            let x = args.first().copied().unwrap_or(ExprId::NOTHING);
                            self.mk_not(x)?
                        }
                        RegexAst::Repeat(_, min, max) => {
                            let x = args.first().copied().unwrap_or(ExprId::NOTHING);
                            self.mk_repeat(x, *min, *max).map_err(|k| repeat_error(k, *min, *max))?
                        }
                        _ => ExprId::NOTHING,
                    };
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
                        let e = self.unicode_class(cls.ranges().iter().map(|r| (r.start(), r.end())))?;
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
