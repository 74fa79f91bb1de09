//! The per-sequence matcher: token masks, token consumption, rollback.
//!
//! A [`Matcher`] owns its Earley state (items, rows, the byte stack), its byte log and its
//! last mask. The lazily built tables (the lexer's states and transitions, the masks
//! remembered per lexer state) belong to the grammar and are shared by all its matchers, in
//! two forms (see `matcher/shared.rs`): an immutable published snapshot that masks and
//! tokens read without any lock, so that matchers of one grammar run in parallel, and the
//! master tables, which a call takes into the matcher's parser under the grammar's lock
//! when the snapshot lacks an entry (a cold state), and gives back when it returns. So a
//! matcher holds only what grows with its own output (matcher bytes p50 about 23 KB over
//! 300 MaskBench files, was 557 KB with a copy of the tables each), and every matcher starts
//! with what earlier ones built. Consumed tokens are pushed byte by byte; the parser keeps
//! one entry per byte, so `rollback(n)` is a truncation.
//!
//! The mask walks the token trie with the parser as recognizer: token `t` is allowed iff all
//! its bytes can be pushed, i.e. the output extended by `t` is still a prefix of some sentence
//! of the grammar. EOS tokens are allowed exactly when the output so far is a sentence. Once
//! an EOS token is consumed the matcher is stopped and its mask holds only EOS.
//!
//! Errors are sticky: after one, every call returns it until [`Matcher::reset`].
//!
//! # Lexer rebuilds
//! The tables only grow: every state a mask walk reaches stays in them, most of them never
//! on any output's path. When a mask or a token runs into the lexer's budgets
//! (`max_lexer_states`, `max_expr_nodes`, `max_memory_bytes`), the matcher resets the shared
//! tables to the grammar's pristine ones and replays its output's bytes (token by token,
//! each with the fuel it had), then retries once. The reset moves the tables' generation
//! on: every other matcher, whose rows name states of the old tables, replays its own
//! output at its next call. Only what the paths need is rebuilt, so a long generation is
//! limited by its own path, not by everything the masks explored. Masks are the same either
//! way; a reset costs each matcher one replay and one cold mask.
//!
//! # Memory
//! A matcher's parser, byte log and mask copy share one budget, `max_memory_bytes`, with the
//! grammar it came from: the grammar's own structures ([`Grammar::bytes_used`], taken when
//! the matcher is created), room for a reset's copy of the pristine tables, and, during a
//! call, the shared tables are charged first, then every buffer of the matcher is checked
//! before it grows (see [`crate::Limits::max_memory_bytes`]). Running out is
//! [`LimitKind::Memory`].

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::earley::{Completion, Parser};
use crate::error::{LimitKind, MatcherError};
use crate::grammar::Grammar;
use crate::slicer::Slice;
use crate::toktrie::Recognizer;
use crate::vocab::Vocabulary;
use sieve_kernels as kernels;

mod budget;
mod cost;
mod draft_tree;
mod gated;
mod shared;

pub use cost::MaskCost;
pub use draft_tree::{DraftTreeError, DraftTreeFill, check_parents as check_draft_tree_parents};
pub use gated::GatePhase;

/// Forced bytes are searched at most this far ahead.
const MAX_FORCED_BYTES: usize = 256;

/// A completion budget mode has verified (see [`Matcher::compute_mask_within`]): `bytes`
/// take the parser from `depth` bytes of output to an accepting state.
#[derive(Debug, Clone)]
struct Plan {
    depth: usize,
    bytes: Vec<u8>,
}

#[derive(Debug, Clone, Copy)]
struct Consumed {
    /// Parser depth before the token.
    depth_before: usize,
}

/// Counters of how masks were computed (for benchmarks and tuning).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaskStats {
    /// Masks computed.
    pub masks: u64,
    /// Masks copied from the previous one (same parser state).
    pub cached: u64,
    /// Masks where a slice was OR-ed in and only the rest of the trie walked.
    pub sliced: u64,
    /// Masks computed from the lexer state's remembered mask (see
    /// [`crate::earley::Parser::state_mask_walk`]), built on the spot or reused.
    pub state_masks: u64,
    /// Times the lexer tables were rebuilt after filling a budget (see the module docs).
    pub lexer_rebuilds: u64,
    /// Masks computed on the grammar's published snapshot, without its lock (see
    /// `matcher/shared.rs`); cached copies included.
    pub lock_free: u64,
    /// Fuel units spent by this matcher's calls (Earley work and lexer construction, as
    /// `Limits::fuel_per_mask` counts them): a deterministic count of work, for tests that
    /// bound work by counts rather than clocks.
    pub fuel: u64,
    /// The most fuel one [`Matcher::compute_mask`], [`Matcher::compute_mask_within`] or
    /// [`Matcher::consume_token`] call spent.
    pub max_step_fuel: u64,
}

/// Per-sequence constraint state. Cheap to create from a [`Grammar`]; `Send`, used from one
/// thread at a time.
#[derive(Debug, Clone)]
pub struct Matcher {
    grammar: Grammar,
    parser: Parser,
    consumed: Vec<Consumed>,
    /// The bytes of the consumed tokens (one per parser entry), replayed by a rebuild.
    bytes: Vec<u8>,
    stopped: bool,
    error: Option<MatcherError>,
    /// The last mask computed and the parser state it was computed in.
    cached_mask: Vec<u32>,
    cached_key: Option<(u64, u32)>,
    /// Whether masks computed are remembered in `cached_mask` (off while
    /// [`Matcher::fill_draft_tree`] visits its nodes).
    remember: bool,
    stats: MaskStats,
    /// Fuel spent on tables this matcher held (master calls), settled when it gives them
    /// back; with the parser's snapshot count, [`MaskStats::fuel`].
    fuel_done: u64,
    /// `Parser::fuel_counter` when the held tables were taken.
    fuel_mark: u64,
    /// The grammar's charge to this matcher's memory budget (see the module docs).
    shared: usize,
    /// Byte-stack room a trie walk needs beyond the output: the longest token.
    walk_room: usize,
    /// The generation of the grammar's shared tables this parser's rows name states of.
    generation: u64,
    /// The parser holds the grammar's shared tables (inside [`Matcher::with_tables`]).
    holding: bool,
    /// A rebuild reset the shared tables: their generation moves on when they go back.
    reset_tables: bool,
    /// The grammar's snapshot version and generation the parser reads (see
    /// `matcher/shared.rs`), and the published snapshot's bytes, charged during a
    /// master call.
    /// Given by the grammar (a fork keeps it): tells the publisher whether one matcher
    /// alone extends the tables (see `matcher/shared.rs`).
    id: u64,
    snap_version: usize,
    /// The snapshot version a step last missed in (see `shared::read_snapshot`).
    miss_version: usize,
    snap_generation: u64,
    snapshot_charge: usize,
    /// Shortest-completion state: the grammar's length bounds, row costs, search scratch.
    completion: Completion,
    /// The best completion budget mode knows, kept across `consume_token` (dropped by
    /// `rollback`, `reset` and any token that leaves it).
    plan: Option<Plan>,
    /// Budget mode's last full walk: the parser state key and the most tokens the shortest
    /// completion after any allowed token takes there (`None`: some token has none). A
    /// budget at least that large keeps every token, so the walk is skipped.
    widest: Option<((u64, u32), Option<usize>)>,
    /// Budget mode's completion counts after tokens, kept while the top row is the same.
    counts: budget::CountCache,
    /// The reasoning phase and triggers in front of the grammar ([`Matcher::with_gate`]).
    gate: Option<Box<gated::GateRun>>,
}

/// `bytes` (forced output) as tokens: text runs through `tokenize`, each special token's
/// encoding (see [`Vocabulary::special_encoding`]) as its id. Stops where the tokens stop
/// spelling `bytes`; returns them and how many bytes they spell.
fn forced_tokens(
    vocab: &Vocabulary,
    bytes: &[u8],
    tokenize: &mut dyn FnMut(&[u8]) -> Option<Vec<u32>>,
) -> (Vec<u32>, usize) {
    let trie = vocab.trie();
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let text = rest
            .iter()
            .position(|&b| b == Vocabulary::SPECIAL_PREFIX)
            .unwrap_or(rest.len());
        if text == 0 {
            match trie.longest_prefix_under(&[], rest) {
                Some((t, len)) if vocab.is_special(t) => {
                    out.push(t);
                    at += len;
                    continue;
                }
                _ => break,
            }
        }
        let Some(ids) = tokenize(&rest[..text]) else {
            break;
        };
        let end = at + text;
        for t in ids {
            let tb = vocab.trie_bytes(t);
            if tb.is_empty() || !bytes[at..end].starts_with(tb) {
                return (out, at);
            }
            out.push(t);
            at += tb.len();
        }
        if at < end {
            break;
        }
    }
    (out, at)
}

impl Matcher {
    /// A matcher at the start of the grammar.
    pub fn new(grammar: &Grammar) -> Matcher {
        let (mut parser, generation, shared, id) = grammar.start_parser();
        parser.reset_fuel_count();
        let mut m = Matcher {
            grammar: grammar.clone(),
            parser,
            consumed: Vec::new(),
            bytes: Vec::new(),
            stopped: false,
            error: None,
            cached_mask: Vec::new(),
            cached_key: None,
            remember: true,
            stats: MaskStats::default(),
            fuel_done: 0,
            fuel_mark: 0,
            shared,
            walk_room: grammar.inner().max_token_len + 1,
            generation,
            holding: false,
            reset_tables: false,
            id,
            snap_version: usize::MAX,
            miss_version: usize::MAX,
            snap_generation: u64::MAX,
            snapshot_charge: 0,
            completion: Completion::default(),
            plan: None,
            widest: None,
            counts: budget::CountCache::default(),
            gate: None,
        };
        m.charge_outside();
        if m.parser.free_bytes() == 0 {
            m.error = Some(MatcherError::Limit(LimitKind::Memory));
            return m;
        }
        // The room the last matcher handed back needed, and the mask copy: reserved (and
        // charged) now so that the first masks do not allocate. Without the room it is
        // reserved again, under the budget, by the step that needs it.
        let (bytes, tokens) = m.parser.output_room;
        let _ = m.reserve_mask_copy(m.mask_words());
        let _ = crate::lexer::reserve(&mut m.bytes, bytes, m.parser.free_bytes());
        m.charge_outside();
        let _ = crate::lexer::reserve(&mut m.consumed, tokens, m.parser.free_bytes());
        m.charge_outside();
        m
    }

    /// Run `f` with the grammar's master tables in this matcher's parser: they are taken
    /// under the grammar's lock and given back when `f` returns (master calls take turns;
    /// steps on the published snapshot take no lock, see `matcher/shared.rs`). If they were
    /// reset since this parser last held them, its rows name states of the old ones: the
    /// output is replayed first. Calls nest (a held matcher runs `f` directly).
    fn with_tables<T>(&mut self, f: impl FnOnce(&mut Matcher) -> T) -> T {
        if self.holding {
            return f(self);
        }
        let grammar = self.grammar.clone();
        let inner = grammar.inner();
        let mut shared = inner.shared.lock();
        if self.snapshot_charge != shared.published_bytes {
            // On the master tables: the published snapshot is charged beside them.
            self.snapshot_charge = shared.published_bytes;
            self.charge_outside();
        }
        if shared.tables.is_placeholder() {
            // Tables lost to a panic inside a call (they stayed in that parser): start over
            // from the pristine ones.
            shared.tables = inner.pristine.tables();
            shared.generation += 1;
        }
        self.parser.swap_tables(&mut shared.tables);
        self.fuel_mark = self.parser.fuel_counter();
        self.holding = true;
        if shared.generation != self.generation {
            self.generation = shared.generation;
            self.parser.reset_to_start();
            self.cached_key = None;
            // Lexer state ids are renamed with the tables.
            self.widest = None;
            self.counts = budget::CountCache::default();
            self.completion.forget_exprs();
            if self.error.is_none() && !self.replay() {
                // The tables filled up again (other matchers explored since): reset them.
                let kind = self.parser.error().unwrap_or(LimitKind::LexerStates);
                if !self.rebuild_lexer(kind) {
                    self.error = Some(MatcherError::Limit(kind));
                }
            }
        }
        let out = f(self);
        self.settle_fuel();
        self.holding = false;
        if core::mem::take(&mut self.reset_tables) {
            shared.generation += 1;
            self.generation = shared.generation;
        }
        // Only a call that extended the tables (or reset them) can publish or change what
        // they weigh: the rest skip the bookkeeping.
        let extended = self.parser.tables_changes() != shared.published_changes
            || shared.published_generation != Some(shared.generation);
        // What this matcher's budget leaves beside the tables and the published snapshot.
        let free = if extended {
            self.parser.free_bytes()
        } else {
            0
        };
        self.parser.swap_tables(&mut shared.tables);
        if extended {
            inner.master_bytes.store(
                shared.tables.heap_bytes(),
                core::sync::atomic::Ordering::Relaxed,
            );
            self.maybe_publish(&mut shared, free);
        }
        out
    }

    /// Adds the fuel the held tables counted since `fuel_mark` to `fuel_done`, and marks
    /// again (before the tables are given back or replaced).
    fn settle_fuel(&mut self) {
        let now = self.parser.fuel_counter();
        self.fuel_done = self
            .fuel_done
            .saturating_add(now.saturating_sub(self.fuel_mark));
        self.fuel_mark = now;
    }

    /// Fuel spent so far (see [`MaskStats::fuel`]); between calls, or on the snapshot.
    #[inline(never)]
    pub(crate) fn fuel_total(&self) -> u64 {
        let held = if self.holding {
            self.parser.fuel_counter().wrapping_sub(self.fuel_mark)
        } else {
            0
        };
        self.fuel_done
            .wrapping_add(self.parser.snapshot_fuel_spent())
            .wrapping_add(held)
    }

    /// After one step (a mask or a token) that started at `fuel_total() == before`: keeps
    /// [`MaskStats::max_step_fuel`].
    #[inline(never)]
    pub(crate) fn step_done(&mut self, before: u64) {
        let spent = self.fuel_total().wrapping_sub(before);
        self.stats.max_step_fuel = self.stats.max_step_fuel.max(spent);
    }

    /// Tell the parser what the grammar and this matcher's own buffers hold.
    fn charge_outside(&mut self) {
        let own = crate::lexer::vec_bytes(&self.bytes)
            + crate::lexer::vec_bytes(&self.consumed)
            + crate::lexer::vec_bytes(&self.cached_mask)
            + self.completion.bytes_used()
            + self.plan.as_ref().map_or(0, |p| p.bytes.capacity())
            + self.gate.as_ref().map_or(0, |g| g.bytes())
            + self.snapshot_charge;
        self.parser.set_outside(self.shared.saturating_add(own));
    }

    /// Before a step that may push `more` bytes and keep them: room in the byte log, the
    /// token list and the byte stack (plus a trie walk's depth), checked and charged now.
    fn reserve_output(&mut self, more: usize) -> Result<(), LimitKind> {
        // Most steps fit the buffers as they are: nothing to charge, and the budgets stay
        // as the step's start set them (re-syncing them costs a walk over every table).
        if self.parser.stack_room() >= more.saturating_add(self.walk_room)
            && self.bytes.capacity() - self.bytes.len() >= more
            && self.consumed.capacity() > self.consumed.len()
        {
            return Ok(());
        }
        self.parser
            .reserve_stack(more.saturating_add(self.walk_room))?;
        let r = crate::lexer::reserve(&mut self.bytes, more, self.parser.free_bytes());
        self.charge_outside();
        r?;
        let r = crate::lexer::reserve(&mut self.consumed, 1, self.parser.free_bytes());
        self.charge_outside();
        r
    }

    /// The grammar.
    pub fn grammar(&self) -> &Grammar {
        &self.grammar
    }

    /// Words a mask buffer needs: `ceil(vocab_size / 32)`.
    pub fn mask_words(&self) -> usize {
        self.grammar.match_vocab().mask_words()
    }

    /// The sticky error, if any.
    pub fn error(&self) -> Option<&MatcherError> {
        self.error.as_ref()
    }

    fn check(&self) -> Result<(), MatcherError> {
        match &self.error {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn fail<T>(&mut self, err: MatcherError) -> Result<T, MatcherError> {
        self.error = Some(err.clone());
        Err(err)
    }

    /// Write the allowed-token mask: bit `t % 32` of `mask[t / 32]` is set iff token `t` is
    /// allowed. Words past the vocabulary are zeroed.
    pub fn compute_mask(&mut self, mask: &mut [u32]) -> Result<(), MatcherError> {
        let before = self.fuel_total();
        let done = match self.compute_mask_shared(mask) {
            Some(done) => done,
            None => self.with_tables(|m| m.compute_mask_held(mask)),
        };
        self.step_done(before);
        done
    }

    /// [`Matcher::compute_mask`] with the tables held.
    fn compute_mask_held(&mut self, mask: &mut [u32]) -> Result<(), MatcherError> {
        self.check()?;
        let needed = self.mask_words();
        if mask.len() < needed {
            return Err(MatcherError::MaskTooSmall {
                needed,
                given: mask.len(),
            });
        }
        let vocab = self.grammar.match_vocab().clone();
        let (mask, rest) = mask.split_at_mut(needed);
        kernels::fill(rest, 0);
        if self.stopped {
            kernels::fill(mask, 0);
            kernels::set_bits(mask, vocab.eos_tokens());
            return Ok(());
        }
        if self.gated() {
            return self.gate_mask(mask);
        }
        self.stats.masks += 1;
        let key = self.parser.state_key();
        if self.cached_key == Some(key) && self.cached_mask.len() == needed {
            kernels::copy_into(mask, &self.cached_mask);
            self.stats.cached += 1;
            return Ok(());
        }
        if let Err(kind) = self.reserve_mask_copy(needed) {
            kernels::fill(mask, 0);
            return self.fail(MatcherError::Limit(kind));
        }
        if let Err(kind) = self.with_rebuild(|m| {
            m.reserve_output(0)?;
            m.mask_attempt(&vocab, mask)
        }) {
            kernels::fill(mask, 0);
            return self.fail(MatcherError::Limit(kind));
        }
        if self.parser.is_accepting() {
            kernels::set_bits(mask, vocab.eos_tokens());
        }
        // A rebuild renames the parser's rows, and so its key.
        let key = self.parser.state_key();
        self.keep_mask(mask, key);
        Ok(())
    }

    /// Keeps `mask`, the mask of state `key`, for a next call in the same state.
    pub(crate) fn keep_mask(&mut self, mask: &[u32], key: (u64, u32)) {
        if !self.remember {
            return;
        }
        self.cached_mask.clear();
        self.cached_mask.extend_from_slice(mask);
        self.cached_key = Some(key);
    }

    /// Room for the copy of the mask kept for the next call, charged before it is made.
    fn reserve_mask_copy(&mut self, words: usize) -> Result<(), LimitKind> {
        if !self.remember || self.cached_mask.capacity() >= words {
            return Ok(());
        }
        self.cached_mask.clear();
        let r = crate::lexer::reserve(&mut self.cached_mask, words, self.parser.free_bytes());
        self.charge_outside();
        r
    }

    /// One try at the mask: the limit it ran into, if any.
    /// The mask is written whole by each path (a copy of the remembered state mask or of the
    /// slice's mask, or zeroed before a full walk), so it is not zeroed here first: that was a
    /// 16 KB store per mask on a 128k vocabulary for nothing on the copying paths.
    fn mask_attempt(&mut self, vocab: &Vocabulary, mask: &mut [u32]) -> Result<(), LimitKind> {
        self.parser.start_step();
        let slice = self.parser.top_slice().and_then(|k| vocab.slices().get(k));
        self.parser.start_step();
        if self.parser.state_mask_walk(vocab, mask) {
            self.stats.state_masks += 1;
            if slice.is_some() {
                self.stats.sliced += 1;
            }
        } else {
            self.walk(vocab, slice, mask);
        }
        self.parser.error().map_or(Ok(()), Err)
    }

    /// Run `step`; if it runs into a lexer budget, rebuild the lexer and run it once more
    /// (see the module docs).
    fn with_rebuild<T>(
        &mut self,
        mut step: impl FnMut(&mut Matcher) -> Result<T, LimitKind>,
    ) -> Result<T, LimitKind> {
        match step(self) {
            Err(kind) if self.rebuild_lexer(kind) => step(self),
            done => done,
        }
    }

    /// After a step ran into `kind`: if that is a lexer budget, replace the parser with one
    /// rebuilt from the grammar's pristine parser by replaying the output (see the module
    /// docs). False when `kind` is another limit or the replay itself runs into a limit (the
    /// output's own path does not fit); the parser is then back at the start of input (the
    /// old one is dropped before the replay, so the two never hold memory at once; the
    /// matcher's error is sticky after a failed step anyway).
    fn rebuild_lexer(&mut self, kind: LimitKind) -> bool {
        if !matches!(
            kind,
            LimitKind::LexerStates | LimitKind::ExprNodes | LimitKind::Memory
        ) {
            return false;
        }
        // Out of memory with most of it in the Earley arena: a rebuild only shrinks the lexer
        // tables, so it cannot help (and replaying a long output costs time).
        if kind == LimitKind::Memory && self.parser.arena_bytes() > self.parser.heap_bytes() / 2 {
            return false;
        }
        // The grammar's charge holds room for this copy while the old tables are alive.
        let mut fresh = self.grammar.inner().pristine.tables();
        self.settle_fuel();
        self.parser.swap_tables(&mut fresh);
        self.fuel_mark = self.parser.fuel_counter();
        drop(fresh);
        self.parser.reset_to_start();
        self.parser.truncate(0);
        // The shared tables are now these: every other matcher replays its output.
        self.reset_tables = true;
        self.cached_key = None;
        self.widest = None;
        self.counts = budget::CountCache::default();
        self.completion.forget_exprs();
        self.charge_outside();
        let replayed = self.replay();
        if !replayed {
            self.parser.truncate(0);
        }
        replayed
    }

    /// Push the byte log into a fresh parser, token by token with each token's fuel.
    fn replay(&mut self) -> bool {
        if self
            .parser
            .reserve_stack(self.bytes.len() + self.walk_room)
            .is_err()
        {
            return false;
        }
        let starts = self.consumed.iter().map(|c| c.depth_before);
        let ends = starts.clone().skip(1).chain([self.bytes.len()]);
        for (start, end) in starts.zip(ends) {
            self.parser.start_step();
            let Some(token) = self.bytes.get(start..end) else {
                return false;
            };
            if !token.iter().all(|&b| self.parser.push_byte(b)) {
                return false;
            }
        }
        if self.parser.depth() != self.bytes.len() {
            return false;
        }
        self.stats.lexer_rebuilds += 1;
        true
    }

    /// [`Matcher::push_step`] for a token's bytes: a token without bytes (a special token)
    /// is never pushed.
    fn push_token(&mut self, bytes: &[u8]) -> Result<bool, LimitKind> {
        if bytes.is_empty() {
            Ok(false)
        } else {
            self.push_step(bytes)
        }
    }

    /// Push `bytes` in one step, rebuilding the lexer once if a lexer budget runs out (see
    /// the module docs); no bytes push trivially. `Ok(false)`: they do not fit the grammar.
    /// Either way the caller truncates the parser back if it does not keep them.
    fn push_step(&mut self, bytes: &[u8]) -> Result<bool, LimitKind> {
        let depth = self.parser.depth();
        self.with_rebuild(|m| {
            m.reserve_output(bytes.len())?;
            m.parser.start_step();
            let ok = bytes.iter().all(|&b| m.parser.push_byte(b));
            match m.parser.error() {
                None => Ok(ok),
                Some(kind) => {
                    m.parser.truncate(depth);
                    Err(kind)
                }
            }
        })
    }

    /// The plain mask walk: the slice's mask plus its rest trie, or the whole trie.
    fn walk(&mut self, vocab: &Vocabulary, slice: Option<&Slice>, mask: &mut [u32]) {
        match slice {
            Some(slice) => {
                kernels::copy_into(mask, slice.mask());
                slice.rest().walk_stepper(&mut self.parser, mask);
                self.stats.sliced += 1;
            }
            None => {
                kernels::fill(mask, 0);
                vocab.trie().walk_stepper(&mut self.parser, mask)
            }
        }
    }

    /// Is token `t` allowed now (without computing the whole mask)?
    pub fn is_allowed(&mut self, token: u32) -> Result<bool, MatcherError> {
        self.with_tables(|m| m.is_allowed_held(token))
    }

    /// [`Matcher::is_allowed`] with the tables held.
    fn is_allowed_held(&mut self, token: u32) -> Result<bool, MatcherError> {
        self.check()?;
        let vocab = self.grammar.match_vocab().clone();
        if token as usize >= vocab.vocab_size() {
            return Ok(false);
        }
        if self.stopped {
            return Ok(vocab.eos_tokens().contains(&token));
        }
        if self.gated() {
            return Ok(self.gate_allowed(token));
        }
        let depth = self.parser.depth();
        let pushed = self.push_token(vocab.trie_bytes(token));
        self.parser.truncate(depth);
        match pushed {
            Ok(ok) => Ok(ok || (vocab.eos_tokens().contains(&token) && self.parser.is_accepting())),
            Err(kind) => self.fail(MatcherError::Limit(kind)),
        }
    }

    fn push_bytes(&mut self, bytes: &[u8]) -> bool {
        !bytes.is_empty() && bytes.iter().all(|&b| self.parser.push_byte(b))
    }

    /// Consume one sampled token.
    pub fn consume_token(&mut self, token: u32) -> Result<(), MatcherError> {
        let before = self.fuel_total();
        let done = match self.consume_token_shared(token) {
            Some(done) => done,
            None => self.with_tables(|m| m.consume_token_held(token)),
        };
        self.step_done(before);
        done
    }

    /// [`Matcher::consume_token`] with the tables held.
    fn consume_token_held(&mut self, token: u32) -> Result<(), MatcherError> {
        self.check()?;
        let vocab = self.grammar.match_vocab().clone();
        if token as usize >= vocab.vocab_size() {
            return self.fail(MatcherError::TokenOutOfRange {
                token,
                vocab_size: vocab.vocab_size() as u32,
            });
        }
        if self.stopped {
            return self.fail(MatcherError::Stopped);
        }
        if self.gated() {
            return self.gate_consume(token);
        }
        let depth = self.parser.depth();
        let bytes = vocab.trie_bytes(token);
        match self.push_token(bytes) {
            Ok(true) => {
                self.consumed.push(Consumed {
                    depth_before: depth,
                });
                self.bytes.extend_from_slice(bytes);
                self.advance_plan(depth, bytes);
                return Ok(());
            }
            Ok(false) => self.parser.truncate(depth),
            Err(kind) => return self.fail(MatcherError::Limit(kind)),
        }
        if vocab.eos_tokens().contains(&token) && self.parser.is_accepting() {
            if let Err(kind) = self.reserve_output(0) {
                return self.fail(MatcherError::Limit(kind));
            }
            self.stopped = true;
            self.consumed.push(Consumed {
                depth_before: depth,
            });
            return Ok(());
        }
        let position = self.num_tokens();
        self.fail(MatcherError::TokenRejected { token, position })
    }

    /// Consume several tokens; stops at the first error.
    pub fn consume_tokens(&mut self, tokens: &[u32]) -> Result<(), MatcherError> {
        self.with_tables(|m| m.consume_tokens_held(tokens))
    }

    /// [`Matcher::consume_tokens`] with the tables held.
    fn consume_tokens_held(&mut self, tokens: &[u32]) -> Result<(), MatcherError> {
        tokens.iter().try_for_each(|&t| self.consume_token(t))
    }

    /// Undo the last `n` consumed tokens (an EOS included). Clears nothing else; a sticky
    /// error stays.
    pub fn rollback(&mut self, n: usize) -> Result<(), MatcherError> {
        if self.gate.is_some() {
            return self.with_tables(|m| m.gate_rollback(n));
        }
        self.rollback_plain(n)
    }

    /// [`Matcher::rollback`] of the grammar's tokens only.
    fn rollback_plain(&mut self, n: usize) -> Result<(), MatcherError> {
        self.check()?;
        if n > self.consumed.len() {
            return Err(MatcherError::RollbackTooFar {
                requested: n,
                available: self.consumed.len(),
            });
        }
        if n == 0 {
            return Ok(());
        }
        let keep = self.consumed.len() - n;
        let depth = self.consumed[keep].depth_before;
        self.consumed.truncate(keep);
        self.parser.truncate(depth);
        self.bytes.truncate(depth);
        self.stopped = false;
        self.plan = None;
        Ok(())
    }

    /// How many leading tokens of `tokens` would be accepted one after the other. The
    /// matcher's state is unchanged.
    pub fn validate_tokens(&mut self, tokens: &[u32]) -> Result<usize, MatcherError> {
        self.with_tables(|m| m.validate_tokens_held(tokens))
    }

    /// [`Matcher::validate_tokens`] with the tables held.
    fn validate_tokens_held(&mut self, tokens: &[u32]) -> Result<usize, MatcherError> {
        self.check()?;
        let mut n = 0;
        for &t in tokens {
            if self.consume_token(t).is_err() {
                break;
            }
            n += 1;
        }
        // Budget mode's remembered completion survives the probe.
        let plan = self.plan.clone();
        if let Some(MatcherError::Limit(k)) = self.error.take() {
            let _ = self.rollback(n);
            self.plan = plan;
            return self.fail(MatcherError::Limit(k));
        }
        self.rollback(n)?;
        self.plan = plan;
        Ok(n)
    }

    /// Tokens the grammar forces next (the output can only continue with these bytes),
    /// tokenized greedily (longest match). See [`Matcher::compute_ff_tokens_with`] for which
    /// tokens at the end are left out. Nothing is consumed.
    pub fn compute_ff_tokens(&mut self) -> Result<Vec<u32>, MatcherError> {
        let vocab = self.grammar.match_vocab().clone();
        self.compute_ff_tokens_with(&mut |text| vocab.trie().greedy_tokenize(text))
    }

    /// Tokens the grammar forces next, tokenized by `tokenize` (the model's own tokenizer,
    /// so forced tokens are its canonical segmentation of the forced text). `tokenize` gets
    /// text runs only: a special token's encoding in the forced bytes is read back as its id
    /// here. Nothing is consumed.
    ///
    /// The tokens are cut where they stop spelling the forced bytes (a tokenizer that
    /// returns `None` or something else). Unless the grammar must end right after the forced
    /// bytes, tokens at the end are left out when a longer token could cover them together
    /// with what follows: the shortest tail of the last 4 tokens (within the longest token's
    /// length) that some longer token starts with, where the grammar allows that token's
    /// next byte after the forced bytes. The model then writes those bytes itself, with
    /// whatever token it prefers. (LLGuidance chops the same tail, checking the rest of the
    /// longer token against the grammar; one byte of lookahead chops as much or more.)
    pub fn compute_ff_tokens_with(
        &mut self,
        tokenize: &mut dyn FnMut(&[u8]) -> Option<Vec<u32>>,
    ) -> Result<Vec<u32>, MatcherError> {
        self.with_tables(|m| m.compute_ff_tokens_held(tokenize))
    }

    /// The token LLGuidance allows alone where the grammar forces text: the first token of
    /// [`Matcher::compute_ff_tokens_with`], when the forced bytes are not empty and that list
    /// is not. Its masks then hold that token only (the model's canonical tokenization of
    /// forced text); every other allowed token spells the same bytes differently. `None`
    /// elsewhere. sieve's own masks keep every spelling; LLGuidance-compatible layers call
    /// this to narrow them.
    pub fn canonical_forced_token(
        &mut self,
        tokenize: &mut dyn FnMut(&[u8]) -> Option<Vec<u32>>,
    ) -> Result<Option<u32>, MatcherError> {
        Ok(self.compute_ff_tokens_with(tokenize)?.first().copied())
    }

    /// [`Matcher::compute_ff_tokens_with`] with the tables held.
    fn compute_ff_tokens_held(
        &mut self,
        tokenize: &mut dyn FnMut(&[u8]) -> Option<Vec<u32>>,
    ) -> Result<Vec<u32>, MatcherError> {
        if self.gated() {
            self.check()?;
            return Ok(self.gate_forced().into_iter().collect());
        }
        let bytes = self.forced_bytes_held()?;
        if bytes.is_empty() {
            return Ok(Vec::new());
        }
        let vocab = self.grammar.match_vocab().clone();
        let (mut tokens, spelled) = forced_tokens(&vocab, &bytes, tokenize);
        let depth = self.parser.depth();
        self.push_bytes(&bytes);
        let chop = if spelled < bytes.len() {
            // The next forced byte may join the last token: leave it to the model.
            usize::from(!tokens.is_empty())
        } else if self.parser.is_accepting() && !self.any_byte_allowed() {
            0
        } else {
            self.extendable_tail(&vocab, &tokens)
        };
        self.parser.truncate(depth);
        tokens.truncate(tokens.len() - chop);
        Ok(tokens)
    }

    /// How many tokens at the end of `tokens` (which spell the bytes just pushed) a longer
    /// token could cover together with a next byte the grammar allows.
    fn extendable_tail(&mut self, vocab: &Vocabulary, tokens: &[u32]) -> usize {
        const LOOKBACK: usize = 4;
        let trie = vocab.trie();
        let tail_tokens = &tokens[tokens.len().saturating_sub(LOOKBACK)..];
        let tail: Vec<u8> = tail_tokens
            .iter()
            .flat_map(|&t| vocab.trie_bytes(t).iter().copied())
            .collect();
        let tail = &tail[tail.len().saturating_sub(trie.max_token_len())..];
        for start in 0..tail.len() {
            let suffix = &tail[start..];
            let extends = trie.next_bytes(suffix).any(|b| {
                let ok = self.parser.push_byte(b);
                if ok {
                    self.parser.pop_bytes(1);
                }
                ok
            });
            if extends {
                let mut covered = 0;
                let mut n = 0;
                for &t in tokens.iter().rev() {
                    n += 1;
                    covered += vocab.trie_bytes(t).len();
                    if covered >= suffix.len() {
                        break;
                    }
                }
                return n;
            }
        }
        0
    }

    /// The bytes every continuation must start with (empty at a choice or at an end).
    pub fn forced_bytes(&mut self) -> Result<Vec<u8>, MatcherError> {
        self.with_tables(|m| m.forced_bytes_held())
    }

    /// [`Matcher::forced_bytes`] with the tables held.
    fn forced_bytes_held(&mut self) -> Result<Vec<u8>, MatcherError> {
        self.check()?;
        let mut out = Vec::new();
        if self.stopped {
            return Ok(out);
        }
        if self.gated() {
            let vocab = self.grammar.match_vocab().clone();
            if let Some(t) = self.gate_forced() {
                out.extend_from_slice(vocab.trie_bytes(t));
            }
            return Ok(out);
        }
        self.parser.start_step();
        let depth = self.parser.depth();
        while out.len() < MAX_FORCED_BYTES {
            if self.parser.is_accepting() {
                break;
            }
            match self.forced_next_byte() {
                Some(b) => {
                    self.parser.push_byte(b);
                    out.push(b);
                }
                None => break,
            }
        }
        self.parser.truncate(depth);
        if let Some(kind) = self.parser.error() {
            return self.fail(MatcherError::Limit(kind));
        }
        Ok(out)
    }

    fn forced_next_byte(&mut self) -> Option<u8> {
        let mut found = None;
        for b in 0..=255u8 {
            if self.parser.push_byte(b) {
                self.parser.pop_bytes(1);
                if found.is_some() {
                    return None;
                }
                found = Some(b);
            }
        }
        found
    }

    fn any_byte_allowed(&mut self) -> bool {
        (0..=255u8).any(|b| {
            let ok = self.parser.push_byte(b);
            if ok {
                self.parser.pop_bytes(1);
            }
            ok
        })
    }

    /// Push raw bytes (not tokens) if they keep the output a valid prefix; on failure
    /// nothing is pushed, and a budget run into becomes the sticky error ([`Matcher::error`]).
    /// Used to check whole texts and by tests.
    pub fn try_consume_bytes(&mut self, bytes: &[u8]) -> bool {
        self.with_tables(|m| m.try_consume_bytes_held(bytes))
    }

    /// [`Matcher::try_consume_bytes`] with the tables held.
    fn try_consume_bytes_held(&mut self, bytes: &[u8]) -> bool {
        if self.error.is_some() || self.stopped || self.gated() {
            return false;
        }
        let depth = self.parser.depth();
        match self.push_step(bytes) {
            Ok(true) => {
                self.consumed.push(Consumed {
                    depth_before: depth,
                });
                self.bytes.extend_from_slice(bytes);
                self.advance_plan(depth, bytes);
                true
            }
            Ok(false) => {
                self.parser.truncate(depth);
                false
            }
            Err(kind) => {
                self.parser.truncate(depth);
                self.error = Some(MatcherError::Limit(kind));
                false
            }
        }
    }

    /// The shortest byte string `s` such that pushing `s` leaves the matcher accepting
    /// ([`Matcher::is_accepting`]): `Some(vec![])` when it already accepts (or is stopped),
    /// `None` when no continuation is ever accepted. Among the shortest, the least in byte
    /// order, so the answer depends only on the parser's state. Nothing is consumed.
    ///
    /// The string is found by the parser itself (an IDA* search over bytes, one byte per
    /// lexer byte class, with a lower bound read off the Earley chart: see
    /// `core/docs/budget.md`), so lexer max-munch, lazy and ignored lexemes are honoured and
    /// the result really is accepted; its length is exact.
    ///
    /// # Errors
    /// The search runs within one step's budgets ([`crate::Limits::fuel_per_mask`]: one unit
    /// per byte pushed plus the parser's own work; `max_items_per_mask`;
    /// `max_memory_bytes`). Running out is [`MatcherError::Limit`], which is *not* sticky:
    /// the output is untouched and other calls go on working. (A lexer budget is met as in
    /// [`Matcher::compute_mask`]: the tables are rebuilt and the search runs once more; only
    /// when that replay fails is the error sticky.) A sticky error from before is returned.
    pub fn shortest_completion(&mut self) -> Result<Option<Vec<u8>>, MatcherError> {
        self.with_tables(|m| m.shortest_completion_held())
    }

    /// [`Matcher::shortest_completion`] with the tables held.
    fn shortest_completion_held(&mut self) -> Result<Option<Vec<u8>>, MatcherError> {
        self.check()?;
        if self.stopped {
            return Ok(Some(Vec::new()));
        }
        if self.gated() {
            let vocab = self.grammar.match_vocab().clone();
            return Ok(Some(
                self.gate_forced()
                    .map(|t| vocab.trie_bytes(t).to_vec())
                    .unwrap_or_default(),
            ));
        }
        let r = self.with_rebuild(|m| {
            m.reserve_output(0)?;
            m.parser.start_step();
            m.completion.begin(&m.parser);
            m.completion.shortest(&mut m.parser)
        });
        self.charge_outside();
        r.or_else(|kind| self.search_failed(kind))
    }

    /// A search ran into `kind`: sticky only if a failed rebuild lost the output's state.
    fn search_failed<T>(&mut self, kind: LimitKind) -> Result<T, MatcherError> {
        if self.parser.depth() != self.bytes.len() {
            return self.fail(MatcherError::Limit(kind));
        }
        Err(MatcherError::Limit(kind))
    }

    /// Is the output so far a complete sentence (EOS allowed)?
    pub fn is_accepting(&mut self) -> bool {
        if let Some(accepting) = self.is_accepting_shared() {
            return accepting;
        }
        self.with_tables(|m| m.is_accepting_held())
    }

    /// [`Matcher::is_accepting`] with the tables held.
    fn is_accepting_held(&mut self) -> bool {
        if self.gated() {
            return self.stopped || (self.error.is_none() && self.gate_accepting());
        }
        self.stopped || (self.error.is_none() && self.parser.is_accepting())
    }

    /// Has an EOS token been consumed?
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// How many tokens have been consumed (EOS included).
    pub fn num_tokens(&self) -> usize {
        self.consumed.len() + self.gate_records()
    }

    /// Back to the start of the grammar, error cleared.
    pub fn reset(&mut self) {
        self.parser.truncate(0);
        self.consumed.clear();
        self.bytes.clear();
        self.stopped = false;
        self.error = None;
        self.plan = None;
        self.gate_reset();
    }

    /// Drops the copy of the last mask, so the next [`Matcher::compute_mask`] computes it
    /// again (for tests that compare the ways a mask is computed).
    #[doc(hidden)]
    pub fn forget_last_mask(&mut self) {
        self.cached_key = None;
    }

    /// Lexer states the grammar's shared tables hold (for tests of the budgets).
    #[doc(hidden)]
    pub fn lexer_states(&self) -> usize {
        self.grammar.inner().shared.lock().tables.lexer.num_states()
    }

    /// How masks have been computed so far.
    pub fn stats(&self) -> MaskStats {
        MaskStats {
            fuel: self.fuel_total(),
            ..self.stats
        }
    }

    /// Heap bytes held by this matcher (its parser, byte log, token list and mask copy; not
    /// the grammar's share, nor the published tables it reads).
    pub fn bytes_used(&self) -> usize {
        (self.parser.heap_bytes() - self.parser.snapshot_heap())
            + self
                .parser
                .outside()
                .saturating_sub(self.shared + self.snapshot_charge)
    }
}

/// [`Matcher::advance_plan`] on the plan alone.
fn advance_plan(plan: &mut Option<Plan>, depth: usize, bytes: &[u8]) {
    let keep = plan
        .as_ref()
        .is_some_and(|p| p.depth == depth && p.bytes.starts_with(bytes));
    if keep {
        if let Some(p) = plan.as_mut() {
            p.bytes.drain(..bytes.len());
            p.depth += bytes.len();
        }
    } else {
        *plan = None;
    }
}

/// The largest Earley arena a dropped matcher hands back to its grammar as the template of
/// new matchers (the grammar keeps it).
const MAX_WARM_ARENA: usize = 64 << 10;

impl Drop for Matcher {
    /// Hand this matcher's parser (without tables: they are the grammar's) back to the
    /// grammar when its Earley buffers have more room than the template's and at most
    /// `MAX_WARM_ARENA` (64 KiB), so that the next matcher starts with room to grow. Never blocks,
    /// never allocates (the grammar's slot always holds a parser, so a hand-back is a swap).
    fn drop(&mut self) {
        let arena = self.parser.arena_bytes();
        if self.error.is_some() || self.holding || arena > MAX_WARM_ARENA {
            return;
        }
        let inner = self.grammar.inner();
        let Some(mut warm) = inner.warm.try_lock() else {
            return;
        };
        if arena > warm.arena_bytes() {
            self.parser.drop_snapshot();
            self.parser.reset_to_start();
            self.parser.output_room = (self.bytes.capacity(), self.consumed.capacity());
            core::mem::swap(&mut *warm, &mut self.parser);
        }
    }
}

// A compiled grammar is shared across threads; a matcher moves between them.
const _: () = {
    const fn shareable<T: Send + Sync>() {}
    shareable::<Grammar>();
    shareable::<Matcher>();
    shareable::<crate::Vocabulary>();
};
