//! GBNF text → definitions over a post-order arena of alternative lists.
//!
//! The grammar of llama.cpp's recursive-descent parser (`llama_grammar_parser`), run on an
//! explicit stack of open groups: a group's arena index is assigned when it closes, so every
//! group refers only to groups with lower indices. Whitespace follows llama.cpp exactly:
//! spaces, tabs and `#` comments are skipped everywhere, newlines only inside parentheses,
//! after `::=` and after `|`; a rule ends at a newline (or the end) outside parentheses.
//!
//! Every buffer that grows with the input is charged to the [`CompileBudget`] first.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::mem::size_of;

use crate::error::{GrammarError, GrammarErrorKind, LimitKind};
use crate::grammar::lark::span::LineIndex;
use crate::limits::{CompileBudget, Limits};

/// A byte range of the source.
pub(super) type Range = (usize, usize);

/// What a token terminal names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TokenRef {
    /// `<[id]>`.
    Id(u32),
    /// `<text>`: the text with its angle brackets.
    Name(String),
}

/// One element of a sequence, before its postfix operators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Atom {
    /// `"..."`: code points as llama.cpp reads them (any `u32`, escapes included); may be
    /// empty.
    Chars(Vec<u32>),
    /// `[...]` / `[^...]`: inclusive ranges (a single character is `(c, c)`; a reversed
    /// range matches nothing); may be empty (then it is no element at all, as in llama.cpp).
    Class(Vec<(u32, u32)>, bool),
    /// `.`.
    Any,
    /// `<...>` (`false`) or `!<...>` (`true`).
    Token(TokenRef, bool),
    /// A rule reference (index into [`Parsed::names`]).
    Ref(u32),
    /// `( ... )` (index into [`Parsed::groups`]).
    Group(u32),
}

/// A postfix operator: `{min,max}` (`max` `None`: unbounded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rep {
    pub min: u64,
    pub max: Option<u64>,
    pub range: Range,
}

/// An element with its postfix operators, applied in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Item {
    pub atom: Atom,
    pub range: Range,
    pub reps: Vec<Rep>,
}

/// Alternatives: a rule's body or a parenthesized group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Group {
    pub alts: Vec<Vec<Item>>,
    pub range: Range,
}

/// `name ::= body`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Def {
    /// Index into [`Parsed::names`].
    pub name: u32,
    /// The name at the start of the definition.
    pub range: Range,
    /// Index into [`Parsed::groups`].
    pub body: u32,
}

/// A parsed grammar.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    /// Every rule name, defined or referenced, in order of first appearance.
    pub names: Vec<String>,
    /// Where each name is first referenced (`None`: never referenced).
    pub first_ref: Vec<Option<Range>>,
    /// Definitions in source order (a later one of the same name replaces an earlier one).
    pub defs: Vec<Def>,
    /// Groups in post-order.
    pub groups: Vec<Group>,
}

/// Estimated heap bytes of one parsed item (the item, its slot, a postfix operator).
const ITEM_BYTES: usize = size_of::<Item>() + size_of::<Rep>() + 16;

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

/// An open group (or a rule body) on the parse stack.
struct Frame {
    alts: Vec<Vec<Item>>,
    cur: Vec<Item>,
    /// Newlines are whitespace (inside parentheses).
    nested: bool,
    /// Where it opened (the `(`, or the body's first byte).
    start: usize,
    /// The last item of `cur` can take a postfix operator (llama.cpp: it pushed elements).
    last_ok: bool,
}

impl Frame {
    fn new(nested: bool, start: usize) -> Frame {
        Frame {
            alts: Vec::new(),
            cur: Vec::new(),
            nested,
            start,
            last_ok: false,
        }
    }
}

pub(super) struct Parser<'s, 'b> {
    src: &'s [u8],
    lines: &'b LineIndex<'s>,
    limits: &'b Limits,
    budget: &'b mut CompileBudget,
    pos: usize,
    out: Parsed,
    ids: BTreeMap<String, u32>,
}

type PResult<T> = Result<T, GrammarError>;

impl<'s, 'b> Parser<'s, 'b> {
    pub(super) fn new(
        src: &'s str,
        lines: &'b LineIndex<'s>,
        limits: &'b Limits,
        budget: &'b mut CompileBudget,
    ) -> Self {
        Parser {
            src: src.as_bytes(),
            lines,
            limits,
            budget,
            pos: 0,
            out: Parsed::default(),
            ids: BTreeMap::new(),
        }
    }

    fn peek(&self) -> u8 {
        self.at(self.pos)
    }

    fn at(&self, i: usize) -> u8 {
        self.src.get(i).copied().unwrap_or(0)
    }

    fn error(&self, start: usize, end: usize, msg: impl Into<String>) -> GrammarError {
        self.lines
            .error(GrammarErrorKind::Syntax, start, end, msg.into())
    }

    /// llama.cpp's "... at <rest of the source>": the offending text is located instead.
    fn expecting(&self, what: &str) -> GrammarError {
        let end = self.char_end(self.pos);
        self.error(self.pos, end, alloc::format!("expecting {what}"))
    }

    fn char_end(&self, i: usize) -> usize {
        let mut j = (i + 1).min(self.src.len());
        while j < self.src.len() && self.src[j] & 0xC0 == 0x80 {
            j += 1;
        }
        j.max(i)
    }

    fn charge(&mut self, bytes: usize) -> PResult<()> {
        self.budget.charge(bytes).map_err(|k| {
            let end = self.char_end(self.pos);
            GrammarError::limit(k).with_span(self.lines.span(self.pos, end))
        })
    }

    /// Skip spaces, tabs and comments, and newlines if `newline_ok`.
    fn space(&mut self, newline_ok: bool) {
        loop {
            match self.peek() {
                b' ' | b'\t' => self.pos += 1,
                b'\r' | b'\n' if newline_ok => self.pos += 1,
                b'#' => {
                    while !matches!(self.peek(), 0 | b'\r' | b'\n') {
                        self.pos += 1;
                    }
                }
                _ => return,
            }
        }
    }

    fn name_id(&mut self, start: usize, end: usize) -> PResult<u32> {
        let name =
            core::str::from_utf8(self.src.get(start..end).unwrap_or_default()).unwrap_or_default();
        if let Some(&id) = self.ids.get(name) {
            return Ok(id);
        }
        self.charge(name.len().saturating_mul(3).saturating_add(96))?;
        let id = self.out.names.len() as u32;
        self.out.names.push(String::from(name));
        self.out.first_ref.push(None);
        self.ids.insert(String::from(name), id);
        Ok(id)
    }

    fn name_end(&self) -> usize {
        let mut i = self.pos;
        while is_word(self.at(i)) {
            i += 1;
        }
        i
    }

    /// An unsigned decimal (saturating); `None` if no digit is here.
    fn int(&mut self) -> Option<u64> {
        let start = self.pos;
        let mut v: u64 = 0;
        while self.peek().is_ascii_digit() {
            v = v
                .saturating_mul(10)
                .saturating_add(u64::from(self.peek() - b'0'));
            self.pos += 1;
        }
        (self.pos > start).then_some(v)
    }

    /// Parse the whole source.
    pub(super) fn parse(mut self) -> PResult<Parsed> {
        self.space(true);
        while self.pos < self.src.len() {
            self.rule()?;
        }
        Ok(self.out)
    }

    fn rule(&mut self) -> PResult<()> {
        let start = self.pos;
        let end = self.name_end();
        if end == start {
            return Err(self.expecting("name"));
        }
        self.pos = end;
        self.space(false);
        let name = self.name_id(start, end)?;
        if self.src.get(self.pos..self.pos + 3) != Some(b"::=".as_slice()) {
            return Err(self.expecting("::="));
        }
        self.pos += 3;
        self.space(true);
        let body = self.alternates()?;
        self.charge(size_of::<Def>() * 2)?;
        self.out.defs.push(Def {
            name,
            range: (start, end),
            body,
        });
        match self.peek() {
            b'\r' => self.pos += if self.at(self.pos + 1) == b'\n' { 2 } else { 1 },
            b'\n' => self.pos += 1,
            _ if self.pos >= self.src.len() => {}
            _ => return Err(self.expecting("newline or end")),
        }
        self.space(true);
        Ok(())
    }

    /// A rule body: alternatives, with nested groups on an explicit stack. Returns the
    /// body's group index.
    fn alternates(&mut self) -> PResult<u32> {
        let mut stack: Vec<Frame> = Vec::new();
        let mut top = Frame::new(false, self.pos);
        loop {
            let c = self.peek();
            let start = self.pos;
            if c == b'(' {
                if stack.len() >= self.limits.max_nesting_depth {
                    return Err(GrammarError::limit(LimitKind::NestingDepth)
                        .with_span(self.lines.span(start, start + 1)));
                }
                self.charge(size_of::<Frame>() * 2)?;
                self.pos += 1;
                self.space(true);
                let inner = Frame::new(true, start);
                stack.push(core::mem::replace(&mut top, inner));
                continue;
            }
            if let Some(atom) = self.atom(c)? {
                let end = self.pos;
                self.space(top.nested);
                self.push(&mut top, atom, (start, end))?;
                continue;
            }
            let (min, max) = match c {
                b'*' => (0, None),
                b'+' => (1, None),
                b'?' => (0, Some(1)),
                b'{' => {
                    self.pos += 1;
                    self.space(top.nested);
                    self.braces(top.nested)?
                }
                _ => {
                    // The end of a sequence.
                    let seq = core::mem::take(&mut top.cur);
                    top.alts.push(seq);
                    top.last_ok = false;
                    if c == b'|' {
                        self.pos += 1;
                        self.space(true);
                        continue;
                    }
                    let Some(parent) = stack.pop() else {
                        return self.close(top, self.pos);
                    };
                    if c != b')' {
                        return Err(self.expecting("')'"));
                    }
                    self.pos += 1;
                    let end = self.pos;
                    let group_start = top.start;
                    let group = self.close(top, end)?;
                    top = parent;
                    self.space(top.nested);
                    self.push(&mut top, Atom::Group(group), (group_start, end))?;
                    continue;
                }
            };
            if matches!(c, b'*' | b'+' | b'?') {
                self.pos += 1;
            }
            let end = self.pos;
            self.space(top.nested);
            self.postfix(&mut top, min, max, (start, end))?;
        }
    }

    /// Append an item to the open sequence.
    fn push(&mut self, top: &mut Frame, atom: Atom, range: Range) -> PResult<()> {
        self.charge(ITEM_BYTES)?;
        top.last_ok = match &atom {
            Atom::Chars(c) => !c.is_empty(),
            Atom::Class(r, _) => !r.is_empty(),
            _ => true,
        };
        top.cur.push(Item {
            atom,
            range,
            reps: Vec::new(),
        });
        Ok(())
    }

    /// Apply `{min,max}` to the last item (llama.cpp: to the elements it pushed).
    fn postfix(
        &mut self,
        top: &mut Frame,
        min: u64,
        max: Option<u64>,
        range: Range,
    ) -> PResult<()> {
        let (start, end) = range;
        if !top.last_ok {
            return Err(self.error(start, end, "expecting preceding item to */+/?/{"));
        }
        if let Some(m) = max
            && m < min
        {
            return Err(self.error(
                start,
                end,
                alloc::format!("repetition {{{min},{m}}}: the maximum is below the minimum"),
            ));
        }
        let limit = u64::from(self.limits.max_repeat);
        if min > limit || max.is_some_and(|m| m > limit) {
            return Err(
                GrammarError::limit(LimitKind::RepeatCount).with_span(self.lines.span(start, end))
            );
        }
        self.charge(size_of::<Rep>())?;
        if let Some(item) = top.cur.last_mut() {
            item.reps.push(Rep { min, max, range });
        }
        if max == Some(0) {
            top.last_ok = false;
        }
        Ok(())
    }

    /// `{m}`, `{m,}`, `{m,n}` after the `{` and its spaces.
    fn braces(&mut self, nested: bool) -> PResult<(u64, Option<u64>)> {
        let Some(min) = self.int() else {
            return Err(self.expecting("an int"));
        };
        self.space(nested);
        match self.peek() {
            b'}' => {
                self.pos += 1;
                Ok((min, Some(min)))
            }
            b',' => {
                self.pos += 1;
                self.space(nested);
                let max = self.int();
                if max.is_some() {
                    self.space(nested);
                }
                if self.peek() != b'}' {
                    return Err(self.expecting("'}'"));
                }
                self.pos += 1;
                Ok((min, max))
            }
            _ => Err(self.expecting("','")),
        }
    }

    /// A literal, class, token, `.` or rule reference starting with `c`, if one does.
    fn atom(&mut self, c: u8) -> PResult<Option<Atom>> {
        let start = self.pos;
        Ok(Some(match c {
            b'"' => {
                self.pos += 1;
                let mut chars = Vec::new();
                while self.peek() != b'"' {
                    if self.pos >= self.src.len() {
                        return Err(self.error(start, self.pos, "unexpected end of input"));
                    }
                    self.charge(4)?;
                    chars.push(self.char()?);
                }
                self.pos += 1;
                Atom::Chars(chars)
            }
            b'[' => {
                self.pos += 1;
                let negated = self.peek() == b'^';
                if negated {
                    self.pos += 1;
                }
                let mut ranges = Vec::new();
                while self.peek() != b']' {
                    if self.pos >= self.src.len() {
                        return Err(self.error(start, self.pos, "unexpected end of input"));
                    }
                    let lo = self.char()?;
                    let mut hi = lo;
                    if self.peek() == b'-' && self.at(self.pos + 1) != b']' {
                        if self.pos + 1 >= self.src.len() {
                            return Err(self.error(start, self.pos + 1, "unexpected end of input"));
                        }
                        self.pos += 1;
                        hi = self.char()?;
                    }
                    self.charge(8)?;
                    ranges.push((lo, hi));
                }
                self.pos += 1;
                Atom::Class(ranges, negated)
            }
            b'<' | b'!' => self.token()?,
            b'.' => {
                self.pos += 1;
                Atom::Any
            }
            c if is_word(c) => {
                let end = self.name_end();
                let id = self.name_id(start, end)?;
                if let Some(slot) = self.out.first_ref.get_mut(id as usize)
                    && slot.is_none()
                {
                    *slot = Some((start, end));
                }
                self.pos = end;
                Atom::Ref(id)
            }
            _ => return Ok(None),
        }))
    }

    /// One character of a literal or class: an escape or a UTF-8 code point.
    fn char(&mut self) -> PResult<u32> {
        let start = self.pos;
        if self.peek() != b'\\' {
            let end = self.char_end(start);
            let s = core::str::from_utf8(self.src.get(start..end).unwrap_or_default())
                .unwrap_or_default();
            self.pos = end;
            return Ok(s.chars().next().map_or(0, u32::from));
        }
        let e = self.at(start + 1);
        let (size, simple) = match e {
            b'x' => (2, 0),
            b'u' => (4, 0),
            b'U' => (8, 0),
            b't' => (0, u32::from(b'\t')),
            b'r' => (0, u32::from(b'\r')),
            b'n' => (0, u32::from(b'\n')),
            b'\\' | b'"' | b'[' | b']' | b'-' => (0, u32::from(e)),
            _ => {
                let end = self.char_end(start + 1).max(start + 1);
                return Err(self.error(start, end, "unknown escape"));
            }
        };
        self.pos = start + 2;
        if size == 0 {
            return Ok(simple);
        }
        let mut v: u32 = 0;
        for _ in 0..size {
            let Some(d) = (self.peek() as char).to_digit(16) else {
                let end = self.char_end(self.pos).max(self.pos);
                return Err(self.error(start, end, alloc::format!("expecting {size} hex chars")));
            };
            v = (v << 4) | d;
            self.pos += 1;
        }
        Ok(v)
    }

    /// `<[id]>`, `<text>`, `!<[id]>` or `!<text>`.
    fn token(&mut self) -> PResult<Atom> {
        let negated = self.peek() == b'!';
        if negated {
            self.pos += 1;
        }
        if self.peek() != b'<' {
            return Err(self.expecting("'<'"));
        }
        let open = self.pos;
        self.pos += 1;
        if self.peek() == b'[' {
            self.pos += 1;
            let digits = self.pos;
            let Some(id) = self.int() else {
                return Err(self.expecting("integer"));
            };
            let Ok(id) = u32::try_from(id) else {
                return Err(self.error(digits, self.pos, "token id out of range"));
            };
            if self.peek() != b']' {
                return Err(self.expecting("']'"));
            }
            self.pos += 1;
            if self.peek() != b'>' {
                return Err(self.expecting("'>'"));
            }
            self.pos += 1;
            return Ok(Atom::Token(TokenRef::Id(id), negated));
        }
        while self.pos < self.src.len() && self.peek() != b'>' {
            self.pos += 1;
        }
        if self.peek() != b'>' {
            return Err(self.expecting("'>'"));
        }
        self.pos += 1;
        let text = core::str::from_utf8(self.src.get(open..self.pos).unwrap_or_default())
            .unwrap_or_default();
        self.charge(text.len().saturating_mul(2))?;
        Ok(Atom::Token(TokenRef::Name(String::from(text)), negated))
    }

    /// Store a finished group.
    fn close(&mut self, frame: Frame, end: usize) -> PResult<u32> {
        self.charge(size_of::<Group>() * 2)?;
        let id = self.out.groups.len() as u32;
        self.out.groups.push(Group {
            alts: frame.alts,
            range: (frame.start, end),
        });
        Ok(id)
    }
}
