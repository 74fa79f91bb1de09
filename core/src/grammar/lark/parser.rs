//! Tokens → [`Item`]s: a recursive-descent parser whose recursion is bounded by
//! [`crate::Limits::max_nesting_depth`] (checked before descending into a group), and
//! whose trees are at most `2 * max_nesting_depth + 2` tall.
//!
//! A definition ends at a line break, unless the next non-blank line starts with `|`;
//! inside parentheses and brackets line breaks are ignored.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::ast::{Attrs, Def, Expr, ExprKind, ImportName, Item, is_terminal_name};
use super::span::LineIndex;
use super::token::{TokKind, Token};
use crate::Limits;
use crate::error::{GrammarError, GrammarErrorKind, LimitKind};

/// The tallest expression tree a limit allows.
pub(super) fn max_height(limits: &Limits) -> usize {
    limits.max_nesting_depth.saturating_mul(2).saturating_add(2)
}

pub(super) struct Parser<'s, 'i> {
    src: &'s str,
    toks: Vec<Token>,
    pos: usize,
    lines: &'i LineIndex<'s>,
    limits: &'i Limits,
    /// Current group nesting (line breaks are insignificant when > 0).
    depth: usize,
}

type PResult<T> = Result<T, GrammarError>;

impl<'s, 'i> Parser<'s, 'i> {
    pub(super) fn new(
        src: &'s str,
        toks: Vec<Token>,
        lines: &'i LineIndex<'s>,
        limits: &'i Limits,
    ) -> Self {
        Parser {
            src,
            toks,
            pos: 0,
            lines,
            limits,
            depth: 0,
        }
    }

    /// Parse the whole grammar.
    pub(super) fn parse_items(mut self) -> PResult<Vec<Item>> {
        let mut items = Vec::new();
        loop {
            while self.kind() == &TokKind::Newline {
                self.pos += 1;
            }
            match self.kind() {
                TokKind::Eof => return Ok(items),
                TokKind::Directive => self.directive(&mut items)?,
                TokKind::Ident => items.push(self.definition()?),
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

    fn bump(&mut self) -> Token {
        let t = self.tok().clone();
        if t.kind != TokKind::Eof {
            self.pos += 1;
        }
        t
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
                let e = self.alternatives()?;
                items.push(Item::Ignore(e));
            }
            "%import" => items.push(Item::Import(self.import()?)),
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
            path.push((self.text(&t).to_string(), t.start, t.end));
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
                let name = self.text(&t).to_string();
                names.push(ImportName {
                    local: name.clone(),
                    name,
                    span: (t.start, t.end),
                });
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
            let mut local = name.clone();
            let mut span_end = end;
            if self.kind() == &TokKind::Arrow {
                self.bump();
                let t = self.expect(&TokKind::Ident, "an alias name")?;
                local = self.text(&t).to_string();
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
        let name = raw.trim_start_matches(['?', '!']).to_string();
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
        let body = self.alternatives()?;
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
        let open = self.bump();
        let mut attrs = Attrs::default();
        loop {
            while self.kind() == &TokKind::Newline {
                self.bump();
            }
            let t = self.expect(&TokKind::Ident, "an attribute name")?;
            let key = self.text(&t);
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
                ("capture", Some(v)) if matches!(v.kind, ExprKind::Str(..)) => {}
                _ => {
                    let end = self.toks.get(self.pos.saturating_sub(1)).map_or(t.end, |p| p.end);
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
        let close = self.expect(&TokKind::RBracket, "`]`")?;
        attrs.span = Some((open.start, close.end));
        Ok(attrs)
    }

    fn attribute_value(&mut self) -> PResult<Expr> {
        let t = self.tok().clone();
        match &t.kind {
            TokKind::Str(..) | TokKind::Regex(_) | TokKind::Ident => self.atom(),
            TokKind::Number(n) => {
                self.bump();
                Ok(Expr::leaf(ExprKind::Name(n.to_string()), t.start, t.end))
            }
            _ => Err(self.unexpected("an attribute value")),
        }
    }

    // ----- expressions -----

    fn check_height(&self, e: &Expr) -> PResult<()> {
        if e.height > max_height(self.limits) {
            Err(self.limit(LimitKind::NestingDepth, e.start, e.end))
        } else {
            Ok(())
        }
    }

    fn node(&self, kind: ExprKind, start: usize, end: usize, height: usize) -> PResult<Expr> {
        let e = Expr {
            kind,
            start,
            end,
            height,
        };
        self.check_height(&e)?;
        Ok(e)
    }

    /// `seq (-> alias)? ('|' seq (-> alias)?)*`.
    fn alternatives(&mut self) -> PResult<Expr> {
        let start = self.tok().start;
        let mut alts = Vec::new();
        loop {
            alts.push(self.sequence()?);
            self.skip_soft_newlines();
            if self.kind() == &TokKind::Arrow {
                // Lark tree-shaping alias: no effect on the language.
                self.bump();
                self.expect(&TokKind::Ident, "an alias name")?;
                self.skip_soft_newlines();
            }
            if self.kind() == &TokKind::Pipe {
                self.bump();
            } else {
                break;
            }
        }
        if alts.len() == 1 {
            if let Some(e) = alts.pop() {
                return Ok(e);
            }
        }
        let end = alts.last().map_or(start, |e| e.end);
        let height = 1 + alts.iter().map(|e| e.height).max().unwrap_or(0);
        self.node(ExprKind::Alt(alts), start, end, height)
    }

    fn sequence(&mut self) -> PResult<Expr> {
        self.skip_soft_newlines();
        let start = self.tok().start;
        let mut items = Vec::new();
        loop {
            self.skip_soft_newlines();
            match self.kind() {
                TokKind::Pipe
                | TokKind::RParen
                | TokKind::RBracket
                | TokKind::Newline
                | TokKind::Eof
                | TokKind::Arrow => break,
                _ => items.push(self.postfix()?),
            }
        }
        if items.len() == 1 {
            if let Some(e) = items.pop() {
                return Ok(e);
            }
        }
        let end = items.last().map_or(start, |e| e.end);
        let height = 1 + items.iter().map(|e| e.height).max().unwrap_or(0);
        self.node(ExprKind::Seq(items), start, end, height)
    }

    fn count(&mut self) -> PResult<(u32, usize, usize)> {
        let t = self.tok().clone();
        match t.kind {
            TokKind::Number(n) => {
                self.bump();
                match u32::try_from(n) {
                    Ok(n) if n <= self.limits.max_repeat => Ok((n, t.start, t.end)),
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

    fn postfix(&mut self) -> PResult<Expr> {
        let mut e = self.atom()?;
        loop {
            let t = self.tok().clone();
            let (min, max, end) = match t.kind {
                TokKind::Question => {
                    self.bump();
                    (0, Some(1), t.end)
                }
                TokKind::Star => {
                    self.bump();
                    (0, None, t.end)
                }
                TokKind::Plus => {
                    self.bump();
                    (1, None, t.end)
                }
                TokKind::Tilde => {
                    // Lark: `x ~ n` or `x ~ n..m`.
                    self.bump();
                    let (m, _, m_end) = self.count()?;
                    if self.kind() == &TokKind::DotDot {
                        self.bump();
                        let (n, _, n_end) = self.count()?;
                        self.check_range(m, n, t.start, n_end)?;
                        (m, Some(n), n_end)
                    } else {
                        (m, Some(m), m_end)
                    }
                }
                TokKind::LBrace => {
                    // `x{m}`, `x{m,}`, `x{m,n}`.
                    self.bump();
                    let (m, _, _) = self.count()?;
                    let mut max = Some(m);
                    if self.kind() == &TokKind::Comma {
                        self.bump();
                        max = None;
                        if self.kind() != &TokKind::RBrace {
                            let (n, _, n_end) = self.count()?;
                            self.check_range(m, n, t.start, n_end)?;
                            max = Some(n);
                        }
                    }
                    let close = self.expect(&TokKind::RBrace, "`}`")?;
                    (m, max, close.end)
                }
                _ => return Ok(e),
            };
            let start = e.start;
            let height = e.height + 1;
            e = self.node(ExprKind::Repeat(Box::new(e), min, max), start, end, height)?;
        }
    }

    fn check_range(&self, m: u32, n: u32, start: usize, end: usize) -> PResult<()> {
        if m > n {
            Err(self
                .lines
                .syntax(start, end, format!("repeat range {m}..{n} is empty")))
        } else {
            Ok(())
        }
    }

    fn group(&mut self, close: TokKind, what: &str) -> PResult<Expr> {
        let open = self.bump();
        if self.depth >= self.limits.max_nesting_depth {
            return Err(self.limit(LimitKind::NestingDepth, open.start, open.end));
        }
        self.depth += 1;
        let inner = self.alternatives();
        self.depth -= 1;
        let mut inner = inner?;
        self.skip_soft_newlines();
        let close = self.expect(&close, what)?;
        // The group's range includes its delimiters (used for helper spans).
        inner.start = open.start;
        inner.end = close.end;
        Ok(inner)
    }

    fn atom(&mut self) -> PResult<Expr> {
        let t = self.tok().clone();
        match t.kind {
            TokKind::LParen => {
                // Nested depth is tracked in `group`; newlines inside are insignificant.
                self.group(TokKind::RParen, "`)`")
            }
            TokKind::LBracket => {
                let inner = self.group(TokKind::RBracket, "`]`")?;
                let (start, end) = (inner.start, inner.end);
                let height = inner.height + 1;
                self.node(
                    ExprKind::Repeat(Box::new(inner), 0, Some(1)),
                    start,
                    end,
                    height,
                )
            }
            TokKind::Str(value, ci) => {
                self.bump();
                if self.kind() != &TokKind::DotDot {
                    return Ok(Expr::leaf(ExprKind::Str(value, ci), t.start, t.end));
                }
                self.bump();
                let hi_tok = self.tok().clone();
                let TokKind::Str(hi, _) = hi_tok.kind else {
                    return Err(self.unexpected("a string after `..`"));
                };
                self.bump();
                let single = |s: &str| {
                    let mut it = s.chars();
                    match (it.next(), it.next()) {
                        (Some(c), None) => Some(c),
                        _ => None,
                    }
                };
                match (single(&value), single(&hi)) {
                    (Some(a), Some(b)) if a <= b => {
                        Ok(Expr::leaf(ExprKind::Range(a, b), t.start, hi_tok.end))
                    }
                    (Some(_), Some(_)) => {
                        Err(self.lines.syntax(t.start, hi_tok.end, "empty character range"))
                    }
                    _ => Err(self.lines.syntax(
                        t.start,
                        hi_tok.end,
                        "a range needs single-character strings",
                    )),
                }
            }
            TokKind::Regex(lit) => {
                self.bump();
                if let Err(err) = crate::regex::check_pattern(&lit.pattern, lit.flags) {
                    let at = |i: usize| {
                        let last = lit.offsets.last().copied().unwrap_or(t.start);
                        lit.offsets.get(i).copied().unwrap_or(last)
                    };
                    let start = at(err.start);
                    let end = at(err.end).max(start);
                    return Err(self.lines.error(
                        GrammarErrorKind::InvalidRegex,
                        start,
                        end,
                        err.message,
                    ));
                }
                Ok(Expr::leaf(ExprKind::Regex(lit), t.start, t.end))
            }
            TokKind::Special => {
                self.bump();
                let text = self.text(&t).to_string();
                Ok(Expr::leaf(ExprKind::Special(text), t.start, t.end))
            }
            TokKind::Ident => {
                self.bump();
                let text = self.text(&t);
                if !text.bytes().any(|b| b.is_ascii_alphabetic()) {
                    return Err(self.lines.syntax(t.start, t.end, "a name needs a letter"));
                }
                Ok(Expr::leaf(ExprKind::Name(text.to_string()), t.start, t.end))
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
