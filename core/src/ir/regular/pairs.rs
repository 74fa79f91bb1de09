//! The lexeme-pair checks of [`super::analyze`]: which lexemes of the reachable rules may
//! start alike, their FIRST and FOLLOW bytes, and one derivative walk per pair (memoized).

use super::*;

/// [`analyze`]; with `self_only`, each lexeme is checked against itself only (can the lexer
/// read past it into what follows it), a necessary part of every check and the cheapest.
pub(super) fn analyze_pairs(
    ir: &GrammarIr,
    exprs: &mut ExprSet,
    memo: &mut Memo,
    only: Option<&dyn Fn(u32) -> bool>,
    greedy_only: bool,
    self_only: bool,
) -> Result<Vec<LexemeConflict>, AnalysisError> {
    let sets = LexemeSets::new(ir, exprs, memo)?;
    let check = PairCheck {
        ir,
        sets: &sets,
        greedy_only,
    };
    let nl = ir.lexemes.len();
    let mut out = Vec::new();
    for l in 0..nl {
        if !sets.used[l] {
            continue;
        }
        for m in 0..nl {
            if !sets.used[m] || !intersects(&sets.first[l], &sets.first[m]) || (self_only && m != l)
            {
                continue;
            }
            if let Some(f) = only
                && !f(l as u32)
                && !f(m as u32)
            {
                continue;
            }
            check.pair(exprs, memo, l, m, &mut out)?;
        }
    }
    Ok(out)
}

/// What the conflict checks know of each lexeme of the reachable rules.
struct LexemeSets {
    /// Used by a reachable rule (or ignored).
    used: Vec<bool>,
    /// The compiled regex (`NOTHING` when unused).
    expr: Vec<ExprId>,
    /// The bytes it may start with, and the bytes that may come right after it (end of
    /// input is harmless and not recorded; an ignored lexeme may come after anything).
    first: Vec<ByteSet>,
    follow: Vec<ByteSet>,
}

impl LexemeSets {
    fn new(
        ir: &GrammarIr,
        exprs: &mut ExprSet,
        memo: &mut Memo,
    ) -> Result<LexemeSets, AnalysisError> {
        let nl = ir.lexemes.len();
        let (reach, used) = reachable(ir);
        let rules: Vec<(u32, &[IrSymbol])> = ir
            .rules
            .iter()
            .filter(|r| reach[r.lhs as usize])
            .map(|r| (r.lhs, r.rhs.as_slice()))
            .collect();
        let mut expr = vec![ExprId::NOTHING; nl];
        let mut first = vec![[0u32; 8]; nl];
        let mut null = vec![false; nl];
        let mut ignore_first = [0u32; 8];
        for l in 0..nl {
            if !used[l] {
                continue;
            }
            let e = memo.compile(exprs, &ir.lexemes[l].regex, l)?;
            expr[l] = e;
            null[l] = exprs.is_nullable(e);
            first[l] = memo.first_bytes(exprs, e)?;
            if ir.lexemes[l].ignore {
                union(&mut ignore_first, &first[l]);
            }
        }
        let mut f = FirstSets {
            lfirst: first,
            lnull: null,
            nfirst: vec![[0u32; 8]; ir.nonterminals.len()],
            nnull: vec![false; ir.nonterminals.len()],
            ignore_first,
        };
        f.nonterminals(&rules);
        let follow = f.lexeme_follow(&rules);
        Ok(LexemeSets {
            used,
            expr,
            first: f.lfirst,
            follow,
        })
    }
}

/// The nonterminals reachable from the start, and the lexemes their rules use (ignored ones
/// count as used).
fn reachable(ir: &GrammarIr) -> (Vec<bool>, Vec<bool>) {
    let by = rules_by_lhs(ir);
    let mut reach = vec![false; ir.nonterminals.len()];
    let mut stack = vec![ir.start];
    if let Some(r) = reach.get_mut(ir.start as usize) {
        *r = true;
    }
    let mut used: Vec<bool> = ir.lexemes.iter().map(|l| l.ignore).collect();
    while let Some(x) = stack.pop() {
        for &ri in &by[x as usize] {
            for s in &ir.rules[ri].rhs {
                match *s {
                    IrSymbol::Nonterminal(m) => {
                        if !reach[m as usize] {
                            reach[m as usize] = true;
                            stack.push(m);
                        }
                    }
                    IrSymbol::Lexeme(l) => used[l as usize] = true,
                }
            }
        }
    }
    (reach, used)
}

/// Nullable and FIRST of lexemes and nonterminals.
struct FirstSets {
    lfirst: Vec<ByteSet>,
    lnull: Vec<bool>,
    nfirst: Vec<ByteSet>,
    nnull: Vec<bool>,
    /// FIRST of the ignored lexemes.
    ignore_first: ByteSet,
}

impl FirstSets {
    /// Nullable and FIRST of the nonterminals of `rules` (left-hand side, right-hand side),
    /// to a fixpoint.
    fn nonterminals(&mut self, rules: &[(u32, &[IrSymbol])]) {
        loop {
            let mut changed = false;
            for &(a, rhs) in rules {
                let mut f = [0u32; 8];
                let mut all_null = true;
                for s in rhs {
                    let null = match *s {
                        IrSymbol::Lexeme(l) => {
                            union(&mut f, &self.lfirst[l as usize]);
                            self.lnull[l as usize]
                        }
                        IrSymbol::Nonterminal(m) => {
                            union(&mut f, &self.nfirst[m as usize]);
                            self.nnull[m as usize]
                        }
                    };
                    if !null {
                        all_null = false;
                        break;
                    }
                }
                changed |= union(&mut self.nfirst[a as usize], &f);
                if all_null && !self.nnull[a as usize] {
                    self.nnull[a as usize] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// FOLLOW of every lexeme: the bytes that may come right after it (end of input is
    /// harmless and not recorded). An ignored lexeme may come after anything.
    fn lexeme_follow(&self, rules: &[(u32, &[IrSymbol])]) -> Vec<ByteSet> {
        let mut nfollow = vec![self.ignore_first; self.nfirst.len()];
        let mut lfollow = vec![self.ignore_first; self.lfirst.len()];
        loop {
            let mut changed = false;
            for &(a, rhs) in rules {
                // Walk right to left with the FIRST of the suffix and whether it is nullable.
                let mut after = nfollow[a as usize];
                for s in rhs.iter().rev() {
                    match *s {
                        IrSymbol::Lexeme(l) => {
                            changed |= union(&mut lfollow[l as usize], &after);
                            if !self.lnull[l as usize] {
                                after = [0; 8];
                            }
                            union(&mut after, &self.lfirst[l as usize]);
                            union(&mut after, &self.ignore_first);
                        }
                        IrSymbol::Nonterminal(m) => {
                            changed |= union(&mut nfollow[m as usize], &after);
                            if !self.nnull[m as usize] {
                                after = [0; 8];
                            }
                            union(&mut after, &self.nfirst[m as usize]);
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
        lfollow
    }
}

/// The check of one pair of lexemes (see [`analyze_pairs`]).
struct PairCheck<'a> {
    ir: &'a GrammarIr,
    sets: &'a LexemeSets,
    greedy_only: bool,
}

impl PairCheck<'_> {
    /// Pushes the conflicts of `l` against `m` to `out`.
    fn pair(
        &self,
        exprs: &mut ExprSet,
        memo: &mut Memo,
        l: usize,
        m: usize,
        out: &mut Vec<LexemeConflict>,
    ) -> Result<(), AnalysisError> {
        let (ir, sets, greedy_only) = (self.ir, self.sets, self.greedy_only);
        let mut push = |kind| {
            out.push(LexemeConflict {
                first: l as u32,
                second: m as u32,
                kind,
            })
        };
        let lazy = ir.lexemes[l].mode == LexemeMode::Lazy;
        if greedy_only && lazy {
            return Ok(());
        }
        if greedy_only && l != m && ir.lexemes[m].mode == LexemeMode::Lazy {
            // A lazy lexeme of the front end that a lexified rule could shadow: keep the
            // rule's pieces (conservative).
            push(ConflictKind::ProperPrefix);
            return Ok(());
        }
        // Without a follow byte anywhere in `m`, `m` cannot read on past `l`.
        // (`w` is not empty: the byte would come second or later.)
        if greedy_only && !intersects(&sets.follow[l], &memo.tail_bytes(exprs, sets.expr[m])) {
            return Ok(());
        }
        let key = (sets.expr[l].0, sets.expr[m].0, sets.follow[l], lazy);
        let flags = match memo.pairs.get(&key) {
            Some(f) => *f,
            None => {
                let prefix_only = greedy_only.then_some(&mut memo.all);
                let f = check_pair(
                    exprs,
                    sets.expr[l],
                    sets.expr[m],
                    &sets.follow[l],
                    lazy,
                    l == m,
                    prefix_only,
                )?;
                memo.pairs.insert(key, f);
                f
            }
        };
        if flags.proper_prefix && !lazy {
            push(ConflictKind::ProperPrefix);
        }
        if !greedy_only {
            if flags.same_text && l < m {
                push(ConflictKind::SameText);
            }
            if flags.lazy_shadow && lazy && l != m {
                push(ConflictKind::LazyShadow);
            }
        }
        Ok(())
    }
}

/// Walk the pairs of derivatives of `l` and `m` by the same non-empty strings `w`: where
/// `l` matches `w`, does a byte of `follow` keep `m` alive (`ProperPrefix`), does `m` match
/// `w` too (`SameText`, when `l != m`), can `m` go on (`LazyShadow`, when `l` is lazy)?
///
/// With `prefix_only` (the memo of [`all_bytes`]; only `proper_prefix` wanted, `l` greedy),
/// a pair whose `m` side tests no byte of `follow` is not explored: its derivatives test
/// a subset of its leaves, so no byte of `follow` can go on from any of them.
fn check_pair(
    exprs: &mut ExprSet,
    l: ExprId,
    m: ExprId,
    follow: &ByteSet,
    lazy: bool,
    same: bool,
    mut prefix_only: Option<&mut HashMap<ExprId, ByteSet>>,
) -> Result<Flags, LimitKind> {
    let capped = Flags {
        proper_prefix: !lazy,
        same_text: false,
        lazy_shadow: lazy,
    };
    let prefix_only_mode = prefix_only.is_some() && !lazy;
    let mut classes: ByteClasses = exprs.byte_classes(&[l, m]);
    classes.refine(follow);
    let nc = classes.num_classes();
    let follow_classes: Vec<u8> = (0..nc)
        .map(|c| c as u8)
        .filter(|&c| {
            let b = classes.representative(c);
            follow[(b >> 5) as usize] & (1 << (b & 31)) != 0
        })
        .collect();
    let alive = |exprs: &mut ExprSet, e: ExprId| -> Result<bool, LimitKind> {
        Ok(e != ExprId::NOTHING && !(exprs.has_and_not(e) && exprs.is_empty_language(e)?))
    };
    let mut flags = Flags::default();
    let mut seen: hashbrown::HashSet<(ExprId, ExprId)> = hashbrown::HashSet::new();
    let mut stack = vec![(l, m)];
    seen.insert((l, m));
    let mut blocks = Vec::new();
    let mut steps = 0usize;
    while let Some((a, b)) = stack.pop() {
        let roots = [a, b];
        let roots = if a == b { &roots[..1] } else { &roots[..] };
        exprs.class_blocks(roots, &classes, &mut blocks);
        steps += blocks.len();
        if steps > MAX_STEPS {
            return Ok(capped);
        }
        for block in &blocks {
            let Some(c) = block
                .iter()
                .enumerate()
                .find(|(_, w)| **w != 0)
                .map(|(i, w)| i * 64 + w.trailing_zeros() as usize)
            else {
                continue;
            };
            let byte = classes.representative(c as u8);
            let da = exprs.derivative(a, byte)?;
            if !alive(exprs, da)? {
                continue;
            }
            let db = exprs.derivative(b, byte)?;
            if !alive(exprs, db)? {
                continue;
            }
            if exprs.is_nullable(da) {
                if !same && exprs.is_nullable(db) {
                    flags.same_text = true;
                }
                // Without `And`/`Not`, the leaves `db` tests are its first bytes (no
                // derivative needed).
                let leaf_first = (!exprs.has_and_not(db)).then(|| leaf_first_bytes(exprs, db));
                if let Some(fb) = leaf_first {
                    if !lazy && intersects(&fb, follow) {
                        flags.proper_prefix = true;
                    }
                    if lazy && !same && fb != [0; 8] {
                        flags.lazy_shadow = true;
                    }
                } else if !lazy && !flags.proper_prefix {
                    for &fc in &follow_classes {
                        let d = exprs.derivative(db, classes.representative(fc))?;
                        if alive(exprs, d)? {
                            flags.proper_prefix = true;
                            break;
                        }
                    }
                }
                if leaf_first.is_none() && lazy && !same && !flags.lazy_shadow {
                    for fc in 0..nc {
                        let d = exprs.derivative(db, classes.representative(fc as u8))?;
                        if alive(exprs, d)? {
                            flags.lazy_shadow = true;
                            break;
                        }
                    }
                }
            }
            if prefix_only_mode {
                if flags.proper_prefix {
                    return Ok(flags);
                }
                if let Some(all) = prefix_only.as_deref_mut()
                    && !intersects(&all_bytes(all, exprs, db), follow)
                {
                    continue;
                }
            }
            if seen.insert((da, db)) {
                if seen.len() > MAX_PAIRS {
                    return Ok(capped);
                }
                stack.push((da, db));
            }
        }
    }
    Ok(flags)
}
