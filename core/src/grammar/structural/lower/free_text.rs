//! Free text in structural tags: `triggered_tags`, `any_text` and `any_tokens` lower to
//! free text with stops (`(text stop_k after_k)*` then final text).

use super::*;

impl Lowerer<'_, '_> {
    /// Free text with stops: `(text stop_k after_k)*` then final text, as `t` says. With a
    /// follow, the follow literals are stops too, and the final text must end with one.
    pub(super) fn triggered(
        &mut self,
        nt: u32,
        t: Triggered,
        follow: Option<usize>,
        ptr: &str,
    ) -> Result<(), GrammarError> {
        let Triggered {
            stops,
            rule,
            interleave,
            at_least_one,
            stop_after_first,
        } = t;
        let follow_lits: Vec<Lit> = follow
            .and_then(|f| self.follows.get(f).cloned())
            .unwrap_or_default();
        let text = self.free_text(rule, &stops, &follow_lits, &interleave, ptr)?;
        let end = self.text_end(&text, nt, follow, &follow_lits, ptr)?;
        // seg → text stop_k after_k; first → stop_k after_k (no leading text).
        let mut seg_alts = Vec::new();
        let mut first_alts = Vec::new();
        for (l, after) in &stops {
            if after.is_empty() {
                continue;
            }
            let a = self.nt_alts("tag_rest", after.clone(), ptr)?;
            let mut seg = self.text_then(&text, l, ptr)?;
            seg.push(IrSymbol::Nonterminal(a));
            seg_alts.push(seg);
            let mut first = self.pieces(&l.pieces, ptr)?;
            first.push(IrSymbol::Nonterminal(a));
            first_alts.push(first);
        }
        if seg_alts.is_empty() {
            if at_least_one {
                return Err(err_syntax(ptr, "at_least_one with no tags"));
            }
            return self.rule(nt, vec![IrSymbol::Nonterminal(end)], ptr);
        }
        let seg = self.nt_alts("segment", seg_alts, ptr)?;
        let first = self.nt_alts("first_tag", first_alts, ptr)?;
        let f = self.follow_syms(follow, ptr)?;
        let end = IrSymbol::Nonterminal(end);
        match (at_least_one, stop_after_first) {
            (false, false) => {
                let segs = self.segments(seg, ptr)?;
                self.rule(nt, vec![IrSymbol::Nonterminal(segs), end], ptr)
            }
            (false, true) => {
                self.rule(nt, vec![end], ptr)?;
                let mut rhs = vec![IrSymbol::Nonterminal(seg)];
                rhs.extend(f);
                self.rule(nt, rhs, ptr)
            }
            (true, false) => {
                let segs = self.segments(seg, ptr)?;
                let rhs = vec![
                    IrSymbol::Nonterminal(first),
                    IrSymbol::Nonterminal(segs),
                    end,
                ];
                self.rule(nt, rhs, ptr)
            }
            (true, true) => {
                let mut rhs = vec![IrSymbol::Nonterminal(first)];
                rhs.extend(f);
                self.rule(nt, rhs, ptr)
            }
        }
    }

    /// `segs → ε | segs seg`.
    fn segments(&mut self, seg: u32, ptr: &str) -> Result<u32, GrammarError> {
        let segs = self.nt("segments", ptr)?;
        self.rule(segs, Vec::new(), ptr)?;
        self.rule(
            segs,
            vec![IrSymbol::Nonterminal(segs), IrSymbol::Nonterminal(seg)],
            ptr,
        )?;
        Ok(segs)
    }

    /// The free text of a triggered format: what it must not contain (every stop and
    /// follow literal; a control token's spelling as text is not free text either), and,
    /// when special tokens may interleave, `(text S)*` before each piece of it.
    fn free_text(
        &mut self,
        mut rule: TextRule,
        stops: &[(Lit, After)],
        follow_lits: &[Lit],
        interleave: &[u32],
        ptr: &str,
    ) -> Result<FreeText, GrammarError> {
        let all: Vec<&Lit> = stops
            .iter()
            .map(|(l, _)| l)
            .chain(follow_lits.iter().filter(|l| !l.is_empty()))
            .collect();
        let mut text_stops: Vec<Vec<u8>> = Vec::new();
        for l in &all {
            match l.pieces.as_slice() {
                [Piece::Text(t)] => text_stops.push(t.clone()),
                _ => rule.excludes.push(l.raw.clone()),
            }
        }
        rule.excludes.retain(|x| !x.is_empty());
        let inter = if interleave.is_empty() {
            None
        } else {
            let chunk_rule = TextRule {
                max_chars: None,
                ..rule.clone()
            };
            let chunk = self.lexeme(
                format!("text@{ptr}"),
                text::final_text(&chunk_rule, &text_stops),
                ptr,
            )?;
            let s = self.specials_lexeme(interleave, ptr)?;
            let star = self.nt("text_star", ptr)?;
            self.rule(star, Vec::new(), ptr)?;
            self.rule(
                star,
                vec![
                    IrSymbol::Nonterminal(star),
                    IrSymbol::Lexeme(chunk),
                    IrSymbol::Lexeme(s),
                ],
                ptr,
            )?;
            Some(IrSymbol::Nonterminal(star))
        };
        Ok(FreeText {
            rule,
            text_stops,
            inter,
        })
    }

    /// Free text then stop `l`.
    fn text_then(
        &mut self,
        text: &FreeText,
        l: &Lit,
        ptr: &str,
    ) -> Result<Vec<IrSymbol>, GrammarError> {
        let (rule, stops) = (&text.rule, &text.text_stops);
        let mut rhs: Vec<IrSymbol> = text.inter.into_iter().collect();
        match l.pieces.split_first() {
            Some((Piece::Text(t), [])) => {
                let lx = self.lexeme(
                    format!("text+{}", text::show(t)),
                    text::until(rule, stops, t),
                    ptr,
                )?;
                rhs.push(IrSymbol::Lexeme(lx));
            }
            Some((Piece::Text(t), rest)) => {
                let lx = self.lexeme(
                    format!("text+{}", text::show(t)),
                    text::before_special(rule, stops, t),
                    ptr,
                )?;
                rhs.push(IrSymbol::Lexeme(lx));
                rhs.extend(self.pieces(rest, ptr)?);
            }
            _ => {
                let lx = self.lexeme(
                    format!("text@{ptr}"),
                    text::before_special(rule, stops, &[]),
                    ptr,
                )?;
                rhs.push(IrSymbol::Lexeme(lx));
                rhs.extend(self.pieces(&l.pieces, ptr)?);
            }
        }
        Ok(rhs)
    }

    /// The end of a triggered format's text: final text (where nothing, or an empty
    /// literal, follows), or text then a follow literal.
    fn text_end(
        &mut self,
        text: &FreeText,
        nt: u32,
        follow: Option<usize>,
        follow_lits: &[Lit],
        ptr: &str,
    ) -> Result<u32, GrammarError> {
        let final_allowed = follow.is_none() || follow_lits.iter().any(Lit::is_empty);
        let mut end_alts: Vec<Vec<IrSymbol>> = Vec::new();
        if final_allowed && follow.is_none() && self.open.contains(&nt) {
            return Err(err_unsupported(
                ptr,
                "free text followed by a format that does not start with a literal (a \
                 json_schema, regex, grammar, or the text itself repeated): sieve's lexer takes \
                 the longest match and could not end the text there, so masks would allow dead \
                 ends; put a const_string or a tag after the text",
            ));
        }
        if final_allowed {
            let mut rhs: Vec<IrSymbol> = text.inter.into_iter().collect();
            let lx = self.lexeme(
                format!("text@{ptr}"),
                text::final_text(&text.rule, &text.text_stops),
                ptr,
            )?;
            rhs.push(IrSymbol::Lexeme(lx));
            end_alts.push(rhs);
        }
        // Plain-text follow literals share one lexeme (nothing after them depends on which).
        let text_ends: Vec<Vec<u8>> = follow_lits
            .iter()
            .filter_map(|l| match (l.pieces.as_slice(), l.then) {
                ([Piece::Text(t)], None) => Some(t.clone()),
                _ => None,
            })
            .collect();
        if !text_ends.is_empty() {
            let mut rhs: Vec<IrSymbol> = text.inter.into_iter().collect();
            let lx = self.lexeme(
                format!("text@{ptr}"),
                text::until_any(&text.rule, &text.text_stops, &text_ends),
                ptr,
            )?;
            rhs.push(IrSymbol::Lexeme(lx));
            end_alts.push(rhs);
        }
        for l in follow_lits.iter().filter(|l| !l.is_empty()) {
            if !matches!((l.pieces.as_slice(), l.then), ([Piece::Text(_)], None)) {
                let mut rhs = self.text_then(text, l, ptr)?;
                rhs.extend(l.then.map(IrSymbol::Nonterminal));
                end_alts.push(rhs);
            }
        }
        self.nt_alts("text_end", end_alts, ptr)
    }
}

/// A triggered format's free text (see [`Lowerer::free_text`]).
struct FreeText {
    rule: TextRule,
    /// The plain-text stops (the text ends before any of them).
    text_stops: Vec<Vec<u8>>,
    /// `(text S)*` when special tokens may interleave.
    inter: Option<IrSymbol>,
}
