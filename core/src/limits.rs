//! Every budget the engine enforces, in one plain struct.
//!
//! A hostile grammar, regex or token sequence can only make the engine do bounded work and use
//! bounded memory: exceeding any field below returns an error naming it
//! ([`crate::LimitKind`]), never a hang or an abort.

use crate::error::{GrammarError, GrammarErrorKind, LimitKind};

/// Budgets for compiling grammars and computing masks. `Limits::default()` suits JSON schemas
/// and hand-written grammars over 100k–200k-token vocabularies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Most lexer DFA states one matcher may build.
    pub max_lexer_states: usize,
    /// Most hash-consed regex expression nodes (grammar lexemes plus derivatives).
    pub max_expr_nodes: usize,
    /// Work allowed for one mask or one token: regex steps (derivatives, simplification,
    /// one unit per lexeme derived when a lexer transition is computed) and Earley steps (one
    /// unit per item a completion or a scan reads). Ambiguous grammars, whose rows grow with
    /// the output, end in [`LimitKind::Fuel`] instead of slowing down without bound.
    ///
    /// Regex steps are counted as they are done: a transition the grammar's shared tables
    /// already hold costs nothing. So one request can run out of fuel while the grammar is
    /// cold and succeed once other matchers have warmed it (the masks are the same either
    /// way; only whether this limit is reached differs). Earley steps cost the same cold or
    /// warm.
    pub fuel_per_mask: u64,
    /// Work allowed for compiling one grammar, every stage together (see [`CompileBudget`]):
    /// front-end rewriting, and regex work (emptiness checks, lowering) at
    /// [`crate::regex::COMPILE_REGEX_WEIGHT`] units a step. The default, 20,000,000, ends
    /// the slowest inputs known within about half a second on the development machine (a
    /// 2-core x86-64): measured cases are listed in `grammar::json`'s module documentation.
    pub compile_fuel: u64,
    /// Most Earley items in one row.
    pub max_items_per_row: usize,
    /// Most Earley items created while computing one mask.
    pub max_items_per_mask: usize,
    /// Most grammar symbols (rule right-hand-side elements plus lexemes) after lowering.
    pub max_grammar_size: usize,
    /// Deepest nesting of groups and postfix operators in a grammar or regex source (and of
    /// subschemas in a JSON Schema, counted from each `$ref` target). The front ends walk
    /// their input on explicit stacks, so the depth costs heap, not stack: compiling under the
    /// default limits runs on a 64 KiB thread stack in optimized builds (tested by
    /// `tests/tests/adversarial_{lark,json}.rs`; JSON Schema text is limited to 64 nested
    /// arrays and objects, see `grammar::json::parse_schema`).
    pub max_nesting_depth: usize,
    /// Largest `n` in a bounded repetition `{m,n}`.
    pub max_repeat: u32,
    /// Heap bytes one compiled grammar plus one matcher may hold: exceeding it is
    /// [`LimitKind::Memory`], checked before a buffer grows (its new capacity, with the old
    /// buffer still counted), never an allocation failure.
    ///
    /// Counted, by capacity: the grammar's rules (with their nonterminal names), its pristine
    /// parser and its template parser (charged to each matcher when it is created, plus room
    /// for one more copy of the pristine tables for a reset); the matcher's Earley items,
    /// rows, `seen` set, byte stack (with room for one trie walk), byte log, token list and
    /// mask copy; the tables its grammar's matchers share, charged to the matcher holding them
    /// during a call: the lexer's transition tables, state sets, slice tables and its
    /// expression store (whose tables get their growth room reserved before regex work), and
    /// remembered state masks. While compiling, the expression store is given a third of the
    /// budget, and the grammar is refused if its parser does not fit four times (pristine,
    /// shared tables, a matcher's, a reset's copy).
    ///
    /// While compiling, each front end charges its transient structures to a quarter of the
    /// budget ([`CompileBudget::charge`], cumulative, never refunded): the JSON front end its
    /// parsed schema values, rewrites (merging, negation), memo keys and IR; the Lark front end
    /// its line index, tokens and rule IR; regex parsing its syntax tree (checked before it is
    /// built). The charges are estimates on the high side, so a tight budget may refuse a
    /// grammar a little before the real heap would reach it.
    ///
    /// Not counted: the [`crate::Vocabulary`] (trie, slices, token tables) belongs to the host
    /// and is shared by every grammar; the caller's mask buffers and source text. The
    /// adversarial suites compile every case again under a 256 KiB budget
    /// (`tests/src/tight.rs`) and hold each to the bound below. Peak heap of compile + one
    /// matcher + its masks stays within
    /// `max_memory_bytes + 64 KiB` (the structs themselves, per-call scratch, lexeme names);
    /// `tests/tests/memory_budget.rs` checks it with a counting allocator for budgets from
    /// 256 KiB to 16 MiB. A single derivative that adds more than a quarter of a table's size
    /// may still grow it unchecked (the check follows it). A matcher of a warm grammar has
    /// less room than one of a cold grammar (the shared tables are charged): when they fill
    /// it, the tables are reset (see [`crate::matcher`]).
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
///
/// It also counts the bytes a front end allocates for its own structures (a parsed schema and
/// its rewrites, Lark tokens and rule trees, regex syntax trees, the grammar IR): every
/// allocation is charged when made and never refunded, up to [`CompileBudget::FRONT_END_SHARE`]
/// of [`Limits::max_memory_bytes`]; beyond it is [`LimitKind::Memory`]. Since nothing is
/// refunded, the front end's peak heap is within that share whatever it frees on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileBudget {
    left: u64,
    /// Front-end bytes charged so far.
    bytes: usize,
    /// Most front-end bytes: `max_memory_bytes / FRONT_END_SHARE`.
    max_bytes: usize,
}

impl CompileBudget {
    /// The front end may allocate `1 / FRONT_END_SHARE` of `max_memory_bytes` in all: the
    /// rest holds the expression store (a third), the grammar and its parsers while they are
    /// built.
    pub const FRONT_END_SHARE: usize = 4;

    /// A full budget for one compile under `limits`.
    pub fn new(limits: &Limits) -> CompileBudget {
        CompileBudget {
            left: limits.compile_fuel,
            bytes: 0,
            max_bytes: limits.max_memory_bytes / Self::FRONT_END_SHARE,
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

    /// Charge `bytes` a front end is about to allocate; `Err(Memory)` (and the charge kept)
    /// when the front end's share cannot hold them. Charge before allocating.
    pub fn charge(&mut self, bytes: usize) -> Result<(), LimitKind> {
        self.bytes = self.bytes.saturating_add(bytes);
        if self.bytes > self.max_bytes {
            return Err(LimitKind::Memory);
        }
        Ok(())
    }

    /// Charge `n` values of `T` (see [`CompileBudget::charge`]).
    pub fn charge_for<T>(&mut self, n: usize) -> Result<(), LimitKind> {
        self.charge(n.saturating_mul(core::mem::size_of::<T>()))
    }

    /// Front-end bytes that may still be charged.
    pub fn bytes_left(&self) -> usize {
        self.max_bytes.saturating_sub(self.bytes)
    }

    /// Front-end bytes charged so far.
    pub fn bytes_charged(&self) -> usize {
        self.bytes
    }
}

/// While compiling, regex fuel is the compile budget: name it so.
pub(crate) fn compile_fuel_error(mut err: GrammarError) -> GrammarError {
    if err.kind == GrammarErrorKind::Limit(LimitKind::Fuel) {
        err.kind = GrammarErrorKind::Limit(LimitKind::CompileFuel);
        err.message = err
            .message
            .replace(LimitKind::Fuel.field(), LimitKind::CompileFuel.field());
    }
    err
}
