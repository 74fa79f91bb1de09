//! Each nonterminal's class (regular, linear, general) and why, by strongly connected
//! component, successors first.

use super::*;

/// Every nonterminal's class and reason.
pub(super) fn classify(
    ir: &GrammarIr,
    g: &Index,
    budget: &mut CompileBudget,
) -> Result<Vec<(GrammarClass, String, bool)>, GrammarError> {
    let n = ir.nonterminals.len();
    let (comp, ncomp) = components(ir, g, budget)?;
    let nc = ncomp as usize;
    budget.charge_for::<u32>(n + 2 * nc)?;
    budget.spend(grammar_size(ir).saturating_mul(3))?;
    let (start, members) = component_members(&comp, nc);
    let mut classes = Classes {
        ir,
        g,
        comp: &comp,
        reasons: Vec::new(),
        not_regular: vec![None; nc],
        not_linear: vec![None; nc],
        recursive: vec![false; nc],
    };
    // Components are numbered successors first.
    for c in 0..nc {
        let ms = members
            .get(start[c] as usize..start[c + 1] as usize)
            .unwrap_or_default();
        let (local_regular, local_linear) = classes.component(c, ms);
        if let Some(r) = local_regular {
            budget.charge(r.len())?;
            classes.reasons.push(r);
            classes.not_regular[c] = Some((classes.reasons.len() - 1) as u32);
        }
        if let Some(r) = local_linear {
            budget.charge(r.len())?;
            classes.reasons.push(r);
            classes.not_linear[c] = Some((classes.reasons.len() - 1) as u32);
        }
    }
    Ok(comp.iter().map(|&c| classes.class_of(c as usize)).collect())
}

/// The members of each component, as `members[start[c]..start[c + 1]]`.
fn component_members(comp: &[u32], nc: usize) -> (Vec<u32>, Vec<u32>) {
    let mut start = vec![0u32; nc + 1];
    for &c in comp {
        if let Some(x) = start.get_mut(c as usize + 1) {
            *x += 1;
        }
    }
    for i in 0..nc {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut members = vec![0u32; comp.len()];
    for (a, &c) in comp.iter().enumerate() {
        if let Some(f) = fill.get_mut(c as usize) {
            members[*f as usize] = a as u32;
            *f += 1;
        }
    }
    (start, members)
}

/// [`classify`]'s state. Reasons are shared by index: `not_regular[c]` / `not_linear[c]`
/// name the first found in component `c` or the components it reaches; `recursive[c]`:
/// some cycle is reachable.
struct Classes<'a> {
    ir: &'a GrammarIr,
    g: &'a Index,
    comp: &'a [u32],
    reasons: Vec<String>,
    not_regular: Vec<Option<u32>>,
    not_linear: Vec<Option<u32>>,
    recursive: Vec<bool>,
}

/// Where a production of a component names nonterminals of that component.
#[derive(Default)]
struct Recursion {
    /// Nonterminals in the production, and how many are in the component.
    count: usize,
    inner: usize,
    /// The position of the last one in the component, and the first two of them.
    inner_pos: usize,
    inner_names: Vec<u32>,
    /// It names its own left-hand side.
    direct: bool,
}

impl Classes<'_> {
    /// Component `c` (members `ms`; its successors done): what it inherits from them, and
    /// why it is not regular / not linear itself (`None`: it is, locally).
    fn component(&mut self, c: usize, ms: &[u32]) -> (Option<String>, Option<String>) {
        let ir = self.ir;
        let mut local_regular: Option<String> = None;
        let mut local_linear: Option<String> = None;
        // Recursion inside `c`: which productions are left- or right-linear in it.
        let mut is_cycle = ms.len() > 1;
        let mut not_left: Option<u32> = None;
        let mut not_right: Option<u32> = None;
        for &a in ms {
            for &p in self.g.productions(a as usize) {
                let rhs = ir
                    .rules
                    .get(p as usize)
                    .map(|r| r.rhs.as_slice())
                    .unwrap_or_default();
                let r = self.scan(c, a, rhs);
                is_cycle |= r.direct;
                if r.count >= 2 && local_linear.is_none() {
                    local_linear = Some(format!(
                        "{} has {} nonterminals",
                        show_production(ir, p),
                        r.count
                    ));
                }
                if r.inner >= 2 && local_regular.is_none() {
                    let names: Vec<&str> = r.inner_names.iter().map(|&b| nt_name(ir, b)).collect();
                    local_regular = Some(format!(
                        "`{}` is self-embedding: {} recurses through both `{}` and `{}`",
                        nt_name(ir, a),
                        show_production(ir, p),
                        names.first().copied().unwrap_or("?"),
                        names.get(1).copied().unwrap_or("?"),
                    ));
                } else if r.inner == 1 {
                    let left = r.inner_pos == 0;
                    let right = r.inner_pos + 1 == rhs.len();
                    if !left && !right && local_regular.is_none() {
                        local_regular = Some(format!(
                            "`{}` is self-embedding: {} has text on both sides of the recursion",
                            nt_name(ir, a),
                            show_production(ir, p)
                        ));
                    }
                    if !left && not_left.is_none() {
                        not_left = Some(p);
                    }
                    if !right && not_right.is_none() {
                        not_right = Some(p);
                    }
                }
            }
        }
        if !is_cycle {
            // Not recursive: the counts above only matter for linearity.
            return (None, local_linear);
        }
        self.recursive[c] = true;
        if local_regular.is_none()
            && let (Some(l), Some(r)) = (not_left, not_right)
        {
            local_regular = Some(format!(
                "the cycle {} mixes right recursion ({}) and left recursion ({})",
                show_members(ir, ms),
                show_production(ir, l),
                show_production(ir, r)
            ));
        }
        (local_regular, local_linear)
    }

    /// The nonterminals of production `rhs` of `a` (in component `c`): those of `c`, and
    /// what `c` inherits from the components of the others.
    fn scan(&mut self, c: usize, a: u32, rhs: &[IrSymbol]) -> Recursion {
        let mut r = Recursion::default();
        for (i, b) in nonterminals(rhs) {
            r.count += 1;
            let Some(&cb) = self.comp.get(b as usize) else {
                continue;
            };
            if cb as usize == c {
                r.inner += 1;
                r.inner_pos = i;
                if r.inner_names.len() < 2 {
                    r.inner_names.push(b);
                }
                r.direct |= b == a;
            } else {
                self.recursive[c] |= self.recursive.get(cb as usize).copied().unwrap_or(false);
                if self.not_regular[c].is_none() {
                    self.not_regular[c] = self.not_regular.get(cb as usize).copied().flatten();
                }
                if self.not_linear[c].is_none() {
                    self.not_linear[c] = self.not_linear.get(cb as usize).copied().flatten();
                }
            }
        }
        r
    }

    /// The class of the nonterminals of component `c`, why, and whether they are linear.
    fn class_of(&self, c: usize) -> (GrammarClass, String, bool) {
        let reason = |i: Option<u32>| {
            i.and_then(|i| self.reasons.get(i as usize))
                .cloned()
                .unwrap_or_default()
        };
        let lin = self.not_linear.get(c).copied().flatten();
        let (class, why) = match (self.not_regular.get(c).copied().flatten(), lin) {
            (None, _) => (
                GrammarClass::Regular,
                if self.recursive.get(c).copied().unwrap_or(false) {
                    "every cycle is all left-linear or all right-linear".to_string()
                } else {
                    "no recursion".to_string()
                },
            ),
            (Some(r), None) => (GrammarClass::Linear, reason(Some(r))),
            (Some(r), Some(l)) => (
                GrammarClass::General,
                format!("{}; not linear: {}", reason(Some(r)), reason(Some(l))),
            ),
        };
        (class, why, lin.is_none())
    }
}
