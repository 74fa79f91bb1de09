//! Tags in structural tags: `tag`, `triggered_tags`, `token_triggered_tags`, `dispatch`
//! and `tags_with_separator`.

use super::*;

impl<'v> Lowerer<'_, 'v> {
    /// A tag's end literals (`end`: a string, a list of strings, or a token format).
    pub(super) fn ends(&mut self, v: &Value, ptr: &str) -> Result<Vec<Lit>, GrammarError> {
        let e = Self::field(v, "end", ptr)?;
        let eptr = child(ptr, "end");
        match e {
            Value::Array(a) => {
                if a.is_empty() {
                    return Err(err_syntax(&eptr, "must not be empty"));
                }
                let mut out = Vec::with_capacity(a.len());
                for (i, s) in a.iter().enumerate() {
                    let p = child(&eptr, i);
                    let s = s
                        .as_str()
                        .ok_or_else(|| err_syntax(&p, "must be a string"))?;
                    out.push(self.lit(s, &p)?);
                }
                Ok(out)
            }
            _ => Ok(vec![self.lit_value(e, &eptr)?]),
        }
    }

    /// The symbols of a tag after its `begin`: content with the ends as its follow, then the
    /// outer follow.
    pub(super) fn tag_body(
        &mut self,
        v: &'v Value,
        follow: Option<usize>,
        ptr: &str,
    ) -> Result<Vec<IrSymbol>, GrammarError> {
        let ends = self.ends(v, ptr)?;
        let f = self.add_follow(ends);
        let content = Self::field(v, "content", ptr)?;
        let c = self.sub(content, child(ptr, "content"), Some(f), false)?;
        let mut rhs = vec![IrSymbol::Nonterminal(c)];
        rhs.extend(self.follow_syms(follow, ptr)?);
        Ok(rhs)
    }

    pub(super) fn tag(
        &mut self,
        v: &'v Value,
        nt: u32,
        follow: Option<usize>,
        skip_begin: bool,
        ptr: &str,
    ) -> Result<(), GrammarError> {
        let mut rhs = Vec::new();
        if !skip_begin {
            let b = self.lit_value(Self::field(v, "begin", ptr)?, &child(ptr, "begin"))?;
            rhs = self.pieces(&b.pieces, ptr)?;
        }
        rhs.extend(self.tag_body(v, follow, ptr)?);
        self.rule(nt, rhs, ptr)
    }

    /// The tags of a `tags` field: `(begin, tag value, pointer)`.
    pub(super) fn tag_list(
        &mut self,
        v: &'v Value,
        ptr: &str,
    ) -> Result<Vec<Led<'v>>, GrammarError> {
        let tags = Self::array_field(v, "tags", ptr, true)?;
        let mut out = Vec::with_capacity(tags.len());
        for (i, t) in tags.iter().enumerate() {
            let p = child(&child(ptr, "tags"), i);
            match t.get("type").and_then(Value::as_str) {
                None | Some("tag") => {}
                Some(_) => return Err(err_syntax(&p, "must be a tag format")),
            }
            if !t.is_object() {
                return Err(err_syntax(&p, "must be a tag format"));
            }
            let b = self.lit_value(Self::field(t, "begin", &p)?, &child(&p, "begin"))?;
            out.push((b, t, p));
        }
        Ok(out)
    }

    /// For each trigger, the tags it starts: their bodies after the trigger.
    pub(super) fn group_tags(
        &mut self,
        triggers: Vec<Lit>,
        tags: Vec<Led<'v>>,
    ) -> Result<Vec<(Lit, After)>, GrammarError> {
        let mut alts: Vec<Vec<Vec<IrSymbol>>> = triggers.iter().map(|_| Vec::new()).collect();
        for (begin, t, p) in tags {
            // Free text stops at the first trigger to occur: when a begin starts with
            // several, the shortest one fires (the rest of the begin follows it).
            let mut found: Option<(usize, Vec<Piece>)> = None;
            for (k, trig) in triggers.iter().enumerate() {
                if let Some(rest) = strip_lit(&begin.pieces, &trig.pieces)
                    && found.as_ref().is_none_or(|(j, _)| {
                        triggers
                            .get(*j)
                            .is_some_and(|tj| trig.raw.len() < tj.raw.len())
                    })
                {
                    found = Some((k, rest));
                }
            }
            let Some((k, rest)) = found else {
                return Err(err_syntax(
                    &child(&p, "begin"),
                    &format!(
                        "the tag begin {} starts with no trigger (control tokens count as one unit)",
                        text::show(&begin.raw)
                    ),
                ));
            };
            let mut rhs = self.pieces(&rest, &p)?;
            rhs.extend(self.tag_body(t, None, &p)?);
            if let Some(a) = alts.get_mut(k) {
                a.push(rhs);
            }
        }
        // A trigger that starts no tag can never be completed: it is excluded from free
        // text (a stop with no alternatives after it).
        Ok(triggers.into_iter().zip(alts).collect())
    }

    pub(super) fn triggered_tags(
        &mut self,
        v: &'v Value,
        nt: u32,
        follow: Option<usize>,
        ptr: &str,
    ) -> Result<(), GrammarError> {
        let triggers = self.strings(v, "triggers", ptr)?;
        for (i, t) in triggers.iter().enumerate() {
            if t.is_empty() {
                return Err(err_syntax(
                    &child(&child(ptr, "triggers"), i),
                    "a trigger must not be empty",
                ));
            }
        }
        let tags = self.tag_list(v, ptr)?;
        let stops = self.group_tags(triggers, tags)?;
        let mut rule = TextRule::default();
        for x in self.strings(v, "excludes", ptr)? {
            rule.excludes.push(x.raw);
        }
        let t = Triggered {
            stops,
            rule,
            interleave: Vec::new(),
            at_least_one: Self::bool_field(v, "at_least_one", false, ptr)?,
            stop_after_first: Self::bool_field(v, "stop_after_first", false, ptr)?,
        };
        self.triggered(nt, t, follow, ptr)
    }

    pub(super) fn token_triggered_tags(
        &mut self,
        v: &'v Value,
        nt: u32,
        follow: Option<usize>,
        ptr: &str,
    ) -> Result<(), GrammarError> {
        let arr = Self::array_field(v, "trigger_tokens", ptr, true)?;
        let mut triggers = Vec::with_capacity(arr.len());
        let mut trigger_ids = Vec::new();
        for (i, t) in arr.iter().enumerate() {
            let ids = self.token_ids(t, &child(&child(ptr, "trigger_tokens"), i))?;
            trigger_ids.extend(ids.iter().copied());
            triggers.push(Lit {
                raw: self
                    .vocab
                    .token_text(ids.first().copied().unwrap_or(0))
                    .to_vec(),
                pieces: vec![Piece::Special(ids)],
                then: None,
            });
        }
        let tags = self.tag_list(v, ptr)?;
        // A begin's first token is a trigger's when they share an id (a trigger given by id
        // and a begin by name): it is spelled as the trigger for the prefix match.
        let mut tags = tags;
        for (b, _, _) in &mut tags {
            let Some(Piece::Special(bids)) = b.pieces.first_mut() else {
                continue;
            };
            let shared = triggers.iter().find_map(|tr| match tr.pieces.first() {
                Some(Piece::Special(tids)) if tids.iter().any(|id| bids.contains(id)) => {
                    Some(tids.clone())
                }
                _ => None,
            });
            if let Some(tids) = shared {
                *bids = tids;
            }
        }
        let stops = self.group_tags(triggers, tags)?;
        let mut excluded = self.token_list(v, "exclude_tokens", ptr)?;
        excluded.extend(trigger_ids);
        excluded.extend(self.follow_specials(follow));
        let t = Triggered {
            stops,
            rule: TextRule::default(),
            interleave: self.interleave(&excluded),
            at_least_one: Self::bool_field(v, "at_least_one", false, ptr)?,
            stop_after_first: Self::bool_field(v, "stop_after_first", false, ptr)?,
        };
        self.triggered(nt, t, follow, ptr)
    }

    pub(super) fn dispatch(
        &mut self,
        v: &'v Value,
        tokens: bool,
        nt: u32,
        follow: Option<usize>,
        ptr: &str,
    ) -> Result<(), GrammarError> {
        let rules = Self::array_field(v, "rules", ptr, true)?;
        let rptr = child(ptr, "rules");
        let mut stops: Vec<(Lit, After)> = Vec::with_capacity(rules.len());
        let mut ids = Vec::new();
        // A dispatched format is followed by free text (looping) or what follows this one.
        let format_open =
            Self::bool_field(v, "loop", true, ptr)? || follow.is_some() || self.open.contains(&nt);
        for (i, r) in rules.iter().enumerate() {
            let p = child(&rptr, i);
            let (Some(key), Some(format)) = (r.get(0), r.get(1)) else {
                return Err(err_syntax(&p, "a rule must be a [pattern, format] pair"));
            };
            let lit = if tokens {
                let t = self.token_ids(key, &child(&p, 0))?;
                ids.extend(t.iter().copied());
                Lit {
                    raw: self
                        .vocab
                        .token_text(t.first().copied().unwrap_or(0))
                        .to_vec(),
                    pieces: vec![Piece::Special(t)],
                    then: None,
                }
            } else {
                let s = key
                    .as_str()
                    .ok_or_else(|| err_syntax(&child(&p, 0), "must be a string"))?;
                let lit = self.lit(s, &child(&p, 0))?;
                if lit.is_empty() {
                    return Err(err_syntax(&child(&p, 0), "a pattern must not be empty"));
                }
                lit
            };
            let c = self.sub(format, child(&p, 1), None, false)?;
            self.mark_open(c, format_open);
            let alt = vec![IrSymbol::Nonterminal(c)];
            match stops.iter_mut().find(|(l, _)| l.pieces == lit.pieces) {
                Some((_, a)) => a.push(alt),
                None => stops.push((lit, vec![alt])),
            }
        }
        let looping = Self::bool_field(v, "loop", true, ptr)?;
        let (rule, interleave) = if tokens {
            let mut excluded = self.token_list(v, "exclude_tokens", ptr)?;
            excluded.extend(ids);
            excluded.extend(self.follow_specials(follow));
            (TextRule::default(), self.interleave(&excluded))
        } else {
            let mut rule = TextRule::default();
            for x in self.strings(v, "excludes", ptr)? {
                rule.excludes.push(x.raw);
            }
            (rule, Vec::new())
        };
        let t = Triggered {
            stops,
            rule,
            interleave,
            at_least_one: false,
            stop_after_first: !looping,
        };
        self.triggered(nt, t, follow, ptr)
    }

    pub(super) fn tags_with_separator(
        &mut self,
        v: &'v Value,
        nt: u32,
        follow: Option<usize>,
        ptr: &str,
    ) -> Result<(), GrammarError> {
        let tags = self.tag_list(v, ptr)?;
        let sep = Self::str_field(v, "separator", ptr)?;
        let sep = self.lit(sep, &child(ptr, "separator"))?;
        let sep = self.pieces(&sep.pieces, ptr)?;
        let at_least_one = Self::bool_field(v, "at_least_one", false, ptr)?;
        let stop_after_first = Self::bool_field(v, "stop_after_first", false, ptr)?;
        let mut alts = Vec::with_capacity(tags.len());
        for (begin, t, p) in tags {
            let mut rhs = self.pieces(&begin.pieces, &p)?;
            rhs.extend(self.tag_body(t, None, &p)?);
            alts.push(rhs);
        }
        let one = self.nt_alts("tag", alts, ptr)?;
        let f = self.follow_syms(follow, ptr)?;
        let body = if stop_after_first {
            one
        } else {
            // list → tag | list SEP tag
            let list = self.nt("tags", ptr)?;
            self.rule(list, vec![IrSymbol::Nonterminal(one)], ptr)?;
            let mut r = vec![IrSymbol::Nonterminal(list)];
            r.extend(sep);
            r.push(IrSymbol::Nonterminal(one));
            self.rule(list, r, ptr)?;
            list
        };
        let mut rhs = vec![IrSymbol::Nonterminal(body)];
        rhs.extend(f.iter().copied());
        self.rule(nt, rhs, ptr)?;
        if !at_least_one {
            self.rule(nt, f, ptr)?;
        }
        Ok(())
    }
}

/// `begin` without the prefix `trigger` (piece by piece; the trigger's last text piece may
/// be a prefix of the begin's piece there), or `None` when `trigger` is no prefix.
fn strip_lit(begin: &[Piece], trigger: &[Piece]) -> Option<Vec<Piece>> {
    let (last, init) = trigger.split_last()?;
    if begin.len() < trigger.len() || begin.get(..init.len())? != init {
        return None;
    }
    let at = begin.get(init.len())?;
    let mut out = Vec::new();
    match (last, at) {
        (Piece::Text(t), Piece::Text(b)) => {
            let rest = b.strip_prefix(t.as_slice())?;
            if !rest.is_empty() {
                out.push(Piece::Text(rest.to_owned()));
            }
        }
        (Piece::Special(t), Piece::Special(b)) if t == b => {}
        _ => return None,
    }
    out.extend(begin.get(init.len() + 1..)?.iter().cloned());
    Some(out)
}
