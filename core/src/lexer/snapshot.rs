//! The read-only side of the lexer: a snapshot of the tables that a grammar publishes for its
//! matchers to read without a lock (see [`crate::matcher`]), and the lookups that answer from
//! the tables alone. A lookup that would have to build something (a transition, a start
//! state, a slice check) answers `None`: the caller then takes the grammar's lock and works
//! on the master tables, whose state ids the snapshot shares (a snapshot is a copy of them at
//! one moment, and the master tables only grow within one generation).

use super::{Interner, Lexer, SLICE_NONE, SLICE_UNKNOWN, SLOW_BIT, StateId, UNSET};
use crate::regex::ExprSet;

impl Lexer {
    /// A copy of what readers use: transitions, flags, accept sets, start states and the
    /// slice of each state. Not the expression store, the state pairs, the slice units or
    /// any scratch: a snapshot never builds.
    pub(crate) fn snapshot(&self) -> Lexer {
        Lexer {
            exprs: ExprSet::placeholder(),
            lexemes: self.lexemes.clone(),
            classes: self.classes.clone(),
            num_classes: self.num_classes,
            next: self.next.clone(),
            flags: self.flags.clone(),
            states: self.states.clone(),
            pairs: Interner::empty(),
            accept_sets: self.accept_sets.clone(),
            initial_sets: self.initial_sets.clone(),
            initial_states: self.initial_states.clone(),
            max_states: self.max_states,
            max_bytes: self.max_bytes,
            fuel_per_step: self.fuel_per_step,
            slice_of_state: self.slice_of_state.clone(),
            changes: self.changes,
            ..Lexer::placeholder()
        }
    }

    /// Heap bytes [`Lexer::snapshot`] would hold (by length: a clone's capacity).
    pub(crate) fn snapshot_bytes(&self) -> usize {
        fn len_bytes<T>(v: &[T]) -> usize {
            core::mem::size_of_val(v)
        }
        len_bytes(&self.next)
            + len_bytes(&self.flags)
            + len_bytes(&self.states)
            + self.accept_sets.bytes_used()
            + self.initial_sets.bytes_used()
            + len_bytes(&self.initial_states)
            + len_bytes(&self.slice_of_state)
            + len_bytes(&self.lexemes)
    }

    /// How many times the tables readers see were extended (a transition, a start state or
    /// a slice check added): equal counts mean a snapshot is up to date.
    pub(crate) fn changes(&self) -> u64 {
        self.changes
    }

    /// [`Lexer::flags`], `None` for a state these tables do not have (a snapshot older than
    /// the state).
    #[inline(always)]
    pub(crate) fn flags_of(&self, s: StateId) -> Option<u8> {
        self.flags.get(s.as_usize()).copied()
    }

    /// [`Lexer::next`] from the table alone: `None` when the transition is not computed yet.
    #[inline(always)]
    pub(crate) fn next_known(&self, s: StateId, byte: u8) -> Option<StateId> {
        let raw = self.next_raw(s, byte);
        (raw < UNSET).then_some(StateId(raw & !SLOW_BIT))
    }

    /// [`Lexer::initial_state`] from the table alone: `None` when this set has no start
    /// state yet.
    pub(crate) fn initial_known(&self, allowed: &[u32]) -> Option<StateId> {
        let id = self.initial_sets.find(allowed)?;
        self.initial_states.get(id as usize).copied()
    }

    /// [`Lexer::slice_for`] from the table alone: `None` when the slice check has not run
    /// for `s`.
    pub(crate) fn slice_known(&self, s: StateId) -> Option<Option<usize>> {
        match self.slice_of_state.get(s.as_usize()).copied() {
            None | Some(SLICE_UNKNOWN) => None,
            Some(SLICE_NONE) => Some(None),
            Some(k) => Some(Some(usize::from(k))),
        }
    }
}
