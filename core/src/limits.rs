//! Every budget the engine enforces, in one plain struct.
//!
//! A hostile grammar, regex or token sequence can only make the engine do bounded work and use
//! bounded memory: exceeding any field below returns an error naming it
//! ([`crate::LimitKind`]), never a hang or an abort.

use crate::error::LimitKind;

/// Budgets for compiling grammars and computing masks. `Limits::default()` suits JSON schemas
/// and hand-written grammars over 100k–200k-token vocabularies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Most lexer DFA states one matcher may build.
    pub max_lexer_states: usize,
    /// Most hash-consed regex expression nodes (grammar lexemes plus derivatives).
    pub max_expr_nodes: usize,
    /// Regex work (derivative and simplification steps) allowed for one mask or one token.
    pub fuel_per_mask: u64,
    /// Regex work allowed while compiling a grammar (emptiness checks, lowering).
    pub compile_fuel: u64,
    /// Most Earley items in one row.
    pub max_items_per_row: usize,
    /// Most Earley items created while computing one mask.
    pub max_items_per_mask: usize,
    /// Most grammar symbols (rule right-hand-side elements plus lexemes) after lowering.
    pub max_grammar_size: usize,
    /// Deepest nesting of groups in a grammar or regex source (and of subschemas in a JSON
    /// Schema). Compilers recurse natively up to this depth: the default, 200, needs a few
    /// hundred KiB of stack in optimized builds and a few MiB in unoptimized ones.
    pub max_nesting_depth: usize,
    /// Largest `n` in a bounded repetition `{m,n}`.
    pub max_repeat: u32,
    /// Bytes of memory one compiled grammar plus one matcher may hold in tables.
    pub max_memory_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_lexer_states: 50_000,
            max_expr_nodes: 1_000_000,
            fuel_per_mask: 5_000_000,
            compile_fuel: 20_000_000,
            max_items_per_row: 100_000,
            max_items_per_mask: 2_000_000,
            max_grammar_size: 2_000_000,
            max_nesting_depth: 200,
            max_repeat: 10_000,
            max_memory_bytes: 1 << 30,
        }
    }
}

/// The compile budget: one counter of work units shared by every stage that compiles one
/// grammar (front-end parsing and rewriting, schema merging and negation, terminal
/// expansion, regex interning and emptiness checks). It starts at [`Limits::compile_fuel`];
/// running out is [`LimitKind::CompileFuel`], whichever stage spent the last unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileBudget {
    left: u64,
}

impl CompileBudget {
    /// A full budget for one compile under `limits`.
    pub fn new(limits: &Limits) -> CompileBudget {
        CompileBudget {
            left: limits.compile_fuel,
        }
    }

    /// Spend `units` of work; `Err(CompileFuel)` (and nothing left) when the budget cannot
    /// pay for them.
    pub fn spend(&mut self, units: u64) -> Result<(), LimitKind> {
        if self.left < units {
            self.left = 0;
            return Err(LimitKind::CompileFuel);
        }
        self.left -= units;
        Ok(())
    }

    /// Units left.
    pub fn left(&self) -> u64 {
        self.left
    }

    /// Set what is left after a stage that kept its own counter (an [`crate::regex::ExprSet`]
    /// whose fuel was started at [`CompileBudget::left`]); never raises the budget.
    pub fn settle(&mut self, left: u64) {
        self.left = self.left.min(left);
    }
}
