//! Arrays: item and tuple schemas, length bounds, and `contains` counted by an automaton.

use alloc::string::String;
use alloc::vec::Vec;
use alloc::{format, vec};

use serde_json::{Map, Value};

use crate::error::LimitKind;
use crate::grammar::json::Direction;
use crate::ir::IrSymbol;

use super::{
    Compiler, ContainsGroup, MAX_CONTAINS_GROUPS, MAX_UNROLLED_ITEMS, R, as_count, child, negate,
};

impl Compiler<'_> {
    pub(super) fn array(&mut self, m: &Map<String, Value>, ptr: &str, base: &str) -> R<u32> {
        let groups = self.contains_groups(m);
        if !groups.is_empty() {
            return self.array_contains(m, groups, ptr, base);
        }
        let mut prefix = Vec::new();
        let prefix_src: Option<(&Vec<Value>, &str)> = match (m.get("prefixItems"), m.get("items")) {
            (Some(Value::Array(a)), _) => Some((a, "prefixItems")),
            (_, Some(Value::Array(a))) => Some((a, "items")),
            _ => None,
        };
        if let Some((a, kw)) = prefix_src {
            for (i, s) in a.iter().enumerate() {
                prefix.push(self.sub(s, &format!("{ptr}/{kw}/{i}"), base)?);
            }
        }
        let rest_schema = if prefix_src.is_some_and(|(_, kw)| kw == "items") {
            m.get("additionalItems").map(|v| (v, "additionalItems"))
        } else {
            match m.get("items") {
                Some(Value::Array(_)) => None,
                Some(v) => Some((v, "items")),
                None => None,
            }
        };
        let rest = match rest_schema {
            Some((Value::Bool(false), _)) => None,
            Some((v, kw)) => Some(self.sub(v, &child(ptr, kw), base)?),
            None => Some(self.any()?),
        };
        self.array_rules(m, prefix, rest, ptr)
    }

    /// The rules of an array once its item nonterminals are known (out of line: keeps the
    /// recursive frame of [`Self::array`] small).
    #[inline(never)]
    fn array_rules(
        &mut self,
        m: &Map<String, Value>,
        prefix: Vec<u32>,
        mut rest: Option<u32>,
        ptr: &str,
    ) -> R<u32> {
        let p = self.punct()?;
        let min = m.get("minItems").and_then(as_count).unwrap_or(0);
        let mut max = m.get("maxItems").and_then(as_count);
        if min > u64::from(self.limits.max_repeat) {
            return Err(self.limit_error(LimitKind::RepeatCount, &child(ptr, "minItems")));
        }
        let np = prefix.len() as u64;
        if rest.is_none() {
            max = Some(max.map_or(np, |x| x.min(np)));
        }
        if max.is_some_and(|x| x > MAX_UNROLLED_ITEMS.max(min).max(np)) {
            self.approx(
                ptr,
                "maxItems",
                Direction::Superset,
                "too large to unroll; not enforced",
            )?;
            max = None;
            if rest.is_none() {
                rest = Some(self.nothing()?);
            }
        }
        let arr = self.nt(&format!("array:{ptr}"))?;
        if max.is_some_and(|x| x < min) {
            let n = self.nothing()?;
            self.rule(arr, vec![IrSymbol::Nonterminal(n)])?;
            return Ok(arr);
        }
        let k_end = max.unwrap_or(min.max(np)) as usize;
        let states: Vec<u32> = (0..=k_end)
            .map(|i| self.nt(&format!("array:{ptr}#{i}")))
            .collect::<R<_>>()?;
        for i in 0..k_end {
            let elem = if (i as u64) < np {
                prefix[i]
            } else {
                match rest {
                    Some(r) => r,
                    None => break,
                }
            };
            if i as u64 >= min {
                self.rule(states[i], vec![])?;
            }
            let mut rhs = Vec::new();
            if i > 0 {
                rhs.push(IrSymbol::Lexeme(p.comma));
            }
            rhs.push(IrSymbol::Nonterminal(elem));
            rhs.push(IrSymbol::Nonterminal(states[i + 1]));
            self.rule(states[i], rhs)?;
        }
        let last = states[k_end];
        self.rule(last, vec![])?;
        if max.is_none()
            && let Some(r) = rest
        {
            let tail = self.nt(&format!("array:{ptr}#tail"))?;
            let mut first = Vec::new();
            if k_end > 0 {
                first.push(IrSymbol::Lexeme(p.comma));
            }
            first.push(IrSymbol::Nonterminal(r));
            self.rule(tail, first)?;
            self.rule(
                tail,
                vec![
                    IrSymbol::Nonterminal(tail),
                    IrSymbol::Lexeme(p.comma),
                    IrSymbol::Nonterminal(r),
                ],
            )?;
            self.rule(last, vec![IrSymbol::Nonterminal(tail)])?;
        }
        self.rule(
            arr,
            vec![
                IrSymbol::Lexeme(p.lbrack),
                IrSymbol::Nonterminal(states[0]),
                IrSymbol::Lexeme(p.rbrack),
            ],
        )?;
        Ok(arr)
    }

    /// An array with `contains` conditions (each with its `minContains`/`maxContains` and
    /// first counted index): an automaton over (position, matching items so far per
    /// condition). Each item chooses the conditions it counts for and is compiled as the
    /// item schema with those conditions and, for the conditions with a `maxContains` that it
    /// does not count for, their negations. A condition without `maxContains` may leave a
    /// matching item uncounted (its count only needs to reach the minimum, and stops there).
    fn array_contains(
        &mut self,
        m: &Map<String, Value>,
        mut groups: Vec<ContainsGroup>,
        ptr: &str,
        base: &str,
    ) -> R<u32> {
        let p = self.punct()?;
        let cp = child(ptr, "contains");
        if groups.len() > MAX_CONTAINS_GROUPS {
            groups.truncate(MAX_CONTAINS_GROUPS);
            self.approx(
                ptr,
                "contains",
                Direction::Superset,
                "more than 4 contains conditions on one array; the first 4 are enforced",
            )?;
        }
        let (prefix, rest) = contains_items(m);
        let np = prefix.len() as u64;
        let min = m.get("minItems").and_then(as_count).unwrap_or(0);
        let mut max = m.get("maxItems").and_then(as_count);
        if rest.is_none() {
            max = Some(max.map_or(np, |x| x.min(np)));
        }
        let arr = self.nt(&format!("array:{ptr}"))?;
        let cmin_all = groups.iter().map(|g| g.min).max().unwrap_or(0);
        if groups.iter().any(|g| g.max.is_some_and(|x| x < g.min))
            || max.is_some_and(|x| x < min.max(cmin_all))
        {
            let n = self.nothing()?;
            self.rule(arr, vec![IrSymbol::Nonterminal(n)])?;
            return Ok(arr);
        }
        let limit = u64::from(self.limits.max_repeat).min(MAX_UNROLLED_ITEMS);
        // Conditions whose counts together need more states than `limit` are dropped from the
        // last (a superset, reported); the first alone is held to the limit below.
        if groups.len() > 1 && states_of(&groups) > limit + 1 {
            while groups.len() > 1 && states_of(&groups) > limit + 1 {
                groups.pop();
            }
            self.approx(
                ptr,
                "contains",
                Direction::Superset,
                "contains conditions whose counts together exceed max_repeat; the first ones \
                 are enforced",
            )?;
        }
        let from_all = groups.iter().map(|g| g.from).max().unwrap_or(0);
        // At most `limit + 1` states: several conditions were cut to it above, and one alone
        // is held to it by the check below.
        if min.max(cmin_all).max(np).max(from_all) > limit
            || groups.iter().any(|g| g.max.is_some_and(|x| x > limit))
        {
            return Err(self.limit_error(LimitKind::RepeatCount, &cp));
        }
        if max.is_some_and(|x| x > limit) {
            self.approx(
                ptr,
                "maxItems",
                Direction::Superset,
                "too large to unroll with contains; not enforced",
            )?;
            max = None;
        }
        let shape = ContainsShape {
            counts: CountStates::new(&groups),
            prefix,
            rest,
            min,
            max,
            from_all,
        };
        let mut items = ContainsItems {
            groups: &groups,
            cp: &cp,
            base,
            cache: Vec::new(),
        };
        let start = self.contains_automaton(&shape, &mut items, ptr, p.comma)?;
        self.rule(
            arr,
            vec![
                IrSymbol::Lexeme(p.lbrack),
                IrSymbol::Nonterminal(start),
                IrSymbol::Lexeme(p.rbrack),
            ],
        )?;
        Ok(arr)
    }

    /// The automaton of [`Compiler::array_contains`]: a nonterminal per (position, count
    /// state) up to the last position it unrolls, then, for an unbounded array, a
    /// left-recursive loop per pair of count states. Returns the start state's nonterminal.
    fn contains_automaton(
        &mut self,
        shape: &ContainsShape,
        items: &mut ContainsItems<'_>,
        ptr: &str,
        comma: u32,
    ) -> R<u32> {
        let counts = &shape.counts;
        let n_groups = items.groups.len();
        let k_end = shape.max.unwrap_or(
            shape
                .min
                .max(shape.prefix.len() as u64)
                .max(shape.from_all)
                .max(1),
        ) as usize;
        let mut states = Vec::with_capacity(k_end + 1);
        for i in 0..=k_end {
            let row: Vec<u32> = (0..counts.len())
                .map(|x| self.nt(&format!("array:{ptr}#{i}.{x}")))
                .collect::<R<_>>()?;
            states.push(row);
        }
        let unbounded = shape.max.is_none() && shape.rest.is_some();
        for i in 0..=k_end {
            let counting: u32 = (0..n_groups)
                .filter(|&j| i as u64 >= items.groups[j].from)
                .fold(0, |acc, j| acc | (1 << j));
            for x in 0..counts.len() {
                let here = states[i][x as usize];
                if i as u64 >= shape.min && counts.accept(x) && !(unbounded && i == k_end) {
                    self.rule(here, vec![])?;
                }
                if i == k_end {
                    continue;
                }
                let Some(e) = shape.prefix.get(i).or(shape.rest.as_ref()) else {
                    continue;
                };
                for (take, negated, y) in counts.moves(x, counting) {
                    let n = items.get(self, e, take, negated)?;
                    let mut rhs = Vec::new();
                    if i > 0 {
                        rhs.push(IrSymbol::Lexeme(comma));
                    }
                    rhs.push(IrSymbol::Nonterminal(n));
                    rhs.push(IrSymbol::Nonterminal(states[i + 1][y as usize]));
                    self.rule(here, rhs)?;
                }
            }
        }
        if unbounded && let Some(r) = &shape.rest {
            self.contains_loop(counts, items, r, &states[k_end], ptr, comma)?;
        }
        Ok(states[0][0])
    }

    /// The items after the last unrolled position of an unbounded array with `contains`:
    /// `T[a][b]` = the items after it, entered with count state `a`, now at count state `b`
    /// (every condition counts from there on), left-recursive; `last[a]` derives every
    /// accepting `T[a][b]`.
    fn contains_loop(
        &mut self,
        counts: &CountStates,
        items: &mut ContainsItems<'_>,
        rest: &Value,
        last: &[u32],
        ptr: &str,
        comma: u32,
    ) -> R<()> {
        let all_counting: u32 = (1u32 << items.groups.len()) - 1;
        for a in 0..counts.len() {
            let t: Vec<u32> = (0..counts.len())
                .map(|b| self.nt(&format!("array:{ptr}#loop{a}.{b}")))
                .collect::<R<_>>()?;
            self.rule(t[a as usize], vec![])?;
            for b in 0..counts.len() {
                for (take, negated, y) in counts.moves(b, all_counting) {
                    let n = items.get(self, rest, take, negated)?;
                    self.rule(
                        t[y as usize],
                        vec![
                            IrSymbol::Nonterminal(t[b as usize]),
                            IrSymbol::Lexeme(comma),
                            IrSymbol::Nonterminal(n),
                        ],
                    )?;
                }
                if counts.accept(b) {
                    self.rule(last[a as usize], vec![IrSymbol::Nonterminal(t[b as usize])])?;
                }
            }
        }
        Ok(())
    }
}

/// The item schemas of an array with `contains`: the tuple prefix (`prefixItems`, or a
/// draft-7 `items` list) and the schema of the items after it (`None`: no items allowed).
fn contains_items(m: &Map<String, Value>) -> (Vec<Value>, Option<Value>) {
    let (prefix, rest): (Vec<Value>, Option<Value>) = match (m.get("prefixItems"), m.get("items")) {
        (Some(Value::Array(a)), items) => (a.clone(), items.cloned()),
        (None, Some(Value::Array(a))) => (a.clone(), m.get("additionalItems").cloned()),
        (_, items) => (Vec::new(), items.cloned()),
    };
    let rest = match rest {
        Some(Value::Bool(false)) => None,
        Some(v) => Some(v),
        None => Some(Value::Bool(true)),
    };
    (prefix, rest)
}

/// The count states of the conditions `gs`: `maxContains`, or `minContains` for one without,
/// plus one, multiplied.
fn states_of(gs: &[ContainsGroup]) -> u64 {
    gs.iter().fold(1u64, |n, g| {
        n.saturating_mul(g.max.unwrap_or(g.min).saturating_add(1))
    })
}

/// What [`Compiler::contains_automaton`] unrolls.
struct ContainsShape {
    counts: CountStates,
    prefix: Vec<Value>,
    rest: Option<Value>,
    min: u64,
    max: Option<u64>,
    /// The first position every condition counts at.
    from_all: u64,
}

/// Count states: one mixed-radix number, a digit per condition (its matching items so far,
/// up to its `maxContains`, or its `minContains` where it has none).
struct CountStates {
    /// Per condition: the largest digit, `minContains`, `maxContains`.
    tops: Vec<u64>,
    mins: Vec<u64>,
    maxes: Vec<Option<u64>>,
    strides: Vec<u64>,
    /// The conditions with a `maxContains`: an item they count at its position and that does
    /// not count for them must not match them.
    exact: u32,
    len: u64,
}

impl CountStates {
    fn new(groups: &[ContainsGroup]) -> CountStates {
        CountStates {
            tops: groups.iter().map(|g| g.max.unwrap_or(g.min)).collect(),
            mins: groups.iter().map(|g| g.min).collect(),
            maxes: groups.iter().map(|g| g.max).collect(),
            strides: (0..groups.len()).map(|j| states_of(&groups[..j])).collect(),
            exact: (0..groups.len())
                .filter(|&j| groups[j].max.is_some())
                .fold(0, |acc, j| acc | (1 << j)),
            len: states_of(groups),
        }
    }

    /// The number of count states.
    fn len(&self) -> u64 {
        self.len
    }

    fn digit(&self, x: u64, j: usize) -> u64 {
        (x / self.strides[j]) % (self.tops[j] + 1)
    }

    /// Every condition has its minimum.
    fn accept(&self, x: u64) -> bool {
        (0..self.tops.len()).all(|j| self.digit(x, j) >= self.mins[j])
    }

    /// The next count state when an item counts for the conditions in `take` (None: one of
    /// them is at its `maxContains`).
    fn step(&self, x: u64, take: u32) -> Option<u64> {
        let mut y = x;
        for j in 0..self.tops.len() {
            if take & (1 << j) == 0 {
                continue;
            }
            let d = self.digit(x, j);
            match self.maxes[j] {
                Some(hi) if d >= hi => return None,
                Some(_) => y += self.strides[j],
                None if d < self.tops[j] => y += self.strides[j],
                None => {}
            }
        }
        Some(y)
    }

    /// The ways an item at a position where the conditions of `counting` count (a bit per
    /// condition) may move count state `x`: (conditions counted, conditions negated, next
    /// state).
    fn moves(&self, x: u64, counting: u32) -> Vec<(u32, u32, u64)> {
        let mut out = Vec::new();
        for take in 0..(1u32 << self.tops.len()) {
            if take & !counting != 0 {
                continue;
            }
            let Some(y) = self.step(x, take) else {
                continue;
            };
            out.push((take, self.exact & counting & !take, y));
        }
        out
    }
}

/// The item nonterminals of one array with `contains`, by (item schema, conditions counted,
/// conditions negated).
struct ContainsItems<'a> {
    groups: &'a [ContainsGroup],
    cp: &'a str,
    base: &'a str,
    cache: Vec<(Value, u32, u32, u32)>,
}

impl ContainsItems<'_> {
    /// The item schema `e` with the conditions of `take` and the negations of those of
    /// `negated`, compiled once.
    fn get(&mut self, s: &mut Compiler<'_>, e: &Value, take: u32, negated: u32) -> R<u32> {
        if let Some(&(_, _, _, n)) = self
            .cache
            .iter()
            .find(|(v, t, g, _)| *t == take && *g == negated && v == e)
        {
            return Ok(n);
        }
        let n = if take == 0 && negated == 0 {
            s.sub(e, self.cp, self.base)?
        } else {
            let mut schema = e.clone();
            for (j, g) in self.groups.iter().enumerate() {
                if take & (1 << j) != 0 {
                    schema = Compiler::all_of(schema, g.schema.clone());
                } else if negated & (1 << j) != 0 {
                    let not_c = negate::obj(vec![("not", g.schema.clone())]);
                    schema = Compiler::all_of(schema, not_c);
                }
            }
            s.sub_owned(schema, self.cp, self.base)?
        };
        self.cache.push((e.clone(), take, negated, n));
        Ok(n)
    }
}
