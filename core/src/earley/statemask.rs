//! Masks remembered per lexer state: the part of a mask the lexer decides alone.
//!
//! Inside a lexeme the lexer state settles most tokens by itself. A token whose bytes all
//! keep some lexeme alive is allowed whatever the parser holds (the lexemes of a state are
//! the ones its row expects). A token that hits a dead transition where no lexeme can end is
//! rejected. Only a token that crosses a lexeme boundary (a dead transition out of an
//! accepting state, or a lazy lexeme's end) needs the parser. So for a lexer state `s` the
//! mask is `within(s)`, the first kind, plus what the parser allows below the *deferred*
//! trie nodes of `s`, and `within(s)` and the deferred nodes depend on `s` alone.
//!
//! The first time a mask is computed in a state, [`Parser::state_mask_walk`] walks the trie
//! with the lexer only ([`TokTrie::walk_split`]) and keeps `within(s)` plus the deferred
//! nodes grouped by (state before the node, byte), where the states whose lexeme the byte
//! ends count as one state when they end it alike (see `group`). Every mask in `s`, that
//! first one included, copies `within(s)`, takes one parser step per group (most groups
//! are rejected whole; a class's lexeme is ended once for all its groups), and walks below
//! the nodes of the accepted groups. Inside a JSON string
//! that replaces a walk of thousands of trie nodes with a copy and a few dozen steps: the
//! deferred nodes are the tokens that close the string and go on (`",`, `"}`). Even for a
//! state visited once, the lexer-only walk (one table read per node) plus one parser step
//! per group costs less than a full walk, which takes a parser step at every deferred node:
//! building on the first visit instead of the second took the 1,000-file MaskBench sample
//! from 1.02x/1.05x/1.11x round 1's mean/p50/p99 to 0.86x/0.90x/0.91x (`bench/perf.md`).
//! Once the remembered masks fill half their bound, a state gets one only on its second
//! visit, so the rest of the room goes to states that recur.
//!
//! They are part of the tables a grammar's matchers share (see [`crate::matcher`]); entries
//! are `Arc`s, so a copy of the tables (a reset's) shares them. Their memory is
//! bounded by [`MAX_STATE_MASK_BYTES`] (and an eighth of `max_memory_bytes`); past it, masks
//! are walked as before.

use crate::sync::Arc;
use alloc::boxed::Box;
use alloc::vec::Vec;

use super::{Entry, Parser};
use crate::error::LimitKind;
use crate::lexer::{Lexer, SLOW_BIT, StateId};
use crate::toktrie::{Split, Splitter, Stepper, StopWalk, TokTrie};
use crate::vocab::Vocabulary;
use sieve_kernels as kernels;

/// Default bound on the bytes of remembered state masks per parser.
pub const MAX_STATE_MASK_BYTES: usize = 8 << 20;

/// Masks are remembered for a state from its first visit while the remembered masks hold
/// less than half their bound, and from its second visit after that.
const REMEMBER_AT_VISIT: [u8; 2] = [1, 2];

/// What ending a lexeme gave ([`Parser::end_lexeme`]): the row to go on from and its lexer
/// start state (`None`: nothing expects the lexeme), or the limit it ran into.
type LexemeEnd = Result<Option<(u32, StateId)>, LimitKind>;

/// Deferred nodes that share the state before them and their byte, or (`ends`) whose
/// lexeme ends before their byte in states that end it alike (see `group`).
#[derive(Debug, Clone, Copy)]
struct Group {
    /// The state before the nodes (with `ends`, one state of their class).
    state: StateId,
    byte: u8,
    /// The nodes' byte is dead out of their (accepting) state: the step is the lexeme's end
    /// and the byte read from the next lexeme's start, the same for the whole class.
    ends: bool,
    /// `nodes[start..end]`.
    start: u32,
    end: u32,
}

/// The lexer-decided part of the masks in one lexer state.
#[derive(Debug)]
pub(crate) struct StateMask {
    /// The slice whose rest trie the nodes index; `None`: the full trie.
    slice: Option<usize>,
    /// Tokens allowed from the state without leaving the current lexemes (with the slice's
    /// tokens when `slice` is set); duplicates not included.
    within: Box<[u32]>,
    groups: Box<[Group]>,
    nodes: Box<[u32]>,
}

impl StateMask {
    fn bytes(&self) -> usize {
        core::mem::size_of::<StateMask>()
            + self.within.len() * 4
            + self.groups.len() * core::mem::size_of::<Group>()
            + self.nodes.len() * 4
    }
}

/// The per-parser store: entries by lexer state, visit counts, scratch.
#[derive(Debug, Clone, Default)]
pub(crate) struct StateMasks {
    entries: Vec<Option<Arc<StateMask>>>,
    visits: Vec<u8>,
    pub(super) bytes: usize,
    pub(super) max_bytes: usize,
    pub(super) split_stack: Vec<StateId>,
    deferred: Vec<(u32, StateId)>,
    /// Masks (and budget mode's groups) added so far (a snapshot with as many is up to
    /// date).
    pub(super) changes: u64,
    /// Budget mode's groups by lexer state (see `ends.rs`): master tables only.
    pub(super) ends: Vec<Option<Arc<super::ends::Ends>>>,
    /// Bytes held by `ends`' groups (shared ones counted in full).
    pub(super) ends_bytes: usize,
}

impl StateMasks {
    pub(crate) fn new(max_memory_bytes: usize) -> StateMasks {
        StateMasks {
            max_bytes: MAX_STATE_MASK_BYTES.min(max_memory_bytes / 8),
            ..StateMasks::default()
        }
    }

    /// Bytes held by remembered masks (shared ones counted in full).
    pub(crate) fn bytes_used(&self) -> usize {
        self.bytes
            + self.ends_bytes
            + crate::lexer::vec_bytes(&self.ends)
            + crate::lexer::vec_bytes(&self.entries)
            + crate::lexer::vec_bytes(&self.visits)
            + crate::lexer::vec_bytes(&self.split_stack)
            + crate::lexer::vec_bytes(&self.deferred)
    }

    /// A copy for a published snapshot: the entries (shared `Arc`s) and counts, no scratch
    /// and no budget-mode groups (budget mode runs on the master tables).
    pub(crate) fn snapshot(&self) -> StateMasks {
        StateMasks {
            entries: self.entries.clone(),
            visits: self.visits.clone(),
            bytes: self.bytes,
            max_bytes: self.max_bytes,
            split_stack: Vec::new(),
            deferred: Vec::new(),
            changes: self.changes,
            ends: Vec::new(),
            ends_bytes: 0,
        }
    }

    /// Heap bytes [`StateMasks::snapshot`] adds: its two vectors (the masks are shared).
    pub(crate) fn snapshot_bytes(&self) -> usize {
        core::mem::size_of_val(self.entries.as_slice()) + self.visits.len()
    }

    /// How many masks were added (see [`crate::lexer::Lexer::changes`]).
    pub(crate) fn changes(&self) -> u64 {
        self.changes
    }

    /// Masks remembered.
    pub(crate) fn len(&self) -> usize {
        self.entries.iter().filter(|e| e.is_some()).count()
    }
}

/// The lexer as a [`Splitter`]: a byte is pushed when some lexeme stays alive (and the
/// target is not lazy), rejected when none does and none can end before it, and deferred
/// otherwise.
pub(super) struct LexerSplit<'a> {
    pub(super) lexer: &'a mut Lexer,
    pub(super) error: Option<LimitKind>,
}

impl Splitter for LexerSplit<'_> {
    type Entry = StateId;

    /// One table read decides a computed transition to a live state that is not lazy, and a
    /// dead one out of a state where no lexeme can end (the other entries carry
    /// [`SLOW_BIT`]), as in the mask walk's fast step; the rest takes [`LexerSplit::slow`].
    #[inline(always)]
    fn split(&mut self, top: StateId, byte: u8) -> Result<Split<StateId>, StopWalk> {
        let raw = self.lexer.next_raw(top, byte);
        if raw & SLOW_BIT != 0 {
            self.slow(top, byte)
        } else if raw == StateId::DEAD.0 {
            Ok(Split::Reject)
        } else {
            Ok(Split::Push(StateId(raw)))
        }
    }
}

impl LexerSplit<'_> {
    #[inline(never)]
    fn slow(&mut self, top: StateId, byte: u8) -> Result<Split<StateId>, StopWalk> {
        let next = self.lexer.next(top, byte).map_err(|kind| {
            self.error = Some(kind);
            StopWalk
        })?;
        Ok(if next == StateId::DEAD {
            if self.lexer.flags(top) & Lexer::ACCEPT != 0 {
                Split::Defer
            } else {
                Split::Reject
            }
        } else if self.lexer.flags(next) & Lexer::LAZY != 0 {
            Split::Defer
        } else {
            Split::Push(next)
        })
    }
}

impl Parser {
    /// Whether the top lexer state has a remembered mask in the tables read now (a hint:
    /// between calls only a snapshot is read, see [`crate::matcher`]).
    pub(crate) fn top_has_state_mask(&self) -> bool {
        self.stack.last().is_some_and(|top| {
            matches!(
                self.masks().entries.get(top.state.as_usize()),
                Some(Some(_))
            )
        })
    }

    /// Computes the mask into `mask` (`vocab.mask_words()` long, written whole) from the
    /// state mask of the top lexer state, building it on the state's first visit (second,
    /// once the remembered masks fill half their bound). Returns `false` without touching
    /// anything when the state has no remembered mask and does not get one (the memory
    /// bound reached, or a first visit past half of it): walk the trie instead. A budget
    /// error is kept in [`Parser::error`] (the mask is then incomplete).
    pub fn state_mask_walk(&mut self, vocab: &Vocabulary, mask: &mut [u32]) -> bool {
        let Some(&top) = self.stack.last() else {
            return false;
        };
        let idx = top.state.as_usize();
        let known = self.masks().entries.get(idx).and_then(Option::clone);
        let sm = match known {
            Some(sm) => sm,
            None => {
                // Building one takes the mask, up to one deferred node per trie node and
                // their grouping (28 bytes each), and a slot per lexer state: only when the
                // memory budget has room for all of it (otherwise the trie is walked).
                let need = vocab.mask_words() * 4
                    + vocab.trie().num_nodes().saturating_mul(28)
                    + (idx + 1) * 9;
                if need > self.free_bytes() {
                    return false;
                }
                if let Some(t) = &self.snapshot {
                    // A snapshot never builds or counts visits: unless the remembered masks
                    // are full (then the master tables would walk too), ask the master.
                    if t.state_masks.bytes >= t.state_masks.max_bytes {
                        return false;
                    }
                    self.error = Some(self.miss());
                    return true;
                }
                let m = &mut self.state_masks;
                if m.visits.len() <= idx {
                    m.visits.resize(idx + 1, 0);
                }
                let Some(visits) = m.visits.get_mut(idx) else {
                    return false;
                };
                *visits = visits.saturating_add(1);
                let at = REMEMBER_AT_VISIT[usize::from(m.bytes >= m.max_bytes / 2)];
                if *visits < at || m.bytes >= m.max_bytes {
                    return false;
                }
                match self.build_state_mask(vocab, top.state) {
                    Ok(sm) => {
                        let sm = Arc::new(sm);
                        let m = &mut self.state_masks;
                        if m.bytes + sm.bytes() <= m.max_bytes {
                            if m.entries.len() <= idx {
                                m.entries.resize(idx + 1, None);
                            }
                            if let Some(slot) = m.entries.get_mut(idx) {
                                m.changes += 1;
                                m.bytes += sm.bytes();
                                *slot = Some(Arc::clone(&sm));
                            }
                        }
                        sm
                    }
                    Err(kind) => {
                        self.error = Some(kind);
                        return true;
                    }
                }
            }
        };
        self.apply_state_mask(vocab, &sm, top.row, mask);
        true
    }

    fn build_state_mask(
        &mut self,
        vocab: &Vocabulary,
        state: StateId,
    ) -> Result<StateMask, LimitKind> {
        let slice_k = self.lexer.slice_for(state);
        let slice = slice_k.and_then(|k| vocab.slices().get(k));
        let (trie, within) = match slice {
            Some(s) => (s.rest(), Box::<[u32]>::from(s.mask())),
            None => (
                vocab.trie(),
                alloc::vec![0u32; vocab.mask_words()].into_boxed_slice(),
            ),
        };
        let mut within = within;
        let mut stack = core::mem::take(&mut self.state_masks.split_stack);
        let mut deferred = core::mem::take(&mut self.state_masks.deferred);
        deferred.clear();
        let mut split = LexerSplit {
            lexer: &mut self.lexer,
            error: None,
        };
        let walked = trie.walk_split(&mut split, state, &mut stack, &mut within, &mut deferred);
        let error = split.error;
        let result = match (walked, error) {
            (Ok(()), _) => Ok(group(trie, &mut self.lexer, &deferred)),
            (Err(StopWalk), e) => Err(e.unwrap_or(LimitKind::Fuel)),
        };
        self.state_masks.split_stack = stack;
        self.state_masks.deferred = deferred;
        let (groups, nodes) = result?;
        Ok(StateMask {
            slice: slice.and(slice_k),
            within,
            groups,
            nodes,
        })
    }

    fn apply_state_mask(&mut self, vocab: &Vocabulary, sm: &StateMask, row: u32, mask: &mut [u32]) {
        // The caller's mask is not zeroed: `within` is copied over all of it.
        let trie = match sm.slice.map(|k| vocab.slices().get(k)) {
            Some(Some(s)) => s.rest(),
            Some(None) => {
                kernels::fill(mask, 0);
                return;
            }
            None => vocab.trie(),
        };
        let Some((dst, rest)) = mask.split_at_mut_checked(sm.within.len()) else {
            kernels::fill(mask, 0);
            return;
        };
        kernels::copy_into(dst, &sm.within);
        kernels::fill(rest, 0);
        let mut stack = self.take_stack();
        if stack.is_empty() {
            return;
        }
        // The last class ended ([`Group::ends`]): its state, and the row and lexer state
        // after the lexeme (`None`: nothing expects it). Walks below the nodes only add rows
        // after that row, so it stays valid for the class's run of groups.
        let mut ended: Option<(StateId, LexemeEnd)> = None;
        'groups: for g in sm.groups.iter() {
            let from = Entry {
                row,
                state: g.state,
            };
            let stepped = if g.ends {
                // The class's groups are consecutive: its lexeme is ended once for all.
                if ended.is_none_or(|(state, _)| state != g.state) {
                    ended = Some((g.state, self.end_lexeme(from)));
                }
                match ended {
                    Some((_, Ok(Some((next_row, start))))) => {
                        self.start_with(next_row, start, g.byte)
                    }
                    Some((_, Err(kind))) => Err(kind),
                    _ => Ok(None),
                }
            } else {
                self.slow_entry(from, g.byte)
            };
            let e = match stepped {
                Ok(Some(e)) => e,
                Ok(None) => continue,
                Err(kind) => {
                    self.error = Some(kind);
                    break;
                }
            };
            let nodes = sm
                .nodes
                .get(g.start as usize..g.end as usize)
                .unwrap_or(&[]);
            for &node in nodes {
                trie.walk_below(self, &mut stack, node, e, mask);
                if self.error.is_some() {
                    break 'groups;
                }
            }
        }
        self.return_stack(stack);
        vocab.trie().or_duplicates(mask);
    }
}

/// Sorts the deferred `(node, state)` pairs by (state, byte, node) and groups them.
///
/// A node deferred because its byte is dead out of its accepting state steps by ending the
/// lexeme and reading the byte from the next row's start ([`Parser::push_after_lexeme`]),
/// which depends on the state only through its accept set and ignored flags (see
/// [`Parser::finish_lexeme`]): such nodes are grouped by that class instead of their state,
/// with one state of the class standing for all, so one step serves every state of the
/// class (`Group::ends`). After a JSON value, the whitespace lexer's states and the bytes
/// that may follow them made about 400 groups, one step each, per mask; by class they are
/// about a quarter of that. A node deferred because its target is lazy keeps its state.
fn group(
    trie: &TokTrie,
    lexer: &mut Lexer,
    deferred: &[(u32, StateId)],
) -> (Box<[Group]>, Box<[u32]>) {
    const ENDS: u64 = 1 << 63;
    // The sort key is computed once per pair, not per comparison: (state or class, byte),
    // the classes after the states.
    let mut keyed: Vec<(u64, u32, StateId)> = deferred
        .iter()
        .map(|&(node, state)| {
            let byte = trie.node_byte(node);
            // Known already (the split read it), so no work and no error here.
            let ends = lexer.flags(state) & Lexer::ACCEPT != 0
                && lexer.next(state, byte) == Ok(StateId::DEAD);
            let key = if ends {
                let flags = lexer.flags(state) & (Lexer::IGNORED | Lexer::ONLY_IGNORED);
                ENDS | u64::from(lexer.accept_set_id(state)) << 16 | u64::from(flags) << 8
            } else {
                u64::from(state.0) << 8
            };
            (key | u64::from(byte), node, state)
        })
        .collect();
    keyed.sort_unstable();
    let mut groups: Vec<Group> = Vec::new();
    let mut nodes = Vec::with_capacity(keyed.len());
    let mut last = None;
    for &(key, node, state) in &keyed {
        let at = nodes.len() as u32;
        nodes.push(node);
        // A class keeps the state of its first group for all (see `ended` in
        // `apply_state_mask`).
        let state = match groups.last() {
            Some(g) if last.is_some_and(|l| l >> 8 == key >> 8) => g.state,
            _ => state,
        };
        match groups.last_mut() {
            Some(g) if last == Some(key) => g.end = at + 1,
            _ => groups.push(Group {
                state,
                byte: key as u8,
                ends: key & ENDS != 0,
                start: at,
                end: at + 1,
            }),
        }
        last = Some(key);
    }
    (groups.into_boxed_slice(), nodes.into_boxed_slice())
}
