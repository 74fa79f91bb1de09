//! The grammar-text tokenizer: source → a vector of [`Token`]s ending in [`TokKind::Eof`].
//!
//! Newlines are tokens (a definition ends at a line break unless the next line starts with
//! `|`); other whitespace and comments (`//` and `#` to end of line) are skipped. String
//! literals are unescaped here, and regex literals keep a map from pattern bytes back to
//! source offsets so regex errors point inside the grammar text. `%json` and the balanced
//! JSON object after it form one token (the object may span lines and holds no comments).
//! The tokenizer only advances by whole characters, so every offset it records is a char
//! boundary.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::heap;
use super::span::LineIndex;
use crate::CompileBudget;
use crate::error::{GrammarError, LimitKind};
use crate::regex::PatternFlags;

/// A `/regex/flags` literal.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct RegexLit {
    /// The pattern with `\/` unescaped to `/`.
    pub(super) pattern: String,
    /// Flags after the closing slash.
    pub(super) flags: PatternFlags,
    /// `offsets[i]` is the source offset of pattern byte `i`; one extra entry for the end.
    pub(super) offsets: Vec<usize>,
}

/// What a token is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TokKind {
    /// A name (`expr`, `NUMBER`, `_sep`, and at line start `?expr` / `!expr`).
    Ident,
    /// A string literal: unescaped value and the `i` flag.
    Str(String, bool),
    /// A regex literal.
    Regex(RegexLit),
    /// `<|name|>` or `<[ids]>`; the text is the token's source.
    Special,
    /// `@name`: a reference to another grammar of the request; the text is the token's
    /// source.
    GrammarRef,
    /// A decimal number.
    Number(u64),
    /// `%name`; the text is the token's source.
    Directive,
    /// The balanced `{ ... }` after `%llguidance`.
    Raw,
    /// `%json { ... }`: the token spans the directive and its balanced JSON object, which
    /// starts at the given offset (its `{`).
    Json(usize),
    Colon,
    Pipe,
    /// `&`: intersection, in terminals.
    Amp,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Question,
    Star,
    Plus,
    Tilde,
    DotDot,
    Dot,
    Comma,
    Arrow,
    Equals,
    Minus,
    Newline,
    Eof,
}

/// One token with its byte range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Token {
    pub(super) kind: TokKind,
    pub(super) start: usize,
    pub(super) end: usize,
}

/// Whether `b` may continue a name.
pub(super) fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

struct Tokenizer<'s, 'i> {
    src: &'s str,
    bytes: &'s [u8],
    pos: usize,
    lines: &'i LineIndex<'s>,
    budget: &'i mut CompileBudget,
    out: Vec<Token>,
    /// Only whitespace since the last newline (names may then start with `?` or `!`).
    at_line_start: bool,
}

/// Tokenize `src`. The token list and the literals' text are charged to `budget` as they
/// grow ([`LimitKind::Memory`] at the offending token).
pub(super) fn tokenize(
    src: &str,
    lines: &LineIndex<'_>,
    budget: &mut CompileBudget,
) -> Result<Vec<Token>, GrammarError> {
    let mut t = Tokenizer {
        src,
        bytes: src.as_bytes(),
        pos: 0,
        lines,
        budget,
        out: Vec::new(),
        at_line_start: true,
    };
    t.run()?;
    Ok(t.out)
}

impl Tokenizer<'_, '_> {
    fn peek_at(&self, i: usize) -> Option<u8> {
        self.bytes.get(i).copied()
    }

    /// The char at `pos` (which is always a char boundary).
    fn char_at(&self, pos: usize) -> Option<char> {
        self.src.get(pos..).and_then(|s| s.chars().next())
    }

    fn push(&mut self, kind: TokKind, start: usize, end: usize) -> Result<(), GrammarError> {
        heap::push(&mut self.out, Token { kind, start, end }, self.budget)
            .map_err(|k| self.limit(k, start))?;
        self.pos = end;
        Ok(())
    }

    /// A limit error at the char starting at `at`.
    fn limit(&self, kind: LimitKind, at: usize) -> GrammarError {
        let len = self.char_at(at).map_or(0, char::len_utf8);
        GrammarError::limit(kind).with_span(self.lines.span(at, at + len))
    }

    /// Room for `additional` more bytes in `s`, charged; a limit error at `at`.
    fn reserve_str(
        &mut self,
        s: &mut String,
        additional: usize,
        at: usize,
    ) -> Result<(), GrammarError> {
        heap::reserve_str(s, additional, self.budget).map_err(|k| self.limit(k, at))
    }

    fn run(&mut self) -> Result<(), GrammarError> {
        while let Some(b) = self.peek_at(self.pos) {
            let start = self.pos;
            match b {
                b' ' | b'\t' | b'\r' | 0x0c => {
                    self.pos += 1;
                    continue;
                }
                b'\n' => {
                    self.push(TokKind::Newline, start, start + 1)?;
                    self.at_line_start = true;
                    continue;
                }
                b'#' => {
                    self.skip_comment();
                    continue;
                }
                b'/' if self.peek_at(start + 1) == Some(b'/') => {
                    self.skip_comment();
                    continue;
                }
                _ => {}
            }
            let line_start = self.at_line_start;
            self.at_line_start = false;
            let single = |k: TokKind| Some((k, 1usize));
            let simple = match b {
                b':' => single(TokKind::Colon),
                b'|' => single(TokKind::Pipe),
                b'&' => single(TokKind::Amp),
                b'(' => single(TokKind::LParen),
                b')' => single(TokKind::RParen),
                b'[' => single(TokKind::LBracket),
                b']' => single(TokKind::RBracket),
                b'{' => single(TokKind::LBrace),
                b'}' => single(TokKind::RBrace),
                b'*' => single(TokKind::Star),
                b'+' => single(TokKind::Plus),
                b'~' => single(TokKind::Tilde),
                b',' => single(TokKind::Comma),
                b'=' => single(TokKind::Equals),
                b'.' if self.peek_at(start + 1) == Some(b'.') => Some((TokKind::DotDot, 2)),
                b'.' => single(TokKind::Dot),
                b'-' if self.peek_at(start + 1) == Some(b'>') => Some((TokKind::Arrow, 2)),
                b'-' => single(TokKind::Minus),
                b'?' | b'!'
                    if !(line_start && self.peek_at(start + 1).is_some_and(is_ident_start)) =>
                {
                    if b == b'?' {
                        single(TokKind::Question)
                    } else {
                        return Err(self.lines.syntax(start, start + 1, "unexpected `!`"));
                    }
                }
                _ => None,
            };
            if let Some((kind, len)) = simple {
                self.push(kind, start, start + len)?;
                continue;
            }
            match b {
                b'?' | b'!' => {
                    let end = self.ident_end(start + 1);
                    self.push(TokKind::Ident, start, end)?;
                }
                _ if is_ident_start(b) => {
                    let end = self.ident_end(start);
                    self.push(TokKind::Ident, start, end)?;
                }
                b'0'..=b'9' => self.number(start)?,
                b'"' => self.string(start)?,
                b'/' => self.regex(start)?,
                b'<' => self.special(start)?,
                b'@' if self.peek_at(start + 1).is_some_and(is_ident_start) => {
                    let end = self.ident_end(start + 1);
                    self.push(TokKind::GrammarRef, start, end)?;
                }
                b'@' => {
                    return Err(self.lines.syntax(
                        start,
                        start + 1,
                        "`@` must be followed by a grammar's name (`@name`; numeric references \
                         such as `@17` are not supported, as in LLGuidance)",
                    ));
                }
                b'%' => self.directive(start)?,
                _ => {
                    let len = self.char_at(start).map_or(1, char::len_utf8);
                    let shown = self.src.get(start..start + len).unwrap_or("?");
                    return Err(self.lines.syntax(
                        start,
                        start + len,
                        format!("unexpected character `{shown}`"),
                    ));
                }
            }
        }
        let end = self.src.len();
        self.push(TokKind::Eof, end, end)
    }

    fn skip_comment(&mut self) {
        while let Some(b) = self.peek_at(self.pos) {
            if b == b'\n' {
                break;
            }
            self.pos += 1;
        }
        // Comments may contain multi-byte chars; the newline (or the end) is a boundary.
    }

    /// End of a name starting at `i`: `[A-Za-z0-9_]` plus `-` when followed by a name byte.
    fn ident_end(&self, mut i: usize) -> usize {
        loop {
            match self.peek_at(i) {
                Some(b) if is_ident_byte(b) => i += 1,
                Some(b'-') if self.peek_at(i + 1).is_some_and(is_ident_byte) => i += 1,
                _ => return i,
            }
        }
    }

    fn number(&mut self, start: usize) -> Result<(), GrammarError> {
        let mut i = start;
        let mut value: u64 = 0;
        let mut overflow = false;
        while let Some(b) = self.peek_at(i).filter(u8::is_ascii_digit) {
            match value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(b - b'0')))
            {
                Some(v) => value = v,
                None => overflow = true,
            }
            i += 1;
        }
        if overflow {
            return Err(self.lines.syntax(start, i, "number too large"));
        }
        self.push(TokKind::Number(value), start, i)
    }

    /// A `"..."` literal with Python-style escapes, optionally followed by `i`.
    fn string(&mut self, start: usize) -> Result<(), GrammarError> {
        let mut i = start + 1;
        let mut value = String::new();
        loop {
            let Some(c) = self.char_at(i) else {
                return Err(self.unterminated(start, "string"));
            };
            match c {
                '"' => {
                    i += 1;
                    break;
                }
                '\n' => return Err(self.unterminated(start, "string")),
                '\\' => {
                    let (ch, len) = self.escape(i)?;
                    self.reserve_str(&mut value, ch.len_utf8(), i)?;
                    value.push(ch);
                    i += len;
                }
                _ => {
                    self.reserve_str(&mut value, c.len_utf8(), i)?;
                    value.push(c);
                    i += c.len_utf8();
                }
            }
        }
        let ci = self.peek_at(i) == Some(b'i') && !self.peek_at(i + 1).is_some_and(is_ident_byte);
        let end = if ci { i + 1 } else { i };
        self.push(TokKind::Str(value, ci), start, end)
    }

    fn unterminated(&self, start: usize, what: &str) -> GrammarError {
        self.lines
            .syntax(start, start + 1, format!("unterminated {what}"))
    }

    /// The escape starting with the backslash at `i`: the char and the escape's length.
    fn escape(&self, i: usize) -> Result<(char, usize), GrammarError> {
        let Some(c) = self.char_at(i + 1) else {
            return Err(self.lines.syntax(i, i + 1, "unterminated escape"));
        };
        let simple = match c {
            'n' => Some('\n'),
            't' => Some('\t'),
            'r' => Some('\r'),
            '0' => Some('\0'),
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'f' => Some('\u{c}'),
            'v' => Some('\u{b}'),
            '\\' | '"' | '\'' | '/' => Some(c),
            _ => None,
        };
        if let Some(ch) = simple {
            return Ok((ch, 2));
        }
        let digits = match c {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ => {
                let end = i + 1 + c.len_utf8();
                return Err(self.lines.syntax(i, end, format!("unknown escape `\\{c}`")));
            }
        };
        let hex_start = i + 2;
        let hex_end = hex_start + digits;
        let code = self
            .src
            .get(hex_start..hex_end)
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|h| u32::from_str_radix(h, 16).ok());
        match code.and_then(char::from_u32) {
            Some(ch) => Ok((ch, 2 + digits)),
            None => {
                let end = hex_end.min(self.src.len());
                Err(self.lines.syntax(i, end, "invalid hex escape"))
            }
        }
    }

    /// A `/.../flags` literal (the caller checked it is not a `//` comment).
    fn regex(&mut self, start: usize) -> Result<(), GrammarError> {
        let mut i = start + 1;
        let mut pattern = String::new();
        let mut offsets = Vec::new();
        loop {
            let Some(c) = self.char_at(i) else {
                return Err(self.unterminated(start, "regex"));
            };
            match c {
                '/' => {
                    i += 1;
                    break;
                }
                '\\' if self.peek_at(i + 1) == Some(b'/') => {
                    // `\/` is a slash in the pattern.
                    self.reserve_regex(&mut pattern, &mut offsets, 1, i)?;
                    offsets.push(i + 1);
                    pattern.push('/');
                    i += 2;
                }
                '\\' if self.peek_at(i + 1) == Some(b'\\') => {
                    self.reserve_regex(&mut pattern, &mut offsets, 2, i)?;
                    offsets.extend([i, i + 1]);
                    pattern.push_str("\\\\");
                    i += 2;
                }
                _ => {
                    self.reserve_regex(&mut pattern, &mut offsets, c.len_utf8(), i)?;
                    for k in 0..c.len_utf8() {
                        offsets.push(i + k);
                    }
                    pattern.push(c);
                    i += c.len_utf8();
                }
            }
        }
        heap::reserve(&mut offsets, 1, self.budget).map_err(|k| self.limit(k, start))?;
        offsets.push(i - 1);
        let mut flags = PatternFlags::default();
        while let Some(b) = self.peek_at(i).filter(u8::is_ascii_alphabetic) {
            match b {
                b'i' => flags.case_insensitive = true,
                b's' => flags.dot_matches_new_line = true,
                b'x' => flags.ignore_whitespace = true,
                b'm' => flags.multi_line = true,
                b'l' | b'u' => {}
                _ => {
                    return Err(self.lines.syntax(
                        i,
                        i + 1,
                        format!("unknown regex flag `{}`", char::from(b)),
                    ));
                }
            }
            i += 1;
        }
        let lit = RegexLit {
            pattern,
            flags,
            offsets,
        };
        self.push(TokKind::Regex(lit), start, i)
    }

    /// Room for `n` more pattern bytes and their offsets, charged; a limit error at `at`.
    fn reserve_regex(
        &mut self,
        pattern: &mut String,
        offsets: &mut Vec<usize>,
        n: usize,
        at: usize,
    ) -> Result<(), GrammarError> {
        self.reserve_str(pattern, n, at)?;
        heap::reserve(offsets, n, self.budget).map_err(|k| self.limit(k, at))
    }

    /// `<|name|>`, `<[...]>` or `<name>` (any special token's text, as in LLGuidance:
    /// `<escape>`, `<start_of_turn>`), on one line; a plain `<name>` has no blanks.
    fn special(&mut self, start: usize) -> Result<(), GrammarError> {
        let close: &[u8] = match self.peek_at(start + 1) {
            Some(b'|') => b"|>",
            Some(b'[') => b"]>",
            Some(b) if !b.is_ascii_whitespace() && b != b'>' => {
                let mut i = start + 1;
                while let Some(b) = self.peek_at(i) {
                    if b == b'>' {
                        return self.push(TokKind::Special, start, i + 1);
                    }
                    if b.is_ascii_whitespace() {
                        break;
                    }
                    i += 1;
                }
                return Err(self.lines.syntax(start, start + 1, "unexpected `<`"));
            }
            _ => return Err(self.lines.syntax(start, start + 1, "unexpected `<`")),
        };
        let mut i = start + 2;
        loop {
            match self.peek_at(i) {
                None | Some(b'\n') => return Err(self.unterminated(start, "special token")),
                Some(_) if self.bytes.get(i..i + 2) == Some(close) => {
                    return self.push(TokKind::Special, start, i + 2);
                }
                Some(_) => i += 1,
            }
        }
    }

    /// `%name`; after `%llguidance`, also the balanced JSON object that follows. `%json`
    /// and its object (required) become one [`TokKind::Json`] token.
    fn directive(&mut self, start: usize) -> Result<(), GrammarError> {
        let end = self.ident_end(start + 1);
        if end == start + 1 {
            return Err(self
                .lines
                .syntax(start, start + 1, "expected a directive name"));
        }
        match self.src.get(start..end) {
            Some("%llguidance") => {
                self.push(TokKind::Directive, start, end)?;
                if let Some(open) = self.object_after(end) {
                    let close = self.balanced_object(open, "`%llguidance` options")?;
                    self.push(TokKind::Raw, open, close)?;
                }
            }
            Some("%json") => {
                let Some(open) = self.object_after(end) else {
                    return Err(self.lines.syntax(
                        start,
                        end,
                        "expected a JSON Schema object `{...}` after `%json`",
                    ));
                };
                let close = self.balanced_object(open, "`%json` schema")?;
                self.push(TokKind::Json(open), start, close)?;
            }
            _ => self.push(TokKind::Directive, start, end)?,
        }
        Ok(())
    }

    /// The offset of the `{` after `end` and optional whitespace (line breaks included).
    fn object_after(&self, end: usize) -> Option<usize> {
        let mut i = end;
        while matches!(self.peek_at(i), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            i += 1;
        }
        (self.peek_at(i) == Some(b'{')).then_some(i)
    }

    /// The end (one past the matching `}`) of the JSON object opening at `open`. Braces
    /// inside JSON strings do not count; the text itself is checked later, by a JSON parser.
    fn balanced_object(&self, open: usize, what: &str) -> Result<usize, GrammarError> {
        let mut i = open;
        let mut depth = 0usize;
        let mut in_string = false;
        while let Some(b) = self.peek_at(i) {
            i += 1;
            if in_string {
                match b {
                    b'\\' => i += 1,
                    b'"' => in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        // `}` is ASCII, so `i` is a char boundary.
                        return Ok(i);
                    }
                }
                _ => {}
            }
        }
        Err(self.unterminated(open, what))
    }
}
