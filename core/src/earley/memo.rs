//! Exact answers of earlier shortest-completion searches, kept for later searches from the
//! same base (budget mode runs one search per group of tokens and per state a crossing token
//! leads to, and their completions mostly end alike: close the string, then the object).
//!
//! **Why an answer is reusable.** A search from state `X0` that returns `s` (the shortest
//! completion, and the least in byte order among the shortest) passes the states
//! `X0, X1, ..., Xn`, `Xi` after `s[..i]`. For each, `s[i..]` is the shortest completion from
//! `Xi` (a shorter one would give `X0` a completion shorter than `s`) and the least in byte
//! order among those (a smaller one of the same length would give `X0` a smaller completion of
//! `s`'s length). `None` from `X0` means that no completion exists from `X0`.
//!
//! **How a search uses one.** A search that pushes a byte and reaches a state `X` with a known
//! answer `(d, s_X)` treats `X` as a leaf whose exact cost is `g + d`: above the round's
//! bound it is pruned with `g + d` as its `f`, otherwise the search returns its path, the byte,
//! and `s_X`. That is what expanding `X` would have returned: in the round that succeeds
//! (bound `B`, the optimum from the root) every completion through `X` has length `B - g`
//! (a shorter one would be a shorter completion of the root), and the depth-first order finds
//! the least of them first, which is `s_X`; a state in `X`'s subtree that the round skips
//! because it was reached before with as few bytes cannot hide a completion (that earlier
//! visit would have found it first). In the rounds before, `g + d` is a lower bound like the
//! heuristic (exact, so no smaller than it), so the bounds still rise to the optimum and not
//! past it. Results are therefore the same as without the memo, bit for bit; only the work
//! (and the fuel counted) is less.
//!
//! **Names.** A state is named by [`Parser::path_key`] from the base row (the top row when the
//! call began): the scan keys of the rows built since and the top lexer state. Rows
//! `0..=base` are the same for every search of the call, and for later calls while the base
//! row's serial is the same (a serial names the whole row stack). Lexer state ids are renamed
//! when the tables are replaced: [`Memo::forget`] is called then, with the other caches.
//!
//! **Bounded.** At most [`MAX_ENTRIES`] entries and [`MAX_ARENA`] bytes of completions; the
//! table, keys and completions are charged to the parser's budget before they grow, and a
//! memo that does not fit simply records nothing (it is a cache).
//!
//! [`Parser::path_key`]: super::Parser::path_key

use alloc::vec::Vec;
use core::mem::size_of;
use hashbrown::HashMap;

use crate::lexer::{table_bytes, vec_bytes};

/// Most states remembered.
pub(crate) const MAX_ENTRIES: usize = 8192;
/// Most bytes of completions remembered (and most words of keys).
pub(crate) const MAX_ARENA: usize = 1 << 16;
/// An entry's completion length when no completion exists.
const NO_COMPLETION: u32 = u32::MAX;

/// One remembered state: its key (`keys[key..key + key_len]`) and its completion
/// (`arena[off..off + len]`, or none when `len` is [`NO_COMPLETION`]).
#[derive(Debug, Clone, Copy)]
struct Entry {
    key: u32,
    key_len: u32,
    off: u32,
    len: u32,
}

/// See the module docs. Plain arrays (no allocation per entry): the key's hash indexes an
/// entry, whose stored key is compared on lookup; a second key with the same hash is not
/// remembered.
#[derive(Debug, Clone, Default)]
pub(crate) struct Memo {
    /// The base row's index and serial; `None` until a call sets it.
    base: Option<(u32, u64)>,
    index: HashMap<u64, u32>,
    entries: Vec<Entry>,
    keys: Vec<u32>,
    /// The completions found, each stored once; entries point at their suffixes.
    arena: Vec<u8>,
}

/// The memo and the keys of one search's path, boxed in the searcher (made on first use).
#[derive(Debug, Clone, Default)]
pub(crate) struct Paths {
    pub(crate) memo: Memo,
    /// The keys of the states of the search's current path (depth 0 is its start), and
    /// where each ends in `keys`.
    pub(crate) keys: Vec<u32>,
    pub(crate) ends: Vec<usize>,
    /// The key of the state just reached.
    pub(crate) scratch: Vec<u32>,
}

impl Paths {
    /// Heap bytes held (by capacity), the box included.
    #[inline(never)]
    pub(crate) fn bytes_used(&self) -> usize {
        size_of::<Paths>()
            + self.memo.bytes_used()
            + vec_bytes(&self.keys)
            + vec_bytes(&self.ends)
            + vec_bytes(&self.scratch)
    }
}

/// What a state's entry says.
pub(crate) enum Known<'a> {
    /// The shortest completion from the state (the least in byte order among them).
    Completion(&'a [u8]),
    /// No completion exists from the state.
    Never,
}

fn hash(key: &[u32]) -> u64 {
    key.iter().fold(key.len() as u64, |h, &w| {
        (h.rotate_left(26) ^ u64::from(w)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    })
}

/// Bytes a vector of `T` grows by to hold `more` more elements.
fn growth<T>(v: &Vec<T>, more: usize) -> usize {
    let need = v.len() + more;
    if need <= v.capacity() {
        return 0;
    }
    (need.max(v.capacity() * 2).max(4) - v.capacity()) * size_of::<T>()
}

impl Memo {
    /// Heap bytes held (by capacity).
    pub(crate) fn bytes_used(&self) -> usize {
        table_bytes(self.index.capacity(), size_of::<(u64, u32)>())
            + vec_bytes(&self.entries)
            + vec_bytes(&self.keys)
            + vec_bytes(&self.arena)
    }

    /// Forget every entry (the tables' state ids are about to name other states).
    pub(crate) fn forget(&mut self) {
        self.clear();
        self.base = None;
    }

    fn clear(&mut self) {
        self.index.clear();
        self.entries.clear();
        self.keys.clear();
        self.arena.clear();
    }

    /// At the start of a call whose searches all start at or above row `base_row`, whose
    /// serial is `serial`: the entries are kept iff the base is the same row stack.
    pub(crate) fn begin(&mut self, base_row: u32, serial: u64) {
        if self.base != Some((base_row, serial)) {
            self.clear();
            self.base = Some((base_row, serial));
        }
    }

    /// The base row keys are taken from.
    pub(crate) fn base_row(&self) -> Option<u32> {
        self.base.map(|(row, _)| row)
    }

    /// The entry of the state named `key`.
    pub(crate) fn get(&self, key: &[u32]) -> Option<Known<'_>> {
        let &i = self.index.get(&hash(key))?;
        let e = self.entries.get(i as usize)?;
        let stored = self
            .keys
            .get(e.key as usize..(e.key + e.key_len) as usize)?;
        if stored != key {
            return None;
        }
        if e.len == NO_COMPLETION {
            return Some(Known::Never);
        }
        let (a, b) = (e.off as usize, e.off as usize + e.len as usize);
        self.arena.get(a..b).map(Known::Completion)
    }

    /// Records that no completion exists from the state named `key`; `free` is the budget's
    /// room. Returns the bytes by which the memo grew (0 when it records nothing).
    pub(crate) fn record_never(&mut self, key: &[u32], free: usize) -> usize {
        self.record_with(key, &[key.len()], &[], free, true)
    }

    /// Records the completion `full` found from the state named by the first key: the state
    /// named by key `i` (keys `ends[i-1]..ends[i]` of `keys`, `ends[-1] = 0`) is `full[..i]`
    /// above it, so its completion is `full[i..]`. `free` is the budget's room. Returns the
    /// bytes by which the memo grew (0 when it records nothing).
    pub(crate) fn record(
        &mut self,
        keys: &[u32],
        ends: &[usize],
        full: &[u8],
        free: usize,
    ) -> usize {
        self.record_with(keys, ends, full, free, false)
    }

    fn record_with(
        &mut self,
        keys: &[u32],
        ends: &[usize],
        full: &[u8],
        free: usize,
        never: bool,
    ) -> usize {
        let n = ends.len();
        let fits = self.entries.len() + n <= MAX_ENTRIES
            && self.arena.len() + full.len() <= MAX_ARENA
            && self.keys.len() + keys.len() <= MAX_ARENA;
        let cap = self.index.capacity();
        let table = if self.index.len() + n > cap {
            let entry = size_of::<(u64, u32)>();
            table_bytes((self.index.len() + n).max(cap * 2), entry)
                .saturating_sub(table_bytes(cap, entry))
        } else {
            0
        };
        let grown = table
            + growth(&self.entries, n)
            + growth(&self.keys, keys.len())
            + growth(&self.arena, full.len());
        if !fits || grown > free {
            return 0;
        }
        let before = self.bytes_used();
        if self.index.try_reserve(n).is_err()
            || self.entries.try_reserve(n).is_err()
            || self.keys.try_reserve(keys.len()).is_err()
            || self.arena.try_reserve(full.len()).is_err()
        {
            return self.bytes_used().saturating_sub(before);
        }
        let off = self.arena.len() as u32;
        self.arena.extend_from_slice(full);
        let mut start = 0;
        for (i, &end) in ends.iter().enumerate() {
            let key = keys.get(start..end).unwrap_or(&[]);
            start = end;
            let h = hash(key);
            if i > full.len() || self.index.contains_key(&h) {
                continue;
            }
            let (off, len) = if never {
                (0, NO_COMPLETION)
            } else {
                (off + i as u32, (full.len() - i) as u32)
            };
            self.index.insert(h, self.entries.len() as u32);
            self.entries.push(Entry {
                key: self.keys.len() as u32,
                key_len: key.len() as u32,
                off,
                len,
            });
            self.keys.extend_from_slice(key);
        }
        self.bytes_used().saturating_sub(before)
    }
}
