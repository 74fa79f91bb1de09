//! Parsed GBNF → checks (undefined rules, the start rule, llama.cpp's left-recursion test)
//! → IR through the shared [`Builder`].
//!
//! Each character of a string literal is its own one-code-point lexeme and each class one
//! one-code-point class lexeme, so the IR is exact at the character level whatever the
//! lexer's greedy ending does; [`crate::ir::regular::lexify`] merges regular parts back.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::mem::size_of;

use super::parser::{Atom, Item, Parsed, Range, TokenRef};
use crate::error::{GrammarError, GrammarErrorKind, Span};
use crate::grammar::lark::span::LineIndex;
use crate::ir::builder::{BResult, Builder, SpecialTokens};
use crate::ir::{GrammarIr, IrSymbol};
use crate::limits::{CompileBudget, Limits};

/// The definitions that count and who owns each group.
pub(super) struct Resolved {
    /// Per name: its last definition (index into [`Parsed::defs`]).
    final_def: Vec<Option<usize>>,
    /// Per group: the definition it belongs to.
    owner: Vec<usize>,
    /// The start rule's name index.
    root: u32,
}

fn zero_span(lines: &LineIndex<'_>) -> Span {
    lines.span(0, 0)
}

/// Undefined rules, an empty grammar, the start rule.
pub(super) fn resolve(
    p: &Parsed,
    lines: &LineIndex<'_>,
    root: &str,
    budget: &mut CompileBudget,
) -> BResult<Resolved> {
    budget
        .charge_for::<usize>(
            p.names
                .len()
                .saturating_add(p.groups.len())
                .saturating_mul(2),
        )
        .map_err(|k| GrammarError::limit(k).with_span(zero_span(lines)))?;
    let mut final_def = vec![None; p.names.len()];
    let mut owner = vec![0usize; p.groups.len()];
    let mut next = 0usize;
    for (d, def) in p.defs.iter().enumerate() {
        if let Some(slot) = final_def.get_mut(def.name as usize) {
            *slot = Some(d);
        }
        let body = def.body as usize;
        while next <= body && next < owner.len() {
            owner[next] = d;
            next += 1;
        }
    }
    // llama.cpp reports the first undefined reference of its rule table; the first in the
    // source here.
    let undefined = (0..p.names.len())
        .filter(|&n| final_def[n].is_none())
        .filter_map(|n| p.first_ref.get(n).copied().flatten().map(|r| (r, n)))
        .min();
    if let Some(((start, end), n)) = undefined {
        return Err(lines.error(
            GrammarErrorKind::UndefinedSymbol,
            start,
            end,
            format!("undefined rule identifier '{}'", p.names[n]),
        ));
    }
    if p.defs.is_empty() {
        return Err(GrammarError::new(
            GrammarErrorKind::Syntax,
            "empty grammar: no rule is defined",
        )
        .with_span(zero_span(lines)));
    }
    let found = p
        .names
        .iter()
        .position(|n| n == root)
        .filter(|&n| final_def[n].is_some());
    let Some(found) = found else {
        return Err(GrammarError::new(
            GrammarErrorKind::UndefinedSymbol,
            format!("grammar does not contain a '{root}' symbol"),
        )
        .with_span(zero_span(lines)));
    };
    Ok(Resolved {
        final_def,
        owner,
        root: found as u32,
    })
}

/// An element of llama.cpp's rule tables, as the left-recursion test sees it.
#[derive(Clone, Copy)]
enum El {
    /// A rule reference (a node of the graph) and where it is written.
    Ref(u32, Range),
    /// A character or token element.
    Term,
}

/// llama.cpp's `llama_grammar_detect_left_recursion` on the rule tables llama.cpp builds:
/// every definition's rule (a later definition replaces an earlier one), every group's and
/// every repetition's generated rule (those of replaced definitions included). A rule "may be
/// empty" when one of its alternatives has no element at all (not when it derives ε), and
/// the test follows the leftmost references of each alternative past those that may be
/// empty. Refused: a cycle among those references.
///
/// The generated rules are modelled with the same leftmost references: `S{m,n}` puts `S`
/// once (copies after the first add no new leftmost reference) and at most two of the
/// `n - m` tail rules (the chain has no cycle of its own).
pub(super) fn check_left_recursion(
    p: &Parsed,
    r: &Resolved,
    lines: &LineIndex<'_>,
    budget: &mut CompileBudget,
) -> BResult<()> {
    let names = p.names.len() as u32;
    // Nodes: names, then groups, then generated repetition rules.
    let mut alts: Vec<Vec<Vec<El>>> = Vec::new();
    let mut owner_name: Vec<u32> = Vec::new();
    let total = p.names.len().saturating_add(p.groups.len());
    budget
        .charge_for::<Vec<Vec<El>>>(total.saturating_mul(2))
        .map_err(|k| GrammarError::limit(k).with_span(zero_span(lines)))?;
    alts.resize_with(total, Vec::new);
    owner_name.extend(0..names);
    for &d in &r.owner {
        owner_name.push(p.defs.get(d).map_or(0, |def| def.name));
    }
    for (g, group) in p.groups.iter().enumerate() {
        let d = r.owner.get(g).copied().unwrap_or(0);
        let Some(def) = p.defs.get(d) else { continue };
        // A replaced definition's own rule is gone (its generated rules stay).
        let node = if def.body as usize != g {
            Some(names + g as u32)
        } else if r.final_def.get(def.name as usize).copied().flatten() == Some(d) {
            Some(def.name)
        } else {
            None
        };
        let mut node_alts = Vec::with_capacity(group.alts.len());
        for alt in &group.alts {
            let mut els = Vec::new();
            for item in alt {
                let item_els = item_elements(item, names, def.name, &mut alts, &mut owner_name);
                els.extend(item_els);
            }
            budget
                .charge_for::<El>(els.len().saturating_mul(2).saturating_add(8))
                .map_err(|k| GrammarError::limit(k).with_span(zero_span(lines)))?;
            node_alts.push(els);
        }
        if let Some(slot) = node.and_then(|n| alts.get_mut(n as usize)) {
            *slot = node_alts;
        }
    }
    let may_be_empty: Vec<bool> = alts
        .iter()
        .map(|a| a.iter().any(|alt| alt.is_empty()))
        .collect();
    let mut edges: Vec<Vec<(u32, Range)>> = Vec::with_capacity(alts.len());
    for node_alts in &alts {
        let mut out = Vec::new();
        for alt in node_alts {
            for el in alt {
                match *el {
                    El::Term => break,
                    El::Ref(t, range) => {
                        out.push((t, range));
                        if !may_be_empty.get(t as usize).copied().unwrap_or(false) {
                            break;
                        }
                    }
                }
            }
        }
        edges.push(out);
    }
    // Iterative DFS: 0 new, 1 on the stack, 2 done.
    let mut color = vec![0u8; edges.len()];
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for s in 0..edges.len() {
        if color[s] != 0 {
            continue;
        }
        color[s] = 1;
        stack.push((s, 0));
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            let Some(&(t, range)) = edges[node].get(*next) else {
                color[node] = 2;
                stack.pop();
                continue;
            };
            *next += 1;
            match color.get(t as usize).copied() {
                Some(0) => {
                    color[t as usize] = 1;
                    stack.push((t as usize, 0));
                }
                Some(1) => {
                    let name = owner_name.get(t as usize).copied().unwrap_or(0);
                    return Err(lines.error(
                        GrammarErrorKind::Unsupported,
                        range.0,
                        range.1,
                        format!(
                            "left recursion detected in rule '{}' (llama.cpp refuses it; \
                             allow_left_recursion accepts it)",
                            p.names.get(name as usize).map_or("", String::as_str)
                        ),
                    ));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// The leading elements `item` puts in llama.cpp's rule, adding the rules its repetitions
/// generate.
fn item_elements(
    item: &Item,
    names: u32,
    owner: u32,
    alts: &mut Vec<Vec<Vec<El>>>,
    owner_name: &mut Vec<u32>,
) -> Vec<El> {
    let mut s = match &item.atom {
        Atom::Chars(c) if c.is_empty() => Vec::new(),
        Atom::Class(r, _) if r.is_empty() => Vec::new(),
        Atom::Chars(_) | Atom::Class(..) | Atom::Any | Atom::Token(..) => vec![El::Term],
        Atom::Ref(n) => vec![El::Ref(*n, item.range)],
        Atom::Group(g) => vec![El::Ref(names + g, item.range)],
    };
    for rep in &item.reps {
        let n_opt = match rep.max {
            None => 1,
            Some(m) => m.saturating_sub(rep.min),
        };
        let mut out = if rep.min == 0 { Vec::new() } else { s.clone() };
        if n_opt > 0 {
            let first = alts.len() as u32;
            let top = if rep.max.is_none() {
                let mut rec = s.clone();
                rec.push(El::Ref(first, item.range));
                alts.push(vec![rec, Vec::new()]);
                owner_name.push(owner);
                first
            } else {
                alts.push(vec![s.clone(), Vec::new()]);
                owner_name.push(owner);
                if n_opt >= 2 {
                    let mut rec = s.clone();
                    rec.push(El::Ref(first, item.range));
                    alts.push(vec![rec, Vec::new()]);
                    owner_name.push(owner);
                    first + 1
                } else {
                    first
                }
            };
            out.push(El::Ref(top, item.range));
        }
        s = out;
    }
    s
}

/// Code points as `char` ranges: reversed ranges, surrogates, values past U+10FFFF and
/// U+0000 (which llama.cpp never matches: it ends its token strings) dropped.
fn clip(ranges: &[(u32, u32)]) -> Vec<(char, char)> {
    let mut out = Vec::new();
    for &(lo, hi) in ranges {
        for (a, b) in [(1, 0xD7FF), (0xE000, 0x10FFFF)] {
            let (l, h) = (lo.max(a), hi.min(b));
            if l <= h
                && let (Some(l), Some(h)) = (char::from_u32(l), char::from_u32(h))
            {
                out.push((l, h));
            }
        }
    }
    out
}

/// Lowers the parsed grammar through the builder.
pub(super) struct Lower<'a, 'b, 's> {
    p: &'a Parsed,
    r: &'a Resolved,
    lines: &'a LineIndex<'s>,
    specials: &'a dyn SpecialTokens,
    b: Builder<'b>,
    /// Per name: its nonterminal.
    nts: Vec<u32>,
    /// Per group: its symbols once lowered (taken by the one item that uses it).
    lowered: Vec<Vec<IrSymbol>>,
}

impl<'a, 'b, 's> Lower<'a, 'b, 's> {
    pub(super) fn new(
        p: &'a Parsed,
        r: &'a Resolved,
        lines: &'a LineIndex<'s>,
        specials: &'a dyn SpecialTokens,
        limits: &'b Limits,
        budget: &'b mut CompileBudget,
    ) -> Self {
        Lower {
            p,
            r,
            lines,
            specials,
            b: Builder::new(limits, budget),
            nts: Vec::new(),
            lowered: Vec::new(),
        }
    }

    fn span(&self, range: Range) -> Option<Span> {
        Some(self.lines.span(range.0, range.1))
    }

    pub(super) fn run(mut self) -> BResult<GrammarIr> {
        let p = self.p;
        let zero = self.span((0, 0));
        self.b.charge_bytes(
            size_of::<u32>()
                .saturating_mul(p.names.len())
                .saturating_add(size_of::<Vec<IrSymbol>>().saturating_mul(p.groups.len())),
            zero,
        )?;
        for n in 0..p.names.len() {
            let d = self.r.final_def.get(n).copied().flatten();
            let span = d
                .and_then(|d| p.defs.get(d))
                .and_then(|d| self.span(d.range));
            let id = self.b.nonterminal(&p.names[n], span)?;
            self.nts.push(id);
        }
        self.lowered.resize_with(p.groups.len(), Vec::new);
        for (g, group) in p.groups.iter().enumerate() {
            let d = self.r.owner.get(g).copied().unwrap_or(0);
            let Some(def) = p.defs.get(d) else { continue };
            if self.r.final_def.get(def.name as usize).copied().flatten() != Some(d) {
                continue;
            }
            let base = p.names.get(def.name as usize).map_or("", String::as_str);
            let span = self.span(group.range);
            let mut alts = Vec::with_capacity(group.alts.len());
            for alt in &group.alts {
                let mut seq = Vec::new();
                for item in alt {
                    let syms = self.item(item, base)?;
                    seq.extend(syms);
                }
                alts.push(seq);
            }
            if def.body as usize == g {
                let nt = self.nts.get(def.name as usize).copied().unwrap_or(0);
                for alt in alts {
                    self.b.rule(nt, alt, span)?;
                }
            } else {
                let syms = self.b.group(alts, base, span)?;
                if let Some(slot) = self.lowered.get_mut(g) {
                    *slot = syms;
                }
            }
        }
        let start = self.nts.get(self.r.root as usize).copied().unwrap_or(0);
        Ok(self.b.finish(start))
    }

    fn item(&mut self, item: &Item, base: &str) -> BResult<Vec<IrSymbol>> {
        let span = self.span(item.range);
        let mut syms = match &item.atom {
            Atom::Chars(cs) => {
                let mut out = Vec::with_capacity(cs.len());
                for &c in cs {
                    let l = match char::from_u32(c).filter(|&c| c != '\0') {
                        Some(c) => {
                            let mut buf = [0u8; 4];
                            self.b.literal(c.encode_utf8(&mut buf).as_bytes(), span)?
                        }
                        // Never matched by llama.cpp: a lexeme that matches nothing.
                        None => self.b.class(&[], false, span)?,
                    };
                    out.push(IrSymbol::Lexeme(l));
                }
                out
            }
            Atom::Class(ranges, _) if ranges.is_empty() => Vec::new(),
            Atom::Class(ranges, negated) => {
                let mut set = clip(ranges);
                if *negated {
                    set.push(('\0', '\0'));
                }
                vec![IrSymbol::Lexeme(self.b.class(&set, *negated, span)?)]
            }
            Atom::Any => vec![IrSymbol::Lexeme(self.any_char(span)?)],
            Atom::Token(t, false) => {
                let l = match t {
                    TokenRef::Id(id) => self.b.special_by_id(self.specials, *id, span)?,
                    TokenRef::Name(n) => self.b.special_by_name(self.specials, n, span)?,
                };
                let Some(l) = l else {
                    let what = match t {
                        TokenRef::Id(id) => format!(
                            "token id {id} is not a token of the vocabulary ({})",
                            crate::grammar::ID_TOKEN_MISS
                        ),
                        TokenRef::Name(n) => format!(
                            "{n} is not a special token of the vocabulary (sieve matches \
                             text tokens as text: write a string literal)"
                        ),
                    };
                    return Err(self.error(
                        GrammarErrorKind::UnknownSpecialToken,
                        item.range,
                        what,
                    ));
                };
                vec![IrSymbol::Lexeme(l)]
            }
            Atom::Token(t, true) => {
                let excluded = match t {
                    // A text token named by id is matched by id only: excluded exactly.
                    TokenRef::Id(id) => self
                        .b
                        .token_by_id(self.specials, *id, span)?
                        .into_iter()
                        .collect(),
                    TokenRef::Name(n) => self.specials.by_name(n),
                };
                let special = self.b.special_except(self.specials, &excluded, span)?;
                let any = self.any_char(span)?;
                let text = self.b.plus(vec![vec![IrSymbol::Lexeme(any)]], base, span)?;
                let mut alts = vec![text];
                if let Some(l) = special {
                    alts.push(vec![IrSymbol::Lexeme(l)]);
                }
                self.b.group(alts, base, span)?
            }
            Atom::Ref(n) => vec![IrSymbol::Nonterminal(
                self.nts.get(*n as usize).copied().unwrap_or(0),
            )],
            Atom::Group(g) => self
                .lowered
                .get_mut(*g as usize)
                .map(core::mem::take)
                .unwrap_or_default(),
        };
        for rep in &item.reps {
            let span = self.span((item.range.0, rep.range.1));
            // The parser checked both against `max_repeat` (a `u32`).
            let min = u32::try_from(rep.min).unwrap_or(u32::MAX);
            let max = rep.max.map(|m| u32::try_from(m).unwrap_or(u32::MAX));
            // `lexify` folds the doubling helpers into one `x{m,n}`.
            syms = self.b.repeat_doubling(vec![syms], min, max, base, span)?;
        }
        Ok(syms)
    }

    /// `.`: any code point but U+0000.
    fn any_char(&mut self, span: Option<Span>) -> BResult<u32> {
        self.b.class(&[('\0', '\0')], true, span)
    }

    fn error(&self, kind: GrammarErrorKind, range: Range, msg: String) -> GrammarError {
        self.lines.error(kind, range.0, range.1, msg)
    }
}
