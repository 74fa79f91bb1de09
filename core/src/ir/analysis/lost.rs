//! The follower and a shortest lost string of a read-past lexeme.
//!
//! A lexeme `A` is read past (`ConflictKind::ProperPrefix` of `A` with itself) when a string
//! `w` of `A` followed by a byte `c` that may follow `A` is a prefix of a longer string of
//! `A`: the greedy lexer does not end `A` after `w` and reads on. For such an `A` this module
//! finds the lexeme `B` it reads into and a string of the grammar that shows the loss: for
//! each lexeme `B`, the shortest `w` of `A` and first byte `c` of `B` with `w·c` a prefix of
//! `A` (`read_into`); then the shortest string of the grammar in which `A` (spelled `w`) is
//! immediately followed by `B` (spelled `c…`), every other lexeme spelled by its shortest
//! string (`shortest_with_pair`). The candidate is a string of the grammar by construction;
//! whether the lexer loses it is decided by running a matcher on it
//! ([`GrammarInfo::confirm_lost`]), so the report never names a string the masks accept.
//!
//! Everything here is bounded by counts (`SEARCH_STATES`, `DP_STEPS`, `MAX_FOLLOWERS`,
//! `PAIRS`); a search that runs out reports no string.

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use hashbrown::HashMap;

use super::{GrammarInfo, render, shortest_bytes};
use crate::error::Span;
use crate::ir::{GrammarIr, IrSymbol};
use crate::limits::Limits;
use crate::regex::{COMPILE_REGEX_WEIGHT, ExprId, ExprSet};
use crate::vocab::Vocabulary;

/// The most derivative states one `(A, B)` search visits.
const SEARCH_STATES: usize = 4_096;
/// The most right-hand-side symbols the grammar search visits, over all its rounds.
const DP_STEPS: u64 = 4_000_000;
/// The most candidates for one read-past lexeme.
const MAX_FOLLOWERS: usize = 64;
/// The most spellings `w` of `A` tried for one follower.
const PAIRS: usize = 4;

/// A candidate for one read-past lexeme: the lexeme read into and a string of the grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostCandidate {
    /// The lexeme `B` that `A` reads into.
    pub follower: u32,
    /// The string (bytes), shortest first.
    pub text: Vec<u8>,
}

/// Candidates for read-past lexeme `a`, shortest first (a few per follower found).
pub fn candidates(ir: &GrammarIr, a: u32, limits: &Limits) -> Vec<LostCandidate> {
    let mut exprs = ExprSet::new(limits);
    exprs.set_fuel(limits.compile_fuel);
    exprs.set_weight(COMPILE_REGEX_WEIGHT);
    let ids: Vec<Option<ExprId>> = ir
        .lexemes
        .iter()
        .map(|l| exprs.compile(&l.regex).ok())
        .collect();
    let Some(Some(ea)) = ids.get(a as usize).copied() else {
        return Vec::new();
    };
    let short: Vec<Option<Vec<u8>>> = ids
        .iter()
        .map(|e| e.and_then(|e| shortest_from(&mut exprs, e, &[])))
        .collect();
    let mut out = Vec::new();
    for (b, eb) in ids.iter().enumerate() {
        let Some(eb) = *eb else { continue };
        if out.len() >= MAX_FOLLOWERS || ir.lexemes[b].ignore {
            continue;
        }
        for (w, bt) in read_into(&mut exprs, ea, eb) {
            let spell = |l: u32| short.get(l as usize).cloned().flatten();
            if let Some(text) = shortest_with_pair(ir, (a, &w), (b as u32, &bt), spell) {
                out.push(LostCandidate {
                    follower: b as u32,
                    text,
                });
            }
        }
    }
    out.sort_by_key(|c| c.text.len());
    out
}

/// The shortest pairs `(w, b)` (at most [`PAIRS`], by length of `w`): `w` a string of
/// `ea`, `b` a string of `eb` whose first byte `c` keeps `ea` alive after `w` (`w·c` is a
/// prefix of a string of `ea`). Several, because the shortest may not lose anything (an empty
/// `w`, where another lexeme takes over).
fn read_into(exprs: &mut ExprSet, ea: ExprId, eb: ExprId) -> Vec<(Vec<u8>, Vec<u8>)> {
    // Breadth-first over `ea`'s derivatives, each with the string that reached it: states
    // that accept and have a byte continuing both `ea` and `eb`, shortest `w` first. The
    // start state is seen twice: with the empty `w`, and again with the shortest non-empty
    // `w` that leads back to it (`(\.y)*` after `.y`).
    let mut out = Vec::new();
    let mut seen: HashMap<ExprId, ()> = HashMap::new();
    let mut queue: VecDeque<(ExprId, Vec<u8>)> = VecDeque::from([(ea, Vec::new())]);
    let mut steps = 0usize;
    while let Some((x, w)) = queue.pop_front() {
        if exprs.is_nullable(x) {
            for c in 0..=255u8 {
                let (Ok(da), Ok(db)) = (exprs.derivative(x, c), exprs.derivative(eb, c)) else {
                    return out;
                };
                if da == ExprId::NOTHING || db == ExprId::NOTHING {
                    continue;
                }
                if let Some(b) = shortest_from(exprs, db, &[c]) {
                    out.push((w.clone(), b));
                    break;
                }
            }
            if out.len() >= PAIRS {
                return out;
            }
        }
        for c in 0..=255u8 {
            steps += 1;
            if steps > SEARCH_STATES * 256 || seen.len() > SEARCH_STATES {
                return out;
            }
            let Ok(d) = exprs.derivative(x, c) else {
                return out;
            };
            if d == ExprId::NOTHING || seen.insert(d, ()).is_some() {
                continue;
            }
            let mut next = w.clone();
            next.push(c);
            queue.push_back((d, next));
        }
    }
    out
}

/// `prefix` followed by a shortest string of `e` (the analysis's bounded search,
/// [`shortest_bytes`]); `None` when `e` is empty or the search gives up.
fn shortest_from(exprs: &mut ExprSet, e: ExprId, prefix: &[u8]) -> Option<Vec<u8>> {
    let rest = shortest_bytes(exprs, e).ok()??;
    let mut out = prefix.to_vec();
    out.extend(rest?);
    Some(out)
}

/// Per nonterminal, the shortest strings found so far: of any kind, ending with the `A`
/// occurrence, starting with the `B` occurrence, and holding the pair `A B`.
#[derive(Clone, Default)]
struct Best {
    any: Option<Vec<u8>>,
    ends_a: Option<Vec<u8>>,
    starts_b: Option<Vec<u8>>,
    pair: Option<Vec<u8>>,
}

fn shorter(slot: &mut Option<Vec<u8>>, cand: Option<Vec<u8>>) -> bool {
    match (slot.as_ref(), cand) {
        (_, None) => false,
        (Some(s), Some(c)) if s.len() <= c.len() => false,
        (_, Some(c)) => {
            *slot = Some(c);
            true
        }
    }
}

fn cat(parts: &[&Option<Vec<u8>>]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for p in parts {
        out.extend_from_slice(p.as_ref()?);
    }
    Some(out)
}

/// A shortest string of the grammar in which lexeme `a` (spelled `w`) is immediately
/// followed by lexeme `b` (spelled `bt`), other lexemes spelled by `spell`: rounds of
/// relaxation over the productions until nothing gets shorter (bounded by [`DP_STEPS`]).
fn shortest_with_pair(
    ir: &GrammarIr,
    (a, w): (u32, &[u8]),
    (b, bt): (u32, &[u8]),
    spell: impl Fn(u32) -> Option<Vec<u8>>,
) -> Option<Vec<u8>> {
    let mut best = vec![Best::default(); ir.nonterminals.len()];
    // One symbol as a `Best`: a lexeme is its own pair only never (a pair needs two).
    let lexeme = |l: u32| Best {
        any: spell(l),
        ends_a: (l == a).then(|| w.to_vec()),
        starts_b: (l == b).then(|| bt.to_vec()),
        pair: None,
    };
    let mut steps = 0u64;
    loop {
        let mut changed = false;
        for r in &ir.rules {
            steps += r.rhs.len() as u64 + 1;
            if steps > DP_STEPS {
                return None;
            }
            // Left to right: the best prefix strings of each kind so far.
            let mut acc = Best {
                any: Some(Vec::new()),
                ..Best::default()
            };
            for s in &r.rhs {
                let x = match *s {
                    IrSymbol::Lexeme(l) => lexeme(l),
                    IrSymbol::Nonterminal(n) => best.get(n as usize).cloned().unwrap_or_default(),
                };
                let mut next = Best::default();
                // A pair inside the prefix or inside `x`, or across: prefix ends with A,
                // `x` starts with B.
                shorter(&mut next.pair, cat(&[&acc.pair, &x.any]));
                shorter(&mut next.pair, cat(&[&acc.any, &x.pair]));
                shorter(&mut next.pair, cat(&[&acc.ends_a, &x.starts_b]));
                // Ends with A: `x` does, or `x` is empty and the prefix does.
                shorter(&mut next.ends_a, cat(&[&acc.any, &x.ends_a]));
                if x.any.as_ref().is_some_and(Vec::is_empty) {
                    shorter(&mut next.ends_a, acc.ends_a.clone());
                }
                // Starts with B: the prefix does, or the prefix is empty and `x` does.
                shorter(&mut next.starts_b, cat(&[&acc.starts_b, &x.any]));
                if acc.any.as_ref().is_some_and(Vec::is_empty) {
                    shorter(&mut next.starts_b, x.starts_b.clone());
                }
                next.any = cat(&[&acc.any, &x.any]);
                acc = next;
            }
            let Some(slot) = best.get_mut(r.lhs as usize) else {
                continue;
            };
            changed |= shorter(&mut slot.any, acc.any);
            changed |= shorter(&mut slot.ends_a, acc.ends_a);
            changed |= shorter(&mut slot.starts_b, acc.starts_b);
            changed |= shorter(&mut slot.pair, acc.pair);
        }
        if !changed {
            break;
        }
    }
    best.get(ir.start as usize).and_then(|x| x.pair.clone())
}

/// A lost string confirmed by a matcher: the lexeme read into and the string as shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostString {
    /// The lexeme read into (`B`).
    pub follower: String,
    /// Where `B` is defined or first used.
    pub follower_span: Option<Span>,
    /// The string of the grammar the masks reject, shown.
    pub text: String,
}

impl GrammarInfo {
    /// Keeps, for each read-past conflict, the shortest candidate that `rejects` (a matcher
    /// of the grammar, fed bytes) refuses: a string of the grammar the masks lose. Candidates
    /// it accepts are dropped (the lexer recovers there).
    pub fn confirm_lost(
        &mut self,
        ir: &GrammarIr,
        vocab: Option<&Vocabulary>,
        mut rejects: impl FnMut(&[u8]) -> bool,
    ) {
        for c in &mut self.conflicts {
            let found = c.candidates.iter().find(|x| rejects(&x.text));
            c.lost = found.and_then(|x| {
                let l = ir.lexemes.get(x.follower as usize)?;
                Some(LostString {
                    follower: l.name.clone(),
                    follower_span: l.span,
                    text: render(&x.text, vocab),
                })
            });
        }
    }
}
