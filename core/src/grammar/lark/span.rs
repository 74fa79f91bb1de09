//! Byte offsets to [`Span`]s: a table of line starts and a table of character counts every
//! [`BLOCK`] bytes, so locating an offset costs a binary search plus a count over fewer
//! than [`BLOCK`] bytes (never a scan of a whole line: a 20k-alternative grammar on one
//! line has one span per lexeme).

use alloc::vec::Vec;

use crate::CompileBudget;
use crate::error::{GrammarError, GrammarErrorKind, LimitKind, Position, Span};

/// Bytes between character-count checkpoints.
const BLOCK: usize = 256;

/// Line starts of one source text.
pub(crate) struct LineIndex<'a> {
    src: &'a str,
    /// Byte offset of the first byte of each line; `starts[0] == 0`.
    starts: Vec<usize>,
    /// `chars[k]`: characters (non-continuation bytes) in `src[..k * BLOCK]`; empty when
    /// `src` is ASCII (a byte is a character).
    chars: Vec<usize>,
}

fn is_char_start(b: u8) -> bool {
    b & 0xC0 != 0x80
}

impl<'a> LineIndex<'a> {
    /// The index of `src`, its two tables charged to `budget` first (a line start per line
    /// and a count per [`BLOCK`] bytes: one word per 32 bytes of text, plus one per line).
    pub(crate) fn new(src: &'a str, budget: &mut CompileBudget) -> Result<Self, LimitKind> {
        let lines = src.bytes().filter(|&b| b == b'\n').count() + 1;
        let blocks = if src.is_ascii() {
            0
        } else {
            src.len() / BLOCK + 2
        };
        budget.charge_for::<usize>(lines.saturating_add(blocks))?;
        let mut starts = Vec::with_capacity(lines);
        starts.push(0);
        let mut chars = Vec::with_capacity(blocks);
        let mut count = 0;
        for (i, b) in src.bytes().enumerate() {
            if blocks > 0 && i % BLOCK == 0 {
                chars.push(count);
            }
            if b == b'\n' {
                starts.push(i + 1);
            }
            count += usize::from(is_char_start(b));
        }
        if blocks > 0 {
            chars.push(count);
        }
        Ok(LineIndex { src, starts, chars })
    }

    /// A [`LineIndex`] under an unbounded budget (for tests).
    #[cfg(test)]
    pub(crate) fn unbounded(src: &'a str) -> Self {
        let limits = crate::Limits {
            max_memory_bytes: usize::MAX,
            ..crate::Limits::default()
        };
        match LineIndex::new(src, &mut CompileBudget::new(&limits)) {
            Ok(idx) => idx,
            Err(_) => unreachable!("an unbounded budget"),
        }
    }

    /// Characters in `src[..offset]` (`offset` on a char boundary).
    fn chars_before(&self, offset: usize) -> usize {
        if self.chars.is_empty() {
            return offset;
        }
        let block = offset / BLOCK;
        let base = self.chars.get(block).copied().unwrap_or(0);
        let tail = self
            .src
            .as_bytes()
            .get(block * BLOCK..offset)
            .unwrap_or(&[]);
        base + tail.iter().filter(|&&b| is_char_start(b)).count()
    }

    /// The position of byte `offset` (clamped to the end, snapped back to a char boundary).
    pub(crate) fn position(&self, offset: usize) -> Position {
        let mut offset = offset.min(self.src.len());
        while offset > 0 && !self.src.is_char_boundary(offset) {
            offset -= 1;
        }
        // Number of line starts at or before `offset`; at least 1 since starts[0] == 0.
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let line_start = self.starts.get(line - 1).copied().unwrap_or(0);
        let column = self
            .chars_before(offset)
            .saturating_sub(self.chars_before(line_start));
        Position {
            offset,
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(column + 1).unwrap_or(u32::MAX),
        }
    }

    /// The source text of bytes `start..end` (empty if not on char boundaries).
    pub(crate) fn text(&self, start: usize, end: usize) -> &'a str {
        self.src.get(start..end).unwrap_or("")
    }

    /// The span of bytes `start..end`.
    pub(crate) fn span(&self, start: usize, end: usize) -> Span {
        Span {
            start: self.position(start),
            end: self.position(end.max(start)),
        }
    }

    /// An error of `kind` located at `start..end`.
    pub(crate) fn error(
        &self,
        kind: GrammarErrorKind,
        start: usize,
        end: usize,
        message: impl Into<alloc::string::String>,
    ) -> GrammarError {
        GrammarError::new(kind, message).with_span(self.span(start, end))
    }

    /// A syntax error located at `start..end`.
    pub(crate) fn syntax(
        &self,
        start: usize,
        end: usize,
        message: impl Into<alloc::string::String>,
    ) -> GrammarError {
        self.error(GrammarErrorKind::Syntax, start, end, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn matches_span_at() {
        let src = "ab\nc\u{e9}d\n\nxyz";
        let idx = LineIndex::unbounded(src);
        for off in 0..=src.len() + 2 {
            assert_eq!(idx.position(off), Position::at(src, off), "offset {off}");
        }
        // Long lines with multi-byte characters across checkpoints.
        let src = format!(
            "x\n{}\n{}",
            "\u{e9}a\u{1F600}".repeat(300),
            "b\u{e9}".repeat(400)
        );
        let idx = LineIndex::unbounded(&src);
        for off in 0..=src.len() + 2 {
            assert_eq!(idx.position(off), Position::at(&src, off), "offset {off}");
        }
    }
}
