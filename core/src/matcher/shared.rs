//! Masks and tokens without the grammar's lock: matchers read a published snapshot.
//!
//! A grammar's lazily built tables (lexer transitions, start states, slices, remembered state
//! masks) have one master copy behind the grammar's lock, extended by whichever matcher needs
//! a missing entry, and a *published snapshot*: an immutable copy, shared by `Arc`, that every
//! matcher reads without taking any lock. This is RE2's shared lazy DFA in its copy-on-publish
//! form: a snapshot never changes once published, so reading it needs no synchronisation
//! beyond obtaining it.
//!
//! A step ([`Matcher::compute_mask`], [`Matcher::consume_token`]) first runs on the snapshot.
//! A lookup that finds nothing (a transition, a start state or a slice not computed, a state
//! mask not remembered while the master would remember it) stops the step; it is undone (the
//! byte stack truncated to where it started, nothing else kept) and run again on the master
//! tables under the lock, exactly as before snapshots existed. Any limit hit on the snapshot
//! is handled the same way, so errors, rebuilds and their replays happen only on the master
//! path. Since a step is all-or-nothing on the snapshot and the snapshot's tables are a
//! prefix of the master's (same state ids within a generation: the master only appends, and a
//! reset moves the generation on), masks, errors and fuel are the same on either path: a
//! snapshot lookup is one the master would have answered from its table without work.
//!
//! Publishing. After a master call that extended the tables, the lock holder copies the
//! reader-visible part of the tables (not the expression store: a snapshot never builds) into
//! a new `Arc`, when the tables' generation moved on or once enough calls extended them to pay
//! for the copy ([`PUBLISH_BYTES_PER_CALL`] bytes of copy per call: the copies of a warm-up
//! add up to a small multiple of its table work; 16 times less while one matcher alone makes
//! the master calls, as when a grammar serves one sequence at a time). It then stores the `Arc` into
//! `GrammarInner::published` (a spin lock held for the store and for a reader's `Arc` clone
//! only) and increments `GrammarInner::version`.
//!
//! Memory ordering. The snapshot is written completely before its `Arc` is stored, under the
//! `published` lock; a reader clones the `Arc` under the same lock, so the lock's
//! release/acquire pair orders every write of the snapshot before every read of it. `version`
//! is only a hint, stored with `Release` by the publisher after the store and loaded with
//! `Acquire` by readers at the start of each step: a reader that sees an old value keeps the
//! older snapshot, which is still valid (immutable, a prefix of the master), and misses a
//! little more; one that sees the new value takes the lock and gets that snapshot or a newer
//! one. No unsafe code is involved: the `Arc` keeps a snapshot alive while any matcher reads
//! it (a matcher keeps the one it last read until its next step or its drop).
//!
//! Budget. A matcher reading a snapshot counts the snapshot's bytes as the tables it holds,
//! and the master tables' bytes after the last master call beside them
//! (`GrammarInner::master_bytes`); on the master path the published snapshot is charged
//! beside the master tables, and a snapshot that would not fit the calling matcher's budget
//! beside both is not published (matchers then run on the master path, as before).

use core::sync::atomic::Ordering;

use super::{Consumed, Matcher};
use crate::error::MatcherError;
use crate::grammar::SharedTables;
use crate::sync::Arc;
use crate::toktrie::Recognizer;
use sieve_kernels as kernels;

/// Bytes of snapshot copy one extending master call pays for (see the module docs).
const PUBLISH_BYTES_PER_CALL: usize = 64 << 10;

/// While one matcher alone makes the master calls (a grammar used by one sequence at a
/// time), a call pays for this much less copy: nobody else would read the snapshot.
const SOLO_DISCOUNT: usize = 16;

impl Matcher {
    /// Make the parser read the grammar's newest snapshot. False when there is none, or it is
    /// of another generation than this matcher's rows (the master path then replays).
    fn read_snapshot(&mut self) -> bool {
        let inner = self.grammar.inner();
        let version = inner.version.load(Ordering::Acquire);
        // The last step missed in this very snapshot: while no newer one is published, the
        // master tables answer (the retry of a cold step would likely miss again).
        if version == self.miss_version {
            return false;
        }
        if version != self.snap_version || self.parser.snapshot().is_none() {
            let Some((tables, generation)) = inner.published.lock().clone() else {
                return false;
            };
            self.snap_version = version;
            self.snap_generation = generation;
            self.parser.set_snapshot(tables);
        }
        // The master tables are in memory too: charged beside the snapshot (which the
        // parser's heap counts). Only a master call changes them.
        let master = inner.master_bytes.load(Ordering::Relaxed);
        if master != self.snapshot_charge {
            self.snapshot_charge = master;
            self.charge_outside();
        }
        self.snap_generation == self.generation
    }

    /// Whether a step may run on the snapshot: no error, not stopped, no gate phase in
    /// front of the grammar, not inside a master call.
    fn snapshot_ready(&self) -> bool {
        self.error.is_none() && !self.stopped && !self.gated() && !self.holding
    }

    /// [`Matcher::compute_mask`] on the snapshot; `None` (nothing changed) when it must run
    /// on the master tables.
    pub(super) fn compute_mask_shared(
        &mut self,
        mask: &mut [u32],
    ) -> Option<Result<(), MatcherError>> {
        let needed = self.mask_words();
        if !self.snapshot_ready()
            || mask.len() < needed
            || (self.remember && self.cached_mask.capacity() < needed)
            || self.parser.stack_room() < self.walk_room
            || !self.read_snapshot()
        {
            return None;
        }
        let (mask, rest) = mask.split_at_mut(needed);
        let key = self.parser.state_key();
        if self.cached_key == Some(key) && self.cached_mask.len() == needed {
            kernels::copy_into(mask, &self.cached_mask);
            kernels::fill(rest, 0);
            self.stats.masks += 1;
            self.stats.cached += 1;
            self.stats.lock_free += 1;
            return Some(Ok(()));
        }
        let vocab = self.grammar.match_vocab();
        let parser = &mut self.parser;
        let mut stats = self.stats;
        let depth = parser.depth();
        parser.clear_missed();
        parser.start_step();
        let slice = parser.top_slice().and_then(|k| vocab.slices().get(k));
        if !parser.missed() {
            if parser.state_mask_walk(vocab, mask) {
                stats.state_masks += 1;
                stats.sliced += u64::from(slice.is_some());
            } else if let Some(slice) = slice {
                kernels::copy_into(mask, slice.mask());
                slice.rest().walk_stepper(parser, mask);
                stats.sliced += 1;
            } else {
                kernels::fill(mask, 0);
                vocab.trie().walk_stepper(parser, mask);
            }
        }
        let accepting = !parser.missed() && parser.error().is_none() && parser.is_accepting();
        if parser.missed() || parser.error().is_some() {
            if parser.missed() {
                self.miss_version = self.snap_version;
            }
            parser.truncate(depth);
            parser.clear_missed();
            return None;
        }
        if accepting {
            kernels::set_bits(mask, vocab.eos_tokens());
        }
        kernels::fill(rest, 0);
        stats.masks += 1;
        stats.lock_free += 1;
        self.stats = stats;
        self.keep_mask(mask, key);
        Some(Ok(()))
    }

    /// [`Matcher::consume_token`] on the snapshot, for a token the grammar accepts as text;
    /// `None` (nothing changed) for everything else (a rejection, an EOS, a special token, a
    /// buffer that must grow, a miss): the master path decides those.
    pub(super) fn consume_token_shared(&mut self, token: u32) -> Option<Result<(), MatcherError>> {
        if !self.snapshot_ready() || !self.read_snapshot() {
            return None;
        }
        let vocab = self.grammar.match_vocab();
        if token as usize >= vocab.vocab_size() {
            return None;
        }
        let bytes = vocab.trie_bytes(token);
        let parser = &mut self.parser;
        // The room `reserve_output` would otherwise grow (under the budget, on the master).
        if bytes.is_empty()
            || parser.stack_room() < bytes.len().saturating_add(self.walk_room)
            || self.bytes.capacity() - self.bytes.len() < bytes.len()
            || self.consumed.capacity() == self.consumed.len()
        {
            return None;
        }
        let depth = parser.depth();
        parser.clear_missed();
        parser.start_step();
        let pushed = bytes.iter().all(|&b| parser.push_byte(b));
        if !pushed || parser.missed() || parser.error().is_some() {
            if parser.missed() {
                self.miss_version = self.snap_version;
            }
            parser.truncate(depth);
            parser.clear_missed();
            return None;
        }
        self.consumed.push(Consumed {
            depth_before: depth,
        });
        self.bytes.extend_from_slice(bytes);
        super::advance_plan(&mut self.plan, depth, bytes);
        Some(Ok(()))
    }

    /// [`Matcher::is_accepting`] on the snapshot; `None` when the check ran into a miss or a
    /// limit (the master path decides).
    pub(super) fn is_accepting_shared(&mut self) -> Option<bool> {
        if self.stopped || self.error.is_some() {
            return Some(self.stopped);
        }
        if !self.snapshot_ready() || !self.read_snapshot() {
            return None;
        }
        self.parser.clear_missed();
        let r = self.parser.accepting();
        if self.parser.missed() {
            self.miss_version = self.snap_version;
            self.parser.clear_missed();
            return None;
        }
        r.ok()
    }

    /// After a master call (the tables back in `shared`): publish a snapshot when the
    /// tables changed enough since the last one (see the module docs) and `free` bytes of
    /// this matcher's budget hold it.
    pub(super) fn maybe_publish(&self, shared: &mut SharedTables, free: usize) {
        let solo = shared.last_caller == self.id;
        shared.last_caller = self.id;
        let changes = shared.tables.changes();
        let new_generation = shared.published_generation != Some(shared.generation);
        if !new_generation && changes == shared.published_changes {
            return;
        }
        shared.calls_since_publish += 1;
        let inner = self.grammar.inner();
        let bytes = shared.tables.snapshot_bytes();
        let paid = if inner.defer_publishing.load(Ordering::Relaxed) {
            0
        } else {
            let per_call = if solo {
                PUBLISH_BYTES_PER_CALL / SOLO_DISCOUNT
            } else {
                PUBLISH_BYTES_PER_CALL
            };
            shared.calls_since_publish.saturating_mul(per_call)
        };
        // The new snapshot must fit beside the master tables and the old one (freed after).
        if (!new_generation && paid < bytes) || bytes > free {
            return;
        }
        let snapshot = Arc::new(shared.tables.snapshot());
        let old = inner
            .published
            .lock()
            .replace((snapshot, shared.generation));
        let version = inner.version.load(Ordering::Relaxed).wrapping_add(1);
        inner.version.store(version, Ordering::Release);
        // The old snapshot is freed here (if no matcher reads it), outside the lock.
        drop(old);
        shared.published_changes = changes;
        shared.published_generation = Some(shared.generation);
        shared.published_bytes = bytes;
        shared.calls_since_publish = 0;
    }
}
