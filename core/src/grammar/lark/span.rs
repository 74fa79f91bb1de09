//! Byte offsets to [`Span`]s: a table of line starts, so locating an offset costs a binary
//! search plus a character count within one line (instead of rescanning the whole source).

use alloc::vec::Vec;

use crate::error::{GrammarError, GrammarErrorKind, Position, Span};

/// Line starts of one source text.
pub(super) struct LineIndex<'a> {
    src: &'a str,
    /// Byte offset of the first byte of each line; `starts[0] == 0`.
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub(super) fn new(src: &'a str) -> Self {
        let mut starts = Vec::new();
        starts.push(0);
        for (i, b) in src.bytes().enumerate() {
            if b == b'\n' {
                starts.push(i + 1);
            }
        }
        LineIndex { src, starts }
    }

    /// The position of byte `offset` (clamped to the end, snapped back to a char boundary).
    pub(super) fn position(&self, offset: usize) -> Position {
        let mut offset = offset.min(self.src.len());
        while offset > 0 && !self.src.is_char_boundary(offset) {
            offset -= 1;
        }
        // Number of line starts at or before `offset`; at least 1 since starts[0] == 0.
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let line_start = self.starts.get(line - 1).copied().unwrap_or(0);
        let column = self
            .src
            .get(line_start..offset)
            .map_or(0, |s| s.chars().count());
        Position {
            offset,
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(column + 1).unwrap_or(u32::MAX),
        }
    }

    /// The source text of bytes `start..end` (empty if not on char boundaries).
    pub(super) fn text(&self, start: usize, end: usize) -> &'a str {
        self.src.get(start..end).unwrap_or("")
    }

    /// The span of bytes `start..end`.
    pub(super) fn span(&self, start: usize, end: usize) -> Span {
        Span {
            start: self.position(start),
            end: self.position(end.max(start)),
        }
    }

    /// An error of `kind` located at `start..end`.
    pub(super) fn error(
        &self,
        kind: GrammarErrorKind,
        start: usize,
        end: usize,
        message: impl Into<alloc::string::String>,
    ) -> GrammarError {
        GrammarError::new(kind, message).with_span(self.span(start, end))
    }

    /// A syntax error located at `start..end`.
    pub(super) fn syntax(
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

    #[test]
    fn matches_span_at() {
        let src = "ab\nc\u{e9}d\n\nxyz";
        let idx = LineIndex::new(src);
        for off in 0..=src.len() + 2 {
            assert_eq!(idx.position(off), Position::at(src, off), "offset {off}");
        }
    }
}
