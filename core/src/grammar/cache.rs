//! A bounded compile cache: the same grammar text compiled again for the same vocabulary,
//! options and limits returns the grammar compiled the first time (issue 37, item 3).
//!
//! Agents send the same tool list with every turn, and a server sees the same API schema in
//! request after request: compiling them again costs the same every time (about 1 ms a tool).
//! [`CompileCache::compile`] looks the request up first. A hit returns a clone of the cached
//! [`Grammar`] (an `Arc`: the new matchers share its tables with the earlier ones, so their
//! first masks are warm too) and of its coverage report; a miss compiles, as
//! [`Grammar::compile`] does, and keeps the result. Errors are kept as well: a schema that
//! fails (a stranger's, sent again and again) fails again at the cost of a lookup, with the
//! same error.
//!
//! **Identical to a cold compile.** The key is the whole request: the syntax, the text (byte
//! for byte), [`CompileOptions`], [`Limits`] and the vocabulary (by identity: an entry holds
//! an `Arc` of it, so the address cannot be reused while the entry lives). A compile is a
//! function of those (budgets are counts, not clocks), so the result kept is the result a
//! compile would give now. Masks and errors do not depend on whether a grammar's tables are
//! cold or warm (the concurrency tests compare them), so matchers of a cached grammar give
//! the masks matchers of a fresh one would.
//!
//! **Bounded.** Each entry is charged its key's text, the grammar's own heap
//! ([`Grammar::bytes_used`], measured once) and the grammar's shared tables as they are now
//! (they grow while matchers explore the grammar; read from an atomic, re-read at every
//! insertion). When the total passes `max_bytes`, the least recently used entries go. An
//! entry that alone exceeds the bound is returned and not kept. A bound of 0 turns the cache
//! off: nothing is kept and every call compiles.
//!
//! **Thread-safe.** One spin lock (`crate::sync::Mutex`) guards the table; it is held for a
//! lookup (the key's hash is computed before taking it) or an insertion, never during a
//! compile. Two threads that miss the same key at once both compile; the second to insert
//! finds the first's entry and returns that grammar, so the callers share one grammar.

use alloc::string::String;
use core::hash::{BuildHasher, Hash, Hasher};
use core::sync::atomic::{AtomicUsize, Ordering};

use hashbrown::{DefaultHashBuilder, HashTable};

use super::json::CoverageReport;
use super::{CompileOptions, Grammar, GrammarSyntax};
use crate::Limits;
use crate::error::GrammarError;
use crate::sync::{Arc, Mutex};
use crate::vocab::Vocabulary;

/// What a compile gives: the grammar and its coverage report (JSON Schema), or the error.
pub type Compiled = Result<(Grammar, Option<CoverageReport>), GrammarError>;

/// The most entries kept, whatever their bytes (bounds the eviction scan).
pub const MAX_ENTRIES: usize = 4096;

/// Counters of a [`CompileCache`] (see [`CompileCache::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that compiled.
    pub misses: u64,
    /// Entries dropped to stay within the bound.
    pub evictions: u64,
    /// Entries held now.
    pub entries: usize,
    /// Bytes charged now (as of the last insertion).
    pub bytes: usize,
    /// The bound.
    pub max_bytes: usize,
}

/// A compile cache shared by the grammars of one or more vocabularies (see the module
/// docs). `Send + Sync`.
#[derive(Debug)]
pub struct CompileCache {
    max_bytes: AtomicUsize,
    hasher: DefaultHashBuilder,
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    entries: HashTable<Entry>,
    /// Moves on at every lookup: an entry's `used` is the tick of its last hit.
    tick: u64,
    bytes: usize,
    stats: CacheStats,
}

#[derive(Debug)]
struct Entry {
    hash: u64,
    key: Key,
    /// Keeps the vocabulary alive, so that `key.vocab` names it while the entry lives
    /// (never read).
    _vocab: Arc<Vocabulary>,
    result: Compiled,
    /// The key's text and the grammar's own heap, measured at insertion.
    fixed_bytes: usize,
    used: u64,
}

#[derive(Debug, PartialEq, Eq)]
struct Key {
    syntax: GrammarSyntax,
    vocab: usize,
    text: String,
    opts: CompileOptions,
    limits: Limits,
}

impl Entry {
    /// The entry's charge now: its fixed bytes and its grammar's shared tables.
    fn bytes(&self) -> usize {
        let tables = match &self.result {
            Ok((g, _)) => g.inner().master_bytes.load(Ordering::Relaxed),
            Err(_) => 0,
        };
        self.fixed_bytes.saturating_add(tables)
    }
}

impl CompileCache {
    /// A cache holding at most `max_bytes` (0: off).
    pub fn new(max_bytes: usize) -> CompileCache {
        CompileCache {
            max_bytes: AtomicUsize::new(max_bytes),
            hasher: DefaultHashBuilder::default(),
            table: Mutex::new(Table::default()),
        }
    }

    /// Changes the bound (0 turns the cache off); entries past it go now.
    pub fn set_max_bytes(&self, max_bytes: usize) {
        self.max_bytes.store(max_bytes, Ordering::Relaxed);
        let mut table = self.table.lock();
        table.evict_to(max_bytes, 0);
    }

    /// The bound.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes.load(Ordering::Relaxed)
    }

    /// The counters, the entries held and their charge.
    pub fn stats(&self) -> CacheStats {
        let table = self.table.lock();
        CacheStats {
            entries: table.entries.len(),
            bytes: table.bytes,
            max_bytes: self.max_bytes(),
            ..table.stats
        }
    }

    /// [`Grammar::compile`] through the cache: the kept result for an equal request, else a
    /// compile (kept if it fits).
    ///
    /// # Errors
    /// As [`Grammar::compile`] (a kept error is returned again).
    pub fn compile(
        &self,
        syntax: GrammarSyntax,
        text: &str,
        opts: &CompileOptions,
        vocab: &Arc<Vocabulary>,
        limits: &Limits,
    ) -> Compiled {
        let max = self.max_bytes();
        if max == 0 {
            return Grammar::compile(syntax, text, opts, vocab, limits);
        }
        let vocab_id = Arc::as_ptr(vocab) as usize;
        let hash = {
            let mut h = self.hasher.build_hasher();
            syntax.hash(&mut h);
            vocab_id.hash(&mut h);
            text.hash(&mut h);
            h.finish()
        };
        let matches = |e: &Entry| {
            e.hash == hash
                && e.key.syntax == syntax
                && e.key.vocab == vocab_id
                && e.key.text == text
                && e.key.opts == *opts
                && e.key.limits == *limits
        };
        {
            let mut table = self.table.lock();
            table.tick += 1;
            let tick = table.tick;
            if let Some(e) = table.entries.find_mut(hash, matches) {
                e.used = tick;
                let result = e.result.clone();
                table.stats.hits += 1;
                return result;
            }
            table.stats.misses += 1;
        }
        let result = Grammar::compile(syntax, text, opts, vocab, limits);
        let fixed_bytes = core::mem::size_of::<Entry>()
            + text.len()
            + match &result {
                Ok((g, report)) => g.bytes_used() + report.as_ref().map_or(0, report_bytes),
                Err(e) => e.message.len(),
            };
        let entry = Entry {
            hash,
            key: Key {
                syntax,
                vocab: vocab_id,
                text: String::from(text),
                opts: opts.clone(),
                limits: limits.clone(),
            },
            _vocab: Arc::clone(vocab),
            result,
            fixed_bytes,
            used: 0,
        };
        self.insert(entry, max)
    }

    /// Keeps `entry` unless an equal one was inserted meanwhile (then that one's result is
    /// returned) or it alone exceeds `max`; makes room by least recent use.
    fn insert(&self, mut entry: Entry, max: usize) -> Compiled {
        let mut table = self.table.lock();
        let hash = entry.hash;
        if let Some(e) = table.entries.find(hash, |e| e.key == entry.key) {
            return e.result.clone();
        }
        let result = entry.result.clone();
        let bytes = entry.bytes();
        if bytes > max {
            return result;
        }
        table.tick += 1;
        entry.used = table.tick;
        table.evict_to(max.saturating_sub(bytes), 1);
        table.entries.insert_unique(hash, entry, |e| e.hash);
        table.bytes = table.bytes.saturating_add(bytes);
        result
    }
}

impl Table {
    /// Re-reads every entry's charge, then drops least recently used entries until the
    /// charge is at most `max` and at most `MAX_ENTRIES - room` entries are left.
    fn evict_to(&mut self, max: usize, room: usize) {
        self.bytes = self.entries.iter().map(Entry::bytes).sum();
        while !self.entries.is_empty()
            && (self.bytes > max || self.entries.len() + room > MAX_ENTRIES)
        {
            let Some(oldest) = self.entries.iter().map(|e| (e.used, e.hash)).min() else {
                break;
            };
            let Ok(found) = self
                .entries
                .find_entry(oldest.1, |e| e.used == oldest.0 && e.hash == oldest.1)
            else {
                break;
            };
            let (e, _) = found.remove();
            self.bytes = self.bytes.saturating_sub(e.bytes());
            self.stats.evictions += 1;
        }
    }
}

/// Heap bytes of a coverage report (its strings).
fn report_bytes(r: &CoverageReport) -> usize {
    r.entries
        .iter()
        .map(|e| {
            core::mem::size_of_val(e)
                + e.pointer.len()
                + e.keyword.len()
                + match &e.status {
                    super::json::CoverageStatus::Approximated { why, .. }
                    | super::json::CoverageStatus::Spelling { why } => why.len(),
                    _ => 0,
                }
        })
        .sum()
}

#[cfg(test)]
mod tests;
