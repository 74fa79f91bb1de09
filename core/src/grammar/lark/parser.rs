//! Tokens → [`Parsed`] items over a post-order node arena.
//!
//! Statements are parsed by recursive descent (they do not nest); expressions by a loop
//! over an explicit stack of open groups, so no input can exhaust the call stack. Group
//! nesting beyond [`crate::Limits::max_nesting_depth`] is a limit error.
//!
//! A definition ends at a line break, unless the next non-blank line starts with `|`;
//! inside parentheses and brackets line breaks are ignored.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::ast::{Attrs, Def, ImportName, Item, JsonLit, Node, NodeKind, Parsed, is_terminal_name};
use super::heap;
use super::span::LineIndex;
use super::token::{RegexLit, TokKind, Token};
use crate::error::{GrammarError, GrammarErrorKind, LimitKind};
use crate::regex::RegexCompileErrorKind;
use crate::{CompileBudget, Limits};

/// The tallest terminal regex tree a limit allows (regex trees are cloned and compared
/// recursively by derived impls, so their height is bounded; dropping is iterative).
pub(super) fn max_height(limits: &Limits) -> usize {
    limits.max_nesting_depth.saturating_mul(2).saturating_add(2)
}

/// An open group (or the whole expression) while parsing an expression.
struct Frame {
    /// The closing token and whether the group is `[...]`; `None` at top level.
    close: Option<(TokKind, bool)>,
    /// Byte offset of the opening delimiter.
    open_start: usize,
    /// First node of the group.
    first_node: usize,
    /// First node of the current alternative.
    seq_first: usize,
    /// Items in the current alternative.
    items: usize,
    /// Byte offset where the current alternative starts.
    seq_start: usize,
    /// Finished alternatives.
    alts: usize,
    /// Finished `&` operands of the current alternative, its first node and start.
    conj: usize,
    alt_first: usize,
    alt_start: usize,
    /// Prefix `~` operators on the group itself (applied when it closes).
    negate: u32,
}

impl Frame {
    fn new(close: Option<(TokKind, bool)>, open_start: usize, first_node: usize) -> Frame {
        Frame {
            close,
            open_start,
            first_node,
            seq_first: first_node,
            items: 0,
            seq_start: open_start,
            alts: 0,
            conj: 0,
            alt_first: first_node,
            alt_start: open_start,
            negate: 0,
        }
    }
}
pub(super) struct Parser<'s, 'i> {
    src: &'s str,
    toks: Vec<Token>,
    pos: usize,
    lines: &'i LineIndex<'s>,
    limits: &'i Limits,
    /// Charged for the node arena, the items, the open-group stack and copied names.
    budget: &'i mut CompileBudget,
    /// Current group nesting (line breaks are insignificant when > 0).
    depth: usize,
    nodes: Vec<Node>,
}

type PResult<T> = Result<T, GrammarError>;

impl<'s, 'i> Parser<'s, 'i> {
    pub(super) fn new(
        src: &'s str,
        toks: Vec<Token>,
        lines: &'i LineIndex<'s>,
        limits: &'i Limits,
        budget: &'i mut CompileBudget,
    ) -> Self {
        Parser {
            src,
            toks,
            pos: 0,
            lines,
            limits,
            budget,
            depth: 0,
            nodes: Vec::new(),
        }
    }

    /// Parse the whole grammar.
    pub(super) fn parse_items(mut self) -> PResult<Parsed> {
        let mut items = Vec::new();
        loop {
            while self.kind() == &TokKind::Newline {
                self.pos += 1;
            }
            match self.kind() {
                TokKind::Eof => {
                    return Ok(Parsed {
                        nodes: self.nodes,
                        items,
                    });
                }
                TokKind::Directive => self.directive(&mut items)?,
                TokKind::Ident => {
                    let item = self.definition()?;
                    self.push_item(&mut items, item)?;
                }
                TokKind::Json(_) => {
                    let t = self.tok();
                    return Err(self.lines.syntax(
                        t.start,
                        t.start + "%json".len(),
                        "`%json { ... }` must be (part of) a rule body, as in `name: %json {...}`",
                    ));
                }
                _ => return Err(self.unexpected("a rule, a terminal or a directive")),
            }
            self.end_of_statement()?;
        }
    }

    // ----- token access -----

    fn tok(&self) -> &Token {
        // `toks` always ends with Eof and `pos` never moves past it.
        let last = self.toks.len().saturating_sub(1);
        &self.toks[self.pos.min(last)]
    }

    fn kind(&self) -> &TokKind {
        &self.tok().kind
    }

    fn text(&self, tok: &Token) -> &'s str {
        self.src.get(tok.start..tok.end).unwrap_or("")
    }

    /// The current token without the text of a string or regex literal (copying that
    /// could double a megabyte literal; [`Parser::take_literal`] moves it out instead).
    fn peek(&self) -> Token {
        let t = self.tok();
        let kind = match &t.kind {
            TokKind::Str(_, ci) => TokKind::Str(String::new(), *ci),
            TokKind::Regex(_) => TokKind::Regex(RegexLit::default()),
            k => k.clone(),
        };
        Token {
            kind,
            start: t.start,
            end: t.end,
        }
    }

    /// Move past the current token (never past `Eof`); returns it as [`Parser::peek`] does.
    fn bump(&mut self) -> Token {
        let t = self.peek();
        if t.kind != TokKind::Eof {
            self.pos += 1;
        }
        t
    }

    /// Move past the current token, taking its kind with the literal's text (the token is
    /// left without it: tokens behind the cursor are only read for their offsets).
    fn take_literal(&mut self) -> TokKind {
        let last = self.toks.len().saturating_sub(1);
        let pos = self.pos.min(last);
        let kind = match self.toks.get_mut(pos).map(|t| &mut t.kind) {
            Some(TokKind::Str(s, ci)) => TokKind::Str(core::mem::take(s), *ci),
            Some(TokKind::Regex(lit)) => TokKind::Regex(core::mem::take(lit)),
            Some(k) => k.clone(),
            None => TokKind::Eof,
        };
        if kind != TokKind::Eof {
            self.pos += 1;
        }
        kind
    }

    /// A [`LimitKind::Memory`] (or other limit) error at the current token.
    fn charge_error(&self, kind: LimitKind) -> GrammarError {
        let t = self.tok();
        self.limit(kind, t.start, t.end)
    }

    /// Push `item`, charged.
    fn push_item(&mut self, items: &mut Vec<Item>, item: Item) -> PResult<()> {
        heap::push(items, item, self.budget).map_err(|k| self.charge_error(k))
    }

    /// The source text of `t`, copied and charged.
    fn copy_text(&mut self, t: &Token) -> PResult<String> {
        let text = self.text(t);
        heap::copy_str(text, self.budget).map_err(|k| self.limit(k, t.start, t.end))
    }

    /// Skip line breaks that do not end the construct: all of them inside a group, and at
    /// top level those followed by a `|` continuation line.
    fn skip_soft_newlines(&mut self) {
        let mut j = self.pos;
        while self.toks.get(j).is_some_and(|t| t.kind == TokKind::Newline) {
            j += 1;
        }
        if j == self.pos {
            return;
        }
        let next_is_pipe = self.toks.get(j).is_some_and(|t| t.kind == TokKind::Pipe);
        if self.depth > 0 || next_is_pipe {
            self.pos = j;
        }
    }

    fn unexpected(&self, expected: &str) -> GrammarError {
        let t = self.tok();
        let found = match &t.kind {
            TokKind::Eof => "end of input".to_string(),
            TokKind::Newline => "end of line".to_string(),
            TokKind::Json(_) => "`%json {...}`".to_string(),
            _ => format!("`{}`", self.text(t)),
        };
        self.lines.syntax(
            t.start,
            t.end,
            format!("expected {expected}, found {found}"),
        )
    }

    fn expect(&mut self, kind: &TokKind, what: &str) -> PResult<Token> {
        if self.kind() == kind {
            Ok(self.bump())
        } else {
            Err(self.unexpected(what))
        }
    }

    fn end_of_statement(&mut self) -> PResult<()> {
        match self.kind() {
            TokKind::Newline | TokKind::Eof => Ok(()),
            _ => Err(self.unexpected("end of line")),
        }
    }

    fn unsupported(&self, start: usize, end: usize, msg: impl Into<String>) -> GrammarError {
        self.lines
            .error(GrammarErrorKind::Unsupported, start, end, msg)
    }

    fn limit(&self, kind: LimitKind, start: usize, end: usize) -> GrammarError {
        GrammarError::limit(kind).with_span(self.lines.span(start, end))
    }

    // ----- statements -----

    fn directive(&mut self, items: &mut Vec<Item>) -> PResult<()> {
        let t = self.bump();
        match self.text(&t) {
            "%ignore" => {
                let e = self.expression()?;
                self.push_item(items, Item::Ignore(e))?;
            }
            "%import" => {
                let names = self.import()?;
                self.push_item(items, Item::Import(names))?;
            }
            "%llguidance" => {
                if self.kind() == &TokKind::Raw {
                    self.bump();
                }
            }
            "%declare" | "%override" | "%extend" => {
                return Err(self.unsupported(
                    t.start,
                    t.end,
                    format!("`{}` is not supported", self.text(&t)),
                ));
            }
            other => {
                return Err(self.unsupported(
                    t.start,
                    t.end,
                    format!("unknown directive `{other}`"),
                ));
            }
        }
        Ok(())
    }

    /// `%import common.NAME [-> ALIAS]` or `%import common (A, B)`.
    fn import(&mut self) -> PResult<Vec<ImportName>> {
        let path_start = self.tok().start;
        let mut path: Vec<(String, usize, usize)> = Vec::new();
        let mut relative = false;
        while self.kind() == &TokKind::Dot || self.kind() == &TokKind::DotDot {
            relative = true;
            self.bump();
        }
        loop {
            let t = self.expect(&TokKind::Ident, "a module or name")?;
            let text = self.copy_text(&t)?;
            heap::push(&mut path, (text, t.start, t.end), self.budget)
                .map_err(|k| self.limit(k, t.start, t.end))?;
            if self.kind() == &TokKind::Dot {
                self.bump();
            } else {
                break;
            }
        }
        let mut names = Vec::new();
        let module_end;
        if self.kind() == &TokKind::LParen {
            module_end = path.last().map_or(path_start, |p| p.2);
            self.bump();
            loop {
                while self.kind() == &TokKind::Newline {
                    self.bump();
                }
                let t = self.expect(&TokKind::Ident, "a name to import")?;
                let name = self.copy_text(&t)?;
                let import = ImportName {
                    local: self.copy_text(&t)?,
                    name,
                    span: (t.start, t.end),
                };
                heap::push(&mut names, import, self.budget)
                    .map_err(|k| self.limit(k, t.start, t.end))?;
                while self.kind() == &TokKind::Newline {
                    self.bump();
                }
                if self.kind() == &TokKind::Comma {
                    self.bump();
                } else {
                    break;
                }
            }
            while self.kind() == &TokKind::Newline {
                self.bump();
            }
            self.expect(&TokKind::RParen, "`)`")?;
        } else {
            let Some((name, start, end)) = path.pop() else {
                return Err(self.unexpected("a name to import"));
            };
            if path.is_empty() {
                return Err(self.lines.syntax(start, end, "expected `module.NAME`"));
            }
            module_end = path.last().map_or(path_start, |p| p.2);
            let mut local =
                heap::copy_str(&name, self.budget).map_err(|k| self.limit(k, start, end))?;
            let mut span_end = end;
            if self.kind() == &TokKind::Arrow {
                self.bump();
                let t = self.expect(&TokKind::Ident, "an alias name")?;
                local = self.copy_text(&t)?;
                span_end = t.end;
            }
            names.push(ImportName {
                name,
                local,
                span: (start, span_end),
            });
        }
        let module: Vec<&str> = path.iter().map(|p| p.0.as_str()).collect();
        if relative || module != ["common"] {
            return Err(self.unsupported(
                path_start,
                module_end,
                "only `%import common...` is supported",
            ));
        }
        Ok(names)
    }

    /// `name[.prio][attrs]: body` or `NAME[.prio][attrs]: body`.
    fn definition(&mut self) -> PResult<Item> {
        let t = self.bump();
        let raw = self.text(&t);
        let marked = raw.starts_with('?') || raw.starts_with('!');
        let name = heap::copy_str(raw.trim_start_matches(['?', '!']), self.budget)
            .map_err(|k| self.limit(k, t.start, t.end))?;
        let name_span = (t.start, t.end);
        if !name.bytes().any(|b| b.is_ascii_alphabetic()) {
            return Err(self.lines.syntax(t.start, t.end, "a name needs a letter"));
        }
        let is_term = is_terminal_name(&name);
        if is_term && marked {
            return Err(self.lines.syntax(
                t.start,
                t.end,
                "`?` and `!` apply to rules, not terminals",
            ));
        }
        if self.kind() == &TokKind::Dot {
            // Priority: parsed and ignored.
            self.bump();
            if self.kind() == &TokKind::Minus {
                self.bump();
            }
            if !matches!(self.kind(), TokKind::Number(_)) {
                return Err(self.unexpected("a priority number"));
            }
            self.bump();
        }
        let attrs = if self.kind() == &TokKind::LBracket {
            self.attributes()?
        } else {
            Attrs::default()
        };
        if self.kind() == &TokKind::LBrace {
            let b = self.tok();
            return Err(self.unsupported(b.start, b.end, "templates are not supported"));
        }
        self.expect(&TokKind::Colon, "`:`")?;
        let body = self.expression()?;
        let def = Def {
            name,
            name_span,
            attrs,
            body,
        };
        Ok(if is_term {
            Item::Term(def)
        } else {
            Item::Rule(def)
        })
    }

    /// `[lazy, stop="...", capture]`.
    fn attributes(&mut self) -> PResult<Attrs> {
        self.bump();
        let mut attrs = Attrs::default();
        loop {
            while self.kind() == &TokKind::Newline {
                self.bump();
            }
            let t = self.expect(&TokKind::Ident, "an attribute name")?;
            let key = self.text(&t);
            if !matches!(key, "lazy" | "stop" | "capture") {
                return Err(self.unsupported(
                    t.start,
                    t.end,
                    format!("unsupported attribute `{key}`"),
                ));
            }
            let value = if self.kind() == &TokKind::Equals {
                self.bump();
                Some(self.attribute_value()?)
            } else {
                None
            };
            match (key, value) {
                ("lazy", None) => attrs.lazy = true,
                ("stop", Some(v)) => attrs.stop = Some(v),
                ("capture", None) => {}
                ("capture", Some(v))
                    if matches!(self.nodes.get(v).map(|n| &n.kind), Some(NodeKind::Str(..))) => {}
                _ => {
                    let end = self
                        .toks
                        .get(self.pos.saturating_sub(1))
                        .map_or(t.end, |p| p.end);
                    return Err(self.unsupported(
                        t.start,
                        end,
                        format!("unsupported attribute `{key}`"),
                    ));
                }
            }
            while self.kind() == &TokKind::Newline {
                self.bump();
            }
            if self.kind() == &TokKind::Comma {
                self.bump();
            } else {
                break;
            }
        }
        self.expect(&TokKind::RBracket, "`]`")?;
        Ok(attrs)
    }

    fn attribute_value(&mut self) -> PResult<usize> {
        match self.kind() {
            TokKind::Str(..) | TokKind::Regex(_) | TokKind::Ident => self.leaf(),
            _ => Err(self.unexpected("a string, regex or terminal")),
        }
    }

    // ----- expressions -----

    /// Append a node to the arena (charged); returns its index.
    fn emit(&mut self, kind: NodeKind, start: usize, end: usize, first: usize) -> PResult<usize> {
        let node = Node {
            kind,
            start,
            end,
            first,
        };
        heap::push(&mut self.nodes, node, self.budget).map_err(|k| self.limit(k, start, end))?;
        Ok(self.nodes.len() - 1)
    }

    /// Close the current `&` operand of `f` (emitting its `Seq` node if needed).
    fn finish_conjunct(&mut self, f: &mut Frame) -> PResult<()> {
        let at = self.tok().start;
        match f.items {
            0 => {
                let idx = self.nodes.len();
                self.emit(NodeKind::Seq(0), at, at, idx)?;
            }
            1 => {}
            k => {
                let end = self.nodes.last().map_or(at, |n| n.end);
                self.emit(NodeKind::Seq(k), f.seq_start, end, f.seq_first)?;
            }
        }
        f.conj += 1;
        f.items = 0;
        f.seq_first = self.nodes.len();
        Ok(())
    }

    /// Close the current alternative of `f` (emitting its `Seq` and `And` nodes if needed).
    fn finish_seq(&mut self, f: &mut Frame) -> PResult<()> {
        self.finish_conjunct(f)?;
        if f.conj >= 2 {
            let end = self.nodes.last().map_or(f.alt_start, |n| n.end);
            self.emit(NodeKind::And(f.conj), f.alt_start, end, f.alt_first)?;
        }
        f.alts += 1;
        f.conj = 0;
        f.alt_first = self.nodes.len();
        Ok(())
    }

    /// Close `f`; returns the root of its expression.
    fn finish_frame(&mut self, mut f: Frame) -> PResult<usize> {
        self.finish_seq(&mut f)?;
        if f.alts >= 2 {
            let start = self
                .nodes
                .get(f.first_node)
                .map_or(f.open_start, |n| n.start);
            let end = self.nodes.last().map_or(start, |n| n.end);
            self.emit(NodeKind::Alt(f.alts), start, end, f.first_node)?;
        }
        Ok(self.nodes.len() - 1)
    }

    /// An expression: alternatives of sequences of postfixed atoms and groups.
    fn expression(&mut self) -> PResult<usize> {
        let first = self.nodes.len();
        let start = self.tok().start;
        let mut stack: Vec<Frame> = alloc::vec![Frame::new(None, start, first)];
        loop {
            self.depth = stack.len() - 1;
            self.skip_soft_newlines();
            let t = self.peek();
            let open_groups = stack.len() - 1;
            let Some(top) = stack.last_mut() else {
                return Err(self.unexpected("an expression"));
            };
            match &t.kind {
                TokKind::LParen | TokKind::LBracket => {
                    if open_groups >= self.limits.max_nesting_depth {
                        return Err(self.limit(LimitKind::NestingDepth, t.start, t.end));
                    }
                    if top.items == 0 && top.conj == 0 {
                        top.alt_start = t.start;
                    }
                    if top.items == 0 {
                        top.seq_start = t.start;
                    }
                    self.bump();
                    let close = if t.kind == TokKind::LParen {
                        (TokKind::RParen, false)
                    } else {
                        (TokKind::RBracket, true)
                    };
                    let frame = Frame::new(Some(close), t.start, self.nodes.len());
                    heap::push(&mut stack, frame, self.budget)
                        .map_err(|k| self.limit(k, t.start, t.end))?;
                }
                TokKind::Pipe => {
                    self.bump();
                    self.finish_seq(top)?;
                    top.alt_start = self.tok().start;
                    top.seq_start = top.alt_start;
                }
                TokKind::Amp => {
                    if top.items == 0 {
                        return Err(self.unexpected("an expression before `&`"));
                    }
                    self.bump();
                    self.finish_conjunct(top)?;
                    top.seq_start = self.tok().start;
                }
                TokKind::Tilde => {
                    // Prefix `~`: complement of the atom or group that follows (LLGuidance;
                    // a postfix `x ~ n` is read with its atom).
                    if top.items == 0 && top.conj == 0 {
                        top.alt_start = t.start;
                    }
                    if top.items == 0 {
                        top.seq_start = t.start;
                    }
                    let mut negate = 0u32;
                    while self.kind() == &TokKind::Tilde {
                        self.bump();
                        negate += 1;
                        if negate as usize > self.limits.max_nesting_depth {
                            return Err(self.limit(LimitKind::NestingDepth, t.start, t.end));
                        }
                    }
                    let next = self.peek();
                    if matches!(next.kind, TokKind::LParen | TokKind::LBracket) {
                        if open_groups >= self.limits.max_nesting_depth {
                            return Err(self.limit(LimitKind::NestingDepth, next.start, next.end));
                        }
                        self.bump();
                        let close = if next.kind == TokKind::LParen {
                            (TokKind::RParen, false)
                        } else {
                            (TokKind::RBracket, true)
                        };
                        let mut frame = Frame::new(Some(close), t.start, self.nodes.len());
                        frame.negate = negate;
                        heap::push(&mut stack, frame, self.budget)
                            .map_err(|k| self.limit(k, t.start, t.end))?;
                        continue;
                    }
                    let item_first = self.nodes.len();
                    self.leaf()?;
                    let end = self.nodes.last().map_or(t.end, |n| n.end);
                    for _ in 0..negate {
                        self.emit(NodeKind::Not, t.start, end, item_first)?;
                    }
                    self.postfix(item_first, t.start, open_groups)?;
                    if let Some(top) = stack.last_mut() {
                        top.items += 1;
                    }
                }
                TokKind::Arrow => {
                    // Lark tree-shaping alias: no effect on the language.
                    self.bump();
                    self.expect(&TokKind::Ident, "an alias name")?;
                }
                TokKind::RParen | TokKind::RBracket | TokKind::Newline | TokKind::Eof => {
                    let Some(f) = stack.pop() else {
                        return Err(self.unexpected("an expression"));
                    };
                    let Some((close, optional)) = f.close.clone() else {
                        // Top level: the caller checks what follows.
                        return self.finish_frame(f);
                    };
                    if t.kind != close {
                        let what = if optional { "`]`" } else { "`)`" };
                        return Err(self.unexpected(what));
                    }
                    self.bump();
                    let group_first = f.first_node;
                    let open_start = f.open_start;
                    let negate = f.negate;
                    self.finish_frame(f)?;
                    if optional {
                        self.emit(NodeKind::Repeat(0, Some(1)), open_start, t.end, group_first)?;
                    }
                    for _ in 0..negate {
                        self.emit(NodeKind::Not, open_start, t.end, group_first)?;
                    }
                    // The group and the operators on it count as one level.
                    self.postfix(group_first, open_start, stack.len().saturating_sub(1))?;
                    if let Some(parent) = stack.last_mut() {
                        parent.items += 1;
                    }
                }
                _ => {
                    if top.items == 0 && top.conj == 0 {
                        top.alt_start = t.start;
                    }
                    if top.items == 0 {
                        top.seq_start = t.start;
                    }
                    let item_first = self.nodes.len();
                    self.leaf()?;
                    self.postfix(item_first, t.start, open_groups)?;
                    if let Some(top) = stack.last_mut() {
                        top.items += 1;
                    }
                }
            }
        }
    }

    fn count(&mut self) -> PResult<u32> {
        let t = self.peek();
        match t.kind {
            TokKind::Number(n) => {
                self.bump();
                match u32::try_from(n) {
                    Ok(n) if n <= self.limits.max_repeat => Ok(n),
                    _ => Err(self.limit(LimitKind::RepeatCount, t.start, t.end)),
                }
            }
            TokKind::Ident => Err(self.unsupported(
                t.start,
                t.end,
                "templates are not supported (expected a repeat count)",
            )),
            _ => Err(self.unexpected("a repeat count")),
        }
    }

    /// Postfix operators on the subtree starting at node `first` (source offset `start`),
    /// inside `groups` open groups. Each operator counts as one level of nesting against
    /// [`Limits::max_nesting_depth`] (`"a"` followed by 10k `*` is a limit error, not a
    /// 10k-deep tree); a chain of `?` `*` `+` folds into one repetition (`x*+?` is `x*`).
    fn postfix(&mut self, first: usize, start: usize, groups: usize) -> PResult<()> {
        let mut depth = groups;
        loop {
            let t = self.peek();
            let (min, max) = match t.kind {
                TokKind::Question => {
                    self.bump();
                    (0, Some(1))
                }
                TokKind::Star => {
                    self.bump();
                    (0, None)
                }
                TokKind::Plus => {
                    self.bump();
                    (1, None)
                }
                TokKind::Tilde => {
                    // Lark: `x ~ n` or `x ~ n..m`.
                    self.bump();
                    let m = self.count()?;
                    if self.kind() == &TokKind::DotDot {
                        self.bump();
                        let n = self.count()?;
                        self.check_range(m, n, t.start)?;
                        (m, Some(n))
                    } else {
                        (m, Some(m))
                    }
                }
                TokKind::LBrace => {
                    // `x{m}`, `x{m,}`, `x{m,n}`.
                    self.bump();
                    let m = self.count()?;
                    let mut max = Some(m);
                    if self.kind() == &TokKind::Comma {
                        self.bump();
                        max = None;
                        if self.kind() != &TokKind::RBrace {
                            let n = self.count()?;
                            self.check_range(m, n, t.start)?;
                            max = Some(n);
                        }
                    }
                    self.expect(&TokKind::RBrace, "`}`")?;
                    (m, max)
                }
                _ => return Ok(()),
            };
            let end = self
                .toks
                .get(self.pos.saturating_sub(1))
                .map_or(t.end, |p| p.end);
            depth += 1;
            if depth > self.limits.max_nesting_depth {
                return Err(self.limit(LimitKind::NestingDepth, t.start, end));
            }
            let simple = |min: u32, max: Option<u32>| min <= 1 && matches!(max, None | Some(1));
            if let Some(last) = self.nodes.last_mut()
                && last.first == first
                && let NodeKind::Repeat(m0, x0) = last.kind
                && simple(m0, x0)
                && simple(min, max)
            {
                // (x{a,b}){c,d} with a, c in {0, 1} and b, d in {1, inf} is x{ac,bd}.
                let folded_max = x0.and(max);
                last.kind = NodeKind::Repeat(m0 * min, folded_max);
                last.end = end;
                continue;
            }
            self.emit(NodeKind::Repeat(min, max), start, end, first)?;
        }
    }

    fn check_range(&self, m: u32, n: u32, start: usize) -> PResult<()> {
        if m > n {
            let end = self
                .toks
                .get(self.pos.saturating_sub(1))
                .map_or(start, |p| p.end);
            Err(self
                .lines
                .syntax(start, end, format!("repeat range {m}..{n} is empty")))
        } else {
            Ok(())
        }
    }

    /// A leaf: string, range, regex, special token or name. Returns its node.
    fn leaf(&mut self) -> PResult<usize> {
        let t = self.peek();
        let idx = self.nodes.len();
        let kind = match &t.kind {
            TokKind::Str(..) | TokKind::Regex(_) => self.take_literal(),
            k => k.clone(),
        };
        match kind {
            TokKind::Str(value, ci) => {
                if self.kind() != &TokKind::DotDot {
                    return self.emit(NodeKind::Str(value, ci), t.start, t.end, idx);
                }
                self.bump();
                let hi_tok = self.peek();
                if !matches!(hi_tok.kind, TokKind::Str(..)) {
                    return Err(self.unexpected("a string after `..`"));
                }
                let TokKind::Str(hi, _) = self.take_literal() else {
                    return Err(self.unexpected("a string after `..`"));
                };
                let single = |s: &str| {
                    let mut it = s.chars();
                    match (it.next(), it.next()) {
                        (Some(c), None) => Some(c),
                        _ => None,
                    }
                };
                match (single(&value), single(&hi)) {
                    (Some(a), Some(b)) if a <= b => {
                        self.emit(NodeKind::Range(a, b), t.start, hi_tok.end, idx)
                    }
                    (Some(_), Some(_)) => {
                        Err(self
                            .lines
                            .syntax(t.start, hi_tok.end, "empty character range"))
                    }
                    _ => Err(self.lines.syntax(
                        t.start,
                        hi_tok.end,
                        "a range needs single-character strings",
                    )),
                }
            }
            TokKind::Regex(lit) => {
                // regex-syntax's transient tree must fit what is left of the budget.
                let room = self.budget.bytes_left();
                if let Err(err) =
                    crate::regex::check_pattern_within(&lit.pattern, lit.flags, self.limits, room)
                {
                    let (start, end) = match err.kind {
                        RegexCompileErrorKind::Syntax { start, end } => {
                            regex_error_range(&lit, start, end, t.start)
                        }
                        _ => (t.start, t.end),
                    };
                    if let RegexCompileErrorKind::Limit(kind) = err.kind {
                        return Err(self.limit(kind, start, end));
                    }
                    return Err(self.lines.error(
                        GrammarErrorKind::InvalidRegex,
                        start,
                        end,
                        err.message,
                    ));
                }
                self.emit(NodeKind::Regex(lit), t.start, t.end, idx)
            }
            TokKind::Special => {
                self.bump();
                let text = self.copy_text(&t)?;
                self.emit(NodeKind::Special(text), t.start, t.end, idx)
            }
            TokKind::GrammarRef => {
                self.bump();
                let mut text = self.copy_text(&t)?;
                text.remove(0);
                self.emit(NodeKind::GrammarRef(text), t.start, t.end, idx)
            }
            TokKind::Ident => {
                self.bump();
                if !self.text(&t).bytes().any(|b| b.is_ascii_alphabetic()) {
                    return Err(self.lines.syntax(t.start, t.end, "a name needs a letter"));
                }
                let text = self.copy_text(&t)?;
                self.emit(NodeKind::Name(text), t.start, t.end, idx)
            }
            TokKind::Json(open) => {
                self.bump();
                let text = (open, t.end);
                let value = super::schema::parse(self.lines, text)?;
                let lit = Box::new(JsonLit { value, text });
                self.emit(NodeKind::Json(lit), t.start, t.end, idx)
            }
            TokKind::Directive => Err(self.unsupported(
                t.start,
                t.end,
                format!("`{}` inside a rule is not supported", self.text(&t)),
            )),
            _ => Err(self.unexpected("an expression")),
        }
    }
}

/// The source range of pattern bytes `start..end` of `lit` (clamped to the literal).
pub(super) fn regex_error_range(
    lit: &RegexLit,
    start: usize,
    end: usize,
    fallback: usize,
) -> (usize, usize) {
    let last = lit.offsets.last().copied().unwrap_or(fallback);
    let at = |i: usize| lit.offsets.get(i).copied().unwrap_or(last);
    let s = at(start);
    (s, at(end).max(s))
}
