//! Grammar front ends and the compiled [`Grammar`].
//!
//! Every front end lowers to the [`crate::ir::GrammarIr`]; [`Grammar::from_ir`] then interns each
//! lexeme's regex, checks lexemes (non-empty, not matching the empty string), drops
//! unproductive rules, flattens the rules for the Earley parser and prepares the lexer.

pub mod cache;
pub mod gbnf;
pub mod json;
pub mod lark;
mod syntax;

pub use syntax::{CompileOptions, GrammarSyntax, lower_ir};
#[cfg(feature = "llguidance")]
pub mod llguidance;
#[cfg(feature = "structural")]
pub mod structural;

/// The IR moved to [`crate::ir`] (the contract between front ends and the engine); this
/// path is kept for code written against it.
pub use crate::ir;

use crate::sync::Arc;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use crate::earley::{Parser, Rules, Tables};
use crate::error::{GrammarError, GrammarErrorKind, LimitKind};
use crate::ir::{GrammarIr, IrLexeme, IrSymbol, LexemeMode};
use crate::lexer::{LexemeInfo, Lexer};
use crate::limits::{CompileBudget, Limits};
use crate::regex::{ExprId, ExprSet, RegexAst, RegexCompileError, RegexCompileErrorKind};
use crate::vocab::Vocabulary;

/// The error of a front end left out by a cargo feature of sieve-core: `Unsupported`, naming
/// the feature that brings it back.
#[cfg(not(all(
    feature = "json-schema",
    feature = "structural",
    feature = "llguidance"
)))]
pub(crate) fn not_compiled_in(feature: &str, what: &str) -> GrammarError {
    GrammarError::new(
        GrammarErrorKind::Unsupported,
        alloc::format!("{what} are not compiled in: enable sieve-core's cargo feature `{feature}`"),
    )
}

/// A compiled grammar: immutable, `Send + Sync`, cheap to clone (an `Arc`). Create
/// matchers from it with [`crate::Matcher::new`].
#[derive(Debug, Clone)]
pub struct Grammar {
    inner: Arc<GrammarInner>,
}

#[derive(Debug)]
pub(crate) struct GrammarInner {
    /// The vocabulary the grammar was compiled for ([`Grammar::vocab`]).
    pub(crate) vocab: Arc<Vocabulary>,
    /// The vocabulary its matchers walk and push: `vocab` itself, or, when the grammar names
    /// text tokens by id ([`GrammarIr::id_tokens`]), a copy in which those are matched by id
    /// only (`Vocabulary::with_id_tokens`).
    #[cfg(feature = "text-token-ids")]
    pub(crate) matching: Arc<Vocabulary>,
    pub(crate) limits: Limits,
    /// The parser at the start of input, as compiled: matchers rebuild their lexer tables
    /// from it when those fill their budget (see [`crate::Matcher`]).
    pub(crate) pristine: Parser,
    /// A parser at the start of input without tables ([`Parser::take_tables`]) whose
    /// Earley buffers have room: matchers copy it, and a dropped matcher hands its own
    /// back when it has more room (a swap: dropping a matcher never allocates).
    pub(crate) warm: crate::sync::Mutex<Parser>,
    /// The lexer and state-mask tables every matcher of this grammar reads and extends (see
    /// [`crate::matcher`]): a matcher takes them into its parser for the length of one call.
    pub(crate) shared: crate::sync::Mutex<SharedTables>,
    /// The newest read-only snapshot of the shared tables and their generation, which
    /// matchers read without the lock above (see [`crate::matcher`]).
    pub(crate) published: crate::sync::Mutex<Option<(Arc<crate::earley::Snapshot>, u64)>>,
    /// Moves on after each publication: a matcher refetches the snapshot when it changed.
    pub(crate) version: core::sync::atomic::AtomicUsize,
    /// Heap bytes of the master tables after the last call that held them: a matcher
    /// reading a snapshot charges them to its budget beside the snapshot.
    pub(crate) master_bytes: core::sync::atomic::AtomicUsize,
    /// Tests: publish only when the generation moves on ([`Grammar::defer_publishing`]).
    pub(crate) defer_publishing: core::sync::atomic::AtomicBool,
    pub(crate) lexeme_names: Vec<String>,
    /// The longest token's byte length: a trie walk pushes at most this many bytes.
    pub(crate) max_token_len: usize,
    /// Heap bytes of the rules (shared by every parser of the grammar).
    pub(crate) rules_bytes: usize,
    /// `compile_fuel` the compile spent, all stages together ([`Grammar::compile_fuel_spent`]).
    pub(crate) compile_fuel_spent: u64,
}

/// The tables a grammar's matchers share, and how many times they were reset to the
/// pristine parser's (a matcher whose rows name states of older tables replays its output).
#[derive(Debug)]
pub(crate) struct SharedTables {
    pub(crate) tables: Tables,
    pub(crate) generation: u64,
    /// What the published snapshot holds: the tables' changes and generation when it was
    /// made, its bytes, and the calls that extended the tables since.
    pub(crate) published_changes: u64,
    pub(crate) published_generation: Option<u64>,
    pub(crate) published_bytes: usize,
    pub(crate) calls_since_publish: usize,
    /// Matcher ids: the next to give out, and the matcher of the last master call.
    pub(crate) next_matcher: u64,
    pub(crate) last_caller: u64,
}

/// Special tokens resolve to their encodings (see [`crate::vocab`]), so a grammar's
/// `<|name|>` and `<[id]>` match those token ids and nothing else. `<[id]>` on a text token
/// resolves to the encoding the token would have as a special token, and the compiled
/// grammar matches that token by id only ([`Vocabulary::with_id_tokens`]).
impl crate::ir::builder::SpecialTokens for Vocabulary {
    fn by_name(&self, name: &str) -> Vec<Vec<u8>> {
        self.specials_named(name)
            .map(Vocabulary::special_encoding)
            .collect()
    }

    fn by_id(&self, id: u32) -> Option<Vec<u8>> {
        self.is_special(id)
            .then(|| Vocabulary::special_encoding(id))
    }

    fn all_but_eos(&self) -> Vec<Vec<u8>> {
        self.special_tokens()
            .iter()
            .filter(|id| !self.eos_tokens().contains(id))
            .map(|&id| Vocabulary::special_encoding(id))
            .collect()
    }
    #[cfg(feature = "text-token-ids")]
    fn text_by_id(&self, id: u32) -> Option<Vec<u8>> {
        (!self.is_special(id) && !self.token_text(id).is_empty())
            .then(|| Vocabulary::special_encoding(id))
    }
}

/// The IR after the lexeme-boundary repair (`core/docs/boundaries.md`) where the
/// `boundary-repair` feature is on, with the expressions its analysis compiled; as it came
/// without the feature.
pub(crate) fn repaired(
    ir: GrammarIr,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<(GrammarIr, Option<crate::ir::regular::Compiled>), GrammarError> {
    #[cfg(feature = "boundary-repair")]
    {
        crate::ir::regular::repair_compiled(ir, limits, budget)
    }
    #[cfg(not(feature = "boundary-repair"))]
    {
        let _ = (limits, budget);
        Ok((ir, None))
    }
}

/// Why `<[id]>` names no token: the end of its error message.
#[cfg(feature = "text-token-ids")]
pub(crate) const ID_TOKEN_MISS: &str = "out of range or unused";
/// Why `<[id]>` names no token: the end of its error message.
#[cfg(not(feature = "text-token-ids"))]
pub(crate) const ID_TOKEN_MISS: &str = "out of range, unused, or a text token: this build \
     matches text tokens by id only with the `text-token-ids` feature";

impl Grammar {
    /// Compile a Lark-style grammar (see `core/docs/lark.md`).
    pub fn from_lark(
        src: &str,
        vocab: &Arc<Vocabulary>,
        limits: &Limits,
    ) -> Result<Grammar, GrammarError> {
        Grammar::from_lark_with(src, &json::JsonOptions::default(), vocab, limits)
    }

    /// [`Grammar::from_lark`] with `json` as the options of its inline `%json` schemas.
    pub fn from_lark_with(
        src: &str,
        json: &json::JsonOptions,
        vocab: &Arc<Vocabulary>,
        limits: &Limits,
    ) -> Result<Grammar, GrammarError> {
        let mut budget = CompileBudget::new(limits);
        let ctx = lark::Context {
            specials: vocab.as_ref(),
            json,
            grammars: &lark::NoSubGrammars,
        };
        let ir = lark::parse_in(src, &ctx, limits, &mut budget)?;
        let (ir, compiled) = repaired(ir, limits, &mut budget)?;
        // LLGuidance accepts terminals such as `/(.|\n)*/` (LiteRT-LM's tool-call strings).
        Grammar::build_compiled(&ir, compiled, vocab, limits, true, &mut budget)
    }

    /// Compile an LLGuidance request: Lark text, or a JSON list of Lark grammars and JSON
    /// Schemas that reference each other by `@name` (see [`llguidance`]). `json` applies to
    /// every JSON Schema in it.
    pub fn from_llguidance(
        data: &str,
        json: &json::JsonOptions,
        vocab: &Arc<Vocabulary>,
        limits: &Limits,
    ) -> Result<Grammar, GrammarError> {
        #[cfg(not(feature = "llguidance"))]
        {
            let _ = (data, json, vocab, limits);
            Err(not_compiled_in("llguidance", "LLGuidance requests"))
        }
        #[cfg(feature = "llguidance")]
        {
            let mut budget = CompileBudget::new(limits);
            let lowered = llguidance::lower(data, json, vocab, limits, &mut budget)?;
            let (ir, compiled) = repaired(lowered.ir, limits, &mut budget)?;
            Grammar::build_compiled(&ir, compiled, vocab, limits, lowered.lark, &mut budget)
        }
    }

    /// Compile a structural tag (XGrammar's JSON format for tool calls and reasoning; see
    /// [`structural`] and `core/docs/structural.md`). `json` applies to every JSON Schema in
    /// it.
    pub fn from_structural_tag(
        text: &str,
        json: &json::JsonOptions,
        vocab: &Arc<Vocabulary>,
        limits: &Limits,
    ) -> Result<Grammar, GrammarError> {
        #[cfg(not(feature = "structural"))]
        {
            let _ = (text, json, vocab, limits);
            Err(not_compiled_in("structural", "structural tags"))
        }
        #[cfg(feature = "structural")]
        {
            let mut budget = CompileBudget::new(limits);
            let ir = structural::lower(text, json, vocab, limits, &mut budget)?;
            let (ir, compiled) = repaired(ir, limits, &mut budget)?;
            // Free text (`any_text`) may be empty where the format allows it.
            Grammar::build_compiled(&ir, compiled, vocab, limits, true, &mut budget)
        }
    }

    /// Compile a regex: the output must match `pattern` in full (`regex-syntax` syntax).
    pub fn from_regex(
        pattern: &str,
        vocab: &Arc<Vocabulary>,
        limits: &Limits,
    ) -> Result<Grammar, GrammarError> {
        let mut budget = CompileBudget::new(limits);
        // Two copies of the pattern: the lexeme's name and its regex.
        budget
            .charge(pattern.len().saturating_add(2).saturating_mul(2))
            .map_err(GrammarError::limit)?;
        let ir = regex_ir(pattern);
        Grammar::build(&ir, vocab, limits, true, &mut budget)
    }

    /// Compile a JSON Schema (see [`json`] for the keywords covered and the options). The
    /// report lists every keyword not compiled exactly.
    pub fn from_json_schema(
        schema: &serde_json::Value,
        opts: &json::JsonOptions,
        vocab: &Arc<Vocabulary>,
        limits: &Limits,
    ) -> Result<(Grammar, json::CoverageReport), GrammarError> {
        Grammar::from_json_schema_within(
            schema,
            opts,
            vocab,
            limits,
            &mut CompileBudget::new(limits),
        )
    }

    /// [`Grammar::from_json_schema`] paid from `budget` (which may already hold what parsing
    /// the schema text charged).
    fn from_json_schema_within(
        schema: &serde_json::Value,
        opts: &json::JsonOptions,
        vocab: &Arc<Vocabulary>,
        limits: &Limits,
        budget: &mut CompileBudget,
    ) -> Result<(Grammar, json::CoverageReport), GrammarError> {
        let (ir, report) = json::compile(schema, opts, limits, budget)?;
        Ok((Grammar::build(&ir, vocab, limits, false, budget)?, report))
    }

    /// [`Grammar::from_json_schema`] on schema text; invalid JSON is a
    /// [`GrammarErrorKind::Syntax`] error with its line and column.
    pub fn from_json_schema_str(
        schema: &str,
        opts: &json::JsonOptions,
        vocab: &Arc<Vocabulary>,
        limits: &Limits,
    ) -> Result<(Grammar, json::CoverageReport), GrammarError> {
        let mut budget = CompileBudget::new(limits);
        let value = json::parse_schema_within(schema, &mut budget)?;
        Grammar::from_json_schema_within(&value, opts, vocab, limits, &mut budget)
    }

    /// Compile a grammar in IR form.
    pub fn from_ir(
        ir: &GrammarIr,
        vocab: &Arc<Vocabulary>,
        limits: &Limits,
    ) -> Result<Grammar, GrammarError> {
        Grammar::build(ir, vocab, limits, false, &mut CompileBudget::new(limits))
    }

    /// Compile the IR [`lower_ir`] gives, as its front end does: a lexeme matching the empty
    /// string is split into an optional non-empty lexeme instead of being an error.
    pub fn from_lowered_ir(
        ir: &GrammarIr,
        vocab: &Arc<Vocabulary>,
        limits: &Limits,
    ) -> Result<Grammar, GrammarError> {
        Grammar::build(ir, vocab, limits, true, &mut CompileBudget::new(limits))
    }

    /// `allow_empty_lexemes`: a lexeme matching the empty string is split into an optional
    /// non-empty lexeme instead of being an error (bare regexes, Lark terminals). Regex work is
    /// paid from what the front end left of `budget`; so is the copy of `ir` that such a
    /// split needs (the only copy made: [`GrammarIr::heap_bytes`] must fit what the front
    /// end left of its share of `max_memory_bytes`).
    pub(crate) fn build(
        ir: &GrammarIr,
        vocab: &Arc<Vocabulary>,
        limits: &Limits,
        allow_empty_lexemes: bool,
        budget: &mut CompileBudget,
    ) -> Result<Grammar, GrammarError> {
        Grammar::build_compiled(ir, None, vocab, limits, allow_empty_lexemes, budget)
    }

    /// [`Grammar::build`] in the store of `compiled` (the lexemes it compiled are not
    /// compiled again), when there is one.
    pub(crate) fn build_compiled(
        ir: &GrammarIr,
        compiled: Option<crate::ir::regular::Compiled>,
        vocab: &Arc<Vocabulary>,
        limits: &Limits,
        allow_empty_lexemes: bool,
        budget: &mut CompileBudget,
    ) -> Result<Grammar, GrammarError> {
        #[cfg(feature = "text-token-ids")]
        let matching = Grammar::matching_vocab(ir, vocab, budget)?;
        #[cfg(feature = "text-token-ids")]
        let vocabs = (vocab, &matching);
        #[cfg(not(feature = "text-token-ids"))]
        let vocabs = (vocab, vocab);
        let mut fuel_left = 0;
        let built = Grammar::build_with(
            ir,
            compiled,
            vocabs,
            limits,
            allow_empty_lexemes,
            budget.left(),
            &mut fuel_left,
            budget.bytes_left(),
        )
        .map_err(crate::limits::compile_fuel_error);
        budget.settle(fuel_left);
        built
    }

    /// The vocabulary matchers of `ir` use: `vocab`, or when `ir` names text tokens by id, a
    /// copy matching those by id only (its build paid from `budget`: a unit of fuel per
    /// token id, and the bytes of the copy).
    #[cfg(feature = "text-token-ids")]
    fn matching_vocab(
        ir: &GrammarIr,
        vocab: &Arc<Vocabulary>,
        budget: &mut CompileBudget,
    ) -> Result<Arc<Vocabulary>, GrammarError> {
        if ir.id_tokens.is_empty() {
            return Ok(Arc::clone(vocab));
        }
        budget
            .spend(vocab.vocab_size() as u64)
            .and_then(|()| budget.charge(vocab.bytes_used()))
            .map_err(GrammarError::limit)?;
        // Unreachable for ids a front end checked with `SpecialTokens::text_by_id` (short
        // encodings for tokens already in the trie). The error's own text is left out: its
        // `Display` alone is 3 KB of flash (tests/embedded-size).
        let copy = vocab.with_id_tokens(&ir.id_tokens).map_err(|_| {
            GrammarError::new(
                GrammarErrorKind::UnknownSpecialToken,
                "the text tokens named by id do not fit a copy of the vocabulary",
            )
        })?;
        Ok(Arc::new(copy))
    }

    /// `vocabs`: the vocabulary given and the one matchers use ([`GrammarInner::matching`]).
    #[allow(clippy::too_many_arguments)]
    fn build_with(
        ir: &GrammarIr,
        compiled: Option<crate::ir::regular::Compiled>,
        vocabs: (&Arc<Vocabulary>, &Arc<Vocabulary>),
        limits: &Limits,
        allow_empty_lexemes: bool,
        fuel: u64,
        fuel_left: &mut u64,
        bytes_left: usize,
    ) -> Result<Grammar, GrammarError> {
        let (given, vocab) = vocabs;
        let (mut exprs, compiled) = match compiled {
            Some(c) => (c.exprs, Some(c.known)),
            None => (ExprSet::new(limits), None),
        };
        exprs.set_fuel(fuel);
        exprs.set_weight(crate::regex::COMPILE_REGEX_WEIGHT);
        // The store checks its size before it adds a node, and a table that doubles holds
        // two buffers at once: a third of the budget keeps its peak within the budget.
        exprs.max_memory = limits.max_memory_bytes / 3;
        let mut lexemes = Vec::with_capacity(ir.lexemes.len());
        let mut productive = Vec::with_capacity(ir.lexemes.len());
        let mut nullable_lexemes = Vec::new();
        for (idx, lex) in ir.lexemes.iter().enumerate() {
            let known = compiled.as_ref().and_then(|c| c.get(&lex.regex));
            let mut e = match known {
                Some(e) => e,
                None => exprs
                    .compile(&lex.regex)
                    .map_err(|err| regex_error(err, lex))?,
            };
            if exprs.is_nullable(e) {
                if !allow_empty_lexemes {
                    return Err(located(
                        GrammarError::new(
                            GrammarErrorKind::EmptyLexeme,
                            alloc::format!("terminal {} matches the empty string", lex.name),
                        ),
                        lex,
                    ));
                }
                let not_eps = exprs.mk_not(ExprId::EPSILON)?;
                e = exprs.mk_and(&[e, not_eps])?;
                nullable_lexemes.push(idx as u32);
            }
            let empty = exprs.is_empty_language(e)?;
            productive.push(!empty);
            lexemes.push(LexemeInfo {
                expr: e,
                lazy: lex.mode == LexemeMode::Lazy,
                ignore: lex.ignore,
            });
        }
        // A nullable lexeme L keeps its non-empty part, and every use of L becomes a use of
        // a fresh nonterminal `L?` with rules `L? → L` and `L? → ε` (in a copy of the IR,
        // charged). One helper per lexeme, so the copy grows linearly. An `%ignore` lexeme
        // is optional already: it only loses the empty string.
        let extended;
        let ir = if nullable_lexemes
            .iter()
            .all(|&l| ir.lexemes[l as usize].ignore)
        {
            ir
        } else {
            if ir.heap_bytes().saturating_mul(2) > bytes_left {
                return Err(GrammarError::limit(LimitKind::Memory));
            }
            let mut ir = ir.clone();
            let mut optional = alloc::collections::BTreeMap::new();
            for &l in &nullable_lexemes {
                let lex = &ir.lexemes[l as usize];
                if lex.ignore {
                    continue;
                }
                let name = alloc::format!("{}?", lex.name);
                let span = lex.span;
                let nt = ir.add_nonterminal(name, span);
                ir.add_rule(nt, vec![IrSymbol::Lexeme(l)]);
                ir.add_rule(nt, Vec::new());
                optional.insert(l, nt);
            }
            let helpers = ir.rules.len() - 2 * optional.len();
            for r in &mut ir.rules[..helpers] {
                for s in &mut r.rhs {
                    if let IrSymbol::Lexeme(l) = *s
                        && let Some(&nt) = optional.get(&l)
                    {
                        *s = IrSymbol::Nonterminal(nt);
                    }
                }
            }
            extended = ir;
            &extended
        };
        let rules = Arc::new(Rules::build(ir, &productive, limits)?);
        let rules_bytes = core::mem::size_of::<Rules>() + rules.bytes_used();
        #[cfg(feature = "structural")]
        let tag_slice = vocab
            .slices()
            .iter()
            .position(|s| s.pattern() == crate::slicer::TAG_FREE_TEXT);
        #[cfg(not(feature = "structural"))]
        let tag_slice = None;
        // The tag slice is compiled by the lexer, and only if it keeps it.
        let mut slice_exprs = Vec::with_capacity(vocab.slices().len());
        for (k, slice) in vocab.slices().iter().enumerate() {
            if Some(k) == tag_slice {
                slice_exprs.push(ExprId::NOTHING);
                continue;
            }
            let ast = RegexAst::Pattern(slice.pattern().into(), Default::default());
            slice_exprs.push(exprs.compile(&ast).map_err(|e| match e.kind {
                RegexCompileErrorKind::Limit(k) => GrammarError::limit(k),
                _ => GrammarError::new(GrammarErrorKind::InvalidRegex, e.message),
            })?);
        }
        #[cfg(feature = "json-schema")]
        let slice_bytes = vocab
            .slices()
            .iter()
            .map(|s| s.one_byte_strings())
            .collect();
        #[cfg(not(feature = "json-schema"))]
        let slice_bytes = Vec::new();
        let lexer = Lexer::with_slices(exprs, lexemes, slice_exprs, slice_bytes, tag_slice, limits);
        *fuel_left = lexer.exprs().fuel_left();
        let mut initial = Parser::new(rules, lexer, limits)?;
        // The grammar holds the pristine parser and the shared tables; a matcher holds the
        // tables during a call and needs room for a reset's copy: all of it must fit.
        let held = initial
            .heap_bytes()
            .saturating_mul(4)
            .saturating_add(rules_bytes);
        if held > limits.max_memory_bytes {
            return Err(GrammarError::limit(LimitKind::Memory));
        }
        let max_token_len = (0..vocab.vocab_size() as u32)
            .map(|t| vocab.trie_bytes(t).len())
            .max()
            .unwrap_or(0);
        // The compile's derivative cache stays in the shared tables (a strict `oneOf` of
        // patterns, MaskBench's Github_easy---o65510, needs its 47 MB to stay within
        // `fuel_per_mask` on the first masks); the pristine parser is only copied after a
        // budget error and does without (bench/perf.md).
        let mut warm = initial.clone();
        let tables = warm.take_tables();
        initial.clear_deriv_cache();
        Ok(Grammar {
            inner: Arc::new(GrammarInner {
                vocab: Arc::clone(given),
                #[cfg(feature = "text-token-ids")]
                matching: Arc::clone(vocab),
                limits: limits.clone(),
                pristine: initial,
                warm: crate::sync::Mutex::new(warm),
                shared: crate::sync::Mutex::new(SharedTables {
                    tables,
                    generation: 0,
                    published_changes: 0,
                    published_generation: None,
                    published_bytes: 0,
                    calls_since_publish: 0,
                    next_matcher: 0,
                    last_caller: u64::MAX,
                }),
                published: crate::sync::Mutex::new(None),
                version: core::sync::atomic::AtomicUsize::new(0),
                master_bytes: core::sync::atomic::AtomicUsize::new(0),
                defer_publishing: core::sync::atomic::AtomicBool::new(false),
                lexeme_names: ir.lexemes.iter().map(|l| l.name.clone()).collect(),
                max_token_len,
                rules_bytes,
                // `budget.left()` at the start of the build was `fuel`; it ends at
                // `fuel_left` (`CompileBudget::settle`).
                compile_fuel_spent: limits.compile_fuel.wrapping_sub(*fuel_left),
            }),
        })
    }

    /// The `Limits::compile_fuel` its compile spent, every stage together (front end, regex
    /// interning, lexer set-up): a deterministic count of the compile's work, for tests that
    /// bound work by counts rather than clocks.
    pub fn compile_fuel_spent(&self) -> u64 {
        self.inner.compile_fuel_spent
    }

    /// The vocabulary this grammar was compiled for.
    pub fn vocab(&self) -> &Arc<Vocabulary> {
        &self.inner.vocab
    }

    /// The vocabulary matchers walk and push: [`Grammar::vocab`], or its copy in which the
    /// text tokens the grammar names by id are matched by id only.
    pub(crate) fn match_vocab(&self) -> &Arc<Vocabulary> {
        #[cfg(feature = "text-token-ids")]
        return &self.inner.matching;
        #[cfg(not(feature = "text-token-ids"))]
        &self.inner.vocab
    }

    /// The limits it was compiled with (matchers use them too).
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// Lexeme names, by lexeme id.
    pub fn lexeme_names(&self) -> &[String] {
        &self.inner.lexeme_names
    }

    /// Heap bytes the grammar holds and charges to every matcher's `max_memory_bytes`: the
    /// rules, the pristine parser and the table-less template (see [`crate::Limits::max_memory_bytes`]).
    /// Not the shared tables ([`Grammar::tables_bytes`]): a matcher counts them while it
    /// holds them.
    pub fn bytes_used(&self) -> usize {
        let names: usize = self
            .inner
            .lexeme_names
            .iter()
            .map(|n| n.capacity() + core::mem::size_of::<String>())
            .sum();
        #[cfg(feature = "text-token-ids")]
        let matching = if Arc::ptr_eq(&self.inner.vocab, &self.inner.matching) {
            0
        } else {
            self.inner.matching.bytes_used()
        };
        #[cfg(not(feature = "text-token-ids"))]
        let matching = 0;
        self.inner.rules_bytes
            + matching
            + names
            + self.inner.pristine.heap_bytes()
            + self.inner.warm.lock().heap_bytes()
    }

    /// Heap bytes of the tables the grammar's matchers share (lexer and state masks), as
    /// they are now; they grow as matchers explore the grammar.
    pub fn tables_bytes(&self) -> usize {
        self.inner.shared.lock().tables.heap_bytes()
    }

    /// A parser at the start of input for a new matcher (without tables: a copy of the
    /// roomiest one handed back), the shared tables' generation, the grammar's charge to
    /// its budget at that moment, and an id for the matcher ([`Grammar::bytes_used`] plus room for a reset's copy of
    /// the pristine tables).
    pub(crate) fn start_parser(&self) -> (Parser, u64, usize, u64) {
        let charge = self.bytes_used() + self.inner.pristine.heap_bytes();
        let parser = self.inner.warm.lock().clone();
        let mut shared = self.inner.shared.lock();
        let id = shared.next_matcher;
        shared.next_matcher = id.wrapping_add(1);
        (parser, shared.generation, charge, id)
    }

    /// For tests of the snapshot scheme (see `core/src/matcher/shared.rs`): publish a new
    /// snapshot of the shared tables only when their generation moves on, so that matchers
    /// keep reading an old one and their steps miss into the master tables. Masks are the
    /// same either way.
    #[doc(hidden)]
    pub fn defer_publishing(&self, on: bool) {
        self.inner
            .defer_publishing
            .store(on, core::sync::atomic::Ordering::Relaxed);
    }

    pub(crate) fn inner(&self) -> &GrammarInner {
        &self.inner
    }
}

/// The IR of a bare regex: `start → /pattern/`.
pub(crate) fn regex_ir(pattern: &str) -> GrammarIr {
    let mut ir = GrammarIr::default();
    let start = ir.add_nonterminal("start", None);
    ir.start = start;
    let lex = ir.add_lexeme(IrLexeme {
        name: alloc::format!("/{pattern}/"),
        regex: RegexAst::Pattern(pattern.into(), Default::default()),
        mode: LexemeMode::Greedy,
        ignore: false,
        span: None,
    });
    ir.add_rule(start, vec![IrSymbol::Lexeme(lex)]);
    ir
}

fn located(mut err: GrammarError, lex: &IrLexeme) -> GrammarError {
    if err.span.is_none() {
        err.span = lex.span;
    }
    err
}

fn regex_error(err: RegexCompileError, lex: &IrLexeme) -> GrammarError {
    let kind = match err.kind {
        RegexCompileErrorKind::Limit(k) => GrammarErrorKind::Limit(k),
        RegexCompileErrorKind::Unsupported => GrammarErrorKind::Unsupported,
        _ => GrammarErrorKind::InvalidRegex,
    };
    located(
        GrammarError::new(kind, alloc::format!("in {}: {}", lex.name, err.message)),
        lex,
    )
}
