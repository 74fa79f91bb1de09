//! Flat, DFS-ordered token trie: the data structure the mask computation walks.
//!
//! [`TokTrie`] holds every token's byte string in one array of 8-byte nodes, laid out in
//! depth-first order with children sorted by byte and the root at index 0. Each node packs
//! its edge byte, the token id ending there (or none), its subtree size and the number of
//! bytes to pop once its subtree is done, so [`TokTrie::walk`] is one flat loop with no
//! recursion and no allocation (see `README.md` beside this file).
//!
//! Invariants (established by [`TokTrie::new`], relied on by the walk's unchecked indexing):
//! every token id in a node is `< vocab_size`; every subtree lies inside the array; a node's
//! pop count is at least 1 and at most its depth. Ids whose byte string equals an earlier id's
//! are kept in a side table and copied after the walk; ids with empty strings are never set.
//!
//! Hot-path cost: a walk visits each node whose parent was accepted once, with one
//! `push_byte` per visit and one `pop_bytes` per accepted leaf or rejected last sibling;
//! rejected subtrees cost nothing. Extra work per walk is O(duplicate ids).

use alloc::vec::Vec;
use core::fmt;

mod walk;

#[cfg(test)]
mod tests;

/// A byte-level recognizer driven by [`TokTrie::walk`]: a stack of states.
pub trait Recognizer {
    /// Tries to extend the current prefix by `byte`. On success enters (pushes) the new state
    /// and returns `true`; on failure returns `false` and leaves the state unchanged.
    fn push_byte(&mut self, byte: u8) -> bool;
    /// Undoes the last `n` successful pushes.
    fn pop_bytes(&mut self, n: usize);
}

/// A recognizer whose usual step is a table lookup the walk can make itself
/// ([`TokTrie::walk_stepper`]): it lends the walk its stack of entries, so the hot loop keeps
/// the stack in registers and calls back only for steps the table does not decide.
pub trait Stepper {
    /// One stack entry (a state).
    type Entry: Copy;
    /// Lends the stack, bottom first; the last entry is the current state. An empty stack
    /// accepts nothing. Given back with [`Stepper::return_stack`].
    fn take_stack(&mut self) -> Vec<Self::Entry>;
    /// Takes the stack back, as it was lent.
    fn return_stack(&mut self, stack: Vec<Self::Entry>);
    /// What a table lookup decides about `byte` from `top`: push an entry, reject the byte,
    /// or leave it to [`Stepper::step`].
    fn fast_step(&self, top: Self::Entry, byte: u8) -> FastStep<Self::Entry>;
    /// The full step: `Ok(Some(e))` pushes `e`, `Ok(None)` rejects `byte`, `Err(StopWalk)`
    /// ends the walk (a budget ran out; the recognizer keeps the reason).
    fn step(&mut self, top: Self::Entry, byte: u8) -> Result<Option<Self::Entry>, StopWalk>;
}

/// A recognizer that sorts bytes three ways without outside context
/// ([`TokTrie::walk_split`]): pushed, rejected, or deferred to a later walk that has it.
pub trait Splitter {
    /// One stack entry (a state).
    type Entry: Copy;
    /// What happens to `byte` from `top`; `Err(StopWalk)` ends the walk.
    fn split(&mut self, top: Self::Entry, byte: u8) -> Result<Split<Self::Entry>, StopWalk>;
}

/// The answer of [`Splitter::split`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split<E> {
    /// Accepted; push this entry.
    Push(E),
    /// Rejected, whatever the context.
    Reject,
    /// Depends on context: record the node, do not enter it.
    Defer,
}

/// The answer of [`Stepper::fast_step`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastStep<E> {
    /// The byte is accepted; push this entry.
    Push(E),
    /// The byte is rejected.
    Reject,
    /// The table does not decide; call [`Stepper::step`].
    Slow,
}

/// Returned by [`Stepper::step`] to end a walk early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StopWalk;

/// Why a [`TokTrie`] could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrieError {
    /// A token's byte string is longer than [`TokTrie::MAX_TOKEN_LEN`].
    TokenTooLong {
        /// The offending token id.
        id: u32,
        /// Its length in bytes.
        len: usize,
    },
    /// More ids than the 24-bit token field can name ([`TokTrie::MAX_VOCAB_SIZE`]).
    TooManyTokens {
        /// The number of ids given.
        count: usize,
    },
    /// The trie would need more than [`TokTrie::MAX_NODES`] nodes (22-bit subtree sizes).
    TooManyNodes,
    /// The token byte strings add up to more than `u32::MAX` bytes.
    TooManyBytes,
}

impl fmt::Display for TrieError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrieError::TokenTooLong { id, len } => write!(
                f,
                "token {id} is {len} bytes long; the trie allows at most {}",
                TokTrie::MAX_TOKEN_LEN
            ),
            TrieError::TooManyTokens { count } => write!(
                f,
                "{count} token ids; the trie allows at most {}",
                TokTrie::MAX_VOCAB_SIZE
            ),
            TrieError::TooManyNodes => write!(
                f,
                "the token trie needs more than {} nodes",
                TokTrie::MAX_NODES
            ),
            TrieError::TooManyBytes => f.write_str("token byte strings exceed 4 GiB in total"),
        }
    }
}

impl core::error::Error for TrieError {}

/// One trie node: two `u32` words.
///
/// `head` = edge byte (bits 0..8) | token id (bits 8..32, [`Node::NO_TOKEN`] = none).
/// `meta` = pops − 1 (bits 0..10) | subtree size including the node (bits 10..32).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(C)]
struct Node {
    head: u32,
    meta: u32,
}

impl Node {
    const NO_TOKEN: u32 = 0xFF_FFFF;
    const POP_BITS: u32 = 10;
    const POP_MASK: u32 = (1 << Node::POP_BITS) - 1;

    fn new(byte: u8) -> Node {
        Node {
            head: (Node::NO_TOKEN << 8) | u32::from(byte),
            meta: 0,
        }
    }

    #[inline(always)]
    fn byte(self) -> u8 {
        // Truncation keeps bits 0..8, the edge byte.
        self.head as u8
    }

    #[inline(always)]
    fn token(self) -> u32 {
        self.head >> 8
    }

    /// Bytes to pop after this node's subtree when the node itself was pushed: its depth
    /// minus the depth of the node following the subtree, plus one. Always >= 1.
    #[inline(always)]
    fn pops(self) -> usize {
        (self.meta & Node::POP_MASK) as usize + 1
    }

    #[inline(always)]
    fn subtree_size(self) -> usize {
        (self.meta >> Node::POP_BITS) as usize
    }
}

/// A token trie: every token's byte string, laid out for fast mask walks.
///
/// `Send + Sync` and immutable once built; clone it or share it behind an `Arc`.
#[derive(Clone)]
pub struct TokTrie {
    /// DFS-ordered nodes, root at 0; `nodes[0].subtree_size() == nodes.len()`.
    nodes: Vec<Node>,
    /// All token bytes, concatenated in id order.
    bytes: Vec<u8>,
    /// `bytes[offsets[id]..offsets[id + 1]]` is token `id`; `len == vocab_size + 1`.
    offsets: Vec<u32>,
    /// `(primary, duplicate)`: `duplicate` has the same bytes as `primary`, the lowest such id
    /// (the one stored in the trie). Sorted by primary, then duplicate.
    dups: Vec<(u32, u32)>,
    /// The longest token's length in bytes: the deepest a walk goes.
    max_len: usize,
}

impl fmt::Debug for TokTrie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokTrie")
            .field("vocab_size", &self.vocab_size())
            .field("num_nodes", &self.num_nodes())
            .field("duplicates", &self.dups.len())
            .field("bytes_used", &self.bytes_used())
            .finish()
    }
}

impl TokTrie {
    /// Longest token byte string the node format allows (10-bit pop count).
    pub const MAX_TOKEN_LEN: usize = 1 << Node::POP_BITS;
    /// Most token ids (24-bit token field, one value reserved for "no token").
    pub const MAX_VOCAB_SIZE: usize = Node::NO_TOKEN as usize;
    /// Most nodes, root included (22-bit subtree size).
    pub const MAX_NODES: usize = (1 << (32 - Node::POP_BITS)) - 1;

    /// Builds the trie. `tokens[id]` is the byte string of token `id`; an empty string marks
    /// an unused id, which is never allowed. When several ids share a byte string, the lowest
    /// is stored in the trie and the others are copied from it.
    ///
    /// # Errors
    /// A token longer than [`TokTrie::MAX_TOKEN_LEN`], more than
    /// [`TokTrie::MAX_VOCAB_SIZE`] ids, more than [`TokTrie::MAX_NODES`] nodes, or more than
    /// `u32::MAX` bytes in total.
    pub fn new(tokens: &[&[u8]]) -> Result<TokTrie, TrieError> {
        if tokens.len() > TokTrie::MAX_VOCAB_SIZE {
            return Err(TrieError::TooManyTokens {
                count: tokens.len(),
            });
        }
        let mut bytes = Vec::new();
        let mut offsets = Vec::with_capacity(tokens.len() + 1);
        offsets.push(0u32);
        for (id, tok) in tokens.iter().enumerate() {
            if tok.len() > TokTrie::MAX_TOKEN_LEN {
                return Err(TrieError::TokenTooLong {
                    id: id as u32,
                    len: tok.len(),
                });
            }
            bytes.extend_from_slice(tok);
            offsets.push(u32::try_from(bytes.len()).map_err(|_| TrieError::TooManyBytes)?);
        }

        // Ids with bytes, sorted by (bytes, id): lexicographic order is DFS order with
        // children sorted by byte, and the first id of each equal run is the lowest.
        let mut order: Vec<u32> = (0..tokens.len() as u32)
            .filter(|&id| !tokens[id as usize].is_empty())
            .collect();
        order.sort_unstable_by(|&a, &b| tokens[a as usize].cmp(tokens[b as usize]).then(a.cmp(&b)));

        let mut nodes = Vec::with_capacity(order.len() * 2 + 1);
        nodes.push(Node::new(0));
        // `depth[i]` = depth of node i (root 0); used only to compute pop counts.
        let mut depth: Vec<u16> = Vec::with_capacity(nodes.capacity());
        depth.push(0);
        // Node indices on the path from the root (excluded) to the last inserted node.
        let mut path: Vec<u32> = Vec::new();
        let mut dups = Vec::new();
        let mut prev: &[u8] = &[];
        let mut primary = 0u32;
        for &id in &order {
            let tok = tokens[id as usize];
            if tok == prev {
                dups.push((primary, id));
                continue;
            }
            let common = tok.iter().zip(prev).take_while(|(a, b)| a == b).count();
            while path.len() > common {
                if let Some(idx) = path.pop() {
                    close_subtree(&mut nodes, idx);
                }
            }
            // `tok > prev` and `tok != prev`, so `common < tok.len()`: at least one new node.
            for &b in &tok[common..] {
                if nodes.len() >= TokTrie::MAX_NODES {
                    return Err(TrieError::TooManyNodes);
                }
                path.push(nodes.len() as u32);
                nodes.push(Node::new(b));
                depth.push(path.len() as u16);
            }
            if let Some(last) = nodes.last_mut() {
                last.head = (id << 8) | u32::from(last.byte());
            }
            primary = id;
            prev = tok;
        }
        while let Some(idx) = path.pop() {
            close_subtree(&mut nodes, idx);
        }
        close_subtree(&mut nodes, 0);

        // Pops: depth(p) - depth(next node after p's subtree) + 1, where "past the end"
        // counts as depth 1 so that the walk ends with everything popped.
        let n = nodes.len();
        for p in 1..n {
            let next = p + nodes[p].subtree_size();
            let next_depth = if next < n { depth[next] } else { 1 };
            let pops = u32::from(depth[p] - next_depth) + 1;
            debug_assert!(pops >= 1 && pops as usize <= TokTrie::MAX_TOKEN_LEN);
            nodes[p].meta |= pops - 1;
        }

        let max_len = tokens.iter().map(|t| t.len()).max().unwrap_or(0);
        Ok(TokTrie {
            nodes,
            bytes,
            offsets,
            dups,
            max_len,
        })
    }

    /// The trie of an empty vocabulary (what `TokTrie::new(&[])` builds), infallibly.
    pub(crate) fn empty() -> TokTrie {
        TokTrie {
            nodes: alloc::vec![Node {
                head: Node::NO_TOKEN << 8,
                meta: 1 << Node::POP_BITS,
            }],
            bytes: Vec::new(),
            offsets: alloc::vec![0],
            dups: Vec::new(),
            max_len: 0,
        }
    }

    /// The longest token's length in bytes (at most [`TokTrie::MAX_TOKEN_LEN`]): a walk
    /// pushes at most this many entries on its stack.
    pub fn max_token_len(&self) -> usize {
        self.max_len
    }

    /// Number of token ids (`tokens.len()` at construction), used or not.
    pub fn vocab_size(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Words in a mask covering every id: `ceil(vocab_size / 32)`.
    pub fn mask_words(&self) -> usize {
        self.vocab_size().div_ceil(32)
    }

    /// The byte string of token `id`; empty for unused or out-of-range ids.
    pub fn token_bytes(&self, id: u32) -> &[u8] {
        let id = id as usize;
        match (self.offsets.get(id), self.offsets.get(id + 1)) {
            (Some(&start), Some(&end)) => self
                .bytes
                .get(start as usize..end as usize)
                .unwrap_or_default(),
            _ => &[],
        }
    }

    /// The lowest id whose byte string is exactly `bytes` (`None` for empty `bytes`).
    pub fn token_id(&self, bytes: &[u8]) -> Option<u32> {
        let node = self.find_node(bytes)?;
        let tok = self.nodes[node].token();
        (node != 0 && tok != Node::NO_TOKEN).then_some(tok)
    }

    /// Longest-match greedy tokenization of `bytes` (used for forced tokens): repeatedly takes
    /// the longest token that is a prefix of the rest. `None` if some position starts no
    /// token. Greedy is not always the tokenizer's own segmentation, and can fail where a
    /// shorter first token would have succeeded.
    pub fn greedy_tokenize(&self, bytes: &[u8]) -> Option<Vec<u32>> {
        let mut out = Vec::new();
        let mut rest = bytes;
        while !rest.is_empty() {
            let (tok, len) = self.longest_prefix_token(rest)?;
            out.push(tok);
            rest = rest.get(len..)?;
        }
        Some(out)
    }

    /// Calls `f(token, len)` for every token (duplicate ids aside) that is a prefix of
    /// `bytes`, shortest first.
    pub fn prefix_tokens(&self, bytes: &[u8], f: impl FnMut(u32, usize)) {
        self.prefix_tokens_from(0, bytes, f);
    }

    /// [`TokTrie::prefix_tokens`] for the tokens below `node`, paths measured from `node`.
    fn prefix_tokens_from(&self, node: usize, bytes: &[u8], mut f: impl FnMut(u32, usize)) {
        let mut node = node;
        for (i, &b) in bytes.iter().enumerate() {
            let Some(c) = self.child(node, b) else {
                break;
            };
            node = c;
            let tok = self.nodes[node].token();
            if tok != Node::NO_TOKEN {
                f(tok, i + 1);
            }
        }
    }

    /// How many tokens [`TokTrie::greedy_tokenize`] splits `bytes` into, without building
    /// the list (`None` where it fails).
    pub fn greedy_count(&self, bytes: &[u8]) -> Option<usize> {
        let mut n = 0;
        let mut rest = bytes;
        while !rest.is_empty() {
            let (_, len) = self.longest_prefix_token(rest)?;
            n += 1;
            rest = rest.get(len..)?;
        }
        Some(n)
    }

    /// Sets the bits of every token whose bytes start with `prefix` (duplicates included),
    /// for forced-token healing. An empty prefix selects every used id. Bits beyond
    /// `mask.len()` are skipped.
    pub fn add_tokens_with_prefix(&self, prefix: &[u8], mask: &mut [u32]) {
        let Some(node) = self.find_node(prefix) else {
            return;
        };
        let end = node + self.nodes[node].subtree_size();
        for n in self.nodes.get(node..end).unwrap_or_default() {
            set_bit_checked(mask, n.token());
        }
        for &(primary, dup) in &self.dups {
            if self.token_bytes(primary).starts_with(prefix) {
                set_bit_checked(mask, dup);
            }
        }
    }

    /// The bytes that extend `prefix` to a longer token's prefix (children of its trie
    /// node), in increasing order; none when no token starts with `prefix`.
    pub fn next_bytes(&self, prefix: &[u8]) -> impl Iterator<Item = u8> + '_ {
        let node = self.find_node(prefix);
        let end = node.map_or(0, |n| n + self.nodes[n].subtree_size());
        let mut c = node.map_or(0, |n| n + 1);
        core::iter::from_fn(move || {
            let n = self.nodes.get(c).filter(|_| c < end)?;
            c += n.subtree_size();
            Some(n.byte())
        })
    }

    /// Number of nodes, root included.
    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Heap bytes held: nodes, token bytes, offsets and the duplicate table.
    pub fn bytes_used(&self) -> usize {
        self.nodes.len() * size_of::<Node>()
            + self.bytes.len()
            + self.offsets.len() * size_of::<u32>()
            + self.dups.len() * size_of::<(u32, u32)>()
    }

    /// Index of the child of `node` reached by `byte`, if any.
    fn child(&self, node: usize, byte: u8) -> Option<usize> {
        let end = node + self.nodes.get(node)?.subtree_size();
        let mut c = node + 1;
        while c < end {
            let n = self.nodes.get(c)?;
            if n.byte() == byte {
                return Some(c);
            }
            if n.byte() > byte {
                return None;
            }
            c += n.subtree_size();
        }
        None
    }

    /// Node reached from the root by `bytes` (the root itself for empty `bytes`).
    fn find_node(&self, bytes: &[u8]) -> Option<usize> {
        bytes.iter().try_fold(0, |node, &b| self.child(node, b))
    }

    /// The longest token that is a prefix of `bytes`, with its length.
    fn longest_prefix_token(&self, bytes: &[u8]) -> Option<(u32, usize)> {
        self.longest_prefix_from(0, bytes)
    }

    /// The longest token spelled `prefix` followed by a non-empty prefix of `bytes`, with the
    /// number of bytes of `bytes` it covers. `None` if there is none (or `prefix` leads
    /// nowhere).
    pub fn longest_prefix_under(&self, prefix: &[u8], bytes: &[u8]) -> Option<(u32, usize)> {
        let node = self.find_node(prefix)?;
        self.longest_prefix_from(node, bytes)
    }

    /// The longest token below `node` whose path from `node` is a prefix of `bytes`.
    fn longest_prefix_from(&self, node: usize, bytes: &[u8]) -> Option<(u32, usize)> {
        let mut best = None;
        self.prefix_tokens_from(node, bytes, |tok, len| best = Some((tok, len)));
        best
    }
}

/// Finishes node `idx` once every node of its subtree has been appended.
fn close_subtree(nodes: &mut [Node], idx: u32) {
    let size = (nodes.len() - idx as usize) as u32;
    if let Some(n) = nodes.get_mut(idx as usize) {
        n.meta = size << Node::POP_BITS;
    }
}

/// Sets bit `id` if it exists in `mask` and `id` names a token.
#[inline]
fn set_bit_checked(mask: &mut [u32], id: u32) {
    if id != Node::NO_TOKEN {
        sieve_kernels::set_bit(mask, id);
    }
}

/// Whether bit `id` is set; bits beyond `mask` are clear.
#[inline]
fn bit_is_set(mask: &[u32], id: u32) -> bool {
    sieve_kernels::test_bit(mask, id)
}

/// Clears bit `id` if it exists in `mask`.
#[inline]
fn clear_bit(mask: &mut [u32], id: u32) {
    sieve_kernels::clear_bit(mask, id);
}
