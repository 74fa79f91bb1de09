//! Lark terminals: their regexes, computed once in dependency order (cycles reported).

use super::*;

/// Terminal-side state shared by the user grammar and the `common` module.
pub(in crate::grammar::lark) struct Terminals<'a, 's> {
    pub(super) lines: &'a LineIndex<'s>,
    pub(super) limits: &'a Limits,
    pub(super) index: BTreeMap<String, usize>,
    pub(super) bodies: Vec<TermBody<'a>>,
    pub(super) names: Vec<String>,
    pub(super) done: Vec<Option<TermRegex>>,
    pub(super) rules: &'a BTreeMap<String, (usize, &'a Def)>,
    pub(super) parsed: &'a Parsed,
}

impl<'a, 's> Terminals<'a, 's> {
    pub(super) fn err(
        &self,
        kind: GrammarErrorKind,
        span: (usize, usize),
        msg: String,
    ) -> GrammarError {
        self.lines.error(kind, span.0, span.1, msg)
    }

    pub(super) fn limit(&self, kind: LimitKind, span: (usize, usize)) -> GrammarError {
        GrammarError::limit(kind).with_span(self.lines.span(span.0, span.1))
    }

    /// Terminals referenced in the subtree at `root` (with their use spans), checking that
    /// each name exists and is a terminal.
    pub(super) fn deps(&self, root: usize, out: &mut Vec<Dep>) -> LResult<()> {
        for n in self.parsed.subtree(root) {
            if let NodeKind::Name(name) = &n.kind {
                out.push((self.resolve(name, (n.start, n.end))?, (n.start, n.end)));
            }
        }
        Ok(())
    }

    pub(super) fn resolve(&self, name: &str, span: (usize, usize)) -> LResult<usize> {
        if let Some(&i) = self.index.get(name) {
            return Ok(i);
        }
        if !is_terminal_name(name) {
            let msg = if self.rules.contains_key(name) {
                format!("rule `{name}` cannot be used inside a terminal")
            } else {
                format!("undefined rule `{name}` (and rules cannot be used inside a terminal)")
            };
            let kind = if self.rules.contains_key(name) {
                GrammarErrorKind::Syntax
            } else {
                GrammarErrorKind::UndefinedSymbol
            };
            return Err(self.err(kind, span, msg));
        }
        Err(self.err(
            GrammarErrorKind::UndefinedSymbol,
            span,
            format!("undefined terminal `{name}`"),
        ))
    }

    /// Compute every terminal's regex (depth-first, explicit stack).
    pub(super) fn compute_all(&mut self, acct: &mut Account<'_>) -> LResult<()> {
        let n = self.bodies.len();
        let mut state = alloc::vec![Visit::Todo; n];
        self.done = alloc::vec![None; n];
        for root in 0..n {
            if state[root] != Visit::Todo {
                continue;
            }
            let mut stack: Vec<(usize, Vec<Dep>, usize)> = Vec::new();
            state[root] = Visit::Active;
            stack.push((root, self.term_deps(root)?, 0));
            while let Some((t, deps, next)) = stack.last_mut() {
                if let Some(&(d, use_span)) = deps.get(*next) {
                    *next += 1;
                    match state[d] {
                        Visit::Done => {}
                        Visit::Active => {
                            let msg = format!("terminal `{}` refers to itself", self.names[d]);
                            return Err(self.err(GrammarErrorKind::Syntax, use_span, msg));
                        }
                        Visit::Todo => {
                            state[d] = Visit::Active;
                            let dd = self.term_deps(d)?;
                            stack.push((d, dd, 0));
                        }
                    }
                    continue;
                }
                let t = *t;
                stack.pop();
                let computed = match &self.bodies[t] {
                    TermBody::Prebuilt(r, _) => r.clone(),
                    TermBody::Source(def) => self.regex(def.body, acct)?,
                };
                self.done[t] = Some(share(computed));
                state[t] = Visit::Done;
            }
        }
        Ok(())
    }

    pub(super) fn term_deps(&self, t: usize) -> LResult<Vec<Dep>> {
        let mut out = Vec::new();
        if let TermBody::Source(def) = &self.bodies[t] {
            self.deps(def.body, &mut out)?;
            if let Some(stop) = def.attrs.stop {
                self.deps(stop, &mut out)?;
            }
        }
        Ok(out)
    }

    /// Pay for `n` regex nodes: grammar size, fuel and [`REGEX_NODE_BYTES`] each.
    pub(super) fn charge(
        &self,
        acct: &mut Account<'_>,
        n: usize,
        span: (usize, usize),
    ) -> LResult<()> {
        acct.charge_at(self.lines, n, span)?;
        acct.charge_bytes_at(self.lines, n.saturating_mul(REGEX_NODE_BYTES), span)
    }

    /// The regex of the terminal expression at `root`; referenced terminals must be
    /// computed. Walks the post-order subtree with a value stack. Each node is paid once;
    /// a reference to a terminal is one node (the terminal is shared, not copied).
    pub(super) fn regex(&self, root: usize, budget: &mut Account<'_>) -> LResult<TermRegex> {
        let mut vals: Vec<TermRegex> = Vec::new();
        for n in self.parsed.subtree(root) {
            let span = (n.start, n.end);
            let leaf = |ast| TermRegex {
                ast,
                size: 1,
                height: 1,
            };
            let v = match &n.kind {
                NodeKind::Name(name) => {
                    let i = self.resolve(name, span)?;
                    let Some(r) = self.done.get(i).and_then(Option::as_ref) else {
                        let msg = format!("terminal `{name}` refers to itself");
                        return Err(self.err(GrammarErrorKind::Syntax, span, msg));
                    };
                    self.charge(budget, 1, span)?;
                    // A small terminal is copied (a large one is shared).
                    let copied = r.size.min(INLINE_TERMINAL + 1);
                    budget.charge_bytes_at(self.lines, copied * REGEX_NODE_BYTES, span)?;
                    r.clone()
                }
                NodeKind::Str(s, ci) => {
                    self.charge(budget, 1, span)?;
                    budget.charge_bytes_at(self.lines, literal_bytes(s, *ci), span)?;
                    leaf(literal_regex(s, *ci))
                }
                NodeKind::Regex(lit) => {
                    self.charge(budget, 1, span)?;
                    budget.charge_bytes_at(self.lines, lit.pattern.len(), span)?;
                    leaf(RegexAst::Pattern(lit.pattern.clone(), lit.flags))
                }
                NodeKind::Range(a, b) => {
                    self.charge(budget, 1, span)?;
                    leaf(range_regex(*a, *b))
                }
                NodeKind::Special(_) => {
                    return Err(self.err(
                        GrammarErrorKind::Unsupported,
                        span,
                        "special tokens are only allowed in rules, not in terminals".to_string(),
                    ));
                }
                NodeKind::Json(_) | NodeKind::GrammarRef(_) => {
                    return Err(super::super::schema::not_a_terminal(self.lines, span));
                }
                NodeKind::Seq(k) | NodeKind::Alt(k) | NodeKind::And(k) => {
                    self.charge(budget, 1, span)?;
                    let children = pop_n(&mut vals, *k)?;
                    let (mut size, mut height) = (1usize, 1usize);
                    let mut parts = Vec::with_capacity(children.len());
                    for r in children {
                        size = size.saturating_add(r.size);
                        // Splice same-kind children: terminal chains do not grow the height.
                        let mut ast = r.ast;
                        match (&n.kind, &mut ast) {
                            (NodeKind::Seq(_), RegexAst::Concat(inner))
                            | (NodeKind::Alt(_), RegexAst::Or(inner))
                            | (NodeKind::And(_), RegexAst::And(inner)) => {
                                height = height.max(r.height);
                                parts.append(inner);
                            }
                            _ => {
                                height = height.max(r.height + 1);
                                parts.push(ast);
                            }
                        }
                    }
                    let ast = match (&n.kind, parts.len()) {
                        (NodeKind::Seq(_), 0) => RegexAst::Epsilon,
                        (NodeKind::Alt(_) | NodeKind::And(_), 0) => RegexAst::Nothing,
                        (_, 1) => parts.pop().unwrap_or(RegexAst::Epsilon),
                        (NodeKind::Seq(_), _) => RegexAst::Concat(parts),
                        (NodeKind::Alt(_), _) => RegexAst::Or(parts),
                        _ => RegexAst::And(parts),
                    };
                    TermRegex { ast, size, height }
                }
                NodeKind::Not => {
                    // Complement within text: any bytes but `0xFF`, which only special tokens
                    // spell (LLGuidance's `~` may match invalid UTF-8; so may this one).
                    self.charge(budget, 3, span)?;
                    let mut children = pop_n(&mut vals, 1)?;
                    let r = children.pop().ok_or_else(internal)?;
                    let mut text = [u32::MAX; 8];
                    text[7] &= !(1u32 << 31);
                    let any_text = RegexAst::Repeat(Box::new(RegexAst::ByteSet(text)), 0, None);
                    TermRegex {
                        ast: RegexAst::And(alloc::vec![RegexAst::Not(Box::new(r.ast)), any_text]),
                        size: r.size.saturating_add(3),
                        height: r.height + 2,
                    }
                }
                NodeKind::Repeat(min, max) => {
                    check_repeat(self.lines, self.limits, *min, *max, span)?;
                    self.charge(budget, 1, span)?;
                    let mut children = pop_n(&mut vals, 1)?;
                    let r = children.pop().ok_or_else(internal)?;
                    TermRegex {
                        ast: RegexAst::Repeat(Box::new(r.ast), *min, *max),
                        size: r.size.saturating_add(1),
                        height: r.height + 1,
                    }
                }
            };
            if v.height > super::super::parser::max_height(self.limits) {
                return Err(self.limit(LimitKind::NestingDepth, span));
            }
            vals.push(v);
        }
        let r = vals.pop().ok_or_else(internal)?;
        if !vals.is_empty() {
            return Err(internal());
        }
        Ok(r)
    }

    /// The regex of a computed terminal.
    pub(super) fn get(&self, i: usize) -> Option<&TermRegex> {
        self.done.get(i).and_then(Option::as_ref)
    }
}
