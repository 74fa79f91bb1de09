//! Trie tests: construction, lookups, and the walk against a brute-force oracle.

use super::*;
use alloc::collections::BTreeSet;
use alloc::vec;
use proptest::prelude::*;

/// Accepts exactly the prefixes of a fixed set of strings; checks push/pop balance.
struct PrefixRecognizer {
    prefixes: BTreeSet<Vec<u8>>,
    stack: Vec<u8>,
    pushes: usize,
}

impl PrefixRecognizer {
    fn new(words: &[Vec<u8>]) -> Self {
        let mut prefixes = BTreeSet::new();
        for w in words {
            for i in 0..=w.len() {
                prefixes.insert(w[..i].to_vec());
            }
        }
        PrefixRecognizer {
            prefixes,
            stack: Vec::new(),
            pushes: 0,
        }
    }
}

impl Recognizer for PrefixRecognizer {
    fn push_byte(&mut self, byte: u8) -> bool {
        self.stack.push(byte);
        if self.prefixes.contains(&self.stack) {
            self.pushes += 1;
            true
        } else {
            self.stack.pop();
            false
        }
    }
    fn pop_bytes(&mut self, n: usize) {
        assert!(
            n > 0 && n <= self.stack.len(),
            "pop {n} of {}",
            self.stack.len()
        );
        self.stack.truncate(self.stack.len() - n);
    }
}

/// A DFA over bytes: `table[state * 256 + byte]`, `DEAD` = reject.
struct Dfa {
    table: Vec<u8>,
    stack: Vec<u8>,
}

const DEAD: u8 = u8::MAX;

impl Dfa {
    fn run(&self, start: u8, bytes: &[u8]) -> bool {
        let mut s = start;
        for &b in bytes {
            s = self.table[s as usize * 256 + b as usize];
            if s == DEAD {
                return false;
            }
        }
        true
    }
}

impl Recognizer for Dfa {
    fn push_byte(&mut self, byte: u8) -> bool {
        let s = *self.stack.last().unwrap_or(&0);
        let next = self.table[s as usize * 256 + byte as usize];
        if next == DEAD {
            return false;
        }
        self.stack.push(next);
        true
    }
    fn pop_bytes(&mut self, n: usize) {
        assert!(
            n > 0 && n < self.stack.len(),
            "pop {n} of {}",
            self.stack.len() - 1
        );
        self.stack.truncate(self.stack.len() - n);
    }
}

/// The same DFA as a [`Stepper`]: the table step decides only transitions out of even
/// states, so the walk takes both paths; `stop_after` slow steps end the walk.
struct DfaStepper {
    dfa: Dfa,
    slow_steps: usize,
    stop_after: Option<usize>,
}

impl DfaStepper {
    fn next(&self, s: u8, byte: u8) -> Option<u8> {
        let next = self.dfa.table[s as usize * 256 + byte as usize];
        (next != DEAD).then_some(next)
    }
}

impl Stepper for DfaStepper {
    type Entry = u8;
    fn take_stack(&mut self) -> Vec<u8> {
        core::mem::take(&mut self.dfa.stack)
    }
    fn return_stack(&mut self, stack: Vec<u8>) {
        self.dfa.stack = stack;
    }
    fn fast_step(&self, top: u8, byte: u8) -> FastStep<u8> {
        // Every third state leaves its bytes to `step`; the others decide both ways.
        if top.is_multiple_of(3) {
            return FastStep::Slow;
        }
        match self.next(top, byte) {
            Some(e) => FastStep::Push(e),
            None => FastStep::Reject,
        }
    }
    fn step(&mut self, top: u8, byte: u8) -> Result<Option<u8>, StopWalk> {
        self.slow_steps += 1;
        if self.stop_after.is_some_and(|n| self.slow_steps > n) {
            return Err(StopWalk);
        }
        Ok(self.next(top, byte))
    }
}

/// The DFA as a [`Splitter`]: transitions out of states divisible by 3 are deferred.
struct DfaSplit<'a> {
    dfa: &'a Dfa,
    defers: usize,
}

impl Splitter for DfaSplit<'_> {
    type Entry = u8;
    fn split(&mut self, top: u8, byte: u8) -> Result<Split<u8>, StopWalk> {
        if top.is_multiple_of(3) {
            self.defers += 1;
            return Ok(Split::Defer);
        }
        let next = self.dfa.table[top as usize * 256 + byte as usize];
        Ok(if next == DEAD {
            Split::Reject
        } else {
            Split::Push(next)
        })
    }
}

fn refs(tokens: &[Vec<u8>]) -> Vec<&[u8]> {
    tokens.iter().map(|t| t.as_slice()).collect()
}

fn oracle(tokens: &[Vec<u8>], accepts: impl Fn(&[u8]) -> bool) -> Vec<u32> {
    let mut mask = vec![0u32; tokens.len().div_ceil(32)];
    for (id, t) in tokens.iter().enumerate() {
        if !t.is_empty() && accepts(t) {
            mask[id / 32] |= 1 << (id % 32);
        }
    }
    mask
}

/// Checks the structural invariants the walk's `unsafe` relies on.
fn check_invariants(trie: &TokTrie) {
    let n = trie.nodes.len();
    assert_eq!(trie.nodes[0].subtree_size(), n);
    for (p, node) in trie.nodes.iter().enumerate().skip(1) {
        assert!(node.subtree_size() >= 1 && p + node.subtree_size() <= n);
        let t = node.token();
        assert!(t == Node::NO_TOKEN || (t as usize) < trie.vocab_size());
        if node.subtree_size() == 1 {
            assert_ne!(t, Node::NO_TOKEN, "leaf without token at {p}");
        }
    }
    for &(primary, dup) in &trie.dups {
        assert!(primary < dup);
        assert_eq!(trie.token_bytes(primary), trie.token_bytes(dup));
    }
}

/// Token strings over a tiny alphabet so that prefixes and duplicates are common.
fn small_token() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(vec![b'a', b'b', b'c', 0xFF]), 0..6)
}

#[test]
fn simple_walk_and_layout() {
    let tokens: Vec<Vec<u8>> = ["a", "ab", "abc", "b", "", "ab", "ba", "c"]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    let trie = TokTrie::new(&refs(&tokens)).unwrap();
    check_invariants(&trie);
    // root, a, ab, abc, b, ba, c
    assert_eq!(trie.num_nodes(), 7);
    assert_eq!(trie.vocab_size(), 8);
    assert_eq!(trie.mask_words(), 1);
    assert_eq!(trie.dups, vec![(1, 5)]);
    // The example table in README.md.
    let sizes: Vec<usize> = trie.nodes.iter().map(|n| n.subtree_size()).collect();
    let pops: Vec<usize> = trie.nodes[1..].iter().map(|n| n.pops()).collect();
    let bytes: Vec<u8> = trie.nodes[1..].iter().map(|n| n.byte()).collect();
    assert_eq!(sizes, [7, 3, 2, 1, 2, 1, 1]);
    assert_eq!(pops, [1, 2, 3, 1, 2, 1]);
    assert_eq!(bytes, *b"abcbac");
    let mut rec = PrefixRecognizer::new(&[b"abx".to_vec(), b"c".to_vec()]);
    let mut mask = vec![0u32; 1];
    trie.walk(&mut rec, &mut mask);
    assert_eq!(mask[0], (1 << 0) | (1 << 1) | (1 << 5) | (1 << 7));
    assert!(rec.stack.is_empty());
    // a, ab, c (abc and b fail; ba is skipped with b).
    assert_eq!(rec.pushes, 3);
}

#[test]
fn lookups() {
    let tokens: Vec<&[u8]> = vec![b"he", b"hello", b"", b"l", b"lo", b"o", b"hello", b"h"];
    let trie = TokTrie::new(&tokens).unwrap();
    assert_eq!(trie.token_bytes(1), b"hello");
    assert_eq!(trie.token_bytes(2), b"");
    assert_eq!(trie.token_bytes(99), b"");
    assert_eq!(trie.token_id(b"hello"), Some(1));
    assert_eq!(trie.token_id(b"hel"), None);
    assert_eq!(trie.token_id(b""), None);
    assert_eq!(trie.token_id(b"x"), None);
    assert_eq!(trie.greedy_tokenize(b"hellolo"), Some(vec![1, 4]));
    assert_eq!(trie.greedy_tokenize(b"hel"), Some(vec![0, 3]));
    assert_eq!(trie.greedy_tokenize(b""), Some(vec![]));
    assert_eq!(trie.greedy_tokenize(b"hex"), None);
    let mut mask = vec![0u32; 1];
    trie.add_tokens_with_prefix(b"he", &mut mask);
    assert_eq!(mask[0], (1 << 0) | (1 << 1) | (1 << 6));
    let mut mask = vec![0u32; 1];
    trie.add_tokens_with_prefix(b"x", &mut mask);
    assert_eq!(mask[0], 0);
    trie.add_tokens_with_prefix(b"", &mut mask);
    assert_eq!(mask[0], 0b1111_1011);
    // Short masks are skipped silently.
    trie.add_tokens_with_prefix(b"h", &mut []);
    assert!(trie.bytes_used() > trie.num_nodes() * 8);
    let dbg = alloc::format!("{trie:?}");
    assert!(dbg.contains("num_nodes"));
}

#[test]
fn empty_and_unused() {
    let trie = TokTrie::new(&[]).unwrap();
    assert_eq!(
        (trie.vocab_size(), trie.mask_words(), trie.num_nodes()),
        (0, 0, 1)
    );
    let mut rec = PrefixRecognizer::new(&[]);
    trie.walk(&mut rec, &mut []);
    let trie = TokTrie::new(&[b"", b""]).unwrap();
    assert_eq!((trie.mask_words(), trie.num_nodes()), (1, 1));
    let mut mask = [0u32; 1];
    trie.walk(&mut rec, &mut mask);
    assert_eq!(mask, [0]);
}

#[test]
fn walk_keeps_other_bits_and_is_exact_for_preset_duplicates() {
    // 0 and 2 are "x" (2 duplicates 0); 1 is "y".
    let trie = TokTrie::new(&[b"x", b"y", b"x"]).unwrap();
    let mut rec = PrefixRecognizer::new(&[b"y".to_vec()]);
    let mut mask = [1u32 | (1 << 31)];
    trie.walk(&mut rec, &mut mask);
    // Preset bit 0 kept, "x" not accepted so its duplicate stays clear.
    assert_eq!(mask, [1 | (1 << 1) | (1 << 31)]);
    let mut rec = PrefixRecognizer::new(&[b"x".to_vec()]);
    let mut mask = [1u32];
    trie.walk(&mut rec, &mut mask);
    assert_eq!(mask, [1 | (1 << 2)]);
}

#[test]
fn long_tokens_and_deep_pops() {
    let long = vec![b'q'; TokTrie::MAX_TOKEN_LEN];
    let mut shorter = long.clone();
    shorter.truncate(700);
    let tokens = vec![long.clone(), b"r".to_vec(), shorter];
    let trie = TokTrie::new(&refs(&tokens)).unwrap();
    check_invariants(&trie);
    let mut rec = PrefixRecognizer::new(&[long.clone(), b"r".to_vec()]);
    let mut mask = [0u32];
    trie.walk(&mut rec, &mut mask);
    assert_eq!(mask, [0b111]);
    assert!(rec.stack.is_empty());
}

#[test]
fn errors() {
    let too_long = vec![0u8; TokTrie::MAX_TOKEN_LEN + 1];
    let err = TokTrie::new(&[b"a", &too_long]).unwrap_err();
    assert_eq!(
        err,
        TrieError::TokenTooLong {
            id: 1,
            len: TokTrie::MAX_TOKEN_LEN + 1
        }
    );
    assert!(alloc::format!("{err}").contains("1025"));
    // ~4,300 tokens of 1,000+ unshared bytes each overflow the 22-bit subtree size.
    let tokens: Vec<Vec<u8>> = (0..4300u32)
        .map(|i| {
            let mut t = i.to_be_bytes()[2..].to_vec();
            t.resize(1000, b'z');
            t
        })
        .collect();
    assert_eq!(
        TokTrie::new(&refs(&tokens)).unwrap_err(),
        TrieError::TooManyNodes
    );
}

/// Accepts bytes of a fixed class; counts depth to check balance.
struct ByteClass {
    ok: [bool; 256],
    depth: usize,
}

impl Recognizer for ByteClass {
    fn push_byte(&mut self, byte: u8) -> bool {
        self.depth += usize::from(self.ok[byte as usize]);
        self.ok[byte as usize]
    }
    fn pop_bytes(&mut self, n: usize) {
        assert!(n <= self.depth);
        self.depth -= n;
    }
}

#[test]
fn synthetic_vocabulary_walk_matches_oracle() {
    let vocab = crate::Vocabulary::synthetic(3000, 3);
    let trie = vocab.trie();
    check_invariants(trie);
    assert!(
        !trie.dups.is_empty(),
        "expected some duplicate random words"
    );
    let tokens: Vec<Vec<u8>> = (0..trie.vocab_size() as u32)
        .map(|id| trie.token_bytes(id).to_vec())
        .collect();
    let classes: [fn(u8) -> bool; 3] = [
        |b| b >= 0x20 && b != b'"' && b != b'\\',
        |b| b.is_ascii_lowercase() || b == b' ',
        |b| b.is_ascii_digit() || b == 0xFF,
    ];
    for class in classes {
        let mut rec = ByteClass {
            ok: core::array::from_fn(|b| class(b as u8)),
            depth: 0,
        };
        let want = oracle(&tokens, |t| t.iter().all(|&b| class(b)));
        let mut mask = vec![0u32; trie.mask_words()];
        trie.walk(&mut rec, &mut mask);
        assert_eq!(mask, want);
        assert_eq!(rec.depth, 0);
    }
}

#[cfg(not(debug_assertions))]
#[test]
fn short_mask_is_ignored_in_release() {
    let tokens: Vec<Vec<u8>> = (0..40u8).map(|i| vec![i]).collect();
    let trie = TokTrie::new(&refs(&tokens)).unwrap();
    let mut rec = PrefixRecognizer::new(&tokens);
    let mut mask = [0u32; 1];
    trie.walk(&mut rec, &mut mask);
    assert_eq!(mask, [0]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn walk_matches_prefix_oracle(
        tokens in prop::collection::vec(small_token(), 0..80),
        words in prop::collection::vec(small_token(), 0..6),
        preset in prop::collection::vec(any::<u32>(), 3),
    ) {
        let trie = TokTrie::new(&refs(&tokens)).unwrap();
        check_invariants(&trie);
        let mut rec = PrefixRecognizer::new(&words);
        let want = oracle(&tokens, |t| rec.prefixes.contains(t));
        let mut mask = vec![0u32; trie.mask_words()];
        trie.walk(&mut rec, &mut mask);
        prop_assert_eq!(&mask, &want);
        prop_assert!(rec.stack.is_empty());
        // Preset bits are kept and only ORed with the walk's result (one spare word too).
        let mut mask: Vec<u32> = preset.iter().copied().cycle().take(trie.mask_words() + 1).collect();
        let before = mask.clone();
        trie.walk(&mut rec, &mut mask);
        for (i, w) in mask.iter().enumerate() {
            prop_assert_eq!(*w, before[i] | want.get(i).copied().unwrap_or(0));
        }
    }

    #[test]
    fn walk_matches_dfa_oracle(
        tokens in prop::collection::vec(small_token(), 0..120),
        n_states in 1usize..6,
        edges in prop::collection::vec((0u8..6, prop::sample::select(vec![b'a', b'b', b'c', 0xFF]), 0u8..7), 0..40),
        prefix in prop::collection::vec(prop::sample::select(vec![b'a', b'b', b'c']), 0..3),
    ) {
        let mut table = vec![DEAD; n_states * 256];
        for (from, byte, to) in edges {
            let from = from as usize % n_states;
            // Targets past the state count stay dead.
            if (to as usize) < n_states {
                table[from * 256 + byte as usize] = to;
            }
        }
        let mut dfa = Dfa { table, stack: vec![0] };
        // Start the walk from a non-initial state when the prefix is accepted.
        for &b in &prefix {
            if !dfa.push_byte(b) {
                break;
            }
        }
        let start_stack = dfa.stack.clone();
        let start = *start_stack.last().unwrap();
        let trie = TokTrie::new(&refs(&tokens)).unwrap();
        let want = oracle(&tokens, |t| dfa.run(start, t));
        let mut mask = vec![0u32; trie.mask_words()];
        trie.walk(&mut dfa, &mut mask);
        prop_assert_eq!(&mask, &want);
        prop_assert_eq!(&dfa.stack, &start_stack);
        // The stepper walk gives the same mask and hands the stack back unchanged.
        let mut stepper = DfaStepper { dfa, slow_steps: 0, stop_after: None };
        let mut mask = vec![0u32; trie.mask_words()];
        trie.walk_stepper(&mut stepper, &mut mask);
        prop_assert_eq!(&mask, &want);
        prop_assert_eq!(&stepper.dfa.stack, &start_stack);
        // Stopped early: a subset of the mask, and still the same stack.
        let slow = stepper.slow_steps;
        stepper.slow_steps = 0;
        stepper.stop_after = Some(slow / 2);
        let mut mask = vec![0u32; trie.mask_words()];
        trie.walk_stepper(&mut stepper, &mut mask);
        for (got, all) in mask.iter().zip(&want) {
            prop_assert_eq!(got & !all, 0);
        }
        prop_assert_eq!(&stepper.dfa.stack, &start_stack);
        // Split: transitions out of states divisible by 3 are deferred; the deferred nodes
        // walked below with the full step complete the same mask.
        stepper.stop_after = None;
        let mut split = DfaSplit { dfa: &stepper.dfa, defers: 0 };
        let mut mask = vec![0u32; trie.mask_words()];
        let mut scratch = Vec::new();
        let mut deferred = Vec::new();
        prop_assert!(trie.walk_split(&mut split, start, &mut scratch, &mut mask, &mut deferred).is_ok());
        prop_assert_eq!(split.defers, deferred.len());
        let mut stack = stepper.take_stack();
        for &(node, state) in &deferred {
            if let Some(e) = stepper.next(state, trie.node_byte(node)) {
                trie.walk_below(&mut stepper, &mut stack, node, e, &mut mask);
            }
        }
        stepper.return_stack(stack);
        trie.or_duplicates(&mut mask);
        prop_assert_eq!(&mask, &want);
        prop_assert_eq!(&stepper.dfa.stack, &start_stack);
    }

    #[test]
    fn lookups_match_brute_force(tokens in prop::collection::vec(small_token(), 0..60), query in small_token()) {
        let trie = TokTrie::new(&refs(&tokens)).unwrap();
        for (id, t) in tokens.iter().enumerate() {
            prop_assert_eq!(trie.token_bytes(id as u32), t.as_slice());
        }
        let lowest = tokens.iter().position(|t| !t.is_empty() && *t == query).map(|i| i as u32);
        prop_assert_eq!(trie.token_id(&query), lowest);
        let mut mask = vec![0u32; trie.mask_words()];
        trie.add_tokens_with_prefix(&query, &mut mask);
        prop_assert_eq!(mask, oracle(&tokens, |t| t.starts_with(&query)));
        // Greedy tokenization: every piece is a longest-match token and they concatenate back.
        match trie.greedy_tokenize(&query) {
            Some(ids) => {
                let joined: Vec<u8> = ids.iter().flat_map(|&i| trie.token_bytes(i).to_vec()).collect();
                prop_assert_eq!(&joined, &query);
                let mut pos = 0;
                for &id in &ids {
                    let len = trie.token_bytes(id).len();
                    let longest = (1..=query.len() - pos)
                        .filter(|&l| tokens.iter().any(|t| *t == query[pos..pos + l]))
                        .max();
                    prop_assert_eq!(Some(len), longest);
                    prop_assert_eq!(trie.token_id(trie.token_bytes(id)), Some(id));
                    pos += len;
                }
            }
            None => {
                // Some position reached by greedy has no token starting there.
                let mut pos = 0;
                loop {
                    prop_assert!(pos < query.len());
                    let longest = (1..=query.len() - pos)
                        .filter(|&l| tokens.iter().any(|t| *t == query[pos..pos + l]))
                        .max();
                    match longest {
                        Some(l) => pos += l,
                        None => break,
                    }
                }
            }
        }
    }
}
